"""Torch functions and methods traced with eager's semantics: struct-sequence results keep their
type, keyword arguments count like positional ones, `Tensor.new` tells a Size from data, numpy
and C-level truth values never take a wrong branch, symbolic ints index sequences, lazy modules
initialize as in eager. Each test compares with eager and asserts what was captured."""
import collections
import sys
from typing import NamedTuple

import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend
from helpers import assert_same


# -- (1) struct sequences (torch.return_types) keep their type -----------------------------------
def test_named_return_types_kept():
    def f(x):
        r = torch.topk(x, 2)
        s = torch.sort(x)
        return r.values + s.values[:2], r.indices, s.indices, r, s

    x = torch.randn(5)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), f(x), exact=True)
    assert cnt.frame_count == 1 and cnt.op_count >= 4


_STRUCTSEQ_OPS = {
    "topk": lambda x: torch.topk(x, 2),
    "sort": lambda x: torch.sort(x, dim=1),
    "max_dim": lambda x: x.max(dim=0),
    "min_dim": lambda x: torch.min(x, 1, keepdim=True),
    "kthvalue": lambda x: torch.kthvalue(x, 2),
    "mode": lambda x: torch.mode(x),
    "median_dim": lambda x: x.median(dim=1),
    "nanmedian_dim": lambda x: torch.nanmedian(x, 0),
    "aminmax": lambda x: torch.aminmax(x),
    "cummax": lambda x: torch.cummax(x, 1),
    "cummin": lambda x: x.cummin(0),
    "frexp": lambda x: torch.frexp(x),
    "qr": lambda x: torch.linalg.qr(x),
    "slogdet": lambda x: torch.linalg.slogdet(x),
    "linalg_eigh": lambda x: torch.linalg.eigh(x @ x.T),
    "svd": lambda x: torch.svd(x),
}


@pytest.mark.parametrize("name", sorted(_STRUCTSEQ_OPS))
def test_struct_sequence_results_keep_their_type(name):
    op = _STRUCTSEQ_OPS[name]

    def f(x):
        r = op(x + 1)
        return r, r[0], type(r).__name__, r._fields if hasattr(r, "_fields") else len(r)

    x = torch.randn(4, 4, dtype=torch.float64)
    cnt = CompileCounter()
    got, want = bytegraph.compile(f, backend=cnt)(x), f(x)
    assert type(got[0]) is type(want[0])
    assert type(got[0]).__module__ == "torch.return_types"
    assert got[2] == want[2] and got[3] == want[3]
    for p, q in zip(got[0], want[0]):
        torch.testing.assert_close(p, q)
    assert cnt.frame_count == 1 and cnt.op_count >= 2


def test_plain_tuple_results_stay_plain_tuples():
    def f(x):
        return torch.var_mean(x, dim=0), torch.std_mean(x), x.split(2)

    x = torch.randn(4, 3)
    cnt = CompileCounter()
    got, want = bytegraph.compile(f, backend=cnt)(x), f(x)
    assert [type(g) for g in got] == [type(w) for w in want] == [tuple, tuple, tuple]
    for g, w in zip(got, want):
        for p, q in zip(g, w):
            torch.testing.assert_close(p, q)
    assert cnt.frame_count == 1 and cnt.op_count >= 3


def test_struct_sequence_built_and_read_in_the_frame():
    def f(x):
        r = torch.return_types.topk((x.sin(), x.cos()))
        values, indices = r
        return r, r.values * 2, values + indices, r.indices is indices

    x = torch.randn(3)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), f(x), exact=True)
    assert cnt.frame_count == 1 and cnt.op_count >= 4


def test_struct_sequence_across_graph_break():
    def f(x):
        r = torch.sort(x)
        print("", end="")
        return r.values * 2, r, type(r)

    x = torch.randn(4)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), f(x), exact=True)
    assert cnt.frame_count == 2 and cnt.op_count >= 2


def test_struct_sequence_input_and_sys_float_info():
    def f(x, r):
        from sys import float_info
        return x * float_info.mant_dig + r.values, r.indices, sys.float_info.dig

    x = torch.randn(5)
    r = torch.topk(x, 5)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x, r), f(x, r), exact=True)
    assert cnt.frame_count == 1 and cnt.op_count == 2


class _TapeEntry(NamedTuple):
    inputs: list
    propagate: object


def test_namedtuple_appended_to_global_list_fullgraph():
    """A namedtuple made in the frame and written to a global: rebuilt through `tuple.__new__`,
    so the generated code calls no Python `__new__` that the hook would compile again."""
    tape = []

    def f(x):
        y = x + 1
        tape.append(_TapeEntry(inputs=["a"], propagate=2))
        tape.append(tuple.__new__(_TapeEntry, (["b"], 3)))
        return y

    cnt = CompileCounter()
    out = bytegraph.compile(f, backend=cnt, fullgraph=True)(torch.ones(2))
    assert torch.equal(out, torch.ones(2) + 1)
    assert tape == [_TapeEntry(["a"], 2), _TapeEntry(["b"], 3)]
    assert all(type(t) is _TapeEntry for t in tape)
    assert cnt.frame_count == 1 and cnt.op_count == 1


# -- (2) keyword arguments are read like positional ones -----------------------------------------
def test_is_floating_point_by_keyword():
    def f(x):
        return (x + 1, torch.is_floating_point(input=x), torch.is_complex(input=x), torch.numel(input=x),
                x.size(dim=1), x.stride(dim=0), x.is_contiguous(memory_format=torch.contiguous_format))

    for x in (torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64)):
        bytegraph.reset()
        cnt = CompileCounter()
        assert_same(bytegraph.compile(f, backend=cnt)(x), f(x), exact=True)
        assert cnt.frame_count == 1 and cnt.op_count == 1


def test_size_by_keyword_dynamic():
    def f(x):
        return x.sum() * x.size(dim=1), x.size(dim=-1), x.stride(dim=0)

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for shape in ((3, 4), (2, 7)):
        x = torch.ones(shape)
        assert_same(opt(x), f(x), exact=True)
    assert cnt.frame_count == 1


def test_as_tensor_by_keyword():
    def f(x):
        return x + torch.as_tensor(data=np.arange(3.0) * 2)

    x = torch.ones(3, dtype=torch.float64)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), f(x), exact=True)
    assert cnt.frame_count == 1 and cnt.op_count >= 2


# -- (3) Tensor.new with a Size is a shape, with a tuple is data -----------------------------------
def test_tensor_new_with_size():
    def f(x):
        y = torch.rand(5, 8)
        return (x.new(y.size()).shape, x.new((5, 8)), x.new(x.shape).shape, x.new(5, 3).shape,
                x.new([1, 2]), x.new_zeros(y.size()), x.new().shape, x.new(tuple(y.shape)), x.sum())

    x = torch.randn(10, 10)
    for dynamic in (False, True):
        bytegraph.reset()
        cnt = CompileCounter()
        got, want = bytegraph.compile(f, backend=cnt, dynamic=dynamic)(x), f(x)
        assert_same(got[:-1], want[:-1], exact=True)
        torch.testing.assert_close(got[-1], want[-1])
        assert cnt.frame_count == 1 and cnt.op_count >= 8


# -- (4) numpy and C-level values used as truth values ---------------------------------------------
def test_numpy_scalar_truthiness():
    def f(x):
        L = np.lcm(8, 4)
        must = x.shape[-1] % L != 0 and x.shape[-1] > 4
        return x * 2 if must else x * 3

    def g(x):
        L = np.int64(8)
        must = x.shape[-1] % L != 0 or x.shape[-1] < 4
        return x * 2 if must else x * 3

    for fn in (f, g):
        for n in (16, 12):
            bytegraph.reset()
            x = torch.ones(n)
            got = bytegraph.compile(fn)(x)
            assert torch.equal(got, fn(x))
            e = bytegraph.explain(fn)(x)
            # np.lcm(8, 4) and np.int64(8) on constants fold to numpy constants, and so do the
            # decisions on them
            assert (e.graph_count, e.graph_break_count) == (1, 0)


def test_numpy_bool_argument_truth_breaks_not_guesses():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2)
    for flag in (np.False_, np.True_, np.False_):
        assert torch.equal(opt(x, flag), f(x, flag))
    assert cnt.frame_count >= 1   # the branches after the break are still compiled


# -- (5) symbolic ints as sequence indices ----------------------------------------------------------
def test_list_store_symbolic_index():
    def f(x, i):
        items = [1, 2]
        items[i] = 5
        return x + items[0]

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for i in (0, 1, 0):
        assert torch.equal(opt(torch.ones(2), i), f(torch.ones(2), i))
    assert cnt.frame_count >= 1 and cnt.op_count >= 1


def test_symbolic_index_load_store_delete_slice():
    def f(x, i):
        items = [1, 2, 3, 4]
        items[i] = 5
        a = items[i + 1]
        del items[i]
        b = items[i:i + 2]
        t = (7, 8, 9)[i]
        s = "abc"[i:]
        items.insert(i, 9)
        items.pop(i)
        r = range(10)[i]
        d = collections.deque([1, 2, 3])
        d[i] = 4
        return x + a + t + r, items, b, list(d), [0] * (i + 1), s

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for i in (0, 1, 0):
        x = torch.ones(3)
        assert_same(opt(x, i), f(x, i), exact=True)
    assert cnt.frame_count >= 1 and cnt.op_count >= 3
    assert bytegraph.explain(f)(torch.ones(3), 1).graph_break_count == 0


def test_symbolic_index_out_of_range_raises_like_eager():
    def f(x, i):
        items = [1, 2]
        items[i] = 5
        return x + 1

    with pytest.raises(IndexError):
        f(torch.ones(2), 5)
    with pytest.raises(IndexError):
        bytegraph.compile(f, backend=CompileCounter(), dynamic=True)(torch.ones(2), 5)


def test_islice_with_symbolic_count():
    import itertools

    def f(x, n):
        return x + sum(itertools.islice(range(10), n)), list(itertools.islice("abcdef", n))

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (3, 4):
        assert_same(opt(torch.ones(2), n), f(torch.ones(2), n), exact=True)
    assert cnt.frame_count >= 1 and cnt.op_count >= 1


def test_list_indexed_by_tensor_breaks():
    def f(x, t):
        items = [x, x * 2, x * 3]
        return items[t] + 1

    x, t = torch.ones(2), torch.tensor(1)
    cnt = CompileCounter()
    assert torch.equal(bytegraph.compile(f, backend=cnt)(x, t), f(x, t))
    assert cnt.frame_count >= 1


# -- (6) lazy modules initialize like eager ----------------------------------------------------------
def test_lazy_module_initialized():
    torch.manual_seed(0)
    m = torch.nn.LazyLinear(3)
    cnt = CompileCounter()
    opt = bytegraph.compile(m, backend=cnt)
    x = torch.randn(2, 5)
    out = opt(x)
    assert tuple(m.weight.shape) == (3, 5) and type(m) is torch.nn.Linear
    torch.testing.assert_close(out, m(x))
    assert cnt.frame_count == 1 and cnt.op_count == 1   # the forward after initialization is compiled
    torch.testing.assert_close(opt(x), m(x))
    assert cnt.frame_count == 1


class _LazyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.LazyLinear(4)
        self.b = torch.nn.LazyConv1d(2, 3)

    def forward(self, x):
        return self.a(x).relu() + 1, self.b(x.unsqueeze(1))


def test_lazy_submodules_initialize_like_eager():
    torch.manual_seed(0)
    compiled_net, eager_net = _LazyNet(), _LazyNet()
    cnt = CompileCounter()
    opt = bytegraph.compile(compiled_net, backend=cnt)
    x = torch.randn(2, 6)
    torch.manual_seed(1)
    got = opt(x)
    torch.manual_seed(1)
    want = eager_net(x)
    for p, q in zip(got, want):
        torch.testing.assert_close(p, q)
    assert [type(m) for m in compiled_net.children()] == [type(m) for m in eager_net.children()]
    assert cnt.frame_count >= 1
    # initialized now (the submodules changed class: one recompile), later calls hit the cache
    for p, q in zip(opt(x), eager_net(x)):
        torch.testing.assert_close(p, q)
    frames = cnt.frame_count
    for p, q in zip(opt(x), eager_net(x)):
        torch.testing.assert_close(p, q)
    assert cnt.frame_count == frames
    e = bytegraph.explain(compiled_net)(x)
    assert e.graph_count == 1 and e.graph_break_count == 0


# -- grad mode changed the ways eager changes it --------------------------------------------------
class _SetsGradMode:
    """A user context manager calling torch's setter directly, as library managers do."""

    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        torch._C._set_grad_enabled(self.prev)


def test_direct_grad_mode_setter_is_seen_by_the_trace():
    # `torch._C._set_grad_enabled(False)` ran in the graph, but `torch.is_grad_enabled()` was folded
    # to True: the branch was taken that eager does not take
    def f(x):
        with _SetsGradMode(False):
            y = x * 2
            if torch.is_grad_enabled():
                y = y + 5
        return y, (x * 3).requires_grad, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    expected = f(x)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), expected)
    assert cnt.frame_count == 1 and torch.is_grad_enabled()


def test_set_grad_enabled_made_before_a_break_restores_the_mode_it_found():
    # set_grad_enabled(False) applies at once and its exit restores the mode found then (True);
    # rebuilt at the break as set_grad_enabled(False) again, it found False and left grad off
    def f(x):
        x = x + 1
        ctx = torch.set_grad_enabled(False)
        bytegraph.graph_break()
        with ctx:
            x = x + 1
        return x, torch.is_grad_enabled()

    x = torch.zeros(3, requires_grad=True)
    expected = f(x)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), expected)
    assert cnt.frame_count == 2 and torch.is_grad_enabled()


def test_no_grad_made_before_a_break_applies_only_when_entered():
    def f(x):
        ctx = torch.no_grad()
        x = x + 1
        bytegraph.graph_break()
        y = x * 2                    # grad still on: no_grad() does nothing until entered
        with ctx:
            z = x * 3
        return y, z, isinstance(ctx, torch.no_grad)

    x = torch.ones(3, requires_grad=True)
    expected = f(x)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), expected)
    assert cnt.frame_count == 2 and torch.is_grad_enabled()


def test_inference_mode_is_not_taken_for_no_grad():
    # tensors made under inference_mode are inference tensors; a graph run under no_grad makes none
    # (the graph enters the mode itself: tests/test_inference_mode.py)
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return y.is_inference(), y.requires_grad, x * 2

    x = torch.ones(3, requires_grad=True)
    expected = f(x)
    explained = bytegraph.explain(f)(x)
    got = bytegraph.compile(f, backend=CompileCounter())(x)
    assert_same(got, expected)
    assert got[0] is True and explained.graph_break_count == 0 and torch.is_grad_enabled()


def test_unmodelled_global_state_setter_breaks_the_graph():
    def f(x):
        before = torch.get_num_threads()
        torch.set_num_threads(before)
        return x + 1

    x = torch.ones(3)
    explained = bytegraph.explain(f)(x)
    assert_same(bytegraph.compile(f, backend=CompileCounter())(x), f(x))
    assert explained.graph_break_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_saved_tensor_hooks_see_only_the_runs_tensors(backend):
    # compiling propagated `x * y` on fake tensors with the user's hooks installed: the pack hook
    # ran once more than in eager, on a fake tensor
    def f(x, y):
        return (x * y).sin()

    def run(fn):
        counts = [0, 0]

        def pack(t):
            counts[0] += 1
            return t

        def unpack(t):
            counts[1] += 1
            return t
        x = torch.ones(4, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = fn(x, torch.ones(4))
            packed = counts[0]
            out.sum().backward()
        return out.detach(), x.grad, packed, counts

    expected = run(f)
    cnt = bytegraph.testing.CompileCounterWithBackend(backend)
    got = run(bytegraph.compile(f, backend=cnt))
    assert_same(got, expected)          # the same packs, before and after backward
    assert cnt.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_inplace_foreach_ops_return_the_list_they_were_given(backend):
    # eager `torch._foreach_add_(xs, ...)` returns xs itself; a 0-d tensor scalar is a graph value
    def f(x, ys):
        xs = [x.clone(), x * 2]
        same_list = torch._foreach_add_(xs, torch.tensor(1.0)) is xs
        torch._foreach_mul_(ys, 3.0)                 # the frame's own tensors, written in place
        return xs, same_list, torch._foreach_add(xs, 1.0)
    cnt = CompileCounterWithBackend(backend)
    ys, ref_ys = [torch.ones(2), torch.ones(3)], [torch.ones(2), torch.ones(3)]
    got, want = bytegraph.compile(f, backend=cnt)(torch.ones(2), ys), f(torch.ones(2), ref_ys)
    assert got[1] is True and type(got[2]) is type(want[2])
    for a, b in zip(got[0] + list(got[2]) + ys, want[0] + list(want[2]) + ref_ys):
        assert torch.equal(a, b)
    assert cnt.frame_count == 1


class _Counted(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op
        self.register_buffer("steps", torch.zeros(()))
        self.calls = 0

    def forward(self, t, w):
        self.steps += 1
        self.calls += 1
        return self.op(t, w)


_REFUSED_BY_EAGER = {   # operands fake kernels accept and eager's kernels refuse (benchmarks/fake_strictness.py)
    "linear": (lambda t, w: torch.nn.functional.linear(t, w), (2, 4), (3, 4)),
    "layer_norm": (lambda t, w: torch.nn.functional.layer_norm(t, (4,), w), (2, 4), (4,)),
    "group_norm": (lambda t, w: torch.nn.functional.group_norm(t, 2, w), (2, 4, 3), (4,)),
    "index_put_": (lambda t, w: t.clone().index_put_((torch.tensor([0, 1]),), w), (4,), (2,)),
    "cross": (lambda t, w: torch.linalg.cross(t, w), (3,), (3,)),
    "heaviside": (lambda t, w: torch.heaviside(t, w), (3,), (3,)),
    "nll_loss": (lambda t, w: torch.nn.functional.nll_loss(t, torch.tensor([0, 1]), w), (2, 4), (4,)),
}


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("op", sorted(_REFUSED_BY_EAGER))
def test_call_eager_refuses_raises_after_the_effects_before_it(op, backend):
    # in the graph, such a call raised at run time after `steps += 1` and before `calls += 1` was
    # replayed (fuzzer seed 64020), or, through inductor, returned a value: it runs as Python
    fn, t_shape, w_shape = _REFUSED_BY_EAGER[op]
    compiled_model, eager_model = _Counted(fn), _Counted(fn)
    t, w = torch.randn(t_shape, dtype=torch.float64), torch.randn(w_shape)
    with pytest.raises(Exception) as expected:
        eager_model(t, w)
    with pytest.raises(type(expected.value)):
        bytegraph.compile(compiled_model, backend=backend)(t, w)
    state = [(m.calls, m.steps.item()) for m in (compiled_model, eager_model)]
    assert state == [(1, 1.0), (1, 1.0)]


def test_mixed_dtypes_eager_accepts_stay_in_the_graph():
    def promoted(a, b, w):   # type promotion; a bfloat16 input with float32 norm weights (CPU mixed precision)
        return (a + b).sum() + torch.nn.functional.layer_norm(a.bfloat16(), (4,), w).float().sum()
    cnt = CompileCounter()
    args = (torch.randn(2, 4), torch.randn(2, 4, dtype=torch.float64), torch.randn(4))
    assert_same(bytegraph.compile(promoted, backend=cnt)(*args), promoted(*args))
    assert (cnt.frame_count, cnt.op_count) == (1, 7)


def test_product_of_mixed_dtypes_under_autocast_is_one_graph():
    def mixed_under_autocast(a, w):      # autocast casts both operands: one graph
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.nn.functional.linear(a, w) * 2
    cnt = CompileCounter()
    a, w = torch.randn(2, 4, dtype=torch.bfloat16), torch.randn(3, 4)
    assert_same(bytegraph.compile(mixed_under_autocast, backend=cnt)(a, w), mixed_under_autocast(a, w))
    assert cnt.frame_count == 1


class _PlainSubclass(torch.Tensor):
    pass


class _CountingSubclass(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _CountingSubclass.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _scaled_sin(x):
    return (x * 2).sin(), x.sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_plain_tensor_subclass_keeps_its_class(backend):
    # the graph's ops on the real subclass tensors keep the class (eager backend); through AOTAutograd
    # the results came back plain (inductor) or the compiled graph failed on them (aot_eager): those
    # backends run the ops as Python
    x = torch.randn(3).as_subclass(_PlainSubclass)
    cnt = CompileCounterWithBackend(backend)
    got, want = bytegraph.compile(_scaled_sin, backend=cnt)(x), _scaled_sin(x)
    assert [type(t) for t in got] == [type(t) for t in want] == [_PlainSubclass] * 2
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    assert cnt.frame_count == (1 if backend == "eager" else 0)


class _PlainChild(_PlainSubclass):
    pass


class _OtherPlain(torch.Tensor):
    pass


def test_plain_subclass_results_are_of_that_class_while_tracing():
    # torch.Tensor's own __torch_function__ converts every result to the argument's subclass: the
    # trace answered type()/isinstance() on the results with torch.Tensor
    def f(x, t, c):
        y = x * 2 + 1
        parts = torch.split(t + x, 1)
        z = torch.cat([t, c])
        return type(y).__name__, isinstance(y, _PlainSubclass), [type(p).__name__ for p in parts], \
            type(z).__name__, type(t * 2).__name__, y + z.sum()

    x = torch.randn(2).as_subclass(_PlainSubclass)
    c = torch.randn(2).as_subclass(_PlainChild)
    t = torch.randn(2)
    cnt = CompileCounter()
    got, want = bytegraph.compile(f, backend=cnt, fullgraph=True)(x, t, c), f(x, t, c)
    assert got[:5] == want[:5] == ("_PlainSubclass", True, ["_PlainSubclass"] * 2, "_PlainChild", "Tensor")
    assert type(got[5]) is type(want[5]) is _PlainChild and torch.equal(got[5], want[5])
    assert cnt.frame_count == 1


def test_unrelated_plain_subclasses_or_converted_in_place_results_break():
    def unrelated(a, b):
        y = a * 2
        try:
            return a + b
        except TypeError:
            return y

    def in_place(t, x):
        r = t.add_(x)
        return r is t, type(r).__name__, t * 2

    a, b = torch.ones(2).as_subclass(_PlainSubclass), torch.ones(2).as_subclass(_OtherPlain)
    assert bytegraph.explain(unrelated)(a, b).graph_break_count == 1
    cnt = CompileCounter()
    assert_same(bytegraph.compile(unrelated, backend=cnt)(a, b), unrelated(a, b))
    t1, t2, x = torch.ones(2), torch.ones(2), torch.ones(2).as_subclass(_PlainSubclass)
    cnt = CompileCounter()
    got, want = bytegraph.compile(in_place, backend=cnt)(t1, x), in_place(t2, x)
    assert got[:2] == want[:2] == (False, "_PlainSubclass") and torch.equal(got[2], want[2])
    assert torch.equal(t1, t2) and cnt.frame_count == 1
    assert bytegraph.explain(in_place)(torch.ones(2), x).graph_break_count == 1


class _ReplacesTensorMethods(torch.Tensor):
    k = 3

    def double(self):        # (torch.Tensor.double casts to float64)
        return self * 2

    def sum(self, *args, **kwargs):
        return 42

    @property
    def T(self):
        return "tee"


class _AddsAMethod(torch.Tensor):
    def scaled(self):
        return self * 3


@pytest.mark.parametrize("use", [lambda x: (x.double(), x.k), lambda x: (x.sum(), x * 2), lambda x: (x.T, x + 1)])
def test_plain_subclass_replacing_tensor_attributes_runs_as_python(use):
    # the graph named `sum`/`double`, which on the real tensor ran the subclass's method while the trace
    # had assumed torch's (a float64 tensor where eager gave float32, a tensor where eager gave 42)
    x = torch.ones(2).as_subclass(_ReplacesTensorMethods)
    cnt = CompileCounter()
    got, want = bytegraph.compile(use, backend=cnt)(x), use(x)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert all(torch.equal(g, w) if isinstance(w, torch.Tensor) else g == w for g, w in zip(got, want))
    assert got[0].dtype == want[0].dtype if isinstance(want[0], torch.Tensor) else True
    assert cnt.frame_count == 0


def test_plain_subclass_adding_a_method_is_traced():
    def f(x):
        return x.scaled() + 1

    x = torch.ones(2).as_subclass(_AddsAMethod)
    cnt = CompileCounter()
    got, want = bytegraph.compile(f, backend=cnt, fullgraph=True)(x), f(x)
    assert type(got) is type(want) is _AddsAMethod and torch.equal(got, want)
    assert cnt.frame_count == 1 and cnt.op_count == 2


def test_tensor_method_set_on_a_plain_subclass_after_compiling_recompiles():
    # the names the subclass defines are guarded: a torch.Tensor method set on it later must not be
    # skipped by the cached graph, which called torch's `sum`
    class Later(torch.Tensor):
        pass

    def f(x):
        return x.sum() + 1

    x = torch.ones(3).as_subclass(Later)
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    assert torch.equal(opt(x), f(x)) and cnt.frame_count == 1
    Later.sum = lambda self: torch.tensor(100.0)
    got, want = opt(x), f(x)
    assert torch.equal(got, want) and want.item() == 101.0
    assert bytegraph.stats().recompiles == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_subclass_with_its_own_torch_function_runs_it_as_eager_does(backend):
    # tracing ran the subclass's __torch_function__ on fake tensors (49 calls on a first call, eager 2)
    x = torch.randn(3).as_subclass(_CountingSubclass)
    _CountingSubclass.calls = 0
    want = _scaled_sin(x)
    eager_calls, _CountingSubclass.calls = _CountingSubclass.calls, 0
    cnt = CompileCounterWithBackend(backend)
    got = bytegraph.compile(_scaled_sin, backend=cnt)(x)
    assert _CountingSubclass.calls == eager_calls == 3
    # eager backend: each `__torch_function__` run natively breaks at its class-attribute write and
    # compiles the rest (the op on the subclass tensors, which keep their class)
    assert cnt.frame_count == (3 if backend == "eager" else 0)
    assert [type(t) for t in got] == [type(t) for t in want] and all(torch.equal(g, w) for g, w in zip(got, want))


# -- TorchScript callables run as they are ---------------------------------------------------------
def _scale_add(a, b):
    return a + b * 0.67


def test_torchscript_function_is_called_not_named_in_graph():
    """A scripted (or traced) function reports the name `torch.jit.ScriptFunction`: a graph naming it
    would call that class. Its node calls the ScriptFunction itself through a function of ours."""
    scripted = torch.jit.script(_scale_add)
    traced = torch.jit.trace(_scale_add, [torch.zeros(3), torch.zeros(3)])

    def f(a, b):
        return scripted(a, b) * 2 + traced(b, a)

    a, b = torch.randn(3), torch.randn(3)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt, fullgraph=True)(a, b), f(a, b))
    assert cnt.frame_count == 1 and cnt.op_count == 4
    called = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_function"]
    assert all(target is not torch.jit.ScriptFunction for target in called)


def test_fx_graph_module_call_is_traced_as_a_module_call():
    # fx installs its own `__call__` on a GraphModule's class (nn.Module.__call__ plus error printing):
    # the call broke as "its class overrides __call__"
    gm = torch.fx.symbolic_trace(_scale_add)

    def f(a, b):
        return gm(a, b) + 1

    a, b = torch.randn(3), torch.randn(3)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt, fullgraph=True)(a, b), f(a, b))
    assert cnt.frame_count == 1 and cnt.op_count == 3


def test_unbound_tensor_method_called_on_a_tensor():
    # `torch.Tensor.t(x)` (and `vmap(torch.Tensor.t)`) broke as "call to builtin TensorBase.t"
    def f(x, y):
        return torch.Tensor.t(x), torch.Tensor.add(x, y, alpha=2), torch.Tensor.sum(x, dim=0), \
            torch.Tensor.dim(x), torch.vmap(torch.Tensor.t)(x.expand(2, 3, 3))

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt, fullgraph=True)(x, y), f(x, y))
    assert cnt.frame_count == 1


# -- writes through as_strided views of an input's storage ------------------------------------------
def _written_beyond_the_view(x):
    x.as_strided((4,), (1,), 0).add_(1)     # x = base[1:3]: base[0] and base[3] are not x's
    return x * 2


def _written_between_the_strides(x):
    x.as_strided((2,), (1,), 1).mul_(10)    # x = base[::2]: base[1] is not x's
    return x + 0


def _written_within_the_input(x):
    x.as_strided((2,), (1,), 1).mul_(10)    # x = base[1:7]: base[1], base[2] are x's
    return x + 0


def _written_through_as_strided_of_a_transposed_input(x):
    x.t_()
    x.t_()
    x.as_strided((2,), (1,), x.storage_offset()).add_(1)   # a view chain AOTAutograd refuses to functionalize
    return x + 0


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn,make,breaks", [
    (_written_through_as_strided_of_a_transposed_input, lambda: torch.arange(6.0).reshape(2, 3), True),
    (_written_beyond_the_view, lambda: torch.arange(6.0)[1:3], True),
    (_written_between_the_strides, lambda: torch.arange(12.0)[::2], True),
    (_written_within_the_input, lambda: torch.arange(8.0)[1:7], False),
])
def test_write_through_as_strided_beyond_the_input(fn, make, breaks, backend):
    # a backend that functionalizes the graph writes an input back as its own elements: a write into
    # other memory of its storage was lost (inductor) or failed to compile (aot_eager). Such a write runs
    # as Python there; the eager backend runs it as recorded
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(fn, backend=cnt)
    results = []
    for f in (fn, compiled):
        x = make()
        results.append((f(x), x._base))
    assert_same(results[1], results[0])
    broke = breaks and backend != "eager"
    assert cnt.frame_count == (2 if broke else 1)
    assert [b.kind for b in bytegraph.stats.break_records if b.kind != "internal_error"] == \
        (["unsupported_call"] if broke else [])
    assert not [b for b in bytegraph.stats.break_records if b.kind == "internal_error"]


# -- in-place foreach ops reading what they wrote -------------------------------------------------
def _foreach_swapped_operands(x, y):
    torch._foreach_add_([x, y], [y, x], alpha=0.5)      # y gets the new x (the CPU loops in order)
    return x * 1, y * 1


def _foreach_written_twice(x):
    torch._foreach_add_([x, x[1:]], 1.0)
    return x * 1


def _foreach_plain(x, y):
    torch._foreach_add_([x, y], [y * 2, x * 2])
    return x * 1, y * 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn,breaks,graphs", [(_foreach_swapped_operands, True, 1), (_foreach_written_twice, True, 2),
                                              (_foreach_plain, False, 1)])
def test_foreach_in_place_reading_what_it_wrote(fn, breaks, graphs, backend):
    # a backend that functionalizes the graph reads every operand before writing any, and writes one
    # storage once: such foreach calls run as Python there
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(fn, backend=cnt)
    results = []
    for f in (fn, compiled):
        args = (torch.ones(3), torch.full((3,), 2.0))[:fn.__code__.co_argcount]
        results.append((f(*args), args))
    assert_same(results[1], results[0])
    broke = breaks and backend != "eager"
    assert [b.kind for b in bytegraph.stats.break_records] == (["unsupported_call"] if broke else [])
    assert cnt.frame_count == (graphs if broke else 1)     # (`x[1:]` before the break: a graph of its own)


# -- writes into a tensor whose elements share memory (an expanded one) ---------------------------------
def _write_add_(x):
    return x.expand(3, 3).add_(1), x


def _write_fill_(x):
    return x.expand(3, 3).fill_(2), x


def _write_iadd(x):
    y = x.expand(3, 3)
    y += 1
    return y, x


def _write_out(x):
    return torch.mul(torch.ones(3, 3), 2, out=x.expand(3, 3)), x


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [_write_add_, _write_fill_, _write_iadd, _write_out])
def test_a_write_into_an_expanded_tensor_is_eagers(fn, backend):
    # eager raises for some ops (add_, +=, out=) and not others (fill_); a functionalizing backend
    # writes a fresh tensor back and raised for none: such a write runs as Python
    def run(f):
        x = torch.zeros(3) + 1
        try:
            return ("ok", f(x))
        except RuntimeError as e:
            return ("raise", str(e), x)
    want = run(fn)
    cnt = CompileCounterWithBackend(backend)
    got = run(bytegraph.compile(fn, backend=cnt))
    assert_same(got, want)
    assert any("share memory" in b.reason for b in bytegraph.stats.break_records)


# -- grad-mode classes called with a function decorate it ------------------------------------------
@pytest.mark.parametrize("kind", [torch.no_grad, torch.enable_grad])
def test_bare_grad_mode_decorator_made_in_frame(kind):
    # `torch.no_grad(fn)` is `torch.no_grad()(fn)`: the function wrapped, not a context manager
    # (a manager called with a tensor later gave back a wrapper function)
    def f(x):
        def inner(v):
            return v * 3, torch.is_grad_enabled()

        wrapped = kind(inner)
        with torch.set_grad_enabled(kind is torch.no_grad):
            out, mode = wrapped(x)
        return out, out.requires_grad, mode, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    want = f(x)
    bytegraph.reset()
    cnt = CompileCounter()
    got = bytegraph.compile(f, backend=cnt)(x)
    assert_same(got, want)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
