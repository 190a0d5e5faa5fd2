"""Dynamic shapes: symbolic sizes from torch's ShapeEnv, the dynamic policy (dynamic=True/False/None,
BYTEGRAPH_DYNAMIC_SHAPES, mark_dynamic, automatic dynamic), 0/1 specialization, duck sizing, shape
guards, symbolic values in Python code and data-dependent values."""
import functools
import math

import bytegraph
import numpy as np
import pytest
import torch
from bytegraph.testing import CompileCounter
from helpers import assert_same, cache_entries, check, compiled
from torch import nn


def sym_placeholders(gm):
    return [n for n in gm.graph.nodes if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.SymInt)]


def guard_text(fn, index=0):
    return cache_entries(fn)[index].info.check.readable()


# -- every dim symbolic from the first compile ---------------------------------------------------
def heads_fn(x):
    b, d = x.shape[0] * 2, x.size(-1) // 4
    y = x.repeat(2, 1).view(b, -1, d)
    return (y * x.shape[0]).sum(1), y.shape, b


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))).softmax(-1)


class Attention(nn.Module):
    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.qkv, self.proj, self.heads = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim), heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


def test_function_compiles_once_for_every_batch_size():
    cnt = CompileCounter()
    with bytegraph.config.patch(dynamic_shapes=True):
        opt = bytegraph.compile(heads_fn, backend=cnt)
        for n in range(2, 13):
            got = check(opt, heads_fn, torch.randn(n, 8))
            assert type(got[2]) is int and got[2] == 2 * n
            assert type(got[1]) is torch.Size and got[1] == (2 * n, 4, 2)
    assert cnt.frame_count == 1
    assert bytegraph.stats.recompiles == 0
    assert sym_placeholders(cnt.graphs[0])


def test_mlp_compiles_once_for_every_batch_size():
    model, cnt = MLP(), CompileCounter()
    with bytegraph.config.patch(dynamic_shapes=True):
        opt = bytegraph.compile(model, backend=cnt)
        for n in range(2, 13):
            check(opt, model, torch.randn(n, 8))
    assert cnt.frame_count == 1
    assert len(sym_placeholders(cnt.graphs[0])) == 1     # the batch; the feature dim is fixed by fc1
    text = guard_text(model)
    assert "L['x'].size(1) == 8" in text and "2 <= L['x'].size(0)" in text
    # parameters stay static
    assert "L['self'].fc1.weight: Parameter torch.float32 cpu size=[32, 8]" in text


def test_attention_compiles_once_for_every_batch_and_sequence_length():
    model, cnt = Attention(), CompileCounter()
    with bytegraph.config.patch(dynamic_shapes=True):
        opt = bytegraph.compile(model, backend=cnt)
        for b in range(2, 13):
            check(opt, model, torch.randn(b, 3 + (b * 5) % 15, 16))
        for t in range(3, 18):
            check(opt, model, torch.randn(3, t, 16))
    assert cnt.frame_count == 1
    assert bytegraph.stats.graph_breaks == {} or not sum(bytegraph.stats.graph_breaks.values())
    assert len(sym_placeholders(cnt.graphs[0])) == 2     # B and T


def test_compile_dynamic_true_and_false():
    def f(x):
        return x.mean(0) * x.shape[0]
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (2, 3, 4, 5):
        check(opt, f, torch.randn(n, 3))
    assert cnt.frame_count == 1 and sym_placeholders(cnt.graphs[0])

    bytegraph.reset()
    cnt = CompileCounter()
    with bytegraph.config.patch(dynamic_shapes=True):   # an explicit dynamic=False wins
        opt = bytegraph.compile(f, backend=cnt, dynamic=False)
        for n in (2, 3, 4, 3):
            check(opt, f, torch.randn(n, 3))
    assert cnt.frame_count == 3
    assert not any(sym_placeholders(g) for g in cnt.graphs)


def test_backend_receives_symbolic_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append([type(v) for v in example_inputs])
        return gm.forward

    def f(x):
        return x * x.shape[0]
    opt = bytegraph.compile(f, backend=backend, dynamic=True)
    assert opt(torch.ones(3, 2)).sum() == 18
    assert opt(torch.ones(4, 2)).sum() == 32
    assert len(seen) == 1 and torch.SymInt in seen[0] and torch.Tensor in seen[0]


def _truth_of_sizes(x):
    n = x.shape[0]
    if all(x.shape) and n:      # asks "nonzero?", as HF LongT5's padding does: never "== 5?"
        return x * 2 + n
    return x


def test_truth_of_a_symbolic_size_does_not_specialize_it():
    cnt = CompileCounter()
    opt = bytegraph.compile(_truth_of_sizes, backend=cnt)
    for n in (2, 5, 7, 9):
        check(opt, _truth_of_sizes, torch.randn(n, 3))
    assert cnt.frame_count == 2 and len(sym_placeholders(cnt.graphs[1])) == 1
    assert bytegraph.stats.recompiles == 1


# -- automatic dynamic ---------------------------------------------------------------------------
def test_automatic_dynamic_recompiles_once_then_never():
    def f(x, y):
        return (x @ y).relu() + x.shape[0]
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    check(opt, f, torch.randn(2, 3), torch.randn(3, 4))
    assert cnt.frame_count == 1 and not sym_placeholders(cnt.graphs[0])
    check(opt, f, torch.randn(5, 3), torch.randn(3, 4))
    assert cnt.frame_count == 2 and len(sym_placeholders(cnt.graphs[1])) == 1
    for n in (6, 7, 11, 2, 3):
        check(opt, f, torch.randn(n, 3), torch.randn(3, 4))
    assert cnt.frame_count == 2
    assert bytegraph.stats.recompiles == 1
    reason = bytegraph.stats.recompile_reasons[0][1]
    assert "L['x'].size(0) changed: expected 2, got 5" in reason and "automatic dynamic" in reason
    # a second dim changing later makes that one dynamic too (once)
    check(opt, f, torch.randn(4, 6), torch.randn(6, 4))
    for k in (7, 9):
        check(opt, f, torch.randn(4, k), torch.randn(k, 4))
    assert cnt.frame_count == 3


def test_automatic_dynamic_not_for_other_changes():
    def f(x):
        return x * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    check(opt, f, torch.randn(2, 3))
    check(opt, f, torch.randn(2, 3, dtype=torch.float64))     # dtype: a plain static recompile
    check(opt, f, torch.randn(2, 3, 1))                       # rank
    assert cnt.frame_count == 3
    assert not any(sym_placeholders(g) for g in cnt.graphs)


def test_an_argument_that_is_a_tensor_or_an_int_makes_both_forms_symbolic():
    # the kind of `y` flipping (tensor <-> int) is a change automatic dynamic acts on: the int becomes
    # a symbol and the tensor's sizes symbolic, so one graph per kind serves every later call
    def f(x, y):
        return x * y
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    counts = []
    for i, n in enumerate((2, 3, 4, 4, 5, 5, 6, 7, 9)):
        args = (torch.randn(n), n + 1) if i in (1, 4, 5, 8) else (torch.randn(n), torch.randn(n))
        check(opt, f, *args)
        counts.append(cnt.frame_count)
    assert counts == [1, 2, 3, 3, 3, 3, 3, 3, 3]
    assert all(sym_placeholders(g) for g in cnt.graphs[1:])
    assert "type(L['y']) is int" in guard_text(f, 1)


def test_an_argument_that_is_an_int_then_a_tensor():
    def f(x, y):
        return x + y
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for y in (2, torch.ones(3), 5, torch.ones(4), torch.ones(6), 8):
        check(opt, f, torch.randn(1 if type(y) is int else y.shape[0]), y)
    assert cnt.frame_count == 3    # 2 static; then both forms symbolic (int first, the tensor's size with it)


def test_automatic_dynamic_can_be_turned_off():
    def f(x):
        return x + 1
    cnt = CompileCounter()
    with bytegraph.config.patch(automatic_dynamic_shapes=False):
        opt = bytegraph.compile(f, backend=cnt)
        for n in (2, 3, 4):
            check(opt, f, torch.randn(n))
    assert cnt.frame_count == 3


# -- mark_dynamic ------------------------------------------------------------------------------
def test_mark_dynamic():
    def f(x):
        return x.sum(0) / x.shape[0]
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for n in (2, 3, 7):
        x = torch.randn(n, 5)
        bytegraph.mark_dynamic(x, 0)
        check(opt, f, x)
    assert cnt.frame_count == 1
    assert len(sym_placeholders(cnt.graphs[0])) == 1
    assert "L['x'].size(1) == 5" not in guard_text(f)            # dim 1 is static: TENSOR_MATCH
    assert "size=[*, 5]" in guard_text(f)
    with pytest.raises(IndexError):
        bytegraph.mark_dynamic(torch.randn(2), 1)


# -- 0/1 specialization and duck sizing ----------------------------------------------------------
def test_sizes_zero_and_one_are_specialized():
    def f(x):
        return x.sum(0) * x.shape[0], x.shape[0]
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (1, 2, 3, 0, 1, 5, 0):
        check(opt, f, torch.randn(n, 3))
    assert cnt.frame_count == 3    # size 1, size 0, and one graph for every size >= 2
    dim0_symbolic = sorted(any(n.meta["source"].name() == "L['x'].size(0)" for n in sym_placeholders(g))
                           for g in cnt.graphs)
    assert dim0_symbolic == [False, False, True]


def test_duck_sizing_equal_then_unequal_recompiles_once():
    def f(x, y):
        if x.shape[0] == y.shape[0]:
            return x + y, "same"
        return torch.cat([x, y]), "different"
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    check(opt, f, torch.randn(3), torch.randn(3))
    check(opt, f, torch.randn(5), torch.randn(5))
    assert cnt.frame_count == 1
    assert len(sym_placeholders(cnt.graphs[0])) == 1                 # one shared symbol
    assert "L['y'].size(0) == L['x'].size(0)" in guard_text(f)
    assert check(opt, f, torch.randn(4), torch.randn(2))[1] == "different"
    assert cnt.frame_count == 2
    assert "shape guard failed: L['y'].size(0) == L['x'].size(0)" in bytegraph.stats.recompile_reasons[0][1]
    assert check(opt, f, torch.randn(7), torch.randn(3))[1] == "different"
    assert check(opt, f, torch.randn(6), torch.randn(6))[1] == "same"
    assert cnt.frame_count == 2


def test_shape_guards_are_readable_python():
    def f(x, y):
        return x + y
    opt = bytegraph.compile(f, backend=CompileCounter(), dynamic=True)
    opt(torch.randn(4, 3), torch.randn(4, 3))
    text = guard_text(f)
    assert "2 <= L['x'].size(0)" in text
    assert "L['y'].size(0) == L['x'].size(0)" in text
    assert "L['x'].stride(0) == L['x'].size(1)" in text
    source = cache_entries(f)[0].info.check.source
    assert "L_y.size(0) == L_x.size(0)" in source


# -- symbolic values in Python code -------------------------------------------------------------
def test_size_arithmetic_and_comparisons_stay_symbolic():
    def f(x, y):
        n = x.shape[0]
        same = x.shape[1:] == y.shape[1:]
        s = x.shape + (1,)
        out = x.reshape(s).squeeze(-1) * (n // 2) + math.floor(n / 2) + int(n) + float(n) / 2
        return out, same, s, x.shape.numel(), abs(-n), max(n, 3), n % 3, len(x)
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (3, 4, 6, 9):
        got = check(opt, f, torch.randn(n, 2), torch.randn(5, 2))
        assert type(got[2]) is torch.Size and type(got[3]) is int and type(got[-1]) is int
    assert cnt.frame_count == 1


def test_specializing_uses_add_guards():
    def f(x):
        acc = torch.zeros(x.shape[1])
        for i in range(x.size(0)):        # unrolled: specializes x.size(0), with a guard
            acc = acc + x[i] * (i + 1)
        return acc, str(x.shape[1])
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    check(opt, f, torch.randn(3, 4))
    check(opt, f, torch.randn(3, 4))
    assert cnt.frame_count == 1
    text = guard_text(f)
    assert "L['x'].size(0) == 3" in text and "L['x'].size(1) == 4" in text
    check(opt, f, torch.randn(5, 4))
    check(opt, f, torch.randn(3, 6))
    assert cnt.frame_count == 3
    assert "L['x'].size(0) == 3" in bytegraph.stats.recompile_reasons[0][1]


def test_inplace_metadata_ops_do_not_change_input_guards():
    def f(x):
        x.t_()
        x.unsqueeze_(0)
        x.squeeze_(0)
        x.transpose_(0, 1)
        return x * x.shape[0], x.shape
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (3, 4, 5):
        a, b = torch.randn(n, 2), None
        b = a.clone()
        got, expected = opt(a), f(b)
        torch.testing.assert_close(got, expected)
        assert a.shape == b.shape and a.stride() == b.stride()
    assert cnt.frame_count == 1
    text = guard_text(f)   # the layout the input had when it was passed, not after `t_()`
    assert "L['x']: Tensor torch.float32 cpu size=[*, *] stride=[*, 1]" in text
    assert "L['x'].stride(0) == L['x'].size(1)" in text


# -- data-dependent values -----------------------------------------------------------------------
def test_data_dependent_values_break_by_default():
    def f(x):
        y = x * 2
        v = y.sum().item()
        return y + v
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    check(opt, f, torch.randn(3))
    assert cnt.frame_count == 2
    assert any("item" in reason for reason in bytegraph.stats.graph_breaks)

    def g(x):
        return x.nonzero().shape, x.tolist()
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(g, backend=cnt)
    assert opt(torch.tensor([0.0, 1.0, 2.0])) == g(torch.tensor([0.0, 1.0, 2.0]))
    assert sum(bytegraph.stats.graph_breaks.values()) >= 1


def test_capture_scalar_outputs_makes_item_an_unbacked_symbol():
    def f(x):
        y = x * 2
        v = y.sum().item()
        return y + v, v
    cnt = CompileCounter()
    with bytegraph.config.patch(capture_scalar_outputs=True):
        opt = bytegraph.compile(f, backend=cnt)
        for _ in range(3):
            x = torch.randn(3)
            got = check(opt, f, x)
            assert type(got[1]) is float
    assert cnt.frame_count == 1
    assert sum(bytegraph.stats.graph_breaks.values()) == 0
    assert any(n.target == "item" for n in cnt.graphs[0].graph.nodes)

    def g(x):
        if x.sum().item() > 0:     # a decision on the data: still a graph break
            return x + 1
        return x - 1
    cnt = CompileCounter()
    with bytegraph.config.patch(capture_scalar_outputs=True):
        opt = bytegraph.compile(g, backend=cnt)
        check(opt, g, torch.ones(3))
        check(opt, g, -torch.ones(3))
    assert sum(bytegraph.stats.graph_breaks.values()) >= 1


# -- unspecialized Python ints and floats (automatic dynamic for scalars) --------------------------
def scale_fn(x, scale):
    return x * scale + scale / 3


def step_fn(x, step):
    return x + step * 2, step + 1


def test_a_changing_float_recompiles_once_as_a_symfloat_input():
    cnt = CompileCounter()
    opt = bytegraph.compile(scale_fn, backend=cnt)
    x = torch.randn(4)
    for scale in (0.5, 1.5, -2.25, 3.0, 1e-3):
        got = opt(x, scale)
        assert torch.equal(got, scale_fn(x, scale))     # the real float: bit-for-bit eager
    assert cnt.frame_count == 2
    assert "automatic dynamic: L['scale'] now symbolic" in bytegraph.stats.recompile_reasons[0][1]
    placeholders = [n for n in cnt.graphs[1].graph.nodes if n.op == "placeholder"]
    assert any(isinstance(n.meta["example_value"], torch.SymFloat) for n in placeholders)
    text = guard_text(scale_fn, 1)
    assert "type(L['scale']) is float" in text and "L['scale'] ==" not in text


def test_a_changing_int_step_counter_recompiles_once_zero_and_one_included():
    # like torch: an unspecialized int is its own symbol (no duck sizing) and 0/1 are not specialized
    cnt = CompileCounter()
    opt = bytegraph.compile(step_fn, backend=cnt)
    for step in range(6):
        x = torch.randn(3)
        got = opt(x, step)
        expected = step_fn(x, step)
        assert torch.equal(got[0], expected[0]) and got[1] == expected[1] and type(got[1]) is int
    assert cnt.frame_count == 2
    assert sym_placeholders(cnt.graphs[1])
    assert "type(L['step']) is int" in guard_text(step_fn, 1)


def test_int_arithmetic_past_64_bits_is_computed_on_specialized_values():
    """torch's symbolic ints are 64-bit: `a << 1200` on a symbolic `a` is `int_oo*a` in its expression,
    and divmod on it failed inside sympy (CPython's test_strtod, an internal error); `i << 100` is
    `int_oo*i` even when i is 0. Such an operation is computed on the specialized values (guarded);
    one that stays in range stays symbolic."""
    def wide(x, i, exp):
        a, b = i * 10 ** max(exp, 0), 10 ** max(0, -exp)
        q, r = divmod(a << 1200, b)
        return x + 1, q, r, (i << 100) == (2 << 100)

    def narrow(x, i):
        return x + 1, (i << 3) // 5

    # wide: a graph (the add alone) per call; narrow: static, then symbolic (add, << and //) for the rest
    for fn, calls, frames, ops in ((wide, [(3, -20), (0, -30), (2, -25), (7, 4)], 4, 4),
                                   (narrow, [(3,), (0,), (2,), (7,)], 2, 4)):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt)
        for args in calls:
            assert_same(opt(torch.ones(2), *args), fn(torch.ones(2), *args), exact=True)
        assert cnt.frame_count == frames and cnt.op_count == ops and not bytegraph.stats.break_records


def test_a_size_tuple_compared_with_an_unspecialized_int_is_reused_at_new_values():
    # HF XLM's `assert mask.size() == (bs, slen)`: a tuple's `==` tries identity first, which for a
    # symbolic int guarded the SymInt object itself, a guard no later call passes (a recompile per length)
    def f(x, n):
        assert x.size() == (2, n)
        return x * 2, [x.size(1)].index(n)
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for n in (8, 12, 16, 20):
        x = torch.randn(2, n)
        got, expected = opt(x, n), f(x, n)
        assert torch.equal(got[0], expected[0]) and got[1] == expected[1]
    assert cnt.frame_count == 2          # static at 8, symbolic from 12 on
    assert len(bytegraph.stats.recompile_reasons) == 1


def test_the_identity_of_an_unspecialized_int_breaks_the_graph():
    # `m is n` between ints depends on CPython's small-int cache: True at 12, False at 300
    def f(x, n):
        m = x.size(1)
        return x + 1, m is n
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for n in (8, 12, 300, 400):
        x = torch.randn(2, n)
        got, expected = opt(x, n), f(x, n)
        assert torch.equal(got[0], expected[0]) and got[1] is expected[1]
    assert cnt.frame_count == 2
    assert any("identity of symbolic int" in r.reason for r in bytegraph.stats.break_records)


def test_a_decision_on_an_unspecialized_number_is_a_guard():
    def f(x, lr):
        if lr > 0.15:
            return x * lr
        return x - lr
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    for lr in (0.1, 0.2, 0.3, 0.4, 0.05, 0.01):
        assert torch.equal(opt(x, lr), f(x, lr))
    assert cnt.frame_count == 3         # 0.1 static; 0.2 symbolic (lr > 0.15); 0.05 symbolic (lr <= 0.15)
    assert any("L['lr'] > 0.15" in guard_text(f, i) for i in range(3))

    def g(x, n):
        return sum(x * i for i in range(n))   # range() needs the value: specialized with a guard
    opt = bytegraph.compile(g, backend=CompileCounter())
    for n in (2, 3, 3, 2):
        assert torch.equal(opt(x, n), g(x, n))
    assert "L['n'] == 3" in guard_text(g, 1)


def test_floats_crossing_a_break_into_a_resume_function(capsys):
    def f(x, lr):
        y = x * 2
        print("step")          # graph break: `lr` is handed to the resume function
        return y * lr

    def g(x):
        v = x.sum().item()     # a new float every call, crossing the break
        return x * v
    for fn, make_args in ((f, lambda i: (torch.randn(3), 0.1 * (i + 1))), (g, lambda i: (torch.randn(3),))):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt)
        for i in range(6):
            args = make_args(i)
            assert torch.equal(opt(*args), fn(*args))
        assert bytegraph.stats.recompiles == 1, bytegraph.stats.recompile_reasons
        assert cnt.frame_count == 3     # the first graph, then the resume function's: static, symbolic


_GLOBAL_INT, _GLOBAL_FLOAT = 2, 0.5


def test_global_ints_stay_constants_global_floats_become_dynamic():
    global _GLOBAL_INT, _GLOBAL_FLOAT

    def f(x):
        return x * _GLOBAL_INT + _GLOBAL_FLOAT
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    try:
        for i in range(3):
            _GLOBAL_INT, _GLOBAL_FLOAT = 2, 0.5 + i
            assert torch.equal(opt(x), f(x))
        assert cnt.frame_count == 2
        for i in range(3):       # torch's rule: ints from globals are specialized
            _GLOBAL_INT, _GLOBAL_FLOAT = 3 + i, 0.5
            assert torch.equal(opt(x), f(x))
        assert cnt.frame_count == 5
    finally:
        _GLOBAL_INT, _GLOBAL_FLOAT = 2, 0.5


def test_module_int_attributes_stay_constants():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 1

        def forward(self, x, n):
            return x * self.k + n
    m = Scale()
    cnt = CompileCounter()
    opt = bytegraph.compile(m, backend=cnt)
    x = torch.randn(3)
    for k, n in ((1, 1), (1, 2), (2, 3), (3, 4)):
        m.k = k
        assert torch.equal(opt(x, n), m(x, n))
    assert cnt.frame_count == 4    # every new self.k recompiles; n became symbolic at the second call
    assert "L['self'].k == 3" in guard_text(m, 3)
    assert all("L['n'] ==" not in guard_text(m, i) for i in range(1, 4))


def test_dynamic_true_makes_numbers_symbolic_from_the_start_and_false_never():
    cnt = CompileCounter()
    opt = bytegraph.compile(scale_fn, backend=cnt, dynamic=True)
    for scale in (0.5, 1.5, 2.5):
        x = torch.randn(3)
        assert torch.equal(opt(x, scale), scale_fn(x, scale))
    assert cnt.frame_count == 1
    cnt = CompileCounter()
    opt = bytegraph.compile(step_fn, backend=cnt, dynamic=False)
    for step in (1, 2, 3):
        opt(torch.randn(3), step)
    assert cnt.frame_count == 3


def test_bools_are_never_unspecialized():
    def f(x, flag):
        return x + 1 if flag else x - 1
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for flag in (True, False, True, False):
        assert torch.equal(opt(torch.ones(2), flag), f(torch.ones(2), flag))
    assert cnt.frame_count == 2
    assert "L['flag'] == True" in guard_text(f, 0)


def test_unspecialized_numbers_through_aot_eager_forward_and_backward():
    def f(w, lr, n):
        return (w * lr).pow(2).sum() * n + lr
    opt = bytegraph.compile(f, backend="aot_eager")
    for i in range(4):
        lr, n = 0.1 * (i + 1), i + 2
        w1 = torch.randn(5, requires_grad=True)
        w2 = w1.detach().clone().requires_grad_(True)
        got, expected = opt(w1, lr, n), f(w2, lr, n)
        torch.testing.assert_close(got, expected)
        got.backward()
        expected.backward()
        torch.testing.assert_close(w1.grad, w2.grad)
    assert bytegraph.stats.recompiles == 1
    with torch.no_grad():      # the inference graph too
        torch.testing.assert_close(opt(torch.ones(3), 0.7, 5), f(torch.ones(3), 0.7, 5))


# -- autocast is state of the trace, not of the process --------------------------------------------
def test_tracing_inside_autocast_does_not_change_the_process_autocast_state():
    seen = []

    def backend(gm, example_inputs):
        seen.append(torch.is_autocast_enabled("cpu"))   # the first graph compiles at the break
        return gm.forward

    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
            inside = torch.is_autocast_enabled("cpu")
            print("break")
            z = y @ w
        return y, z, inside
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    opt = bytegraph.compile(f, backend=backend)
    y, z, inside = opt(x, w)
    ey, ez, einside = f(x, w)
    assert y.dtype == ey.dtype == torch.bfloat16 and z.dtype == ez.dtype and inside is einside is True
    torch.testing.assert_close(z, ez)
    assert seen and not any(seen)
    assert not torch.is_autocast_enabled("cpu")


def test_a_backend_without_symfloat_support_keeps_floats_constant():
    cnt = CompileCounter()

    def backend(gm, example_inputs):
        assert not any(isinstance(x, torch.SymFloat) for x in example_inputs)
        return cnt(gm, example_inputs)
    backend.specialize_float = True
    opt = bytegraph.compile(step_fn, backend=backend)
    for step in range(3):                           # ints still become symbolic
        opt(torch.randn(2), step)
    assert cnt.frame_count == 2
    cnt.clear()
    opt = bytegraph.compile(scale_fn, backend=backend)
    for scale in (0.5, 1.5, 2.5):
        x = torch.randn(2)
        assert torch.equal(opt(x, scale), scale_fn(x, scale))
    assert cnt.frame_count == 3
    bytegraph.reset()
    cnt.clear()
    with bytegraph.config.patch(specialize_float=True):
        opt = bytegraph.compile(scale_fn, backend=cnt)
        for scale in (0.5, 1.5, 2.5):
            opt(torch.randn(2), scale)
    assert cnt.frame_count == 3


def test_symbolic_size_compares_with_constant_tuples():
    def f(x):
        s = x.shape
        return x * 2, s == (3, 4), s != (3, 4), s[1:] == (4,), s == (3, 5)

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    x = torch.randn(3, 4)
    out, expected = opt(x), f(x)
    torch.testing.assert_close(out[0], expected[0])
    assert out[1:] == expected[1:] == (True, False, True, False)
    assert cnt.frame_count == 1


def test_a_symbolic_number_keeps_the_type_eager_gives_with_other_number_types():
    # `n + np.float64(2.5)` is a numpy float, `max(n, 2.5)` is n itself (an int) when n wins,
    # `n.__add__(2.5)` is NotImplemented: torch's symbolic arithmetic would answer plain floats
    others = [np.float64(2.5), np.float32(1.5), np.int64(3), 2.5, 3.0, True]

    def f(x, n, o):
        return (x * 2, n + o, o * n, n < o, o - n, n // o, max(n, o), min(o, n), n.__add__(o),
                n.__radd__(o), o.__mul__(n), n.__lt__(o))

    for o in others:
        bytegraph.reset()
        opt, cnt = compiled(f, dynamic=True)
        for n in (3, 4, 5):
            got, want = opt(torch.ones(2), n, o), f(torch.ones(2), n, o)
            assert [type(v) for v in got] == [type(v) for v in want], (o, n, got, want)
            assert_same(got, want)
        assert cnt.frame_count >= 1, o


def test_max_of_symbolic_ints_stays_symbolic():
    def f(x):
        return x.new_zeros(max(x.shape[0], x.shape[1]))

    bytegraph.reset()
    opt, cnt = compiled(f, dynamic=True)
    for shape in [(3, 5), (6, 4), (7, 2)]:
        check(opt, f, torch.ones(shape))
    assert cnt.frame_count == 1


# -- switch_transformers' shape: shared decorator, data-dependent expert loop, three lengths -------
def _renames_kwarg(func):
    """transformers' `deprecate_kwarg`: one wrapper code, a closure `func` per decorated forward."""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if "old_cache" in kwargs:
            kwargs["cache"] = kwargs.pop("old_cache")
        return func(*args, **kwargs)
    return wrapped


class _Experts(nn.ModuleDict):
    """The experts hit, found by `nonzero` (a graph break), each looked up by a key made from a
    tensor's value and run on the rows routed to it (a size that differs per expert)."""
    def __init__(self, dim, n):
        super().__init__()
        for i in range(n):
            self[f"expert_{i}"] = nn.Linear(dim, dim)

    def forward(self, h, choice):
        out = torch.zeros_like(h)
        for idx in torch.bincount(choice, minlength=len(self)).gt(0).nonzero():
            rows = torch.where(choice == idx)[0]
            out.index_add_(0, rows, self[f"expert_{idx[0]}"](h[rows]))
        return out


class _MoEBlock(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.attn, self.router, self.experts = nn.Linear(dim, dim), nn.Linear(dim, n), _Experts(dim, n)

    @_renames_kwarg
    def forward(self, h, mask=None, cache=None):
        h = h + self.attn(h) * mask[..., None]
        flat = h.reshape(-1, h.shape[-1])
        return h + self.experts(flat, self.router(flat).argmax(-1)).view_as(h)


class _MoEStack(nn.Module):
    def __init__(self, dim=8, n=4):
        super().__init__()
        self.embed, self.blocks = nn.Embedding(50, dim), nn.ModuleList(_MoEBlock(dim, n) for _ in range(2))

    @_renames_kwarg
    def forward(self, ids, mask=None):
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h, mask=mask)
        return h


def test_moe_with_shared_decorator_recompiles_each_graph_once_over_three_lengths():
    """The HF sweep's switch_transformers pattern: every graph of the first length recompiles at most
    once when the length changes (automatic dynamic), and not at all at a third length; the shared
    decorator's closure and the expert keys never make a length change recompile again."""
    torch.manual_seed(0)
    model = _MoEStack().eval()
    cnt = CompileCounter()
    opt = bytegraph.compile(model, backend=cnt)
    graphs = []
    for length in (8, 8, 12, 16):
        ids = torch.randint(0, 50, (2, length), generator=torch.Generator().manual_seed(length))
        mask = torch.ones(2, length)
        with torch.no_grad():
            assert torch.equal(opt(ids, mask=mask), model(ids, mask=mask)), length
        graphs.append(cnt.frame_count)
    first, again, second, third = graphs
    assert first > 4 and again == first       # the breaks: nonzero, where, the key's format
    assert first < second <= 2 * first and third == second


def test_fullgraph_captures_item_as_torch_compile_does():
    # fullgraph=True asks for one graph: `.item()` is an unbacked symbol there (not a break, which
    # would be an error), as with capture_scalar_outputs
    def fn(x):
        return torch.ones(max(x.item(), 12)), x.float().item() / 2
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    for n in (10, 15):
        got = check(opt, fn, torch.tensor([n]))
        assert type(got[1]) is float
    assert cnt.frame_count == 1 and any(n.target == "item" for n in cnt.graphs[0].graph.nodes)
    bytegraph.reset()
    cnt = CompileCounter()
    check(bytegraph.compile(fn, backend=cnt), fn, torch.tensor([10]))     # (without it: a break)
    assert sum(bytegraph.stats.graph_breaks.values()) >= 1


def test_math_functions_of_a_symbolic_float_do_not_break():
    # math.sin/log/atan2/copysign of a float argument that became symbolic broke the graph ("call to builtin
    # sin is not traceable"); they are computed on the guarded value, as other math functions are
    def f(x, v):
        return x * math.sin(v) + math.log(abs(v)) + math.atan2(v, 2.0) + math.copysign(1.0, v)

    opt, cnt = compiled(f)
    x = torch.ones(2)
    for v in (0.5, -1.5, 2.25, -1.5):
        assert_same(opt(x, v), f(x, v))
    assert len(bytegraph.stats.break_records) == 0
    assert cnt.frame_count == 3     # computed on its value: an entry per value seen (the repeat of -1.5 hits)


_TABLE = torch.arange(20.0)


def _index_by_number(x, n):
    return _TABLE[n] + x, _TABLE[-n], x[n % 2]


def test_a_symbolic_int_index_selects_without_a_recompile_per_value():
    """`t[n]` with n an int that automatic dynamic made symbolic is `t.select(0, n)`: one graph serves
    every n inside the bounds (guarded), where indexing read n's value (a recompile per value). Out of
    bounds, indexing raises eager's IndexError."""
    cnt = CompileCounter()
    opt = bytegraph.compile(_index_by_number, backend=cnt)
    x = torch.randn(2)
    for n in (2, 3, 4, 7, 19, 20, 5):
        if n == 20:
            with pytest.raises(IndexError, match="index 20 is out of bounds for dimension 0 with size 20"):
                opt(x, n)
            continue
        assert_same(opt(x, n), _index_by_number(x, n))
    # n = 2, then symbolic from n = 3 on; (20 compiles a frame that raises: no graph)
    assert cnt.frame_count == 2
    graph = cnt.graphs[-1]
    assert [n.target for n in graph.graph.nodes if n.op == "call_function"].count(torch.select) == 3
