"""InstructionTranslator: traces one whole frame and produces its transformed code.

Compile time only. It sets up the frame's arguments, cells and free variables as trackers, runs
the interpreter to RETURN_VALUE, compiles the graph with the backend, and generates bytecode that
calls the graph, replays side effects and rebuilds the return value.
"""
from __future__ import annotations

import dataclasses
import inspect

from bytecode import Instr, Label
from bytecode.instr import CellVar, FreeVar

from ..guards.source import ClosureSource, LocalSource
from .builder import wrap
from .codegen import PyCodegen, new_code
from .graph_break import Unsupported
from .output_graph import OutputGraph
from .resume import ITER_SLOT as _ITER_SLOT, NULL_SLOT as _NULL_SLOT, VALUE_SLOT as _VALUE_SLOT
from .resume import in_exception_block, live_locals_at, resume_code, resume_function
from .translator import InstructionTranslatorBase, ReturnValue, UserException
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.misc import CellVariable, NullVariable, RealCellVariable
from .variables.tensor import SymNodeVariable, TensorVariable


@dataclasses.dataclass(frozen=True, eq=False)
class FrameFreeCell(CellVariable):
    """A free variable of the traced frame: read through the closure, written back by STORE_DEREF."""
    name: str = ""
    index: int = 0

    def load(self, tx):
        if self in tx.output.side_effects.cells:
            return tx.output.side_effects.cells[self]
        cell = tx.func.__closure__[self.index]
        try:
            value = cell.cell_contents
        except ValueError:
            raise NameError(f"free variable '{self.name}' referenced before assignment") from None
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


class InstructionTranslator(InstructionTranslatorBase):
    def __init__(self, code, func, args, config, backend, allow_breaks=True, shape_policy=None):
        output = OutputGraph(code, config, backend, shape_policy)
        self.func = func
        self.allow_breaks = allow_breaks
        self._checkpoint = None
        self.op_count = 0
        self.gm = None
        self.arg_names = frame_arg_names(code)
        super().__init__(code, func.__globals__, {}, {}, output, config)
        for name, value in zip(self.arg_names, args):
            self.symbolic_locals[name] = wrap(self, value, LocalSource(name))
        for name in code.co_cellvars:
            self.cells[name] = CellVariable.new(self, self.symbolic_locals.get(name))
        for i, name in enumerate(code.co_freevars):
            self.cells[name] = FrameFreeCell(name=name, index=i)

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
        if ins.opname == "CALL" or (ins.opname in _JUMPS and not self.stack[-1].is_python_constant()) or \
                (ins.opname in _VALUE_OPS and not all(isinstance(v, _PLAIN) for v in
                                                      self.stack[len(self.stack) - _VALUE_OPS[ins.opname]:])):
            self._checkpoint = (ins, list(self.stack), dict(self.symbolic_locals), self.kw_names,
                                self.output.checkpoint())
        else:
            self._checkpoint = None

    def can_break_at_checkpoint(self) -> bool:
        """Breaking needs a checkpoint at the failing root instruction, outside try/with blocks, in a
        plain function without cells."""
        cp = self._checkpoint
        if not self.allow_breaks or cp is None or cp[0] is not self.current:
            return False
        code = self.code
        if code.co_cellvars:
            return False   # the resume function would need this frame's cells: not supported yet
        if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            return False
        return not in_exception_block(code, cp[0].offset)

    def break_at_checkpoint(self) -> CompiledFrame:
        """Roll back to the checkpoint, compile the graph so far, and emit: call graph, replay side
        effects, rebuild the stack and live locals, run the instruction natively, call the resume
        function(s) for the rest of the frame."""
        ins, stack, symbolic_locals, kw_names, state = self._checkpoint
        self.output.restore(state)
        self.stack = list(stack)
        self.symbolic_locals = dict(symbolic_locals)
        next_offset = self.instructions[ins.index + 1].offset
        if ins.opname == "CALL" or ins.opname in _VALUE_OPS:
            consumed = ins.arg + 2 if ins.opname == "CALL" else _VALUE_OPS[ins.opname]
            prefix = stack[:-consumed]
            # (offset, stack after: trackers of the preserved prefix + RESULT marker)
            paths = [(next_offset, prefix + [_RESULT])]
        else:
            consumed = 1
            prefix = stack[:-1]
            target_offset = self.instructions[ins.target].offset
            jump_stack = stack if ins.opname.endswith("_OR_POP") else prefix
            paths = [(next_offset, list(prefix)), (target_offset, list(jump_stack))]
        lives = [tuple(sorted(n for n in live_locals_at(self.code, off) if n in self.symbolic_locals))
                 for off, _ in paths]
        live_vars = [self.symbolic_locals[n] for n in sorted(set().union(*map(set, lives)))]
        values = [v for v in stack if not isinstance(v, NullVariable)] + live_vars

        # stack slots below the instruction that are lone iterators travel as tuples of their items
        counts: dict = {}
        for v in values:
            counts[id(v)] = counts.get(id(v), 0) + 1
        from .variables.iterators import ListIteratorVariable
        iter_slots = {id(v) for v in prefix if isinstance(v, ListIteratorVariable) and counts[id(v)] == 1}

        cg = self._codegen_graph_prefix(values)
        for v in values:
            if v in cg.temps:
                continue
            if id(v) in iter_slots:
                items = self.output.side_effects.get(v)
                for item in items:
                    cg.reconstruct(item)
                cg.build_tuple(len(items))
                name = f"__bytegraph_tmp{len(cg.temps)}"
                cg.append(Instr("STORE_FAST", name))
                cg.temps[v] = name
            else:
                cg.reconstruct_to_temp(v)
        _replay_side_effects(self, cg)
        for v in stack[-consumed:]:
            cg.reconstruct(v)          # NULL -> PUSH_NULL, others from their temps
        lineno = ins.lineno
        if ins.opname == "CALL" or ins.opname in _VALUE_OPS:
            if ins.opname == "CALL":
                cg.call(ins.arg, kw_names)
            else:
                cg.append(_native_instr(ins))
            cg.append(Instr("STORE_FAST", "__bytegraph_result"))
            self._call_resume(cg, paths[0], lives[0], iter_slots, lineno)
        else:
            jump_label = Label()
            cg.append(Instr(ins.opname.replace("BACKWARD", "FORWARD"), jump_label))
            self._call_resume(cg, paths[0], lives[0], iter_slots, lineno)
            cg.append(jump_label)
            if ins.opname.endswith("_OR_POP"):
                cg.pop_top()           # the kept value is passed from its temp
            self._call_resume(cg, paths[1], lives[1], iter_slots, lineno)
        return self._finish_code(cg)

    def _call_resume(self, cg, path, live, iter_slots, lineno):
        offset, after = path
        layout = tuple(_NULL_SLOT if isinstance(v, NullVariable) else
                       _ITER_SLOT if v is not _RESULT and id(v) in iter_slots else _VALUE_SLOT for v in after)
        if self.code.co_freevars:
            cg.push_null()
            for name in self.code.co_freevars:
                cg.append(Instr("LOAD_CLOSURE", FreeVar(name)))
            cg.build_tuple(len(self.code.co_freevars))
            cg.load_const(resume_code(self.code, offset, layout, live))
            cg.append(Instr("MAKE_FUNCTION", 0x08))
        else:
            cg.load_callable(resume_function(self.code, self.func.__globals__, offset, layout, live))
        n = 0
        for v in after:
            if isinstance(v, NullVariable):
                continue
            if v is _RESULT:
                cg.append(Instr("LOAD_FAST", "__bytegraph_result"))
            else:
                cg.append(Instr("LOAD_FAST", cg.temps[v]))
            n += 1
        for name in live:
            cg.append(Instr("LOAD_FAST", cg.temps[self.symbolic_locals[name]]))
            n += 1
        cg.call(n)
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
        for var in effects.mutated_in_order():
            roots.append(var)
        roots.extend(effects.globals.values())
        roots.extend(effects.cells.values())
        tensors = _collect_graph_values(self, roots)
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
                cg.reconstruct(output.input_by_source[proxy.node.meta["source"]])
            cg.call(len(output.graph_inputs))
            cg.append(Instr("STORE_FAST", cg.graph_outputs_local))
        elif tensors and any(v.proxy.node.op != "placeholder" for v in tensors):
            raise Unsupported("unsupported_op", what="tensor values with no graph")
        return cg

    def _finish_code(self, cg) -> CompiledFrame:
        if self._graph_call is not None:
            self.gm, compiled = self.output.compile_graph(self._graph_outputs)
            self._graph_call.arg = compiled
        prefix = [Instr("MAKE_CELL", CellVar(n)) for n in self.code.co_cellvars]
        if self.code.co_freevars:
            prefix.append(Instr("COPY_FREE_VARS", len(self.code.co_freevars)))
        code = new_code(self.code, cg.instructions, prefix, len(self.arg_names))
        return CompiledFrame(code, self.output.final_guards(), self.gm, self.op_count, self.arg_names)

    def finish(self, return_value) -> CompiledFrame:
        cg = self._codegen_graph_prefix([return_value])
        cg.reconstruct_to_temp(return_value)
        _replay_side_effects(self, cg)
        cg.reconstruct(return_value)
        cg.append(Instr("RETURN_VALUE"))
        return self._finish_code(cg)


_JUMPS = {f"POP_JUMP_{d}_IF_{c}" for d in ("FORWARD", "BACKWARD") for c in ("TRUE", "FALSE")} | \
    {"JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}
# instructions that pop N values and push one result: a break there runs them natively too, when an
# operand is something other than a tensor or a constant (a numpy array, an opaque object...)
_VALUE_OPS = {"BINARY_OP": 2, "COMPARE_OP": 2, "BINARY_SUBSCR": 2, "CONTAINS_OP": 2, "IS_OP": 2,
              "UNARY_NEGATIVE": 1, "UNARY_NOT": 1, "UNARY_INVERT": 1, "UNARY_POSITIVE": 1, "LOAD_ATTR": 1}
_PLAIN = (TensorVariable, SymNodeVariable, ConstantVariable)
_RESULT = object()   # the result of the instruction run natively at a break


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


def _collect_graph_values(tx, roots) -> list:
    """Tensors and symbolic values reachable from the roots, in a stable order, without duplicates."""
    from .variables.dicts import DictVariable, SetVariable
    from .variables.functions import BoundMethodVariable, NestedFunctionVariable, PartialVariable
    from .variables.iterators import ListIteratorVariable
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
    for root in roots:
        visit(root)
    return found


def _replay_side_effects(tx, cg):
    from .variables.dicts import DictVariable, SetVariable
    from .variables.lists import ListVariable
    from .variables.user_defined import _MISSING, UserDefinedObjectVariable
    effects = tx.output.side_effects
    for var in effects.mutated_in_order():
        if isinstance(var, ListVariable):
            # src[:] = [new items]
            items = effects.get(var)
            for item in items:
                cg.reconstruct(item)
            cg.build_list(len(items))
            var.source.reconstruct(cg)
            cg.load_const(slice(None))
            cg.append(Instr("STORE_SUBSCR"))
        elif isinstance(var, DictVariable):
            var.source.reconstruct(cg)
            cg.load_method("clear")
            cg.call_method(0)
            cg.pop_top()
            var.source.reconstruct(cg)
            cg.load_method("update")
            pairs = effects.get(var)
            for k, v in pairs:
                cg.reconstruct(k)
                cg.reconstruct(v)
            cg.build_map(len(pairs))
            cg.call_method(1)
            cg.pop_top()
        elif isinstance(var, SetVariable):
            var.source.reconstruct(cg)
            cg.load_method("clear")
            cg.call_method(0)
            cg.pop_top()
            var.source.reconstruct(cg)
            cg.load_method("update")
            items = effects.get(var)
            for item in items:
                cg.reconstruct(item)
            cg.build_tuple(len(items))
            cg.call_method(1)
            cg.pop_top()
        elif isinstance(var, UserDefinedObjectVariable):
            for name, value in effects.get(var).items():
                if value is _MISSING:
                    var.source.reconstruct(cg)
                    cg.append(Instr("DELETE_ATTR", name))
                else:
                    cg.reconstruct(value)
                    var.source.reconstruct(cg)
                    cg.store_attr(name)
    for name, value in effects.globals.items():
        cg.reconstruct(value)
        cg.append(Instr("STORE_GLOBAL", name))
    for name in effects.deleted_globals:
        cg.append(Instr("DELETE_GLOBAL", name))
    for cell, value in effects.cells.items():
        if isinstance(cell, FrameFreeCell):
            cg.reconstruct(value)
            cg.append(Instr("STORE_DEREF", FreeVar(cell.name)))
        elif isinstance(cell, RealCellVariable):
            cg.reconstruct(value)
            cell.source.reconstruct(cg)
            cg.store_attr("cell_contents")
