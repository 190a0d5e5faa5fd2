"""Coverage gaps closed for HuggingFace's audio encoders (wav2vec2, hubert, wavlm, sew... issue 14),
each class tested on a small program of its own, compared with eager and with torch.compile's capture:

- a parametrized module's weight (`torch.nn.utils.parametrize`, weight norm) is traced through its
  parametrizations, not passed as a module to a torch function;
- a graph break inside a call with `*args`/`**kwargs` (library wrappers' `func(self, *args, **kwargs)`)
  resumes after the call: before, the whole wrapper ran eagerly, and each small frame it called
  (a config's `__getattribute__` raising AttributeError for `getattr(cfg, name, default)`, a
  comprehension handed a real dict iterator) was compiled on its own and broke;
- a function marked as having a constant result (`bytegraph.assume_constant_result`, or torch's
  marker attribute that transformers sets on its lru_cache'd availability probes) runs once, at
  compile time, and its result is a constant of the graph;
- in training, SpecAugment's `h[mask] = v` (a boolean mask) breaks instead of failing in AOTAutograd
  (its backward has a data-dependent shape); under no_grad it stays in the graph.
"""
from __future__ import annotations

import functools

import pytest
import torch
import torch._dynamo
from torch.nn.utils import parametrizations, parametrize

import bytegraph
from helpers import assert_same, compiled


def torch_graphs(fn, *args, **kwargs) -> int:
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(*args, **kwargs).graph_count


def check(fn, *args, graphs=1, breaks=0, like_torch=True, **kwargs):
    """fn(*args, **kwargs) through bytegraph equals eager on two calls, with `graphs` graphs and
    `breaks` graph breaks (and as many graphs through torch.compile when `like_torch`; torch counts
    a break under an inlined call once per frame it crosses)."""
    expected = fn(*args, **kwargs)
    opt, cnt = compiled(fn)
    assert_same(opt(*args, **kwargs), expected)
    assert_same(opt(*args, **kwargs), expected)   # the cached entries too
    assert cnt.frame_count == graphs, cnt.frame_count
    bytegraph.reset()
    explained = bytegraph.explain(fn)(*args, **kwargs)
    reasons = [b.reason for b in explained.break_reasons]
    assert (explained.graph_count, explained.graph_break_count) == (graphs, breaks), reasons
    if like_torch:
        assert torch_graphs(fn, *args, **kwargs) == graphs
    return opt


# -- parametrized modules ----------------------------------------------------------------------
class _Scale(torch.nn.Module):
    """A user parametrization with a buffer: weight = original * scale."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, w):
        return w * self.scale


def test_weight_norm_parametrization_is_traced():
    torch.manual_seed(0)
    conv = parametrizations.weight_norm(torch.nn.Conv1d(4, 4, 3, padding=1), name="weight", dim=2)
    x = torch.randn(2, 4, 5)
    opt = check(lambda x: conv(x).relu(), x)
    with torch.no_grad():   # the parametrization's inputs are graph inputs: a new value is seen
        conv.parametrizations.weight.original1.mul_(3)
    assert_same(opt(x), conv(x).relu())


def test_hook_based_weight_norm_is_traced():
    # the deprecated `nn.utils.weight_norm`: a forward pre-hook object (from torch.nn.utils) that
    # computes the weight and sets it as a plain attribute of the module before each call
    torch.manual_seed(0)
    with pytest.warns(FutureWarning):
        conv = torch.nn.utils.weight_norm(torch.nn.Conv1d(4, 4, 3, padding=1))
    x = torch.randn(2, 4, 5)
    opt = check(lambda x: conv(x).relu(), x)
    with torch.no_grad():
        conv.weight_g.mul_(3)
    assert_same(opt(x), conv(x).relu())
    assert_same(conv.weight, torch._weight_norm(conv.weight_v, conv.weight_g, 0))


def test_chained_user_parametrizations_are_traced():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    parametrize.register_parametrization(lin, "weight", _Scale())
    parametrize.register_parametrization(lin, "weight", _Scale())   # applied in order: a second entry
    x = torch.randn(2, 3)
    opt = check(lambda x: lin(x) + lin.weight.sum(), x)
    lin.parametrizations.weight[1].scale.fill_(5.0)   # a buffer of a parametrization
    assert_same(opt(x), lin(x) + lin.weight.sum())


def test_parametrization_under_cached_equals_eager():
    # inside `parametrize.cached()` the weight is computed once and kept in torch's module-level
    # cache: the first compiled call fills it (a side effect replayed after the graph), the next
    # one reads it (its keys are guarded: a recompile)
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    parametrize.register_parametrization(lin, "weight", _Scale())
    x = torch.randn(2, 3)

    def fn(x):
        return lin(x) * 2

    opt, cnt = compiled(fn)
    with parametrize.cached():
        expected = fn(x)
        eager_cache = dict(parametrize._cache)
        parametrize._cache.clear()
        assert_same(opt(x), expected)
        assert list(parametrize._cache) == list(eager_cache)
        assert_same(parametrize._cache[next(iter(eager_cache))], next(iter(eager_cache.values())))
        assert_same(opt(x), expected)
    assert cnt.frame_count == 2
    assert_same(opt(x), fn(x))   # outside the context: the weight is computed again


# -- a graph break under f(*args, **kwargs) ----------------------------------------------------
class _Config:
    """Like transformers' PretrainedConfig: a Python __getattribute__ that maps names and defers to
    object's, raising AttributeError for a missing one."""
    attribute_map = {"hidden": "width"}

    def __init__(self):
        self.width = 3
        self.output_hidden = True

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


_config = _Config()


class _State:
    finally_ran = False


_state = _State()


def _inner(x, scale=1.0):
    x = x + scale
    torch._dynamo.graph_break()    # (a break for both compilers: bytegraph knows torch's by name)
    return x * 2


def _wrapper(x, *args, **kwargs):
    flags = {f"output_{k}": kwargs.pop(f"output_{k}", getattr(_config, f"output_{k}", False))
             for k in ("hidden", "attentions")}
    collected = {k.replace("output_", ""): [] for k, v in flags.items() if v}
    y = x.sin() * _config.hidden
    try:
        z = _inner(y, *args, **kwargs)
    finally:
        _state.finally_ran = True   # an attribute write (a list append would guard the list's length)
    return z.cos(), collected


def _linear_wrapper(x, *args, **kwargs):
    y = x.sin()
    return _inner(y, *args, **kwargs).cos() + len(args)


@pytest.mark.parametrize("args,kwargs", [((), {}), ((2.0,), {}), ((), {"scale": 3.0})])
def test_break_under_star_call_resumes(args, kwargs):
    # the caller's graph before the call, the callee's two, the caller's after it: 4 graphs and one
    # break in each frame (the caller running eagerly would give 2 graphs)
    x = torch.randn(3)
    check(_linear_wrapper, x, *args, graphs=4, breaks=2, **kwargs)


def test_break_under_star_call_in_try_finally_resumes():
    x = torch.randn(3)
    # (torch.compile makes 3: after a break inside a `try` block it runs the rest of the frame eagerly)
    opt = check(_wrapper, x, 2.0, graphs=4, breaks=2, like_torch=False, output_attentions=True)
    _state.finally_ran = False
    opt(x, 2.0, output_attentions=True)
    assert _state.finally_ran


def test_exception_from_star_call_reaches_the_handler():
    def fn(x, *args):
        try:
            return _inner(x, *args)
        except TypeError:   # too many arguments: raised by the call itself
            return x - 1
    x = torch.randn(3)
    assert_same(bytegraph.compile(fn)(x, 1, 2), fn(x, 1, 2))


# -- functions with a constant result ----------------------------------------------------------
_probe_calls = []


@functools.lru_cache
def _marked_probe(name):
    _probe_calls.append(name)
    return name == "torch"


_marked_probe._dynamo_marked_constant = True   # what transformers' _make_compile_constant does


@bytegraph.assume_constant_result
def _own_marked(n):
    _probe_calls.append(n)
    return n * 2


@functools.lru_cache
def _unmarked_probe():
    return len(_probe_calls)


def test_constant_result_functions_fold():
    def fn(x):
        if _marked_probe("torch") and not _marked_probe("jax"):
            x = x + 1
        return x * _own_marked(3)
    x = torch.randn(3)
    _marked_probe.cache_clear()
    _probe_calls.clear()
    expected = fn(x)
    eager_calls = list(_probe_calls)
    _probe_calls.clear()
    _marked_probe.cache_clear()
    opt, cnt = compiled(fn)
    assert_same(opt(x), expected)
    assert _probe_calls == eager_calls        # each ran once, at compile time, as eager ran them
    assert_same(opt(x), expected)
    assert _probe_calls == eager_calls        # and not again: the results are constants of the graph
    assert (cnt.frame_count, cnt.op_count) == (1, 2)
    assert torch_graphs(fn, x) == 1


def test_unmarked_lru_cache_and_non_constant_uses_still_break():
    def unmarked(x):
        return x * _unmarked_probe()           # a cache may hold a stale answer: not assumed constant

    def tensor_argument(x):
        return x * _own_marked(x.shape[0] + torch.ones(1))

    def list_result(x):
        return x * len(_own_marked([1]))       # a list is not a constant value
    x = torch.randn(3)
    for fn in (unmarked, tensor_argument, list_result):
        bytegraph.reset()
        opt, cnt = compiled(fn)
        assert_same(opt(x), fn(x))
        explained = bytegraph.explain(fn)(x)
        assert explained.graph_break_count == 1, fn.__name__


# -- SpecAugment's masked write, in training ---------------------------------------------------
def _mask_write(h, mask, fill):
    h[mask] = fill.to(h.dtype)


def _spec_augment(h, mask, fill):
    h = h * 2
    _mask_write(h, mask, fill)
    return h.sum()


def test_masked_write_breaks_only_when_autograd_records_it():
    # `h[mask] = fill` with a boolean mask: its backward reads `grad[mask]`, a data-dependent shape
    # AOTAutograd cannot trace; under no_grad it stays in the graph
    torch.manual_seed(0)
    fill = torch.nn.Parameter(torch.randn(4))
    mask = torch.zeros(2, 3, dtype=torch.bool)
    mask[0, 1] = True
    h = torch.randn(2, 3, 4, requires_grad=True)
    with torch.no_grad():
        check(_spec_augment, h, mask, fill, like_torch=False)
    bytegraph.reset()
    explained = bytegraph.explain(_spec_augment)(h, mask, fill)
    assert (explained.graph_count, explained.graph_break_count) == (2, 2)
    assert "boolean mask" in explained.break_reasons[0].reason
    bytegraph.reset()
    got = bytegraph.compile(_spec_augment, backend="aot_eager")(h, mask, fill)
    got.backward()
    got_grads = (h.grad.clone(), fill.grad.clone())
    h.grad = fill.grad = None
    want = _spec_augment(h, mask, fill)
    want.backward()
    assert_same(got, want)
    assert_same(got_grads, (h.grad, fill.grad))
