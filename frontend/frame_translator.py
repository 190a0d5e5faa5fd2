"""InstructionTranslator: traces one whole frame and produces its transformed code.

Compile time only. It sets up the frame's arguments, cells and free variables as trackers, runs
the interpreter to RETURN_VALUE, compiles the graph with the backend, and generates bytecode that
calls the graph, replays side effects and rebuilds the return value.

Graph breaks. The translator takes a checkpoint (`FrameCheckpoint`) before every instruction that
can break (its facts say when: `opcodes.Checkpoint`). When that instruction raises `Unsupported`,
`break_codegen.py` rolls back to the checkpoint and emits the code that runs the instruction
natively and resumes after it; `side_effects.py` writes back what the traced code changed.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import types

from bytecode import Instr
from bytecode.instr import CellVar

from ..guards.guard import Guard
from ..probe import may_hold_tensors
from ..guards.source import AttrSource, LocalSource, RandomDrawSource
from . import lifetimes
from .break_codegen import FrameCheckpoint, can_break_at, compile_break, emit_default_dtype, emit_set_grad
from .builder import is_compiled_function, is_skipped_function
from .codegen import PyCodegen, new_code
from .graph_break import Unsupported
from .graph_raise import guard_graph_call, loses_effects_on_raise, reaches_whole_storage, rerunnable, restoring_inputs
from .instructions import instructions_of
from .opcodes import OPCODES, Checkpoint
from .output_graph import OutputGraph
from .resume import is_resume_code
from .signals import ReturnValue, UserException
from .translator import InstructionTranslatorBase
from .value_raises import graph_raises_by_value
from .variables.constant import ConstantVariable
from .variables.functions import UserFunctionVariable
from .variables.misc import CellVariable, FrameFreeCell, UnreadArgument
from .variables.tensor import SymNodeVariable, TensorVariable, tensor_attrs
from ..code_keyed import CodeKeyed


@dataclasses.dataclass
class CompiledFrame:
    code: object            # transformed code
    guards: set
    graph: object           # GraphModule or None
    op_count: int
    arg_names: tuple
    breaks: list = dataclasses.field(default_factory=list)   # Unsupported that ended a graph early
    modules: tuple = ()     # (source, weakref) of each nn.Module the trace read (guarded by type)
    # objects that exist only because the trace made them (a namedtuple class): the guards hold
    # classes weakly, and facts read from these must stay checkable
    kept: tuple = ()


def frame_arg_names(code) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]


class InstructionTranslator(InstructionTranslatorBase):
    def __init__(self, code, func, args, config, backend, allow_breaks=True, shape_policy=None):
        output = OutputGraph(code, config, backend, shape_policy, fullgraph=not allow_breaks)
        self.func = func
        self.allow_breaks = allow_breaks and not reads_own_frame(code)
        # pure-Python work is given up only in a frame whose arguments lead to no tensor (one may be
        # read after a long loop); fullgraph=True asks for the one graph, empty or not
        output.gives_up_without_tensors = allow_breaks and not any(may_hold_tensors(a) for a in args)
        self._checkpoint = None
        self.op_count = 0
        self.gm = None
        self.arg_names = frame_arg_names(code)
        super().__init__(code, func.__globals__, {}, {}, output, config)
        output.side_effects.on_drop = functools.partial(lifetimes.finalizer_may_run, self)
        self.entry_grad = self.output.grad_enabled
        self.entry_dtype = self.output.default_dtype
        resuming = is_resume_code(code)
        for name, value in zip(self.arg_names, args):
            if resuming and _is_closure_function(value):
                self.symbolic_locals[name] = self._wrap_closure_argument(name, value)
            else:
                self.symbolic_locals[name] = UnreadArgument(value=value, source=LocalSource(name))
        for name in code.co_cellvars:
            self.cells[name] = CellVariable.new(self, self.read_local(name) if name in self.symbolic_locals else None)
        closure = func.__closure__ or ()
        for i, name in enumerate(code.co_freevars):
            cell = self.cells[name] = FrameFreeCell(name=name, index=i)
            if i < len(closure):   # a closure of this frame that holds the same cell sees the same tracker
                self.output.wrapped_objects[("cell", id(closure[i]))] = (closure[i], cell)

    def _wrap_closure_argument(self, name, fn):
        """A function with a closure passed to a resume function: a closure made before the break
        is a new object on every call, so guard on its code, not its identity (its defaults and cell
        contents are read, and guarded, through their sources)."""
        source = LocalSource(name)
        self.output.guards.add(Guard.type_match(source, types.FunctionType))
        self.output.guards.add(Guard.id_match(AttrSource(source, "__code__"), fn.__code__))
        var = UserFunctionVariable(fn=fn, source=source)
        self.output.wrapped_objects[id(fn)] = (fn, var)
        return var

    def trace(self) -> CompiledFrame:
        try:
            try:
                self.run()
            except UserException as e:
                # raised and not handled in the frame: like any break, the graph before the
                # instruction that raised is kept and the instruction runs (and raises) natively
                raise Unsupported("user_exception", exc=e.exc_var.cls.__name__) from None
        except ReturnValue as r:
            return self.finish(r.value)
        except Unsupported as e:
            if not e.user_stack:
                e.user_stack = self.user_stack()
            if not e.kind.resumable or not self.can_break_at_checkpoint():
                raise
            self._checkpoint.graph.guards.update(e.guards)
            try:
                # the root's own instruction made a tensor whose shape depends on data (`x.nonzero()`):
                # the resume function takes it with symbolic sizes from the start
                compiled = self.break_at_checkpoint(data_shaped_result=e.context.get("data_shaped", False)
                                                    and len(e.user_stack) == 1)
            except Unsupported:
                raise e from None    # cannot resume here (a value cannot be rebuilt...): run eagerly
            compiled.breaks.append(e)
            return compiled

    # -- graph breaks ---------------------------------------------------------------
    def maybe_checkpoint(self, ins):
        if _needs_checkpoint(OPCODES[ins.opname], self.stack, ins.arg):
            self._checkpoint = FrameCheckpoint(ins, list(self.stack), dict(self.symbolic_locals), self.kw_names,
                                               self.output.checkpoint())
        else:
            self._checkpoint = None

    def can_break_at_checkpoint(self) -> bool:
        return can_break_at(self, self._checkpoint)

    def break_at_checkpoint(self, data_shaped_result: bool = False) -> CompiledFrame:
        prunes = self.output.prunes
        try:
            return compile_break(self, self._checkpoint, data_shaped_result=data_shaped_result)
        except Unsupported as e:
            if e.kind.name != "unrebuildable" or self.output.prunes != prunes:
                # (a prune erased graph nodes and inputs the checkpoint holds: no second try from it)
                raise
            # a local no later code reads cannot be rebuilt: break with only the read ones
            return compile_break(self, self._checkpoint, every_local=False, data_shaped_result=data_shaped_result)

    # -- finishing ------------------------------------------------------------------
    def codegen_graph_prefix(self, values) -> PyCodegen:
        """Compile the graph with everything `values` and the side effects need, and start the
        generated code: call the graph. Callers rebuild their values into temps before replaying the
        side effects, so a value read from a global or attribute that the frame then rebinds is the
        old object."""
        output = self.output
        effects = output.side_effects
        roots = list(values)
        roots.extend(effects.mutated_in_order())
        roots.extend(effects.globals.values())
        roots.extend(effects.cells.values())
        roots.extend(v for _, attrs in effects.input_tensor_attributes() for v in attrs.values())
        tensors = _collect_graph_values(self, roots)
        output.prune_size_inputs(tensors)
        self.op_count = output.count_ops()
        self.gm = None
        cg = PyCodegen(self)
        self._graph_outputs = tensors
        self._graph_call = None
        if self.op_count:
            # the backend runs only once the whole code is generated (see finish_code)
            cg.output_index = {v.proxy.node: i for i, v in enumerate(tensors)}
            start = len(cg.instructions)
            _codegen_random_draws(cg, output)     # (within the graph call's span: a rerun puts them back)
            cg.push_null()
            self._graph_call = Instr("LOAD_CONST", None)
            cg.append(self._graph_call)
            for _, proxy, _ in output.graph_inputs:
                proxy.node.meta["source"].reconstruct(cg)   # each input fetched from where it came
            cg.call(len(output.graph_inputs))
            self._graph_call_span = (start, len(cg.instructions))
            cg.append(Instr("STORE_FAST", cg.graph_outputs_local))
        elif tensors and any(v.proxy.node.op != "placeholder" for v in tensors):
            raise Unsupported("internal_error", what="tensor values with no graph")
        else:
            _codegen_random_draws(cg, output)
        return cg

    def finish_code(self, cg, copied=None) -> CompiledFrame:
        if self._graph_call is not None:
            plan = self._rerun_plan()
            self.gm, compiled = self.output.compile_graph(cg.used_outputs(self._graph_outputs))
            self._graph_call.arg = compiled
            if plan is not None:
                written, reshaped, copy = plan
                if written or reshaped:
                    self._graph_call.arg = restoring_inputs(compiled, written, reshaped, copy)
                guard_graph_call(cg, self, *self._graph_call_span)
        prefix = [Instr("MAKE_CELL", CellVar(n)) for n in self.code.co_cellvars]
        if self.code.co_freevars:
            prefix.append(Instr("COPY_FREE_VARS", len(self.code.co_freevars)))
        code = new_code(self.code, cg.instructions, prefix, len(self.arg_names), copies_template=copied)
        return CompiledFrame(code, self.output.final_guards(), self.gm, self.op_count, self.arg_names,
                             kept=tuple(self.output.trace_local_classes),
                             modules=self.output.module_refs())

    def _rerun_plan(self):
        """How the graph call reruns the frame if it raises (graph_raise.py): None when a raise loses
        nothing (or the frame cannot rerun), else the inputs it writes into, those whose sizes it
        changes, and how the written ones are copied (value_raises.py)."""
        output = self.output
        if output.default_dtype != self.entry_dtype and not rerunnable(output):
            # a raise part way would leave the dtype of a node behind, where eager's own blocks may restore it
            raise Unsupported("unrestorable_raise", what="a graph changing the default dtype with tensors "
                              "on other devices than the CPU (it cannot rerun as Python after a raise)")
        if not (loses_effects_on_raise(self) and rerunnable(output)):
            return None
        written, reshaped = output.written_inputs(), output.reshaped_inputs()
        raises = bool(written) and graph_raises_by_value(output.graph)
        # a write into an input requiring grad, run as recorded, is in its autograd history too, which
        # no copy puts back (a backend that retraces the graph writes into its inputs after all its ops)
        if raises and output.eager_autograd and any(
                output.graph_inputs[i][1].node.meta["example_value"].requires_grad for i in written):
            raise Unsupported("unrestorable_raise", what="a graph writing into an input requiring grad, then "
                              "maybe raising by value, with effects a raise would skip")
        copy = ("storages" if reaches_whole_storage(output.graph) else "values") if raises else None
        return written, reshaped, copy

    def finish(self, return_value) -> CompiledFrame:
        self.stack = []
        lifetimes.frame_returns(self, return_value)
        cg = self.codegen_graph_prefix([return_value])
        if not self.output.side_effects.built_after_write_back(self, [return_value]):
            cg.reconstruct_to_temp(return_value)
        self.output.side_effects.codegen_replay(cg, returning=True)
        if self.output.grad_enabled != self.entry_grad:
            emit_set_grad(cg, self.output.grad_enabled)   # `torch.set_grad_enabled(m)` outside a `with`
        emit_default_dtype(cg, self)
        cg.reconstruct(return_value)
        cg.append(Instr("RETURN_VALUE"))
        return self.finish_code(cg)


def _codegen_random_draws(cg, output) -> None:
    """The numbers the frame draws from Python's `random` module, drawn in trace order into the locals
    their sources read (variables/python_random.py)."""
    for index, (fn, args, kwargs) in enumerate(output.random_draws):
        cg.load_callable(fn)
        for value in list(args) + list(kwargs.values()):
            cg.load_const(value)
        cg.call(len(args) + len(kwargs), kw_names=tuple(kwargs))
        cg.append(Instr("STORE_FAST", RandomDrawSource(index).local_name()))


_PLAIN = (TensorVariable, SymNodeVariable, ConstantVariable)
_PLAIN_BUT_SYMBOLIC = (TensorVariable, ConstantVariable)


def _needs_checkpoint(facts, stack, arg) -> bool:
    """Whether the instruction may break here (see opcodes.Checkpoint); a value op breaks, and then
    runs natively, only on an operand other than a tensor, a symbolic number or a constant (a numpy
    array, an opaque object...), or a numpy scalar constant (torch takes some as numbers, not others),
    or on a symbolic number where the opcode says so (`is`)."""
    if facts.checkpoint is Checkpoint.ALWAYS:
        return True
    if facts.checkpoint is Checkpoint.BRANCH:
        return not stack[-1].is_python_constant()
    if facts.checkpoint is Checkpoint.ITERATOR:
        return not stack[-1].is_iterator
    if facts.checkpoint is Checkpoint.OPERANDS:
        plain = _PLAIN_BUT_SYMBOLIC if facts.symbolic_breaks else _PLAIN
        operands = stack[len(stack) - facts.operand_count(arg):]
        return not all(isinstance(v, plain) and not _is_numpy_constant(v) for v in operands)
    return False


def _is_numpy_constant(var) -> bool:
    return isinstance(var, ConstantVariable) and type(var.value).__module__ == "numpy"


# how code reads its own frame's variables: the builtins `locals()`, `eval`/`exec`, `vars()`/`dir()`
# without an argument (loaded as globals), a frame object's `f_locals`/`f_back` or one got from
# `sys._getframe()` / `inspect.currentframe()` (loaded as attributes); or its depth:
# `sys.setrecursionlimit` fails or succeeds by the depth it is called at, and the limit it sets
# counts from there
_FRAME_READING_GLOBALS = frozenset({"locals", "eval", "exec"})
_FRAME_READING_WITHOUT_ARGUMENT = frozenset({"vars", "dir"})
_FRAME_READING_ATTRS = frozenset({"_getframe", "currentframe", "f_locals", "f_back", "getframeinfo",
                                  "setrecursionlimit"})


def reads_own_frame(code) -> bool:
    """Whether `code` may look at its own frame: its variables or its depth. Transformed code and
    resume functions hold other variables (temporaries, stack values as arguments) and a resume function
    runs deeper than the frame it continues, so such a frame never breaks: it is traced whole or
    runs eagerly."""
    cached = _READS_OWN_FRAME.get(code)
    if cached is None:
        cached = _READS_OWN_FRAME[code] = _reads_own_frame(code)
    return cached


# code -> whether it may look at its own frame
_READS_OWN_FRAME = CodeKeyed()


def _reads_own_frame(code) -> bool:
    insts = instructions_of(code)[0]
    for ins, after in zip(insts, insts[1:] + [None]):
        if ins.opname == "LOAD_GLOBAL" and (ins.argval in _FRAME_READING_GLOBALS or (
                ins.argval in _FRAME_READING_WITHOUT_ARGUMENT and not after.opname.startswith("LOAD_"))):
            return True     # (`vars(obj)`: an argument is loaded next; anything else may be a bare call)
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _FRAME_READING_ATTRS:
            return True
    return False


def _is_closure_function(value) -> bool:
    return type(value) is types.FunctionType and value.__closure__ is not None and \
        not is_skipped_function(value) and not is_compiled_function(value) and not is_resume_code(value.__code__)


def _collect_graph_values(tx, roots) -> list:
    """Tensors and symbolic values reachable from the roots, in a stable order, without duplicates."""
    seen, found, nodes = set(), [], set()

    def visit(var):
        if var is None or id(var) in seen:
            return
        seen.add(id(var))
        if isinstance(var, (TensorVariable, SymNodeVariable)):
            if var.proxy.node not in nodes and not (var.proxy.node.op == "placeholder" and var.source is not None):
                nodes.add(var.proxy.node)
                found.append(var)
            if isinstance(var, TensorVariable):
                for value in tensor_attrs(tx, var).values():    # `y.note = x * 2` while tracing
                    visit(value)
            return
        for part in var.parts(tx):
            visit(part)
    for root in roots:
        visit(root)
    return found
