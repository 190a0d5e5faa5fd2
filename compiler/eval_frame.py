"""The user-facing wrappers: compiled functions and modules, `disable`, run-only mode.

Hot path: the wrappers run on every call; they only swap this thread's frame callback.
"""
from __future__ import annotations

import functools

import torch

from . import _C
from .backends.registry import list_backends, lookup_backend
from .convert_frame import FrameCompiler
from .disable import disable

__all__ = ["OptimizedModule", "compile", "disable", "run"]


def _call_with_callback(callback, fn, args, kwargs):
    prev = _C.set_callback(callback)
    try:
        return fn(*args, **kwargs)
    finally:
        _C.set_callback(prev)


class OptimizedModule(torch.nn.Module):
    """A compiled nn.Module: calls go through the frame callback; everything else (attributes,
    parameters, state_dict, train/eval, hooks) is the original module's."""

    def __init__(self, mod: torch.nn.Module, callback):
        super().__init__()
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_bytegraph_callback", callback)

    def __call__(self, *args, **kwargs):
        return _call_with_callback(self._bytegraph_callback, self._orig_mod, args, kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_orig_mod"), name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        delattr(self._orig_mod, name)

    def __dir__(self):
        return dir(self._orig_mod)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, mode):
        # nn.Module.__init__ assigns `training` before `_orig_mod` exists; afterwards the flag
        # always lives on the original module.
        if "_orig_mod" in self.__dict__:
            self._orig_mod.training = mode


def _delegate(name):
    def method(self, *args, **kwargs):
        result = getattr(self._orig_mod, name)(*args, **kwargs)
        return self if result is self._orig_mod else result   # chaining (`.to()`, `.train()`) keeps the wrapper
    method.__name__ = name
    return method


# Every public nn.Module method acts on the original module (state_dict, parameters, to, double,
# train/eval, apply, hooks...), never on the empty wrapper.
for _name, _value in vars(torch.nn.Module).items():
    if callable(_value) and not _name.startswith("_") and _name not in ("forward",):
        setattr(OptimizedModule, _name, _delegate(_name))


def _check_compile_arguments(backend, fullgraph, dynamic, options) -> None:
    """Reject what `compile` would otherwise accept silently and misread later."""
    if not isinstance(backend, str) and not callable(backend):
        raise TypeError(f"bytegraph.compile(backend=...) takes a backend name ({', '.join(list_backends())}) or a "
                        f"callable(gm, example_inputs); got {type(backend).__name__} {backend!r:.60}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"bytegraph.compile(fullgraph=...) takes True or False; got {fullgraph!r}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"bytegraph.compile(dynamic=...) takes None (automatic), True or False; got {dynamic!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"bytegraph.compile(options=...) takes a dict of keyword arguments for the backend; "
                        f"got {type(options).__name__}")


def compile(fn_or_module=None, *, backend="inductor", fullgraph=False, dynamic=None, options=None):
    """Compile a function or nn.Module; usable as `@bytegraph.compile` or `@bytegraph.compile(...)`."""
    _check_compile_arguments(backend, fullgraph, dynamic, options)
    if fn_or_module is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, options=options)
    backend_fn = lookup_backend(backend)
    callback = FrameCompiler(backend_fn, fullgraph=fullgraph, dynamic=dynamic, options=options, root=fn_or_module)
    if isinstance(fn_or_module, torch.nn.Module):
        return OptimizedModule(fn_or_module, callback)
    if not callable(fn_or_module):
        raise TypeError(f"bytegraph.compile expects a function or nn.Module, got {type(fn_or_module).__name__}")
    fn = fn_or_module

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        return _call_with_callback(callback, fn, args, kwargs)
    compiled._bytegraph_callback = callback
    compiled._orig_fn = fn
    return compiled


# called from compiled code, `compile` is never traced into (that would model bytegraph's own machinery):
# on a function with constant settings its result is modelled (frontend CompileFunctionVariable: a call
# traced as the function, a new wrapper made again if it leaves the graph); any other call runs as Python
compile._bytegraph_disabled = True
compile._bytegraph_compile = True


def run(fn):
    """Run `fn` using already-compiled cache entries only; never compile."""
    @functools.wraps(fn)
    def run_only(*args, **kwargs):
        return _call_with_callback(False, fn, args, kwargs)
    return run_only
