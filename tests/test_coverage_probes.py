"""Coverage gaps found by probing programs torch.compile captures whole (fullgraph): each test
compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it fails if the
construct ran eagerly."""
from __future__ import annotations

import warnings

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
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


# -- writes to class attributes: replayed after the graph, seen by later lookups in the trace --------
def _counter_classes():
    class Base:
        x = 1

        @property
        def p(self):
            return 7

    class Mid(Base):
        pass

    class Leaf(Mid):
        x = 100
    return Base, Mid, Leaf


def _run_twice_each(make, n=3, **compile_kwargs):
    """`make()` -> (fn, args, read state): eagerly and compiled (from fresh classes each), `n` calls
    with the state changed between calls; the results and the state after each call compared."""
    runs = []
    for compiled_run in (False, True):
        bytegraph.reset()
        fn, args, read, change = make()
        cnt = CompileCounter()
        call = bytegraph.compile(fn, backend=cnt, **compile_kwargs) if compiled_run else fn
        got = []
        for i in range(n):
            change(i)
            got.append((outcome(call, *args), read()))
        runs.append(got)
    assert_same(runs[1], runs[0])
    return cnt


def test_class_attribute_increment_is_written_back_and_read_after():
    def make():
        Base, Mid, Leaf = _counter_classes()

        def fn(t):
            Mid.x += 1              # Mid gains its own x; Leaf keeps its own, Base is untouched
            return t + Mid.x + Leaf.x + Base.x + Mid().x

        def change(i):
            Base.x = 10 * i
        return fn, (torch.ones(2),), lambda: (Base.x, Mid.__dict__.get("x"), Leaf.x), change
    cnt = _run_twice_each(make, fullgraph=True)
    assert cnt.frame_count == 3 and not bytegraph.stats.break_records   # (each new Mid.x recompiles)


def test_class_attribute_set_through_type_of_self_in_a_module():
    class Counted(torch.nn.Module):
        calls = 0

        def forward(self, t):
            type(self).calls += 1
            return t * self.calls

    def make():
        Counted.calls = 0
        m = Counted()

        def change(i):
            if i == 2:
                Counted.calls = 40
        return m, (torch.ones(2),), lambda: Counted.calls, change
    cnt = _run_twice_each(make, fullgraph=True)
    assert cnt.frame_count == 3 and not bytegraph.stats.break_records


def test_class_attribute_shadowing_a_base_property_then_instance_write():
    def make():
        Base, Mid, Leaf = _counter_classes()

        def fn(t):
            Mid.p = 5               # plain data now shadows Base's property for Mid objects
            o = Mid()
            o.p = 3                 # so this goes to the instance's dict
            Mid.items = [t]
            Mid.items.append(t + 1)
            return t + o.p + Mid.p + len(Mid.items), getattr(Mid, "items")[1], hasattr(Mid, "items")
        return fn, (torch.ones(2),), lambda: (Mid.__dict__.get("p"), len(Mid.__dict__.get("items", ()))), \
            lambda i: None
    cnt = _run_twice_each(make, fullgraph=True)
    assert cnt.frame_count >= 1 and not bytegraph.stats.break_records


def test_class_attribute_writes_not_modelled_break_and_match_eager():
    class Meta(type):
        def __setattr__(cls, k, v):
            super().__setattr__(k, v * 2)

    def make_meta():
        class Doubled(metaclass=Meta):
            x = 1

        def fn(t):
            Doubled.x = 4           # the metaclass's own __setattr__
            return t + Doubled.x
        return fn, (torch.ones(2),), lambda: Doubled.x, lambda i: None

    def make_method():
        Base, Mid, Leaf = _counter_classes()

        def fn(t):
            Mid.m = lambda self: 3  # a descriptor: bound when read
            return t + Mid().m()
        return fn, (torch.ones(2),), lambda: "m" in Mid.__dict__, lambda i: None

    def make_dict_read():
        Base, Mid, Leaf = _counter_classes()

        def fn(t):
            Mid.x = 3
            return t + super(Mid, Mid()).x + Mid.__dict__["x"]   # lookups not modelled after a write
        return fn, (torch.ones(2),), lambda: Mid.__dict__.get("x"), lambda i: None

    def make_raise():
        Base, Mid, Leaf = _counter_classes()

        def fn(t):
            try:
                Mid.x = 9
                raise KeyError(1)
            except KeyError:
                pass
            Mid.y = t * 2
            raise ValueError("after the write")
        return fn, (torch.ones(2),), lambda: (Mid.__dict__.get("x"), "y" in Mid.__dict__), lambda i: None
    for make in (make_meta, make_method, make_dict_read, make_raise):
        _run_twice_each(make)
        assert bytegraph.stats.break_records


# -- `with warnings.catch_warnings():` with nothing warned inside: a block replayed after the graph --
def _warn_here():
    warnings.warn("from a fixed line", UserWarning)


def _warnings_seen(fn, t):
    """How many times a 'default' warning from one line is shown around a call of `fn`: shown, not
    shown again (the registry), then after `fn` shown again if `fn` moved the filters' version."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("default")
        filters = warnings.filters
        _warn_here()
        _warn_here()
        result = outcome(fn, t)
        _warn_here()
        return result, len(log), warnings.filters is filters, list(warnings.filters) == list(filters)


def _in_catch_warnings(t):
    y = t + 1
    with warnings.catch_warnings():
        y = y * 2
    return y - 1


def test_catch_warnings_block_is_traced_and_its_effect_replayed():
    cnt = CompileCounter()
    opt = bytegraph.compile(_in_catch_warnings, backend=cnt, fullgraph=True)
    for _ in range(2):
        want = _warnings_seen(_in_catch_warnings, torch.ones(2))
        got = _warnings_seen(opt, torch.ones(2))
        assert_same(got, want)
        assert want[1] == 2          # (eager shows the warning again after the block)
    assert cnt.frame_count == 1 and cnt.op_count == 3


def _catch_warnings_with_break(t):
    with warnings.catch_warnings():
        y = t + 1
        bytegraph.graph_break()
        warnings.simplefilter("ignore")       # in the real block: undone when it is left
        y = y * 2
    return y


def _catch_warnings_with_raise(t):
    try:
        with warnings.catch_warnings():
            y = t + 1
            raise KeyError("inside")
    except KeyError:
        y = t - 1
    with warnings.catch_warnings():
        raise ValueError(f"leaves the frame {y.shape}")


def _catch_warnings_with_use_inside(t):
    with warnings.catch_warnings():
        warnings.warn("inside", UserWarning)     # a warning issued inside: a break
        return t + len(warnings.filters)


def test_catch_warnings_block_break_raise_and_use_inside_match_eager():
    # (frames: a break inside the block enters the real block there; the raise leaving the second block
    # runs the frame as Python: the first block's replay would run inside the second, entered first)
    for fn, frames in ((_catch_warnings_with_break, 2), (_catch_warnings_with_raise, 0),
                       (_catch_warnings_with_use_inside, 1)):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt)
        for _ in range(2):
            want = _warnings_seen(fn, torch.ones(2))
            got = _warnings_seen(opt, torch.ones(2))
            assert_same(got, want)
        assert cnt.frame_count == frames and bytegraph.stats.break_records


def _filters_read_around_catch_warnings(t, wmod):
    orig = wmod.filters
    y = t + 1
    with wmod.catch_warnings():
        inside = wmod.filters is not orig         # (a use of the module inside the block: a break)
    return y, inside, wmod.filters is orig


def test_a_value_read_before_a_catch_warnings_block_is_rebuilt_as_the_trace_read_it():
    """At the break inside the block, the real block is entered there; `orig` (read from
    `warnings.filters` before the block) was rebuilt after that, reading the block's copy of the
    filters: `inside` came out False and the filters after the block unequal to `orig` (CPython's
    test_warnings test_catch_warnings_defaults). Values are now rebuilt before the block is entered."""
    cnt = CompileCounter()
    got = bytegraph.compile(_filters_read_around_catch_warnings, backend=cnt)(torch.ones(2), warnings)
    want = _filters_read_around_catch_warnings(torch.ones(2), warnings)
    assert_same(got, want)
    assert want[1:] == (True, True)
    assert cnt.frame_count == 1 and cnt.op_count == 1


# -- Module.state_dict() in compiled code: an OrderedDict made in the frame keeps its `_metadata` ----
class _WithState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.register_buffer("steps", torch.zeros(()))
        self.seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())


def _state_dict_of(m):
    def fn(t):
        sd = m.state_dict()
        total = t
        for v in sd.values():
            total = total + v.sum()
        return sd, sd._metadata, dict(sd._metadata), total
    return fn


def _same_state_dicts(got, want):
    assert_same(got, want)
    if got[0] == "ok":
        assert got[1][0].__dict__.keys() == want[1][0].__dict__.keys()   # `_metadata`, as eager's


def _drop_extra(module, sd, prefix, metadata):
    del sd[prefix + "extra"]


def test_state_dict_built_in_compiled_code_with_metadata():
    m = _WithState()
    fn = _state_dict_of(m)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    changes = [lambda: None,
               lambda: m.register_buffer("extra", torch.ones(3)),
               lambda: m.register_buffer("hidden", torch.ones(1), persistent=False),
               lambda: m.register_state_dict_post_hook(_drop_extra)]
    for change in changes:
        change()
        _same_state_dicts(outcome(opt, torch.ones(2)), outcome(fn, torch.ones(2)))
    assert cnt.frame_count == 4 and not bytegraph.stats.break_records


def test_ordered_dict_attributes_only_on_new_ones():
    import collections

    def new_one(t):
        d = collections.OrderedDict(a=t)
        d.note = t + 1
        d.note = d.note * 2
        return d, d.note, hasattr(d, "note")
    standard_test(new_one, torch.ones(2), frames=1, breaks=0)
    assert bytegraph.compile(new_one, backend="eager")(torch.ones(2))[0].note.tolist() == [4.0, 4.0]

    def shadowing(t):
        y = t + 1
        d = collections.OrderedDict()
        d.keys = 3            # a name its class defines: breaks
        return y, d.keys
    standard_test(shadowing, torch.ones(2), frames=1, breaks=1)     # (the STORE_ATTR runs natively, after `t + 1`)
    existing = collections.OrderedDict()

    def on_existing(t):
        y = t + 1
        existing.note = 1     # an OrderedDict of the program's: breaks
        return y
    standard_test(on_existing, torch.ones(2), frames=1, breaks=1)     # (`t + 1`, then the write natively)
    assert existing.note == 1


# -- Enum.__members__: the metaclass's property run when read, a mappingproxy over the member map ----
def test_enum_members_mapping_proxy():
    import enum
    import types

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

    def fn(t):
        members = Color.__members__
        total = t * len(members) + members["GREEN"].value
        return (total, list(members), "RED" in members, members.get("BLUE"), type(members) is types.MappingProxyType,
                [(k, v.value) for k, v in members.items()], members)

    def missing(t):
        return Color.__members__["BLUE"]
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    for i in range(3):
        if i == 2:
            Color._member_map_["ALIAS"] = Color.RED     # the map changed: seen (its keys are guarded)
        got, want = opt(torch.ones(2)), fn(torch.ones(2))
        assert_same(got[:-1], want[:-1])
        assert type(got[-1]) is types.MappingProxyType and dict(got[-1]) == dict(want[-1])
    assert cnt.frame_count == 2 and not bytegraph.stats.break_records
    standard_test(missing, torch.ones(2), frames=0, breaks=1)     # KeyError, as eager's (a raise: no graph)

    reads = []

    class Meta(type):
        @property
        def counted(cls):
            reads.append(1)
            return cls.base * 2

    class WithMeta(metaclass=Meta):
        base = 3

    def via_meta(t):
        return t + WithMeta.counted + WithMeta.counted
    standard_test(via_meta, torch.ones(2), frames=1, breaks=0)
    assert len(reads) == 4      # run on each read, eagerly and compiled


# -- itertools.tee: iterators sharing a buffer, pulling the underlying iterator lazily ----------------
def test_itertools_tee_lazy_shared_buffer():
    import itertools

    def fn(t, items):
        log = []

        def gen():
            for v in items:
                log.append(v)          # when each item is pulled: eager's order
                yield v
        a, b = itertools.tee(gen())
        first = next(a)
        c, d = itertools.tee(a, 2)     # a tee is copied, not wrapped: c is a, d starts where a is
        rest_b = list(b)
        total = t * first + sum(c) + sum(d)
        return total, rest_b, list(log), c is a, itertools.tee(5, 0), list(a)

    def underlying(t, items):
        it = iter(items)
        a, b = itertools.tee(it, 3)[:2]
        x = next(a)
        return t + x + next(it) + next(b) + len(list(b))

    def bad_n(t, items):
        return itertools.tee(items, -1)
    standard_test(fn, torch.ones(2), [1, 2, 3], frames=1, breaks=0)
    standard_test(underlying, torch.ones(2), [1, 2, 3, 4], frames=1, breaks=0)
    assert standard_test(bad_n, torch.ones(2), [1], frames=0) == "ValueError"


# -- max()/min() of a tensor and a number: eager answers one operand itself, chosen by `>`/`<` -------
def _max_t0(x):
    return max(x, 0)


def _min_t1(x):
    return min(x, 1.0)


def _max_0t(x):
    return max(0, x)


def _max_used(x):
    y = max(x, 0.5)
    return y * 2, y is x, type(y)


def _min_many(x):
    return min([x, 3, -2.5])


def test_max_min_of_an_input_tensor_and_a_number_answer_eagers_operand():
    values = [torch.tensor(-1.0), torch.tensor(2.0), torch.tensor(float("nan")), torch.tensor(-0.0),
              torch.tensor(0.0), torch.tensor(3), torch.tensor([-2.0]), torch.tensor([[0.25]]), torch.tensor(True)]
    for fn in (_max_t0, _min_t1, _max_0t, _max_used, _min_many):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt, fullgraph=True)
        for x in values + values:
            got, want = outcome(opt, x), outcome(fn, x)
            assert_same(got, want, equal_nan=True)
            if want[0] == "ok" and not isinstance(want[1], tuple):
                assert (got[1] is x) == (want[1] is x)      # the very tensor, or the number
        assert not bytegraph.stats.break_records
        assert cnt.frame_count <= 2 * 6     # one graph per answer and kind of tensor (shape, dtype)


def test_max_of_a_tensor_eager_bool_refuses_or_computed_or_written():
    def several(x):
        return max(x, 0)           # bool() of several elements: eager's RuntimeError, compiled too

    def computed(x):
        return max(x * 2, 0)       # a value the graph computes: a break (eager chooses)

    def written(x):
        x.add_(1)
        return max(x, 0)           # not its value on entry: a break

    def grad(x):
        return max(x, 0) * 3
    assert standard_test(several, torch.ones(3), frames=0, fullgraph=True) == "RuntimeError"
    for x in (torch.tensor(-1.0), torch.tensor(1.0)):
        standard_test(computed, x, frames=1, breaks=1)
        a, b = x.clone(), x.clone()
        bytegraph.reset()
        opt = bytegraph.compile(written, backend=CompileCounter())
        assert_same(opt(a), written(b)) and torch.equal(a, b)
        assert bytegraph.stats.break_records
        leaf, ref = x.clone().requires_grad_(), x.clone().requires_grad_()
        bytegraph.reset()
        got, want = bytegraph.compile(grad, backend="aot_eager", fullgraph=True)(leaf), grad(ref)
        assert_same(got, want)
        if isinstance(want, torch.Tensor):
            got.backward()
            want.backward()
        assert_same(leaf.grad, ref.grad)


def test_ordered_dict_attributes_of_the_programs_own_are_read_and_guarded():
    import collections

    def fn(t, sd):
        meta = getattr(sd, "_metadata", None)
        return t + len(sd), meta, hasattr(sd, "other")
    with_meta = torch.nn.Linear(2, 2).state_dict()
    without = collections.OrderedDict(a=1)
    other = collections.OrderedDict(b=2)
    other._metadata = {"x": 1}
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, fullgraph=True)
    for sd in (with_meta, without, other, with_meta, without):
        assert_same(opt(torch.ones(1), sd), fn(torch.ones(1), sd))
    assert cnt.frame_count == 3 and not bytegraph.stats.break_records


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
