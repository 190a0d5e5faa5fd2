"""Coverage gaps found by probing programs torch.compile captures whole (fullgraph): each test
compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it fails if the
construct ran eagerly."""
from __future__ import annotations

import pytest
import torch

import bytegraph
from helpers import assert_same, outcome, standard_test


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


# -- module forward hooks with kwargs -----------------------------------------------------------------
class _Scaled(torch.nn.Module):
    def forward(self, x, scale=1.0, shift=None):
        out = x * scale
        return out if shift is None else out + shift


def _module_with_hooks(pre, post=None):
    m = _Scaled()
    m.register_forward_pre_hook(pre, with_kwargs=True)
    if post is not None:
        m.register_forward_hook(post, with_kwargs=True)
    return m


def test_forward_pre_hook_with_kwargs_changes_kwargs_in_place():
    def pre(module, args, kwargs):
        kwargs["scale"] = kwargs.get("scale", 1.0) * 3
        kwargs["shift"] = args[0].sum()

    def post(module, args, kwargs, out):
        return out - kwargs["shift"], len(args), sorted(kwargs)
    m = _module_with_hooks(pre, post)
    standard_test(lambda x: m(x, scale=2.0), torch.randn(3), frames=1, breaks=0)


def test_forward_pre_hook_with_kwargs_replaces_arguments():
    def pre(module, args, kwargs):
        return (args[0] + 1,), {"shift": torch.ones(1), **kwargs}
    m = _module_with_hooks(pre)
    standard_test(lambda x: m(x, scale=x), torch.randn(3), frames=1, breaks=0)
    plain = _module_with_hooks(lambda module, args, kwargs: None)
    standard_test(lambda x: plain(x, 2.0) + 1, torch.randn(3), frames=1, breaks=0)


def test_forward_pre_hook_with_kwargs_bad_result_raises_as_eager():
    m = _module_with_hooks(lambda module, args, kwargs: args)
    assert standard_test(lambda x: m(x * 2), torch.randn(3), frames=1) == "RuntimeError"


# -- torch.autograd.graph.disable_saved_tensors_hooks -------------------------------------------------
_hooks_message = torch._C._autograd._saved_tensors_hooks_get_disabled_error_message


def test_disable_saved_tensors_hooks_block_is_trace_state():
    def fn(x):
        before = _hooks_message()
        with torch.autograd.graph.disable_saved_tensors_hooks("inner"):
            y = x + 1
            inside = _hooks_message(), torch._C._autograd._saved_tensors_hooks_is_enabled()
        return y * 2, before, inside, _hooks_message()
    standard_test(fn, torch.randn(3), frames=1, breaks=0)
    opt = bytegraph.compile(fn, backend="eager")
    with torch.autograd.graph.disable_saved_tensors_hooks("outer"):   # the state at entry is guarded
        assert opt(torch.ones(1))[1:] == fn(torch.ones(1))[1:] == ("outer", ("inner", False), "outer")
    assert opt(torch.ones(1))[1:] == (None, ("inner", False), None) and _hooks_message() is None


def test_disable_saved_tensors_hooks_as_decorator():
    def fn(z):
        @torch.autograd.graph.disable_saved_tensors_hooks("not allowed")
        def f(x, y):
            return x + y, _hooks_message()
        return f(torch.ones(1), z), _hooks_message()
    standard_test(fn, torch.randn(()), frames=1, breaks=0)


def test_disable_saved_tensors_hooks_break_inside_block():
    @bytegraph.disable
    def native():
        return _hooks_message()

    def fn(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no"):
            y = x + 1
            seen = native()
            return y * 2, seen
    assert standard_test(fn, torch.randn(3), frames=2, breaks=1)[1] == "no"
    assert _hooks_message() is None


def test_checkpoint_while_saved_tensors_hooks_are_disabled_raises_as_eager():
    from torch.utils.checkpoint import checkpoint

    def fn(x):
        return checkpoint(torch.sin, x, use_reentrant=False) + 1

    def inside(x):
        with torch.autograd.graph.disable_saved_tensors_hooks("no checkpoint"):
            return fn(x)
    x = torch.randn(3, requires_grad=True)
    assert standard_test(inside, x, frames=0) == "RuntimeError"
    opt = bytegraph.compile(fn, backend="eager")
    opt(x)
    with torch.autograd.graph.disable_saved_tensors_hooks("no checkpoint"):   # an entry compiled outside
        with pytest.raises(RuntimeError, match="no checkpoint"):
            opt(x)


# -- torch.profiler.record_function while nothing records ranges --------------------------------------
def test_record_function_block_without_profiler_is_traced():
    def fn(x):
        y = x * 3
        with torch.autograd.profiler.record_function("rf"):
            z = y.sin()
        with torch.profiler.record_function("rf2", "some args"):
            z = z + 1
        return z

    def decorated(x):
        @torch.profiler.record_function("decorated")
        def helper(x):
            return x.cos()
        return helper(x) + 1
    standard_test(fn, torch.randn(3), frames=1, breaks=0)
    standard_test(decorated, torch.randn(3), frames=1, breaks=0)


def test_record_function_break_inside_block():
    @bytegraph.disable
    def native():
        return torch._C._autograd._profiler_enabled()

    def fn(x):
        with torch.profiler.record_function("rf"):
            y = x + 1
            native()
            return y * 2
    standard_test(fn, torch.randn(3), frames=2, breaks=1)


def test_record_function_under_a_profiler_records_its_range():
    def fn(x):
        with torch.profiler.record_function("my_range"):
            return x.sin() + 1
    opt = bytegraph.compile(fn, backend="eager")
    x = torch.randn(3)
    opt(x)     # compiled with no profiler: the block is traced away, the guard notes it
    for call in (fn, opt):
        with torch.profiler.profile() as prof:
            out = call(x)
        assert torch.allclose(out, fn(x))
        assert "my_range" in [e.name for e in prof.events()], call


# -- torch.set_default_dtype in a graph run as recorded ----------------------------------------------
def _in_float64(x):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        y = torch.ones(2) + 1
        z = torch.arange(3) * 1.5          # an int tensor times a float: the default dtype
        inside = torch.get_default_dtype()
    finally:
        torch.set_default_dtype(old)
    return y, z, inside, x + 1, torch.ones(1)


def test_set_default_dtype_restored_in_finally():
    got = standard_test(_in_float64, torch.ones(3), frames=1, breaks=0)
    assert got[0].dtype == got[1].dtype == torch.float64 and got[4].dtype == torch.float32
    assert torch.get_default_dtype() is torch.float32


def test_set_default_dtype_left_changed_and_across_a_break():
    @bytegraph.disable
    def native():
        return torch.get_default_dtype(), torch.zeros(1).dtype

    def left(x):
        torch.set_default_dtype(torch.float64)
        return x + torch.ones(1)

    def across(x):
        torch.set_default_dtype(torch.bfloat16)
        seen = native()
        y = torch.ones(2) * x.sum()
        torch.set_default_dtype(torch.float32)
        return y, seen, torch.ones(1)
    try:
        standard_test(left, torch.ones(2), frames=1, breaks=0)
        assert torch.get_default_dtype() is torch.float64   # as eager leaves it
        torch.set_default_dtype(torch.float32)
        got = standard_test(across, torch.ones(2), frames=2, breaks=1)
        assert got[1] == (torch.bfloat16, torch.bfloat16) and got[0].dtype == torch.bfloat16
    finally:
        torch.set_default_dtype(torch.float32)


def test_set_default_dtype_then_a_raise_runs_the_frame_as_python():
    def fn(x, i):
        torch.set_default_dtype(torch.float64)
        try:
            return torch.ones(2) + x[i]      # an index out of range raises in the graph
        finally:
            torch.set_default_dtype(torch.float32)
    standard_test(fn, torch.ones(2), torch.tensor(1), frames=1, breaks=0)
    opt = bytegraph.compile(fn, backend="eager")
    opt(torch.ones(2), torch.tensor(1))
    with pytest.raises(IndexError):
        opt(torch.ones(2), torch.tensor(5))
    assert torch.get_default_dtype() is torch.float32
    try:   # a guard on the entry dtype: called under float64, the frame compiles again
        torch.set_default_dtype(torch.float64)
        assert_same(opt(torch.ones(2), torch.tensor(1)), fn(torch.ones(2), torch.tensor(1)))
    finally:
        torch.set_default_dtype(torch.float32)


def test_set_default_dtype_breaks_with_a_backend_that_retraces():
    bytegraph.reset()
    got = bytegraph.compile(_in_float64, backend="aot_eager")(torch.ones(3))
    assert_same(got, _in_float64(torch.ones(3)))
    assert len(bytegraph.stats.break_records) == 2 and torch.get_default_dtype() is torch.float32


# -- calls that always raise TypeError: raised by the trace, as eager raises them ---------------------
def test_builtin_with_keywords_and_module_call_raise_in_fullgraph():
    import torch.fft

    def bad_kwarg(x):
        y = x * 2
        return isinstance(y, torch.Tensor, extra=1)

    def call_module(x):
        return torch.fft(x)
    for fn in (bad_kwarg, call_module):
        want = outcome(fn, torch.ones(2))
        bytegraph.reset()
        got = outcome(bytegraph.compile(fn, backend="eager", fullgraph=True), torch.ones(2))
        assert want[0] == "raise" and got == want, (got, want)
        assert not bytegraph.stats.break_records


# -- queries answered at compile time ---------------------------------------------------------------
def test_privateuse1_backend_name_is_folded():
    def fn(x):
        return x + 1 if torch._C._get_privateuse1_backend_name() == "privateuseone" else x
    standard_test(fn, torch.randn(3), frames=1, breaks=0)


def test_ndarray_strides_of_an_input():
    def fn(x):
        a = x.numpy()
        return a.itemsize, a.strides, a.shape, torch.from_numpy(a.T) * 2
    standard_test(fn, torch.randn(3, 4), frames=1, breaks=0)
    opt = bytegraph.compile(fn, backend="eager", dynamic=False)
    for x in (torch.randn(3, 4), torch.randn(4, 3).t(), torch.randn(3, 4, dtype=torch.float64)):
        got, want = opt(x), fn(x)      # other strides compile again
        assert got[:3] == want[:3] and torch.equal(got[3], want[3])


def test_numpy_meshgrid_gives_numpys_sequence_type():
    import numpy as np

    def fn(x, y):
        grids = np.meshgrid(x.numpy(), y.numpy())
        return type(grids).__name__, torch.from_numpy(grids[0]) + 1, torch.from_numpy(grids[1])
    standard_test(fn, torch.randn(3), torch.randn(4), frames=1, breaks=0)


class _SetsDtype(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        torch.set_default_dtype(torch.float64)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_set_default_dtype_inside_a_function_forward_is_not_a_node():
    def fn(x):
        y = _SetsDtype.apply(x)
        return y, torch.ones(1)
    try:
        want = fn(torch.ones(2))
        torch.set_default_dtype(torch.float32)
        bytegraph.reset()
        got = bytegraph.compile(fn, backend="eager")(torch.ones(2))
        assert_same(got, want)
        assert got[1].dtype == torch.float64 and torch.get_default_dtype() is torch.float64
        assert len(bytegraph.stats.break_records) == 1
        assert "changes the default dtype" in str(bytegraph.stats.break_records[0])
    finally:
        torch.set_default_dtype(torch.float32)


# -- a torch tensor given to a numpy function ------------------------------------------------------
def test_numpy_function_taking_a_tensor_as_its_array():
    import numpy as np

    def fn(x):
        a = np.asarray(x)
        a += 1                  # (its memory is the tensor's: eager's `__array__` is `x.numpy()`)
        return np.full_like(x, 2.5, dtype=np.dtype("float")), np.ones_like(x, dtype=np.float64), \
            np.zeros_like(x), a, x
    standard_test(fn, torch.arange(6.0).reshape(2, 3), frames=1, breaks=0)


@pytest.mark.parametrize("name", ["ufunc", "reduction", "grad"])
def test_numpy_function_not_taking_a_tensor_as_its_array_runs_as_eager(name):
    import warnings

    import numpy as np
    fn = {"ufunc": lambda x: np.sin(x + 1),          # wraps its result back into a tensor
          "reduction": lambda x: np.mean(x + 1),     # calls `x.mean(axis=...)`: TypeError
          "grad": lambda x: np.zeros_like(x + 1)}[name]   # `x.numpy()` raises on a tensor requiring grad
    x = torch.randn(2, 3, requires_grad=name == "grad")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        standard_test(fn, x, frames=1)
    assert bytegraph.stats.break_records


# -- a cache hit of an lru_cache'd function answering None (a warn-once helper) ----------------------
def test_lru_cache_hit_answering_none_is_traced_and_counted():
    import functools
    runs = []

    @functools.lru_cache
    def warn_once():
        runs.append(1)

    def fn(x):
        warn_once()
        return x + 1
    warn_once()
    opt = bytegraph.compile(fn, backend="eager", fullgraph=True)
    opt(torch.ones(1))
    opt(torch.ones(1))
    assert warn_once.cache_info().hits == 2 and runs == [1]     # eager's two hits, counted
    warn_once.cache_clear()       # the next call misses: eager runs the body again
    with pytest.raises(bytegraph.exc.GraphBreakError):
        opt(torch.ones(1))
    bytegraph.reset()
    assert torch.equal(bytegraph.compile(fn, backend="eager")(torch.ones(1)), torch.ones(1) + 1)
    assert len(bytegraph.stats.break_records) == 1 and runs == [1, 1]
    standard_test(lambda x: x * 2 if torch.fx._symbolic_trace.is_fx_tracing() else x - 1,
                  torch.ones(2), frames=1, breaks=0)


# -- operator.abs/concat/delitem and math.fsum ------------------------------------------------------
def test_operator_abs_concat_delitem_and_fsum_are_traced():
    import math
    import operator

    def f(x):
        d = {"a": 1, "b": 2}
        operator.delitem(d, "a")
        lst = [1, 2, 3]
        operator.delitem(lst, slice(0, 2))
        return (operator.abs(x), operator.abs(-3), operator.concat([1], [x]), operator.concat("a", "b"),
                math.fsum([0.1] * 10), math.fsum(v / 3 for v in range(4)), d, lst)
    got = standard_test(f, torch.randn(3), frames=1, breaks=0, fullgraph=True)
    assert got[4] == 1.0

    assert standard_test(lambda x: operator.concat([1], (2,)), torch.ones(1), frames=0) == "TypeError"
    assert standard_test(lambda x: operator.concat(1, x), torch.ones(1), frames=0) == "TypeError"


# -- ordering of lists and tuples holding lists ---------------------------------------------------
def test_ordering_of_nested_lists_is_traced():
    def f(x):
        return x + 1, ([[1]] > [[0, 9]], [(1, 2), [3]] < [(1, 2), [4]], [[1, 2]] <= [[1, 2]],
                       ((1, [2]),) >= ((1, [2, 0]),), [[1]] < [[1], 0], [[]] > [[]])
    got = standard_test(f, torch.randn(3), frames=1, breaks=0, fullgraph=True)
    assert got[1] == (True, True, True, False, True, False)
    assert standard_test(lambda x: [[1]] < [["a"]], torch.ones(1), frames=0) == "TypeError"


# -- in-place set updates of a set made in the frame ----------------------------------------------
def test_set_update_methods_of_a_local_set_are_traced():
    def f(x):
        s = {1, 2}
        s.update([4], (5,))
        s.difference_update({1}, [2.0])
        s.intersection_update(range(3, 10), {3.0, 4, 5, 6, 7, 8, 9, 10})
        t = {1, 2, 3}
        t.symmetric_difference_update([3.0, 4, 4.0])
        u = {1, 2}
        u.difference_update(u)
        return x + len(s), sorted(map(repr, s)), sorted(map(repr, t)), len(u)
    got = standard_test(f, torch.randn(3), frames=1, breaks=0, fullgraph=True)
    assert got[1:] == (["4", "5"], ["1", "2", "4"], 0)


# -- iter(callable, sentinel) ------------------------------------------------------------------------
def test_iter_with_a_sentinel_is_traced():
    def f(x):
        it = iter([1, 2, 3, 0, 5])
        got = list(iter(lambda: next(it), 0))    # ends at the sentinel
        rest = iter(lambda: next(it), 9)          # ends at the StopIteration of the call
        return x + sum(got), got, list(rest), next(rest, "end"), next(iter(int, 0), "none")
    got = standard_test(f, torch.randn(3), frames=1, breaks=0, fullgraph=True)
    assert got[1:] == ([1, 2, 3], [5], "end", "none")

    def escapes(x):     # a started one handed back: its state is the callable's
        n = [0]

        def step():
            n[0] += 1
            return n[0]
        it = iter(step, 4)
        return x * next(it), it
    bytegraph.reset()
    opt = bytegraph.compile(escapes, backend="eager", fullgraph=True)
    _, it = opt(torch.ones(1))
    assert list(it) == [2, 3]


# -- sorting numbers that became symbolic ------------------------------------------------------------
def test_sorting_ints_that_changed_between_calls_specializes_them():
    # a list's ints that changed between calls are symbolic in the next compile: sorting them
    # specializes them (guarded on their values) instead of breaking
    def f(items, x):
        items.sort()
        return x + items[0], sorted(items, reverse=True)
    bytegraph.reset()
    opt = bytegraph.compile(f, backend="eager")
    for values in ([3, 1, 2], [5, 4, 6], [5, 4, 6], [9, 7, 8]):
        want_items, got_items = list(values), list(values)
        want = outcome(f, want_items, torch.ones(1))
        assert_same(outcome(opt, got_items, torch.ones(1)), want)
        assert got_items == want_items
    assert not bytegraph.stats.break_records


# -- a property's deleter ---------------------------------------------------------------------------
class _Deletable:
    def __init__(self):
        self._x = 1

    @property
    def x(self):
        return self._x

    @x.setter
    def x(self, v):
        self._x = v * 3

    @x.deleter
    def x(self):
        self._x = -1

    @property
    def y(self):
        return 2


def test_property_deleter_is_traced():
    def f(p, x):
        p.x = 2
        got = p.x
        del p.x
        try:
            del p.y     # no deleter: the program's AttributeError
        except AttributeError as e:
            return x + got + p.x, str(e)
    want_obj, got_obj = _Deletable(), _Deletable()
    want = outcome(f, want_obj, torch.ones(1))
    bytegraph.reset()
    opt = bytegraph.compile(f, backend="eager", fullgraph=True)
    assert_same(outcome(opt, got_obj, torch.ones(1)), want)
    assert got_obj._x == want_obj._x == -1 and not bytegraph.stats.break_records


# -- subset comparisons of a dict's keys view ---------------------------------------------------------
def test_keys_view_subset_comparisons_are_traced():
    def f(x):
        k = {1: 2, 3: 4}.keys()
        return x + 1, (k <= {1, 3}, k < {1, 3}, k < {1, 3, 5}, k >= {1}, k > frozenset({1, 3}), {1, 3, 5} >= k,
                       {1} < k, k <= {5: 0}.keys(), k >= {1: 0}.keys(), frozenset({1.0, 3}) >= k)
    got = standard_test(f, torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1] == (True, False, True, True, False, True, True, False, True, True)
    assert standard_test(lambda x: {1: 2}.keys() < [1, 2], torch.ones(1), frames=0) == "TypeError"


# -- a local only list comprehensions close over dies at the return --------------------------------
def test_cell_held_only_by_comprehensions_is_not_rebuilt_at_return():
    import itertools

    def f(x):
        cy = itertools.cycle("ab")    # a cell (the comprehension reads it), started: not rebuildable
        g = (v for v in range(9))
        next(g)
        return x + 1, [next(cy) for _ in range(3)], {k: next(g) for k in "pq"}, [[next(cy)] for _ in "z"]
    got = standard_test(f, torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1:] == (["a", "b", "a"], {"p": 1, "q": 2}, [["b"]])

    def escapes(x):     # a lambda may outlive the frame: its cell is written back
        n = [1, 2]
        k = 3
        get = lambda: k + len(n)    # noqa: E731
        k = sum([v * k for v in n])
        return x + k, get
    bytegraph.reset()
    out, get = bytegraph.compile(escapes, backend="eager", fullgraph=True)(torch.zeros(2))
    assert get() == escapes(torch.zeros(2))[1]() == 11 and out.tolist() == [9.0, 9.0]


# -- iterating inspect.signature(f).parameters ------------------------------------------------------
def _takes(a, b=2, *args, c, d=4, **kw):
    return a


def test_signature_parameters_are_iterated():
    import inspect

    def f(x):
        params = inspect.signature(_takes).parameters
        kinds = [p.kind.name for p in params.values()]
        names = [name for name, p in params.items() if p.default is not inspect.Parameter.empty]
        return x + len(params), list(params), kinds, names, set(params.keys()) >= {"a", "kw"}
    got = standard_test(f, torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1] == ["a", "b", "args", "c", "d", "kw"] and got[3] == ["b", "d"]


def test_signature_of_a_partial_of_constants_is_traced():
    import functools
    import inspect

    def f(x):
        p = functools.partial(_takes, 1, c=3)
        return x + 1, str(inspect.signature(p)), list(inspect.signature(functools.partial(_takes, d=0)).parameters)
    got = standard_test(f, torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1] == "(b=2, *args, c=3, d=4, **kw)"

    def tensor_bound(x):     # a bound tensor would be a parameter's default: not folded
        return x + 1, str(inspect.signature(functools.partial(_takes, c=x)))
    x = torch.randn(2)
    bytegraph.reset()
    assert_same(outcome(bytegraph.compile(tensor_bound, backend="eager"), x), outcome(tensor_bound, x))
    assert "a partial binding such values" in str(bytegraph.stats.break_records[0].reason)


def test_items_view_equality_with_a_set_of_pairs_is_traced():
    def f(x):
        d = {1: 2, "a": (3, 4)}
        return x + 1, (d.items() == {(1, 2), ("a", (3, 4))}, d.items() != {(1, 2)}, d.items() == {(1, 2), ("a", 3)},
                       {(1, 2.0), ("a", (3, 4))} == d.items(), d.items() == frozenset({(1, 2), ("a", (3, 4))}))
    got = standard_test(f, torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1] == (True, True, False, True, True)


# -- data descriptors written in Python -------------------------------------------------------------
class _Doubled:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        return self if obj is None else getattr(obj, self.name, 0) * 2

    def __set__(self, obj, value):
        if value < 0:
            raise ValueError("negative", value)
        setattr(obj, self.name, value + 1)

    def __delete__(self, obj):
        setattr(obj, self.name, -5)


class _HoldsDoubled:
    d = _Doubled()


def test_python_data_descriptor_set_and_delete_are_traced():
    def f(o, x):
        before = o.d
        o.d = 5
        mid = o.d
        del o.d
        try:
            o.d = -1
        except ValueError as e:
            return x + before + mid + o.d, e.args, dict(o.__dict__)
    want_obj, got_obj = _HoldsDoubled(), _HoldsDoubled()
    want = outcome(f, want_obj, torch.ones(1))
    bytegraph.reset()
    opt = bytegraph.compile(f, backend="eager", fullgraph=True)
    assert_same(outcome(opt, got_obj, torch.ones(1)), want)
    assert got_obj.__dict__ == want_obj.__dict__ == {"_d": -5} and not bytegraph.stats.break_records
