"""The small API that user and library code calls from inside compiled functions: graph_break,
is_compiling, allow_in_graph, assume_constant_result, mark_static, maybe_mark_dynamic.

Each function here is what runs eagerly; the frontend recognizes the same objects while tracing
(frontend/variables/torch.py; `assume_constant_result` in frontend/builder.py and
frontend/variables/functions.py) and gives them their traced meaning.
"""
from __future__ import annotations

import torch

from .guards.shape import STATIC_DIMS_ATTR, mark_dynamic, tensor_dims

# id -> the function, kept for the process (as torch keeps its own registry); looked up by identity,
# so asking about a user object never runs its __hash__/__eq__
_allowed_in_graph: dict[int, object] = {}
_constant_result: dict[int, object] = {}


def graph_break(msg: str = "") -> None:
    """Eagerly nothing; inside a compiled function the graph ends here and resumes after the call."""


def is_compiling() -> bool:
    """False when running eagerly, True while bytegraph traces the calling code (the trace folds
    the call to True, so `if bytegraph.is_compiling():` picks the branch that goes into the graph)."""
    return False


def allow_in_graph(fn):
    """Put calls of `fn` into the graph as one node instead of tracing into it. `fn` must take and
    return tensors (or nests of them) and behave like a torch op: no side effects, no data-dependent
    Python control flow; its result's metadata is found by running it on fake tensors."""
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, got {type(fn).__name__}")
    _allowed_in_graph[id(fn)] = fn
    return fn


def is_allowed_in_graph(fn) -> bool:
    return _allowed_in_graph.get(id(fn)) is fn


# the attribute torch's `assume_constant_result` sets, and that libraries set without importing torch
# (transformers' `is_torch_available` and friends): honoured by name, as torch's graph_break is
TORCH_CONSTANT_MARKER = "_dynamo_marked_constant"


def assume_constant_result(fn):
    """Promise that `fn` returns the same constant for the life of the process (an install probe, a
    hardware capability). A call of `fn` with constant arguments inside compiled code runs once, at
    compile time, and its result is a constant of the graph: later calls of the compiled code do not
    run `fn`, and nothing guards the result, so a function whose answer changes must not be marked."""
    _constant_result[id(fn)] = fn
    return fn


def is_constant_result(fn) -> bool:
    """Marked with `assume_constant_result`, or with torch's marker attribute (functools.wraps and
    lru_cache copy it to the wrapper)."""
    if _constant_result.get(id(fn)) is fn:
        return True
    try:
        marker = object.__getattribute__(fn, "__dict__").get(TORCH_CONSTANT_MARKER)
    except AttributeError:
        return False
    return marker is True


def maybe_mark_dynamic(t: torch.Tensor, dim) -> None:
    """Compile `t`'s dim(s) `dim` with a symbolic size if the program allows it; unlike torch's
    `mark_dynamic` bytegraph never errors when a marked dim specializes, so this is `mark_dynamic`."""
    mark_dynamic(t, dim)


def mark_static(t: torch.Tensor, dim=None) -> None:
    """Never compile `t`'s dim(s) `dim` (all dims when None) with a symbolic size, even when
    automatic dynamic sees them change or `dynamic=True`: each size gets its own graph."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"mark_static expects a tensor, got {type(t).__name__}")
    dims = range(t.dim()) if dim is None else tensor_dims(t, dim, "mark_static")
    setattr(t, STATIC_DIMS_ATTR, frozenset(getattr(t, STATIC_DIMS_ATTR, ())) | frozenset(dims))
