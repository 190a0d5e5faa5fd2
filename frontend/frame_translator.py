"""InstructionTranslator: traces one whole frame and produces its transformed code.

Compile time only. It sets up the frame's arguments, cells and free variables as trackers, runs
the interpreter to RETURN_VALUE, compiles the graph with the backend, and generates bytecode that
calls the graph, replays side effects and rebuilds the return value.

Graph breaks. The translator takes a checkpoint before every instruction it can break at (CALL,
a conditional jump on a value that is not a constant, a value op on an unusual operand). When that
instruction raises `Unsupported`, it rolls back to the checkpoint, compiles the graph so far and
emits code that calls the graph, rebuilds the stack values and live locals, replays side effects
(including this frame's own closure cells), runs the instruction natively and calls the resume
function(s) for the rest of the frame (see `resume.py`). Two shapes of transformed code:

- *linear* (the instruction is not inside a `try`/`with` block): the native instruction is emitted
  on its own — push its operands, run it, call the resume function with the result.
- *in a block* (the exception table covers the instruction, or a `with` exit is on the stack): the
  transformed code rebuilds the whole stack and the live locals in their real slots, then jumps
  into a copy of the frame's own bytecode at the instruction, exception table included. If the
  instruction raises, the frame's own handlers run natively: `except`/`finally` bodies, a user
  context manager's `__exit__` (which may swallow the exception), grad mode/autocast restored by
  the block's exit. If it succeeds, control leaves the copy at once for a continuation (outside
  every exception range) that pops the stack, exits the torch contexts and calls the resume
  function, whose prologue re-enters them (`resume.py`).

Grad mode and autocast at a break. Grad mode is runtime state: the transformed code sets
`torch._C._set_grad_enabled(mode at the break)` right before the native instruction, so it runs as
in eager (grad disabled inside `with torch.no_grad()`), whatever the backend did with the graph's
own grad-mode nodes. On the stack, a grad-mode `__exit__` becomes a `RestoreGradMode(previous)`
object, a `torch.autocast` one the real entered context manager, a user context manager's the
bound `__exit__` of the rebuilt object. After the instruction the continuation calls the torch
exits innermost first (grad mode back to its value outside the blocks) and the resume function
enters the blocks again, so grad mode is right on both sides and each block is exited exactly once.
An autocast block open at the break is closed in the graph (`_exit_autocast`), so every graph is
self-contained.

Not resumable (the frame runs eagerly, the reason is recorded): generators and coroutines, code that
may read its own frame's variables (`locals()`, `eval`, `sys._getframe()`), a break
while an exception is being handled (inside an `except` body or a `with` exit path: the caught
exception cannot be rebuilt), a break in a resume prologue, values that cannot be rebuilt.
"""
from __future__ import annotations

import dataclasses
import dis
import inspect
import types

import torch
from bytecode import Instr, Label
from bytecode.instr import CellVar, FreeVar

from ..guards.source import ClosureSource, LocalSource
from . import lifetimes
from .builder import wrap
from .codegen import RESTORE_GRAD, PyCodegen, new_code
from .graph_break import Unsupported, user_error
from .output_graph import OutputGraph
from .resume import (
    ITER_SLOT,
    NULL_SLOT,
    PROLOGUE_CALLABLES,
    VALUE_SLOT,
    ResumeCall,
    autocast_slot,
    body_items,
    call_start_index,
    closure_names,
    exception_entry_at,
    grad_slot,
    in_exception_handler,
    instruction_index,
    is_context_slot,
    is_resume_code,
    live_locals_at,
    original_location,
    resume_code,
    resume_function,
    run_resume,
)
from .translator import InstructionTranslatorBase, ReturnValue, UserException
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.misc import CellVariable, ExceptionVariable, NullVariable, RealCellVariable
from .variables.tensor import SymNodeVariable, TensorVariable


@dataclasses.dataclass(frozen=True, eq=False)
class FrameFreeCell(CellVariable):
    """A free variable of the traced frame: read through the closure, written back by STORE_DEREF."""
    name: str = ""
    index: int = 0

    def load(self, tx):
        if self in tx.output.side_effects.cells:
            return tx.output.side_effects.cells[self]
        cell = tx.root().func.__closure__[self.index]
        try:
            value = cell.cell_contents
        except ValueError:
            raise user_error(NameError(f"free variable '{self.name}' referenced before assignment")) from None
        return wrap(tx, value, ClosureSource(self.name, self.index))


@dataclasses.dataclass
class CompiledFrame:
    code: object            # transformed code
    guards: set
    graph: object           # GraphModule or None
    op_count: int
    arg_names: tuple
    breaks: list = dataclasses.field(default_factory=list)   # Unsupported that ended a graph early


def frame_arg_names(code) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]


def _load_const(tx, ins):
    """LOAD_CONST, plus the torch context-manager factories that resume prologues load as constants."""
    value = ins.argval
    if any(value is c for c in PROLOGUE_CALLABLES):
        tx.push(wrap(tx, value, None, trusted=True))
    else:
        tx.base_dispatch["LOAD_CONST"](tx, ins)


def _autocast_variable_type():
    from .variables import torch as torch_variables
    return getattr(torch_variables, "AutocastVariable", None)


class InstructionTranslator(InstructionTranslatorBase):
    def __init__(self, code, func, args, config, backend, allow_breaks=True, shape_policy=None):
        output = OutputGraph(code, config, backend, shape_policy)
        self.func = func
        self.allow_breaks = allow_breaks and not reads_own_frame(code)
        self._checkpoint = None
        self.op_count = 0
        self.gm = None
        self.arg_names = frame_arg_names(code)
        super().__init__(code, func.__globals__, {}, {}, output, config)
        self.base_dispatch = self.dispatch
        self.dispatch = dict(self.dispatch, LOAD_CONST=_load_const)
        self._entry_grad = self.output.grad_enabled
        resuming = is_resume_code(code)
        for name, value in zip(self.arg_names, args):
            if resuming and _is_closure_function(value):
                self.symbolic_locals[name] = self._wrap_closure_argument(name, value)
            else:
                self.symbolic_locals[name] = wrap(self, value, LocalSource(name))
        for name in code.co_cellvars:
            self.cells[name] = CellVariable.new(self, self.symbolic_locals.get(name))
        closure = func.__closure__ or ()
        for i, name in enumerate(code.co_freevars):
            cell = self.cells[name] = FrameFreeCell(name=name, index=i)
            if i < len(closure):   # a closure of this frame that holds the same cell sees the same tracker
                self.output.wrapped_objects[("cell", id(closure[i]))] = (closure[i], cell)

    def _wrap_closure_argument(self, name, fn):
        """A function with a closure passed to a resume function: a closure made before the break
        is a new object on every call, so guard on its code, not its identity (its defaults and cell
        contents are read, and guarded, through their sources)."""
        from ..guards.guard import Guard
        from ..guards.source import AttrSource
        from .variables.functions import UserFunctionVariable
        source = LocalSource(name)
        self.output.guards.add(Guard.type_match(source, types.FunctionType))
        self.output.guards.add(Guard.id_match(AttrSource(source, "__code__"), fn.__code__))
        var = UserFunctionVariable(fn=fn, source=source)
        self.output.wrapped_objects[id(fn)] = (fn, var)
        return var

    def trace(self) -> CompiledFrame:
        try:
            self.run()
        except ReturnValue as r:
            return self.finish(r.value)
        except UserException as e:
            raise Unsupported("user_exception", exc=e.exc_var.cls.__name__)
        except Unsupported as e:
            if not e.user_stack:
                e.user_stack = self.user_stack()
            if not self.can_break_at_checkpoint():
                raise
            try:
                compiled = self.break_at_checkpoint()
            except Unsupported:
                raise e from None    # cannot resume here (a value cannot be rebuilt...): run eagerly
            compiled.breaks.append(e)
            return compiled

    # -- graph breaks ---------------------------------------------------------------
    def maybe_checkpoint(self, ins):
        if ins.opname in _ALWAYS_BREAKABLE or (ins.opname in _JUMPS and not self.stack[-1].is_python_constant()) or \
                (ins.opname in _VALUE_OPS and not all(isinstance(v, _PLAIN) for v in
                                                      self.stack[len(self.stack) - _VALUE_OPS[ins.opname]:])):
            self._checkpoint = (ins, list(self.stack), dict(self.symbolic_locals), self.kw_names,
                                self.output.checkpoint())
        else:
            self._checkpoint = None

    def can_break_at_checkpoint(self) -> bool:
        """Breaking needs a checkpoint at the failing root instruction, in a plain function (not a
        generator), outside exception handlers (a caught exception cannot be rebuilt)."""
        cp = self._checkpoint
        if not self.allow_breaks or cp is None or cp[0] is not self.current:
            return False
        if self.code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            return False
        if in_exception_handler(self.code, cp[0].offset):
            return False     # sys.exc_info() and a bare `raise` need the exception being handled
        return not any(isinstance(v, ExceptionVariable) for v in cp[1])

    def break_at_checkpoint(self) -> CompiledFrame:
        """Roll back to the checkpoint, compile the graph so far, and emit: call graph, replay side
        effects, rebuild the stack and live locals, run the instruction natively, call the resume
        function(s) for the rest of the frame."""
        from .variables.ctx import WithExitVariable
        ins, stack, symbolic_locals, kw_names, state = self._checkpoint
        self.output.restore(state)
        self.stack = list(stack)
        self.symbolic_locals = dict(symbolic_locals)
        lifetimes.check_none_pending(self)
        grad_at_break = self.output.grad_enabled
        code = self.code
        next_offset = self.instructions[ins.index + 1].offset
        if ins.opname == "CALL" or ins.opname in _VALUE_OPS:
            consumed = ins.arg + 2 if ins.opname == "CALL" else _VALUE_OPS[ins.opname]
            prefix = stack[:-consumed]
            # (offset, stack after: trackers of the preserved prefix + RESULT marker)
            paths = [(next_offset, prefix + [_RESULT])]
        elif ins.opname == "BEFORE_WITH":
            # a user context manager's `__enter__` runs natively; the block resumes with the
            # bound `__exit__` and the entered value on the stack
            consumed = 1
            prefix = stack[:-1]
            paths = [(next_offset, prefix + [_EXIT, _RESULT])]
        else:
            consumed = 1
            prefix = stack[:-1]
            target_offset = self.instructions[ins.target].offset
            jump_stack = stack if ins.opname.endswith("_OR_POP") else prefix
            paths = [(next_offset, list(prefix)), (target_offset, list(jump_stack))]
        in_block = exception_entry_at(code, ins.offset) is not None or \
            any(isinstance(v, WithExitVariable) for v in stack)
        lives = [tuple(sorted(n for n in live_locals_at(code, off) if n in self.symbolic_locals))
                 for off, _ in paths]
        needed = set().union(*map(set, lives))
        if in_block:
            needed |= {n for n in live_locals_at(code, ins.offset) if n in self.symbolic_locals}
        needed = sorted(needed)
        live_vars = [self.symbolic_locals[n] for n in needed]

        # an autocast block open at the break ends in this graph (the resume function re-enters it)
        autocast_type = _autocast_variable_type()
        if autocast_type is not None:
            for v in reversed(stack):
                if isinstance(v, WithExitVariable) and isinstance(v.ctx, autocast_type):
                    v.ctx.exit(self)

        values = [v for v in stack if not isinstance(v, NullVariable)] + live_vars
        # stack slots below the instruction that are lone iterators travel as tuples of their items
        counts: dict = {}
        for v in values:
            counts[id(v)] = counts.get(id(v), 0) + 1
        from .variables.iterators import ListIteratorVariable
        # (an iterator over a list travels as the real list iterator, rebuilt at its position: the
        # resumed loop must see what the rest of the frame does to the list)
        iter_slots = {id(v) for v in prefix if isinstance(v, ListIteratorVariable) and counts[id(v)] == 1}

        cg = self._codegen_graph_prefix(values)
        for v in values:
            if v in cg.temps or _is_torch_context_exit(v, autocast_type):
                continue
            if id(v) in iter_slots:
                items = v.remaining_items(self)
                for item in items:
                    cg.reconstruct(item)
                cg.build_tuple(len(items))
                name = cg.new_temp_name()
                cg.append(Instr("STORE_FAST", name))
                cg.temps[v] = name
            else:
                cg.reconstruct_to_temp(v)
        _replay_side_effects(self, cg)
        if in_block:
            return self._break_in_block(cg, ins, stack, paths, lives, needed, iter_slots, grad_at_break,
                                        autocast_type)

        _emit_set_grad(cg, grad_at_break)
        for v in stack[-consumed:]:
            cg.reconstruct(v)          # NULL -> PUSH_NULL, others from their temps
        temps = cg.temps

        def load_slot(i, v, kind):
            cg.append(Instr("LOAD_FAST", _MARKER_LOCALS[v] if v is _RESULT or v is _EXIT else temps[v]))

        def load_local(name):
            cg.append(Instr("LOAD_FAST", temps[self.symbolic_locals[name]]))

        if ins.opname == "CALL" or ins.opname in _VALUE_OPS:
            if ins.opname == "CALL":
                cg.call(ins.arg, kw_names)
            else:
                cg.append(_native_instr(ins))
            cg.append(Instr("STORE_FAST", "__bytegraph_result"))
            self._call_resume(cg, paths[0], lives[0], iter_slots, grad_at_break, load_slot, load_local)
        elif ins.opname == "BEFORE_WITH":
            cg.append(Instr("BEFORE_WITH"))
            cg.append(Instr("STORE_FAST", _MARKER_LOCALS[_RESULT]))
            cg.append(Instr("STORE_FAST", _MARKER_LOCALS[_EXIT]))
            self._call_resume(cg, paths[0], lives[0], iter_slots, grad_at_break, load_slot, load_local)
        else:
            jump_label = Label()
            cg.append(Instr(ins.opname.replace("BACKWARD", "FORWARD"), jump_label))
            self._call_resume(cg, paths[0], lives[0], iter_slots, grad_at_break, load_slot, load_local)
            cg.append(jump_label)
            if ins.opname.endswith("_OR_POP"):
                cg.pop_top()           # the kept value is passed from its temp
            self._call_resume(cg, paths[1], lives[1], iter_slots, grad_at_break, load_slot, load_local)
        return self._finish_code(cg)

    def _break_in_block(self, cg, ins, stack, paths, lives, needed, iter_slots, grad_at_break, autocast_type):
        """The break instruction is inside a try/with block: rebuild the real stack and locals, jump
        into a copy of this frame's code at the instruction (its handlers protect it), and leave the
        copy right after it for continuations that call the resume functions."""
        from .variables.ctx import WithExitVariable
        from .variables.torch import GradModeVariable
        code = self.code
        for v in stack:
            if isinstance(v, NullVariable):
                cg.push_null()
            elif isinstance(v, WithExitVariable) and isinstance(v.ctx, GradModeVariable):
                cg.load_const(RESTORE_GRAD[bool(v.ctx.previous)])
            elif isinstance(v, WithExitVariable) and autocast_type is not None and \
                    isinstance(v.ctx, autocast_type):
                cg.load_callable(torch.autocast)   # enter the real context manager again
                for value in (v.ctx.device, v.ctx.dtype, v.ctx.enabled, v.ctx.cache_enabled):
                    cg.load_const(value)
                cg.call(4)
                cg.append(Instr("BEFORE_WITH"))
                cg.pop_top()
            else:
                cg.append(Instr("LOAD_FAST", cg.temps[v]))
                if id(v) in iter_slots:
                    cg.append(Instr("GET_ITER"))
        for name in needed:
            cg.append(Instr("LOAD_FAST", cg.temps[self.symbolic_locals[name]]))
            cg.append(Instr("STORE_FAST", name))
        _emit_set_grad(cg, grad_at_break)
        index = instruction_index(code, ins.offset)
        start = call_start_index(code, index) if ins.opname == "CALL" else index
        enter, conts = Label(), [Label() for _ in paths]
        cg.append(Instr("JUMP_FORWARD", enter))

        def edit(item):
            if len(paths) == 1:
                return [item, Instr("JUMP_FORWARD", conts[0], location=item.location)]
            name = item.name.replace("BACKWARD", "FORWARD")
            return [Instr(name, conts[1], location=item.location),
                    Instr("JUMP_FORWARD", conts[0], location=item.location)]
        cg.instructions.extend(body_items(code, labels={start: enter}, replace={index: edit}))

        def load_local(name):
            cg.append(Instr("LOAD_FAST", name))

        for label, path, live in zip(conts, paths, lives):
            cg.append(label)
            after = path[1]
            for i in reversed(range(len(after))):
                cg.append(Instr("STORE_FAST", f"__bytegraph_cont{i}"))
            for i in reversed(range(len(after))):   # leave the torch contexts, innermost first
                if _is_torch_context_exit(after[i], autocast_type):
                    cg.push_null()
                    cg.append(Instr("LOAD_FAST", f"__bytegraph_cont{i}"))
                    for _ in range(3):
                        cg.load_const(None)
                    cg.call(3)
                    cg.pop_top()

            def load_slot(i, v, kind):
                if kind == ITER_SLOT:
                    cg.load_callable(tuple)
                    cg.append(Instr("LOAD_FAST", f"__bytegraph_cont{i}"))
                    cg.call(1)
                else:
                    cg.append(Instr("LOAD_FAST", f"__bytegraph_cont{i}"))
            self._call_resume(cg, path, live, iter_slots, grad_at_break, load_slot, load_local)
        return self._finish_code(cg, copied=True)

    def _slot_kind(self, v, iter_slots):
        from .variables.ctx import WithExitVariable
        from .variables.torch import GradModeVariable
        if isinstance(v, NullVariable):
            return NULL_SLOT
        if v is _RESULT or v is _EXIT:
            return VALUE_SLOT
        if isinstance(v, WithExitVariable):
            if isinstance(v.ctx, GradModeVariable):
                return grad_slot(v.ctx.target)
            autocast_type = _autocast_variable_type()
            if autocast_type is not None and isinstance(v.ctx, autocast_type):
                return autocast_slot(v.ctx.device, v.ctx.dtype, v.ctx.enabled, v.ctx.cache_enabled)
            return VALUE_SLOT
        return ITER_SLOT if id(v) in iter_slots else VALUE_SLOT

    def _call_resume(self, cg, path, live, iter_slots, grad_at_break, load_slot, load_local):
        offset, after = path
        origin = original_location(self.code, offset)
        if origin is None:
            raise Unsupported("unsupported_op", what="a graph break in a resume function's prologue")
        original, orig_offset = origin
        layout = tuple(self._slot_kind(v, iter_slots) for v in after)
        grad_slots = [k for k in layout if is_context_slot(k) and k[0] == "grad"]
        grad_after = grad_at_break if grad_slots and grad_slots[-1][1] != grad_at_break else None
        # a resume function hands the next one back to the original frame's `run_resume` loop
        handing_back = is_resume_code(self.code)
        cg.load_callable(ResumeCall if handing_back else run_resume)
        names = closure_names(original)
        if names:
            cells = set(self.code.co_cellvars)
            for name in names:
                cg.append(Instr("LOAD_CLOSURE", CellVar(name) if name in cells else FreeVar(name)))
            cg.build_tuple(len(names))
            cg.load_const(resume_code(original, orig_offset, layout, live, grad_after))
            cg.append(Instr("MAKE_FUNCTION", 0x08))
        else:
            cg.load_const(resume_function(original, self.f_globals, orig_offset, layout, live, grad_after))
        n = 0
        for i, (v, kind) in enumerate(zip(after, layout)):
            if kind == NULL_SLOT or is_context_slot(kind):
                continue
            load_slot(i, v, kind)
            n += 1
        for name in live:
            load_local(name)
            n += 1
        if handing_back:
            cg.build_tuple(n)
            cg.call(2)
        else:
            cg.call(n + 1)
        cg.append(Instr("RETURN_VALUE"))

    # -- finishing ------------------------------------------------------------------
    def _codegen_graph_prefix(self, values) -> PyCodegen:
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
        tensors = _collect_graph_values(self, roots)
        output.prune_size_inputs(tensors)
        self.op_count = output.count_ops()
        self.gm = None
        cg = PyCodegen(self)
        self._graph_outputs = tensors
        self._graph_call = None
        if self.op_count:
            # the backend runs only once the whole code is generated (see _finish_code)
            cg.output_index = {v.proxy.node: i for i, v in enumerate(tensors)}
            cg.push_null()
            self._graph_call = Instr("LOAD_CONST", None)
            cg.append(self._graph_call)
            for _, proxy, _ in output.graph_inputs:
                proxy.node.meta["source"].reconstruct(cg)   # each input fetched from where it came
            cg.call(len(output.graph_inputs))
            cg.append(Instr("STORE_FAST", cg.graph_outputs_local))
        elif tensors and any(v.proxy.node.op != "placeholder" for v in tensors):
            raise Unsupported("unsupported_op", what="tensor values with no graph")
        return cg

    def _finish_code(self, cg, copied=False) -> CompiledFrame:
        if self._graph_call is not None:
            self.gm, compiled = self.output.compile_graph(self._graph_outputs)
            self._graph_call.arg = compiled
        prefix = [Instr("MAKE_CELL", CellVar(n)) for n in self.code.co_cellvars]
        if self.code.co_freevars:
            prefix.append(Instr("COPY_FREE_VARS", len(self.code.co_freevars)))
        code = new_code(self.code, cg.instructions, prefix, len(self.arg_names), copies_template=copied)
        return CompiledFrame(code, self.output.final_guards(), self.gm, self.op_count, self.arg_names)

    def finish(self, return_value) -> CompiledFrame:
        self.stack = []
        lifetimes.frame_returns(self, return_value)
        cg = self._codegen_graph_prefix([return_value])
        cg.reconstruct_to_temp(return_value)
        _replay_side_effects(self, cg)
        if self.output.grad_enabled != self._entry_grad:
            _emit_set_grad(cg, self.output.grad_enabled)   # `torch.set_grad_enabled(m)` outside a `with`
        cg.reconstruct(return_value)
        cg.append(Instr("RETURN_VALUE"))
        return self._finish_code(cg)


_ALWAYS_BREAKABLE = ("CALL", "BEFORE_WITH")
_JUMPS = {f"POP_JUMP_{d}_IF_{c}" for d in ("FORWARD", "BACKWARD") for c in ("TRUE", "FALSE")} | \
    {"JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}
# instructions that pop N values and push one result: a break there runs them natively too, when an
# operand is something other than a tensor or a constant (a numpy array, an opaque object...)
_VALUE_OPS = {"BINARY_OP": 2, "COMPARE_OP": 2, "BINARY_SUBSCR": 2, "CONTAINS_OP": 2, "IS_OP": 2,
              "UNARY_NEGATIVE": 1, "UNARY_NOT": 1, "UNARY_INVERT": 1, "UNARY_POSITIVE": 1, "LOAD_ATTR": 1}
_PLAIN = (TensorVariable, SymNodeVariable, ConstantVariable)
_RESULT = object()   # the result of the instruction run natively at a break
_EXIT = object()     # the `__exit__` that a BEFORE_WITH run natively at a break leaves under its result
_MARKER_LOCALS = {_RESULT: "__bytegraph_result", _EXIT: "__bytegraph_exit"}


# how code reads its own frame's variables: the builtins `locals()`, `eval`/`exec`, `vars()`/`dir()`
# without an argument (loaded as globals), a frame object's `f_locals`/`f_back` or one got from
# `sys._getframe()` / `inspect.currentframe()` (loaded as attributes)
_FRAME_READING_GLOBALS = frozenset({"locals", "eval", "exec"})
_FRAME_READING_WITHOUT_ARGUMENT = frozenset({"vars", "dir"})
_FRAME_READING_ATTRS = frozenset({"_getframe", "currentframe", "f_locals", "f_back", "getframeinfo"})


def reads_own_frame(code) -> bool:
    """Whether `code` may look at its own frame's variables. Transformed code and resume functions
    hold other variables (temporaries, only the live locals), so such a frame never breaks: it is
    traced whole or runs eagerly."""
    insts = list(dis.get_instructions(code))
    for ins, after in zip(insts, insts[1:] + [None]):
        if ins.opname == "LOAD_GLOBAL" and (ins.argval in _FRAME_READING_GLOBALS or (
                ins.argval in _FRAME_READING_WITHOUT_ARGUMENT and not after.opname.startswith("LOAD_"))):
            return True     # (`vars(obj)`: an argument is loaded next; anything else may be a bare call)
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _FRAME_READING_ATTRS:
            return True
    return False


def _is_closure_function(value) -> bool:
    from .builder import is_skipped_function
    return type(value) is types.FunctionType and value.__closure__ is not None and \
        not is_skipped_function(value) and not is_resume_code(value.__code__)


def _is_torch_context_exit(v, autocast_type) -> bool:
    """The `__exit__` of a grad-mode or autocast `with` block (not passed to resume functions: their
    prologue enters the block again)."""
    from .variables.ctx import WithExitVariable
    from .variables.torch import GradModeVariable
    if not isinstance(v, WithExitVariable):
        return False
    return isinstance(v.ctx, GradModeVariable) or (autocast_type is not None and isinstance(v.ctx, autocast_type))


def _emit_set_grad(cg, mode: bool) -> None:
    cg.load_callable(torch._C._set_grad_enabled)
    cg.load_const(bool(mode))
    cg.call(1)
    cg.pop_top()


def _native_instr(ins) -> Instr:
    """The `bytecode` Instr for a value instruction of the original code."""
    from bytecode.instr import BinaryOp, Compare
    if ins.opname == "BINARY_OP":
        return Instr("BINARY_OP", BinaryOp(ins.arg))
    if ins.opname == "COMPARE_OP":
        return Instr("COMPARE_OP", Compare(ins.arg))
    if ins.opname in ("LOAD_ATTR",):
        return Instr(ins.opname, ins.argval)
    if ins.opname in ("CONTAINS_OP", "IS_OP"):
        return Instr(ins.opname, ins.arg)
    return Instr(ins.opname)


def _had_attribute(tx, var, name) -> bool:
    """Whether the real object has `name` in its instance dict (guarded) or a filled slot (no user
    code runs)."""
    from .reads import MISSING, class_lookup, instance_attr
    obj = var.value
    if instance_attr(tx, obj, var.source, name) is not MISSING:
        return True
    slot = class_lookup(tx, type(obj), name)[0]
    if isinstance(slot, types.MemberDescriptorType):
        try:
            slot.__get__(obj)
            return True
        except AttributeError:
            return False
    return False


def _collect_graph_values(tx, roots) -> list:
    """Tensors and symbolic values reachable from the roots, in a stable order, without duplicates."""
    from .variables.ctx import WithExitVariable
    from .variables.dicts import DictVariable, SetVariable
    from .variables.functions import BoundMethodVariable, NestedFunctionVariable, PartialVariable
    from .variables.iterators import ListIteratorVariable, ListSequenceIteratorVariable
    from .variables.lists import BaseSequence, SliceVariable
    from .variables.user_defined import UserDefinedObjectVariable
    seen, found, nodes = set(), [], set()

    def visit(var):
        if var is None or id(var) in seen:
            return
        seen.add(id(var))
        if isinstance(var, (TensorVariable, SymNodeVariable)):
            if var.proxy.node not in nodes and not (var.proxy.node.op == "placeholder" and var.source is not None):
                nodes.add(var.proxy.node)
                found.append(var)
            return
        effects = tx.output.side_effects
        if isinstance(var, BaseSequence):
            for item in var.get_items(tx):
                visit(item)
        elif isinstance(var, DictVariable):
            for k, v in var.pairs(tx):
                visit(k)
                visit(v)
        elif isinstance(var, (SetVariable, ListIteratorVariable)):
            for item in effects.get(var):
                visit(item)
        elif isinstance(var, ListSequenceIteratorVariable):
            visit(var.seq)
        elif isinstance(var, UserDefinedObjectVariable) and effects.is_tracked(var):
            for v in effects.get(var).values():
                if isinstance(v, VariableTracker):
                    visit(v)
        elif isinstance(var, SliceVariable):
            for v in (var.start, var.stop, var.step):
                visit(v)
        elif isinstance(var, BoundMethodVariable):
            visit(var.self_var)
        elif isinstance(var, PartialVariable):
            for a in var.args:
                visit(a)
            for _, v in var.kwargs:
                visit(v)
        elif isinstance(var, NestedFunctionVariable):
            for d in var.defaults:
                visit(d)
            for _, d in var.kwdefaults:
                visit(d)
            for cell in var.closure:
                if cell in effects.cells:
                    visit(effects.cells[cell])
        elif isinstance(var, WithExitVariable):
            visit(var.ctx)
        elif hasattr(var, "graph_values"):   # a tracker backed by graph values (a traced ndarray)
            for v in var.graph_values():
                visit(v)
    for root in roots:
        visit(root)
    return found


def _replay_side_effects(tx, cg):
    """Write back what the traced code changed, the frame's own closure cells included (read by
    the resume functions, and by closures made in the frame, which may outlive it)."""
    from .variables.dicts import DictVariable, SetVariable
    from .variables.lists import ListVariable
    from .variables.user_defined import _MISSING, UserDefinedObjectVariable
    effects = tx.output.side_effects
    # 1. rebuild every new value first: they may be read from objects that step 2 overwrites
    payloads = []
    for var in effects.mutated_in_order():
        if isinstance(var, ListVariable):
            items = effects.get(var)
            for item in items:
                cg.reconstruct(item)
            cg.build_list(len(items))
        elif isinstance(var, DictVariable):
            pairs = effects.get(var)
            for k, v in pairs:
                cg.reconstruct(k)
                cg.reconstruct(v)
            cg.build_map(len(pairs))
        elif isinstance(var, SetVariable):
            items = effects.get(var)
            for item in items:
                cg.reconstruct(item)
            cg.build_tuple(len(items))
        elif isinstance(var, UserDefinedObjectVariable):
            for name, value in effects.get(var).items():
                if value is not _MISSING and value not in cg.temps:
                    cg.reconstruct_to_temp(value)
            continue
        else:
            continue
        payloads.append((var, cg.store_temp()))
    global_values = []
    for name, value in effects.globals.items():
        cg.reconstruct(value)
        global_values.append((name, cg.store_temp()))
    # 2. write them back, in program order
    for var, temp in payloads:
        if isinstance(var, ListVariable):   # src[:] = new items
            cg.load_temp(temp)
            var.source.reconstruct(cg)
            cg.load_const(slice(None))
            cg.append(Instr("STORE_SUBSCR"))
        else:                               # src.clear(); src.update(new contents)
            for method, args in (("clear", ()), ("update", (temp,))):
                var.source.reconstruct(cg)
                cg.load_method(method)
                for a in args:
                    cg.load_temp(a)
                cg.call_method(len(args))
                cg.pop_top()
    for var in effects.mutated_in_order():
        if isinstance(var, UserDefinedObjectVariable):
            # the traced writes already went through the class's own __setattr__/__delattr__ (a
            # frozen dataclass's raises): what is left is object's, which they are written back with
            # (a tracker with its own setattr model, an nn.Module's, is written back through the class)
            generic = type(var).setattr is UserDefinedObjectVariable.setattr
            for name, value in effects.get(var).items():
                if generic and value is _MISSING and not _had_attribute(tx, var, name):
                    continue        # set and deleted again while tracing
                if not generic:
                    if value is not _MISSING:
                        cg.reconstruct(value)
                    var.source.reconstruct(cg)
                    cg.append(Instr("DELETE_ATTR", name) if value is _MISSING else Instr("STORE_ATTR", name))
                    continue
                cg.load_callable(object.__delattr__ if value is _MISSING else object.__setattr__)
                var.source.reconstruct(cg)
                cg.load_const(name)
                if value is not _MISSING:
                    cg.reconstruct(value)
                cg.call(2 if value is _MISSING else 3)
                cg.pop_top()
    for name, temp in global_values:
        cg.load_temp(temp)
        cg.append(Instr("STORE_GLOBAL", name))
    for name in effects.deleted_globals:
        cg.append(Instr("DELETE_GLOBAL", name))
    own = {tx.cells[n]: n for n in tx.code.co_cellvars}
    for cell, value in effects.cells.items():
        if isinstance(cell, FrameFreeCell):
            cg.reconstruct(value)
            cg.append(Instr("STORE_DEREF", FreeVar(cell.name)))
        elif isinstance(cell, RealCellVariable):
            cg.reconstruct(value)
            cell.source.reconstruct(cg)
            cg.store_attr("cell_contents")
        elif cell in own:
            cg.reconstruct(value)
            cg.append(Instr("STORE_DEREF", CellVar(own[cell])))
