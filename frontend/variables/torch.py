"""torch functions (graph nodes, or folded when they only ask about state) and torch's context
managers (grad mode, autocast)."""
from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import Any, Callable

import torch

from ... import decorators
from ...guards.guard import Guard
from ...guards.source import ConstSource, ModuleGlobalSource, ReaderSource
from ...probe import safe_in, static_getattr
from ..graph_break import Unsupported, fold
from .base import TensorMethod, VariableTracker, families, python_value
from .constant import ConstantVariable, const
from .functions import BaseUserFunction, BoundMethodVariable, context_as_decorator
from .lists import SizeVariable
from .numpy import NumpyNdarrayVariable, ndarray_as_tensor
from .tensor import SymNodeVariable, TensorVariable
from .tensor_data import tensor_from_data
from .cond import call_cond
from . import global_state, profiler
from .vmap import VmapVariable


try:   # torch's pass-through higher-order op (`wrap(f, *args)`)
    from torch._higher_order_ops.wrap import wrap as _WRAP
except ImportError:  # pragma: no cover - older torch
    _WRAP = None


def _is_compiling():
    return True


# Functions answered at trace time: they read state or metadata, never tensor data.
FOLDED: dict[Any, Callable] = {
    torch.is_grad_enabled: None, torch.get_default_dtype: None, torch.is_tensor: None,
    torch.is_floating_point: None, torch.is_complex: None, torch.numel: None, torch.finfo: None,
    torch.iinfo: None, torch.device: None, torch.is_autocast_enabled: None,
    torch.are_deterministic_algorithms_enabled: None, torch.is_inference_mode_enabled: None,
    torch.compiler.is_compiling: _is_compiling, torch.compiler.is_dynamo_compiling: _is_compiling,
    torch.jit.is_scripting: lambda: False, torch.jit.is_tracing: lambda: False,
    torch._C._get_tracing_state: lambda: None, torch.distributed.is_available: None,
}
if hasattr(torch._utils, "is_compiling"):  # the older spelling libraries still ask
    FOLDED[torch._utils.is_compiling] = _is_compiling
FOLDED[decorators.is_compiling] = _is_compiling
try:   # numpy's type-information objects: immutable answers about dtypes, like torch.finfo
    import numpy as _np
    FOLDED.update({_np.finfo: None, _np.iinfo: None, _np.dtype: None})
except ImportError:  # pragma: no cover - numpy is optional
    _np = None


# Getters of a module global (`torch.__future__` flags that nn.Module.to/_apply branch on): answered
# by reading the global through a source, so its value is guarded.
GLOBAL_GETTERS: dict[Any, tuple[str, str]] = {
    torch.__future__.get_overwrite_module_params_on_conversion:
        ("torch.__future__", "_overwrite_module_params_on_conversion"),
    torch.__future__.get_swap_module_params_on_conversion: ("torch.__future__", "_swap_module_params_on_conversion"),
}


def is_graph_break_function(fn) -> bool:
    """`bytegraph.graph_break`, or torch's own (`torch._dynamo.graph_break`, which library code
    calls), recognized by name so that torch._dynamo is never imported."""
    return fn is decorators.graph_break or (
        static_getattr(fn, "__module__") == "torch._dynamo.decorators" and
        static_getattr(fn, "__qualname__") == "graph_break")

def _asks_function_modes(fn) -> bool:
    """A query (or change) of torch-function dispatch state: `has_torch_function`,
    `_len_torch_function_stack`, `_get_current_function_mode_stack`..."""
    name = str(static_getattr(fn, "__name__", ""))
    return any(word in name for word in ("torch_function", "function_mode", "function_stack"))


def _sets_global_state(fn) -> bool:
    """A setter of torch's process state not modelled here (`torch.set_num_threads`,
    `torch._C._set_deterministic_algorithms`...): run in a graph, the trace would not see it."""
    name = str(static_getattr(fn, "__name__", ""))
    return name.startswith(("set_", "_set_")) and not isinstance(fn, (torch._ops.OpOverloadPacket,
                                                                        torch._ops.OpOverload))


# what torch.set_default_dtype accepts
DEFAULT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Queries of process state the trace models (global_state.py): function -> fn(tx) answering it.
STATE_QUERIES: dict[Any, Callable] = dict(global_state.QUERIES)

# Functions that change global state or observe the outside world: never inside a graph.
UNSUPPORTED = {torch.manual_seed, torch.seed, torch.use_deterministic_algorithms,
               torch.set_printoptions, torch.save, torch.load, torch.autograd.grad, torch.autograd.backward,
               *global_state.SETTERS}


@dataclasses.dataclass(frozen=True, eq=False)
class TorchFunctionVariable(VariableTracker):
    fn: Callable = None

    def python_type(self):
        return type(self.fn)

    def describe(self):
        return f"torch function {getattr(self.fn, '__qualname__', self.fn)}"

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, codegen):
        codegen.load_const(self.fn)

    def var_getattr(self, tx, name):
        return const(getattr(self.fn, name))

    def call_function(self, tx, args, kwargs):
        fn = self.fn
        if fn is torch._C._disabled_torch_function_impl:
            return families.run_disabled_hook(tx, args, kwargs)
        dispatched = families.dispatch(tx, fn, args, kwargs)
        if dispatched is not None:
            return dispatched      # the __torch_function__ of an argument's class answered
        if fn is torch.Tensor.__len__ and len(args) == 1 and not kwargs and isinstance(args[0], TensorVariable):
            # (what a subclass's __torch_function__ calls for `len(x)`): `x.shape[0]`, of its own `shape`
            return args[0].call_tensor_method(tx, "__len__", [], {})
        if is_graph_break_function(fn):
            msg = args[0] if args else kwargs.get("msg")
            msg = f": {msg.as_python_constant()}" if msg is not None and msg.is_python_constant() else ""
            raise Unsupported("user_graph_break", fn=f"{fn.__module__}.{fn.__name__}", msg=msg)
        if fn in STATE_QUERIES and not args and not kwargs:
            return STATE_QUERIES[fn](tx)      # process state the trace models (global_state.py)
        if fn in TORCH_FUNCTION_STATE_QUERIES and not args and not kwargs:
            return const(TORCH_FUNCTION_STATE_QUERIES[fn](tx.output.torch_function_state))
        if fn is _WRAP and args:
            # eagerly `wrap(f, *args, **kwargs)` calls `f(*args, **kwargs)` (with torch.compile disabled)
            return args[0].call_function(tx, list(args[1:]), kwargs)
        if fn is torch.jit.annotate and len(args) == 2 and not kwargs:
            return args[1]      # a TorchScript type hint: eagerly it returns its value unchanged
        if fn in CHECKS:
            checked = _torch_check(tx, fn, args, kwargs)
            if checked is not None:
                return checked
        if fn is torch.is_tensor and len(args) == 1 and not kwargs and not isinstance(args[0], TensorVariable):
            # `isinstance(obj, torch.Tensor)` of any object (a dict, a user object), as `isinstance` answers it
            from .builtins import _isinstance
            return _isinstance(tx, args[0], const(torch.Tensor))
        if fn in FOLDED:
            folded = FOLDED[fn] or fn

            def real(a):   # positional and keyword arguments alike (`torch.is_floating_point(input=x)`)
                if isinstance(a, SymNodeVariable):
                    return a.value     # a SymInt: what it is is known; a guard on its value goes to the ShapeEnv
                return a.example if isinstance(a, TensorVariable) else a.as_python_constant()
            real_args = [real(a) for a in args]
            real_kwargs = {k: real(v) for k, v in kwargs.items()}
            if fn is torch.is_grad_enabled:
                if tx.output.backward_proof is not None:
                    # eager runs a backward with grad mode = create_graph, unknown here
                    raise Unsupported("impure_backward", what="reads the grad mode (on in eager's backward "
                                      "under create_graph=True)")
                return const(tx.output.grad_enabled)
            if fn is torch.get_default_dtype:
                return const(tx.output.default_dtype)
            with tx.output.tracing_state():   # `torch.is_autocast_enabled()` inside a traced block
                answer = folded(*real_args, **real_kwargs)
            if isinstance(answer, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                # a size of a symbolic shape (`torch.numel(x)`): a graph value, as `x.numel()` is, never
                # the SymInt itself as a constant
                return tx.output.call_function(fn, list(args), kwargs)
            return tx.wrap(answer, None, trusted=True)
        if fn in GLOBAL_GETTERS and not args and not kwargs:
            module_name, name = GLOBAL_GETTERS[fn]
            return tx.wrap(vars(sys.modules[module_name])[name], ModuleGlobalSource(module_name, name))
        if tx.output.function_modes and _asks_function_modes(fn):
            # the trace models the open mode; the graph runs with none: the answer would differ
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (it reads the TorchFunctionMode stack)")
        answer = families.answer_query(tx, fn, args, kwargs)
        if answer is not None:
            return answer
        if fn is torch._C._set_grad_enabled and len(args) == 1 and not kwargs and args[0].is_python_constant():
            # what set_grad_enabled and the grad-mode managers call: the trace's grad mode changes too
            tx.output.set_grad_enabled(bool(args[0].as_python_constant()))
            return const(None)
        if fn in GRAD_MODE_FACTORIES:
            return GRAD_MODE_FACTORIES[fn](tx, args, kwargs)
        if fn is torch.set_default_dtype:
            dtype = args[0].as_python_constant() if len(args) == 1 and not kwargs and args[0].is_python_constant() \
                else None
            if dtype not in DEFAULT_DTYPES:     # (anything else raises TypeError: the call runs as Python)
                raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these arguments")
            tx.output.set_default_dtype(dtype)
            return const(None)
        if fn in UNSUPPORTED or _sets_global_state(fn):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (it changes global state)")
        if fn in (torch.tensor, torch.as_tensor):
            built = tensor_from_data(tx, fn, args, kwargs)    # (data holding tensors or symbolic numbers)
            if built is not None:
                return built
        if fn in (torch.from_numpy, torch.as_tensor) and len(args) + len(kwargs) == 1:
            array = args[0] if args else kwargs.get("ndarray" if fn is torch.from_numpy else "data")
            if isinstance(array, NumpyNdarrayVariable):
                return ndarray_as_tensor(tx, array)
        if fn is torch.cond:
            return call_cond(tx, args, kwargs)
        if fn is torch.vmap:
            vmapped = VmapVariable.create(args, kwargs)
            if vmapped is not None:
                return vmapped
        if fn is torch.Size:
            return SizeVariable(tuple(tx.unpack_iterable(args[0])) if args else ())
        if fn in _DROPOUTS:
            # a probability computed from sizes (`x.shape[0] / 100`): the kernel's fake run would guard its
            # value anyway, and a constant lets the backends draw the random numbers eager draws
            args = [const(a.evaluate()) if isinstance(a, SymNodeVariable) else a for a in args]
            kwargs = {k: const(v.evaluate()) if isinstance(v, SymNodeVariable) else v for k, v in kwargs.items()}
        result = tx.output.call_function(fn, list(args), kwargs)
        _guard_state_answer(tx, fn, args, kwargs, result)
        return result


class _StateQuery:
    """`fn(*args, **kwargs)` asked again by a guard (held strongly: it has no weak references)."""
    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __call__(self):
        return self.fn(*self.args, **self.kwargs)


def _guard_state_answer(tx, fn, args, kwargs, result) -> None:
    """A torch function given only constants that answered a Python value (`torch.get_num_threads()`,
    `torch.is_anomaly_enabled()`, `torch.cuda.is_available()`): the answer comes from process state
    that may change between calls, so a guard asks again. (None is what a function called for its
    effect returns: nothing to ask, and asking would repeat the effect.)"""
    if not isinstance(result, ConstantVariable) or result.value is None:
        return
    values = list(args) + list(kwargs.values())
    if not all(v.is_python_constant() and not isinstance(v, (TensorVariable, SymNodeVariable)) for v in values):
        return      # (computed from tensors' metadata, which their own guards keep)
    query = _StateQuery(fn, tuple(a.as_python_constant() for a in args),
                        {k: v.as_python_constant() for k, v in kwargs.items()})
    tx.output.guards.add(Guard.constant(ReaderSource(ConstSource(query)), result.value))


# torch._check and its siblings: (cond, message=None), the message a function called only on failure
CHECKS = {torch._check, torch._check_index, torch._check_value, torch._check_type, torch._check_not_implemented}


def _torch_check(tx, fn, args, kwargs):
    """`torch._check(cond, message)` with a known bool `cond`: nothing when true (the message
    function is never called); when false, the call itself raises what eager raises, the message
    function traced for its (constant) value. A symbolic `cond` falls through (into the graph)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return None
    cond, message = bound.arguments["cond"], bound.arguments.get("message")
    if not isinstance(cond, ConstantVariable) or type(cond.value) is not bool:
        return None
    if cond.value:
        return const(None)
    if message is None or message.is_python_constant() and message.as_python_constant() is None:
        return fold(fn, False)
    if not isinstance(message, BaseUserFunction):
        return None
    text = message.call_function(tx, [], {})
    if not isinstance(text, ConstantVariable):
        raise Unsupported("non_constant_value", what=f"torch._check's message {text.describe()}")
    value = text.value
    return fold(fn, False, lambda: value)


_DROPOUTS = {torch.nn.functional.dropout, torch.dropout, torch.nn.functional.alpha_dropout,
             torch.nn.functional.feature_alpha_dropout, torch.nn.functional.dropout1d,
             torch.nn.functional.dropout2d, torch.nn.functional.dropout3d}


@dataclasses.dataclass(frozen=True, eq=False)
class GradModeVariable(VariableTracker):
    """torch.no_grad() / enable_grad() / set_grad_enabled(b): a context manager that sets grad mode on
    enter and restores the previous mode on exit, inside the graph.

    `kind` is the real class. A no_grad/enable_grad object reads the mode to restore when entered
    (`previous` None until then); a set_grad_enabled object applied its mode when made and restores
    the mode it found then (`previous`), however much later it is entered."""
    target: bool = True
    previous: Any = None
    kind: Any = torch.set_grad_enabled

    def python_type(self):
        return self.kind

    def describe(self):
        return f"grad mode {self.target}"

    def enter(self, tx):
        prev = self.previous if self.previous is not None else tx.output.grad_enabled
        tx.output.set_grad_enabled(self.target)
        return dataclasses.replace(self, previous=prev), const(None)

    def exit(self, tx):
        tx.output.set_grad_enabled(self.previous)
        return const(None)

    def call_function(self, tx, args, kwargs):
        # used as a decorator: @torch.no_grad(); a set_grad_enabled used so gives back the mode its
        # construction had set (`_DecoratorContextManager.__call__`)
        if args and isinstance(args[0], BaseUserFunction):
            if self.kind is torch.set_grad_enabled and self.previous is not None:
                tx.output.set_grad_enabled(self.previous)
            return GradModeWrapped(fn=args[0], target=self.target)
        raise Unsupported("unsupported_call", fn=self.describe(), detail="")

    def var_getattr(self, tx, name):
        if name in ("clone", "__enter__", "__exit__"):
            return BoundMethodVariable(fn=TensorMethod(name), self_var=self)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "clone":   # a fresh manager with the same target (what torch's decorators enter)
            if self.kind is torch.set_grad_enabled:   # made anew: applies its mode now, like eager
                return _set_grad_enabled(tx, [const(self.target)], {})
            return GradModeVariable(target=self.target, kind=self.kind)
        if name == "__enter__":
            raise Unsupported("unsupported_builtin", what="calling __enter__ of a grad-mode manager directly")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if self.source is not None:     # the object read from the frame (entered natively, maybe)
            self.source.reconstruct(codegen)
            return
        codegen.push_null()
        if self.kind is torch.set_grad_enabled:
            # rebuilt without applying its mode again, remembering the mode it found when made
            codegen.load_const(rebuild_set_grad_enabled)
            codegen.load_const(self.target)
            codegen.load_const(self.previous if self.previous is not None else self.target)
            codegen.call(2)
        else:
            codegen.load_const(self.kind)
            codegen.call(0)


def rebuild_set_grad_enabled(mode: bool, previous: bool):
    """Run time: a `torch.set_grad_enabled(mode)` made in compiled code and live after it (a graph
    break, a returned value). Its `__init__` already applied `mode` in the graph; the object only
    keeps what its exit restores."""
    obj = torch.set_grad_enabled.__new__(torch.set_grad_enabled)
    obj.mode, obj.prev = mode, previous
    return obj


@dataclasses.dataclass(frozen=True, eq=False)
class GradModeWrapped(VariableTracker):
    """A function decorated with a grad-mode context manager."""
    fn: VariableTracker = None
    target: bool = True

    def call_function(self, tx, args, kwargs):
        prev = tx.output.grad_enabled
        tx.output.set_grad_enabled(self.target)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:
            tx.output.set_grad_enabled(prev)


@dataclasses.dataclass(frozen=True, eq=False)
class InferenceModeVariable(VariableTracker):
    """torch.inference_mode(mode). Entering it emits `_enter_inference_mode(mode)` into the graph and
    exiting `_exit_inference_mode(handle)`, which restores the whole autograd state (grad mode too), as
    eager's exit does. Inference mode is state of the trace (`OutputGraph.inference_stack`): fakes made
    inside are inference tensors, so their own rules (no in-place use outside the mode, never saved for
    backward) fail the trace where eager fails."""
    mode: bool = True
    node: Any = None        # the enter node once entered

    def python_type(self):
        return torch.inference_mode

    def describe(self):
        return f"torch.inference_mode({self.mode})"

    def enter(self, tx):
        return dataclasses.replace(self, node=tx.output.enter_inference_mode(self.mode)), const(None)

    def exit(self, tx):
        tx.output.exit_inference_mode(self.node)
        return const(None)

    def call_function(self, tx, args, kwargs):
        return context_as_decorator(self, args, kwargs)

    def var_getattr(self, tx, name):
        if name in ("clone", "__enter__", "__exit__"):
            return BoundMethodVariable(fn=TensorMethod(name), self_var=self)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "clone" and not args and not kwargs:   # what torch's decorator enters on each call
            return InferenceModeVariable(mode=self.mode)
        if name in ("__enter__", "__exit__"):
            raise Unsupported("unsupported_builtin", what=f"calling {name} of torch.inference_mode directly")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable(torch.inference_mode)
        codegen.load_const(self.mode)
        codegen.call(1)


# torch-function dispatch state: on, off for subclasses' `__torch_function__` (DisableTorchFunctionSubclass),
# off for modes too (DisableTorchFunction); entering a block never lowers it
TF_ENABLED, TF_SUBCLASS_DISABLED, TF_ALL_DISABLED = 0, 1, 2
TORCH_FUNCTION_STATE_QUERIES = {
    torch._C._is_torch_function_enabled: lambda state: state == TF_ENABLED,
    torch._C._is_torch_function_all_disabled: lambda state: state == TF_ALL_DISABLED,
}


def torch_function_state_now() -> int:
    if torch._C._is_torch_function_all_disabled():
        return TF_ALL_DISABLED
    return TF_ENABLED if torch._C._is_torch_function_enabled() else TF_SUBCLASS_DISABLED


def enter_torch_function_disabled(all_disabled: bool):
    """Run time (a graph node): enter `DisableTorchFunction()` / `DisableTorchFunctionSubclass()`."""
    ctx = torch._C.DisableTorchFunction() if all_disabled else torch._C.DisableTorchFunctionSubclass()
    ctx.__enter__()
    return ctx


def exit_torch_function_disabled(ctx) -> None:
    """Run time (a graph node): leave the block `enter_torch_function_disabled` entered."""
    ctx.__exit__(None, None, None)


@dataclasses.dataclass(frozen=True, eq=False)
class DisableTorchFunctionVariable(VariableTracker):
    """`torch._C.DisableTorchFunctionSubclass()` / `DisableTorchFunction()` in a `with` block: inside it
    the ops' results keep no subclass (no `__torch_function__` runs) and the state queries answer
    accordingly. The trace's state is `OutputGraph.torch_function_state`; a graph whose ops run as
    recorded enters and leaves the real state (graph nodes), as its subclass tensors' ops depend on it.
    A graph a backend retraces holds no such tensors (builder), so there the state changes nothing."""
    all_disabled: bool = False
    node: Any = None

    def python_type(self):
        return torch._C.DisableTorchFunction if self.all_disabled else torch._C.DisableTorchFunctionSubclass

    def describe(self):
        return f"torch._C.{self.python_type().__name__}()"

    def enter(self, tx):
        return dataclasses.replace(self, node=tx.output.enter_torch_function_disabled(self.all_disabled)), const(None)

    def exit(self, tx):
        tx.output.exit_torch_function_disabled(self.node)
        return const(None)

    def reconstruct(self, codegen):
        codegen.load_callable(self.python_type())
        codegen.call(0)


@dataclasses.dataclass(frozen=True, eq=False)
class AutocastVariable(VariableTracker):
    """torch.autocast(device_type, dtype, enabled, cache_enabled) (and torch.amp/cpu/cuda.amp.autocast).

    Entering it emits `torch.amp._enter_autocast(...)` into the graph and exiting emits
    `torch.amp._exit_autocast(mode)`, so the graph runs its ops under the same autocast state as
    eager. The autocast state is the trace's (`OutputGraph.autocast_stack`, checkpointed like grad
    mode), never the process's: fake tensors propagate under it, so they get the dtypes autocast
    gives (a bfloat16 matmul)."""
    device: str = "cpu"
    dtype: Any = None
    enabled: bool = True
    cache_enabled: bool = True
    node: Any = None        # the enter node once entered

    @staticmethod
    def from_real(mode):
        return AutocastVariable(device=mode.device, dtype=mode.fast_dtype, enabled=mode._enabled,
                                cache_enabled=mode._cache_enabled)

    def python_type(self):
        return torch.autocast

    def describe(self):
        return f"torch.autocast({self.device!r}, dtype={self.dtype})"

    def _values(self):
        return (self.device, self.dtype, self.enabled, self.cache_enabled)

    def enter(self, tx):
        return dataclasses.replace(self, node=tx.output.enter_autocast(self._values())), const(None)

    def exit(self, tx):
        tx.output.exit_autocast(self.node)
        return const(None)

    def call_function(self, tx, args, kwargs):
        return context_as_decorator(self, args, kwargs)

    def reconstruct(self, codegen):
        codegen.load_callable(torch.autocast)
        for v in self._values():
            codegen.load_const(v)
        codegen.call(4)


@dataclasses.dataclass(frozen=True, eq=False)
class ContextWrapped(VariableTracker):
    """A function decorated with a context manager tracker that has enter/exit (autocast)."""
    fn: VariableTracker = None
    ctx: VariableTracker = None

    def call_function(self, tx, args, kwargs):
        entered, _ = self.ctx.enter(tx)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:    # a user exception raised through the call leaves the context too, as eager's `with`
            entered.exit(tx)


def _autocast(tx, args, kwargs):
    real_args = [python_value(tx, a) for a in args]
    real_kwargs = {k: python_value(tx, v) for k, v in kwargs.items()}
    return AutocastVariable.from_real(torch.autocast(*real_args, **real_kwargs))


def _device_autocast(device):
    def factory(tx, args, kwargs):
        names = ("enabled", "dtype", "cache_enabled")
        real = dict(zip(names, (python_value(tx, a) for a in args)))
        real.update({k: python_value(tx, v) for k, v in kwargs.items()})
        real.setdefault("dtype", torch.bfloat16 if device == "cpu" else torch.float16)
        return AutocastVariable.from_real(torch.autocast(device, **real))
    return factory


def _grad_mode_factory(target, kind):
    def factory(tx, args, kwargs):
        manager = GradModeVariable(target=target, kind=kind)
        func = args[0] if args else kwargs.get("orig_func", const(None))
        if len(args) + len(kwargs) > 1 or (kwargs and "orig_func" not in kwargs):
            raise Unsupported("unsupported_call", fn=kind.__name__, detail=" (with these arguments)")
        if func.is_python_constant() and func.as_python_constant() is None:
            return manager
        # `torch.no_grad(fn)` (the bare decorator) is `torch.no_grad()(fn)`: the function, wrapped
        return manager.call_function(tx, [func], {})
    return factory


_no_grad = _grad_mode_factory(False, torch.no_grad)
_enable_grad = _grad_mode_factory(True, torch.enable_grad)


def _set_grad_enabled(tx, args, kwargs):
    mode = (args[0] if args else kwargs["mode"]).as_python_constant()
    # set_grad_enabled applies immediately, and restores on exit when used with `with`
    prev = tx.output.grad_enabled
    tx.output.set_grad_enabled(mode)
    return GradModeVariable(target=mode, previous=prev)


def _disable_torch_function(all_disabled):
    def factory(tx, args, kwargs):
        name = f"torch._C.DisableTorchFunction{'' if all_disabled else 'Subclass'}"
        if args or kwargs:
            raise Unsupported("unsupported_call", fn=name, detail=" (with arguments)")
        if tx.output.function_modes:
            # the modes the trace models would have to stop applying inside the block
            raise Unsupported("unsupported_call", fn=name, detail=" (inside a modelled mode)")
        return DisableTorchFunctionVariable(all_disabled=all_disabled)
    return factory


def _inference_mode(tx, args, kwargs):
    mode = args[0] if args else kwargs.get("mode", const(True))
    if len(args) + len(kwargs) > 1 or not mode.is_python_constant() or \
            type(mode.as_python_constant()) is not bool:
        # `torch.inference_mode(fn)` decorates; anything else is torch's to refuse
        raise Unsupported("unsupported_call", fn="torch.inference_mode", detail=" (not a constant bool mode)")
    return InferenceModeVariable(mode=mode.as_python_constant())


GRAD_MODE_FACTORIES = {torch.no_grad: _no_grad, torch.enable_grad: _enable_grad,
                       torch.set_grad_enabled: _set_grad_enabled, torch.inference_mode: _inference_mode,
                       torch.autocast: _autocast, torch.amp.autocast: _autocast,
                       torch._C.DisableTorchFunctionSubclass: _disable_torch_function(False),
                       torch._C.DisableTorchFunction: _disable_torch_function(True)}
GRAD_MODE_FACTORIES.update(global_state.FACTORIES)
GRAD_MODE_FACTORIES.update(profiler.FACTORIES)
for _dev in ("cpu", "cuda"):
    _cls = getattr(getattr(getattr(torch, _dev, None), "amp", None), "autocast", None)
    if isinstance(_cls, type):
        GRAD_MODE_FACTORIES[_cls] = _device_autocast(_dev)


# (nn.utils: Python helpers over modules, e.g. the property computing a parametrized module's weight;
# associative_scan: Python over a user's combine function, which it maps with torch.vmap)
_NOT_OPS = tuple(f"torch.{name}" for name in ("_dynamo", "_inductor", "utils", "nn.modules", "nn.utils",
                                               "fx", "compiler", "distributed", "nn.parallel", "_C._distributed",
                                               "testing", "_higher_order_ops.associative_scan", "distributions"))


def is_torch_op(value) -> bool:
    """A callable from torch that becomes one graph node when called."""
    if issubclass(type(value), type):
        # torch.finfo, torch.device... (by a lookup that never runs a metaclass __hash__)
        return safe_in(value, GRAD_MODE_FACTORIES) or value is torch.Size or safe_in(value, FOLDED)
    module = static_getattr(value, "__module__")
    module = module if isinstance(module, str) else ""
    if not callable(value):
        return False
    if safe_in(value, FOLDED) or is_graph_break_function(value) or decorators.is_allowed_in_graph(value):
        return True
    # torch's own Python machinery (compilers, utilities, module classes, fx) is not an op
    if module.startswith(_NOT_OPS):
        return False
    if module == "torch" or module.startswith("torch.") or isinstance(value, torch._ops.OpOverloadPacket) \
            or isinstance(value, torch._ops.OpOverload):
        return True
    # C functions of torch._C (torch.add and friends report module None)
    return type(value).__name__ == "builtin_function_or_method" and \
        str(static_getattr(static_getattr(value, "__self__"), "__name__", "")).startswith("torch")


families.register(ContextWrapped)
