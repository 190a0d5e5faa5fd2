"""Builtin functions (len, isinstance, min, sorted, ...), `operator`, `math`, and the binary and
comparison operators on any pair of trackers."""
from __future__ import annotations

import abc
import builtins
import collections
import dataclasses
import dis
import functools
import inspect
import itertools
import math
import operator
import os
import sys
import types
from typing import Any, Callable

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ...guards.guard import Guard, comparison_truth
from ...guards.source import AttrSource, ConstSource, ItemSource, ReaderSource
from ...probe import class_dict_lookup, class_mro, class_namespace, is_c_level, safe_in, static_getattr
from .. import exception_state, reads
from ..graph_break import Unsupported, fold, user_error
from ..reads import MISSING, class_lookup
from ..signals import UserException, raised_by_user
from .base import NOT_IMPLEMENTED, NotConstant, VariableTracker, families, python_value, wrap_class
from .constant import ConstantVariable, check_codec_folds, const, is_constant_value
from .dicts import DictVariable, DictViewVariable, SetVariable, copied_set, hashable_key, make_mapping_proxy
from .functions import BaseUserFunction, BoundMethodVariable, PartialVariable, UserFunctionVariable, WrapsDecorator
from .iterators import (
    AccumulateVariable,
    ChainVariable,
    ZipLongestVariable,
    ContainerIteratorVariable,
    CountIteratorVariable,
    FilterVariable,
    IsliceVariable,
    ListIteratorVariable,
    StopIterationSignal,
    ZipVariable,
    exact_iterator_type,
    next_of,
)
from .lists import (
    BaseSequence,
    DequeVariable,
    ListVariable,
    NamedTupleVariable,
    RangeVariable,
    SliceVariable,
    TupleVariable,
    is_named_tuple_class,
    is_structseq,
    python_index,
    sorted_items,
)
from . import itertools_lazy
from .misc import BASE_EXCEPTION_INITS, TracebackVariable
from .tensor import SymNodeVariable, TensorVariable, ambiguous_truth, concrete, known_value
from .user_defined import (
    _READ_ONLY_DICT_METHODS,
    _READ_ONLY_SET_METHODS,
    UserDefinedClassVariable,
    UserDefinedObjectVariable,
    class_attribute,
    class_method,
    dict_store,
    list_store,
    plain_class,
    set_store,
)

# Pure functions folded when every argument is a constant.
_PURE_MODULES = (math, operator)
_PURE_BUILTINS = {abs, bool, chr, complex, divmod, float, format, hash, int, len, max, min, ord, pow, repr,
                  round, str, sum, isinstance, issubclass, callable, hex, oct, bin, ascii, any, all, sorted,
                  tuple, frozenset, slice, range, type, os.fspath}


# alternate constructors of immutable builtin values (bound to the exact class: a subclass's runs its
# own constructor)
_PURE_CLASS_METHODS = {(float, "fromhex"), (int, "from_bytes"), (bytes, "fromhex")}


# methods of immutable builtin values, called unbound (`tuple.__add__((), t)`, `str.join(",", names)`)
_IMMUTABLE_TYPES = (tuple, str, bytes, int, float, complex, bool, frozenset, range)


def is_pure(fn) -> bool:
    owner = static_getattr(fn, "__self__")
    return safe_in(fn, _PURE_BUILTINS) or static_getattr(fn, "__module__") in ("math", "_operator", "operator") or \
        any(owner is m for m in _PURE_MODULES) or \
        (type(owner) is type and (owner, static_getattr(fn, "__name__")) in _PURE_CLASS_METHODS) or \
        (isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)) and
         any(fn.__objclass__ is t for t in _IMMUTABLE_TYPES))


def is_tensorish(var) -> bool:
    return isinstance(var, (TensorVariable, SymNodeVariable))


@dataclasses.dataclass(frozen=True, eq=False)
class BuiltinVariable(VariableTracker):
    fn: Callable = None

    def python_type(self):
        return type(self.fn)

    def describe(self):
        return f"builtin {getattr(self.fn, '__qualname__', self.fn)}"

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_const(self.fn)

    def var_getattr(self, tx, name):
        if isinstance(self.fn, type):
            if hasattr(type(class_dict_lookup(type(self.fn), name)), "__set__"):
                # a data descriptor of the metatype comes first: `type.__name__` is "type", not the
                # descriptor in type's own dict that answers `__name__` for its instances
                return tx.wrap(getattr(self.fn, name), None, trusted=True)
            for klass in class_mro(self.fn):
                if name in class_namespace(klass):
                    return class_attribute(tx, self, self.fn, name)
            # attributes of the class object itself (__name__, __qualname__, __mro__...), from its metaclass
            return tx.wrap(getattr(self.fn, name), None, trusted=True)
        return tx.wrap(getattr(self.fn, name), None, trusted=True)

    def call_function(self, tx, args, kwargs):
        if self.fn is torch.Tensor._make_subclass:
            return families.make_subclass(tx, args, kwargs)
        if type(self.fn) is functools._lru_cache_wrapper and not args and not kwargs and _cached_none(tx, self):
            return const(None)
        unbound = _unbound_builtin_method(tx, self.fn, args, kwargs)
        if unbound is not None:
            return unbound
        handler = _HANDLERS[self.fn] if safe_in(self.fn, _HANDLERS) else None   # (fn may be unhashable)
        if handler is not None and _accepts(handler, args, kwargs):
            result = handler(tx, *args, **kwargs)
            if result is not None:
                return result
        # (by identity and safe lookups: fn may be any callable object, with an `__eq__` that raises)
        if self.fn is print or static_getattr(self.fn, "__module__", "") in ("logging",):
            raise Unsupported("io", fn=self.describe())
        if any(is_tensorish(a) for a in args) and safe_in(self.fn, _TENSOR_OPERATORS):
            return tx.output.call_function(self.fn, list(args), kwargs)
        if is_pure(self.fn) and all(a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()):
            if self.fn is str or static_getattr(self.fn, "__name__") in ("encode", "decode"):
                check_codec_folds(self.describe(), [a.as_python_constant() for a in args[1:]],
                                  {k: v.as_python_constant() for k, v in kwargs.items()})
            value = fold(self.fn, *[a.as_python_constant() for a in args],
                            **{k: v.as_python_constant() for k, v in kwargs.items()})
            return tx.wrap(value, None, trusted=True)
        if static_getattr(self.fn, "__module__") == "math" and any(isinstance(a, SymNodeVariable) for a in args) and \
                all(isinstance(a, SymNodeVariable) or a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()):
            # `math.sin(f)` of a symbolic number: traced or computed on its (guarded) value, as operators are
            return tx.output.call_function(self.fn, list(args), kwargs)
        if safe_in(self.fn, _OPERATOR_METHODS) and args and not kwargs:
            method = _OPERATOR_METHODS[self.fn]
            if callable(method):
                return method(tx, *args)
            return tx.call_method_on(args[0], method, list(args[1:]), kwargs)
        if kwargs and safe_in(self.fn, _NO_KEYWORDS):
            # CPython refuses the keywords before it looks at the arguments
            raise user_error(TypeError(f"{self.fn.__name__}() takes no keyword arguments"))
        raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these arguments")


def _returns_only_none(fn) -> bool:
    """A plain function each of whose `return`s gives the constant None (a warn-once helper)."""
    if type(fn) is not types.FunctionType or fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                                                                     inspect.CO_ASYNC_GENERATOR):
        return False
    instructions = list(dis.get_instructions(fn.__code__))
    return all(i > 0 and instructions[i - 1].opname == "LOAD_CONST" and instructions[i - 1].argval is None
               for i, ins in enumerate(instructions) if ins.opname == "RETURN_VALUE")


def _cached_none(tx, var) -> bool:
    """`f()` of a `functools.lru_cache` wrapper `f` whose call is a cache hit answering None: no arguments
    (one key), a function returning only None, its entry cached (`currsize` 1) and no call missed
    since (`misses` guarded: the entry is the one seen now). The hit runs no code of the program;
    the count eager's hit adds (`cache_info().hits`) is added by calling `f()` again after the graph."""
    info = var.fn.cache_info()
    if var.source is None or info.currsize != 1 or not _returns_only_none(getattr(var.fn, "__wrapped__", None)):
        return False
    cache_info = ReaderSource(AttrSource(var.source, "cache_info"))
    tx.output.guards.add(Guard.constant(ItemSource(cache_info, 1), info.misses))
    tx.output.guards.add(Guard.constant(ItemSource(cache_info, 3), 1))
    tx.output.side_effects.call_after(var.fn)
    return True


# builtins whose C call refuses any keyword argument, first thing
_NO_KEYWORDS = {getattr(builtins, name) for name in (
    "isinstance", "issubclass", "len", "abs", "hash", "id", "callable", "getattr", "hasattr", "setattr",
    "delattr", "repr", "ord", "chr", "iter", "next", "divmod", "ascii", "bin", "hex", "oct", "vars", "dir")}


@functools.lru_cache(maxsize=None)
def _handler_signature(handler):
    return inspect.signature(handler)


def _accepts(handler, args, kwargs) -> bool:
    """Whether a handler models this call: it takes every argument given (a handler names each
    keyword it models; one it does not name is never dropped). Otherwise the call is folded with the
    real builtin when all arguments are constants, or breaks the graph."""
    try:
        _handler_signature(handler).bind(None, *args, **kwargs)
        return True
    except TypeError:
        return False


def is_tensor_getter(fn) -> bool:
    """`fn` is the `__get__` of a C attribute of torch.Tensor (`torch.Tensor.shape.__get__`)."""
    owner = static_getattr(fn, "__self__")
    return static_getattr(fn, "__name__") == "__get__" and isinstance(owner, types.GetSetDescriptorType) and \
        owner.__objclass__ is torch._C.TensorBase and \
        class_dict_lookup(torch.Tensor, owner.__name__) is owner


def _unbound_builtin_method(tx, fn, args, kwargs):
    """`object.__setattr__(obj, ...)`, `dict.__setitem__(obj, ...)`, `super().keys()`...: a method of a
    builtin type called on an instance of a user subclass. Object methods use the generic attribute
    protocol (no user `__setattr__`); dict methods act on the items of a dict-subclass object."""
    if isinstance(fn, types.MethodWrapperType) and len(args) == 1 and not kwargs and \
            isinstance(args[0], TensorVariable) and is_tensor_getter(fn):
        # `torch.Tensor.ndim.__get__(x)` (what a `__torch_function__` gets as `func` for `x.ndim`)
        return args[0].tensor_attr(tx, fn.__self__.__name__)
    if not args or not isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return None
    obj = args[0]
    owner, name = fn.__objclass__, fn.__name__
    if owner is torch._C.TensorBase and isinstance(obj, TensorVariable):
        # `torch.Tensor.t(x)`: the method on the tensor (a tensor in the graph never has a subclass
        # that replaces a torch.Tensor method: builder._subclass_refusal)
        return obj.call_tensor_method(tx, name, list(args[1:]), kwargs)
    if isinstance(obj, SetVariable) and owner in (set, frozenset) and issubclass(obj.cls, owner):
        # `set.__sub__(s, t)`: the set's own method (a wrong receiver type raises: not here)
        result = obj.call_method(tx, name, list(args[1:]), kwargs)
        return const(NotImplemented) if result is NOT_IMPLEMENTED else result
    if isinstance(obj, _BUILTIN_VALUE_TRACKERS) and obj.python_type() is owner:
        # `list.append(lst, x)`, `str.join(",", parts)`: the receiver is exactly the method's type, so
        # the call is the receiver's own method
        result = obj.call_method(tx, name, list(args[1:]), kwargs)
        return const(NotImplemented) if result is NOT_IMPLEMENTED else result
    if isinstance(obj, DictVariable) and owner is dict and obj.cls is collections.OrderedDict:
        return _dict_method_on_ordered_dict(tx, obj, name, args[1:], kwargs)
    if not isinstance(obj, UserDefinedObjectVariable):
        return None
    if owner is object:
        if name == "__setattr__" and len(args) == 3 and args[1].is_python_constant():
            obj.generic_setattr(tx, args[1].as_python_constant(), args[2])
            return const(None)
        if name == "__getattribute__" and len(args) == 2 and args[1].is_python_constant():
            return obj.generic_getattr(tx, args[1].as_python_constant())
        if name == "__delattr__" and len(args) == 2 and args[1].is_python_constant():
            obj.generic_delattr(tx, args[1].as_python_constant())
            return const(None)
        if name == "__init__" and len(args) == 1 and not kwargs:
            return const(None)
        if name == "__reduce_ex__" and len(args) == 2 and not kwargs:
            return obj.reduce_ex(tx, args[1])
        return None
    if issubclass(owner, (set, frozenset)):
        return _set_subclass_method(tx, obj, owner, name, args[1:], kwargs)
    if owner is list:
        return _list_subclass_method(tx, obj, name, args[1:], kwargs)
    if not issubclass(owner, dict):
        return None
    store = dict_store(tx, obj)
    if store is None:
        return None
    if not obj.is_new() and name not in _READ_ONLY_DICT_METHODS and (
            obj.source is None or store.cls is not dict and not _plain_item_hooks(tx, obj.cls)):
        # (a dict-based one's items are written back with dict's own methods: side_effects.py; an
        # OrderedDict-based one's with OrderedDict's, which call the subclass's item hooks)
        raise Unsupported("untracked_mutation", what=f"{owner.__name__}.{name} on {obj.describe()} that existed "
                                                 "before the compiled frame")
    if owner is not store.cls and name not in _READ_ONLY_DICT_METHODS:
        # dict's own method on an OrderedDict object leaves the key order behind (CPython's later
        # reads then raise KeyError): not modelled
        raise Unsupported("python_protocol", what=f"dict.{name} on {obj.describe()}, an OrderedDict")
    if name == "__init__":
        if args[1:] or kwargs:
            store.call_method(tx, "update", list(args[1:]), kwargs)
        return const(None)
    if name in ("copy", "__or__", "__ror__"):
        result = store.call_method(tx, name, list(args[1:]), kwargs)
        if isinstance(result, DictVariable) and owner is dict:   # a plain dict, from an OrderedDict too
            return DictVariable.create(tx, result.pairs(tx))
        return _ordered_dict_subclass_result(tx, obj, result)
    if name == "__getitem__" and len(args) == 2 and store.lookup(tx, args[1]) is None:
        missing, missing_src = class_method(tx, obj, "__missing__")
        if isinstance(missing, types.FunctionType):
            return UserFunctionVariable(fn=missing, source=missing_src).call_function(
                tx, [obj, args[1]], {})   # dict calls __missing__
    result = store.call_method(tx, name, list(args[1:]), kwargs)
    return obj if result is store else result    # `d |= x` is d itself, not the items it holds


def _dict_method_on_ordered_dict(tx, od, name, args, kwargs):
    """`dict.__ior__(od, other)`, `dict.get(od, k)`...: dict's own C method on an OrderedDict. A read
    that does not depend on order answers as the OrderedDict's own. A write goes to the dict table
    under the OrderedDict's order list: exact only when every key it writes is already there (a value
    replaced in place); a new key leaves the order list behind (CPython's later reads then fail), and
    other methods follow the table's order, not the OrderedDict's: not modelled (None: the call breaks)."""
    if name in ("get", "__getitem__", "__contains__", "__len__"):
        return od.call_method(tx, name, list(args), kwargs)
    if name == "__setitem__" and len(args) == 2 and not kwargs and od.lookup(tx, args[0]) is not None:
        return od.call_method(tx, name, list(args), kwargs)
    if name in ("update", "__ior__") and len(args) == 1 and not kwargs and isinstance(args[0], DictVariable) \
            and all(od.lookup(tx, k) is not None for k, _ in args[0].pairs(tx)):
        od.call_method(tx, "update", list(args), {})
        return od if name == "__ior__" else const(None)
    return None


def _list_subclass_method(tx, obj, name, args, kwargs):
    """list's own method on a list-subclass object made while tracing: applied to the items it holds
    (user_defined.list_store). A list that slicing, `+`, `*` or `copy` makes is a plain list, as in
    CPython. An object that existed before the frame is not modelled (None: the call breaks)."""
    store = list_store(tx, obj)
    if store is None:
        return None
    if name == "__init__":
        if kwargs or len(args) > 1:
            return None
        store.call_method(tx, "clear", [], {})     # (list.__init__ empties the list, then extends it)
        if args:
            store.call_method(tx, "extend", list(args), {})
        return const(None)
    result = store.call_method(tx, name, list(args), kwargs)
    if result is NOT_IMPLEMENTED:
        return const(NotImplemented)
    return obj if result is store else result    # `l += x` is l itself, not the items it holds


def _set_subclass_method(tx, obj, owner, name, args, kwargs):
    """set's (frozenset's) own method on a set-subclass object: applied to the items it holds
    (user_defined.set_store). A new set an operator or `copy` makes is of the builtin type, as in CPython;
    an object that existed before the frame is only read (a change would need writing back)."""
    store = set_store(tx, obj)
    if store is None or not issubclass(store.cls, owner):
        return None
    if not obj.is_new() and name not in _READ_ONLY_SET_METHODS:
        raise Unsupported("untracked_mutation", what=f"{owner.__name__}.{name} on {obj.describe()} that existed "
                                                 "before the compiled frame")
    if name == "__init__":
        if kwargs or len(args) > 1:
            return None
        if args and owner is set:
            store.call_method(tx, "clear", [], {})
            store.call_method(tx, "update", list(args), {})
        return const(None)
    result = store.call_method(tx, name, list(args), kwargs)
    if result is NOT_IMPLEMENTED:
        return const(NotImplemented)
    if name == "copy" and result is store:
        # frozenset's copy is the object itself only for an exact frozenset: a subclass's is a new one
        return copied_set(tx, store, store.cls)
    return obj if result is store else result    # `s |= x` is s itself, not the items it holds


# trackers whose call_method answers every method of their exact builtin type (or breaks the graph)
_BUILTIN_VALUE_TRACKERS = (ListVariable, TupleVariable, DictVariable, DequeVariable, ConstantVariable)


def _plain_item_hooks(tx, cls) -> bool:
    """Whether a subclass of OrderedDict keeps OrderedDict's item hooks (guarded): the C methods of
    OrderedDict call them on a subclass's object (pop, popitem, setdefault), the trace and the
    write-back (write_back.py) then run what eager runs."""
    return issubclass(cls, collections.OrderedDict) and all(
        class_lookup(tx, cls, hook)[0] is class_lookup(tx, collections.OrderedDict, hook)[0]
        for hook in ("__getitem__", "__setitem__", "__delitem__", "__contains__"))


def _ordered_dict_subclass_result(tx, obj, result):
    """OrderedDict.copy and `|` (either side) make an object of the subclass (`type(od)()`, then its items set), a
    plain dict result of the base's method turned into one; a subclass with its own construction
    or __setitem__ would run it: not modelled."""
    if not isinstance(result, DictVariable):
        return result
    for hook in ("__new__", "__init__", "__setitem__"):
        if class_lookup(tx, obj.cls, hook)[0] is not class_lookup(tx, collections.OrderedDict, hook)[0]:
            raise Unsupported("python_protocol", what=f"copying {obj.describe()}, whose class has its own {hook}")
    new = UserDefinedObjectVariable.create_new(tx, obj.cls)
    dict_store(tx, new).call_method(tx, "update", [result], {})
    return new


# -- handlers ----------------------------------------------------------------
# Each takes (tx, *arg_trackers, **kwarg_trackers) and returns a tracker, or None to fall through.

def _object_new(tx, cls, /):
    """`object.__new__(cls)` (copyreg.__newobj__ for `copy.copy`, a user `__new__`): a new, not
    initialized instance of a plain class (one that cannot have abstract methods)."""
    klass = cls.as_python_constant_or_none()
    if not isinstance(cls, UserDefinedClassVariable) or not plain_class(klass) or \
            reads.class_dict_entry(tx, klass, "__abstractmethods__")[0] is not MISSING:
        return None
    return UserDefinedObjectVariable.create_new(tx, klass)


def _len(tx, obj, /):
    """`len(obj)`: `obj.__len__()` made an index-sized int >= 0, as CPython's `len` checks it."""
    if isinstance(obj, ConstantVariable):
        return const(fold(len, obj.as_python_constant()))   # `len(5)`: the program's TypeError
    cls = exact_iterator_type(obj)
    if cls is not None and class_dict_lookup(cls, "__len__") is None:   # (no builtin iterator has one)
        raise user_error(TypeError(f"object of type '{cls.__name__}' has no len()"))
    result = tx.call_method_on(obj, "__len__", [], {})
    if isinstance(result, SymNodeVariable) and result.python_type() is int:
        return result
    if not isinstance(result, ConstantVariable):
        raise Unsupported("python_protocol", what=f"len() of a __len__ returning {result.describe()}")
    value = result.as_python_constant()
    if isinstance(value, int) or type(value).__module__ == "numpy" and hasattr(type(value), "__index__"):
        value = operator.index(value)       # (C code: an int's own value, a numpy integer's)
    elif type(value).__module__ == "builtins":
        raise user_error(TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer"))
    else:
        raise Unsupported("python_protocol", what=f"len() of a __len__ returning {type(value).__name__}")
    if value < 0:
        raise user_error(ValueError("__len__() should return >= 0"))
    if value > sys.maxsize:
        raise user_error(OverflowError("cannot fit 'int' into an index-sized integer"))
    return const(value)


def _getrecursionlimit(tx, /):
    """sys.getrecursionlimit(): process state the traced code cannot change (setrecursionlimit is
    not traced), guarded."""
    value = sys.getrecursionlimit()
    tx.output.guards.add(Guard.constant(ReaderSource(ConstSource(sys.getrecursionlimit)), value))
    return const(value)


class _HashedAs:
    """A stand-in whose hash is a given number."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return self.value


def _hash(tx, obj, /):
    """`hash(obj)` of a non-constant: `obj.__hash__()` made a hash as CPython's slot makes it (an int, not
    any other value; one past the machine range rehashed; -1, which signals an error in C, becomes -2)."""
    if obj.is_python_constant():
        return None     # folded
    try:
        cls = obj.python_type()
    except Unsupported:
        cls = None
    if cls is not None and class_lookup(tx, cls, "__hash__")[0] is None:   # `__hash__ = None`: list, dict...
        raise user_error(TypeError(f"unhashable type: '{cls.__name__}'"))
    if type(obj) is TupleVariable:
        # tuple's hash combines its items' hashes in order (the first unhashable one raises): computed
        # by CPython's own tuple hash over stand-ins that hash to the items' hashes
        hashes = [fold(hash, item.as_python_constant()) if item.is_python_constant() else _hash(tx, item).value
                  for item in obj.items]
        return const(hash(tuple(_HashedAs(h) for h in hashes)))
    result = tx.call_method_on(obj, "__hash__", [], {})
    if not isinstance(result, ConstantVariable):
        raise Unsupported("python_protocol", what=f"hash() of a __hash__ returning {result.describe()}")
    value = result.as_python_constant()
    if not isinstance(value, int):
        raise user_error(TypeError("__hash__ method should return an integer"))
    value = int(value)
    if not -sys.maxsize - 1 <= value <= sys.maxsize:
        return const(hash(value))
    return const(-2 if value == -1 else value)


def _isinstance(tx, obj, classes, /):
    cls = obj.python_type()
    spec = classes.as_python_constant() if classes.is_python_constant() else None
    if spec is None:
        if isinstance(classes, TupleVariable):
            spec = tuple(c.as_python_constant() for c in classes.items)
        else:
            raise Unsupported("non_constant_value", what="isinstance with a non-constant class")
    return const(any(isinstance_of(tx, cls, klass) for klass in _flat_classes(spec)))


def _flat_classes(spec):
    """The classes of isinstance's second argument: a class, or a tuple or union (`int | None`) of them."""
    if type(spec) is types.UnionType:
        spec = spec.__args__
    if not isinstance(spec, tuple):
        return (spec,)
    return tuple(k for s in spec for k in _flat_classes(s))


# the metaclasses of Parameter and Buffer: a tensor carrying torch's flag counts as one, others as type decides
_TENSOR_FLAG_CHECKS = (torch.nn.parameter._ParameterMeta.__dict__["__instancecheck__"],
                       torch.nn.parameter._BufferMeta.__dict__["__instancecheck__"])


def isinstance_of(tx, cls, klass) -> bool:
    """`isinstance(obj, klass)` for an object of exact type `cls`, as CPython decides it: the exact
    type, else the metaclass's `__instancecheck__` (ABCMeta's answer depends on the registry:
    `_abc_answer_guard`) or the MRO, else `obj.__class__`, which a user class may define (ABCMeta
    reads it before answering anything)."""
    if not isinstance(klass, type):
        raise Unsupported("python_protocol", what=f"isinstance with {type(klass).__name__} as the class")
    if cls is klass:
        return True
    meta = type(klass)
    check = reads.class_lookup(tx, meta, "__instancecheck__")[0]
    reads.class_mro(tx, cls)     # the answers below come from it
    if meta.__module__.startswith("torch.") and issubclass(cls, torch.Tensor):
        # Parameter/Buffer: torch's metaclass checks a flag that only torch's own tensors carry
        return issubclass(cls, klass)
    if check in _TENSOR_FLAG_CHECKS:
        # not a tensor: the flag check's `isinstance(obj, torch.Tensor)` is no, and the check falls
        # back to type's (the MRO, then `obj.__class__`)
        _plain_class_attribute(tx, cls)
        return issubclass(cls, klass)
    if check is not type.__dict__["__instancecheck__"] and meta is not abc.ABCMeta:
        raise Unsupported("python_protocol", what=f"isinstance through {meta.__qualname__}.__instancecheck__")
    if meta is abc.ABCMeta:
        _plain_class_attribute(tx, cls)    # ABCMeta's check reads `obj.__class__` first, whatever the answer
        _abc_check_runs_no_user_hook(cls, klass)
    if issubclass(cls, klass):
        return True
    if meta is abc.ABCMeta:
        _abc_answer_guard(tx, False)
    _plain_class_attribute(tx, cls)     # type's check reads `obj.__class__` after a no
    return False


def _plain_class_attribute(tx, cls) -> None:
    """`obj.__class__` is its type, read by no code of the user's: a property or a `__getattribute__`
    of the user's may answer otherwise, or do something else (not modelled)."""
    found, _ = reads.class_lookup(tx, cls, "__class__")
    getattribute, _ = reads.class_lookup(tx, cls, "__getattribute__")
    if found is not reads.type_lookup(object, "__class__") or not is_c_level(getattribute):
        raise Unsupported("python_protocol", what="isinstance on an object whose class defines __class__ "
                                                 "or __getattribute__")


def _locals(tx):
    """`locals()` of a traced frame without cells: CPython 3.11 returns the frame's one `f_locals`
    dict, refreshed from the bound fast locals (in their order) at every call. Only a frame that
    never breaks gets here (see `frame_translator.reads_own_frame`); one with cells is not traced."""
    code = tx.code
    if code.co_cellvars or code.co_freevars or not code.co_flags & 0x1:   # CO_OPTIMIZED: a function
        raise Unsupported("unsupported_call", fn="locals", detail=" in a frame with closure cells")
    frame_dict = getattr(tx, "frame_locals_dict", None)
    if frame_dict is None:
        frame_dict = tx.frame_locals_dict = DictVariable.create(tx, ())
    for name in code.co_varnames:
        key = const(name)
        if name in tx.symbolic_locals:
            frame_dict.setitem(tx, key, tx.read_local(name))
        elif frame_dict.lookup(tx, key) is not None:
            frame_dict.call_method(tx, "__delitem__", [key], {})
    return frame_dict


def _issubclass(tx, cls, spec, /):
    """Classes whose metaclass checks subclasses as type or ABCMeta does (its registry guarded) decide
    by their MRO (and ABCMeta's hooks, as isinstance_of); another __subclasscheck__, a union, or an object
    standing for a class through its `__bases__` would run code of the user's: not modelled."""
    parts = spec.items if isinstance(spec, TupleVariable) else (spec,)
    try:    # (a builtin class's tracker answers as_python_constant without being a constant)
        value = cls.as_python_constant()
        spec_value = tuple(p.as_python_constant() for p in parts) if isinstance(spec, TupleVariable) \
            else spec.as_python_constant()
    except NotConstant:
        raise Unsupported("python_protocol", what=f"issubclass of {cls.describe()} with {spec.describe()}") from None
    classes = _flat_classes(spec_value)
    offenders = [v for v in (value, *classes) if not isinstance(v, type) or
                 (v is not value and _subclass_check(tx, v) not in _MODELLED_SUBCLASS_CHECKS)]
    if offenders:
        if all(not isinstance(v, type) and type(v).__module__ == "builtins" for v in offenders):
            fold(issubclass, value, spec_value)     # a number, a string...: "arg 1 must be a class"
        raise Unsupported("python_protocol", what=f"issubclass of {cls.describe()} with {spec.describe()}")
    abcs = [k for k in classes if _subclass_check(tx, k) is abc.ABCMeta.__dict__["__subclasscheck__"]]
    for k in abcs:
        _abc_check_runs_no_user_hook(value, k)
    answer = issubclass(value, spec_value)
    if abcs:
        _abc_answer_guard(tx, answer)
    reads.class_mro(tx, value)     # the answer comes from it
    return const(answer)


def _abc_check_runs_no_user_hook(cls, klass) -> None:
    """ABCMeta's `issubclass(cls, klass)` runs here, at compile time: unless its caches answer, it
    calls the `__subclasshook__` of klass, of the classes registered with it and of its subclasses,
    at any depth. One of the user's would run at the wrong time (before the trace's writes are made,
    and not again when the compiled code runs): not modelled."""
    _, cache, negative, version = abc._get_dump(klass)
    if any(ref() is cls for ref in cache) or \
            version == abc.get_cache_token() and any(ref() is cls for ref in negative):
        return
    todo, seen = [klass], set()
    while todo:
        k = todo.pop()
        if k in seen or not isinstance(k, abc.ABCMeta):
            continue
        seen.add(k)
        hook = class_namespace(k).get("__subclasshook__")
        module = getattr(getattr(hook, "__func__", hook), "__module__", None) or ""
        if hook is not None and module.partition(".")[0] not in sys.stdlib_module_names:
            raise Unsupported("python_protocol", what=f"the subclass check of {klass.__qualname__} (it may "
                                                      f"call {k.__qualname__}.__subclasshook__)")
        registry = abc._get_dump(k)[0]
        todo.extend(ref() for ref in registry)
        todo.extend(type.__subclasses__(k))


def _abc_answer_guard(tx, answer: bool) -> None:
    """Guard what an ABC answered to issubclass/isinstance. ABCMeta keeps every yes in the class's
    positive cache for good (only the testing helpers `_abc_caches_clear`/`_abc_registry_clear`
    forget it), so later calls answer yes again whatever is registered; a no lives in its negative
    cache only until a `register` anywhere moves `abc.get_cache_token()`, so a no is guarded by the
    token (an unrelated import registering a class then recompiles; a yes does not)."""
    if not answer:
        reads.abc_registry(tx)


_MODELLED_SUBCLASS_CHECKS = (type.__dict__["__subclasscheck__"], abc.ABCMeta.__dict__["__subclasscheck__"])


def _subclass_check(tx, klass):
    """The `__subclasscheck__` of a class's metaclass, which issubclass calls (guarded)."""
    return reads.class_lookup(tx, type(klass), "__subclasscheck__")[0]


def _attribute_name(name) -> str:
    """The name `getattr`/`hasattr`/`setattr`/`delattr` look up: a string (or str subclass), as CPython requires."""
    value = name.as_python_constant()
    if not isinstance(value, str):
        raise user_error(TypeError(f"attribute name must be string, not '{type(value).__name__}'"))
    return value


def _getattr(tx, obj, name, /, *default):
    if len(default) > 1:
        return None
    try:
        return tx.getattr(obj, _attribute_name(name))
    except (AttributeError, UserException) as e:
        if default and raised_by_user(e, AttributeError):
            return default[0]
        raise


def _vars(tx, obj, /):
    """`vars(obj)` of an object of a Python class: its `__dict__` attribute, looked up as getattr does
    (TypeError when it has none). Anything else (a module, a class) runs as Python."""
    if not isinstance(obj, UserDefinedObjectVariable):
        return None
    try:
        return tx.getattr(obj, "__dict__")
    except (AttributeError, UserException) as e:
        if raised_by_user(e, AttributeError):
            raise user_error(TypeError("vars() argument must have __dict__ attribute")) from None
        raise


# Builtin types whose instances hold no attributes of their own (no `__dict__`) and which cannot be
# changed: whether one of their instances has an attribute is whether the type's MRO defines it.
_ATTRIBUTES_OF_TYPE_ONLY = frozenset({dict, list, tuple, set, frozenset, str, bytes, int, float, bool, complex,
                                      type(None), range, slice, torch.Size})


def _hasattr(tx, obj, name, /):
    try:
        tx.getattr(obj, _attribute_name(name))
        return const(True)
    except (AttributeError, UserException) as e:
        if raised_by_user(e, AttributeError):
            return const(False)
        raise
    except Unsupported:
        # an attribute the trace does not model (`hasattr(d, "to")` asking whether d is a tensor)
        try:
            cls = obj.python_type()
        except Unsupported:
            cls = None
        made_here = isinstance(obj, PartialVariable) and obj.source is None   # its __dict__ is empty
        if safe_in(cls, _ATTRIBUTES_OF_TYPE_ONLY) or made_here:
            # found on the type's MRO, as an instance lookup finds it (not `hasattr(cls, ...)`: the
            # type's own attributes, `dict.__name__`, are not the instance's)
            attr = name.as_python_constant()
            return const(any(attr in vars(k) for k in cls.__mro__))
        raise


def _setattr(tx, obj, name, value, /):
    tx.setattr(obj, _attribute_name(name), value)
    return const(None)


def _delattr(tx, obj, name, /):
    tx.delattr(obj, _attribute_name(name))
    return const(None)


def _input_comparison_truth(tx, op, a, b):
    """`bool(op(a, b))` where one operand is a one-element tensor the frame was given, unchanged so far
    in the graph, and the other a Python number: read from its value now and guarded on it for later
    calls (COMPARISON_TRUTH), so that `max(x, 0)` answers eager's very operand, `0` (an int) or `x`
    itself. None when not so (a tensor the graph computed: its value is known only when the graph runs)."""
    tensor_first = isinstance(a, TensorVariable)
    tensor, number = (a, b) if tensor_first else (b, a)
    if not isinstance(tensor, TensorVariable) or tensor.cls is not torch.Tensor or tensor.source is None or \
            not isinstance(number, ConstantVariable) or type(number.value) not in (int, float, bool):
        return None
    out = tx.output
    node = tensor.proxy.node
    real = next((value for _, proxy, value in out.graph_inputs if proxy.node is node), None)
    if node.op != "placeholder" or not isinstance(real, torch.Tensor) or type(real) is not torch.Tensor or \
            real.numel() != 1 or out.written_inputs() or out.reshaped_inputs():
        return None     # (an input written into, or resized, in the graph before: not its entry value)
    try:
        with unset_fake_temporarily():
            wins = comparison_truth(real, op, number.value, tensor_first)
    except Exception:  # noqa: BLE001 - eager's comparison or bool() raises (a meta tensor): it decides
        return None
    out.guards.add(Guard.comparison_truth(tensor.source, op, number.value, tensor_first, wins))
    return wins


def _minmax(fn):
    def handler(tx, *args, key=None, default=None):
        if not args or (len(args) > 1 and default is not None):
            return None     # a TypeError: the real builtin raises it (or the graph breaks)
        kwargs = {}
        if key is not None and not (key.is_python_constant() and key.as_python_constant() is None):
            kwargs["key"] = key
        if default is not None:
            kwargs["default"] = default
        items = list(args) if len(args) > 1 else tx.iterate_all(args[0])
        if not items:
            if "default" in kwargs:
                return kwargs["default"]
            raise user_error(ValueError(f"{fn.__name__}() arg is an empty sequence"))
        if all(i.is_python_constant() for i in items) and "key" not in kwargs:
            return const(fold(fn, [i.as_python_constant() for i in items]))
        if "key" in kwargs:
            keyed = [(kwargs["key"].call_function(tx, [i], {}), i) for i in items]
            best = keyed[0]
            for cand in keyed[1:]:
                better = tx.compare(operator.gt if fn is max else operator.lt, cand[0], best[0])
                if better.truth(tx):
                    best = cand
            return best[1]
        result = items[0]
        for item in items[1:]:
            if isinstance(result, TensorVariable) or isinstance(item, TensorVariable):
                # eager answers one of the operands itself, chosen by the truth of `item > result`: known
                # only for tensors of known value (a graph op such as torch.maximum would give a new
                # tensor, of another type than a number operand, splitting the gradient on ties)
                op = operator.gt if fn is max else operator.lt
                wins = _input_comparison_truth(tx, op, item, result)    # (no graph op: read and guarded)
                if wins is not None:
                    result = item if wins else result
                    continue
                better = tx.compare(op, item, result)
                if isinstance(better, TensorVariable) and known_value(better) is None:
                    ambiguous = ambiguous_truth(better)
                    if ambiguous is not None:    # (a size eager's bool() refuses: none or several elements)
                        raise user_error(ambiguous)
                    raise Unsupported("tensor_branch", what=f"{fn.__name__}() over tensors")
                if better.truth(tx):
                    result = item
                continue
            if (is_tensorish(result) or is_tensorish(item)) and result.python_type() is item.python_type():
                # a symbolic answer only between numbers of one type: eager's answer is one of the
                # operands as it is (`max(n, 2.5)` is n, an int, when n wins)
                result = tx.output.call_function(torch.sym_max if fn is max else torch.sym_min, [result, item], {})
                continue
            better = tx.compare(operator.gt if fn is max else operator.lt, item, result)
            if better.truth(tx):
                result = item
        return result
    return handler


def _sum(tx, iterable, /, start=None):
    kind = start.python_type() if start is not None else None
    if kind is not None and issubclass(kind, (str, bytes, bytearray)):    # subclasses too, as CPython checks
        base = next(k for k in (str, bytes, bytearray) if issubclass(kind, k))
        what, join = ("strings", "''") if base is str else (base.__name__, "b''")
        raise user_error(TypeError(f"sum() can't sum {what} [use {join}.join(seq) instead]"))
    result = start if start is not None else const(0)
    for item in tx.iterate_all(iterable):
        result = tx.binary_op(operator.add, result, item)
    return result


def _prod(tx, iterable, /, *, start=None):
    """math.prod: `start * item0 * item1 ...` in order (symbolic sizes and tensors included)."""
    result = start if start is not None else const(1)
    for item in tx.iterate_all(iterable):
        result = tx.binary_op(operator.mul, result, item)
    return result


def _any_all(fn):
    def handler(tx, iterable, /):
        it = tx.get_iter(iterable)
        while True:  # item by item: a generator stops being advanced at the deciding item
            try:
                item = next_of(tx, it)
            except StopIterationSignal:
                break
            value = item.truth(tx)
            if fn is any and value:
                return const(True)
            if fn is all and not value:
                return const(False)
        return const(fn is all)
    return handler


def _sorted(tx, iterable, /, *, key=None, reverse=None):
    kwargs = {k: v for k, v in (("key", key), ("reverse", reverse)) if v is not None}
    items = None
    if isinstance(iterable, SetVariable) and key is None:
        # distinct ints or strings sort to one order whichever order the set gives them in (not floats: NaN)
        members = iterable.items(tx)
        types_ = {type(i.as_python_constant()) if i.is_python_constant() else None for i in members}
        if len(types_) == 1 and types_ <= {int, str}:
            items = list(members)
    if items is None:
        items = tx.iterate_all(iterable)
    return ListVariable.create(tx, sorted_items(tx, items, kwargs))


def _reversed(tx, seq, /):
    if isinstance(seq, (ListVariable, DequeVariable)):
        return seq.call_method(tx, "__reversed__", [], {})     # live over the list, as CPython's
    cls = seq.python_type()
    if cls is range:     # (a range_iterator, as `iter(range)` is, or a longrange_iterator)
        numbers = seq.value[::-1] if type(seq.value) is range else tx.unpack_iterable(seq)[::-1]
        return ListIteratorVariable.create(tx, numbers, type(reversed(seq.value)).__name__)
    if cls in (tuple, str, bytes) or (isinstance(seq, BaseSequence) and cls is not collections.deque):
        return ListIteratorVariable.create(tx, tx.unpack_iterable(seq)[::-1], "reversed")
    # a dict (or a view of one) of a class whose __reversed__ is the builtin's: live from the end
    if isinstance(seq, DictVariable) and seq.owner is None and seq.cls in _REVERSIBLE_DICTS:
        return ContainerIteratorVariable.create(tx, seq, "keys", reverse=True)
    if isinstance(seq, DictViewVariable) and seq.dict_var.owner is None and seq.dict_var.cls in _REVERSIBLE_DICTS:
        return ContainerIteratorVariable.create(tx, seq.dict_var, seq.kind, reverse=True)
    if isinstance(seq, UserDefinedClassVariable) and seq.metaclass_method(tx, "__reversed__") is not None:
        return seq.call_method(tx, "__reversed__", [], {})     # an Enum class's members, last first
    if isinstance(seq, SetVariable) and seq.cls in (set, frozenset):
        raise user_error(TypeError(f"'{seq.cls.__name__}' object is not reversible"))
    if isinstance(seq, families.NNModuleVariable):
        it = seq.reversed_iterator(tx)
        if it is not None:
            return it
    raise Unsupported("unsupported_call", fn="reversed", detail=f" on {seq.describe()}")


_REVERSIBLE_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def _enumerate(tx, iterable, start=None):
    counter = CountIteratorVariable.create(tx, start if start is not None else const(0), const(1))
    return _lockstep(tx, (counter, tx.get_iter(iterable)), "enumerate", (iterable,))


def _zip(tx, *iterables, strict=None):
    if strict is not None and strict.truth(tx):
        # the length check happens when the iteration reaches the shortest end, lazily as eager's
        return ZipVariable(iterators=tuple(tx.get_iter(i) for i in iterables),
                           fn=lambda tx, items: TupleVariable(tuple(items)), kind="zip", strict=True)
    return _lockstep(tx, tuple(tx.get_iter(i) for i in iterables), "zip", iterables)


def _lockstep(tx, iterators, kind, iterables):
    """Tuples of one item from each iterator. Over known finite items (list iterators, a count)
    made for this call the result is computed now, as a plain list iterator (building tuples has
    no effects); over generators, user iterators or an iterator the program holds (it must be
    left just past the items taken) it stays lazy, so effects and positions keep eager order."""
    if all(isinstance(it, (ListIteratorVariable, CountIteratorVariable)) and it.walks_known_items
           for it in iterators) and any(isinstance(it, ListIteratorVariable) for it in iterators) and \
            not any(it is given for it in iterators for given in iterables):
        n = min(len(it.remaining_items(tx)) for it in iterators if isinstance(it, ListIteratorVariable))
        rows = [TupleVariable(tuple(it.next_item(tx) for it in iterators)) for _ in range(n)]
        return ListIteratorVariable.create(tx, rows, kind)
    return ZipVariable(iterators=iterators, fn=lambda tx, items: TupleVariable(tuple(items)), kind=kind)


def _map(tx, fn, iterable, /, *iterables):
    iterables = (iterable, *iterables)
    return ZipVariable(iterators=tuple(tx.get_iter(i) for i in iterables),
                       fn=lambda tx, items: fn.call_function(tx, items, {}), kind="map", mapped=fn)


def _filter(tx, fn, iterable, /):
    return FilterVariable(iterator=tx.get_iter(iterable), predicate=fn)


def _iter(tx, obj, /, *sentinel):
    if sentinel:
        if len(sentinel) == 1 and _callable(tx, obj).as_python_constant():
            return itertools_lazy.callable_iterator(tx, obj, sentinel[0])
        raise Unsupported("unsupported_builtin", what="iter(callable, sentinel)")
    return tx.get_iter(obj)


def _next(tx, it, /, *default):
    if len(default) > 1:
        return None
    if isinstance(it, ListIteratorVariable):
        try:
            return it.next_item(tx)
        except StopIterationSignal:
            if default:
                return default[0]
            raise user_error(StopIteration()) from None
    if default:
        # any iterator: its StopIteration (a generator's return, a user __next__ raising it) gives the default
        try:
            return next_of(tx, it)
        except StopIterationSignal:
            return default[0]
    return tx.call_method_on(it, "__next__", [], {})


def _range(tx, *args):
    if not 1 <= len(args) <= 3:
        return None
    values = []
    for a in args:
        if isinstance(a, SymNodeVariable) or a.is_python_constant():
            values.append(concrete(a))
        elif class_lookup(tx, a.python_type(), "__index__")[0] is MISSING:
            raise user_error(TypeError(f"'{a.python_type().__name__}' object cannot be interpreted as an integer"))
        else:
            return None     # its own __index__: not modelled
    return RangeVariable(fold(range, *values))


def _container(kind):
    def handler(tx, *args, **kwargs):
        if len(args) > 1 or (kwargs and kind is not dict):
            return None     # a TypeError: the real builtin raises it (or the graph breaks)
        if kind is dict:
            result = DictVariable.create(tx, [])
            if args:
                result.call_method(tx, "update", [args[0]], {})
            if kwargs:
                result.call_method(tx, "update", [], kwargs)
            return result
        if kind in (tuple, frozenset) and args and args[0].python_type() is kind:
            return args[0]      # an immutable builtin of exactly that type is returned as it is
        if kind in (set, frozenset) and args and isinstance(args[0], SetVariable):
            return copied_set(tx, args[0], kind)
        items = tx.iterate_all(args[0]) if args else []  # consumes an iterator argument
        if kind is list:
            return ListVariable.create(tx, items)
        if kind is tuple:
            return TupleVariable(tuple(items))
        if kind in (set, frozenset):
            # from a set or a dict CPython merges tables (presized): the order is not that of additions
            merged = args and (isinstance(args[0], (SetVariable, DictVariable)) or
                               type(args[0]).__name__ == "DictViewVariable")
            return SetVariable.create(tx, items, kind, order="unknown" if merged else None, copies=[])
    return handler


def _mapping(kind):
    """OrderedDict(...) / defaultdict(factory, ...): a dict tracker of that class."""
    def handler(tx, *args, **kwargs):
        factory = None
        if kind is collections.defaultdict:
            factory = args[0] if args else const(None)
            args = args[1:]
        if len(args) > 1:
            return None
        result = DictVariable.create(tx, [], kind, factory)
        if args:
            result.call_method(tx, "update", [args[0]], {})
        if kwargs:
            result.call_method(tx, "update", [], kwargs)
        return result
    return handler


def _namedtuple(tx, *args, **kwargs):
    """`collections.namedtuple("P", ["a", "b"])` from constants: the class is made while tracing
    (by the real function: it runs no user code); the transformed code makes its own with the same
    call (see OutputGraph.trace_local_classes). Only plain immutable arguments: the class keeps its
    defaults, so a list made in the trace would be a copy of the program's."""
    try:
        real_args = tuple(_frozen_argument(python_value(tx, a)) for a in args)
        real_kwargs = {k: _frozen_argument(python_value(tx, v)) for k, v in kwargs.items()}
    except NotConstant:
        raise Unsupported("unsupported_call", fn="collections.namedtuple", detail=" with values that are not "
                                                                                 "plain constants") from None
    cls = fold(make_namedtuple, tx.f_globals, real_args, real_kwargs)
    tx.output.trace_local_classes[cls] = (tx.f_globals, real_args, real_kwargs)
    return UserDefinedClassVariable(value=cls)


_FROZEN_LEAVES = (str, int, float, bool, bytes, complex, type(None))


def _frozen_argument(value, top=True):
    """`value` as a constant the transformed code can hold, or NotConstant when it is, or holds,
    anything but plain immutable values. An argument that is a list becomes a tuple (namedtuple
    only reads it); a list inside one would be kept by the class (a default value)."""
    if type(value) in _FROZEN_LEAVES:
        return value
    if type(value) is tuple or (top and type(value) is list):
        return tuple(_frozen_argument(v, top=False) for v in value)
    raise NotConstant(type(value).__name__)


def make_namedtuple(f_globals, args, kwargs):
    """`collections.namedtuple(*args, **kwargs)` as called by code whose globals are `f_globals`:
    with no module given it takes its caller's `__name__`, here read from that code's globals, as
    eager does at the call (this frame is not the caller). Used while tracing and at run time."""
    if kwargs.get("module") is None:
        kwargs = {**kwargs, "module": f_globals.get("__name__", "__main__")}
    return collections.namedtuple(*args, **kwargs)


def _deque(tx, iterable=None, maxlen=None):
    items = tx.iterate_all(iterable) if iterable is not None else []
    return DequeVariable.create(tx, items, maxlen.as_python_constant() if maxlen is not None else None)


def _fromkeys(kind):
    """`dict.fromkeys(iterable, value, /)`; OrderedDict's takes both by keyword too."""
    def fromkeys(tx, iterable, value):
        value = value if value is not None else const(None)
        pairs: dict = {}
        for k in tx.iterate_all(iterable):
            # item by item `d[k] = value`: an equal key met again keeps the first key object and place
            pairs.setdefault(hashable_key(tx, k), (k, value))
        factory = const(None) if kind is collections.defaultdict else None   # defaultdict.fromkeys: no factory
        return DictVariable.create(tx, list(pairs.values()), kind, factory)

    def handler(tx, *args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            # the builtin checks the arguments' count and names before it reads any: its own error,
            # from a call with as many placeholders
            fold(kind.fromkeys, *[None] * len(args), **dict.fromkeys(kwargs))
            raise Unsupported("unsupported_call", fn=f"{kind.__name__}.fromkeys", detail=" with these arguments")
        return fromkeys(tx, bound.arguments["iterable"], bound.arguments.get("value"))

    def stub(iterable, value=None):
        pass

    def positional_stub(iterable, value=None, /):
        pass
    signature = inspect.signature(stub if kind is collections.OrderedDict else positional_stub)
    return handler


def _scalar(kind):
    def handler(tx, *args):     # keywords (`int(s, base=2)`): folded with the real builtin, or a break
        if args and isinstance(args[0], SymNodeVariable):
            if kind is bool:
                return const(args[0].truth(tx))
            return tx.output.call_function(kind, list(args), {})
        if args and isinstance(args[0], TensorVariable):
            if len(args) == 1 and kind in (int, float, bool) and known_value(args[0]) is not None:
                # a tensor made from constants (its `__int__`/`__float__`/`__bool__` on its known value)
                return args[0].call_method(tx, f"__{kind.__name__}__", [], {})
            if kind is bool and len(args) == 1:
                return const(args[0].truth(tx))     # (a size bool() refuses: eager's RuntimeError)
            raise Unsupported("data_dependent", what=f"{kind.__name__}() of a tensor")
        if all(a.is_python_constant() for a in args):
            return const(fold(kind, *[a.as_python_constant() for a in args]))   # int('ab'): the program's ValueError
        if kind is bool and len(args) == 1:
            return const(args[0].truth(tx))
        if kind is str and len(args) == 1:
            return checked_text(tx, args[0], "__str__")
        return None
    return handler


def _complex(tx, *args, **kwargs):
    """`complex(1, 2)` of constants: folded (a bad argument is the program's TypeError/ValueError);
    a symbolic or tensor part is not modelled (the real call decides)."""
    values = [*args, *kwargs.values()]
    if not all(type(v) is ConstantVariable for v in values):
        return None
    return const(fold(complex, *[a.value for a in args], **{k: v.value for k, v in kwargs.items()}))


def _abs(tx, x, /):
    if is_tensorish(x):
        return tx.output.call_function(abs, [x], {})
    if x.is_python_constant():
        return const(fold(abs, x.as_python_constant()))   # abs('a'): the program's TypeError
    return tx.call_method_on(x, "__abs__", [], {})


def _type(tx, obj, /, *rest):
    if rest:
        raise Unsupported("unsupported_builtin", what="type() with three arguments")
    return wrap_class(tx, obj.python_type())


def _callable(tx, obj, /):
    if isinstance(obj, (BaseUserFunction, BoundMethodVariable, PartialVariable, BuiltinVariable)):
        return const(True)
    if obj.is_python_constant():
        return const(callable(obj.as_python_constant()))
    # an instance is callable when its class (not its metaclass) defines __call__
    if isinstance(obj, UserDefinedObjectVariable):
        return const(class_method(tx, obj, "__call__")[0] is not MISSING)
    return const(class_lookup(tx, obj.python_type(), "__call__")[0] is not MISSING)


def _exc_info(tx):
    """sys.exc_info() where the trace knows the exception being handled (an except block of the
    traced code); the compiled frame's caller's otherwise, which is not traced."""
    exc = tx.handled_exception
    if exc is None:
        if exception_state.caller_handles_nothing(tx):
            return TupleVariable((const(None), const(None), const(None)))
        return None
    return TupleVariable((wrap_class(tx, exc.cls), exc, TracebackVariable()))


def _exception(tx):
    exc = tx.handled_exception
    if exc is None and exception_state.caller_handles_nothing(tx):
        return const(None)
    return exc


def _method_type(tx, func, obj, /):
    """`types.MethodType(f, obj)`: f bound to obj (ExitStack binds a manager's __exit__ so)."""
    if obj.is_python_constant() and obj.as_python_constant() is None:
        raise user_error(TypeError("instance must not be None"))
    if isinstance(func, BaseUserFunction) or (func.is_python_constant() and callable(func.as_python_constant())):
        return BoundMethodVariable(fn=func, self_var=obj)
    return None


def _id(tx, obj, /):
    # the real object (a tuple made while tracing is none yet: `as_python_constant()` would build a new one)
    value = obj.value if isinstance(obj, ConstantVariable) else getattr(obj, "value", None)
    if value is None and not isinstance(obj, ConstantVariable) or getattr(obj, "built", None) is not None:
        # (a module built while tracing stands for the one the transformed code builds: another object)
        raise Unsupported("unsupported_builtin", what="id() of a value made while tracing")
    return const(reads.object_identity(tx, value, obj.source))


_TEXT_CONTAINERS = (list, tuple, dict, set, frozenset, collections.OrderedDict)


def container_text(tx, obj):
    """The repr of a builtin container made of constants (its str too: their __str__ is object's), as
    the real one reprs it, self-references included; None for anything else."""
    try:
        cls = obj.python_type()
    except Unsupported:
        return None
    if cls not in _TEXT_CONTAINERS or obj.is_iterator:
        return None
    try:
        return repr(python_value(tx, obj))
    except NotConstant:
        return None


def checked_text(tx, obj, dunder):
    """`repr(obj)` / `str(obj)` of an object of the program's: its `__repr__`/`__str__`, which CPython
    takes only when it returns a str."""
    text = container_text(tx, obj)
    if text is not None:
        return const(text)
    result = tx.call_method_on(obj, dunder, [], {})
    if isinstance(obj, UserDefinedObjectVariable) and not (result.is_python_constant() and
                                                           isinstance(result.as_python_constant(), str)):
        kind = result.python_type()
        if kind.__module__ != "builtins":
            raise Unsupported("python_protocol", what=f"{dunder} of {obj.describe()} returning {result.describe()}")
        raise user_error(TypeError(f"{dunder} returned non-string (type {kind.__name__})"))
    return result


def format_object(tx, obj, spec):
    """`format(obj, spec)` (and an f-string's `{obj:spec}`) of an object of the program's: its class's
    `__format__`; object's own takes only an empty spec and gives `str(obj)`. The result must be a str."""
    method, _ = class_method(tx, obj, "__format__")
    if method is object.__format__:
        if spec:
            raise user_error(TypeError(f"unsupported format string passed to {obj.python_type().__name__}.__format__"))
        return checked_text(tx, obj, "__str__")
    if not isinstance(method, types.FunctionType):
        raise Unsupported("python_protocol", what=f"format() of {obj.describe()} (a __format__ written in C)")
    result = obj.call_method(tx, "__format__", [const(spec)], {})
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
        kind = result.python_type()
        if kind.__module__ != "builtins":
            raise Unsupported("python_protocol", what=f"__format__ of {obj.describe()} returning {result.describe()}")
        raise user_error(TypeError(f"__format__ must return a str, not {kind.__name__}"))
    return result


def _format(tx, obj, spec=None, /):
    if not isinstance(obj, UserDefinedObjectVariable) or (spec is not None and not spec.is_python_constant()):
        return None
    spec_value = "" if spec is None else spec.as_python_constant()
    if type(spec_value) is not str:
        return None
    return format_object(tx, obj, spec_value)


def _repr(tx, obj, /):
    if obj.is_python_constant():
        return const(fold(repr, obj.as_python_constant()))   # an int past the digit limit raises
    return checked_text(tx, obj, "__repr__")


def _round(tx, x, /, *nd):
    if is_tensorish(x):
        return tx.output.call_function(round, [x, *nd], {})
    return None


def _slice(tx, *args):
    if not 1 <= len(args) <= 3:
        return None
    parts = list(args)
    if len(parts) == 1:
        parts = [const(None), parts[0], const(None)]
    while len(parts) < 3:
        parts.append(const(None))
    return SliceVariable(*parts)


def _super(tx, *args):
    return tx.make_super(args)


def _object(tx):
    return UserDefinedObjectVariable.create_new(tx, object)


def _divmod(tx, a, b, /):
    if is_tensorish(a) or is_tensorish(b):
        return TupleVariable((tx.binary_op(operator.floordiv, a, b), tx.binary_op(operator.mod, a, b)))
    return None


def _pow(tx, a, b, /, *mod):
    if not mod:
        return tx.binary_op(operator.pow, a, b)
    return None


def _operator_binary(op):
    def handler(tx, a, b, /):
        return tx.binary_op(op, a, b)
    return handler


def _operator_compare(op):
    def handler(tx, a, b, /):
        if op is operator.contains:   # operator.contains(container, item) is `item in container`
            return tx.compare(op, b, a)
        return tx.compare(op, a, b)
    return handler


def _operator_unary(op):
    def handler(tx, a, /):
        return tx.unary_op(op, a)
    return handler


def _getitem(tx, a, b, /):
    return tx.getitem(a, b)


def _setitem(tx, a, b, c, /):
    tx.call_method_on(a, "__setitem__", [b, c], {})
    return const(None)


def _delitem(tx, a, b, /):
    tx.call_method_on(a, "__delitem__", [b], {})     # `del a[b]`
    return const(None)


def _concat(tx, a, b, /):
    """operator.concat: the first operand's own sequence concatenation (no `__radd__` of the second is
    tried, as `a + b` would): traced for two operands of the same exact list, tuple, str or bytes type."""
    kind = a.python_type()
    if kind in (list, tuple, str, bytes) and b.python_type() is kind:
        return tx.binary_op(operator.add, a, b)
    return None


def _fsum(tx, iterable, /):
    """math.fsum of plain numbers, folded (its exact rounding is the real function's)."""
    items = tx.iterate_all(iterable)
    if all(i.is_python_constant() and type(i.as_python_constant()) in (int, float, bool) for i in items):
        return const(fold(math.fsum, [i.as_python_constant() for i in items]))
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class OperatorGetterVariable(VariableTracker):
    """operator.itemgetter(*keys) / attrgetter(*names) / methodcaller(name, *args, **kwargs)."""
    kind: type = operator.itemgetter
    args: tuple = ()      # trackers: the keys, the attribute names, or the method's arguments
    kwargs: tuple = ()    # (name, tracker) pairs, methodcaller only
    name: str = ""        # methodcaller's method name

    @staticmethod
    def from_real(tx, value):
        if isinstance(value, operator.methodcaller):
            factory, args = value.__reduce__()
            return OperatorGetterVariable(kind=operator.methodcaller, name=factory.args[0],
                                          args=tuple(tx.wrap(a, None, trusted=True) for a in args),
                                          kwargs=tuple((k, tx.wrap(v, None, trusted=True))
                                                       for k, v in factory.keywords.items()))
        return OperatorGetterVariable(kind=type(value),
                                      args=tuple(tx.wrap(a, None, trusted=True) for a in value.__reduce__()[1]))

    def python_type(self):
        return self.kind

    def describe(self):
        return f"operator.{self.kind.__name__} object"

    def call_function(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            raise user_error(TypeError(f"{self.kind.__name__} expected 1 argument, got {len(args)}"))
        obj = args[0]
        if self.kind is operator.methodcaller:
            return tx.call_method_on(obj, self.name, list(self.args), dict(self.kwargs))
        if self.kind is operator.itemgetter:
            results = [tx.getitem(obj, key) for key in self.args]
        else:
            results = []
            for dotted in self.args:
                value = obj
                for part in dotted.as_python_constant().split("."):
                    value = tx.getattr(value, part)
                results.append(value)
        if len(results) == 1:
            return results[0]
        return TupleVariable(tuple(results))

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_callable(self.kind)
        if self.kind is operator.methodcaller:
            codegen.load_const(self.name)
        for a in self.args:
            codegen.reconstruct(a)
        for _, v in self.kwargs:
            codegen.reconstruct(v)
        n = len(self.args) + len(self.kwargs) + (self.kind is operator.methodcaller)
        codegen.call(n, kw_names=tuple(k for k, _ in self.kwargs))


def _operator_getter(kind):
    def handler(tx, *args, **kwargs):
        if kind is operator.methodcaller:
            if not args or not args[0].is_python_constant():
                return None
            return OperatorGetterVariable(kind=kind, name=args[0].as_python_constant(), args=tuple(args[1:]),
                                          kwargs=tuple(kwargs.items()))
        if not args or kwargs or (kind is operator.attrgetter and not all(a.is_python_constant() for a in args)):
            return None
        return OperatorGetterVariable(kind=kind, args=tuple(args))
    return handler


def _chain(tx, *iterables):
    return ChainVariable.create(tx, iterables)


def _chain_from_iterable(tx, outer, /):
    return ChainVariable.create_from_iterable(tx, outer)


def _zip_longest(tx, *iterables, fillvalue=None):
    """Over known finite items (list iterators made for this call) the rows are computed now; anything
    else (a generator: reading past the shortest end has effects) is pulled lazily."""
    iterators = tuple(tx.get_iter(i) for i in iterables)
    fill = fillvalue if fillvalue is not None else const(None)
    if not all(isinstance(it, ListIteratorVariable) for it in iterators) or \
            any(it is given for it in iterators for given in iterables):
        return ZipLongestVariable.create(tx, iterators, fill)
    lists = [it.unpack(tx) for it in iterators]
    rows = [TupleVariable(tuple(fill if v is _NO_ITEM else v for v in row))
            for row in itertools.zip_longest(*lists, fillvalue=_NO_ITEM)]
    return ListIteratorVariable.create(tx, rows, "zip_longest")


_NO_ITEM = object()


def _product(tx, *iterables, repeat=None):
    lists = [tx.iterate_all(i) for i in iterables]
    r = repeat.as_python_constant() if repeat is not None else 1
    return ListIteratorVariable.create(tx, [TupleVariable(t) for t in itertools.product(*lists, repeat=r)],
                                       "product")


def _combos(fn):
    def handler(tx, iterable, r=None):
        items = tx.iterate_all(iterable)
        args = () if r is None else (r.as_python_constant(),)
        return ListIteratorVariable.create(tx, [TupleVariable(t) for t in fn(items, *args)], fn.__name__)
    return handler


def _count(tx, start=None, step=None):
    return CountIteratorVariable.create(tx, start if start is not None else const(0),
                                        step if step is not None else const(1))


def _islice(tx, iterable, /, *args):
    if not 1 <= len(args) <= 3:
        return None
    bounds = [python_index(a) for a in args]
    fold(itertools.islice, (), *bounds)     # bad bounds: the program's ValueError, before iter() as CPython
    start, stop, step = (None, bounds[0], None) if len(bounds) == 1 else (bounds + [None])[:3]
    return IsliceVariable.create(tx, tx.get_iter(iterable), start or 0, stop, step or 1)


def _accumulate(tx, iterable, func=None, *, initial=None):
    if func is not None and func.is_python_constant() and func.as_python_constant() is None:
        func = None
    if initial is not None and initial.is_python_constant() and initial.as_python_constant() is None:
        initial = None
    return AccumulateVariable.create(tx, tx.get_iter(iterable), func, initial)


def _reduce(tx, fn, iterable, /, *initial):
    if len(initial) > 1:
        return None
    items = tx.unpack_iterable(iterable)
    if initial:
        acc, rest = initial[0], items
    else:
        if not items:
            raise user_error(TypeError("reduce() of empty iterable with no initial value"))
        acc, rest = items[0], items[1:]
    for item in rest:
        acc = fn.call_function(tx, [acc, item], {})
    return acc


def _partial(tx, fn, /, *args, **kwargs):
    return PartialVariable.create(tx, fn, args, kwargs)


def _wraps(tx, wrapped, /):
    return WrapsDecorator(wrapped=wrapped)


def real_callable(var):
    """The real Python callable a function-like tracker stands for, or None (a function made while
    tracing has no real counterpart)."""
    if isinstance(var, UserFunctionVariable):
        return var.fn
    if isinstance(var, BoundMethodVariable) and isinstance(var.fn, VariableTracker):
        fn, obj = real_callable(var.fn), getattr(var.self_var, "value", None)
        if fn is not None and obj is not None:
            return types.MethodType(fn, obj)
        return None
    if var.is_python_constant() and callable(var.as_python_constant()):
        return var.as_python_constant()
    value = getattr(var, "value", None)
    return value if callable(value) else None


def _signature(tx, fn, **kwargs):
    """inspect.signature(f): computed from the real function now. The result is immutable; it
    depends on the function's identity (guarded where it was read), code and defaults (guarded here)."""
    partial = fn if isinstance(fn, PartialVariable) and fn.cls is functools.partial else None
    if partial is not None:
        # a partial's signature: its function's, less what it binds (a bound keyword's value becomes
        # that parameter's default: computed on the real values, which must be immutable constants)
        bound = tx.unpack_iterable(partial.args) + [v for _, v in partial.keywords.pairs(tx)]
        if not all(v.is_python_constant() and is_constant_value(v.as_python_constant()) for v in bound):
            raise Unsupported("unsupported_call", fn="inspect.signature", detail=" of a partial binding such values")
        fn = partial.fn
    real = real_callable(fn)
    if real is None or kwargs:
        raise Unsupported("unsupported_call", fn="inspect.signature", detail=f" on {fn.describe()}")
    if isinstance(fn, UserFunctionVariable):   # the signature comes from the code and the defaults
        reads.function_code(tx, fn.fn, fn.source)
        reads.function_defaults(tx, fn.fn, fn.source, True, True)
    if partial is not None:
        real = functools.partial(real, *[a.as_python_constant() for a in tx.unpack_iterable(partial.args)],
                                 **{k.as_python_constant(): v.as_python_constant()
                                    for k, v in partial.keywords.pairs(tx)})
        return ConstantVariable(fold(inspect.signature, real))   # (binding too many: the program's ValueError)
    return ConstantVariable(inspect.signature(real))


def _print(tx, *args, **kwargs):
    raise Unsupported("io", fn="print()")


def _dict_new(tx, cls, /, *args, **kwargs):
    """`dict.__new__(cls, ...)` (a dict subclass's `__new__` calling `super().__new__(cls)`): an empty,
    not initialized instance of `cls` (the arguments are left to `__init__`). Only for a class whose
    bases are Python classes over dict or OrderedDict, whose objects the trace models."""
    klass = cls.as_python_constant_or_none()
    if not isinstance(klass, type):
        return None
    if not issubclass(klass, dict):
        raise user_error(TypeError(f"dict.__new__({klass.__name__}): {klass.__name__} is not a subtype of dict"))
    if klass is dict:
        return DictVariable.create(tx, [])
    if not all(k in (dict, collections.OrderedDict, object) or k.__module__ != "builtins" and
               not k.__module__.startswith("collections") for k in class_mro(klass)):
        return None     # defaultdict, Counter...: their own state or construction
    return UserDefinedObjectVariable.create_new(tx, klass)


def _tuple_new(tx, cls, iterable=None):
    """`tuple.__new__(cls, items)`: what every namedtuple's `__new__` calls."""
    klass = cls.as_python_constant() if cls.is_python_constant() else None
    items = tuple(tx.unpack_iterable(iterable)) if iterable is not None else ()
    if klass is tuple:
        return TupleVariable(items)
    if is_named_tuple_class(klass) and not is_structseq(klass) and len(items) == len(klass._fields):
        return NamedTupleVariable(items, cls=klass)
    return None


_HANDLERS: dict[Any, Callable] = {
    len: _len, hash: _hash, format: _format,
    locals: _locals, vars: _vars, isinstance: _isinstance, issubclass: _issubclass, getattr: _getattr,
    hasattr: _hasattr,
    setattr: _setattr, delattr: _delattr, min: _minmax(min), max: _minmax(max), sum: _sum, math.prod: _prod,
    any: _any_all(any), all: _any_all(all), sorted: _sorted, reversed: _reversed, enumerate: _enumerate,
    zip: _zip, map: _map, filter: _filter, iter: _iter, next: _next, range: _range,
    list: _container(list), tuple: _container(tuple), set: _container(set), frozenset: _container(frozenset),
    dict: _container(dict), int: _scalar(int), float: _scalar(float), bool: _scalar(bool), str: _scalar(str),
    complex: _complex,
    abs: _abs, type: _type, callable: _callable, id: _id, repr: _repr, round: _round, slice: _slice,
    super: _super, object: _object, object.__new__: _object_new, divmod: _divmod, pow: _pow, print: _print,
    tuple.__new__: _tuple_new, dict.__new__: _dict_new,
    sys.getrecursionlimit: _getrecursionlimit, types.MappingProxyType: make_mapping_proxy,
    operator.getitem: _getitem, operator.setitem: _setitem, operator.delitem: _delitem, operator.abs: _abs,
    operator.concat: _concat, math.fsum: _fsum,
    operator.itemgetter: _operator_getter(operator.itemgetter),
    operator.attrgetter: _operator_getter(operator.attrgetter),
    operator.methodcaller: _operator_getter(operator.methodcaller),
    itertools.count: _count, itertools.chain: _chain, itertools.chain.from_iterable: _chain_from_iterable,
    itertools.zip_longest: _zip_longest, itertools.product: _product, itertools.islice: _islice,
    itertools.accumulate: _accumulate, itertools.combinations: _combos(itertools.combinations),
    itertools.permutations: _combos(itertools.permutations), functools.reduce: _reduce,
    functools.partial: _partial, functools.wraps: _wraps, inspect.signature: _signature,
    dict.fromkeys: _fromkeys(dict), collections.OrderedDict.fromkeys: _fromkeys(collections.OrderedDict),
    collections.defaultdict.fromkeys: _fromkeys(collections.defaultdict),
    collections.OrderedDict: _mapping(collections.OrderedDict),
    collections.defaultdict: _mapping(collections.defaultdict), collections.deque: _deque,
    collections.namedtuple: _namedtuple, sys.exc_info: _exc_info, sys.exception: _exception,
    types.MethodType: _method_type,
    **itertools_lazy.HANDLERS, **BASE_EXCEPTION_INITS,
}
for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
            operator.pow, operator.lshift, operator.rshift, operator.and_, operator.or_, operator.xor,
            operator.matmul, operator.iadd, operator.isub, operator.imul, operator.itruediv,
            operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
            operator.imatmul, operator.ilshift, operator.irshift):
    _HANDLERS[_op] = _operator_binary(_op)
for _op in (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge, operator.is_,
            operator.is_not, operator.contains):
    _HANDLERS[_op] = _operator_compare(_op)
for _op in (operator.neg, operator.pos, operator.invert, operator.not_, operator.truth):
    _HANDLERS[_op] = _operator_unary(_op)



def has_builtin_handler(fn) -> bool:
    """Whether calls to `fn` (a builtin, or a class like itertools.chain) are traced by a handler."""
    return safe_in(fn, _HANDLERS)   # a user object's __hash__/__eq__ is never run


# builtins that may be applied to tensors/symbolic values as graph nodes
_TENSOR_OPERATORS = {abs, round, math.floor, math.ceil, math.trunc, math.sqrt, operator.index}
# builtins answered by a dunder method of their first argument
_OPERATOR_METHODS = {hash: "__hash__", format: "__format__", math.floor: "__floor__", math.ceil: "__ceil__",
                     math.trunc: "__trunc__"}
BUILTIN_NAMES = {name: getattr(builtins, name) for name in dir(builtins)}


families.register(BuiltinVariable)
