"""PyCodegen: emits CPython 3.11 bytecode (as `bytecode.Instr`s) that rebuilds values after a graph
ran: graph outputs, constants, containers, new objects, side-effect replay. Compile time only."""
from __future__ import annotations

import types

from bytecode import Bytecode, Instr
from bytecode.instr import BinaryOp, CellVar, FreeVar

from .graph_break import Unsupported


def _rebuild_object(cls, attrs):
    obj = cls.__new__(cls)
    for name, value in attrs.items():
        object.__setattr__(obj, name, value)
    return obj


class PyCodegen:
    def __init__(self, tx, graph_outputs_local: str = "__bytegraph_out", output_index=None):
        self.tx = tx
        self.instructions: list = []
        self.graph_outputs_local = graph_outputs_local
        self.output_index = output_index or {}   # fx node -> index in the graph's outputs
        self.temps: dict = {}                    # tracker -> local holding its rebuilt value
        self.cellvars = set(tx.code.co_cellvars)
        self.freevars = set(tx.code.co_freevars)

    def append(self, *instrs):
        self.instructions.extend(instrs)

    # -- primitives -------------------------------------------------------------
    def load_const(self, value):
        self.append(Instr("LOAD_CONST", value))

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

    def store_local(self, name):
        if name in self.cellvars:
            self.append(Instr("STORE_DEREF", CellVar(name)))
        else:
            self.append(Instr("STORE_FAST", name))

    def load_deref(self, name):
        self.append(Instr("LOAD_DEREF", FreeVar(name) if name in self.freevars else CellVar(name)))

    def store_deref(self, name):
        self.append(Instr("STORE_DEREF", FreeVar(name) if name in self.freevars else CellVar(name)))

    def load_global(self, name):
        self.append(Instr("LOAD_GLOBAL", (False, name)))

    def load_global_builtin(self, name):
        import builtins
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

    def build_map(self, n):
        self.append(Instr("BUILD_MAP", n))

    def build_slice(self, n):
        self.append(Instr("BUILD_SLICE", n))

    def pop_top(self):
        self.append(Instr("POP_TOP"))

    def rot2(self):
        self.append(Instr("SWAP", 2))

    def dup_top(self):
        self.append(Instr("COPY", 1))

    # -- values ---------------------------------------------------------------
    def reconstruct(self, var):
        """Push the run-time value of a tracker."""
        from .variables.tensor import SymNodeVariable, TensorVariable
        if var in self.temps:
            self.append(Instr("LOAD_FAST", self.temps[var]))
            return
        if isinstance(var, (TensorVariable, SymNodeVariable)):
            node = var.proxy.node
            if node.op == "placeholder" and var.source is not None:
                var.source.reconstruct(self)
                return
            if node not in self.output_index:
                raise Unsupported("unsupported_op", what="a tensor that is not a graph output")
            self.append(Instr("LOAD_FAST", self.graph_outputs_local))
            self.load_const(self.output_index[node])
            self.binary_subscr()
            return
        from .variables.builtins import BuiltinVariable
        from .variables.functions import BoundMethodVariable
        from .variables.lists import NamedTupleVariable
        if isinstance(var, NamedTupleVariable) and var.source is not None:
            # the object read from the frame, not a new one: calling the class could run (and
            # compile) a user-level __new__, which at a graph break can recurse through resume code
            var.source.reconstruct(self)
            return
        if isinstance(var, BoundMethodVariable) and var.source is None and isinstance(var.fn, BuiltinVariable):
            # `obj.method` where the method is a builtin/method descriptor (re.Match.group, HASH.hexdigest)
            name = getattr(var.fn.fn, "__name__", None)
            if name is None:
                raise Unsupported("unsupported_op", what=f"rebuilding {var.describe()} after the graph")
            self.reconstruct(var.self_var)
            self.load_attr(name)
            return
        var.reconstruct(self)

    def reconstruct_to_temp(self, var):
        """Rebuild once and keep the object in a local, so later uses see the same object."""
        self.reconstruct(var)
        name = f"__bytegraph_tmp{len(self.temps)}"
        self.append(Instr("STORE_FAST", name))
        self.temps[var] = name

    def build_new_object(self, var):
        attrs = self.tx.output.side_effects.get(var)
        self.load_callable(_rebuild_object)
        self.load_const(var.cls)
        for name, value in attrs.items():
            self.load_const(name)
            self.reconstruct(value)
        self.build_map(len(attrs))
        self.call(2)

    def make_function(self, fn_var):
        if fn_var.closure:
            raise Unsupported("unsupported_op", what="returning a closure created in compiled code")
        self.load_callable(types.FunctionType)
        self.load_const(fn_var.code)
        self.load_callable(_globals_of)
        self.load_const(fn_var.f_globals.get("__name__"))
        self.call(1)
        self.load_const(fn_var.code.co_name)
        for d in fn_var.defaults:
            self.reconstruct(d)
        self.build_tuple(len(fn_var.defaults))
        self.call(4)


def _globals_of(module_name):
    import sys
    return vars(sys.modules[module_name])


def binary_op_instr(op: int):
    return Instr("BINARY_OP", BinaryOp(op))


def new_code(template: types.CodeType, body: list, prefix: list, nargs: int, name_suffix: str = ""):
    """A code object with `template`'s arguments (all positional), cells, free variables, name and
    file, running `prefix` (MAKE_CELL/COPY_FREE_VARS), RESUME, then `body`."""
    bc = Bytecode()
    bc.name = template.co_name
    bc.qualname = template.co_qualname
    bc.filename = template.co_filename
    bc.first_lineno = template.co_firstlineno
    bc.argcount = nargs
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.argnames = list(template.co_varnames[:nargs])
    bc.cellvars = list(template.co_cellvars)
    bc.freevars = list(template.co_freevars)
    import inspect
    bc.flags = (template.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR |
                                      inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR)) | inspect.CO_NEWLOCALS \
        | inspect.CO_OPTIMIZED
    bc.extend(prefix)
    bc.append(Instr("RESUME", 0, lineno=template.co_firstlineno))
    bc.extend(body)
    return bc.to_code()
