"""InstructionTranslator: traces one whole frame and produces its transformed code.

Compile time only. It sets up the frame's arguments, cells and free variables as trackers, runs
the interpreter to RETURN_VALUE, compiles the graph with the backend, and generates bytecode that
calls the graph, replays side effects and rebuilds the return value.
"""
from __future__ import annotations

import dataclasses
import inspect

from bytecode import Instr
from bytecode.instr import CellVar, FreeVar

from ..guards.source import ClosureSource, LocalSource
from .builder import wrap
from .codegen import PyCodegen, new_code
from .graph_break import Unsupported
from .output_graph import OutputGraph
from .translator import InstructionTranslatorBase, ReturnValue, UserException
from .variables.base import VariableTracker
from .variables.misc import CellVariable, RealCellVariable
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


def frame_arg_names(code) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]


class InstructionTranslator(InstructionTranslatorBase):
    def __init__(self, code, func, args, config, backend):
        output = OutputGraph(code, config, backend)
        self.func = func
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

    def finish(self, return_value) -> CompiledFrame:
        output = self.output
        effects = output.side_effects
        # everything the generated code must rebuild: the return value and the side effects
        roots = [return_value]
        for var in effects.mutated_in_order():
            roots.append(var)
        roots.extend(effects.globals.values())
        roots.extend(effects.cells.values())
        tensors = _collect_graph_values(self, roots)
        op_count = output.count_ops()
        gm = None
        cg = PyCodegen(self)
        if op_count:
            gm, compiled = output.compile_graph(tensors)
            cg.output_index = {v.proxy.node: i for i, v in enumerate(tensors)}
            cg.load_callable(compiled)
            for _, proxy, _ in output.graph_inputs:
                cg.reconstruct(output.input_by_source[proxy.node.meta["source"]])
            cg.call(len(output.graph_inputs))
            cg.append(Instr("STORE_FAST", cg.graph_outputs_local))
        elif tensors and any(v.proxy.node.op != "placeholder" for v in tensors):
            raise Unsupported("unsupported_op", what="tensor values with no graph")
        _replay_side_effects(self, cg)
        cg.reconstruct(return_value)
        cg.append(Instr("RETURN_VALUE"))
        prefix = [Instr("MAKE_CELL", CellVar(n)) for n in self.code.co_cellvars]
        if self.code.co_freevars:
            prefix.append(Instr("COPY_FREE_VARS", len(self.code.co_freevars)))
        code = new_code(self.code, cg.instructions, prefix, len(self.arg_names))
        return CompiledFrame(code, set(output.guards), gm, op_count, self.arg_names)


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
