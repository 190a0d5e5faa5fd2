"""Callables written in Python: user functions (inlined), functions made while tracing, bound
methods, functools.partial, and methods of constants."""
from __future__ import annotations

import dataclasses
import dis
import functools
import inspect
import types
from typing import Any, Optional

from ...guards.guard import Guard
from ...guards.source import AttrSource, InstanceDictSource, ItemSource
from .. import reads
from ..graph_break import Unsupported, fold, user_error
from ..reads import source_of
from .base import NOT_IMPLEMENTED, NotConstant, VariableTracker, families, python_value
from .constant import const, is_constant_value
from .dicts import DictVariable
from .lists import TupleVariable
from .misc import CellVariable


_STUB_BODY = bytes([dis.opmap["RESUME"], 0, dis.opmap["LOAD_CONST"], 0, dis.opmap["RETURN_VALUE"], 0])
_RUNS_AT_ONCE = ~(inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR |
                  inspect.CO_ITERABLE_COROUTINE)


def _binding_error(code, qualname, args, kwargs, defaults, kwdefaults):
    """CPython's own TypeError for a call whose arguments do not bind (its wording, plurals and names):
    a function with the same parameters and an empty body called with as many placeholders."""
    stub_code = code.replace(co_code=_STUB_BODY, co_consts=(None,), co_exceptiontable=b"", co_linetable=b"",
                             co_flags=code.co_flags & _RUNS_AT_ONCE, co_stacksize=max(code.co_stacksize, 1))
    cells = tuple(types.CellType() for _ in code.co_freevars)
    stub = types.FunctionType(stub_code, {}, code.co_name, tuple(None for _ in defaults), cells)
    stub.__kwdefaults__ = {k: None for k in kwdefaults} or None
    stub.__qualname__ = qualname
    try:
        stub(*[None] * len(args), **{k: None for k in kwargs})
    except TypeError as e:
        return user_error(TypeError(*e.args))
    raise AssertionError(f"{qualname}: arguments that bind to the stub did not bind")   # pragma: no cover


def bind_arguments(tx, code: types.CodeType, fn_name: str, args: list, kwargs: dict,
                   defaults: tuple, kwdefaults: dict) -> dict:
    """Bind call arguments to a code object's parameters (as CPython does), returning name -> tracker.
    `fn_name`: the function's qualified name, as CPython's TypeError names it."""
    nargs = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames
    posonly = code.co_posonlyargcount
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    bound: dict = {}
    positional = list(args)
    for i, name in enumerate(names[:nargs]):
        if i < len(positional):
            bound[name] = positional[i]
    extra = positional[nargs:]
    if extra and not has_varargs:
        raise _binding_error(code, fn_name, args, kwargs, defaults, kwdefaults)
    kw_names = names[nargs:nargs + nkw]
    extra_kw = {}
    for key, value in kwargs.items():
        if key in names[posonly:nargs] or key in kw_names:
            if key in bound:
                raise _binding_error(code, fn_name, args, kwargs, defaults, kwdefaults)
            bound[key] = value
        elif has_varkw:
            extra_kw[key] = value
        else:
            raise _binding_error(code, fn_name, args, kwargs, defaults, kwdefaults)
    first_default = nargs - len(defaults)
    for i, name in enumerate(names[:nargs]):
        if name not in bound:
            if i >= first_default:
                bound[name] = defaults[i - first_default]
            else:
                raise _binding_error(code, fn_name, args, kwargs, defaults, kwdefaults)
    for name in kw_names:
        if name not in bound:
            if name in kwdefaults:
                bound[name] = kwdefaults[name]
            else:
                raise _binding_error(code, fn_name, args, kwargs, defaults, kwdefaults)
    index = nargs + nkw
    if has_varargs:
        bound[names[index]] = TupleVariable(tuple(extra))
        index += 1
    if has_varkw:
        bound[names[index]] = DictVariable.create(tx, [(const(k), v) for k, v in extra_kw.items()])
    return bound


@dataclasses.dataclass(frozen=True, eq=False)
class BaseUserFunction(VariableTracker):
    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def fn_name(self) -> str:
        return self.get_code().co_name

    def bind(self, tx, args, kwargs) -> dict:
        raise NotImplementedError

    def closure_cells(self, tx) -> dict:
        """free var name -> CellVariable."""
        return {}

    def call_function(self, tx, args, kwargs):
        return tx.inline_user_function(self, args, kwargs)

    def python_type(self):
        return types.FunctionType


# the names the function type defines: `hasattr(types.FunctionType, "__annotations__")` is False (the
# metaclass's own `__annotations__` answers for the type object), yet every function has them
_FUNCTION_TYPE_NAMES = frozenset(n for k in types.FunctionType.__mro__ for n in vars(k))


def _function_type_defines(name) -> bool:
    return name in _FUNCTION_TYPE_NAMES


@dataclasses.dataclass(frozen=True, eq=False)
class UserFunctionVariable(BaseUserFunction):
    """A Python function that exists outside the frame; calls are inlined."""
    fn: types.FunctionType = None

    def get_code(self):
        return self.fn.__code__

    def get_globals(self):
        return self.fn.__globals__

    def describe(self):
        return f"function {self.fn.__qualname__}"

    def as_python_constant(self):
        return self.fn

    def bind(self, tx, args, kwargs):
        code = self.fn.__code__
        reads.function_code(tx, self.fn, self.source)
        positional = code.co_varnames[len(args):code.co_argcount]
        keyword = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        d, k = reads.function_defaults(tx, self.fn, self.source, any(n not in kwargs for n in positional),
                                       any(n not in kwargs for n in keyword))
        return bind_arguments(tx, code, self.fn.__qualname__, args, kwargs, d, k)

    def closure_cells(self, tx):
        cells = {}
        fn_source = source_of(self.fn, self.source)   # cells are guarded through the function, sourced or not
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())):
            src = ItemSource(AttrSource(fn_source, "__closure__"), i)
            cells[name] = CellVariable.existing(tx, cell, src)
        return cells

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            value = reads.name_attr(tx, self.fn, self.source, name)
            if value is not reads.MISSING:
                return const(value)
        if not _function_type_defines(name):
            # an entry of the function's own __dict__ (`fn.scale = 2` set elsewhere): read, its absence
            # guarded, and its value guarded through the dict
            own = reads.instance_attr(tx, self.fn, self.source, name)
            if own is reads.MISSING:
                raise user_error(AttributeError(f"'function' object has no attribute '{name}'"))
            return tx.wrap(own, ItemSource(InstanceDictSource(source_of(self.fn, self.source)), name))
        if hasattr(self.fn, name):
            value = getattr(self.fn, name)
            if type(value) is types.MethodWrapperType and value.__self__ is self.fn:
                # a slot of the function object itself (`fn.__get__`), a new object bound to it on
                # every read: the read runs as Python (wrapping it would read it here again, forever)
                raise Unsupported("unsupported_attr", name=name, obj=f"function {self.fn.__qualname__}")
            return tx.wrap(value, AttrSource(self.source, name) if self.source else None)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_const(self.fn)


@dataclasses.dataclass(frozen=True, eq=False)
class NestedFunctionVariable(BaseUserFunction):
    """A function created by MAKE_FUNCTION while tracing."""
    code: types.CodeType = None
    f_globals: dict = None
    qualname: str = ""
    defaults: tuple = ()            # trackers
    kwdefaults: tuple = ()          # (name, tracker) pairs
    closure: tuple = ()             # CellVariables, in co_freevars order
    wrapped: Optional[VariableTracker] = None  # set by functools.wraps
    assigned: tuple = ()            # (name, constant) pairs functools.wraps copied from the wrapped function
    annotations: Optional[VariableTracker] = None  # MAKE_FUNCTION's (name, value, ...) tuple

    def parts(self, tx):
        cells = tx.output.side_effects.cells
        return self.defaults + tuple(d for _, d in self.kwdefaults) + \
            tuple(cells[cell] for cell in self.closure if cell in cells) + tuple(self.attrs(tx).values())

    def attrs(self, tx) -> dict:
        """The attributes the trace set on the function (its `__dict__`, in insertion order)."""
        return tx.output.side_effects.contents.get(self, {})

    def setattr(self, tx, name, value):
        """`f.name = value`: an entry of the function's own `__dict__` (the function was made in this
        frame: nothing else sees it before the trace rebuilds it). A name the function type defines
        (`__defaults__`, `__name__`, `__dict__`...) is a descriptor of the type, not modelled."""
        if self.wrapped is not None or _function_type_defines(name):
            raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {self.describe()}")
        attrs = dict(self.attrs(tx))
        attrs[name] = value
        tx.output.side_effects.store(self, attrs)

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def describe(self):
        return f"function {self.qualname}"

    def bind(self, tx, args, kwargs):
        return bind_arguments(tx, self.code, self.qualname, args, kwargs, self.defaults, dict(self.kwdefaults))

    def closure_cells(self, tx):
        return dict(zip(self.code.co_freevars, self.closure))

    def var_getattr(self, tx, name):
        attrs = self.attrs(tx)
        if name in attrs:     # (only names the function type does not define are set there)
            return attrs[name]
        for assigned_name, value in self.assigned:
            if name == assigned_name:
                return const(value)
        if name == "__name__":
            return const(self.code.co_name)
        if name == "__qualname__":
            return const(self.qualname)
        if name == "__code__":
            return const(self.code)
        if name == "__wrapped__" and self.wrapped is not None:
            return self.wrapped
        if name == "__annotations__":   # a dict owned by the real function: read it from the real one
            raise Unsupported("unsupported_attr", name=name, obj=self.describe())
        if name == "__module__":
            return const(self.f_globals.get("__name__"))
        if name == "__doc__":
            return const(self.code.co_consts[0] if self.code.co_consts and isinstance(self.code.co_consts[0], str)
                         else None)
        if self.wrapped is None and not _function_type_defines(name):
            # neither the type's nor in the function's own __dict__ (all of it is `attrs`)
            raise user_error(AttributeError(f"'function' object has no attribute '{name}'"))
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        codegen.make_function(self)


_BOUND_SLOT_TYPES = {types.WrapperDescriptorType: types.MethodWrapperType,
                     types.MethodDescriptorType: types.BuiltinMethodType}


@dataclasses.dataclass(frozen=True, eq=False)
class BoundMethodVariable(VariableTracker):
    """`obj.method`: a function (tracker, or a TensorMethod) bound to a self tracker."""
    fn: Any = None
    self_var: VariableTracker = None

    def parts(self, tx):
        return (self.self_var,)

    def describe(self):
        return f"bound method {getattr(self.fn, 'name', None) or self.fn.describe()}"

    def python_type(self):
        # a C slot bound to an instance is what its descriptor's __get__ makes (`object().__init__`)
        return _BOUND_SLOT_TYPES.get(type(self._slot()), types.MethodType)

    def _slot(self):
        """The method_descriptor / wrapper_descriptor this binds, or None."""
        fn = self.fn.as_python_constant_or_none() if isinstance(self.fn, VariableTracker) else None
        return fn if type(fn) in _BOUND_SLOT_TYPES else None

    def call_function(self, tx, args, kwargs):
        if isinstance(self.fn, VariableTracker):
            return self.fn.call_function(tx, [self.self_var] + list(args), kwargs)
        result = self.fn(tx, self.self_var, list(args), kwargs)
        if result is NOT_IMPLEMENTED:   # `s.__eq__(3)` called by the program: the value itself
            return const(NotImplemented)
        return result

    def var_getattr(self, tx, name):
        if name == "__self__":
            return self.self_var
        if name == "__func__" and isinstance(self.fn, VariableTracker):
            return self.fn
        if name == "__name__":
            if isinstance(self.fn, (UserFunctionVariable, NestedFunctionVariable)):
                return self.fn.var_getattr(tx, name)    # the function's own (renamed, it is not its code's)
            return const(self.method_name())
        return super().var_getattr(tx, name)

    def method_name(self) -> str:
        if getattr(self.fn, "name", None):  # a TensorMethod
            return self.fn.name
        if hasattr(self.fn, "fn_name"):
            return self.fn.fn_name()
        if self.fn.is_python_constant():
            return self.fn.as_python_constant().__name__
        raise Unsupported("python_protocol", what=f"the name of {self.describe()}")

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        if isinstance(self.fn, (UserFunctionVariable, NestedFunctionVariable)) or \
                (isinstance(self.fn, VariableTracker) and
                 isinstance(self.fn.as_python_constant_or_none(), types.FunctionType)):
            # bind the very function: `self.name` may find another one (`super().m` rebuilt as
            # `self.m` calls the subclass's m) or run a user __getattribute__/__getattr__
            codegen.load_callable(types.MethodType)
            codegen.reconstruct(self.fn)
            codegen.reconstruct(self.self_var)
            codegen.call(2)
            return
        codegen.reconstruct(self.self_var)
        codegen.load_attr(self.method_name())


@dataclasses.dataclass(frozen=True, eq=False)
class PartialVariable(VariableTracker):
    """functools.partial(fn, *args, **keywords). `args` is a tuple tracker and `keywords` a dict
    tracker: the partial's own objects, so `p.args is p.args` and `p.keywords[k] = v` changes later
    calls and the repr, as in CPython."""
    fn: VariableTracker = None
    args: VariableTracker = None
    keywords: VariableTracker = None
    cls: type = functools.partial   # (or functools.partial's twin from another import of `_functools`)

    @staticmethod
    def create(tx, fn, args, kwargs):
        """`functools.partial(fn, *args, **kwargs)` made while tracing: a partial of such a partial
        is flattened (CPython does so for a partial without instance attributes, and one made while
        tracing has none); one read from the frame may have some, which is not modelled."""
        if isinstance(fn, PartialVariable):
            if fn.source is not None:
                raise Unsupported("unsupported_call", fn="functools.partial",
                                  detail=" of a partial read from the frame (it may have instance attributes)")
            if not all(k.is_python_constant() for k, _ in fn.keywords.pairs(tx)):
                raise Unsupported("unsupported_call", fn="functools.partial", detail=" of a partial with such keywords")
            args = tx.unpack_iterable(fn.args) + list(args)
            kwargs = {**{k.as_python_constant(): v for k, v in fn.keywords.pairs(tx)}, **kwargs}
            fn = fn.fn
        keywords = DictVariable.create(tx, [(const(k), v) for k, v in kwargs.items()])
        return PartialVariable(fn=fn, args=TupleVariable(tuple(args)), keywords=keywords)

    def parts(self, tx):
        return (self.fn, self.args, self.keywords)

    def python_type(self):
        return self.cls

    def call_function(self, tx, args, kwargs):
        merged = {}
        for k, v in self.keywords.pairs(tx):
            if not (k.is_python_constant() and isinstance(k.as_python_constant(), str)):
                raise Unsupported("unsupported_call", fn="functools.partial",
                                  detail=" with a keyword that is not a string")
            merged[k.as_python_constant()] = v
        merged.update(kwargs)
        return self.fn.call_function(tx, tx.unpack_iterable(self.args) + list(args), merged)

    def var_getattr(self, tx, name):
        if name == "func":
            return self.fn
        if name == "args":
            return self.args
        if name == "keywords":
            return self.keywords
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_callable(_rebuild_partial)
        for part in self.parts(codegen.tx):
            codegen.reconstruct(part)
        codegen.call(3)


def _rebuild_partial(fn, args, keywords):
    """A partial holding these very objects (its `keywords` is `keywords` itself), made at run time."""
    partial = functools.partial(fn)
    partial.__setstate__((fn, args, keywords, None))
    return partial


@dataclasses.dataclass(frozen=True, eq=False)
class WrapsDecorator(VariableTracker):
    """The decorator returned by functools.wraps(wrapped)."""
    wrapped: VariableTracker = None

    def call_function(self, tx, args, kwargs):
        # functools.update_wrapper writes the wrapper's attributes: modelled on a function made in this
        # frame only (a real function would change for everyone, the trace would not replay that)
        if len(args) != 1 or kwargs or not isinstance(args[0], NestedFunctionVariable) or args[0].wrapped or \
                args[0].attrs(tx):
            raise Unsupported("unsupported_call", fn="functools.wraps(...)", detail=" on this function")
        return dataclasses.replace(args[0], wrapped=self.wrapped, assigned=_wrapper_assignments(tx, self.wrapped))

    def reconstruct(self, codegen):   # (at a break, the decorator made at run time: update_wrapper runs there)
        codegen.load_callable(functools.wraps)
        codegen.reconstruct(self.wrapped)
        codegen.call(1)


def _wrapper_assignments(tx, wrapped):
    """What functools.update_wrapper copies from `wrapped` (its WRAPPER_ASSIGNMENTS that are
    constants, guarded), checking that its __dict__, which update_wrapper would merge, is empty."""
    if isinstance(wrapped, NestedFunctionVariable) and not wrapped.wrapped and not wrapped.attrs(tx):
        return tuple((name, wrapped.var_getattr(tx, name).as_python_constant())
                     for name in ("__module__", "__name__", "__qualname__", "__doc__"))
    if isinstance(wrapped, UserFunctionVariable):
        fn, src = wrapped.fn, source_of(wrapped.fn, wrapped.source)
        if reads.instance_dict(fn):
            raise Unsupported("unsupported_call", fn="functools.wraps(...)", detail=" of a function with attributes")
        reads.record(tx, Guard.length(InstanceDictSource(src), 0))
        out = []
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            value = tx.wrap(getattr(fn, name), AttrSource(src, name))   # guarded: the attribute can be rebound
            out.append((name, value.as_python_constant()))
        return tuple(out)
    real = wrapped.as_python_constant_or_none()
    if isinstance(real, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
        # a C function (`torch.add`, `len`): its names cannot be rebound and it has no __dict__
        return tuple((name, getattr(real, name, None)) for name in ("__module__", "__name__", "__qualname__", "__doc__")
                     if hasattr(real, name))
    raise Unsupported("unsupported_call", fn="functools.wraps(...)", detail=f" of {wrapped.describe()}")


@dataclasses.dataclass(frozen=True, eq=False)
class _RealFunctionVariable(VariableTracker):
    """A real function the trace never steps into; what a call does is the subclass's."""
    fn: object = None

    def describe(self):
        return f"function {getattr(self.fn, '__qualname__', self.fn)}"

    def as_python_constant(self):
        return self.fn


@dataclasses.dataclass(frozen=True, eq=False)
class SkippedFunctionVariable(_RealFunctionVariable):
    """A function that must run as normal Python (bytegraph.disable, or marked by torch)."""

    def call_function(self, tx, args, kwargs):
        raise Unsupported("skipped_function", fn=self.describe())


@dataclasses.dataclass(frozen=True, eq=False)
class ConstantResultFunctionVariable(_RealFunctionVariable):
    """A function marked `assume_constant_result` (a plain function, or its functools.lru_cache
    wrapper): called with constant arguments it runs now, at compile time, as eager would at this
    point, and its result is a constant of the trace. Other arguments or results break (a result
    that is not a constant value is found by the call, so the function then runs again natively)."""

    def call_function(self, tx, args, kwargs):
        try:
            real_args = [python_value(tx, a) for a in args]
            real_kwargs = {k: python_value(tx, v) for k, v in kwargs.items()}
        except NotConstant:
            raise Unsupported("unsupported_call", fn=self.describe(),
                              detail=" (a constant-result function called with values that are not constants)") \
                from None
        result = fold(self.fn, *real_args, **real_kwargs)
        if not is_constant_value(result):
            raise Unsupported("unsupported_call", fn=self.describe(),
                              detail=f" (a constant-result function returned a {type(result).__name__})")
        return const(result)


families.register(BoundMethodVariable, UserFunctionVariable)


@dataclasses.dataclass(frozen=True, eq=False)
class CompiledFunctionVariable(VariableTracker):
    """A function made by `bytegraph.compile`, called from compiled code: the call is traced as the
    function it wraps, so its work joins the caller's graph under the caller's compile settings (as
    torch.compile treats a compiled function called from compiled code). The object itself stays
    the wrapper (always read from its source): stored or returned, it is the real compiled function."""
    wrapper: object = None

    def describe(self):
        return f"compiled function {getattr(self.wrapper, '__qualname__', '?')}"

    def call_function(self, tx, args, kwargs):
        inner = self.wrapper.__dict__["_orig_fn"]
        return tx.wrap(inner, AttrSource(self.source, "_orig_fn")).call_function(tx, args, kwargs)


@dataclasses.dataclass(frozen=True, eq=False)
class CompileFunctionVariable(_RealFunctionVariable):
    """`bytegraph.compile` itself, called from compiled code on a function with constant settings: the
    result is a new compiled function (NewCompiledFunctionVariable). Other calls (a module, the decorator
    form) run as Python."""

    def call_function(self, tx, args, kwargs):
        if len(args) != 1 or not isinstance(args[0], (BaseUserFunction, BoundMethodVariable)) or \
                not all(v.is_python_constant() for v in kwargs.values()):
            raise Unsupported("skipped_function", fn=self.describe())
        settings = {k: v.as_python_constant() for k, v in kwargs.items()}
        try:
            self.fn(_checked_by_compile, **settings)   # settings it rejects: it raises, run as Python
        except Exception:  # noqa: BLE001
            raise Unsupported("skipped_function", fn=self.describe()) from None
        return NewCompiledFunctionVariable(compile_fn=self.fn, fn=args[0],
                                           settings=tuple((k, v.as_python_constant()) for k, v in kwargs.items()))


def _checked_by_compile():
    """Compiled once per traced `compile(...)` call, only for `compile` to check its settings."""


@dataclasses.dataclass(frozen=True, eq=False)
class NewCompiledFunctionVariable(VariableTracker):
    """What `bytegraph.compile(fn, ...)` returned inside compiled code: called there, traced as `fn`
    (like a compiled function made before the frame, see CompiledFunctionVariable); leaving the graph,
    made again by calling `compile` with the same arguments, a new wrapper as eager makes one."""
    compile_fn: object = None
    fn: VariableTracker = None
    settings: tuple = ()

    def describe(self):
        return f"compiled function of {self.fn.describe()}"

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, args, kwargs)

    def reconstruct(self, codegen):
        codegen.load_callable(self.compile_fn)
        codegen.reconstruct(self.fn)
        for _, value in self.settings:
            codegen.load_const(value)
        codegen.call(1 + len(self.settings), tuple(k for k, _ in self.settings))


def context_as_decorator(ctx, args, kwargs):
    """`@ctx` on a function (`@torch.inference_mode()`, `@record_function("x")`): each call of the
    function runs inside a fresh block of ctx. Any other call of the manager breaks."""
    if len(args) == 1 and not kwargs and isinstance(args[0], BaseUserFunction):
        return families.ContextWrapped(fn=args[0], ctx=ctx)
    raise Unsupported("unsupported_call", fn=ctx.describe(), detail="")
