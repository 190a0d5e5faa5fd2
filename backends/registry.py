"""The backend registry: names -> `callable(gm, example_inputs) -> callable`, plus the entry-point
group `bytegraph.backends` for backends installed by other packages."""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Callable

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str | None = None, fn: Callable | None = None):
    """Register `fn` under `name`; usable as `@register_backend("name")` or `@register_backend`."""
    if callable(name) and fn is None:
        fn, name = name, name.__name__
    if fn is None:
        return lambda f: register_backend(name or f.__name__, f)
    _BACKENDS[name or fn.__name__] = fn
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
