"""Constants: None, bools, numbers, strings and other immutable values known at trace time."""
from __future__ import annotations

import collections
import dataclasses
import gc
import inspect
import operator
import types
from typing import Any

import torch

from ...guards.shape import scalar_constant_guard
from ...guards.guard import Guard
from ...guards.source import AttrSource
from ...logs import short_repr
from ..graph_break import Unsupported, fold
from .base import NotConstant, VariableTracker, families, python_value

# Types whose values are plain immutable constants (compared by ==, rebuilt with LOAD_CONST).
CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented),
                  torch.dtype, torch.device, torch.layout, torch.memory_format, range, slice)


def is_constant_value(value) -> bool:
    tp = type(value)   # (not isinstance: it reads `__class__`, which a user property may answer)
    if issubclass(tp, (tuple, frozenset)):
        return all(is_constant_value(v) for v in value)
    return tp in CONSTANT_TYPES or (issubclass(tp, (int, float, str)) and not issubclass(tp, bool)
                                    and tp.__module__ == "builtins")


_MAPPING_VIEWS = {types.MappingProxyType, type({}.keys()), type({}.values()), type({}.items())}
_MAPPING_VIEWS |= {type(view) for view in (lambda d: (d.keys(), d.values(), d.items()))(collections.OrderedDict())}


def _holds_copies(result, args) -> bool:
    """Whether a folded call's result reaches one of the mutable objects among (or inside) its real
    arguments, which were built from the program's trackers for the call. Conservative: True when
    the search grows too large."""
    copies, todo = set(), list(args)
    while todo:
        value = todo.pop()
        if not _immutable(value) and id(value) not in copies:
            copies.add(id(value))
        if type(value) in (tuple, list, set, frozenset) and len(copies) + len(todo) < 10_000:
            todo.extend(value)
        elif type(value) is dict:
            todo.extend(value.values())
    if not copies or _immutable(result):
        return False
    seen, todo = set(), [result]
    while todo:
        value = todo.pop()
        if id(value) in copies:
            return True
        if id(value) in seen or _immutable(value) or isinstance(value, type):
            continue
        seen.add(id(value))
        if len(seen) > 10_000:
            return True
        todo.extend(gc.get_referents(value))
    return False


def _immutable(value) -> bool:
    """A constant value, an inspect.Parameter (immutable: `replace` makes a new one), or a tuple of them."""
    if type(value) is tuple:
        return all(_immutable(v) for v in value)
    return is_constant_value(value) or type(value) is inspect.Parameter


# the error handlers CPython implements itself; any other is a function registered with
# codecs.register_error, which may read state the trace has changed but not yet written
_BUILTIN_ERROR_HANDLERS = frozenset({"strict", "ignore", "replace", "backslashreplace", "xmlcharrefreplace",
                                     "namereplace", "surrogateescape", "surrogatepass"})


def check_codec_folds(what, args, kwargs) -> None:
    """`encoding, errors` as `str.encode`, `bytes.decode` and `str(b, ...)` take them after the object:
    folding runs them at compile time, so only the standard library's codecs and CPython's own error
    handlers are folded; a registered handler or codec search function runs as Python (a break)."""
    import encodings
    encoding = args[0] if args else kwargs.get("encoding", "utf-8")
    errors = args[1] if len(args) > 1 else kwargs.get("errors", "strict")
    if errors in _BUILTIN_ERROR_HANDLERS and isinstance(encoding, str) and \
            encodings.search_function(encoding) is not None:
        return
    raise Unsupported("python_protocol", what=f"{what} with the codec {encoding!r} and the error handler {errors!r} "
                                              "(registered ones run Python code)")


@dataclasses.dataclass(frozen=True, eq=False)
class ConstantVariable(VariableTracker):
    value: Any

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def describe(self):
        return f"constant {short_repr(self.value)}"

    def var_getattr(self, tx, name):
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            raise  # same error as eager, surfaced by the translator
        if callable(attr) and not is_constant_value(attr):
            if _bound_receiver(attr) is not None:
                return BoundConstantMethod(self, name)
            # an unbound method or a class reached through the value (an alias forwards its attributes:
            # `list[int].append` is list.append): called as itself, not folded on copies of its
            # arguments (the list it appends to would be a copy)
            source = AttrSource(self.source, name) if self.source is not None else None
            return tx.wrap(attr, source, trusted=source is None)
        return ConstantVariable(attr)

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__" and len(args) == 1 and not kwargs and not args[0].is_python_constant():
            # `(7, 8)[i]`, `"abc"[i:]` with a symbolic i
            args = [ConstantVariable(families.python_index(args[0]))]
        if type(self.value) is tuple and any(a.is_sequence for a in args):
            # `() + t`, `(x,) + l`...: the tuple tracker's own methods (`() + t` is t itself)
            return self._as_tuple_tracker().call_method(tx, name, args, kwargs)
        if name == "join" and type(self.value) in (str, bytes) and len(args) == 1 and not kwargs and \
                not args[0].is_python_constant() and not args[0].is_iterator:
            # `"".join(obj)` of a container or an object with __iter__: CPython makes a list of its
            # items first (running the object's __iter__), then joins them
            items = tx.unpack_iterable(args[0])
            if all(i.is_python_constant() for i in items):
                return tx.wrap(fold(self.value.join, [i.as_python_constant() for i in items]), None, trusted=True)
        try:
            real_args = [python_value(tx, a) for a in args]
            real_kwargs = {k: python_value(tx, v) for k, v in kwargs.items()}
        except NotConstant:
            if type(self.value) is tuple:   # `(1,) * n`...
                return self._as_tuple_tracker().call_method(tx, name, args, kwargs)
            return super().call_method(tx, name, args, kwargs)
        if name in ("encode", "decode"):
            check_codec_folds(f"{type(self.value).__name__}.{name}", real_args, real_kwargs)
        method = getattr(self.value, name)
        result = fold(method, *real_args, **real_kwargs)
        if type(self.value) in _MAPPING_VIEWS and type(result) in _MAPPING_VIEWS:
            return ConstantVariable(result)     # `params.values()`: a view of the same folded mapping
        if _holds_copies(result, [*real_args, *real_kwargs.values()]):
            # the folded call ran on copies of the program's containers (`sig.bind(lst)`): what it
            # keeps of them would not be the program's objects
            raise Unsupported("unsupported_call", fn=f"{type(self.value).__name__}.{name}",
                              detail=" keeping a container it was passed")
        var = tx.wrap(result, None, trusted=True)
        if isinstance(var, families.UserDefinedObjectVariable):
            tx.output.side_effects.track(("folded new object", var), True)     # (see its reconstruct)
        return var

    def _as_tuple_tracker(self):
        return families.TupleVariable(tuple(const(v) for v in self.value))

    def unpack(self, tx):
        if isinstance(self.value, (str, bytes, tuple, range, frozenset)):
            return [ConstantVariable(v) for v in self.value]
        if type(self.value) in _MAPPING_VIEWS:
            # a folded mapping view (`inspect.signature(f).parameters`, its keys/values/items), read as
            # its lookups and len() already are: its items when they are immutable values
            items = list(self.value)
            if all(_immutable(v) for v in items):
                return [ConstantVariable(v) for v in items]
        raise Unsupported("python_protocol", what=f"iterating over {self.describe()}")

    def reconstruct(self, codegen):
        if self.source is not None and type(self.value) not in _SINGLETONS:
            # read again where it came from: the caller's very object (the guard compared it by
            # value; a string, a big int or a float equal to the traced one is another object)
            return self.source.reconstruct(codegen)
        if type(self.value) in (str, bytes) and len(self.value) > 1:
            # the very object: equal constants share one slot of the code's constants, but a string
            # built at run time (`a[:3] + b[3:]`) is a new object, and `is` tells them apart
            codegen.load_exact_object(self.value)
        else:
            codegen.load_const(self.value)


@dataclasses.dataclass(frozen=True, eq=False)
class BoundConstantMethod(VariableTracker):
    """A method of a constant (`"a,b".split`)."""
    obj: ConstantVariable = None
    name: str = ""

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, codegen):
        codegen.reconstruct(self.obj)
        codegen.load_attr(self.name)


def _bound_receiver(attr):
    """What a method is bound to (a str for `"a,b".split`, a class for a classmethod); None for a
    plain function, an unbound method descriptor, a class, or a module's function."""
    receiver = getattr(attr, "__self__", None) if isinstance(attr, _BOUND_METHOD_TYPES) else None
    return None if isinstance(receiver, types.ModuleType) else receiver


_BOUND_METHOD_TYPES = (types.BuiltinMethodType, types.MethodWrapperType, types.MethodType)


_SINGLETONS = (type(None), bool, type(Ellipsis), type(NotImplemented))
# constants no iteration accepts (`iter(3)`, `a, b = None`, `x in 1.0`: the program's TypeError)
NEVER_ITERABLE = (type(None), int, float, bool, complex, type(Ellipsis), type(NotImplemented))


def const(value) -> ConstantVariable:
    return ConstantVariable(value)


NONE = ConstantVariable(None)
TRUE = ConstantVariable(True)
FALSE = ConstantVariable(False)

# operator functions that are safe to fold on constants
FOLDABLE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
            operator.pow, operator.lshift, operator.rshift, operator.and_, operator.or_, operator.xor,
            operator.matmul, operator.neg, operator.pos, operator.invert, operator.not_, operator.lt,
            operator.le, operator.eq, operator.ne, operator.gt, operator.ge, operator.getitem,
            operator.contains, operator.is_, operator.is_not, operator.truth, operator.abs, operator.index}


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class LazyGuardedConstantVariable(ConstantVariable):
    """A Python int/float/str/bytes read from the frame that is a constant for this compile, but
    whose guard (for a number `guards.shape.SCALAR_CONSTANT_MATCH`, which automatic dynamic can act
    on; CONSTANT_MATCH otherwise) is installed only when something reads its value. A value the frame
    merely passes along -- stored in a local, handed to a resume function or a native call, returned
    -- is rebuilt from its source and adds no guard: a value that changes on every call (`start =
    time.perf_counter()` before a break, a message string) does not recompile the frames it only
    passes through, and the cache holds no reference to it (torch.compile's lazy trackers do the same)."""
    output: object = dataclasses.field(default=None, kw_only=True, repr=False)

    def __getattribute__(self, name):
        if name == "value":
            output = object.__getattribute__(self, "output")
            source = object.__getattribute__(self, "source")
            value = object.__getattribute__(self, "value")
            # the guard object is made once (its hash with it) and added at every read: a read after
            # a rollback that dropped it adds it again
            attrs = object.__getattribute__(self, "__dict__")
            guard = attrs.get("_guard")
            if guard is None:
                guard = attrs["_guard"] = scalar_constant_guard(source, value) if type(value) in (int, float) \
                    else Guard.constant(source, value)
            output.guards.add(guard)
            return value
        return object.__getattribute__(self, name)

    def _peek(self):
        """The value without guarding it (for messages)."""
        return object.__getattribute__(self, "value")

    def describe(self):
        return f"constant {short_repr(self._peek())}"

    def __repr__(self):
        return f"LazyGuardedConstantVariable({short_repr(self._peek())}, source={self.source})"

    def reconstruct(self, codegen):
        self.source.reconstruct(codegen)
