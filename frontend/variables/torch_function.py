"""Tensor subclasses with a `__torch_function__` of their own: their hook traced as Python.

Compile time only. In eager, a torch function, a tensor method, operator or attribute applied to a
tensor whose class overrides `__torch_function__` does not run the op: torch collects the
"overloaded" arguments (each argument, or item of a list/tuple argument, whose type has a
`__torch_function__` other than `torch._C._disabled_torch_function_impl`; exact `torch.Tensor`s are
not), one per type, a subclass before its bases, and calls each type's hook as
`hook(func, types, args, kwargs)` until one answers something other than NotImplemented (none: a
TypeError). `func` is what the program called (`torch.add`, `torch.Tensor.add`,
`torch.Tensor.__add__`, a property's `__get__`...). The trace does the same with trackers: the
hook (a classmethod, a plain method bound to the argument, a staticmethod) is inlined like any
user function, and whatever it calls runs as the trace models it.

`torch.Tensor.__torch_function__` (what `super().__torch_function__` reaches, and what a subclass
without a hook of its own answers with) is modelled here: NotImplemented unless the class is a
subclass of every type, else `func` under `DisableTorchFunctionSubclass` with its tensor results
made the class (`as_subclass`, a graph node: an alias, as eager's), except for the getters of
`torch.overrides.get_default_nowrap_functions()`.

The graph then holds only ops run with subclass dispatch off (graph nodes enter and leave that
state, see `DisableTorchFunctionVariable`), on the very tensor objects eager has: it is run as
recorded (an `eager_autograd` backend: builder refuses these tensors otherwise), so results leave it
as the class eager gives them. An op the trace would put in the graph on such a tensor with dispatch
on, by a path that did not come here, is a graph break (OutputGraph._result_subclass), never a
silent skip of the hook.
"""
from __future__ import annotations

import dataclasses
import types

import torch

from ...guards.source import AttrSource, ConstSource
from ...probe import class_dict_lookup, class_mro, class_namespace
from .. import reads
from ..graph_break import Unsupported, user_error
from .base import VariableTracker, families
from .constant import const
from .dicts import DictVariable
from .lists import BaseSequence, ListVariable, NamedTupleVariable, TupleVariable
from .tensor import TensorVariable
from .torch import TF_ENABLED

DEFAULT_HOOK = torch.Tensor.__dict__["__torch_function__"]          # a classmethod
DISABLED_HOOK = torch._C._disabled_torch_function_impl
_NOWRAP = torch.overrides.get_default_nowrap_functions()
_DEFAULT_DISPATCH = torch.Tensor.__dict__["__torch_dispatch__"]


def _ignored_functions() -> frozenset:
    """torch functions that never dispatch to `__torch_function__` (torch.is_tensor, torch.typename...)."""
    ignored = []
    for fn in torch.overrides.get_ignored_functions():
        try:
            hash(fn)
        except TypeError:
            continue
        ignored.append(fn)
    return frozenset(ignored)


_IGNORED = _ignored_functions()


# class-body names that say nothing about what a tensor of the class does once it exists
_CLASS_BOOKKEEPING = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
                                "__slots__", "__init__", "__new__", "__firstlineno__", "__static_attributes__",
                                "__orig_bases__", "__parameters__", "__torch_function__"})


def user_classes_below_tensor(cls: type) -> list:
    """The user classes of a tensor subclass's MRO (below torch.Tensor, outside torch)."""
    classes = []
    for klass in class_mro(cls):
        if klass is torch.Tensor:
            break
        if not str(klass.__module__).startswith("torch"):
            classes.append(klass)
    return classes


def replaced_names(cls: type) -> frozenset:
    """The torch.Tensor attributes (methods, properties, operators) that a user class in `cls`'s MRO
    defines again. Reading one on a tensor of `cls` finds the class's own (no `__torch_function__`
    runs); the graph names torch.Tensor's explicitly where it applies one of them (OutputGraph._create).
    The class namespaces are guarded with the tensor (builder)."""
    if cls is torch.Tensor:
        return frozenset()
    return frozenset(name for klass in user_classes_below_tensor(cls) for name in class_namespace(klass)
                     if name not in _CLASS_BOOKKEEPING and hasattr(torch.Tensor, name))


# torch.Tensor attributes that compiling reads on the real tensors (fake conversion, guards, aliasing
# checks): every C attribute, and the metadata methods. A class replacing one would run user code there.
# Not `shape` and `ndim`: compiling (torch's fake conversion too) asks `size()` and `dim()` instead, so a
# class may replace those two (a property caching the shape) and have its own traced.
COMPILER_READS = frozenset(
    {name for name, attr in vars(torch._C.TensorBase).items()
     if isinstance(attr, types.GetSetDescriptorType) and name not in ("shape", "ndim")} |
    {"size", "stride", "dim", "storage_offset", "untyped_storage", "storage", "_typed_storage", "_is_view",
     "is_inference", "is_conj", "is_neg", "numel", "nelement", "data_ptr", "element_size", "is_contiguous",
     "is_floating_point", "is_complex", "dense_dim", "sparse_dim", "get_device", "is_shared", "is_pinned",
     "_is_zerotensor", "is_set_to", "has_names", "is_coalesced", "_version"})


def own_hook(cls) -> bool:
    """`cls` (a tensor subclass) has a `__torch_function__` other than torch.Tensor's and the disabled one."""
    hook = class_dict_lookup(cls, "__torch_function__")
    return hook is not DEFAULT_HOOK and hook is not DISABLED_HOOK


def hook_refusal(cls) -> str | None:
    """Why tensors of `cls`, a subclass with its own `__torch_function__`, cannot be traced (None: they
    can). Traced exactly: a hook that is a Python function (as a classmethod, a method or a
    staticmethod), no `__torch_dispatch__` of its own (it runs below the graph's ops), no `__slots__`
    (values the trace would not carry over to results)."""
    name = cls.__name__
    hook = class_dict_lookup(cls, "__torch_function__")
    fn = hook.__func__ if isinstance(hook, (classmethod, staticmethod)) else hook
    if not isinstance(fn, types.FunctionType):
        return f"a {name}, whose __torch_function__ is a {type(hook).__name__}"
    if class_dict_lookup(cls, "__torch_dispatch__") not in (None, _DEFAULT_DISPATCH):
        return f"a {name}, which has a __torch_dispatch__ of its own"
    for klass in cls.__mro__:
        if klass is torch.Tensor:
            break
        if vars(klass).get("__slots__"):
            return f"a tensor of {name}, whose class has __slots__"
    return None


def _overloaded_type(var):
    """The type of an argument that takes part in dispatch, or None."""
    if isinstance(var, TensorVariable):
        cls = var.cls
        if cls is torch.Tensor or class_dict_lookup(cls, "__torch_function__") is DISABLED_HOOK:
            return None
        return cls
    if isinstance(var, families.UserDefinedObjectVariable):
        # an object of the program's own class answering torch functions (a tensor-like wrapper)
        cls = var.python_type()
        hook = class_dict_lookup(cls, "__torch_function__")
        return None if hook is None or hook is DISABLED_HOOK else cls
    return None


def _cls(var):
    return var.cls if isinstance(var, TensorVariable) else var.python_type()


def overloaded(tx, args, kwargs) -> list:
    """The overloaded arguments in torch's order: one per type, by first appearance, a subclass moved
    before the first of its bases (positional arguments, then keyword values; one level into lists
    and tuples)."""
    found = []

    def add(var):
        cls = _overloaded_type(var)
        if cls is None or any(_cls(v) is cls for v in found):
            return
        for i, other in enumerate(found):
            if issubclass(cls, _cls(other)):
                found.insert(i, var)
                return
        found.append(var)

    for var in list(args) + list(kwargs.values()):
        if isinstance(var, BaseSequence) and var.python_type() in (list, tuple):
            for item in var.get_items(tx):
                add(item)
        else:
            add(var)
    return found


def needs_dispatch(tx, args, kwargs) -> bool:
    """Subclass dispatch is on and an argument's type has a hook of its own."""
    return tx.output.torch_function_state == TF_ENABLED and \
        any(own_hook(_cls(v)) for v in overloaded(tx, args, kwargs))


def _class(tx, cls):
    """A class dispatch hands to the hook (as `cls`, in `types`): read through a source, so what the hook
    reads or changes on it (`cls.calls += 1`) is guarded and replayed."""
    return tx.wrap(cls, ConstSource(cls))


def _hook_of(tx, var):
    """`type(var).__torch_function__` as torch reads it from the argument (a classmethod bound to the class,
    a plain function bound to the argument itself); the lookup is guarded."""
    cls = _cls(var)
    hook, src = reads.class_lookup(tx, cls, "__torch_function__")
    if hook is DEFAULT_HOOK:
        return families.BoundMethodVariable(fn=DefaultHookVariable(), self_var=_class(tx, cls))
    refusal = hook_refusal(cls)
    if refusal:
        raise Unsupported("torch_value", what=refusal)
    return families.bind_descriptor(tx, var, None, hook, "__torch_function__", src)


def dispatch(tx, func, args, kwargs):
    """`func(*args, **kwargs)` as eager runs it when an argument's type has a hook of its own: the hooks'
    answer. None: no dispatch (the caller runs the op as usual)."""
    if not needs_dispatch(tx, args, kwargs):
        return None
    if func is None:
        raise Unsupported("torch_value", what="a call on a tensor of a class with its own __torch_function__ that "
                          "eager does not hand to it")
    try:
        if func in _IGNORED:
            return None
    except TypeError:
        pass
    if isinstance(func, types.FunctionType):
        # torch's Python functions (F.relu, Tensor.split, Tensor.__rsub__...) hand dispatch the arguments
        # their own code chooses (`inplace=inplace`, `dim=dim`): what they pass is measured
        measured = _measured_call(tx, func, args, kwargs)
        if measured is None:
            return None
        func, args, kwargs = measured
        kwargs_var = DictVariable.create(tx, [(const(k), v) for k, v in kwargs.items()])
    else:   # a C function or method hands None when called without keywords
        kwargs_var = DictVariable.create(tx, [(const(k), v) for k, v in kwargs.items()]) if kwargs else const(None)
    found = overloaded(tx, args, kwargs)
    types_var = TupleVariable(tuple(_class(tx, _cls(v)) for v in found))
    func_var = tx.wrap(func, None, trusted=True)
    args_var = TupleVariable(tuple(args))
    for var in found:
        result = _hook_of(tx, var).call_function(tx, [func_var, types_var, args_var, kwargs_var], {})
        if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
            return result
    names = [_cls(v).__name__ for v in found]
    raise user_error(TypeError(f"no implementation found for '{getattr(func, '__qualname__', func)}' on types "
                               f"that implement __torch_function__: {names}"))


class _Unmeasurable(Exception):
    pass


def _measured_call(tx, func, args, kwargs):
    """What torch's Python function `func` hands to dispatch when called with these arguments: its
    `func`, args and kwargs, found by calling it on stand-ins (an empty probe tensor per tensor
    argument, whose hook records the call and stops it; constants as they are) and mapping the
    stand-ins back to the trackers. No user code runs; anything else is a graph break."""
    trackers = {}

    def real(var):
        if isinstance(var, TensorVariable):
            stand_in = torch.empty(0) if var.cls is torch.Tensor else torch.empty(0).as_subclass(_Probe)
            trackers[id(stand_in)] = (stand_in, var)
            return stand_in
        if isinstance(var, BaseSequence) and var.python_type() in (list, tuple):
            return var.python_type()(real(i) for i in var.get_items(tx))
        if var.is_python_constant() and type(var.as_python_constant()) in _PLAIN_CONSTANTS:
            return var.as_python_constant()
        raise _Unmeasurable()

    def back(value):
        if isinstance(value, torch.Tensor):
            found = trackers.get(id(value))
            if found is None or found[0] is not value:
                raise _Unmeasurable()
            return found[1]
        if type(value) in (list, tuple):
            items = [back(v) for v in value]
            return TupleVariable(tuple(items)) if type(value) is tuple else ListVariable.create(tx, items)
        if type(value) in _PLAIN_CONSTANTS:
            return const(value)
        raise _Unmeasurable()

    try:
        real_args = [real(a) for a in args]
        real_kwargs = {k: real(v) for k, v in kwargs.items()}
        with tx.output.tracing_state():
            func(*real_args, **real_kwargs)
        return None     # it never dispatches (torch.overrides.is_tensor_like)
    except _Seen as seen:
        # only a function dispatching itself first is modelled: one reaching the hook through an op it
        # calls would go on with Python of its own after the hook's answer
        if seen.func is func:
            try:
                return seen.func, [back(a) for a in seen.args], {k: back(v) for k, v in (seen.kwargs or {}).items()}
            except _Unmeasurable:
                pass
    except Exception:  # noqa: BLE001 - not measurable (it checks its arguments first): not modelled
        pass
    raise Unsupported("torch_value", what=f"{getattr(func, '__qualname__', func)} on a tensor of a class with its "
                      "own __torch_function__ (the arguments it hands to it)")


_PLAIN_CONSTANTS = (int, float, bool, complex, str, type(None), torch.dtype, torch.device, torch.layout,
                    torch.memory_format, type(Ellipsis), slice)


_PROTOCOL_CALLS = {   # the special methods whose `func` is measured, with an operand each
    **{f"__{op}__": (1,) for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
                                    "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge")},
    **{f"__r{op}__": (1,) for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
                                     "xor", "lshift", "rshift")},
    **{f"__i{op}__": (1,) for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                                     "lshift", "rshift")},
    "__neg__": (), "__pos__": (), "__invert__": (), "__abs__": (), "__getitem__": (0,), "__setitem__": (0, 1.0),
    "__len__": (), "__contains__": (1,), "__matmul__": (torch.ones(1),), "__rmatmul__": (torch.ones(1),),
}


class _Seen(Exception):
    def __init__(self, func, args=(), kwargs=None):
        self.func, self.args, self.kwargs = func, args, kwargs


class _Probe(torch.Tensor):
    """A stand-in whose hook records what dispatch hands it and stops the call."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise _Seen(func, args, kwargs)


def _measured_protocol_funcs() -> dict:
    """What eager's dispatch passes as `func` for each special method of _PROTOCOL_CALLS (`x + 1` passes
    `torch.Tensor.add`, `1 - x` `torch.Tensor.__rsub__`...): measured once on a probe subclass whose hook
    records it and stops the call. A name that never reached the hook maps to None."""
    class Probe(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            raise _Seen(func)

    funcs = {}
    for name, operands in _PROTOCOL_CALLS.items():
        probe = torch.ones(1).as_subclass(Probe)
        try:
            getattr(probe, name)(*operands)
            funcs[name] = None
        except _Seen as seen:
            funcs[name] = seen.func
        except Exception:   # noqa: BLE001 - not dispatched (a Python-level check failed first)
            funcs[name] = None
    return funcs


_PROTOCOL_FUNCS = {}


def method_func(name):
    """The `func` eager's dispatch passes for the tensor method or special method `name`."""
    if name in _PROTOCOL_CALLS:
        if not _PROTOCOL_FUNCS:
            _PROTOCOL_FUNCS.update(_measured_protocol_funcs())
        return _PROTOCOL_FUNCS[name]
    return getattr(torch.Tensor, name, None)


def _takes_part(tx, var) -> bool:
    """Would `var` make torch dispatch (`has_torch_function`), dispatch being on?"""
    if isinstance(var, TensorVariable):
        return _overloaded_type(var) is not None
    if var.is_python_constant() and type(var.as_python_constant()) in (int, float, bool, complex, str, type(None)):
        return False
    raise Unsupported("torch_value", what=f"asking whether {var.describe()} has a __torch_function__")


def _has_torch_function(tx, args, kwargs):
    if len(args) != 1 or kwargs or not isinstance(args[0], BaseSequence):
        raise Unsupported("unsupported_call", fn="torch.overrides.has_torch_function", detail=" with these arguments")
    return _has_torch_function_variadic(tx, list(args[0].get_items(tx)), kwargs)


def _has_torch_function_variadic(tx, args, kwargs):
    if kwargs:
        raise Unsupported("unsupported_call", fn="torch.overrides.has_torch_function", detail=" with keywords")
    answers = [_takes_part(tx, a) for a in args]     # (each argument's kind checked, as eager reads each)
    return const(tx.output.torch_function_state == TF_ENABLED and any(answers))


def _is_tensor_like(tx, args, kwargs):
    if len(args) != 1 or kwargs:
        raise Unsupported("unsupported_call", fn="torch.overrides.is_tensor_like", detail=" with these arguments")
    var = args[0]
    if isinstance(var, TensorVariable):
        return const(True)      # torch.Tensor and every subclass have a __torch_function__
    if var.is_python_constant() and type(var.as_python_constant()) in (int, float, bool, complex, str, type(None)):
        return const(False)
    raise Unsupported("torch_value", what=f"asking whether {var.describe()} is tensor-like")


# torch.overrides' questions about dispatch, answered from the trackers' classes and the trace's state
DISPATCH_QUERIES = {
    torch._C._has_torch_function: _has_torch_function,
    torch._C._has_torch_function_unary: _has_torch_function_variadic,
    torch._C._has_torch_function_variadic: _has_torch_function_variadic,
    torch.overrides.is_tensor_like: _is_tensor_like,
}


def answer_query(tx, fn, args, kwargs):
    """The answer of a torch.overrides question (`has_torch_function((x,))`...), or None for another function."""
    try:
        query = DISPATCH_QUERIES.get(fn)
    except TypeError:
        return None
    return None if query is None else query(tx, list(args), dict(kwargs))


def getter(name):
    """The `func` eager's dispatch passes for reading attribute `name` of a tensor: a C getter's `__get__`;
    None for a method, or a name torch.Tensor does not define as a C attribute."""
    attr = class_dict_lookup(torch.Tensor, name)
    if isinstance(attr, types.GetSetDescriptorType):
        return attr.__get__
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class DefaultHookVariable(VariableTracker):
    """The function of `torch.Tensor.__torch_function__` (its classmethod's `__func__`)."""

    def python_type(self):
        return types.FunctionType

    def describe(self):
        return "torch.Tensor.__torch_function__"

    def as_python_constant(self):
        return DEFAULT_HOOK.__func__

    def reconstruct(self, codegen):
        codegen.load_const(DEFAULT_HOOK.__func__)

    def call_function(self, tx, args, kwargs):
        names = ("cls", "func", "types", "args", "kwargs")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in bound:
                raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these arguments")
            bound[k] = v
        if any(k not in bound for k in names[:3]):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these arguments")
        cls = bound["cls"].as_python_constant_or_none()
        classes = _constant_classes(tx, bound["types"])
        if not isinstance(cls, type) or classes is None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these arguments")
        if not all(issubclass(cls, t) for t in classes):
            return const(NotImplemented)
        call_args = _items(tx, bound.get("args", TupleVariable(())))
        call_kwargs = _str_dict(tx, bound.get("kwargs", const(None)))
        func = bound["func"]
        node = tx.output.enter_torch_function_disabled(False)
        try:
            result = func.call_function(tx, call_args, call_kwargs)
        finally:
            tx.output.exit_torch_function_disabled(node)
        if func.is_python_constant() and _is_nowrap(func.as_python_constant()):
            return result
        return convert(tx, result, cls)


def run_disabled_hook(tx, args, kwargs):
    """`torch._C._disabled_torch_function_impl(func, types, args, kwargs)` (what `super().__torch_function__`
    reaches below a Parameter): `func` with subclass dispatch off, its result as it is."""
    names = ("func", "types", "args", "kwargs")
    bound = dict(zip(names, args))
    if len(args) > 4 or set(kwargs) - set(names) or set(kwargs) & set(bound):
        raise Unsupported("unsupported_call", fn="torch._C._disabled_torch_function_impl",
                          detail=" with these arguments")
    bound.update(kwargs)
    if "func" not in bound or "types" not in bound:
        raise Unsupported("unsupported_call", fn="torch._C._disabled_torch_function_impl",
                          detail=" with these arguments")
    call_args = _items(tx, bound.get("args", TupleVariable(())))
    call_kwargs = _str_dict(tx, bound.get("kwargs", const(None)))
    node = tx.output.enter_torch_function_disabled(False)
    try:
        return bound["func"].call_function(tx, call_args, call_kwargs)
    finally:
        tx.output.exit_torch_function_disabled(node)


def _is_nowrap(fn) -> bool:
    try:
        return fn in _NOWRAP
    except TypeError:
        return False


def _constant_classes(tx, var):
    if isinstance(var, BaseSequence):
        items = [i.as_python_constant_or_none() for i in var.get_items(tx)]
    elif var.is_python_constant() and isinstance(var.as_python_constant(), (tuple, list)):
        items = list(var.as_python_constant())
    else:
        return None
    return items if all(isinstance(i, type) for i in items) else None


def _items(tx, var) -> list:
    if isinstance(var, BaseSequence):
        return list(var.get_items(tx))
    if var.is_python_constant() and type(var.as_python_constant()) in (tuple, list):
        return [const(v) for v in var.as_python_constant()]
    raise Unsupported("unsupported_call", fn="torch.Tensor.__torch_function__", detail=" with these arguments")


def _str_dict(tx, var) -> dict:
    if var.is_python_constant() and var.as_python_constant() is None:
        return {}
    if isinstance(var, DictVariable) and var.cls is dict:
        out = {}
        for k, v in var.pairs(tx):
            if not (k.is_python_constant() and type(k.as_python_constant()) is str):
                break
            out[k.as_python_constant()] = v
        else:
            return out
    raise Unsupported("unsupported_call", fn="torch.Tensor.__torch_function__", detail=" with these keyword arguments")


def convert(tx, var, cls):
    """torch's `_convert(ret, cls)`: tensors not of `cls` made `cls` (as_subclass); lists, tuples and
    named tuples rebuilt of converted items."""
    if cls is torch.Tensor:
        return var
    if isinstance(var, TensorVariable):
        return var if issubclass(var.cls, cls) else as_subclass(tx, var, cls)
    if not isinstance(var, BaseSequence) or not issubclass(var.python_type(), (tuple, list)):
        return var
    items = list(var.get_items(tx))
    converted = [convert(tx, i, cls) for i in items]
    if isinstance(var, NamedTupleVariable):
        return dataclasses.replace(var, items=tuple(converted))
    if var.python_type() is tuple:
        return TupleVariable(tuple(converted))
    if var.python_type() is list:
        return ListVariable.create(tx, converted)
    if all(a is b for a, b in zip(items, converted)):
        return var      # `type(ret)(ret's own items)`: an equal object (a torch.Size of the sizes)
    raise Unsupported("torch_value", what=f"converting {var.describe()} to {cls.__name__}")


def _runtime_as_subclass(cls):
    """A graph node's target: `tensor.as_subclass(cls)` (a function, as fx cannot name a class in its code)."""
    def as_subclass(tensor):
        return torch.Tensor.as_subclass(tensor, cls)
    as_subclass.__qualname__ = f"as_subclass_{cls.__name__}"
    return as_subclass


def as_subclass(tx, var, cls):
    """`var.as_subclass(cls)`: a new tensor object of `cls` aliasing `var` (no `__torch_function__` runs).
    The graph must run as recorded for the class to exist at run time."""
    if not isinstance(cls, type) or not issubclass(cls, torch.Tensor):
        raise user_error(TypeError("as_subclass(): argument 'cls' must be a subclass of torch.Tensor"))
    if cls is not torch.Tensor:
        refusal = tensor_class_refusal(cls, tx.output.eager_autograd)
        if refusal:
            raise Unsupported("torch_value", what=refusal)
    out = tx.output
    fake = var.example
    with out.tracing_state(), out.fake_mode:
        example = torch.ops.aten.alias.default(fake)
    node = out.graph.call_function(_runtime_as_subclass(cls), (var.proxy.node,))
    node.meta["example_value"] = example
    return out.wrap_result(torch.fx.Proxy(node, out.tracer), example, cls)


def _runtime_make_subclass(cls, require_grad):
    """A graph node's target: `torch.Tensor._make_subclass(cls, data, require_grad)`."""
    def make_subclass(data):
        return torch.Tensor._make_subclass(cls, data, require_grad)
    make_subclass.__qualname__ = f"make_subclass_{cls.__name__}"
    return make_subclass


def make_subclass(tx, args, kwargs):
    """`torch.Tensor._make_subclass(cls, data, require_grad=False)`: a new leaf of `cls` sharing `data`'s
    storage (detached; no `__torch_function__` runs), a graph node run as recorded."""
    names = ("cls", "data", "require_grad")
    bound = dict(zip(names, args))
    if len(args) > 3 or set(kwargs) - {"require_grad"} or set(kwargs) & set(bound):
        raise Unsupported("unsupported_call", fn="torch.Tensor._make_subclass", detail=" with these arguments")
    bound.update(kwargs)
    cls = bound["cls"].as_python_constant_or_none() if "cls" in bound else None
    data = bound.get("data")
    flag = bound.get("require_grad", const(False))
    if not isinstance(cls, type) or not issubclass(cls, torch.Tensor) or not isinstance(data, TensorVariable) or \
            not flag.is_python_constant() or not tx.output.eager_autograd:
        raise Unsupported("unsupported_call", fn="torch.Tensor._make_subclass", detail=" with these arguments")
    if cls is not torch.Tensor:
        refusal = tensor_class_refusal(cls, tx.output.eager_autograd)
        if refusal:
            raise Unsupported("torch_value", what=refusal)
    require_grad = bool(flag.as_python_constant())
    out = tx.output
    with out.tracing_state(), out.fake_mode:
        example = data.example.detach()
        if require_grad:
            example.requires_grad_(True)
    node = out.graph.call_function(_runtime_make_subclass(cls, require_grad), (data.proxy.node,))
    node.meta["example_value"] = example
    return out.wrap_result(torch.fx.Proxy(node, out.tracer), example, cls)


_TENSOR_NEW = vars(torch._C.TensorBase)["__new__"]


def new_tensor_subclass(tx, cls, args, kwargs):
    """`Cls(...)` for a torch.Tensor subclass, as `type.__call__` runs it: torch's `__new__` with one tensor
    (the tensor aliased as `Cls`, like `as_subclass`), or the class's own Python `__new__`; then its
    Python `__init__` when the result is an instance of `Cls`."""
    new, new_src = reads.class_lookup(tx, cls, "__new__")
    init, init_src = reads.class_lookup(tx, cls, "__init__")
    if new is _TENSOR_NEW:
        if len(args) != 1 or kwargs or not isinstance(args[0], TensorVariable):
            raise Unsupported("unsupported_call", fn=f"class {cls.__name__}", detail=" with these arguments")
        obj = as_subclass(tx, args[0], cls)
    else:
        fn = new.__func__ if isinstance(new, staticmethod) else new
        if not isinstance(fn, types.FunctionType):
            raise Unsupported("unsupported_call", fn=f"class {cls.__name__}", detail=" (custom __new__)")
        fn_var = tx.wrap(fn, reads_source(new_src, isinstance(new, staticmethod)))
        obj = fn_var.call_function(tx, [_class(tx, cls)] + list(args), kwargs)
    if isinstance(obj, TensorVariable) and issubclass(obj.cls, cls) and init is not object.__init__:
        if not isinstance(init, types.FunctionType):
            raise Unsupported("unsupported_call", fn=f"class {cls.__name__}", detail=" (its __init__)")
        families.bind_descriptor(tx, obj, None, init, "__init__", init_src).call_function(tx, list(args), kwargs)
    return obj


def reads_source(src, through_func):
    if src is None:
        return None
    return AttrSource(src, "__func__") if through_func else src


def tensor_class_refusal(cls, eager_autograd: bool) -> str | None:
    """Why tensors of class `cls` (a torch.Tensor subclass) cannot be graph values (None: they can)."""
    return families.subclass_refusal_of_class(cls, eager_autograd)


families.register(run_disabled_hook, make_subclass, new_tensor_subclass, replaced_names, answer_query, own_hook,
                  method_func, dispatch, needs_dispatch, getter, as_subclass, DefaultHookVariable)
