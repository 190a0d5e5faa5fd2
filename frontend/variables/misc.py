"""Small families: the NULL marker, closure cells, Python modules, exceptions, super()."""
from __future__ import annotations

import dataclasses
import types
from typing import Any

from ...guards.guard import Guard
from ...guards.source import AttrSource, ClosureSource, FunctionSource, ItemSource
from ...probe import class_namespace
from .. import exception_state, reads
from ..resume import cell_is_empty
from ..graph_break import Unsupported, user_error
from .base import VariableTracker, families, wrap_class
from .constant import const, is_constant_value
from .lists import TupleVariable
from .warning import is_warnings_state, refuse_in_catch_warnings


@dataclasses.dataclass(frozen=True, eq=False)
class NullVariable(VariableTracker):
    """The NULL that PUSH_NULL / LOAD_GLOBAL / LOAD_METHOD put under a callable."""

    def describe(self):
        return "NULL"

    def reconstruct(self, codegen):
        codegen.push_null()


NULL = NullVariable()


@dataclasses.dataclass(frozen=True, eq=False)
class UnreadArgument(VariableTracker):
    """A frame argument the trace has not read yet: wrapped (and so guarded) only when first read
    (`read`), so an argument the frame never reads adds no guard and no graph input, and changing it
    recompiles nothing. Until then the frame's local still holds the value: rebuilt from its source."""
    value: Any = None

    def read(self, tx) -> VariableTracker:
        return tx.wrap(self.value, self.source)

    def describe(self):
        return f"argument {self.source.name()}"

    def reconstruct(self, codegen):
        self.source.reconstruct(codegen)


@dataclasses.dataclass(frozen=True, eq=False)
class WeakProxyVariable(VariableTracker):
    """A `weakref.proxy`: every use (even `isinstance`, which reads `__class__`) goes to the referent,
    which may be gone (ReferenceError), so none is modelled: each use breaks the graph and runs
    natively. Only its type is guarded; it is passed on through its source."""

    def describe(self):
        return "a weak proxy"


@dataclasses.dataclass(frozen=True, eq=False)
class CellVariable(VariableTracker):
    """A closure cell; its contents live in SideEffects.cells (absent = empty cell)."""
    pre_existing: bool = False

    @staticmethod
    def new(tx, contents=None):
        cell = CellVariable()
        if contents is not None:
            tx.output.side_effects.cells[cell] = contents
        return cell

    @staticmethod
    def existing(tx, cell, source):
        """A real cell from a function's closure; its contents are wrapped lazily."""
        key = ("cell", id(cell))
        known = tx.output.wrapped_objects.get(key)
        if known is not None:
            return known[1]
        var = RealCellVariable(source=source, cell=cell, pre_existing=True)
        tx.output.wrapped_objects[key] = (cell, var)
        return var

    def load(self, tx):
        try:
            return tx.output.side_effects.cells[self]
        except KeyError:
            raise user_error(NameError("free variable referenced before assignment in enclosing scope")) from None

    def is_empty(self, tx) -> bool:
        try:
            self.load(tx)
        except NameError:
            return True
        return False

    def store(self, tx, value):
        tx.output.side_effects.cells[self] = value

    def var_getattr(self, tx, name):
        # `cell.cell_contents` (writing or deleting it breaks the graph: trace.setattr/delattr)
        if name == "cell_contents":
            try:
                return self.load(tx)
            except NameError:
                raise user_error(ValueError("Cell is empty")) from None
        return super().var_getattr(tx, name)


@dataclasses.dataclass(frozen=True, eq=False)
class RealCellVariable(CellVariable):
    cell: Any = None

    def load(self, tx):
        if self in tx.output.side_effects.cells:
            return tx.output.side_effects.cells[self]
        value = reads.cell_contents(tx, self.cell, self.source)
        if value is reads.MISSING:
            raise user_error(NameError("free variable referenced before assignment in enclosing scope"))
        return tx.wrap(value, AttrSource(self.source, "cell_contents") if self.source else None)

    def store(self, tx, value):
        if self.source is None:
            raise Unsupported("untracked_mutation", what="writing a closure cell with no known source")
        tx.output.side_effects.cells[self] = value


@dataclasses.dataclass(frozen=True, eq=False)
class FrameFreeCell(CellVariable):
    """A free variable of the traced frame: read through the closure, written back by STORE_DEREF."""
    name: str = ""
    index: int = 0

    def load(self, tx):
        if self in tx.output.side_effects.cells:
            return tx.output.side_effects.cells[self]
        cell = tx.root().func.__closure__[self.index]
        value = reads.cell_contents(tx, cell, ItemSource(AttrSource(FunctionSource(), "__closure__"), self.index))
        if value is reads.MISSING:
            raise user_error(NameError(f"free variable '{self.name}' referenced before assignment"))
        return tx.wrap(value, ClosureSource(self.name, self.index))


@dataclasses.dataclass(frozen=True, eq=False)
class CellIsEmptyFunction(VariableTracker):
    """`resume.cell_is_empty`, which a resume function calls before it reads one of the original
    frame's own cells: answered from the cell's tracker (emptiness of a real cell is guarded)."""

    def describe(self):
        return "resume cell check"

    def reconstruct(self, codegen):
        codegen.load_const(cell_is_empty)

    def call_function(self, tx, args, kwargs):
        if len(args) != 1 or kwargs or not isinstance(args[0], CellVariable):
            raise Unsupported("internal_error", what="cell_is_empty called on something else than a cell")
        return const(args[0].is_empty(tx))


@dataclasses.dataclass(frozen=True, eq=False)
class PythonModuleVariable(VariableTracker):
    value: types.ModuleType = None

    def python_type(self):
        return type(self.value)     # a subclass too (one without attribute hooks)

    def describe(self):
        return f"module {self.value.__name__}"

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        if is_warnings_state(self.value):
            refuse_in_catch_warnings(tx, f"warnings.{name}")
        if name in ("__name__", "__file__", "__package__"):
            return const(getattr(self.value, name))
        if self.is_trusted():
            return tx.wrap(getattr(self.value, name), AttrSource(self.source, name) if self.source else None,
                        trusted=True)
        namespace = tx.output.wrapped_objects.get(id(self.value.__dict__))
        if namespace is not None and namespace[1] in tx.output.side_effects.mutated:
            # the trace changed the module's namespace as a dict (`del mod.__dict__[k]`): those changes
            # are written back after the graph, and the real namespace read here does not have them
            raise Unsupported("python_protocol", what=f"reading {name!r} of {self.describe()} after its __dict__ "
                                                    "changed in the trace")
        value = reads.instance_attr(tx, self.value, self.source, name)   # absence guarded
        if value is reads.MISSING:
            if "__getattr__" in self.value.__dict__:
                raise Unsupported("unsupported_attr", name=name, obj=f"{self.describe()} (module __getattr__)")
            if name == "__annotations__":
                # the read makes an empty dict and stores it in the module's namespace: done at
                # compile time, the namespace changed before the program read it
                raise Unsupported("python_protocol", what=f"reading a missing __annotations__ of {self.describe()}")
            value = getattr(self.value, name)   # ModuleType's own attributes, or AttributeError as eager
        return tx.wrap(value, AttrSource(self.source, name) if self.source else None)

    def call_function(self, tx, args, kwargs):
        if type(self.value) is types.ModuleType and self.source is not None:
            # a plain module is not callable (its class, which a program may reassign, is guarded)
            reads.record(tx, Guard.type_match(self.source, types.ModuleType))
            raise user_error(TypeError("'module' object is not callable"))
        return super().call_function(tx, args, kwargs)

    def is_trusted(self) -> bool:
        """Attributes of torch and the standard library are taken as constants (not guarded)."""
        name = self.value.__name__
        return name == "torch" or name.startswith("torch.") or name in ("math", "operator", "functools",
                                                                         "itertools", "collections", "builtins")

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_const(self.value)


@dataclasses.dataclass(frozen=True, eq=False)
class ExceptionVariable(VariableTracker):
    """An exception instance created while tracing, by a constructor that runs no Python code (see
    `new_exception`): rebuilt by calling the class again with the same arguments, keywords too.
    `user_init`: made by a class of the program's with a Python `__init__` (traced): BaseException's
    `__new__` stored the positional arguments as `args`; `args` and the attributes written since live
    in SideEffects (`fields`), and it is rebuilt without running `__init__` again."""
    cls: type = Exception
    args: tuple = ()
    kwargs: tuple = ()      # (name, tracker) pairs: `ImportError(msg, name=..., path=...)`
    user_init: bool = False

    def fields(self, tx) -> dict:
        """A user_init exception's state: None -> its args (a tuple of trackers), name -> tracker."""
        return tx.output.side_effects.contents[_fields_key(self)]

    def set_field(self, tx, name, value) -> None:
        fields = dict(self.fields(tx))      # a new dict: a checkpoint keeps the old one
        fields[name] = value
        tx.output.side_effects.track(_fields_key(self), fields)

    def current_args(self, tx) -> tuple:
        return self.fields(tx)[None] if self.user_init else self.args

    def parts(self, tx):
        # what rebuilding it reads (see reconstruct)
        if self.user_init:
            fields = self.fields(tx)
            return (*fields[None], *(v for k, v in fields.items() if k is not None))
        return (*self.args, *(v for _, v in self.kwargs))

    def python_type(self):
        return self.cls

    def describe(self):
        return f"{self.cls.__name__} instance"

    def _constant(self) -> bool:
        if self.user_init:      # calling the class again would run its __init__
            return False
        return all(a.is_python_constant() for a in self.args) and all(v.is_python_constant() for _, v in self.kwargs)

    def as_real(self):
        return self.cls(*[a.as_python_constant() for a in self.args],
                        **{k: v.as_python_constant() for k, v in self.kwargs})

    def var_getattr(self, tx, name):
        if name == "args":
            return TupleVariable(self.current_args(tx))
        if name == "__class__":
            return wrap_class(tx, self.cls)
        if name in ("__cause__", "__context__", "__suppress_context__"):
            return self._chaining_attribute(tx, name)
        if name == "__traceback__" and id(self) not in tx.output.raised_exceptions and \
                not exception_state.traceback_written(tx, self):
            return const(None)      # never raised nor written: no traceback yet
        if self.user_init:
            return self._user_attribute(tx, name)
        if not name.startswith("__") and self._constant():
            # what the constructor derived from its arguments (ImportError.name, OSError.errno,
            # StopIteration.value): read from an equal object; traceback and context are run-time state
            value = getattr(self.as_real(), name, _NO_ATTR)
            if value is not _NO_ATTR and is_constant_value(value):
                return const(value)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def _user_attribute(self, tx, name):
        """The instance's attributes (no data descriptor has their names, see setattr), then the class's
        Python functions (bound) and constants; anything else is not modelled."""
        fields = self.fields(tx)
        if name in fields and name is not None:
            return fields[name]
        attr, src = reads.class_lookup(tx, self.cls, name)
        if isinstance(attr, types.FunctionType):
            return families.BoundMethodVariable(fn=families.UserFunctionVariable(fn=attr, source=src), self_var=self)
        if attr is not reads.MISSING and is_constant_value(attr) and not hasattr(type(attr), "__get__"):
            return const(attr)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def _chaining_attribute(self, tx, name):
        cause, context, suppress = exception_state.state(tx, self)
        if name == "__suppress_context__":
            return const(suppress)
        value = cause if name == "__cause__" else exception_state.resolve(tx, context)
        if value is exception_state.UNKNOWN:
            raise Unsupported("unsupported_attr", name=name,
                              obj=f"{self.describe()} raised while the compiled frame's caller may be "
                                  "handling an exception")
        return const(None) if value is None else value

    def setattr(self, tx, name, value):
        if name == "__traceback__" and (isinstance(value, TracebackVariable) or
                                        (value.is_python_constant() and value.as_python_constant() is None)):
            # never read back (frames are not modelled); it only keeps the exception in the graph
            exception_state.mark_changed(tx, self)
            return None
        if self.user_init and not name.startswith("__"):
            if name == "args":      # BaseException's setter makes a tuple of the sequence
                if not isinstance(value, (TupleVariable, families.ListVariable)):
                    raise Unsupported("attribute_write",
                                      what=f"setting args of {self.describe()} to {value.describe()}")
                self.set_field(tx, None, tuple(value.get_items(tx)))
                return None
            attr, _ = reads.class_lookup(tx, self.cls, name)
            if attr is not reads.MISSING and (hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")):
                raise Unsupported("attribute_write", what=f"setting {name!r} of {self.describe()} (a descriptor "
                                                          "of its class)")
            self.set_field(tx, name, value)
            return None
        if not exception_state.write(tx, self, name, value, isinstance(value, ExceptionVariable)):
            raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {self.describe()}")
        return None

    def call_method(self, tx, name, args, kwargs):
        if self.user_init:
            return self._user_method(tx, name, args, kwargs)
        if name == "__str__" and self._constant():
            return const(str(self.as_real()))
        if name == "__repr__" and self._constant() and \
                reads.class_lookup(tx, self.cls, "__repr__")[0] is BaseException.__dict__["__repr__"]:
            return const(repr(self.as_real()))      # `KeyError('a')`: the class's name and its arguments
        return super().call_method(tx, name, args, kwargs)

    def _user_method(self, tx, name, args, kwargs):
        """A method of a user_init exception: the class's Python function inlined; BaseException's
        `__str__`/`__repr__` computed from constant args as CPython writes them."""
        method, src = reads.class_lookup(tx, self.cls, name)
        if isinstance(method, types.FunctionType):
            result = families.UserFunctionVariable(fn=method, source=src).call_function(tx, [self, *args], kwargs)
            if name in ("__str__", "__repr__") and not (result.is_python_constant() and
                                                        type(result.as_python_constant()) is str):
                raise Unsupported("python_protocol", what=f"{name} of {self.describe()} returning {result.describe()}")
            return result
        items = self.current_args(tx)
        if not args and not kwargs and name in ("__str__", "__repr__") and \
                method is BaseException.__dict__[name] and all(a.is_python_constant() for a in items):
            values = tuple(a.as_python_constant() for a in items)
            if name == "__str__":       # ("" for no args, str of the one arg, else of the tuple)
                return const(str(BaseException(*values)))
            kind = self.cls.__name__
            return const(f"{kind}({values[0]!r})" if len(values) == 1 else f"{kind}{values!r}")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if id(self) in codegen.tx.output.raised_exceptions or exception_state.changed(codegen.tx, self):
            raise Unsupported("unrebuildable", what=f"rebuilding a raised or changed {self.cls.__name__} (its "
                                                     "traceback, __cause__ and __context__ are run-time state)")
        if self.user_init:
            fields = self.fields(codegen.tx)
            codegen.build_object(_rebuild_user_exception, self.cls, {k: v for k, v in fields.items() if k is not None},
                                 (TupleVariable(fields[None]),))
            return
        codegen.push_null()
        codegen.load_const(self.cls)
        for a in self.args:
            codegen.reconstruct(a)
        for _, v in self.kwargs:
            codegen.reconstruct(v)
        codegen.call(len(self.args) + len(self.kwargs), tuple(k for k, _ in self.kwargs))


_NO_ATTR = object()


def _fields_key(exc):
    return ("exception fields", exc)


def _rebuild_user_exception(cls, attrs, args):
    """A user_init exception at run time: made as BaseException's __new__ makes it (its __init__ ran
    in the trace, not again), then its attributes."""
    exc = BaseException.__new__(cls, *args)
    exc.__dict__.update(attrs)
    return exc


@dataclasses.dataclass(frozen=True, eq=False)
class TracebackVariable(VariableTracker):
    """The traceback of an exception raised while tracing (what a `with` block's `__exit__`
    receives): it is not None and is true, but its frames are not modelled, so any other use is
    not traced."""

    def python_type(self):
        return types.TracebackType

    def truth(self, tx):
        return True


def new_exception(tx, cls, args, kwargs):
    """`cls(*args, **kwargs)` for an exception class. A Python `__new__`/`__init__` in the class runs
    user code at construction (effects, attributes): that call is not traced (Unsupported) and runs
    natively. Builtin constructors are checked on equal constant arguments, so a bad keyword
    raises the TypeError eager raises."""
    if _user_init_class(tx, cls):
        return _new_user_init_exception(tx, cls, args, kwargs)
    for klass in cls.__mro__:
        if klass.__module__ == "builtins":
            break
        if any(isinstance(class_namespace(klass).get(n), (types.FunctionType, staticmethod, classmethod))
               for n in ("__new__", "__init__")):
            raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}",
                              detail=" (an exception class with a Python constructor)")
    exc = ExceptionVariable(cls=cls, args=tuple(args), kwargs=tuple(kwargs.items()))
    if exc._constant():
        try:
            real = exc.as_real()
        except Exception as e:  # noqa: BLE001 - the constructor's own error is the program's
            raise user_error(type(e)(*e.args)) from None
        # the constructor may answer a subclass: OSError(errno.ENOENT, ...) is a FileNotFoundError
        return dataclasses.replace(exc, cls=type(real)) if type(real) is not cls else exc
    if kwargs:
        raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}",
                          detail=" (keywords that are not constants)")
    if issubclass(cls, _CONSTRUCTOR_READS_ARGUMENTS):
        raise Unsupported("unsupported_call", fn=f"class {cls.__qualname__}",
                          detail=" (a constructor that checks its arguments or picks the class by them)")
    return exc


def _user_init_class(tx, cls) -> bool:
    """Whether `cls(...)` is BaseException's `__new__` (storing the positional arguments as args) then a
    Python `__init__` of the program's, on an object whose attributes are plain instance-dict entries:
    builtin bases with no fields or constructors of their own, no metaclass, no Python `__new__`,
    attribute hooks or finalizer."""
    if type(cls) is not type or cls.__module__ == "builtins":
        return False        # (a builtin class: its constructor is modelled as such, no lookups guarded)
    for klass in cls.__mro__:
        if klass.__module__ == "builtins" and klass not in (BaseException, object) and \
                not set(class_namespace(klass)) <= {"__doc__", "__init__", "__new__"}:
            return False
    init, _ = reads.class_lookup(tx, cls, "__init__")
    if not isinstance(init, types.FunctionType):
        return False
    if not isinstance(reads.class_lookup(tx, cls, "__new__")[0], types.BuiltinFunctionType):
        return False        # a Python __new__ (a staticmethod in the class dict)
    if reads.class_lookup(tx, cls, "__del__")[0] is not reads.MISSING or \
            reads.class_lookup(tx, cls, "__getattr__")[0] is not reads.MISSING:
        return False
    return all(reads.class_lookup(tx, cls, n)[0] is BaseException.__dict__[n]
               for n in ("__setattr__", "__getattribute__", "__delattr__"))


def _new_user_init_exception(tx, cls, args, kwargs):
    """`cls(*args, **kwargs)`: BaseException.__new__ keeps the positional arguments (keywords are
    left to __init__), then the class's `__init__` is traced on the new object."""
    exc = ExceptionVariable(cls=cls, args=tuple(args), user_init=True)
    tx.output.side_effects.track(_fields_key(exc), {None: tuple(args)})
    init, src = reads.class_lookup(tx, cls, "__init__")
    result = families.UserFunctionVariable(fn=init, source=src).call_function(tx, [exc, *args], kwargs)
    if not result.is_python_constant():
        raise Unsupported("python_protocol", what=f"{exc.describe()}'s __init__ returning {result.describe()}")
    value = result.as_python_constant()
    if value is not None:
        raise user_error(TypeError(f"__init__() should return None, not '{type(value).__name__}'"))
    return exc


def _base_exception_init(klass):
    def init(tx, obj, *args, **kwargs):
        """BaseException's `__init__` (also as Exception.__init__, ValueError.__init__...: the same C
        function) on a user_init exception, as `super().__init__(...)` calls it: it sets args."""
        if not isinstance(obj, ExceptionVariable) or not obj.user_init or kwargs or not issubclass(obj.cls, klass):
            return None     # (its TypeErrors, other objects: not modelled)
        obj.set_field(tx, None, tuple(args))
        return const(None)
    return init


# the `__init__` of BaseException and of each builtin exception class that only extends it (builtin
# classes: their dicts cannot change)
BASE_EXCEPTION_INITS = {
    vars(kind)["__init__"]: _base_exception_init(kind)
    for kind in vars(__import__("builtins")).values()
    if isinstance(kind, type) and issubclass(kind, BaseException) and
    (kind is BaseException or set(vars(kind)) <= {"__doc__", "__init__", "__new__"})}


# builtin exception constructors that do more than store their arguments: type checks, the class
# chosen by the arguments (BaseExceptionGroup of Exceptions is an ExceptionGroup, OSError by errno)
_CONSTRUCTOR_READS_ARGUMENTS = (BaseExceptionGroup, OSError, UnicodeDecodeError, UnicodeEncodeError,
                                UnicodeTranslateError, SyntaxError)


@dataclasses.dataclass(frozen=True, eq=False)
class SuperVariable(VariableTracker):
    """super(cls, obj): attribute lookups start after `cls` in `owner.__mro__` (obj itself when it
    is a subclass of cls, else its type)."""
    cls: type = None
    obj: VariableTracker = None
    owner: type = None

    @staticmethod
    def create(tx, cls_var, obj):
        """With CPython's checks (super_init, supercheck)."""
        cls = cls_var.as_python_constant_or_none()
        if not isinstance(cls, type):
            raise user_error(TypeError(f"super() argument 1 must be a type, not {cls_var.python_type().__name__}"))
        value = obj.as_python_constant_or_none()
        if isinstance(value, type) and issubclass(value, cls):
            return SuperVariable(cls=cls, obj=obj, owner=value)
        if issubclass(obj.python_type(), cls):
            if isinstance(value, type):    # a class as the instance (super() in a metaclass's method)
                raise Unsupported("python_protocol", what=f"super() in a method of the metaclass of {value.__name__}")
            return SuperVariable(cls=cls, obj=obj, owner=obj.python_type())
        if reads.class_lookup(tx, obj.python_type(), "__class__")[0] is not object.__dict__["__class__"]:
            # CPython then tries obj.__class__, which this class overrides
            raise Unsupported("python_protocol",
                              what=f"super() of a {obj.python_type().__name__} with its own __class__")
        raise user_error(TypeError("super(type, obj): obj must be an instance or subtype of type"))

    def var_getattr(self, tx, name):
        mro = self.owner.__mro__
        start = mro.index(self.cls) + 1
        return families.lookup_in_mro(tx, self.obj, mro[start:], name)

    def call_method(self, tx, name, args, kwargs):
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

