"""User classes and their instances: attribute reads and writes, properties, class and static
methods, super(), dataclasses, enums, and the dunder protocols (__call__, __getitem__, ...)."""
from __future__ import annotations

import collections
import collections.abc
import copyreg
import ctypes
import dataclasses
import enum
import functools
import inspect
import operator
import sys
import types
from typing import Any

import torch

from ...guards.guard import Guard
from ...guards.source import (
    MISSING,
    AttrSource,
    ClassNamespaceSource,
    ConstSource,
    DictKeysSource,
    InstanceDictSource,
    ItemSource,
    SetItemsSource,
    set_items_seen,
)
from ...probe import (
    builtin_base,
    class_namespace,
    disallows_instantiation,
    is_c_level,
    is_heap_type,
    is_python_data_descriptor,
    per_class,
    static_hasattr,
)
from .. import reads
from ..graph_break import Unsupported, fold, user_error
from ..reads import class_lookup, mro_lookup
from ..signals import UserException, raised_by_user
from ..write_back import set_instance_attr
from .base import VariableTracker, compare_equal, families, wrap_class
from .constant import const
from .constant import is_constant_value
from .dicts import _REAL_ORDER, DictVariable, SetVariable
from .functions import BoundMethodVariable, UserFunctionVariable, bind_arguments
from .iterators import IteratorVariable, StopIterationSignal
from .lists import ListVariable, NamedTupleVariable, TupleVariable, is_named_tuple_class, is_structseq
from .misc import new_exception
from .warning import make_catch_warnings

_MISSING = object()


_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"]


def descriptor_method(tx, attr, name):
    """`name` (`__get__`, `__set__`, `__delete__`) on the class of a descriptor found on a class, or None:
    looked up guarded, as any class lookup (one added, replaced or removed later recompiles)."""
    found, _ = class_lookup(tx, type(attr), name)
    return None if found is MISSING else found


def is_data_descriptor(tx, attr) -> bool:
    """CPython's test (its type fills the descriptor set slot: it has `__set__` or `__delete__`), guarded:
    a data descriptor of the class comes before the instance's own dict."""
    return descriptor_method(tx, attr, "__set__") is not None or descriptor_method(tx, attr, "__delete__") is not None


def _python_descriptor_method(tx, obj_var, attr, attr_source, method, args) -> bool:
    """`descriptor.__set__(obj, value)` / `__delete__(obj)` of a data descriptor class of the program's,
    written in Python: inlined as object.__setattr__/__delattr__ calls it (True); otherwise False."""
    fn = descriptor_method(tx, attr, method)
    if not (is_heap_type(type(attr)) and isinstance(fn, types.FunctionType)):
        return False
    descriptor = tx.wrap(attr, attr_source, trusted=attr_source is None)
    UserFunctionVariable(fn=fn).call_function(tx, [descriptor, *args], {})
    return True


def bind_descriptor(tx, obj_var, cls_owner, attr, name, attr_source=None):
    """Turn a class attribute found in the MRO into what `obj.name` evaluates to."""
    # looked up on a class (`object.__setattr__`, `Cls.method`), descriptors stay unbound
    is_class = isinstance(obj_var, UserDefinedClassVariable) or isinstance(obj_var.as_python_constant_or_none(), type)

    def part(field):   # a read-only field of the found object, whose identity is guarded by the lookup
        return tx.wrap(getattr(attr, field), AttrSource(attr_source, field) if attr_source else None, trusted=True)
    getter = descriptor_method(tx, attr, "__get__")
    if is_heap_type(type(attr)) and not is_c_level(getter):
        # a descriptor class of the program's (torch.distributions' lazy_property, a property or
        # classmethod subclass overriding __get__): its Python `__get__(descriptor, instance, owner)`
        # inlined, as the lookup calls it
        if not isinstance(getter, types.FunctionType):
            raise Unsupported("unsupported_attr", name=name,
                              obj=f"{obj_var.describe()} (custom descriptor {type(attr).__name__})")
        descriptor = tx.wrap(attr, attr_source, trusted=attr_source is None)
        owner = obj_var if is_class else wrap_class(tx, obj_var.python_type())
        return UserFunctionVariable(fn=getter).call_function(
            tx, [descriptor, const(None) if is_class else obj_var, owner], {})
    if isinstance(attr, staticmethod):
        return part("__func__")
    if isinstance(attr, classmethod):
        cls_var = obj_var if is_class else wrap_class(tx, obj_var.python_type())
        inner = attr.__func__
        if sys.version_info < (3, 13) and not isinstance(inner, types.FunctionType) and \
                hasattr(type(inner), "__get__"):
            # before 3.13 a classmethod binds what it wraps as a descriptor of the class:
            # `@classmethod @property` reads the property's getter on the class
            if type(inner) is not property or inner.fget is None:
                raise Unsupported("unsupported_attr", name=name,
                                  obj=f"{obj_var.describe()} (a classmethod of {type(inner).__name__})")
            getter = tx.wrap(inner.fget, AttrSource(AttrSource(attr_source, "__func__"), "fget")
                             if attr_source else None, trusted=True)
            return getter.call_function(tx, [cls_var], {})
        return BoundMethodVariable(fn=part("__func__"), self_var=cls_var)
    if isinstance(attr, property) and not is_class:    # (property.__get__(None, cls) is the property)
        if attr.fget is None:
            raise user_error(AttributeError(f"property {name!r} has no getter"))
        return part("fget").call_function(tx, [obj_var], {})
    if isinstance(attr, types.FunctionType):
        if is_class:
            return UserFunctionVariable(fn=attr, source=attr_source)
        return BoundMethodVariable(fn=UserFunctionVariable(fn=attr, source=attr_source), self_var=obj_var)
    if isinstance(attr, (types.GetSetDescriptorType, types.MemberDescriptorType)) and \
            not is_class:
        # a C-level attribute slot (deque.maxlen, __slots__ entries): read it from the real object
        real = getattr(obj_var, "value", None)
        if real is None:
            raise Unsupported("unsupported_attr", name=name, obj=obj_var.describe())
        try:
            value = attr.__get__(real, type(real))
        except Exception:   # noqa: BLE001 - the object's own error (an uninitialised C object): run natively
            raise Unsupported("unsupported_attr", name=name, obj=obj_var.describe()) from None
        return tx.wrap(value, AttrSource(obj_var.source, name) if obj_var.source else None)
    if isinstance(attr, types.ClassMethodDescriptorType):  # dict.fromkeys, int.from_bytes...
        owner = obj_var.as_python_constant_or_none()
        if not isinstance(owner, type):
            owner = obj_var.python_type()
        return tx.wrap(attr.__get__(None, owner), None)
    if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
            not is_class:
        return BoundMethodVariable(fn=families.BuiltinVariable(fn=attr), self_var=obj_var)
    if is_class and isinstance(attr, (property, types.MethodDescriptorType, types.WrapperDescriptorType,
                                      types.GetSetDescriptorType, types.MemberDescriptorType)):
        return tx.wrap(attr, attr_source)      # read on the class: the descriptor itself
    if type(attr) is functools._lru_cache_wrapper:
        # an lru_cache'd method (`Logger.warning_once`): its `__get__` is C's method binding, running no
        # program code; the cached function is not traced (calling it breaks the graph at the call)
        wrapper = tx.wrap(attr, attr_source, trusted=attr_source is None)
        return wrapper if is_class else BoundMethodVariable(fn=wrapper, self_var=obj_var)
    if hasattr(type(attr), "__get__") and not isinstance(attr, (type, types.BuiltinFunctionType)):
        # any other descriptor, a C one too (a C type named without its module says "builtins":
        # `instancemethod` binds what it wraps, and was taken for a plain value)
        owner = cls_owner.__name__ if cls_owner is not None else obj_var.describe()
        raise Unsupported("unsupported_attr", name=name, obj=f"{owner} (custom descriptor {type(attr).__name__})")
    return tx.wrap(attr, attr_source)


def lookup_in_mro(tx, obj_var, mro, name):
    attr, src = mro_lookup(tx, mro, name)
    if attr is MISSING:
        raise user_error(AttributeError(f"'super' object has no attribute '{name}'"))
    return bind_descriptor(tx, obj_var, None, attr, name, src)


def class_attribute(tx, obj_var, cls, name):
    """`obj.name` resolved on the class (no instance dict)."""
    attr, src = class_lookup(tx, cls, name)
    if attr is MISSING:
        raise user_error(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))
    return bind_descriptor(tx, obj_var, None, attr, name, src)


def class_method(tx, var, name, pending_ok=False):
    """The raw class-dict entry `name` in the MRO of `var`'s class (MISSING when absent: a class attribute
    may be None, `text = None`), guarded (see frontend/reads.py), and its source."""
    attr, src = class_lookup(tx, var.python_type(), name, var.source
                             if getattr(var, "value", None) is not None else None, pending_ok=pending_ok)
    return (MISSING, None) if attr is MISSING else (attr, src)


@dataclasses.dataclass(frozen=True, eq=False)
class ClassDictVariable(VariableTracker):
    """`cls.__dict__`, the read-only view of a class's own namespace: membership and item reads of
    constant keys, each guarded (the class may gain or lose the name later)."""
    cls: type = None

    def python_type(self):
        return types.MappingProxyType

    def describe(self):
        return f"{self.cls.__qualname__}.__dict__"

    def call_method(self, tx, name, args, kwargs):
        if name not in ("__contains__", "__getitem__", "get") or kwargs or not args or \
                not args[0].is_python_constant():
            return super().call_method(tx, name, args, kwargs)
        key = args[0].as_python_constant()
        attr, source = mro_lookup(tx, [self.cls], key)    # guarded whether found or not
        if name == "__contains__":
            return const(attr is not MISSING)
        if attr is not MISSING:
            return tx.wrap(attr, source)
        if name == "get":
            return args[1] if len(args) > 1 else const(None)
        raise user_error(KeyError(key))


@dataclasses.dataclass(frozen=True, eq=False)
class UserDefinedClassVariable(VariableTracker):
    value: type = None

    def python_type(self):
        return type(self.value)

    def describe(self):
        return f"class {self.value.__qualname__}"

    def as_python_constant(self):
        return self.value

    def parts(self, tx):
        var = tx.output.side_effects.class_vars.get(id(self.value))
        return tuple(tx.output.side_effects.contents.get(var, {}).values()) if var is not None else ()

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_const(self.value)

    def setattr(self, tx, name, value):
        """`Cls.name = value`: held as the class's pending attribute (later lookups in the trace find it,
        reads.class_lookup), set with type.__setattr__ after the graph. Only what that write does
        alone: plain data (not a descriptor, bound when read) under an ordinary name (a dunder is a
        slot of the type) on a Python class over object whose metaclass sets it as type does."""
        cls = self.value
        why = _class_write_refused(tx, cls, name, value)
        if why:
            raise Unsupported("attribute_write", what=f"setting attribute {name!r} on class {cls.__qualname__} "
                                                      f"({why})")
        effects = tx.output.side_effects
        var = effects.class_tracker(cls)
        attrs = dict(effects.contents.get(var, {}))
        if name not in attrs:
            old = class_namespace(cls).get(name, MISSING)
            if old is not MISSING and reads.death_runs_code(
                    tx, old, ItemSource(ClassNamespaceSource(ConstSource(cls)), name)):
                raise Unsupported("finalizer", what=f"replacing {cls.__qualname__}.{name} (its death runs code)")
        attrs[name] = value
        effects.store(var, attrs)

    def var_getattr(self, tx, name):
        cls = self.value
        meta_attr, meta_src = class_lookup(tx, type(cls), name)    # (guarded: the metaclass may gain it later)
        # a data descriptor of the metaclass answers before the class's own attributes; whether it is one
        # is guarded too (its class may gain `__get__`/`__set__` later)
        meta_data_descriptor = meta_attr is not MISSING and any(
            class_lookup(tx, type(meta_attr), hook)[0] is not MISSING for hook in ("__set__", "__delete__"))
        if meta_data_descriptor and type(meta_attr) is property and isinstance(meta_attr.fget, types.FunctionType):
            # a property of the metaclass (an Enum class's `__members__`): its getter runs when read
            fget = tx.wrap(meta_attr.fget, AttrSource(meta_src, "fget") if meta_src else None, trusted=True)
            return fget.call_function(tx, [self], {})
        if meta_data_descriptor and is_python_data_descriptor(meta_attr):
            # a property of the metaclass (`__dict__` included): user code, run as Python when read
            raise Unsupported("python_protocol", what=f"reading {cls.__qualname__}.{name}, a property of its metaclass")
        if name == "__annotations__" and name not in class_namespace(cls):
            # type makes an empty dict and stores it in the class's namespace (never a base's): not
            # at compile time, nor the base's found in the MRO
            raise Unsupported("python_protocol", what=f"reading a missing __annotations__ of {self.describe()}")
        if name in ("__name__", "__qualname__", "__module__"):
            value = reads.name_attr(tx, cls, self.source, name)
            if value is not MISSING:
                return const(value)
        if name == "__mro__":
            return TupleVariable(tuple(wrap_class(tx, c) for c in reads.class_mro(tx, cls)))
        if name == "__dict__" and type(cls).__getattribute__ is type.__getattribute__:
            return ClassDictVariable(cls=cls)
        if meta_data_descriptor:
            # one of type's own (`__base__`, `__doc__`...), shadowing a class attribute of that name
            return tx.wrap(getattr(cls, name), AttrSource(self.source, name) if self.source else None)
        attr, attr_src = class_lookup(tx, cls, name, pending_ok=True)
        if isinstance(attr, reads.PendingClassAttr):
            return attr.var
        if name == "apply" and attr is _FUNCTION_APPLY:
            return families.AutogradFunctionApplyVariable(fn_cls=cls)
        if attr is not MISSING:
            if isinstance(attr, (staticmethod, classmethod, types.FunctionType)):
                return bind_descriptor(tx, self, None, attr, name, attr_src)
            if is_heap_type(type(attr)) and not is_c_level(descriptor_method(tx, attr, "__get__")):
                # a descriptor whose `__get__` is Python: run when read, not at compile time and
                # in each guard check (nor skipped by the compiled code)
                return bind_descriptor(tx, self, None, attr, name, attr_src)
            if isinstance(attr, property):
                return tx.wrap(attr, attr_src, trusted=True)
            value = getattr(cls, name)
            src = AttrSource(self.source, name) if self.source else None
            return tx.wrap(value, src)
        if meta_attr is not MISSING and not is_c_level(descriptor_method(tx, meta_attr, "__get__")):
            # a descriptor of the metaclass whose `__get__` is Python: bound to the class when read
            raise Unsupported("python_protocol", what=f"reading {cls.__qualname__}.{name}, a descriptor of its "
                                                      "metaclass")
        value = getattr(cls, name)  # metaclass attributes; raises AttributeError like eager
        return tx.wrap(value, AttrSource(self.source, name) if self.source else None)

    def subscript(self, tx, index):
        """`cls[index]` as CPython runs it: the metaclass's `__getitem__` (an Enum's name lookup), else
        the class's `__class_getitem__` (`list[int]`, `Generic[T]`, a user's), else TypeError. A
        method written in Python is traced: it runs on every call, with its effects, its exceptions and
        a new result each time. One written in C is folded, and so is typing's (annotations are folded
        by design, see builder.py)."""
        cls = self.value
        meta = type(cls)
        getitem, src = class_lookup(tx, meta, "__getitem__")
        if isinstance(getitem, types.FunctionType):
            return UserFunctionVariable(fn=getitem, source=src).call_function(tx, [self, index], {})
        hooks = [class_lookup(tx, meta, n)[0] for n in ("__getattribute__", "__getattr__")]
        if getitem is not MISSING or hooks[0] is not type.__dict__["__getattribute__"] or hooks[1] is not MISSING:
            # a C `__getitem__` of a metaclass, or hooks that may answer `__class_getitem__`
            raise Unsupported("python_protocol", what=f"subscripting {self.describe()} (its metaclass)")
        method, src = class_lookup(tx, cls, "__class_getitem__")
        func = getattr(method, "__func__", None) if isinstance(method, classmethod) else None
        if isinstance(func, types.FunctionType) and func.__module__ != "typing":
            return bind_descriptor(tx, self, None, method, "__class_getitem__", src).call_function(tx, [index], {})
        if method is not MISSING and func is None and not isinstance(method, _C_CLASSMETHODS):
            raise Unsupported("python_protocol", what=f"subscripting {self.describe()} (its __class_getitem__ "
                                                      "is no classmethod)")
        real_index = _callable_parameters(tx, cls, index) if not index.is_python_constant() else None
        if real_index is None and not index.is_python_constant():
            raise Unsupported("python_protocol", what=f"subscripting {self.describe()} with {index.describe()}")
        if real_index is None:
            real_index = index.as_python_constant()
        return const(fold(operator.getitem, cls, real_index))   # C, typing's, or TypeError

    def truth(self, tx):
        return _truth_by_type(tx, self, type(self.value))

    def metaclass_method(self, tx, name):
        """The metaclass's `name` when written in Python (EnumType's `__iter__`, `__len__`...), else None."""
        method, src = class_lookup(tx, type(self.value), name)
        return UserFunctionVariable(fn=method, source=src) if isinstance(method, types.FunctionType) else None

    def call_method(self, tx, name, args, kwargs):
        # `len(cls)`, `x in cls`: CPython looks the protocol method up on the metaclass (an Enum
        # class's members), traced when the metaclass writes it in Python
        if name in _METACLASS_PROTOCOL:
            method = self.metaclass_method(tx, name)
            if method is not None:
                return method.call_function(tx, [self, *args], kwargs)
        return super().call_method(tx, name, args, kwargs)

    def iterate(self, tx):
        """`iter(cls)`: the metaclass's `__iter__` (an Enum class's members in definition order)."""
        method = self.metaclass_method(tx, "__iter__")
        if method is None:
            return None
        it = method.call_function(tx, [self], {})
        if not it.is_iterator:
            raise Unsupported("python_protocol", what=f"iter() of {self.describe()} (its __iter__ returned "
                                                      f"{it.describe()})")
        return it

    def unpack(self, tx):
        it = self.iterate(tx)
        return super().unpack(tx) if it is None else it.unpack(tx)

    def call_function(self, tx, args, kwargs):
        cls = self.value
        if issubclass(cls, BaseException):
            return new_exception(tx, cls, args, kwargs)
        if cls is getattr(sys.modules.get("warnings"), "catch_warnings", None):
            made = make_catch_warnings(tx, args, kwargs)
            if made is not None:
                return made
        if is_structseq(cls) and is_named_tuple_class(cls) and len(args) == 1 and not kwargs and \
                not disallows_instantiation(cls):     # (sys.flags, sys.version_info: calling them raises)
            items = tuple(tx.unpack_iterable(args[0]))   # `torch.return_types.topk((values, indices))`
            if len(items) == cls.n_sequence_fields:
                return NamedTupleVariable(items, cls=cls)
        if issubclass(cls, tuple) and static_hasattr(cls, "_fields"):
            new = cls.__new__
            reads.class_lookup(tx, cls, "__new__")
            defaults, _ = reads.function_defaults(tx, new, None, True, False)
            bound = bind_arguments(tx, new.__code__, new.__qualname__, [self] + list(args), kwargs, defaults, {})
            return NamedTupleVariable(tuple(bound[f] for f in cls._fields), cls=cls)
        if issubclass(cls, enum.Enum) and len(args) == 1 and args[0].is_python_constant():
            return const(fold(cls, args[0].as_python_constant()))   # Color(99): the program's ValueError
        meta_call = class_lookup(tx, type(cls), "__call__")[0]
        if meta_call is dict:
            # a TypedDict class (its metaclass's `__call__ = dict`): calling it makes a plain dict
            return wrap_class(tx, dict).call_function(tx, args, kwargs)
        if meta_call is not type.__dict__["__call__"]:
            # its metaclass decides what calling it makes (a singleton's cached instance; a TypedDict
            # class makes a plain dict): not the class's own __new__/__init__
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its metaclass defines __call__)")
        if issubclass(cls, torch.nn.Module):
            return families.new_torch_module(tx, cls, args, kwargs)
        if issubclass(cls, torch.autograd.Function):
            return families.new_function_object(tx, cls, args, kwargs)
        if issubclass(cls, dict) and cls.__new__ is dict.__new__ and cls.__module__ != "builtins":
            return self._new_dict_subclass(tx, args, kwargs)
        if issubclass(cls, (set, frozenset)) and cls.__new__ is set_base(cls).__new__ and \
                cls.__module__ != "builtins":
            return self._new_set_subclass(tx, args, kwargs)
        if issubclass(cls, list) and cls.__new__ is list.__new__ and is_heap_type(cls):
            return self._new_list_subclass(tx, args, kwargs)
        if issubclass(cls, torch.Tensor):
            return families.new_tensor_subclass(tx, cls, args, kwargs)
        new, new_src = class_lookup(tx, cls, "__new__")   # what creating and initializing the object runs
        if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
            return self._call_python_new(tx, new.__func__, AttrSource(new_src, "__func__") if new_src else None,
                                         args, kwargs)
        init, _ = class_lookup(tx, cls, "__init__")
        if new is not object.__dict__["__new__"] or (cls.__module__ == "builtins" and not isinstance(
                init, types.FunctionType) and init is not object.__dict__["__init__"]):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (custom __new__)")
        if class_namespace(cls).get("__abstractmethods__"):
            # object.__new__ refuses a class with abstract methods: raised as Python
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (an abstract class)")
        obj = UserDefinedObjectVariable.create_new(tx, cls)
        init, _ = class_method(tx, obj, "__init__")
        if isinstance(init, types.FunctionType):
            _init_returned(tx, obj, obj.var_getattr(tx, "__init__").call_function(tx, args, kwargs))
        elif init is not object.__dict__["__init__"]:
            # `__init__ = None`, a C or wrapped initializer: CPython calls it (or raises); not modelled
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its __init__ is no Python function)")
        elif args or kwargs:
            raise user_error(TypeError(f"{cls.__name__}() takes no arguments"))
        return obj

    def _call_python_new(self, tx, new, new_src, args, kwargs):
        """`cls(*args, **kwargs)` of a class whose `__new__` is a Python function, as type.__call__ runs
        it: `__new__(cls, ...)`, then, if it made an instance of `cls`, its type's `__init__` with the
        same arguments (which must return None)."""
        cls = self.value
        obj = UserFunctionVariable(fn=new, source=new_src).call_function(tx, [self] + list(args), kwargs)
        try:
            made = obj.python_type()
        except Unsupported:
            made = None
        if made is None or not isinstance(obj, UserDefinedObjectVariable) and issubclass(made, cls):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=f" (its __new__ made {obj.describe()})")
        if not issubclass(made, cls):
            return obj          # not an instance of cls: not initialized
        init, init_src = class_method(tx, obj, "__init__")
        if isinstance(init, types.FunctionType):     # (looked up on the type, as slot_tp_init does)
            _init_returned(tx, obj, UserFunctionVariable(fn=init, source=init_src).call_function(
                tx, [obj] + list(args), kwargs))
        elif init is object.__dict__["__init__"]:
            pass       # (object.__init__ takes any arguments when __new__ is overridden and __init__ not)
        elif init is dict.__dict__["__init__"] and dict_store(tx, obj) is not None and len(args) <= 1:
            dict_store(tx, obj).call_method(tx, "update", list(args), kwargs)
        else:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its __init__ is no Python function)")
        return obj

    def _new_dict_subclass(self, tx, args, kwargs):
        """An instance of a user subclass of dict/OrderedDict (e.g. a dataclass-like ModelOutput):
        attributes and dict items both tracked; Python methods inlined, dict's own methods applied
        to the items."""
        cls = self.value
        obj = UserDefinedObjectVariable.create_new(tx, cls)
        init, _ = class_method(tx, obj, "__init__")
        if isinstance(init, types.FunctionType):
            _init_returned(tx, obj, obj.var_getattr(tx, "__init__").call_function(tx, args, kwargs))
        elif args or kwargs:
            dict_store(tx, obj).call_method(tx, "update", list(args), kwargs)
        return obj


    def _new_set_subclass(self, tx, args, kwargs):
        """An instance of a user subclass of set/frozenset: attributes and items both tracked. A
        frozenset's items come from `__new__`'s argument; a set's from `__init__` (the class's own,
        inlined, or set's)."""
        cls = self.value
        if set_base(cls) is frozenset and len(args) > 1:   # (set.__new__ leaves the arguments to __init__)
            raise user_error(TypeError(f"{cls.__name__} expected at most 1 argument, got {len(args)}"))
        obj = UserDefinedObjectVariable.create_new(tx, cls)
        store = set_store(tx, obj)
        if set_base(cls) is frozenset and args:     # (made new with its items: the object is new too)
            attrs = dict(tx.output.side_effects.get(obj))
            attrs[_SET_STORE] = SetVariable.create(tx, tx.unpack_iterable(args[0]), frozenset)
            tx.output.side_effects.track(obj, attrs)
        init, _ = class_method(tx, obj, "__init__")
        if isinstance(init, types.FunctionType):
            _init_returned(tx, obj, obj.var_getattr(tx, "__init__").call_function(tx, args, kwargs))
        elif set_base(cls) is set and args:
            store.call_method(tx, "update", list(args), {})
        return obj

    def _new_list_subclass(self, tx, args, kwargs):
        """An instance of a user subclass of list: attributes and items both tracked. list.__new__
        makes it empty; its items come from `__init__` (the class's own, inlined, or list's)."""
        cls = self.value
        obj = UserDefinedObjectVariable.create_new(tx, cls)
        init, _ = class_method(tx, obj, "__init__")
        if isinstance(init, types.FunctionType):
            _init_returned(tx, obj, obj.var_getattr(tx, "__init__").call_function(tx, args, kwargs))
        elif init is list.__dict__["__init__"] and not kwargs and len(args) <= 1:
            if args:
                list_store(tx, obj).call_method(tx, "extend", list(args), {})
        else:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its __init__ is no Python function)")
        return obj


def _init_returned(tx, obj, result):
    """type.__call__'s check of what `__init__` returned: None, else its TypeError."""
    if not result.is_python_constant():
        raise Unsupported("python_protocol", what=f"{obj.describe()}'s __init__ returning {result.describe()}")
    value = result.as_python_constant()
    if value is not None:
        raise user_error(TypeError(f"__init__() should return None, not '{type(value).__name__}'"))


# protocol methods CPython looks up on the type of a class (its metaclass) when the class is operated on
_METACLASS_PROTOCOL = ("__len__", "__contains__", "__iter__", "__reversed__")


# Objects of dict subclasses made while tracing keep their items in a DictVariable stored under
# this reserved attribute name (so everything reachable from the object is in its attribute dict).
_DICT_STORE = "__bytegraph_dict_items__"


def dict_store(tx, var):
    """The DictVariable holding the items of a dict-subclass object, or None. For an object made
    while tracing it is stored with its attributes; for one that existed before the frame it is
    read from the real object (keys guarded) and is read-only (`_READ_ONLY_DICT_METHODS`)."""
    if not isinstance(var, UserDefinedObjectVariable) or not issubclass(var.cls, dict):
        return None
    if var.is_new():
        return var.attrs(tx).get(_DICT_STORE)
    key = ("dict_store", id(var.value))
    known = tx.output.wrapped_objects.get(key)
    if known is not None and known[0] is var.value:
        return known[1]
    real = var.value
    via = builtin_base(type(real))    # dict, OrderedDict...: the user's overrides never run here
    keys = list(via.keys(real))
    if not all(isinstance(k, (str, int, float, bool, type(None))) for k in keys):
        raise Unsupported("non_constant_value", what=f"reading {var.describe()} (keys that are not constants)")
    if var.source is not None:
        tx.output.guards.add(Guard.type_match(var.source, type(real)))
        tx.output.guards.add(Guard.constant(DictKeysSource(var.source, via), tuple(keys)))
    pairs = [(const(k), tx.wrap(via.__getitem__(real, k), ItemSource(var.source, k, via) if var.source else None))
             for k in keys]
    store = DictVariable.create(tx, pairs, _dict_base(type(real)), owner=var)
    tx.output.wrapped_objects[key] = (real, store)
    return store


# Objects of set/frozenset subclasses keep their items in a SetVariable the same way.
_SET_STORE = "__bytegraph_set_items__"
_READ_ONLY_SET_METHODS = {"__contains__", "__len__", "__iter__", "copy", "__eq__", "__ne__", "__or__", "__and__",
                          "__sub__", "__xor__", "__ror__", "__rand__", "__rsub__", "__rxor__", "__le__", "__lt__",
                          "__ge__", "__gt__", "union", "intersection", "difference", "symmetric_difference",
                          "issubset", "issuperset", "isdisjoint"}


def set_base(cls) -> type:
    """The builtin whose methods apply to the items of a set subclass's object."""
    return frozenset if issubclass(cls, frozenset) else set


def set_store(tx, var):
    """The SetVariable holding the items of a set- or frozenset-subclass object, or None: like
    `dict_store`, stored with the attributes of an object made while tracing, read from the real
    object (items guarded, through the builtin's own methods) for one that existed before the frame."""
    if not isinstance(var, UserDefinedObjectVariable) or not issubclass(var.cls, (set, frozenset)):
        return None
    if var.is_new():
        return var.attrs(tx).get(_SET_STORE)
    key = ("set_store", id(var.value))
    known = tx.output.wrapped_objects.get(key)
    if known is not None and known[0] is var.value:
        return known[1]
    real = var.value
    via = set_base(type(real))
    items = list(via.__iter__(real))
    if not all(is_constant_value(v) for v in items):
        raise Unsupported("non_constant_value", what=f"reading {var.describe()} (items that are not constants)")
    if var.source is not None:
        tx.output.guards.add(Guard.type_match(var.source, type(real)))
        tx.output.guards.add(Guard.constant(SetItemsSource(var.source, via), set_items_seen(items)))
    store = SetVariable.create(tx, [const(v) for v in items], via, order=_REAL_ORDER)
    tx.output.wrapped_objects[key] = (real, store)
    return store


# Objects of list subclasses made while tracing keep their items in a ListVariable the same way (one
# that existed before the frame is not modelled: its list methods break the graph).
_LIST_STORE = "__bytegraph_list_items__"
_STORES = (_DICT_STORE, _SET_STORE, _LIST_STORE)


def list_store(tx, var):
    """The ListVariable holding the items of a list-subclass object made while tracing, or None."""
    if not isinstance(var, UserDefinedObjectVariable) or not issubclass(var.cls, list) or not var.is_new():
        return None
    return var.attrs(tx).get(_LIST_STORE)


def _rebuild_list_object(cls, attrs, items):
    obj = list.__new__(cls)
    list.extend(obj, items)     # (not the subclass's own methods)
    for name, value in attrs.items():
        set_instance_attr(obj, name, value)
    return obj


def _rebuild_set_object(cls, attrs, items):
    base = set_base(cls)
    obj = base.__new__(cls, items) if base is frozenset else base.__new__(cls)
    if base is set:
        set.update(obj, items)     # (not the subclass's own methods)
    for name, value in attrs.items():
        set_instance_attr(obj, name, value)
    return obj


def _dict_base(cls) -> type:
    """The builtin whose methods apply to the items of a dict subclass's object."""
    return collections.OrderedDict if issubclass(cls, collections.OrderedDict) else dict


_READ_ONLY_DICT_METHODS = {"get", "__getitem__", "__contains__", "__len__", "keys", "values", "items", "__iter__",
                           "copy", "__eq__", "__ne__", "__or__", "__ror__"}


@per_class
def _attribute_hooks(cls):
    """The class's Python `__getattribute__` and `__getattr__` (None when it has none). Only chooses
    how guards re-read an attribute (both forms are exact); tracing reads the hooks through
    `class_method`, which guards them."""
    getattribute = inspect.getattr_static(cls, "__getattribute__", None)
    getattr_fn = inspect.getattr_static(cls, "__getattr__", None)
    return (getattribute if isinstance(getattribute, types.FunctionType) else None,
            getattr_fn if isinstance(getattr_fn, types.FunctionType) else None)


def real_instance_dict(value) -> dict:
    """The real object's `__dict__`, read without running a Python `__getattribute__` of its class."""
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return {}


def instance_dict_source(var):
    """The source of the real `var.__dict__` (None without a source). For a class with a Python
    `__getattribute__` it bypasses that method (guards and transformed code would otherwise run it on
    every read); for others `base.__dict__` is the cheaper expression."""
    if var.source is None:
        return None
    if _attribute_hooks(var.cls)[0] is not None:
        return InstanceDictSource(var.source)
    return AttrSource(var.source, "__dict__")


def instance_attr_source(var, name):
    """The source of attribute `name` that tracing read from the real instance dict of `var`. With
    a Python `__getattribute__` on the class it is the instance-dict entry itself (`base.__dict__[name]`
    read by `object.__getattribute__`): cheap, and a guard on it fails if the attribute leaves the
    instance dict. Otherwise `base.name`, which the interpreter's attribute cache makes fastest (a key
    that is not a string, `obj.__dict__[1]`, is no attribute name: the entry too)."""
    if var.source is None:
        return None
    if _attribute_hooks(var.cls)[0] is not None or type(name) is not str:
        return ItemSource(InstanceDictSource(var.source), name)
    return AttrSource(var.source, name)


def _rebuild_dict_object(cls, attrs, items):
    obj = cls.__new__(cls)
    base = next(c for c in cls.__mro__ if c in (collections.OrderedDict, dict))   # not the subclass's own methods
    for key, value in items.items():
        base.__setitem__(obj, key, value)   # (dict.update would bypass an OrderedDict's key order)
    for name, value in attrs.items():
        set_instance_attr(obj, name, value)
    return obj


def _iterates_by_getitem(tx, obj) -> bool:
    """A class without `__iter__` whose Python `__getitem__` makes it iterable (CPython's sequence
    iterator: items 0, 1, 2... until IndexError or StopIteration)."""
    return class_method(tx, obj, "__iter__")[0] is MISSING and \
        isinstance(class_method(tx, obj, "__getitem__")[0], types.FunctionType)


@dataclasses.dataclass(frozen=True, eq=False)
class GetitemIteratorVariable(IteratorVariable):
    """`iter(obj)` of a class iterable only through its `__getitem__`: `obj[i]` called as each item is
    asked for. State in SideEffects: the next index, None once an IndexError/StopIteration ended it."""
    obj: VariableTracker = None

    @staticmethod
    def create(tx, obj):
        var = GetitemIteratorVariable(obj=obj)
        tx.output.side_effects.track(var, 0)
        return var

    def parts(self, tx):
        return (self.obj,)

    def python_type(self):
        return type(iter(_GetitemOnly()))

    def describe(self):
        return "iterator"

    def next_item(self, tx):
        index = tx.output.side_effects.get(self)
        if index is None:
            raise StopIterationSignal()
        try:
            item = self.obj.call_method(tx, "__getitem__", [const(index)], {})
        except UserException as e:
            if issubclass(e.exc_var.cls, (IndexError, StopIteration)):
                tx.output.side_effects.track(self, None)
                raise StopIterationSignal() from None
            raise
        tx.output.side_effects.track(self, index + 1)
        return item

    def reconstruct(self, codegen):
        if codegen.tx.output.side_effects.get(self) != 0:
            raise Unsupported("unrebuildable", what="rebuilding a started sequence iterator after the graph")
        codegen.load_global_builtin("iter")
        codegen.reconstruct(self.obj)
        codegen.call(1)


def _iteration_search(tx, it, value) -> bool:
    """`value in obj` of a class without `__contains__`: its items taken one at a time until one
    equals `value` (CPython's iteration search), the rest left unread."""
    from .iterators import next_of
    while True:
        try:
            item = next_of(tx, it)
        except StopIterationSignal:
            return False
        if compare_equal(tx, item, value):
            return True


class _GetitemOnly:
    def __getitem__(self, i):
        raise IndexError


@dataclasses.dataclass(frozen=True, eq=False)
class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class. Attribute writes live in SideEffects (name -> tracker, or
    _MISSING for a deleted attribute); unwritten attributes are read from the real object."""
    value: Any = None     # the real object (None for objects created while tracing)
    cls: type = object

    def parts(self, tx):
        effects = tx.output.side_effects
        if not effects.is_tracked(self):
            return ()
        return tuple(v for v in effects.get(self).values() if isinstance(v, VariableTracker))  # not _MISSING

    def iterate(self, tx):
        if _iterates_by_getitem(tx, self):
            return GetitemIteratorVariable.create(tx, self)
        it = self.call_method(tx, "__iter__", [], {})   # the class's own __iter__
        if it.is_iterator:
            return it
        # CPython's iter() takes only an iterator (its class has __next__) from __iter__
        kind = it.python_type()
        if class_lookup(tx, kind, "__next__")[0] is MISSING:
            if not (kind.__module__ == "builtins" or is_heap_type(kind)):
                raise Unsupported("python_protocol", what=f"iter() of {self.describe()} (its __iter__ returned "
                                                          f"{it.describe()})")
            raise user_error(TypeError(f"iter() returned non-iterator of type '{kind.__name__}'"))
        return it

    @staticmethod
    def create_new(tx, cls):
        if class_lookup(tx, cls, "__del__")[0] is not MISSING:
            # its death runs user code at a time the trace cannot place (a `del`, a container dropped,
            # the frame's end): made for real, in a frame that runs as is
            raise Unsupported("finalizer", what=f"making a {cls.__qualname__} object (its class defines __del__)")
        var = UserDefinedObjectVariable(cls=cls)
        attrs = {}
        if issubclass(cls, dict):
            attrs[_DICT_STORE] = DictVariable.create(tx, [], _dict_base(cls), owner=var)
        if issubclass(cls, (set, frozenset)):
            attrs[_SET_STORE] = SetVariable.create(tx, [], set_base(cls))
        if issubclass(cls, list):
            attrs[_LIST_STORE] = ListVariable.create(tx, [])
        tx.output.side_effects.track(var, attrs)
        return var

    def is_new(self):
        return self.value is None

    def python_type(self):
        return self.cls

    def describe(self):
        return f"{self.cls.__qualname__} object"

    def attrs(self, tx) -> dict:
        if not tx.output.side_effects.is_tracked(self):
            tx.output.side_effects.track(self, {})
        return tx.output.side_effects.get(self)

    def var_getattr(self, tx, name):
        """`obj.name` by Python's protocol: a Python `__getattribute__` of the class (inlined) or the
        generic lookup, then `__getattr__` when that raised AttributeError."""
        getattribute, getattribute_src = class_method(tx, self, "__getattribute__")
        try:
            if isinstance(getattribute, types.FunctionType) and name != "__class__":
                return UserFunctionVariable(fn=getattribute, source=getattribute_src).call_function(
                    tx, [self, const(name)], {})
            if not generic_getattribute(getattribute) and name != "__class__":
                raise Unsupported("unsupported_attr", name=name,
                                  obj=f"{self.cls.__name__} (its C __getattribute__ is not object's)")
            return self.generic_getattr(tx, name)
        except Exception as e:
            if not raised_by_user(e, AttributeError):
                raise
            getattr_fn, getattr_src = class_method(tx, self, "__getattr__")
            if not isinstance(getattr_fn, types.FunctionType):
                raise
        return UserFunctionVariable(fn=getattr_fn, source=getattr_src).call_function(tx, [self, const(name)], {})

    def generic_getattr(self, tx, name):
        """object.__getattribute__: data descriptors, the instance's attributes, then the class."""
        cls = self.python_type()
        if name == "__class__":
            return wrap_class(tx, cls)
        attr, attr_src = class_method(tx, self, name, pending_ok=True)
        if name == "__dict__" and isinstance(attr, (types.GetSetDescriptorType, types.MemberDescriptorType)) and \
                attr.__name__ == "__dict__":
            return InstanceDictVariable(obj=self)     # the instance's own dict (not a class's override)
        # data descriptors on the class win over the instance dict
        if attr is not MISSING and (isinstance(attr, property) or (is_data_descriptor(tx, attr) and
                                                                not isinstance(attr, types.MemberDescriptorType))):
            return bind_descriptor(tx, self, None, attr, name, attr_src)
        written = self.attrs(tx)
        if name in written:
            if written[name] is _MISSING:
                raise user_error(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))
            return written[name]
        if self.value is not None:
            own = reads.instance_attr(tx, self.value, self.source, name, self._dict_source())
            if own is not MISSING:
                return tx.wrap(own, instance_attr_source(self, name))
        if isinstance(attr, reads.PendingClassAttr):
            return attr.var      # set on the class earlier in the trace (plain data, not a descriptor)
        if attr is not MISSING:
            if isinstance(attr, types.MemberDescriptorType) and self.value is not None:
                value = reads.slot_member(tx, self.value, self.source, attr)
                if value is MISSING:      # an unset slot: AttributeError, as the member descriptor says
                    raise user_error(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))
                return tx.wrap(value, AttrSource(self.source, name) if self.source else None)
            return bind_descriptor(tx, self, None, attr, name, attr_src)
        raise user_error(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"))

    def _dict_source(self):
        return InstanceDictSource(self.source) if self.source is not None else None

    def setattr(self, tx, name, value):
        setattr_fn, setattr_src = class_method(tx, self, "__setattr__")
        if isinstance(setattr_fn, types.FunctionType):   # a Python __setattr__ (a frozen dataclass's too)
            UserFunctionVariable(fn=setattr_fn, source=setattr_src).call_function(tx, [self, const(name), value], {})
            return
        if setattr_fn is not object.__setattr__:
            raise Unsupported("attribute_write", what=f"{self.cls.__name__}.__setattr__")
        self.generic_setattr(tx, name, value)

    def generic_setattr(self, tx, name, value):
        """object.__setattr__: a property's setter, or the instance's attributes."""
        attr, attr_src = class_method(tx, self, name, pending_ok=True)
        if isinstance(attr, reads.PendingClassAttr):
            if _DICT_OFFSET(self.cls) == 0:
                raise Unsupported("attribute_write", what=f"setting {name!r} of {self.describe()} (no __dict__)")
            attr = MISSING       # plain data set on the class earlier in the trace: the instance's dict takes it
        if isinstance(attr, property):
            if attr.fset is None:
                raise user_error(AttributeError(f"property '{name}' of '{self.cls.__name__}' object has no setter"))
            tx.wrap(attr.fset, AttrSource(attr_src, "fset") if attr_src else None, trusted=True).call_function(
                tx, [self, value], {})
            return
        if attr is not MISSING and is_data_descriptor(tx, attr) and not isinstance(attr, types.MemberDescriptorType):
            if _python_descriptor_method(tx, self, attr, attr_src, "__set__", [self, value]):
                return
            raise Unsupported("unsupported_attr", name=name, obj=f"{self.cls.__name__} (custom descriptor)")
        if isinstance(attr, types.MemberDescriptorType) and not is_heap_type(attr.__objclass__):
            # a member of a C type (`weakref.ref.__callback__`): maybe read-only, which the write-back
            # after the graph would find out outside the program's try blocks
            raise Unsupported("attribute_write", what=f"{name!r} of {self.describe()} (a member of a C type)")
        if not isinstance(attr, types.MemberDescriptorType) and _DICT_OFFSET(self.cls) == 0:
            # no instance dict (object(), a class with __slots__) and no slot of that name
            raise user_error(AttributeError(f"'{self.cls.__name__}' object has no attribute '{name}'"))
        attrs = dict(self.attrs(tx))
        attrs[name] = value
        tx.output.side_effects.store(self, attrs)

    def delattr(self, tx, name):
        delattr_fn, delattr_src = class_method(tx, self, "__delattr__")
        if isinstance(delattr_fn, types.FunctionType):
            UserFunctionVariable(fn=delattr_fn, source=delattr_src).call_function(tx, [self, const(name)], {})
            return
        if delattr_fn is not object.__delattr__:
            raise Unsupported("attribute_write", what=f"{self.cls.__name__}.__delattr__")
        self.generic_delattr(tx, name)

    def generic_delattr(self, tx, name):
        """object.__delattr__: a property's deleter, or an instance attribute (another descriptor's deleter
        breaks)."""
        attr, attr_src = class_method(tx, self, name)
        if isinstance(attr, property):
            if attr.fdel is None:
                raise user_error(AttributeError(f"property '{name}' of '{self.cls.__name__}' object has no deleter"))
            tx.wrap(attr.fdel, AttrSource(attr_src, "fdel") if attr_src else None, trusted=True).call_function(
                tx, [self], {})
            return
        if attr is not MISSING and is_data_descriptor(tx, attr):     # (a slot too: breaks)
            if _python_descriptor_method(tx, self, attr, attr_src, "__delete__", [self]):
                return
            raise Unsupported("attribute_write", what=f"deleting descriptor {name!r} of {self.describe()}")
        try:
            InstanceDictVariable(obj=self).call_method(tx, "__delitem__", [const(name)], {})
        except KeyError:
            raise user_error(AttributeError(f"'{self.cls.__name__}' object has no attribute '{name}'")) from None

    def call_function(self, tx, args, kwargs):
        return self.call_method(tx, "__call__", args, kwargs)

    def reduce_ex(self, tx, protocol):
        """`object.__reduce_ex__(obj, protocol)`, what `copy.copy` and pickle ask, for an instance
        of a plain class as CPython computes it from protocol 2 on: `(copyreg.__newobj__, (cls,),
        state, None, None)`, the state being the instance's `__dict__` itself (None when empty).
        The attribute reads CPython makes (`__reduce__`, `__getstate__`) run through the class's
        `__getattribute__` in the same order; what the class can change about the answer (its own
        `__reduce__`, `__getstate__` or `__getnewargs[_ex]__`, slots, a builtin base, a metaclass)
        breaks instead."""
        cls = self.cls
        proto = protocol.as_python_constant_or_none()
        if type(proto) is not int or proto < 2 or not plain_class(cls):
            raise Unsupported("python_protocol", what=f"object.__reduce_ex__ of {self.describe()}")
        try:
            self.var_getattr(tx, "__reduce__")     # read, then compared on the class (an override is called)
        except Exception as e:
            if not raised_by_user(e, AttributeError):
                raise
        hooks = {"__reduce__": object.__dict__["__reduce__"], "__getstate__": object.__dict__["__getstate__"],
                 "__getnewargs_ex__": MISSING, "__getnewargs__": MISSING}
        getstate = None
        for name, default in hooks.items():
            if class_method(tx, self, name)[0] is not default:
                raise Unsupported("python_protocol", what=f"object.__reduce_ex__ of {self.describe()} ({name})")
            if name == "__getstate__":
                getstate = self.var_getattr(tx, name)
        if not (isinstance(getstate, BoundMethodVariable) and getstate.self_var is self and
                getstate.fn.as_python_constant_or_none() is hooks["__getstate__"]):
            raise Unsupported("python_protocol", what=f"object.__reduce_ex__ of {self.describe()} (__getstate__)")
        # copyreg caches a class's slot names on the class on first use (a class attribute write)
        slotnames, guard = reads.class_dict_entry(tx, cls, "__slotnames__")
        if slotnames is MISSING or guard is None:
            # eager caches them on this call: the next call (guarded) can trace the copy
            raise Unsupported("python_protocol", what=f"the first object.__reduce_ex__ of a {cls.__name__} object "
                              "(copyreg caches the slot names on the class)").depending_on(guard)
        state = InstanceDictVariable(obj=self)
        return TupleVariable(items=(tx.wrap(copyreg.__newobj__, None, trusted=True),
                                    TupleVariable(items=(wrap_class(tx, cls),)),
                                    state if state.truth(tx) else const(None), const(None), const(None)))

    def call_method(self, tx, name, args, kwargs):
        method, method_src = class_method(tx, self, name)
        if isinstance(method, types.FunctionType):
            return UserFunctionVariable(fn=method, source=method_src).call_function(tx, [self] + list(args), kwargs)
        if name == "__eq__" and method is object.__eq__ or name in ("__eq__", "__ne__") and method is MISSING:
            other = args[0]
            same = tx.is_same(self, other)
            return const(same if name == "__eq__" else not same)
        if name == "__str__" and method is object.__str__ and not args and not kwargs:
            # object's __str__ is the class's __repr__ (CPython's PyObject_Repr): one in Python is traced
            # (its result must be a str, else PyObject_Repr's own TypeError: not modelled)
            rep, rep_src = class_method(tx, self, "__repr__")
            if isinstance(rep, types.FunctionType):
                result = UserFunctionVariable(fn=rep, source=rep_src).call_function(tx, [self], {})
                if result.is_python_constant() and type(result.as_python_constant()) is str:
                    return result
        if name in ("__str__", "__repr__") and method in (object.__str__, object.__repr__):
            raise Unsupported("python_protocol", what=f"{name} of {self.describe()}")
        if name == "__len__" and method is MISSING:
            raise user_error(TypeError(f"object of type '{self.cls.__name__}' has no len()"))
        if name == "__contains__" and method is MISSING and len(args) == 1 and not kwargs and (
                _iterates_by_getitem(tx, self) or
                isinstance(class_method(tx, self, "__iter__")[0], types.FunctionType)):
            return const(_iteration_search(tx, self.iterate(tx), args[0]))
        if method is MISSING and name.startswith("__"):
            raise Unsupported("python_protocol", what=f"{name} on {self.describe()}")
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def unpack(self, tx):
        it = self.iterate(tx)
        if not isinstance(it, UserDefinedObjectVariable):
            return tx.unpack_iterable(it)
        # an iterator of the user's (`__iter__` returning self, or another object with `__next__`): its
        # items one `__next__` at a time, as CPython takes them
        from .iterators import next_of
        items = []
        while True:
            try:
                items.append(next_of(tx, it))
            except StopIterationSignal:
                return items

    def truth(self, tx):
        method, _ = class_method(tx, self, "__bool__")
        if isinstance(method, types.FunctionType):
            # CPython takes a bool and nothing else from __bool__
            result = self.call_method(tx, "__bool__", [], {})
            if result.is_python_constant() and type(result.as_python_constant()) is bool:
                return result.as_python_constant()
            if isinstance(result, families.SymNodeVariable) and result.python_type() is bool:
                return result.truth(tx)
            if result.is_python_constant() and type(result.as_python_constant()).__module__ == "builtins":
                raise user_error(TypeError(f"__bool__ should return bool, returned "
                                           f"{type(result.as_python_constant()).__name__}"))
            raise Unsupported("python_protocol", what=f"truth value of {self.describe()} (its __bool__ returned "
                                                      f"{result.describe()})")
        method, _ = class_method(tx, self, "__len__")
        if isinstance(method, types.FunctionType):
            # without __bool__, the truth is len()'s: an index-sized int >= 0, as len() checks it
            return families.BuiltinVariable(fn=len).call_function(tx, [self], {}).truth(tx)
        store = dict_store(tx, self) or set_store(tx, self) or list_store(tx, self)
        if store is not None:
            return store.truth(tx)
        if not isinstance(self.value, torch.nn.Module) and any(
                class_method(tx, self, name)[0] is not MISSING for name in ("__bool__", "__len__")):
            # a `__bool__`/`__len__` written in C (`np.bool_`, an extension type): its answer is not
            # modelled, and the value behind it is not guarded; eager decides
            raise Unsupported("python_protocol", what=f"truth value of {self.describe()}")
        return True

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        # an object of a dict, set or list subclass: its attributes and its items, rebuilt together
        for find_store, key, rebuild in ((dict_store, _DICT_STORE, _rebuild_dict_object),
                                         (set_store, _SET_STORE, _rebuild_set_object),
                                         (list_store, _LIST_STORE, _rebuild_list_object)):
            store = find_store(codegen.tx, self)
            if store is not None:
                attrs = {k: v for k, v in codegen.tx.output.side_effects.get(self).items()
                         if k != key and v is not _MISSING}
                codegen.build_object(rebuild, self.cls, attrs, (store,))
                return
        if self.value is not None:
            if ("folded new object", self) in codegen.tx.output.side_effects.contents:
                # made by a call folded at compile time (`sig.bind(1)`): eager makes a new one each run
                raise Unsupported("unrebuildable", what=f"rebuilding the {self.describe()} a folded call made")
            # a real object reached without a source (a class attribute, a descriptor...)
            if tuple(codegen.tx.output.side_effects.contents.get(self, {})):
                raise Unsupported("unrebuildable", what=f"rebuilding the modified {self.describe()}")
            return codegen.load_const(self.value)
        codegen.build_new_object(self)


def _callable_parameters(tx, cls, index):
    """`Callable[[A, B], R]` (collections.abc's, as annotations of library functions write it): the
    index with its parameter list as a tuple of the same constants (None: another index). The alias
    copies the list's items into its own arguments and keeps no reference to the list, so the fold
    gets what eager's call gets."""
    if cls is not collections.abc.Callable or index.python_type() is not tuple:
        return None
    items = index.get_items(tx)
    if len(items) != 2 or not items[1].is_python_constant() or items[0].python_type() is not list:
        return None
    parameters = items[0].get_items(tx)
    if not all(p.is_python_constant() for p in parameters):
        return None
    return (tuple(p.as_python_constant() for p in parameters), items[1].as_python_constant())


_C_CLASSMETHODS = type(list.__dict__["__class_getitem__"])   # a builtin class's `__class_getitem__`


def _truth_by_type(tx, var, cls) -> bool:
    """`bool(value)` for a constant whose class `cls` may define `__bool__` or `__len__` in Python (a
    metaclass for a class, an enum class for a member): such a method runs on every call, so it is
    traced, not folded; without either a value is true."""
    found = {n: class_lookup(tx, cls, n) for n in ("__bool__", "__len__")}
    name = "__bool__" if found["__bool__"][0] is not MISSING else "__len__"
    method, src = found[name]
    if method is MISSING:
        return True
    if not isinstance(method, types.FunctionType):
        return bool(var.as_python_constant())    # C: folded
    result = UserFunctionVariable(fn=method, source=src).call_function(tx, [var], {})
    value = result.as_python_constant() if result.is_python_constant() else None
    if name == "__bool__" and type(value) is bool:
        return value
    if name == "__len__" and type(value) is int and value >= 0:
        return value > 0
    raise Unsupported("python_protocol", what=f"truth value of {var.describe()} ({name} answered "
                                              f"{result.describe()})")


@dataclasses.dataclass(frozen=True, eq=False)
class EnumVariable(VariableTracker):
    value: Any = None

    def truth(self, tx):
        return _truth_by_type(tx, self, type(self.value))

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        if name == "__class__":     # (`self.__class__(value)` in enum.Flag's operators)
            return wrap_class(tx, type(self.value))
        member = self.value
        if name in ("name", "value") and class_lookup(tx, type(member), name)[0] is enum.Enum.__dict__[name]:
            name = f"_{name}_"      # (enum's own property reading the member's field)
        attr, attr_src = class_lookup(tx, type(member), name)
        if attr is not MISSING and is_python_data_descriptor(attr):
            return bind_descriptor(tx, self, None, attr, name, attr_src)    # a property: run when read
        # a member's own attribute (`_value_` set when the class was made, `mass` by its __init__, or
        # later: `Planet.EARTH.mass = 9.0`, `member._value_ = ...`): read, guarded and written as any
        # object's; its absence is guarded too
        own = reads.instance_attr(tx, member, self.source, name)
        if own is not MISSING:
            return tx.wrap(own, AttrSource(reads.source_of(member, self.source), name))
        if attr is not MISSING and not isinstance(attr, types.FunctionType) and \
                not is_c_level(descriptor_method(tx, attr, "__get__")):
            return bind_descriptor(tx, self, None, attr, name, attr_src)    # a Python descriptor
        return const(getattr(member, name))

    def call_method(self, tx, name, args, kwargs):
        # a protocol method enum.py (or the enum's class) writes in Python (Flag's `__contains__`): traced
        method, src = class_lookup(tx, type(self.value), name)
        if name.startswith("__") and isinstance(method, types.FunctionType):
            return UserFunctionVariable(fn=method, source=src).call_function(tx, [self, *args], kwargs)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        codegen.load_const(self.value)


class _Plain:
    pass


_DICT_OFFSET = type.__dict__["__dictoffset__"].__get__   # 0: the class's instances have no __dict__

# a type's tp_getattro, read from its PyTypeObject (CPython 3.11: the 19th pointer-sized field)
_TP_GETATTRO_OFFSET = 18 * ctypes.sizeof(ctypes.c_void_p)


def _tp_getattro(cls) -> int:
    return ctypes.c_void_p.from_address(id(cls) + _TP_GETATTRO_OFFSET).value


_GENERIC_GETATTRO = _tp_getattro(object)
_LAYOUT_KNOWN = _tp_getattro(list) == _GENERIC_GETATTRO != _tp_getattro(type)


def generic_getattribute(getattribute) -> bool:
    """Whether a C `__getattribute__` found on a class is object's generic lookup, which `generic_getattr`
    models: a C type's slot wrapper over it (list's, BaseException's) is; `threading.local`'s (it reads the
    attributes of the calling thread's own dict, not the object's `__dict__`) is not. A module's is the
    generic lookup followed by its dict's PEP 562 `__getattr__` (module subclasses: torch's op namespaces)."""
    if getattribute is object.__getattribute__ or getattribute is types.ModuleType.__getattribute__:
        return True
    owner = getattr(getattribute, "__objclass__", None)
    return _LAYOUT_KNOWN and type(getattribute) is types.WrapperDescriptorType and isinstance(owner, type) and \
        _tp_getattro(owner) == _GENERIC_GETATTRO


def _class_write_refused(tx, cls, name, value):
    """Why `cls.name = value` is not modelled as a plain write of the class's namespace (None: it is)."""
    if name.startswith("__") and name.endswith("__"):
        return "a special name"
    if not is_heap_type(cls) or builtin_base(cls) is not object:
        return "a builtin class, or one over a builtin base"
    if cls.__flags__ & reads._IMMUTABLE_TYPE:
        # an extension's class made at run time (array.array): type.__setattr__ refuses it, which the
        # write-back after the graph would find out outside the program's try blocks
        return "an immutable type"
    meta = type(cls)
    if class_lookup(tx, meta, "__setattr__")[0] is not type.__dict__["__setattr__"]:
        return "its metaclass's __setattr__"
    meta_attr = class_lookup(tx, meta, name)[0]
    if meta_attr is not MISSING and any(class_lookup(tx, type(meta_attr), hook)[0] is not MISSING
                                        for hook in ("__set__", "__delete__")):
        return "a data descriptor of its metaclass"
    if class_lookup(tx, value.python_type(), "__get__")[0] is not MISSING:
        return "a descriptor"
    return None


def plain_class(cls) -> bool:
    """Classes of class statements over `object` alone, without a metaclass or `__slots__` (an empty
    `__slots__ = ()` of a base adds nothing): their instances have the layout `object.__reduce_ex__`
    expects without asking the class anything (an extension type among the bases makes them larger)."""
    return type(cls) is type and cls.__mro__[-1] is object and cls.__basicsize__ == _Plain.__basicsize__ and \
        not cls.__itemsize__ and all(is_heap_type(k) and k.__dict__.get("__slots__", ()) == ()
                                     for k in cls.__mro__[:-1])


def call_user_dunder(tx, var, name, args):
    """`var.name(*args)` when `var` is an instance of a user class that defines `name` in Python;
    None when it does not, or when the method returns NotImplemented (so the caller tries the
    reflected operator next). A graph break inside the method propagates: the operator must not
    silently fall back to another meaning."""
    if not isinstance(var, UserDefinedObjectVariable):
        return None
    if not isinstance(class_method(tx, var, name)[0], types.FunctionType):
        return None
    result = var.call_method(tx, name, list(args), {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result


@dataclasses.dataclass(frozen=True, eq=False)
class InstanceDictVariable(VariableTracker):
    """`obj.__dict__` of a user object: reads see the instance's attributes; writes set them
    without calling a user `__setattr__`, as writing the real `__dict__` does."""
    obj: UserDefinedObjectVariable = None

    def python_type(self):
        return dict

    def describe(self):
        return f"__dict__ of {self.obj.describe()}"

    def _entries(self, tx) -> dict:
        """name -> tracker of the instance attributes as they are now."""
        entries = {}
        real = self.obj.value
        if real is not None:
            real_dict = real_instance_dict(real)
            if self.obj.source is not None:
                tx.output.guards.add(Guard.dict_keys(instance_dict_source(self.obj), list(real_dict)))
            for name, value in real_dict.items():
                entries[name] = tx.wrap(value, instance_attr_source(self.obj, name))
        for name, value in self.obj.attrs(tx).items():
            if name in _STORES:
                continue
            if value is _MISSING:
                entries.pop(name, None)
            else:
                entries[name] = value
        return entries

    def _lookup(self, tx, name, key, rest):
        """One key (`obj.__dict__.get("x")`), without wrapping every attribute of the object."""
        written = self.obj.attrs(tx)
        found = _MISSING
        if key in written and key not in _STORES:
            found = written[key]
        elif self.obj.value is not None:
            real_dict = real_instance_dict(self.obj.value)
            if self.obj.source is not None:
                tx.output.guards.add(Guard.dict_keys(instance_dict_source(self.obj), list(real_dict)))
            if key in real_dict:
                found = tx.wrap(real_dict[key], instance_attr_source(self.obj, key))
        if name == "__contains__":
            return const(found is not _MISSING)
        if found is not _MISSING:
            return found
        if name == "get":
            return rest[0] if rest else const(None)
        raise user_error(KeyError(key))

    def unpack(self, tx):
        return [const(k) for k in self._entries(tx)]

    def parts(self, tx):
        return (self.obj,)      # (its attributes: the values a rebuilt dict shows)

    def reconstruct(self, codegen):
        # the object's own dict, read as the trace read it (no user __getattribute__ runs)
        codegen.load_callable(object.__getattribute__)
        codegen.reconstruct(self.obj)
        codegen.load_const("__dict__")
        codegen.call(2)

    def truth(self, tx):
        return bool(self._entries(tx))

    def _write(self, tx, key, value):
        """Set (or, with `_MISSING`, delete) one attribute. An object made while tracing has no real
        dict behind its attributes: a deleted key is dropped, so one set again comes last, as in a
        real dict. (A key naming a data descriptor of the class breaks: the attributes are written
        back with `object.__setattr__`, which would call the descriptor.)"""
        if type(key) is not str:
            # a key that is no attribute name (`obj.__dict__[1] = v`): the write-back's setattr refuses it
            raise Unsupported("attribute_write", what=f"writing the non-string key {key!r} in {self.describe()}")
        attr, _ = class_method(tx, self.obj, key)
        if isinstance(attr, types.MemberDescriptorType):
            # (a data descriptor of another kind, a property...: the value stays in the dict, shadowed,
            # and is written back there, write_back.set_instance_attr deciding as the guarded trace did)
            raise Unsupported("attribute_write", what=f"writing {key!r} in {self.describe()} (a slot)")
        attrs = dict(self.obj.attrs(tx))
        if value is _MISSING and self.obj.is_new():
            attrs.pop(key, None)
        else:
            attrs[key] = value
        tx.output.side_effects.store(self.obj, attrs)

    def call_method(self, tx, name, args, kwargs):
        key = args[0].as_python_constant() if args and args[0].is_python_constant() else _MISSING
        if name == "__setitem__" and key is not _MISSING and len(args) == 2 and not kwargs:
            self._write(tx, key, args[1])
            return const(None)
        if name in ("__delitem__", "pop") and key is not _MISSING and len(args) <= (1 if name == "__delitem__" else 2) \
                and not kwargs:
            try:
                value = self._lookup(tx, "__getitem__", key, ())
            except KeyError:
                if len(args) == 2:
                    return args[1]       # pop's default
                raise
            self._write(tx, key, _MISSING)
            return value if name == "pop" else const(None)
        if name == "update" and len(args) == 1 and not kwargs and isinstance(args[0], InstanceDictVariable):
            for k, v in args[0]._entries(tx).items():    # another object's attributes (`copy.copy`)
                self._write(tx, k, v)
            return const(None)
        if name in ("get", "__getitem__", "__contains__") and key is not _MISSING:
            return self._lookup(tx, name, key, args[1:])
        snapshot = DictVariable.create(tx, [(const(k), v) for k, v in self._entries(tx).items()])
        if name in ("get", "__getitem__", "__contains__", "__len__", "keys", "values", "items", "__iter__",
                    "copy", "__eq__"):
            return snapshot.call_method(tx, name, args, kwargs)
        raise Unsupported("python_protocol", what=f"{name} on {self.describe()}")


families.register(UserDefinedObjectVariable, class_attribute, lookup_in_mro, bind_descriptor, dict_store, list_store)
