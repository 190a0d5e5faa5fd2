"""Draws from Python's `random` module, made by the transformed code before its graph (see
frontend/variables/python_random.py): the numbers, and the generator's state after the call, are
eager's; the trace never decides on a drawn number (a graph break) nor guards it (no recompile)."""
from __future__ import annotations

import random

import pytest
import torch

import bytegraph
from helpers import assert_same, compiled, outcome


def _run(fn, *args, seed=0):
    """(outcome, the generator's next number afterwards) of `fn(*args)` from `random.seed(seed)`."""
    random.seed(seed)
    result = outcome(fn, *args)
    return result, random.random()


def _same_as_eager(fn, opt, *args, seed=0):
    want = _run(fn, *args, seed=seed)
    with bytegraph.config.patch(strict=True):
        got = _run(opt, *args, seed=seed)
    assert_same(got, want)
    return got[0]


def draws(x):
    a = random.random()
    b = random.uniform(1, 2)
    c = random.randint(1, 6)
    d = random.randrange(start=0, stop=10, step=3)
    e = random.getrandbits(12)
    return x * a + b, c, d + 1, e


def test_draws_are_eagers_numbers_in_one_graph_without_recompiles():
    opt, cnt = compiled(draws)
    for seed in range(6):
        _same_as_eager(draws, opt, torch.randn(3), seed=seed)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    node_names = [n.name for n in cnt.graphs[0].graph.nodes if n.op == "placeholder"]
    assert sum(name.startswith("random_draw") for name in node_names) == 5


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_drawn_sizes(backend):
    def fn(x):
        a = random.randrange(start=0, stop=4)
        b = random.randrange(start=1, stop=4)
        return x + 2, torch.zeros(a, b).shape, torch.ones(b, 2) * x[:2]
    bytegraph.reset()
    opt = bytegraph.compile(fn, backend=backend, fullgraph=True)
    for seed in range(5):
        _same_as_eager(fn, opt, torch.randn(3), seed=seed)


def test_a_decision_on_a_drawn_number_breaks_the_graph():
    def fn(x):
        n = random.randint(0, 3)
        if n > 1:
            return x + n
        return x - n
    bytegraph.reset()
    opt, cnt = compiled(fn)
    for seed in range(6):
        _same_as_eager(fn, opt, torch.randn(2), seed=seed)
    assert bytegraph.stats.break_records      # never a guard on the number


def test_draws_keep_their_order_around_a_graph_break():
    def fn(x):
        a = random.random()
        bytegraph.graph_break()
        b = random.random()
        return x * a - b, random.getrandbits(5)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    for seed in range(3):
        _same_as_eager(fn, opt, torch.randn(2), seed=seed)
    assert cnt.frame_count == 2


def test_a_graph_raising_after_draws_leaves_the_generator_as_eager():
    # eager draws twice, then the index raises before the third draw: the rerun puts the
    # generator back, so the compiled call has drawn twice too
    def fn(x, i):
        y = x * random.random() + random.randint(1, 6)
        return y[i], random.getrandbits(8)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    x = torch.arange(4.0)
    assert _same_as_eager(fn, opt, x, torch.tensor([1]))[0] == "ok"
    assert _same_as_eager(fn, opt, x, torch.tensor([9]))[0] == "raise"
    assert cnt.frame_count == 1


def test_invalid_arguments_raise_eagers_error():
    def fn(x):
        return x + random.randrange(3, 3)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    assert _same_as_eager(fn, opt, torch.randn(2))[1] is ValueError
    assert bytegraph.stats.break_records


class _Noisy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * random.random()

    @staticmethod
    def backward(ctx, g):
        return g


def test_a_draw_in_code_proved_pure_is_refused():
    # a Function's forward runs where eager runs it (and a checkpointed one again in backward)
    def fn(x):
        return _Noisy.apply(x + 1)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    _same_as_eager(fn, opt, torch.randn(2))
    assert any("random" in str(b) for b in bytegraph.stats.break_records)


def test_other_random_functions_are_not_traced():
    def fn(x):
        random.seed(4)
        return x * random.choice([1, 2, 3]), random.gauss(0, 1)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    _same_as_eager(fn, opt, torch.randn(2))
    assert bytegraph.stats.break_records


def test_a_replaced_method_of_the_generator_is_not_assumed():
    # randint calls `self.randrange`: replaced (here returning a float), the draw is not an int any more
    def fn(x):
        return x + random.randint(1, 3)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    _same_as_eager(fn, opt, torch.randn(2))
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    original = random.Random.randrange
    random.Random.randrange = lambda self, a, b: a + 0.5
    try:
        _same_as_eager(fn, opt, torch.randn(2))     # the lookup is guarded: traced again, and refused
    finally:
        random.Random.randrange = original
    assert bytegraph.stats.break_records


def test_draws_over_huge_ranges_are_bounded_without_walking_the_range():
    """A draw's bounds come from the range's ends: `min`/`max` walked `range(0, 2**62, 5)` (a C loop no
    signal stops), and CPython's test_pow.test_big_exp (`randrange(1 << 49999, 1 << 50000)`) compiled
    for ever."""
    def fn(x):
        a = random.randrange(0, 1 << 62, 5)
        b = random.randrange(1 << 40, -(1 << 40), -7)
        return x + 1, a % 5, b

    def huge(x):
        return x + 1, random.randrange(1 << 600, 1 << 601)     # no symbolic int holds it: a graph break

    bytegraph.reset()
    opt, cnt = compiled(fn)
    for seed in range(3):
        _same_as_eager(fn, opt, torch.randn(3), seed=seed)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    placeholders = [n.name for n in cnt.graphs[0].graph.nodes if n.op == "placeholder"]
    assert sum(name.startswith("random_draw") for name in placeholders) == 2
    bytegraph.reset()
    opt, cnt = compiled(huge)
    _same_as_eager(huge, opt, torch.randn(3))
    assert cnt.frame_count == 1 and [r.reason for r in bytegraph.stats.break_records] == [
        "call to random.randrange is not traceable (its numbers may not fit a symbolic int)"]
