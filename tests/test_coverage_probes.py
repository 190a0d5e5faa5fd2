"""Coverage gaps found by probing programs torch.compile captures whole (fullgraph): each test
compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it fails if the
construct ran eagerly."""
from __future__ import annotations

import pytest
import torch

import bytegraph
from helpers import assert_same, outcome, standard_test


def explain_counts(fn, *args):
    """(graph count, graph-break count) of `fn(*args)` from a clean slate."""
    bytegraph.reset()
    explained = bytegraph.explain(fn)(*args)
    return explained.graph_count, explained.graph_break_count


# -- Function.apply with keyword arguments ----------------------------------------------------------
class _ScaleBy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k=1.0, m=2.0):
        ctx.save_for_backward(x)
        return x * k + m

    @staticmethod
    def backward(ctx, g):
        return g, None, None


def test_function_apply_keywords_bind_like_eager():
    def named(x):
        return _ScaleBy.apply(x=x * 2), _ScaleBy.apply(x, k=3.0), _ScaleBy.apply(m=1.0, x=x, k=x)
    x = torch.randn(3, requires_grad=True)
    got = standard_test(named, x, frames=1, breaks=0)
    assert got[2].requires_grad
    # eager's apply binds keywords without defaults: a gap, an unknown or a repeated name raise its
    # TypeError (the call runs as Python)
    for bad in (lambda x: _ScaleBy.apply(x, m=1.0), lambda x: _ScaleBy.apply(x, q=1),
                lambda x: _ScaleBy.apply(x, x=x)):
        assert standard_test(bad, x, frames=0) == "TypeError"


def test_function_apply_keywords_gradients_match():
    def fn(x, y):
        return _ScaleBy.apply(k=y, x=x).sum()
    x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    fn(x, y).backward()
    want = x.grad.clone(), y.grad
    x.grad = y.grad = None
    bytegraph.reset()
    bytegraph.compile(fn, backend="aot_eager", fullgraph=True)(x, y).backward()
    assert torch.equal(x.grad, want[0]) and y.grad is want[1] is None


# -- collections.abc.Callable[[...], R] annotations --------------------------------------------------
def test_callable_annotation_with_parameter_list_is_folded():
    import collections.abc
    import typing
    T = typing.TypeVar("T")

    def fn(x):   # (this file's annotations are strings: the alias is made by hand)
        alias = collections.abc.Callable[[T, int], float]
        return x * 2, alias.__args__, collections.abc.Callable[[], T].__args__
    standard_test(fn, torch.randn(3), frames=1, breaks=0)


class _Holder:
    """Not a tensor: answers torch functions by unwrapping through torch's pytree (whose map_only
    annotates with `Callable[[T], Any]`)."""
    def __init__(self, t):
        self.t = t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        import torch.utils._pytree as pytree
        args = pytree.tree_map_only(_Holder, lambda h: h.t, args)
        kwargs = pytree.tree_map_only(_Holder, lambda h: h.t, kwargs or {})
        return func(*args, **kwargs)


def test_torch_function_wrapper_through_pytree_map_only():
    def fn(h):
        return torch.add(h, 1.0, alpha=2.0)
    standard_test(fn, _Holder(torch.ones(2, 2)), frames=1, breaks=0)
