"""Cases the differential fuzzer (tests/oracles/fuzz.py) found, reduced: each compares compiled with
eager and asserts what was captured. The fuzzer's seeds that found them are kept in
tests/test_oracles_quick.py (FOUND_SEEDS)."""
import collections
import functools
import math

import pytest
import torch
import torch.nn.functional as F

import bytegraph
from bytegraph.testing import CompileCounterWithBackend
from helpers import assert_same, compiled, standard_test


def check(fn, *args, frames=1, breaks=None):
    return standard_test(fn, *args, frames=frames, breaks=breaks, exact=True)


# -- functools.wraps copies the wrapped function's names (seed 3054) ----------------------------------
def test_wraps_copies_names_of_a_nested_function():
    def f(x, n):
        def deco(fn):
            @functools.wraps(fn)
            def w(*a, **kw):
                return fn(*a, **kw) + 1
            return w

        @deco
        def base(a, b=2):
            """doc of base"""
            return a * b
        return base(n), base(x, b=n), base.__name__, base.__qualname__, base.__doc__, base.__wrapped__(n)
    got = check(f, torch.ones(2), 3, breaks=0)
    assert got[2] == "base"


def _global_base(a):
    """global doc"""
    return a * 2


def test_wraps_copies_names_of_a_global_function_and_guards_them():
    def f(x):
        @functools.wraps(_global_base)
        def w(a):
            return _global_base(a) + 1
        return w(x), w.__name__, w.__doc__
    check(f, torch.ones(2), breaks=0)
    opt = bytegraph.compile(f, backend="eager")
    assert opt(torch.ones(1))[1] == "_global_base"
    _global_base.__name__ = "renamed"     # the copied name is read again, not kept from the trace
    try:
        assert opt(torch.ones(1))[1] == "renamed" == f(torch.ones(1))[1]
    finally:
        _global_base.__name__ = "_global_base"


def test_wraps_copies_names_of_a_c_function():
    def f(x):
        @functools.wraps(torch.add)
        def w(a, b):
            return torch.add(a, b) * 2
        return w(x, x), w.__name__, w.__module__, w.__qualname__
    assert check(f, torch.ones(2), breaks=0)[1] == "add"


def test_wraps_on_a_function_from_outside_the_frame_breaks():
    # update_wrapper would rewrite a real function's attributes: not modelled, so not traced
    def outside(a):
        return a

    def f(x):
        y = x + 1
        g = functools.wraps(_global_base)(outside)
        return y * 2, g.__name__
    try:
        got = check(f, torch.ones(2), frames=2, breaks=1)
        assert got[1] == "_global_base"
    finally:
        outside.__name__ = "outside"


# -- __slots__ without __dict__: setting another attribute raises (seed 3038) --------------------------
class _Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def test_setting_an_attribute_outside_slots_raises_inside_the_try():
    def f(x, n):
        out = []
        try:
            _Slotted(n).w = 1
        except AttributeError as e:
            out.append(e.args)
        o = _Slotted(n)
        o.v = n + 1           # a slot: set
        return out, o.v, x + 1
    got = check(f, torch.ones(2), 3, breaks=0)
    assert got[0] == [("'_Slotted' object has no attribute 'w'",)]


# -- a symbolic value where the interpreter needs a constant (seeds 3065, 3161 under --dynamic) -----------
def test_sorted_reverse_from_a_symbolic_int_is_specialized():
    def f(x, n):
        return sorted([3, 1, 2], reverse=n % 2 == 0), x + n
    opt, cnt = compiled(f, dynamic=True)
    for n in (3, 5, 2, 4):       # the flag's value is guarded: one graph per parity, not per n
        assert_same(opt(torch.ones(2), n), f(torch.ones(2), n), exact=True)
    assert cnt.frame_count == 2
    assert not bytegraph.stats.break_records


def test_a_symbolic_value_where_a_constant_is_needed_breaks():
    # deque's maxlen must be a constant to model the deque: the call runs as Python (a break, not an
    # internal error), the graph before it is kept
    def f(x, n):
        y = x * 2
        return list(collections.deque([1, 2, 3], maxlen=n)), y + 1
    opt, cnt = compiled(f, dynamic=True)
    for n in (3, 2):
        assert_same(opt(torch.ones(2), n), f(torch.ones(2), n), exact=True)
    assert cnt.frame_count >= 2
    assert any(b.kind == "non_constant_value" for b in bytegraph.stats.break_records)
    assert not any(b.kind == "internal_error" for b in bytegraph.stats.break_records)


# -- division by a symbolic zero raises the program's ZeroDivisionError (seeds 3118, 3209, 3392 --dynamic) -
def test_division_by_a_symbolic_zero_raises_inside_the_try():
    def f(x, lst):
        res = []
        for v in lst:
            for op in (lambda a, b: a // b, lambda a, b: a % b, lambda a, b: a / b, divmod):
                try:
                    res.append(op(x.shape[0], v - 1))
                except ZeroDivisionError as e:
                    res.append(str(e))
            try:
                res.append(10 // (v - 1))
            except ZeroDivisionError as e:
                res.append(str(e))
        return res, x + 1
    opt, cnt = compiled(f, dynamic=True)
    for rows, lst in ((3, [3, 1]), (4, [2, 1]), (5, [1, 4])):
        assert_same(opt(torch.ones(rows), lst), f(torch.ones(rows), lst), exact=True)
    assert cnt.frame_count >= 1
    assert not bytegraph.stats.break_records, [str(b) for b in bytegraph.stats.break_records]


# -- inductor: symbolic Python scalars in the generated code (seeds 664, 675, 732 with --backend inductor) -
def _inductor_over_ns(fn, ns, x):
    """`fn(x, n)` compiled with inductor, called with each n (the second makes n a symbolic input),
    compared with eager; returns the counter."""
    opt, cnt = compiled(fn, CompileCounterWithBackend("inductor"))
    for n in ns:
        assert_same(opt(x.clone(), n), fn(x.clone(), n))
    return cnt


def test_inductor_returns_symbolic_scalars_through_math():
    # the wrapper returns math.floor(s0 / 2) and math.sqrt(...): its module imports math
    def f(x, n):
        return x + 1, (math.floor(n / 2), math.sqrt(n * n), math.pi * n)
    cnt = _inductor_over_ns(f, (2, 3, 5), torch.ones(3))
    assert cnt.frame_count == 2                 # static, then n symbolic
    assert not bytegraph.stats.break_records


def test_inductor_scalar_operands_may_be_symbolic():
    # clamp bounds, add/rsub's alpha, leaky_relu's slope, a slice filled with n: read from the kernel's
    # size arguments, not printed as constants
    def f(x, n):
        y = x.clone()
        y[0] = n
        return (torch.clamp(x * 3, min=n - 5, max=n), torch.add(x, x, alpha=n), torch.rsub(x, 1, alpha=n),
                F.leaky_relu(x - 2, negative_slope=n / 10), y)
    cnt = _inductor_over_ns(f, (2, 3, 5), torch.linspace(-1, 3, 6))
    assert cnt.frame_count == 2
    assert not bytegraph.stats.break_records


# -- explaining a miss guard by guard reads every guard's values, whatever their types now ---------------
def test_memory_sharing_guard_explained_on_non_tensors():
    # the graph writes into an input, so it is guarded on which inputs share memory; called next with
    # ints, the miss is explained guard by guard: the memory check met ints (it segfaulted)
    def f(a, b):
        if isinstance(a, torch.Tensor):
            a.add_(b)
        return a
    opt, cnt = compiled(f)
    assert_same(opt(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
    assert opt(3, 4) == 3
    assert cnt.frame_count == 1       # (the int call makes no graph)
    assert bytegraph.stats.recompiles == 1
    with pytest.raises(TypeError):
        bytegraph._tensor_guards.memory_sharing(torch.ones(1), 4)


# -- third pass of families (seeds from 50000) ------------------------------------------------------------
# inference_mode makes inference tensors: a graph run under grad mode alone would not (seed 50012)
@torch.inference_mode()
def _inferred(t):
    return t + 1


def test_inference_mode_block_makes_inference_tensors_in_the_graph():
    def f(x, on):
        a = x * 3
        with torch.inference_mode(mode=on):
            t = x * 2
        return a, t.is_inference(), t, torch.is_inference_mode_enabled(), torch.is_grad_enabled()
    # (the graph enters and leaves the mode itself)
    got = standard_test(f, torch.ones(2), True, frames=1, breaks=0)
    assert got[1] is True and got[2].is_inference() and not got[0].is_inference()
    assert standard_test(f, torch.ones(2), False, frames=1, breaks=0)[1] is False


def test_inference_mode_decorator_result_is_an_inference_tensor():
    def f(x):
        return x * 2, _inferred(x).is_inference(), _inferred(x)
    got = standard_test(f, torch.ones(2), frames=1, breaks=0, exact=True)
    assert got[1] is True and got[2].is_inference()
    assert not [r for r in bytegraph.stats.break_records if r.kind == "internal_error"]


# set_grad_enabled(b) made by a call that ran as Python: its exit restores the mode from before the call,
# not the one the resumed code started with (seeds 50054, 50085 with n changing)
def test_set_grad_enabled_made_before_a_break_restores_the_earlier_mode():
    def f(x, n):
        w = x.detach().requires_grad_()
        with torch.set_grad_enabled(n % 2 == 0):   # (symbolic n once it changed: the call breaks)
            a = w * 2
        return a.requires_grad, torch.is_grad_enabled(), a
    opt, cnt = compiled(f)
    for n in (0, 1, 2, 3):
        assert_same(opt(torch.ones(2), n), f(torch.ones(2), n))
        assert torch.is_grad_enabled()
    assert cnt.frame_count >= 2


# torch.numel of a tensor with a symbolic shape is a graph value, returned as an int (seed 50040)
def test_torch_numel_of_a_symbolic_shape_returns_an_int():
    def f(x):
        return torch.numel(x), torch.numel(x) * 2 + 1, x.sum()
    opt, cnt = compiled(f, dynamic=True)
    for rows in (2, 3, 4):
        got = opt(torch.ones(rows, 3))
        assert_same(got, f(torch.ones(rows, 3)))
        assert type(got[0]) is int
    assert cnt.frame_count == 1


# a user iterator class (`__iter__` returning self) consumed by list()/sum(): its items one __next__ at a
# time, not iter() of iter() forever (seeds 50001, 50032: RecursionError while tracing)
class _CountUp:
    def __init__(self, m):
        self.m = m
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.m:
            raise StopIteration
        self.i += 1
        return self.i * 2


def test_user_iterator_class_consumed_by_builtins():
    def f(x, n):
        return list(_CountUp(n)), sum(_CountUp(3)) * x, tuple(_CountUp(0))
    got = standard_test(f, torch.ones(2), 3, frames=1, breaks=0)
    assert got[0] == [2, 4, 6]
    assert not [r for r in bytegraph.stats.break_records if r.kind == "internal_error"]


# a callable object as a builtin (functools.cmp_to_key's KeyWrapper): looked up without hashing it or
# comparing it with ==, whose answers may raise (seed 50017: "unhashable type", "must be K instance")
def test_cmp_to_key_wrapper_breaks_without_internal_error():
    def f(x, lst):
        y = x + 1
        return sorted(lst, key=functools.cmp_to_key(lambda a, b: b - a)), y
    standard_test(f, torch.ones(2), [1, 3, 2], frames=1)   # (x + 1; the resumed frame has no tensor work)
    assert bytegraph.stats.break_records
    assert not [r for r in bytegraph.stats.break_records if r.kind == "internal_error"]


# a break whose first try failed after pruning the graph's dead size arithmetic cannot retry from the
# checkpoint (its last node is gone): the frame runs as Python (seed 50076: "add is not in list")
def test_break_after_a_prune_does_not_retry_from_the_pruned_checkpoint():
    def f(x, n, s):
        return f'{s!s:>{n + 1}}|' + '{0}{1}'.format(s, n), x + 1
    opt, cnt = compiled(f)
    for n, s in ((1, "ab"), (2, "abc"), (3, "ab"), (5, "")):
        assert_same(opt(torch.ones(2), n, s), f(torch.ones(2), n, s))
    assert cnt.frame_count >= 1


# aot_eager: `x` and `w = x.detach()` share memory without being views of one base: AOTAutograd's synthetic
# base could not rebuild an output aliasing one of them (AssertionError at run time, seed 52259)
def test_aot_inputs_sharing_memory_outside_views_run_as_traced():
    def f(x, y):
        w = x.detach().requires_grad_()
        with torch.no_grad():
            w.mul_(2)
        w = x.detach().requires_grad_()
        return x + y, w.sum().requires_grad
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    want = f(x.clone(), y)
    bytegraph.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    assert_same(bytegraph.compile(f, backend=cnt)(x.clone(), y), want)
    assert cnt.frame_count == 3     # (before each requires_grad_() making a leaf, and after)


# aot_eager: a parameter frozen inside the graph (`p.requires_grad_(False)`): AOTAutograd's inputs are not
# leaves; the call runs as Python (seed 52030)
def test_aot_requires_grad_off_of_a_parameter_breaks():
    lin = torch.nn.Linear(4, 4)

    def f(x, on):
        y = x * 2
        for p in lin.parameters():
            p.requires_grad_(on)
        return lin(y), lin.weight.requires_grad
    x = torch.randn(3, 4)
    cnt = CompileCounterWithBackend("aot_eager")
    opt = bytegraph.compile(f, backend=cnt)
    for on in (False, True, False):
        got = opt(x, on)
        assert got[1] is on and got[0].requires_grad is on
        assert_same(got, f(x, on))
    assert cnt.frame_count >= 2
    assert any("requires_grad_(False)" in r.reason for r in bytegraph.stats.break_records)


# a graph compiled outside torch.inference_mode is not run inside it (an AOTAutograd graph links its outputs
# to autograd, which inference mode never does): inference mode is part of the global state guarded
# (seed 57309 with --backend aot_eager: eager raised "does not require grad", compiled returned a value)
def test_graph_compiled_outside_inference_mode_is_not_reused_inside_it():
    def g(w):
        return (w * w).sum()
    cnt = CompileCounterWithBackend("aot_eager")
    opt = bytegraph.compile(g, backend=cnt)
    w = torch.ones(2, requires_grad=True)
    assert_same(opt(w), g(w))
    with torch.inference_mode():
        got, want = opt(w), g(w)
        assert_same(got, want)
        assert got.grad_fn is None and got.is_inference()
    assert_same(opt(w), g(w))
    assert cnt.frame_count == 2     # one per mode; each reused when its mode is back
    assert "inference_mode" in bytegraph.guards.guard.GLOBAL_STATE_READERS


# inductor: a graph called under no_grad that turns grad mode on itself (`with torch.enable_grad()`) needs
# autograd for its inputs that require grad (seeds 57533, 57539: "does not require grad" raised compiled)
def test_inductor_graph_enabling_grad_under_no_grad_keeps_autograd():
    def f(w, n):
        with torch.enable_grad():
            loss = (w * n).sum()
        g, = torch.autograd.grad(loss, w)
        return g, loss.requires_grad
    w = torch.ones(3, requires_grad=True)
    cnt = CompileCounterWithBackend("inductor")
    with torch.no_grad():
        assert_same(bytegraph.compile(f, backend=cnt)(w, 2), f(w, 2))
    assert cnt.frame_count == 1     # (the graph before torch.autograd.grad; the rest has no tensor op)
