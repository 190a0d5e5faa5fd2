"""The backend registry: names -> `callable(gm, example_inputs) -> callable`, plus the entry-point
group `bytegraph.backends` for backends installed by other packages."""
from __future__ import annotations

import inspect
from importlib.metadata import entry_points
from typing import Callable

import torch

from .. import _C

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str | None = None, fn: Callable | None = None):
    """Register `fn` under `name`; usable as `@register_backend("name")` or `@register_backend`."""
    if callable(name) and fn is None:
        fn, name = name, name.__name__
    if name is not None and not isinstance(name, str):
        raise TypeError(f"register_backend(name) takes a str; got {type(name).__name__} {name!r:.60}")
    if fn is None:
        return lambda f: register_backend(name or getattr(f, "__name__", None), f)
    if not callable(fn):
        raise TypeError(f"register_backend({name!r}) needs a callable(gm, example_inputs) -> callable; "
                        f"got {type(fn).__name__} {fn!r:.60}")
    name = name or getattr(fn, "__name__", None)
    if not name:
        raise TypeError(f"register_backend: {fn!r:.60} has no __name__; pass the name: register_backend(name, fn)")
    _BACKENDS[name] = fn
    return fn


def _load_entry_points():
    for ep in entry_points(group="bytegraph.backends"):
        if ep.name not in _BACKENDS:
            _BACKENDS[ep.name] = ep.load()


def list_backends() -> list[str]:
    _load_entry_points()
    return sorted(_BACKENDS)


def lookup_backend(backend) -> Callable:
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        _load_entry_points()
    if backend not in _BACKENDS:
        raise ValueError(f"unknown bytegraph backend {backend!r}; known backends: {', '.join(list_backends())}. "
                         "Register one with bytegraph.register_backend(name).")
    return _BACKENDS[backend]


class BackendContractError(TypeError):
    """A backend returned something that is not a compiled graph (see `graph_runner`)."""


def backend_name(backend) -> str:
    """How to name a backend in an error: its registered name, else its function or class name."""
    for name, fn in _BACKENDS.items():
        if fn is backend:
            return name
    inner = getattr(backend, "func", None)          # functools.partial (backend options)
    if inner is not None:
        return backend_name(inner)
    return getattr(backend, "__name__", None) or type(backend).__name__


def _expected_outputs(gm) -> list:
    """What each graph output is: a tensor, or a Python number (a size or a scalar)."""
    outputs = gm.graph.output_node().args[0]
    return [getattr(node, "meta", {}).get("example_value") for node in outputs]


def graph_runner(backend, compiled, gm, example_inputs):
    """What the transformed code calls to run a graph: the backend's compiled callable, run with the
    frame hook off (what a graph calls, e.g. a custom op's Python implementation, is never compiled on
    its own) and checked against the backend contract: `backend(gm, example_inputs)` returns a callable
    taking the graph's inputs positionally, which returns one value per graph output (a tensor where
    the graph returns a tensor). The first call's result is checked too, so a backend that returns
    garbage fails loudly, naming itself, instead of corrupting the program."""
    name = backend_name(backend)
    if not callable(compiled):
        raise BackendContractError(
            f"backend {name!r} returned {type(compiled).__name__} {compiled!r:.80} for a graph; a backend must "
            "return a callable that runs the graph (e.g. `return gm.forward`)")
    try:
        inspect.signature(compiled, follow_wrapped=False).bind(*example_inputs)
    except TypeError as e:
        raise BackendContractError(
            f"backend {name!r} returned {compiled!r:.80}, which cannot take the graph's {len(example_inputs)} "
            f"positional inputs ({e})") from None
    except ValueError:  # no signature to read (a builtin): the first call will tell
        pass
    expected = _expected_outputs(gm)
    compiled = _past_fx_printing(compiled)
    checked = False

    def compiled_graph(*args):
        nonlocal checked
        hook = _C.set_callback(None)
        try:
            result = compiled(*args)
        finally:
            _C.set_callback(hook)
        if not checked:
            _check_result(name, result, expected)
            checked = True
        return result
    compiled_graph.__qualname__ = "compiled_graph"
    return compiled_graph


def _past_fx_printing(compiled):
    """A GraphModule returned as the compiled callable (`return gm`) prints an excerpt of its code to
    stderr whenever the graph raises, which eager does not (the program may well catch the error):
    such a module is called as a plain module, its hooks still run."""
    if isinstance(compiled, torch.fx.GraphModule):
        wrapped = getattr(type(compiled), "_wrapped_call", None)
        if getattr(wrapped, "cls_call", True) is None:   # no __call__ of the class's own
            module_call = torch.nn.Module.__call__
            return lambda *args: module_call(compiled, *args)
    return compiled


def _check_result(name, result, expected) -> None:
    if not isinstance(result, (tuple, list)) or len(result) != len(expected):
        got = f"{type(result).__name__} of length {len(result)}" if isinstance(result, (tuple, list)) else \
            type(result).__name__
        raise BackendContractError(
            f"the function compiled by backend {name!r} returned {got}; the graph has {len(expected)} output(s) "
            "and it must return them as a tuple or list")
    for i, (value, want) in enumerate(zip(result, expected)):
        if isinstance(want, torch.Tensor) and not isinstance(value, torch.Tensor):
            raise BackendContractError(
                f"the function compiled by backend {name!r} returned {type(value).__name__} as output {i}, "
                "where the graph returns a tensor")
