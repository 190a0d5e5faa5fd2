"""PyCodegen: emits CPython 3.11 bytecode (as `bytecode.Instr`s) that rebuilds values after a graph
ran: graph outputs, constants, containers, new objects, functions with their closure cells, the
`__exit__` of an open `with` block, side-effect replay. Compile time only (the small helpers
`_rebuild_object` and `RestoreGradMode` run inside transformed code)."""
from __future__ import annotations

import builtins
import functools
import types

import torch
from bytecode import Instr
from bytecode.instr import CellVar, FreeVar

from .graph_break import Unsupported
from .resume import assemble, function_bytecode
from .variables.builtins import BuiltinVariable, make_namedtuple
from .variables.constant import ConstantVariable
from .variables.ctx import WithExitVariable
from .variables.warning import CatchWarningsVariable
from .variables.dicts import DictVariable, SetVariable
from .variables.functions import BoundMethodVariable, NestedFunctionVariable, PartialVariable
from .variables.iterators import IteratorVariable
from .variables.lists import BaseSequence, NamedTupleVariable
from .variables.misc import ExceptionVariable, RealCellVariable
from .variables.tensor import SymNodeVariable, TensorVariable, tensor_attrs
from .variables.torch import GradModeVariable
from .variables.user_defined import UserDefinedObjectVariable
from .write_back import set_instance_attr


def _rebuild_object(cls, attrs):
    obj = object.__new__(cls)     # as the trace made it (a class's own __new__ already ran there)
    for name, value in attrs.items():
        set_instance_attr(obj, name, value)
    return obj



# marshal cannot write it: a constant list holding it is never merged with an equal one (load_exact_object)
_KEPT_APART = object()

class RestoreGradMode:
    """Run time: the `__exit__` of a grad-mode `with` block that transformed code rebuilt on the
    stack at a graph break. Calling it (normal exit, or an exception unwinding through the block's
    handler) sets grad mode back to its value before the block; it never swallows an exception."""
    __slots__ = ("mode",)

    def __init__(self, mode: bool):
        self.mode = mode

    def __call__(self, *exc_info):
        torch._C._set_grad_enabled(self.mode)

    def __repr__(self):
        return f"RestoreGradMode({self.mode})"


RESTORE_GRAD = {True: RestoreGradMode(True), False: RestoreGradMode(False)}


_PLAIN_CONSTANTS = (int, float, bool, str, bytes, complex, type(None))


class PyCodegen:
    def __init__(self, tx, graph_outputs_local: str = "__bytegraph_out", output_index=None):
        self.tx = tx
        self.instructions: list = []
        self.graph_outputs_local = graph_outputs_local
        self.output_index = output_index or {}   # fx node -> index in the graph's outputs
        self.output_loads: list = []             # (LOAD_CONST of an output index, fx node), see used_outputs
        self.temps: dict = {}                    # tracker -> local holding its rebuilt value
        self.temp_count = 0                      # temporaries named so far
        self.building: set = set()               # ids of trackers being rebuilt (to catch cycles)
        self.cellvars = set(tx.code.co_cellvars)
        self.freevars = set(tx.code.co_freevars)
        self.at_break = False                    # emitting a graph break (values travel to resume code)

    def append(self, *instrs):
        self.instructions.extend(instrs)

    def used_outputs(self, outputs: list) -> list:
        """The graph outputs the generated code reads, in order, with the code's indices renumbered
        to match. A value the trace once held but the code never rebuilds (an object that died, a
        side effect undone later) is no graph output: a backward would otherwise give its inputs a
        zero gradient where eager gives none."""
        read = {node for _, node in self.output_loads}
        kept = [v for v in outputs if v.proxy.node in read]
        index = {v.proxy.node: i for i, v in enumerate(kept)}
        for instr, node in self.output_loads:
            instr.arg = index[node]
        return kept

    # -- primitives -------------------------------------------------------------
    def load_const(self, value):
        if isinstance(value, type) and value in self.tx.output.trace_local_classes:
            self._trace_local_class(value)
            return
        self.append(Instr("LOAD_CONST", value))

    def _trace_local_class(self, cls):
        """A class the trace made (`collections.namedtuple(...)`): made again by the same call, once
        per run of the transformed code, so everything the trace built of it shares one class, new
        on every call as eager's."""
        if self.at_break:
            # the resumed code would be handed a new class on every call, and recompile for each
            raise Unsupported("unrebuildable", what=f"class {cls.__name__} made in compiled code, live at a break")
        key = ("trace-local class", cls)
        if key in self.temps:
            self.append(Instr("LOAD_FAST", self.temps[key]))
            return
        f_globals, args, kwargs = self.tx.output.trace_local_classes[cls]
        self.load_callable(make_namedtuple)
        self.append(Instr("LOAD_CONST", f_globals), Instr("LOAD_CONST", args), Instr("LOAD_CONST", kwargs))
        self.call(3)
        name = self.new_temp_name()
        self.append(Instr("COPY", 1), Instr("STORE_FAST", name))
        self.temps[key] = name

    def load_exact_object(self, value):
        """`value` itself, not an equal constant: the code's constants are merged by value (what
        marshal can write, lists included, is merged by its bytes), so the object is read out of a
        list that also holds an object marshal refuses, which keeps the list apart by identity."""
        self.load_const([value, _KEPT_APART])
        self.load_const(0)
        self.binary_subscr()

    def push_null(self):
        self.append(Instr("PUSH_NULL"))

    def load_callable(self, fn):
        """NULL + a constant callable: the 3.11 call prefix."""
        self.push_null()
        self.load_const(fn)

    def load_local(self, name):
        if name in self.cellvars:
            self.append(Instr("LOAD_DEREF", CellVar(name)))
        else:
            self.append(Instr("LOAD_FAST", name))


    def load_deref(self, name):
        self.append(Instr("LOAD_DEREF", FreeVar(name) if name in self.freevars else CellVar(name)))

    def store_deref(self, name):
        self.append(Instr("STORE_DEREF", FreeVar(name) if name in self.freevars else CellVar(name)))

    def load_global(self, name):
        self.append(Instr("LOAD_GLOBAL", (False, name)))

    def load_global_builtin(self, name):
        self.load_callable(getattr(builtins, name))

    def load_attr(self, name):
        self.append(Instr("LOAD_ATTR", name))

    def store_attr(self, name):
        self.append(Instr("STORE_ATTR", name))

    def load_method(self, name):
        self.append(Instr("LOAD_METHOD", name))

    def call_method(self, n):
        self.append(Instr("PRECALL", n), Instr("CALL", n))

    def call(self, n, kw_names=()):
        if kw_names:
            self.append(Instr("KW_NAMES", tuple(kw_names)))
        self.append(Instr("PRECALL", n), Instr("CALL", n))

    def binary_subscr(self):
        self.append(Instr("BINARY_SUBSCR"))

    def build_tuple(self, n):
        self.append(Instr("BUILD_TUPLE", n))

    def build_list(self, n):
        self.append(Instr("BUILD_LIST", n))

    def build_set(self, n):
        self.append(Instr("BUILD_SET", n))

    def build_sequence(self, items, kind: type):
        """Push a list or tuple of trackers. A run of plain constants goes in as one constant tuple,
        as CPython compiles `[0, 1, 2]`, so a long list costs a few instructions, not one per item."""
        if len(items) > 8 and all(type(i) is ConstantVariable and type(i.value) in _PLAIN_CONSTANTS for i in items):
            values = tuple(i.value for i in items)
            if kind is tuple:
                self.load_const(values)
                return
            self.build_list(0)
            self.load_const(values)
            self.append(Instr("LIST_EXTEND", 1))
            return
        for item in items:
            self.reconstruct(item)
        self.build_tuple(len(items)) if kind is tuple else self.build_list(len(items))

    def build_map(self, n):
        self.append(Instr("BUILD_MAP", n))

    def build_slice(self, n):
        self.append(Instr("BUILD_SLICE", n))

    def pop_top(self):
        self.append(Instr("POP_TOP"))


    # -- values ---------------------------------------------------------------
    def reconstruct(self, var):
        """Push the run-time value of a tracker."""
        if var in self.temps:
            self.append(Instr("LOAD_FAST", self.temps[var]))
            return
        if isinstance(var, (TensorVariable, SymNodeVariable)):
            self._graph_value(var)
            return
        if isinstance(var, WithExitVariable):
            self.with_exit(var)
            return
        if isinstance(var, NamedTupleVariable) and var.source is not None:
            # the object read from the frame, not a new one: calling the class could run (and
            # compile) a user-level __new__, which at a graph break can recurse through resume code
            var.source.reconstruct(self)
            return
        if isinstance(var, BoundMethodVariable) and var.source is None and isinstance(var.fn, BuiltinVariable):
            self._builtin_method(var)
            return
        building = self.building
        if id(var) in building:    # a container that holds itself: not rebuilt item by item
            raise Unsupported("unrebuildable", what=f"rebuilding {var.describe()} that contains itself")
        building.add(id(var))
        try:
            var.reconstruct(self)
        finally:
            building.discard(id(var))
        if var.source is None and _has_identity(var):
            # an object made while tracing, reachable twice (`d` and `(d, ...)`): built once
            name = self.new_temp_name()
            self.append(Instr("COPY", 1), Instr("STORE_FAST", name))
            self.temps[var] = name

    def _graph_value(self, var):
        """A tensor or symbolic number: fetched from the frame again if it is a graph input (the
        same object), else taken from the graph's outputs with the attributes set while tracing."""
        node = var.proxy.node
        source = var.source or node.meta.get("source")
        # a graph input is fetched again (the same object), unless it is a size the graph also
        # returns: the tensor it was read from may have changed shape since (`x.t_()`)
        if node.op == "placeholder" and source is not None and not (
                isinstance(var, SymNodeVariable) and node in self.output_index):
            source.reconstruct(self)
            return
        if node not in self.output_index:
            raise Unsupported("internal_error", what="a tensor that is not a graph output")
        index = Instr("LOAD_CONST", self.output_index[node])
        self.output_loads.append((index, node))
        self.append(Instr("LOAD_FAST", self.graph_outputs_local), index)
        self.binary_subscr()
        attrs = dict(tensor_attrs(self.tx, var))     # `y.note = v` while tracing
        example = node.meta.get("example_value")
        if isinstance(example, torch.Tensor) and not self.tx.output.eager_autograd and \
                self.tx.output.is_data_alias(example):
            # `t.data` (or a view of it): AOTAutograd returns a view of t, sharing t's version counter
            # (a write through it would bump t's); `.data` of that view is eager's own counter
            self.load_attr("data")
        if isinstance(example, torch.Tensor) and example.requires_grad and example.is_leaf and \
                not self.tx.output.eager_autograd:
            # a leaf made in the graph under no_grad (`zeros_like(q).requires_grad_()`): AOTAutograd
            # returns it as a plain tensor
            attrs["requires_grad"] = ConstantVariable(True)
        for name, value in attrs.items():
            self.append(Instr("COPY", 1))
            self.reconstruct(value)
            self.append(Instr("SWAP", 2))
            self.store_attr(name)

    def _builtin_method(self, var):
        """`obj.method` where the method is a builtin/method descriptor (re.Match.group, HASH.hexdigest),
        or a builtin function bound by `types.MethodType`."""
        name = getattr(var.fn.fn, "__name__", None)
        if name is None:
            raise Unsupported("unrebuildable", what=f"rebuilding {var.describe()} after the graph")
        if hasattr(var.fn.fn, "__objclass__"):
            # an unbound method of a builtin type bound to an instance (`super().__setitem__` in a dict
            # subclass): `obj.name` would find the subclass's own method, so bind the very descriptor,
            # as eager does (`descriptor.__get__(obj, owner)`: a method-wrapper or builtin method, not a
            # method). The owner is passed: CPython 3.11 crashes calling a method that needs its defining
            # class (`re.Pattern.search`) bound without one
            self.load_callable(var.fn.fn.__get__)
            self.reconstruct(var.self_var)
            self.load_const(var.fn.fn.__objclass__)
            self.call(2)
            return
        # a builtin function binds to nothing as an attribute: this is `types.MethodType(fn, obj)`
        self.load_callable(types.MethodType)
        self.load_const(var.fn.fn)
        self.reconstruct(var.self_var)
        self.call(2)

    def new_temp_name(self) -> str:
        """A local name no other temporary of this code uses."""
        self.temp_count += 1
        return f"__bytegraph_tmp{self.temp_count}"

    def store_temp(self) -> str:
        """Pop the top of the stack into a fresh local; returns its name."""
        name = self.new_temp_name()
        self.append(Instr("STORE_FAST", name))
        return name

    def load_temp(self, name: str):
        self.append(Instr("LOAD_FAST", name))

    def reconstruct_to_temp(self, var):
        """Rebuild once and keep the object in a local, so later uses see the same object."""
        self.reconstruct(var)
        name = self.new_temp_name()
        self.append(Instr("STORE_FAST", name))
        self.temps[var] = name

    def build_new_object(self, var):
        self.build_object(_rebuild_object, var.cls, self.tx.output.side_effects.get(var))

    def build_object(self, rebuild, cls, attrs: dict, extra=()):
        """Push `rebuild(cls, {name: value...}, *extra)`, evaluated at run time."""
        self.load_callable(rebuild)
        self.load_const(cls)
        for name, value in attrs.items():
            self.load_const(name)
            self.reconstruct(value)
        self.build_map(len(attrs))
        for value in extra:
            self.reconstruct(value)
        self.call(2 + len(extra))

    def with_exit(self, var):
        """The `__exit__` an open `with` block keeps on the stack: a grad-mode block's restores the
        mode from before the block; a user context manager's is the bound method of the object."""
        ctx = var.ctx
        if isinstance(ctx, GradModeVariable):
            self.load_const(RESTORE_GRAD[bool(ctx.previous)])
            return
        if isinstance(ctx, UserDefinedObjectVariable):
            if ctx not in self.temps:
                self.reconstruct_to_temp(ctx)    # the same object as other references to it
            self.reconstruct(var.exit_method)    # the function BEFORE_WITH found, bound again
            return
        if isinstance(ctx, CatchWarningsVariable):
            self.reconstruct(var.exit_method)    # a real block entered here (warning.py)
            return
        raise Unsupported("unrebuildable", what=f"rebuilding the exit of a `with` block on {ctx.describe()}")

    def load_cell(self, cell):
        """Push a closure cell object: the frame's own cells and free variables through
        LOAD_CLOSURE, cells of functions outside the frame as they are, cells made while tracing
        (an inlined function's) as new cells holding their current contents."""
        if cell in self.temps:
            self.append(Instr("LOAD_FAST", self.temps[cell]))
            return
        for name, known in self.tx.cells.items():
            if known is cell:
                if name in self.cellvars:
                    self.append(Instr("LOAD_CLOSURE", CellVar(name)))
                    return
                if name in self.freevars:
                    self.append(Instr("LOAD_CLOSURE", FreeVar(name)))
                    return
        if isinstance(cell, RealCellVariable):
            if cell.source is not None:
                cell.source.reconstruct(self)     # this call's cell, not the one seen while tracing
            else:
                self.load_const(cell.cell)
            return
        contents = self.tx.output.side_effects.cells
        self.load_callable(types.CellType)
        if cell in contents:
            self.reconstruct(contents[cell])
            self.call(1)
        else:
            self.call(0)
        name = self.new_temp_name()
        self.append(Instr("STORE_FAST", name))
        self.temps[cell] = name
        self.append(Instr("LOAD_FAST", name))

    def make_function(self, fn_var):
        """types.FunctionType(code, globals, name, defaults, closure), then the keyword defaults
        and qualified name."""
        self.load_callable(_make_function)
        self.load_const(fn_var.code)
        self.load_const(fn_var.f_globals)   # the very dict MAKE_FUNCTION used (exec namespaces included)
        for d in fn_var.defaults:
            self.reconstruct(d)
        self.build_tuple(len(fn_var.defaults))
        for cell in fn_var.closure:
            self.load_cell(cell)
        self.build_tuple(len(fn_var.closure))
        for name, d in fn_var.kwdefaults:
            self.load_const(name)
            self.reconstruct(d)
        self.build_map(len(fn_var.kwdefaults))
        self.load_const(fn_var.qualname)
        if fn_var.annotations is not None:
            self.reconstruct(fn_var.annotations)
        else:
            self.load_const(None)
        attrs = fn_var.attrs(self.tx)
        for name, value in attrs.items():
            self.load_const(name)
            self.reconstruct(value)
        self.build_map(len(attrs))
        if fn_var.wrapped is not None:
            self.reconstruct(fn_var.wrapped)
            self.build_tuple(1)
        else:
            self.load_const(())
        self.call(9)


def _make_function(code, f_globals, defaults, closure, kwdefaults, qualname, annotations, attrs, wrapped):
    fn = types.FunctionType(code, f_globals, code.co_name, defaults or None, closure or None)
    fn.__dict__.update(attrs)       # the attributes the trace set on it (`f.calls = 0`)
    if annotations:
        fn.__annotations__ = dict(zip(annotations[::2], annotations[1::2]))
    if kwdefaults:
        fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    if wrapped:
        # made by functools.wraps(wrapped) while tracing: the names the trace copied are the wrapped
        # function's (guarded), its __annotations__ the very dict, as update_wrapper makes them
        functools.update_wrapper(fn, wrapped[0])
    return fn


def new_code(template: types.CodeType, body: list, prefix: list, nargs: int, name_suffix: str = "",
             copies_template=None):
    """A code object with `template`'s arguments (all positional), cells, free variables, name and
    file, running `prefix` (MAKE_CELL/COPY_FREE_VARS), RESUME, then `body`. `copies_template` (a
    resume.TemplateCopy): the body jumps into that copy of the template's own code (and exception
    table)."""
    bc = function_bytecode(template, template.co_varnames[:nargs], template.co_cellvars, template.co_freevars)
    bc.extend(prefix)
    bc.append(Instr("RESUME", 0, lineno=template.co_firstlineno))
    bc.extend(body)
    if copies_template is not None:
        return assemble(bc, template, copies_template)
    return bc.to_code()


def _has_identity(var) -> bool:
    """Objects whose identity the program can see (`is`, shared mutation, an iterator's position):
    containers, instances, functions, iterators, exceptions. Rebuilt twice, they would be two objects."""
    return isinstance(var, (UserDefinedObjectVariable, BaseSequence, DictVariable, SetVariable, NestedFunctionVariable,
                            PartialVariable, IteratorVariable, ExceptionVariable))
