"""User classes and their instances: attribute reads and writes, properties, class and static
methods, super(), dataclasses, enums, and the dunder protocols (__call__, __getitem__, ...)."""
from __future__ import annotations

import dataclasses
import enum
import inspect
import types
from typing import Any

import torch

from ..graph_break import Unsupported
from .base import VariableTracker
from .constant import const

_MISSING = object()


def wrap_class(tx, cls):
    from ..builder import wrap
    return wrap(tx, cls, None)


def bind_descriptor(tx, obj_var, cls_owner, attr, name, attr_source=None):
    """Turn a class attribute found in the MRO into what `obj.name` evaluates to."""
    from ..builder import wrap
    from .functions import BoundMethodVariable, UserFunctionVariable
    if isinstance(attr, staticmethod):
        return wrap(tx, attr.__func__, None)
    if isinstance(attr, classmethod):
        cls_var = obj_var if isinstance(obj_var, UserDefinedClassVariable) else wrap_class(tx, obj_var.python_type())
        return BoundMethodVariable(fn=wrap(tx, attr.__func__, None), self_var=cls_var)
    if isinstance(attr, property):
        if attr.fget is None:
            raise AttributeError(f"property {name!r} has no getter")
        return wrap(tx, attr.fget, None).call_function(tx, [obj_var], {})
    if isinstance(attr, types.FunctionType):
        if isinstance(obj_var, UserDefinedClassVariable):
            return UserFunctionVariable(fn=attr)
        return BoundMethodVariable(fn=UserFunctionVariable(fn=attr), self_var=obj_var)
    if isinstance(attr, (types.GetSetDescriptorType, types.MemberDescriptorType)) and \
            not isinstance(obj_var, UserDefinedClassVariable):
        # a C-level attribute slot (deque.maxlen, __slots__ entries): read it from the real object
        real = getattr(obj_var, "value", None)
        if real is None:
            raise Unsupported("unsupported_attr", name=name, obj=obj_var.describe())
        from ...guards.source import AttrSource
        return wrap(tx, attr.__get__(real, type(real)), AttrSource(obj_var.source, name) if obj_var.source else None)
    if isinstance(attr, types.ClassMethodDescriptorType):  # dict.fromkeys, int.from_bytes...
        owner = obj_var.as_python_constant_or_none()
        if not isinstance(owner, type):
            owner = obj_var.python_type()
        return wrap(tx, attr.__get__(None, owner), None)
    if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
            not isinstance(obj_var, UserDefinedClassVariable):
        from .builtins import BuiltinVariable
        return BoundMethodVariable(fn=BuiltinVariable(fn=attr), self_var=obj_var)
    if hasattr(type(attr), "__get__") and not isinstance(attr, (type, types.BuiltinFunctionType)) and \
            type(attr).__module__ not in ("builtins",):
        raise Unsupported("unsupported_attr", name=name, obj=f"{cls_owner.__name__} (custom descriptor)")
    return wrap(tx, attr, attr_source)


def lookup_in_mro(tx, obj_var, mro, name):
    for klass in mro:
        if name in klass.__dict__:
            return bind_descriptor(tx, obj_var, klass, klass.__dict__[name], name)
    raise AttributeError(f"'super' object has no attribute '{name}'")


def class_attribute(tx, obj_var, cls, name):
    """`obj.name` resolved on the class (no instance dict)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return bind_descriptor(tx, obj_var, klass, klass.__dict__[name], name)
    raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")


@dataclasses.dataclass(frozen=True, eq=False)
class UserDefinedClassVariable(VariableTracker):
    value: type = None

    def python_type(self):
        return type(self.value)

    def describe(self):
        return f"class {self.value.__qualname__}"

    def as_python_constant(self):
        return self.value

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_const(self.value)

    def var_getattr(self, tx, name):
        from ..builder import wrap
        from ...guards.source import AttrSource
        cls = self.value
        if name in ("__name__", "__qualname__", "__module__"):
            return const(getattr(cls, name))
        if name == "__mro__":
            from .lists import TupleVariable
            return TupleVariable(tuple(wrap_class(tx, c) for c in cls.__mro__))
        for klass in cls.__mro__:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if isinstance(attr, (staticmethod, classmethod, types.FunctionType)):
                    return bind_descriptor(tx, self, klass, attr, name)
                if isinstance(attr, property):
                    return wrap(tx, attr, None)
                value = getattr(cls, name)
                src = AttrSource(self.source, name) if self.source else None
                return wrap(tx, value, src)
        value = getattr(cls, name)  # metaclass attributes; raises AttributeError like eager
        return wrap(tx, value, AttrSource(self.source, name) if self.source else None)

    def call_function(self, tx, args, kwargs):
        cls = self.value
        if issubclass(cls, BaseException):
            from .misc import ExceptionVariable
            return ExceptionVariable(cls=cls, args=tuple(args))
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            from .functions import bind_arguments
            from .lists import NamedTupleVariable
            new = cls.__new__
            defaults = tuple(const(d) for d in (getattr(cls, "_field_defaults", {}) or {}).values())
            defaults = defaults[-len(new.__defaults__ or ()):] if new.__defaults__ else ()
            bound = bind_arguments(tx, new.__code__, cls.__name__, [self] + list(args), kwargs,
                                   tuple(const(d) for d in (new.__defaults__ or ())), {})
            return NamedTupleVariable(tuple(bound[f] for f in cls._fields), cls=cls)
        if issubclass(cls, enum.Enum) and len(args) == 1 and args[0].is_python_constant():
            return const(cls(args[0].as_python_constant()))
        if issubclass(cls, torch.nn.Module):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (creating a module inside "
                                                                          "compiled code)")
        if cls.__new__ is not object.__new__ or (cls.__init__ is not object.__init__ and
                                                 not isinstance(inspect.getattr_static(cls, "__init__"),
                                                                types.FunctionType)):
            if cls.__module__ == "builtins" or not all(
                    isinstance(inspect.getattr_static(c, "__new__", object.__new__), (staticmethod,
                                                                                     types.BuiltinMethodType))
                    for c in cls.__mro__):
                raise Unsupported("unsupported_call", fn=self.describe(), detail=" (custom __new__)")
            if cls.__new__ is not object.__new__:
                raise Unsupported("unsupported_call", fn=self.describe(), detail=" (custom __new__)")
        obj = UserDefinedObjectVariable.create_new(tx, cls)
        init = inspect.getattr_static(cls, "__init__")
        if isinstance(init, types.FunctionType):
            obj.var_getattr(tx, "__init__").call_function(tx, args, kwargs)
        elif args or kwargs:
            raise TypeError(f"{cls.__name__}() takes no arguments")
        return obj


@dataclasses.dataclass(frozen=True, eq=False)
class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class. Attribute writes live in SideEffects (name -> tracker, or
    _MISSING for a deleted attribute); unwritten attributes are read from the real object."""
    value: Any = None     # the real object (None for objects created while tracing)
    cls: type = object

    @staticmethod
    def create_new(tx, cls):
        var = UserDefinedObjectVariable(cls=cls)
        tx.output.side_effects.track(var, {})
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
        from ..builder import wrap
        from ...guards.source import AttrSource
        if name == "__class__":
            return wrap_class(tx, self.cls)
        if name == "__dict__":
            raise Unsupported("unsupported_attr", name=name, obj=self.describe())
        cls = self.cls
        # data descriptors on the class win over the instance dict
        for klass in cls.__mro__:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if isinstance(attr, property) or (hasattr(type(attr), "__set__") and
                                                  not isinstance(attr, types.MemberDescriptorType)):
                    return bind_descriptor(tx, self, klass, attr, name)
                break
        written = self.attrs(tx)
        if name in written:
            if written[name] is _MISSING:
                raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
            return written[name]
        if self.value is not None:
            instance_dict = getattr(self.value, "__dict__", {})
            if name in instance_dict:
                return wrap(tx, instance_dict[name], AttrSource(self.source, name) if self.source else None)
        for klass in cls.__mro__:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                if isinstance(attr, types.MemberDescriptorType) and self.value is not None:
                    return wrap(tx, getattr(self.value, name), AttrSource(self.source, name) if self.source
                                else None)
                return bind_descriptor(tx, self, klass, attr, name)
        getattr_fn = inspect.getattr_static(cls, "__getattr__", None)
        if isinstance(getattr_fn, types.FunctionType):
            from .functions import UserFunctionVariable
            return UserFunctionVariable(fn=getattr_fn).call_function(tx, [self, const(name)], {})
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")

    def setattr(self, tx, name, value):
        setattr_fn = inspect.getattr_static(self.cls, "__setattr__", object.__setattr__)
        if setattr_fn is not object.__setattr__ and not (dataclasses.is_dataclass(self.cls) and
                                                          setattr_fn.__qualname__.endswith("__setattr__") and
                                                          getattr(self.cls, "__dataclass_params__").frozen):
            raise Unsupported("unsupported_op", what=f"{self.cls.__name__}.__setattr__")
        for klass in self.cls.__mro__:
            attr = klass.__dict__.get(name)
            if isinstance(attr, property):
                if attr.fset is None:
                    raise AttributeError(f"property '{name}' of '{self.cls.__name__}' object has no setter")
                from ..builder import wrap
                wrap(tx, attr.fset, None).call_function(tx, [self, value], {})
                return
        attrs = dict(self.attrs(tx))
        attrs[name] = value
        tx.output.side_effects.store(self, attrs)

    def delattr(self, tx, name):
        attrs = dict(self.attrs(tx))
        attrs[name] = _MISSING
        tx.output.side_effects.store(self, attrs)

    def call_function(self, tx, args, kwargs):
        return self.call_method(tx, "__call__", args, kwargs)

    def call_method(self, tx, name, args, kwargs):
        method = inspect.getattr_static(self.cls, name, None)
        if isinstance(method, types.FunctionType):
            from .functions import UserFunctionVariable
            return UserFunctionVariable(fn=method).call_function(tx, [self] + list(args), kwargs)
        if name == "__eq__" and method is object.__eq__ or name in ("__eq__", "__ne__") and method is None:
            other = args[0]
            same = other is self or (self.value is not None and getattr(other, "value", None) is self.value)
            return const(same if name == "__eq__" else not same)
        if name in ("__str__", "__repr__") and method in (object.__str__, object.__repr__):
            raise Unsupported("unsupported_op", what=f"{name} of {self.describe()}")
        if name == "__len__" and method is None:
            raise TypeError(f"object of type '{self.cls.__name__}' has no len()")
        if method is None and name.startswith("__"):
            raise Unsupported("unsupported_op", what=f"{name} on {self.describe()}")
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def unpack(self, tx):
        it = self.call_method(tx, "__iter__", [], {})
        return tx.unpack_iterable(it)

    def truth(self, tx):
        for name in ("__bool__", "__len__"):
            method = inspect.getattr_static(self.cls, name, None)
            if isinstance(method, types.FunctionType):
                result = self.call_method(tx, name, [], {})
                return bool(result.as_python_constant()) if result.is_python_constant() else result.truth(tx)
        return True

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        if self.value is not None:
            # a real object reached without a source (a class attribute, a descriptor...)
            if tuple(codegen.tx.output.side_effects.contents.get(self, {})):
                raise Unsupported("unsupported_op", what=f"rebuilding the modified {self.describe()}")
            return codegen.load_const(self.value)
        codegen.build_new_object(self)


@dataclasses.dataclass(frozen=True, eq=False)
class EnumVariable(VariableTracker):
    value: Any = None

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        return const(getattr(self.value, name))

    def reconstruct(self, codegen):
        codegen.load_const(self.value)


def call_user_dunder(tx, var, name, args):
    """`var.name(*args)` when `var` is an instance of a user class that defines `name` in Python;
    None when it does not, or when the method returns NotImplemented (so the caller tries the
    reflected operator next). A graph break inside the method propagates: the operator must not
    silently fall back to another meaning."""
    if not isinstance(var, UserDefinedObjectVariable):
        return None
    if not isinstance(inspect.getattr_static(var.cls, name, None), types.FunctionType):
        return None
    result = var.call_method(tx, name, list(args), {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        return None
    return result
