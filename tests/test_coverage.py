"""Coverage gaps closed (issue 14), each compared with eager AND with torch.compile's capture.

Every test runs the program eagerly, through bytegraph, and through torch.compile's explain (the
reference): bytegraph's result equals eager's, and its graph and graph-break counts are asserted,
equal to torch.compile's where the two are expected to agree.
"""
from __future__ import annotations


import collections
import copy
import functools
import math
import types
import typing

import bytegraph
import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from bytegraph.testing import CompileCounter


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            torch.allclose(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def torch_counts(fn, *args) -> tuple[int, int]:
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(*args)
    return out.graph_count, out.graph_break_count


def check(fn, *args, graphs=1, breaks=0, like_torch=True):
    """fn(*args) through bytegraph equals eager, with `graphs` graphs and `breaks` breaks (and so
    does torch.compile when `like_torch`)."""
    expected = fn(*args)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert same(opt(*args), expected)
    assert same(opt(*args), expected)   # the cached entry too
    assert cnt.frame_count == graphs
    explained = bytegraph.explain(fn)(*args)
    reasons = [b.reason for b in explained.break_reasons]
    assert (explained.graph_count, explained.graph_break_count) == (graphs, breaks), reasons
    if like_torch:
        assert torch_counts(fn, *args) == (graphs, breaks)
    return cnt


# -- the public API libraries call ---------------------------------------------------------------
def test_graph_break_splits_the_graph():
    def fn(x):
        a = x.sin()
        bytegraph.graph_break()
        return a.cos()

    def torch_fn(x):
        a = x.sin()
        torch._dynamo.graph_break()
        return a.cos()
    x = torch.randn(3)
    check(fn, x, graphs=2, breaks=1, like_torch=False)
    assert torch_counts(torch_fn, x) == (2, 1)
    check(torch_fn, x, graphs=2, breaks=1)    # torch's own spelling, as library code calls it
    with pytest.raises(bytegraph.exc.GraphBreakError, match="graph_break"):
        bytegraph.compile(fn, fullgraph=True)(x)


@pytest.mark.parametrize("ask", [
    lambda: torch.compiler.is_compiling(), lambda: torch._dynamo.is_compiling(),
    lambda: torch.compiler.is_dynamo_compiling(), lambda: not torch.compiler.is_exporting()])
def test_is_compiling_true_while_tracing(ask):
    def fn(x):
        return x + 1 if ask() else x - 1
    x = torch.randn(3)
    cnt = CompileCounter()
    assert torch.equal(bytegraph.compile(fn, backend=cnt)(x), x + 1)
    assert cnt.frame_count == 1
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="eager")(x), x + 1)   # the branch torch.compile takes


def test_distributed_is_available_is_folded():
    # a fact of torch's build, not a process-group query: no break (collectives still break)
    def fn(x):
        return x + 1 if torch.distributed.is_available() else x - 1
    x = torch.randn(3)
    check(fn, x, graphs=1, breaks=0)


def test_bytegraph_is_compiling():
    def fn(x):
        return x + 1 if bytegraph.is_compiling() else x - 1
    x = torch.randn(3)
    cnt = CompileCounter()
    assert torch.equal(bytegraph.compile(fn, backend=cnt)(x), x + 1)
    assert torch.equal(fn(x), x - 1) and cnt.frame_count == 1


def test_is_compiling_as_transformers_asks():
    transformers_utils = pytest.importorskip("transformers.utils")

    def fn(x):
        return x * 2 if transformers_utils.is_torchdynamo_compiling() else x.tolist()
    cnt = CompileCounter()
    x = torch.randn(3)
    assert torch.equal(bytegraph.compile(fn, backend=cnt)(x), x * 2)
    assert cnt.frame_count == 1


def _scaled(a, b):
    return a * 2 + b


def test_allow_in_graph_is_one_node():
    bytegraph.allow_in_graph(_scaled)
    torch.compiler.allow_in_graph(_scaled)

    def fn(x):
        return _scaled(x.sin(), x).cos()
    x = torch.randn(4, requires_grad=True)
    cnt = check(fn, x)
    assert _scaled in [n.target for n in cnt.graphs[0].graph.nodes]
    # training through the node
    cnt = CompileCounter()
    bytegraph.compile(fn, backend="aot_eager")(x).sum().backward()
    grad, x.grad = x.grad, None
    fn(x).sum().backward()
    assert torch.allclose(grad, x.grad)


def test_maybe_mark_dynamic_and_mark_static():
    def fn(x):
        return x * x.shape[0]
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for n in (3, 4, 5):
        x = torch.randn(n, 2)
        bytegraph.maybe_mark_dynamic(x, 0)
        assert torch.equal(opt(x), fn(x))
    assert cnt.frame_count == 1
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, dynamic=True)
    for n in (3, 4, 5):
        x = torch.randn(n, 2)
        bytegraph.mark_static(x, 0)
        assert torch.equal(opt(x), fn(x))
    assert cnt.frame_count == 3     # every size its own graph, even with dynamic=True


def test_exc_module_names_the_public_exceptions():
    assert bytegraph.exc.GraphBreakError is bytegraph.GraphBreakError
    for name in bytegraph.exc.__all__:
        assert issubclass(getattr(bytegraph.exc, name), Exception)


# -- torch.autograd.Function.apply -----------------------------------------------------------------
class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, scale):
        ctx.save_for_backward(a)
        ctx.scale = scale
        return a * a * scale

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        return 2 * a * grad * ctx.scale, None


_CALLS = []


class _Counting(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        _CALLS.append(1)      # a Python side effect: running it at compile time would be wrong
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def _square_model(x):
    return _Square.apply(x.sin(), 3.0).cos()


def _check_one_node(fn, node_name, backend):
    """`fn` = cos(Function.apply(sin(x), ...)): the forward is one node, and training equals eager."""
    x = torch.randn(5, requires_grad=True)
    cnt = check(fn, x)
    targets = [getattr(n.target, "__name__", n.target) for n in cnt.graphs[0].graph.nodes]
    assert targets == ["L__x", "sin", node_name, "cos", "output"]
    expected = fn(x)
    expected.sum().backward()
    grad, x.grad = x.grad, None
    out = bytegraph.compile(fn, backend=backend)(x)
    out.sum().backward()
    assert torch.allclose(out, expected) and torch.allclose(x.grad, grad)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autograd_function_is_one_node(backend):
    _check_one_node(_square_model, "_Square_apply", backend)


def test_autograd_function_with_side_effects_breaks():
    def fn(x):
        return _Counting.apply(x + 1) - 1
    x = torch.randn(3)
    _CALLS.clear()
    explained = bytegraph.explain(fn)(x)
    assert explained.graph_break_count == 1 and "_Counting.apply" in explained.break_reasons[0].reason
    assert len(_CALLS) == 1         # the forward ran once: eagerly, never at compile time
    _CALLS.clear()
    assert torch.equal(bytegraph.compile(fn)(x), fn(x)) and len(_CALLS) == 2


class _Power(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, config):            # a config dict held by the module (HF YOSO's lsh_config)
        ctx.save_for_backward(a)
        ctx.power = config["power"]         # (a backward reading the dict breaks: test_autograd_function_backward.py)
        return a ** config["power"]

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        n = ctx.power
        return grad * n * a ** (n - 1), None


class _PowerModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.config = {"power": 3}

    def forward(self, x):
        return _Power.apply(x.sin(), self.config).cos()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autograd_function_taking_a_dict_is_one_node(backend):
    # the dict is passed to the node as itself (its identity guarded), as eager passes it
    model = _PowerModel()
    _check_one_node(model, "_Power_apply", backend)
    cnt = CompileCounter()
    opt = bytegraph.compile(model, backend=cnt)
    x = torch.randn(5)
    assert torch.equal(opt(x), model(x)) and cnt.frame_count == 1
    model.config["power"] = 2               # the forward read it while tracing: recompiles
    assert torch.equal(opt(x), model(x)) and cnt.frame_count == 2
    model.config = {"power": 4}             # another dict: recompiles
    assert torch.equal(opt(x), model(x)) and cnt.frame_count == 3


def test_autograd_function_taking_a_dict_changed_in_the_frame_breaks():
    def fn(x, config):
        config["power"] = 2                 # pending in the trace: the node would see the old dict
        return _Power.apply(x.sin(), config).cos()
    x = torch.randn(5)
    expected, config = fn(x, {"power": 3}), {"power": 3}
    assert torch.equal(bytegraph.compile(fn, backend="eager")(x, config), expected) and config == {"power": 2}
    explained = bytegraph.explain(fn)(x, {"power": 3})
    assert "_Power.apply" in explained.break_reasons[0].reason and "argument dict" in explained.break_reasons[0].reason


class _ThroughLayers(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, layers):
        for layer in layers:
            x = layer(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def test_autograd_function_taking_a_module_with_parameters_breaks_cleanly():
    # its node's result would come from running the forward on fake tensors, which the module's real
    # parameters cannot join: a graph break with the reason (not an internal error)
    layers = torch.nn.ModuleList([torch.nn.LayerNorm(4), torch.nn.Linear(4, 4)])

    def fn(x):
        return _ThroughLayers.apply(x.sin(), layers) * 2
    x = torch.randn(2, 4)
    cnt = CompileCounter()
    assert torch.equal(bytegraph.compile(fn, backend=cnt)(x), fn(x))
    explained = bytegraph.explain(fn)(x)
    reason = explained.break_reasons[0].reason
    assert "_ThroughLayers.apply" in reason and "holds tensors" in reason
    assert cnt.frame_count == 3     # sin before the call, the forward's own frame, * 2 after the call


# -- modules built inside compiled code -------------------------------------------------------------
def test_parameter_free_torch_modules_built_in_forward():
    def fn(x):
        pool = torch.nn.MaxPool1d(kernel_size=2)
        pad = torch.nn.ConstantPad1d((1, 1), 0.5)
        return torch.nn.ReLU()(pad(pool(x)))
    check(fn, torch.randn(2, 3, 8))


def test_module_with_parameters_built_in_forward_breaks():
    def fn(x):
        return torch.nn.Linear(6, 3)(x)
    x = torch.randn(2, 6)
    torch.manual_seed(0)
    expected, rng = fn(x), torch.random.get_rng_state()
    torch.manual_seed(0)
    assert torch.equal(bytegraph.compile(fn)(x), expected)
    assert torch.equal(torch.random.get_rng_state(), rng)   # its initialization ran once, eagerly
    reasons = [b.reason for b in bytegraph.explain(fn)(x).break_reasons]
    assert "parameters or buffers" in reasons[0]


# -- automatic dynamic through composite ops ------------------------------------------------------------
class _Padded(torch.nn.Module):
    def forward(self, x):
        y = F.pad(x, (0, 0, 1, 1))
        return F.interpolate(y.unsqueeze(1), scale_factor=2).sum() + y.view(y.shape[0], -1).mean()


def test_composite_ops_keep_batch_symbolic():
    from torch._dynamo.testing import CompileCounter as TorchCompileCounter
    model = _Padded()
    cnt, torch_cnt = CompileCounter(), TorchCompileCounter()
    opt = bytegraph.compile(model, backend=cnt)
    torch._dynamo.reset()
    torch_opt = torch.compile(model, backend=torch_cnt)
    for batch in (2, 3, 4, 5, 6):
        x = torch.randn(batch, 3, 4)
        assert torch.allclose(opt(x), model(x))
        torch_opt(x)
    assert cnt.frame_count == torch_cnt.frame_count == 2    # static, then one graph for every batch size


# -- Python and torch values the trace folds ------------------------------------------------------------
def test_torch_function_returning_a_dtype():
    def fn(x):
        return x.to(torch.promote_types(x.dtype, torch.float64)) * 2
    cnt = check(fn, torch.randn(3))
    assert cnt.op_count == 2      # `to` and `mul`: promote_types is answered while tracing


def test_tensor_type_names():
    def fn(x):
        return x.half() * 2, x.type(), torch.typename(x.half())
    cnt = check(fn, torch.randn(3))
    assert cnt.op_count == 3     # half, mul, half: the type names are answered while tracing


def test_empty_tuple_plus_tuple():
    def fn(x):
        pair = () + (x, x + 1)
        return pair[0] * pair[1], (1,) * 2 + pair
    check(fn, torch.randn(3))


def test_typing_aliases_and_jit_annotate():
    def fn(x):
        hint = typing.Optional[typing.List[torch.Tensor]]
        items = torch.jit.annotate(typing.List[torch.Tensor], [x, x * 2])
        return items[0] + items[1], hint is typing.Optional[typing.List[torch.Tensor]]
    check(fn, torch.randn(3))


class _Mapping(collections.abc.Mapping):
    def __init__(self, **items):
        self.items_ = items

    def __getitem__(self, key):
        return self.items_[key]

    def __iter__(self):
        return iter(self.items_)

    def __len__(self):
        return len(self.items_)


def _keywords(**kwargs):
    return kwargs


def test_user_mapping_as_dict_and_keywords():
    mapping = _Mapping(a=2, b=3)

    def fn(x):
        d = dict(mapping)
        kw = _keywords(**mapping)
        d.update(mapping)
        return x * d["a"] + kw["b"], d, kw
    check(fn, torch.randn(3))


def test_fromkeys_of_dict_types():
    def fn(x):
        plain = dict.fromkeys(["a", "b"], 1)
        ordered = collections.OrderedDict.fromkeys("cd", 2)
        default = collections.defaultdict.fromkeys(["e"], 3)
        return x * plain["a"] + ordered["d"] + default["e"], plain, ordered, default
    check(fn, torch.randn(3), like_torch=False)    # torch.compile fails on OrderedDict.fromkeys


class _Flags:
    scale = 2


def test_membership_in_a_class_dict_is_guarded():
    def fn(x):
        if "scale" in _Flags.__dict__:
            return x * _Flags.__dict__["scale"]
        return x - _Flags.__dict__.get("offset", 1)
    x = torch.randn(3)
    check(fn, x)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert torch.equal(opt(x), x * 2)
    del _Flags.scale
    try:
        assert torch.equal(opt(x), x - 1) and cnt.frame_count == 2      # the class changed: recompiled
    finally:
        _Flags.scale = 2


def test_attributes_set_on_a_tensor_made_in_the_graph():
    def fn(x):
        y = x * 2
        y.note = [3]
        return y + y.note[0], y

    def across_break(x):
        y = x * 2
        y.note = 3
        bytegraph.graph_break()
        return y + y.note

    x = torch.randn(3)
    check(fn, x)
    out = bytegraph.compile(fn)(x)[1]
    assert out.note == [3]                         # set on the real output too
    check(across_break, x, graphs=2, breaks=1, like_torch=False)


def _attributes(t) -> dict:
    return {k: (v.tolist() if isinstance(v, torch.Tensor) else v) for k, v in vars(t).items()}


def test_attributes_set_on_a_tensor_the_frame_was_given():
    # the write is trace state (reads see it) and happens on the real tensor after the graph; a value
    # the graph computed is a graph output; an attribute read and absent is guarded absent
    def fn(x, items):
        x.note = 3
        x.cache = x * 2
        items[0].other = "a"             # the same tensor reached another way
        return x.note * x.cache + 1, x.other, hasattr(x, "older")

    def across_break(x):
        x.total = x.sum()
        bytegraph.graph_break()
        return x + x.total

    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for older in (False, False, True):
        x = torch.randn(3)
        ref = x.clone()
        if older:
            x.older = ref.older = 1
        assert same(opt(x, [x]), fn(ref, [ref]))
        assert _attributes(x) == _attributes(ref)
    assert cnt.frame_count == 2               # the second call reused the graph; `older` present: recompiled
    t = torch.randn(3)
    assert torch_counts(fn, t, [t]) == (1, 0)
    x = torch.randn(3)
    ref = x.clone()
    assert same(bytegraph.compile(across_break)(x), across_break(ref))
    assert _attributes(x) == _attributes(ref)


class _CountingSetattr(torch.Tensor):
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value + 1)


def test_attribute_set_through_a_tensor_subclass_setattr_runs_it():
    def fn(x):
        x.n = 1
        return x * 2
    x = torch.ones(3).as_subclass(_CountingSetattr)
    ref = torch.ones(3).as_subclass(_CountingSetattr)
    assert same(bytegraph.compile(fn)(x), fn(ref)) and x.n == ref.n == 2


def test_numpy_type_information():
    np = pytest.importorskip("numpy")

    def fn(x):
        eps = float(np.finfo(np.float32).eps)
        return x * eps + np.iinfo(np.int16).max + np.dtype(np.float64).itemsize, np.finfo(np.float32).tiny
    check(fn, torch.randn(3))


def test_numpy_on_constants_is_a_constant():
    np = pytest.importorskip("numpy")

    def fn(x, d=64):
        x = x * np.sqrt(d)              # an np.float64: a float to torch
        return x, np.float32(2) * np.sqrt(np.float32(d))
    check(fn, torch.randn(3), like_torch=False)   # torch.compile graph-breaks on np.sqrt(64)

    def with_float32(x):
        return x * np.finfo(np.float32).eps + np.iinfo(np.int32).max
    check(with_float32, torch.randn(3))


def test_numpy_numbers_are_the_python_numbers_they_hold_to_torch():
    # measured against every dtype pair: torch reads a numpy int or float as the Python number it
    # holds (`int32 tensor * np.float64` is float32, like `* 0.5`); np.bool_ and complex scalars and
    # dtype-inferring constructors (`torch.tensor(np.float32(2))` is float32 under any default) are not
    np = pytest.importorskip("numpy")

    def numbers(x):
        return x * np.float64(0.5), torch.full((2,), np.int32(3)), x.clamp(max=np.float16(1.5)) - np.uint8(1)
    check(numbers, torch.arange(4, dtype=torch.int32), like_torch=False)

    for not_numbers in (lambda x: x.neg() * np.bool_(True), lambda x: torch.tensor(np.float32(2)) + x,
                        lambda x: x.new_tensor([np.int16(1)]) + x):
        check(not_numbers, torch.arange(4, dtype=torch.int32), graphs=1, breaks=1, like_torch=False)


def test_numpy_number_arguments_are_constants_guarded_bit_for_bit():
    np = pytest.importorskip("numpy")

    def fn(x, s):
        return x * s + 1
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.arange(4, dtype=torch.int32)
    for s in (np.float64(0.5), np.float64(0.5), np.float64(-0.0), np.float32(0.5), np.int64(2), np.float64(0.0)):
        assert same(opt(x, s), fn(x, s))
    assert cnt.frame_count == 5 and cnt.op_count == 10   # -0.0 and 0.0 are two constants, as are the types


def _same_numpy(a, b) -> bool:
    """numpy-aware `same`: arrays and numpy scalars by type, dtype, shape and value."""
    import numpy as np
    if isinstance(a, (np.ndarray, np.generic)):
        return type(a) is type(b) and a.dtype == b.dtype and np.shape(a) == np.shape(b) and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_numpy(x, y) for x, y in zip(a, b))
    return same(a, b)


def test_numpy_linalg_and_fft_through_torch():
    # np.linalg / np.fft run their torch._numpy twins when numpy's own result on stand-ins has the
    # same kind and dtype; `.real` / `.imag` of a complex array are views, as in numpy
    np = pytest.importorskip("numpy")

    def fn(a):
        norms = np.linalg.norm(a, axis=1, keepdims=True)
        inverse = np.linalg.inv(a[:, :3] @ a[:, :3].T + np.eye(3))
        spectrum = np.fft.fft(a)
        real = spectrum.real
        real[0, 0] = 100.0                # writes into the spectrum
        return norms, inverse, spectrum, real, spectrum.imag * 2, np.linalg.det(a[:, :3])

    a = np.arange(12.0).reshape(3, 4) / 7
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(a.copy())
    expected = fn(a.copy())
    for g, e in zip(got, expected):
        assert type(g) is type(e) and g.dtype == e.dtype and np.allclose(g, e)
    got[3][1, 1] = -7.0                   # the returned views share memory as numpy's do
    assert got[2][1, 1].real == -7.0
    assert cnt.frame_count == 1
    explained = bytegraph.explain(fn)(a.copy())
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)

    def float32_fft(a):
        return np.fft.fft(a)            # numpy gives complex128 for float32 input, torch complex64
    explained = bytegraph.explain(float32_fft)(a.astype(np.float32))
    assert explained.graph_break_count == 1 and "differs from numpy" in explained.break_reasons[0].reason


def test_ndarray_arguments_are_graph_inputs():
    np = pytest.importorskip("numpy")

    def fn(a, b):
        c = a * 2 + b
        return np.sum(c, axis=0), c.T, a.shape, np.where(c > 4, c, 0)

    def args(i):
        return np.arange(6.0).reshape(2, 3) + i, np.ones(3, dtype=np.float32)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for i in range(3):
        assert _same_numpy(opt(*args(i)), fn(*args(i)))
    assert cnt.frame_count == 1 and cnt.op_count == 6   # *, +, sum, .T, >, where
    explained = bytegraph.explain(fn)(*args(0))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    assert torch_counts(fn, *args(0)) == (1, 0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_ndarray_argument_written_in_place_stays_the_same_object(backend):
    np = pytest.importorskip("numpy")
    from bytegraph.testing import CompileCounterWithBackend

    def fn(a, t):
        a += 1
        a *= t.numpy()
        return a, a.sum()

    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(fn, backend=cnt)
    for i in range(2):
        a, a_eager = np.arange(4.0) + i, np.arange(4.0) + i
        got = opt(a, torch.full((4,), 2.0, dtype=torch.float64))
        want = fn(a_eager, torch.full((4,), 2.0, dtype=torch.float64))
        assert got[0] is a and _same_numpy(got, want) and _same_numpy(a, a_eager)
    assert cnt.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_ndarray_sharing_memory_with_a_tensor_argument(backend):
    # `t.numpy()` is the tensor's memory: a write through the tensor is seen by the array's reads
    np = pytest.importorskip("numpy")
    from bytegraph.testing import CompileCounterWithBackend

    def fn(t, a):
        t.add_(1)
        return a * 2

    def args(shared):
        t = torch.zeros(4, dtype=torch.float64)
        return t, (t.numpy() if shared else np.zeros(4))

    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(fn, backend=cnt)
    for shared in (True, False, True):
        assert _same_numpy(opt(*args(shared)), fn(*args(shared)))
    assert cnt.frame_count == 2     # one graph per sharing pattern


def test_ndarray_arguments_torch_refuses_stay_opaque():
    np = pytest.importorskip("numpy")

    def fn(x, a):
        return x + 1, np.sum(a)

    read_only = np.arange(3.0)
    read_only.flags.writeable = False
    for a in (read_only, np.arange(6.0)[::-2], np.arange(3, dtype=np.uint32).astype(">u4")):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt)
        assert _same_numpy(opt(torch.ones(2), a), fn(torch.ones(2), a))
        assert cnt.frame_count == 1 and len(bytegraph.stats.break_records) == 1


def test_0d_tensor_as_linspace_steps_under_aot_eager():
    from bytegraph.testing import CompileCounterWithBackend
    steps = torch.tensor(3)

    def fn(x):
        return torch.linspace(0, 1, steps) + x.sum()

    cnt = CompileCounterWithBackend("aot_eager")
    opt = bytegraph.compile(fn, backend=cnt)
    assert same(opt(torch.ones(2)), fn(torch.ones(2)))
    assert cnt.frame_count == 1


def test_namedtuple_made_in_compiled_code():
    def fn(x):
        Pair = collections.namedtuple("Pair", ["a", "b"])
        p = Pair(x, 2)
        return p.a * p.b + p[0], len(p)

    def escapes(x):
        Pair = collections.namedtuple("Pair", "a b")
        return Pair(x * 2, 1), Pair(x, 2), Pair   # eager makes a new class per call, shared by these

    x = torch.randn(3)
    check(fn, x)
    opt = bytegraph.compile(escapes)
    out = opt(x)
    assert type(out[0]).__name__ == "Pair" and torch.equal(out[0].a, x * 2)
    assert type(out[0]) is type(out[1]) is out[2] and out[2].__module__ == __name__
    assert type(opt(x)[0]) is not type(out[0])     # made again by each call, never the trace's class
    assert bytegraph.explain(escapes)(x).graph_break_count == 0


def test_state_queries_on_symbolic_sizes():
    def fn(x):     # as transformers' M2M100 positional embedding asks
        n = x.shape[0] + 3
        if not (torch.compiler.is_compiling() and torch.is_tensor(n)) and n > 5:
            return x * 2
        return x + 1
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, dynamic=True)
    for size in (2, 3, 4):
        x = torch.randn(size)
        assert torch.equal(opt(x), fn(x))
    assert cnt.frame_count == 2     # n > 5 is a guard on the size: one graph each side of it


_HANDLERS_BY_TYPE = {int: lambda v: v + 1, torch.Tensor: lambda v: v * 2, len: "a function key"}


def test_dicts_keyed_by_classes_and_functions():
    import torch.utils._pytree as pytree

    def fn(x):
        doubled = pytree.tree_map(lambda t: t * 2, {"a": x, "b": [x, (x + 1,)]})
        return _HANDLERS_BY_TYPE[type(x)](x), _HANDLERS_BY_TYPE[len], doubled
    x = torch.randn(3)
    check(fn, x)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    opt(x)
    _HANDLERS_BY_TYPE[float] = None       # the keys changed: recompiled
    try:
        assert same(opt(x), fn(x)) and cnt.frame_count == 2
    finally:
        del _HANDLERS_BY_TYPE[float]


class _Cached:
    @functools.lru_cache(None)      # bound as C binds it; its cache is not modelled: the call breaks
    def once(self, n):
        _CALLS.append(n)
        return n


def test_method_through_a_cache_descriptor_breaks_cleanly():
    obj = _Cached()

    def fn(x):
        return x * obj.once(2)
    x = torch.randn(3)
    _CALLS.clear()
    assert torch.equal(bytegraph.compile(fn)(x), x * 2) and torch.equal(bytegraph.compile(fn)(x), x * 2)
    assert _CALLS == [2]            # cached after the first call, as eagerly
    reasons = [b.reason for b in bytegraph.explain(fn)(x).break_reasons]
    assert "call to builtin _Cached.once is not traceable" in reasons[0], reasons


class _ScaleWithSetupContext(torch.autograd.Function):
    @staticmethod
    def forward(a, scale):
        return a * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        return grad * ctx.scale + a, None


class _SetupContextWithSideEffect(_ScaleWithSetupContext):
    @staticmethod
    def setup_context(ctx, inputs, output):
        _CALLS.append(1)
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autograd_function_with_setup_context_is_one_node(backend):
    def fn(x):
        return _ScaleWithSetupContext.apply(x.sin(), 3.0).cos()
    _check_one_node(fn, "_ScaleWithSetupContext_apply", backend)


def test_autograd_function_setup_context_with_side_effects_breaks():
    def fn(x):
        return _SetupContextWithSideEffect.apply(x + 1, 2.0) - 1
    x = torch.randn(3)
    _CALLS.clear()
    explained = bytegraph.explain(fn)(x)
    # (the eager apply then runs setup_context as a frame of its own, which breaks at ctx.save_for_backward)
    assert "apply is not traceable (its forward changes Python state" in explained.break_reasons[0].reason
    assert len(_CALLS) == 1
    _CALLS.clear()
    assert torch.equal(bytegraph.compile(fn)(x), fn(x)) and len(_CALLS) == 2


# -- 0-d tensors read as Python numbers by torch calls ---------------------------------------------
def _sized_by_tensor(x, n):
    return torch.arange(n) * x.sum() + torch.zeros(n, 2).sum(1)


def test_zero_dim_tensor_read_as_a_size_is_one_graph_for_all_values():
    x = torch.randn(4)
    check(_sized_by_tensor, x, torch.tensor(3))
    cnt = CompileCounter()
    opt = bytegraph.compile(_sized_by_tensor, backend=cnt)
    for n in (torch.tensor(3), torch.tensor(5), torch.tensor(2), torch.tensor(9)):
        assert same(opt(x, n), _sized_by_tensor(x, n))
    assert cnt.frame_count == 1            # the value is a symbol, as in torch.compile


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_zero_dim_tensor_read_as_a_size_through_backends(backend):
    x = torch.randn(4)
    opt = bytegraph.compile(_sized_by_tensor, backend=backend)
    for n in (torch.tensor(3), torch.tensor(6)):
        assert same(opt(x, n), _sized_by_tensor(x, n))
    assert bytegraph.stats.graphs == 1


def test_zero_dim_tensor_value_branched_on_is_guarded():
    def fn(x, n):
        return x + 1 if torch.arange(n).shape[0] > 4 else x - 1
    x = torch.randn(3)
    check(fn, x, torch.tensor(3))
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert same(opt(x, torch.tensor(3)), fn(x, torch.tensor(3)))
    assert same(opt(x, torch.tensor(7)), fn(x, torch.tensor(7)))   # the other branch: a new graph
    assert same(opt(x, torch.tensor(2)), fn(x, torch.tensor(2)))   # the first graph again
    assert same(opt(x, 6), fn(x, 6))                               # not a tensor at all
    assert cnt.frame_count == 3


def test_zero_dim_tensor_changed_in_place_before_the_read():
    def fn(x, n):
        n.add_(2)
        return torch.arange(n) + x.sum()
    x = torch.randn(3)
    n_compiled, n_eager = torch.tensor(3), torch.tensor(3)
    cnt = CompileCounter()
    assert same(bytegraph.compile(fn, backend=cnt)(x, n_compiled), fn(x, n_eager))
    assert torch.equal(n_compiled, n_eager) and cnt.frame_count == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("op", ["foreach_lerp_", "foreach_pow", "addcmul_"])
def test_zero_dim_tensor_read_as_a_scalar_argument(op, dtype):
    # a float32/int32 0-d tensor passed where the op takes a Scalar: its value is read as a Python
    # number (exactly) and becomes a symbol, no data-dependent break; each value gives eager's result
    def fn(xs, ys, s):
        if op == "foreach_lerp_":
            return torch._foreach_lerp_(xs, ys, s)
        if op == "foreach_pow":
            return torch._foreach_pow(s, ys)
        return xs[0].addcmul_(ys[0], ys[1], value=s)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for value in (0.25, 3, -2):
        args = lambda: ([torch.ones(2, 2) * 3.5, torch.ones(2, 2) * 1.5], [torch.ones(2, 2), torch.full((2, 2), 2.0)],  # noqa: E731
                        torch.tensor(value, dtype=dtype))
        assert same(opt(*args()), fn(*args()))
    assert cnt.frame_count == 1
    assert len(bytegraph.stats.break_records) == 0


# -- compile inside compiled code, and under a TorchDispatchMode ---------------------------------------
def _cos(x):
    return x.cos()


_compiled_cos = bytegraph.compile(_cos)


def test_compiled_function_called_from_compiled_code_joins_the_graph():
    def fn(x):
        return _compiled_cos(x.sin()) + 1
    cnt = check(fn, torch.randn(3), like_torch=False)
    assert cnt.op_count == 3


def test_compile_called_inside_compiled_code_joins_the_graph():
    # the new compiled function, called there, is traced as the function it wraps
    def fn(x):
        return bytegraph.compile(_cos, backend="eager")(x) + 1
    cnt = check(fn, torch.randn(3), like_torch=False)
    assert cnt.op_count == 2

    def returned(x):
        triple = bytegraph.compile(lambda u: u * 3, dynamic=False)
        return triple(x), triple
    x = torch.randn(3)
    value, wrapper = bytegraph.compile(returned)(x)
    assert torch.equal(value, x * 3) and torch.equal(wrapper(x), x * 3)
    assert "_bytegraph_callback" in wrapper.__dict__       # made again after the graph: a real wrapper

    def rejected(x):
        return bytegraph.compile(_cos, backend="no-such-backend")(x)
    with pytest.raises(ValueError, match="no-such-backend"):
        bytegraph.compile(rejected)(x)


def test_compiled_function_returned_is_the_wrapper():
    def fn(x):
        return _compiled_cos, x + 1
    out = bytegraph.compile(fn)(torch.randn(2))
    assert out[0] is _compiled_cos


class _OpLog(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_dispatch_mode_sees_what_eager_does():
    def fn(x):
        return (x.sin() + 1).cos()
    x = torch.randn(3)
    with _OpLog() as eager:
        expected = fn(x)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    with _OpLog() as first:          # never compiled under a mode: it would see fake ops
        got = opt(x)
    assert same(got, expected) and first.ops == eager.ops and cnt.frame_count == 0
    assert same(opt(x), expected) and cnt.frame_count == 1
    with _OpLog() as cached:         # nor a graph run under one
        got = opt(x)
    assert same(got, expected) and cached.ops == eager.ops and cnt.frame_count == 1


class _AddIsSub(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.add or func is torch.Tensor.__add__:
            func = torch.Tensor.sub
        return func(*args, **(kwargs or {}))


def test_function_mode_sees_what_eager_does():
    # a TorchFunctionMode (HF's masks enter `TransformGetItemToIndex`) changes what the program's
    # calls do: frames run under one run eagerly, and a graph compiled outside never runs inside one
    def fn(x):
        return (x.sin() + 1).cos()
    x = torch.randn(3)
    with _AddIsSub():
        expected = fn(x)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    with _AddIsSub():
        assert same(opt(x), expected) and cnt.frame_count == 0
    assert same(opt(x), fn(x)) and cnt.frame_count == 1
    with _AddIsSub():
        assert same(opt(x), expected) and cnt.frame_count == 1


# -- TransformGetItemToIndex, modelled in the trace (HF's vmap'd attention masks) -----------------
def _mode_class():
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex
    return TransformGetItemToIndex


def _index_under_mode(t, idx):
    with _mode_class()():
        rows = torch.vmap(lambda i: t[i])(idx)        # a batched 0-d index: aten.index, not .item()
        first = t[0]                                   # an int: a copy, not a view (add_ leaves t alone)
        first.add_(1)
        pair = t[1, 2] + t[idx[0], 1]                  # ints and tensors mixed
        col = t[:, 1]                                  # a slice: the mode passes it on (a view)
        col.mul_(2)
    return rows, first, pair, col, t.clone()


def test_get_item_to_index_mode_is_traced():
    t, idx = torch.arange(12.).reshape(3, 4), torch.tensor([2, 0, 1])
    expected = _index_under_mode(t.clone(), idx)
    cnt = CompileCounter()
    opt = bytegraph.compile(_index_under_mode, backend=cnt)
    assert same(opt(t.clone(), idx), expected) and same(opt(t.clone(), idx), expected)
    assert cnt.frame_count == 1
    explained = bytegraph.explain(_index_under_mode)(t.clone(), idx)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)


def _break_under_mode(t):
    with _mode_class()():
        bytegraph.graph_break()
        first = t[0]
        first.add_(1)           # under the mode `first` is a copy: t is unchanged
    return first, t.clone()


def test_break_under_get_item_to_index_runs_the_frame_eagerly():
    # the native code after a break would run without the mode: the frame runs eagerly instead
    t = torch.arange(6.).reshape(2, 3)
    expected = _break_under_mode(t.clone())
    cnt = CompileCounter()
    assert same(bytegraph.compile(_break_under_mode, backend=cnt)(t.clone()), expected)
    assert cnt.frame_count == 0
    with bytegraph.config.patch(strict=True):
        assert bytegraph.explain(_break_under_mode)(t.clone()).graph_break_count == 1


def test_hf_vmap_mask_under_get_item_to_index_is_one_graph():
    masking_utils = pytest.importorskip("transformers.masking_utils")

    def mask(padding):
        fn = masking_utils.and_masks(masking_utils.causal_mask_function,
                                     masking_utils.padding_mask_function(padding))
        return masking_utils.sdpa_mask(batch_size=2, q_length=5, kv_length=5, mask_function=fn,
                                       allow_is_causal_skip=False, use_vmap=True)
    padding = torch.tensor([[1, 1, 1, 1, 0], [0, 1, 1, 1, 1]], dtype=torch.bool)
    check(mask, padding, like_torch=False)


# -- math.prod over a list built in the frame (HF Hiera's unroll) ----------------------------------
def _flatten_patches(x, image_shape, patch_stride):
    size = [i // s for i, s in zip(image_shape, patch_stride)]
    return x.reshape(-1, math.prod(size), x.shape[-1]) * math.prod(size, start=0.5)


def test_math_prod_of_a_list_is_traced():
    check(_flatten_patches, torch.randn(2, 16, 3), (32, 32), (8, 8))


def test_math_prod_of_symbolic_sizes_stays_in_the_graph():
    def fn(x):
        return x.reshape(math.prod(x.shape[:2]), -1)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, dynamic=True)
    for shape in ((2, 3, 4), (5, 2, 4), (3, 7, 2)):
        x = torch.randn(shape)
        assert same(opt(x), fn(x))
    assert cnt.frame_count == 1


# -- torch.utils.checkpoint ---------------------------------------------------------------------------
_ckpt_linear = torch.nn.Linear(4, 4)


def _ckpt_block(y):
    return F.dropout(_ckpt_linear(y).relu(), 0.3, training=True) * 2


def _checkpointed(x):
    return torch.utils.checkpoint.checkpoint(_ckpt_block, x.sin(), use_reentrant=False).sum()


def test_checkpoint_is_traced_into_the_graph():
    def fn(x):
        return torch.utils.checkpoint.checkpoint(lambda y: _ckpt_linear(y).relu(), x.sin(), use_reentrant=False)
    check(fn, torch.randn(3, 4))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_training_step_equals_eager(backend):
    x = torch.randn(3, 4, requires_grad=True)

    def step(fn):
        x.grad = _ckpt_linear.weight.grad = None
        torch.manual_seed(0)         # the same dropout mask (eager replays it in the recompute)
        out = fn(x)
        out.backward()
        return out.detach(), x.grad, _ckpt_linear.weight.grad
    cnt = CompileCounter() if backend == "eager" else backend
    assert same(step(bytegraph.compile(_checkpointed, backend=cnt)), step(_checkpointed))
    assert backend != "eager" or cnt.frame_count == 1


def test_checkpoint_of_a_function_with_side_effects_breaks():
    calls = []

    def block(y):
        calls.append(1)           # eager runs this again in backward: inlining it once would differ
        return y * 2

    def fn(x):
        return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) + 1
    explained = bytegraph.explain(fn)(torch.randn(3))
    assert explained.graph_break_count == 1 and "changes Python state" in explained.break_reasons[0].reason


class _SiLU(torch.nn.Module):      # like HF's activation classes: no __init__ of its own
    def forward(self, x):
        return F.silu(x)


class _ScaledSiLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return F.silu(x) * self.scale


def test_user_module_built_only_by_module_init_inside_forward():
    def fn(x):
        return _SiLU()(x) + 1         # HF: ACT2FN["silu"](x) builds a fresh SiLUActivation per call
    check(fn, torch.randn(3))


def test_user_module_with_its_own_init_built_inside_forward_breaks():
    def fn(x):
        return _ScaledSiLU()(x) + 1
    x = torch.randn(3)
    assert same(bytegraph.compile(fn)(x), fn(x))
    assert "user-defined module" in bytegraph.explain(fn)(x).break_reasons[0].reason


def test_module_built_in_forward_does_not_escape_as_a_trace_constant():
    def fn(x):
        return _SiLU(), x + 1
    opt = bytegraph.compile(fn)
    a, b = opt(torch.randn(2))[0], opt(torch.randn(2))[0]
    assert type(a) is _SiLU and a is not b      # a new module per call, as in eager


# -- found by CPython's test_types, compiled ------------------------------------------------------------
def test_slot_bound_to_an_instance_is_a_method_wrapper():
    def fn(x):
        init, text = object().__init__, object().__str__
        return x + 1, type(init), isinstance(text, types.MethodWrapperType), type(init).__name__, init, text

    x = torch.randn(2)
    expected = fn(x)
    got = bytegraph.compile(fn)(x)
    assert same(got[:4], expected[:4]) and [type(v) for v in got[4:]] == [type(v) for v in expected[4:]]
    assert bytegraph.explain(fn)(x).graph_count == 1


def test_cell_emptied_through_closure_is_seen_by_the_function():
    def fn(x):             # (CPython's test_funcattrs.test_set_cell)
        a = 12

        def f():
            return a
        c = f.__closure__
        del c[0].cell_contents      # the frame's own cell, through another path
        out = []
        try:
            f()
        except NameError:
            out.append("NE")
        try:
            c[0].cell_contents
        except ValueError:
            out.append("VE")
        return x + 1, out
    x = torch.randn(2)
    assert same(bytegraph.compile(fn)(x), fn(x))


def test_except_clause_naming_an_instance_raises_type_error():
    def fn(x, spec):       # (CPython's test_baseexception.test_catch_BaseException_instance)
        try:
            try:
                raise ValueError
            except spec:
                return x - 1
        except TypeError:
            return x + 1
    x = torch.randn(2)
    assert same(bytegraph.compile(fn)(x, BaseException()), fn(x, BaseException()))


def test_unhashable_key_raises_type_error_as_in_eager():
    saved = {}

    def memo(*args):         # (CPython's test_decorators.test_memoize)
        try:
            return saved[args]
        except KeyError:
            saved[args] = len(args)
            return -1
        except TypeError:
            return "unhashable"

    def fn(x):
        return memo([10]), memo(3), memo(3), x + 1
    x = torch.randn(2)
    expected = fn(x)
    saved.clear()
    assert same(bytegraph.compile(fn)(x), expected)


def test_tuples_built_apart_are_one_key():
    def fn(x):
        d = {(1, x): 5}
        return d[(1, x)], (1, x) in {(1, x)}, x + 1
    check(fn, torch.randn(2), like_torch=False)


@pytest.mark.parametrize("break_first", [False, True])
def test_deleted_cell_variable_raises_unbound_local_error(break_first):
    def fn(x):
        a = 1

        def g():
            return a  # noqa: F821 - deleted below, on purpose
        del a
        if break_first:
            bytegraph.graph_break()       # the rest runs in a resume function, where `a` is a free variable
        try:
            a  # noqa: B018 - the read is the test
        except UnboundLocalError:
            return "UnboundLocalError", x + 1
        except NameError:
            return "NameError", x + 1
    x = torch.randn(2)
    assert same(bytegraph.compile(fn, backend="eager")(x), fn(x))


def test_list_and_deque_writes_out_of_range_raise_the_programs_error():
    def fn(x, lst):      # (found by the fuzzer: an internal error, then a break, before)
        out = []
        for op in range(4):
            try:
                if op == 0:
                    lst[10] = 1
                elif op == 1:
                    del lst[10]
                elif op == 2:
                    lst[::2] = [1, 2, 3, 4, 5]
                else:
                    collections.deque([1])[5] = 2
            except (IndexError, ValueError) as e:
                out.append((type(e).__name__, str(e)))
        lst[0] = 9
        return x + 1, out, lst
    check(fn, torch.randn(2), [1, 2, 3], like_torch=False)


def test_checkpoint_without_preserved_rng_state_breaks():
    # eager's recompute in backward draws a new dropout mask: one traced forward cannot match it
    def fn(x):
        return torch.utils.checkpoint.checkpoint(_ckpt_block, x, use_reentrant=False, preserve_rng_state=False)
    explained = bytegraph.explain(fn)(torch.randn(3, 4))
    assert explained.graph_break_count == 1 and "RNG state" in explained.break_reasons[0].reason


# -- found by the HuggingFace sweep (mamba's associative scan, masks expanded by vmap) -------------------
def test_vmap_of_a_python_function_is_traced():
    def inner(x):          # under vmap, `x` is a batched tensor (its per-example shape is what fn sees)
        return x * x.sum() + x.is_contiguous() + x.shape[0]

    def fn(x):
        return torch.vmap(inner)(x + 1)
    x = torch.randn(3, 4, requires_grad=True)
    check(fn, x, graphs=1, breaks=0)        # like torch.compile
    loss = bytegraph.compile(fn, backend="aot_eager")(x).sum()
    got = torch.autograd.grad(loss, x)[0]
    assert same(got, torch.autograd.grad(fn(x).sum(), x)[0])
    # an entry compiled outside a transform is never run inside one
    c = CompileCounter()
    opt = bytegraph.compile(inner, backend=c)
    assert same(opt(x[0]), inner(x[0])) and same(torch.vmap(opt)(x), torch.vmap(inner)(x))
    assert c.frame_count == 1


def test_an_op_returning_an_earlier_tensor_itself_keeps_identity():
    # vmap of the identity unwraps back to its very input (eager: `y is x`); so do contiguous/to
    def fn(x):
        y = torch.vmap(lambda t: t)(x)
        return y is x, x.contiguous() is x, x.to(torch.float32) is x, y * 2
    check(fn, torch.randn(3, 4), graphs=1, breaks=0)


def test_nested_vmap_with_in_dims_out_dims_and_a_closure():
    w = torch.randn(4)

    def fn(a, b):
        pair = torch.vmap(lambda p, q: (p * q * w).sum(), in_dims=(0, None))
        outer = torch.vmap(pair, in_dims=(None, 0))(a, b)
        parts = torch.vmap(lambda t: (t.sin(), t.cos().sum()), out_dims=(1, 0))(a)
        return outer, parts
    check(fn, torch.randn(5, 4), torch.randn(6, 4), graphs=1, breaks=0)


def test_vmap_over_a_dynamic_batch_size():
    def fn(x):
        return torch.vmap(lambda t: t * t.sum())(x)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt, dynamic=True)
    for n in (3, 5, 7):
        x = torch.randn(n, 4)
        assert same(opt(x), fn(x))
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def test_vmap_of_a_function_with_side_effects_runs_natively():
    seen = []

    def fn(x):
        def record(t):
            seen.append(t.shape)          # eager appends once, with the per-example shape
            return t * 2
        return torch.vmap(record)(x) + 1
    x = torch.randn(3, 4)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert same(opt(x), fn(x))
    assert seen == [torch.Size([4])] * 2
    assert cnt.frame_count == 1 and len(bytegraph.stats.break_records) == 1


def test_associative_scan_is_traced_through_vmap():
    # HF mamba's scan (`torch._higher_order_ops.associative_scan`, generic mode on CPU) is torch's
    # Python code calling the combine function through torch.vmap
    from torch._higher_order_ops.associative_scan import associative_scan

    def fn(a, b):
        def combine(left, right):
            return left[0] * right[0], right[0] * left[1] + right[1]
        return associative_scan(combine, (a, b), dim=1, combine_mode="generic")
    a, b = torch.rand(2, 6, 3), torch.randn(2, 6, 3)
    check(fn, a, b, graphs=1, breaks=0)


class LayerConfig:
    """A config copied per layer, as transformers' heterogeneous configs are (`copy.copy` of the
    config inside forward, then its instance dict edited)."""

    def __init__(self):
        self.scale = 2
        self.spec = {"layer": 1}

    def __getattribute__(self, key):      # a Python __getattribute__, run for every read
        super().__getattribute__("__dict__").get("spec")
        return super().__getattribute__(key)


def copy_config(x, config):
    layer = copy.copy(config)
    layer.__dict__.pop("spec", None)
    layer.skip = []
    return x * layer.scale, list(layer.__dict__), "spec" in config.__dict__, type(layer) is LayerConfig


def test_copy_of_a_config_object_in_forward():
    x = torch.randn(3)
    config = LayerConfig()
    check(copy_config, x, config, graphs=1, breaks=0)   # like torch.compile


def test_first_copy_of_a_class_breaks_once_then_recompiles():
    class Fresh:    # copyreg caches `__slotnames__` on the class at its first copy
        scale = 3

    def fn(x, config):
        return copy.copy(config).scale * x
    x, config = torch.randn(3), Fresh()
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert "__slotnames__" not in Fresh.__dict__
    assert same(opt(x, config), fn(x, config))      # the copy runs natively here
    assert cnt.frame_count == 1 and len(bytegraph.stats.break_records) == 1
    for _ in range(2):
        assert same(opt(x, config), fn(x, config))  # recompiled once: one graph, no break
    assert cnt.frame_count == 2 and bytegraph.stats.recompiles == 1


def test_copy_of_objects_with_their_own_reduce_or_slots_breaks():
    class Slotted:
        __slots__ = ("a",)

        def __init__(self):
            self.a = 1

    class OwnState:
        a = 1

        def __getstate__(self):
            return {"a": 5}

    def fn(x, config):
        return x * copy.copy(config).a
    for obj in (Slotted(), OwnState()):
        copy.copy(obj)
        check(fn, torch.randn(3), obj, graphs=1, breaks=1, like_torch=False)


def test_dict_keyed_by_typing_special_forms():
    validators = {typing.Union: "union", typing.Literal: "literal", list: "list"}   # huggingface_hub's

    def fn(x, origin):      # (the origin of a type hint: `typing.get_origin(Optional[int])`)
        return x + 1, validators.get(origin), origin in validators
    for origin in (typing.Union, typing.Literal, list, None, typing.Generic):
        check(fn, torch.randn(2), origin)


def test_object_key_attributes_are_guarded():
    class Flag:
        def __init__(self):
            self.on = True

    def fn(x, table):
        for key, scale in table.items():
            if key.on:
                x = x * scale
        return x
    flag = Flag()
    table = {flag: 2.0}
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(2)
    assert same(opt(x, table), fn(x, table))
    flag.on = False                       # read through the key: a guard sees the change
    assert same(opt(x, table), fn(x, table))
    assert cnt.frame_count == 1 and bytegraph.stats.recompiles == 1


def test_attribute_deletion_follows_object_delattr():
    class Logged:
        def __delattr__(self, name):
            object.__setattr__(self, "deleted", name)

    def fn(x, old):
        a = LayerConfig.__new__(LayerConfig)
        a.b, a.c = 1, 2
        del a.b
        try:
            del a.missing
        except AttributeError as e:
            error = str(e)
        del old.scale
        logged = Logged()
        del logged.anything
        a.b = 3                    # set again after the deletion: last in the instance dict
        return x + 1, list(a.__dict__), error, logged.__dict__
    x = torch.randn(2)
    expected = fn(x, LayerConfig())
    old = LayerConfig()
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert same(opt(x, old), expected) and "scale" not in old.__dict__
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def test_object_made_by_a_class_new_is_rebuilt_without_calling_it_again():
    class WithNew:            # (CPython's test_copy.test_copy_registry)
        def __new__(cls, foo):
            obj = object.__new__(cls)
            obj.foo = foo
            return obj

    def make(cls, x):         # `cls.__new__` traced: object.__new__ in the graph's frame
        return cls.__new__(cls, 42), x + 1
    x = torch.randn(2)
    cnt = CompileCounter()
    obj, _ = bytegraph.compile(make, backend=cnt)(WithNew, x)
    assert type(obj) is WithNew and obj.__dict__ == {"foo": 42}
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def test_class_overriding_dict_is_read_through_its_descriptor():
    class Shadowed:           # (CPython's test_descr.test_dir, on a plain class)
        __dict__ = property(lambda self: "Not a dict!")

    def fn(x, obj):
        return x + len(obj.__dict__)
    check(fn, torch.randn(2), Shadowed(), like_torch=False)   # (torch.compile fails on it)


def test_integer_numpy_division_by_zero_gives_numpy_zero():
    # numpy warns and gives 0 where torch (and so torch._numpy) raises: integer divisions break
    np = pytest.importorskip("numpy")

    def fn(a, d):
        return a // d, a % d, np.add(a, 1)

    a = np.arange(3)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    with np.errstate(all="ignore"):
        assert _same_numpy(opt(a, 0), fn(a, 0))
    assert cnt.frame_count == 1 and len(bytegraph.stats.break_records) == 2


# -- modules guarded by type, not identity (HF MoE models: jetmoe, switch_transformers) --------------
class _Block(torch.nn.Module):
    """A layer whose forward breaks part way (MoE routing reads expert sizes as Python ints)."""
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if (y.abs() >= 0).all():        # a branch on data: a graph break, in torch.compile too
            return y * 2
        return y


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.b0, self.b1, self.b2 = _Block(), _Block(), _Block()

    def forward(self, x):
        x = self.b0(x).relu()
        x = self.b1(x).relu()
        return self.b2(x).relu()


def test_layers_of_one_class_share_their_compiled_frames():
    # each block's forward is compiled as its own frame (its break ends the caller's graph at the
    # call): 2 graphs for the first block, then the second and third run its entries, as in
    # torch.compile (not an entry per layer); plus one graph per `relu` between the calls
    with torch.no_grad():
        check(_Stack(), torch.randn(2, 4), graphs=5, breaks=4)
    assert not bytegraph.stats.recompiles


def test_module_attribute_written_in_shared_code():
    # the write goes to each layer (HF's switch router stores `self.input_dtype`) and the code stays shared
    class Router(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            self.input_dtype = x.dtype
            return self.lin(x)

    routers = [Router(), Router()]
    cnt = CompileCounter()
    opt = bytegraph.compile(lambda r, x: r(x), backend=cnt)
    x = torch.randn(2, 4)
    for r in routers:
        assert same(opt(r, x), r.lin(x)) and r.input_dtype is torch.float32
    assert cnt.frame_count == 1


def test_modules_of_one_class_aliased_after_compiling():
    # traced as two objects, called with one: a write through `a` must be seen through `b`, and
    # `a is b` must answer for the objects of the call (identity of modules is guarded when used)
    class Tagged(torch.nn.Module):
        def forward(self, x):
            return x

    def write_then_read(a, b, x):
        a.tag = 1.0
        return x + b.tag

    def same_object(a, b, x):
        return x + 1 if a is b else x - 1

    x = torch.zeros(2)
    for fn in (write_then_read, same_object):
        cnt = CompileCounter()
        opt = bytegraph.compile(fn, backend=cnt)
        m1, m2 = Tagged(), Tagged()
        m1.tag = m2.tag = 0.0
        assert same(opt(m1, m2, x), fn(m1, m2, x))
        m1.tag = 0.0
        assert same(opt(m1, m1, x), fn(m1, m1, x))
        assert cnt.frame_count == 2


def _linear_with_scale(scale=1.0, bias=True):
    m = torch.nn.Linear(3, 3, bias=bias)
    m.scale = scale
    return m


def _with_hook(m):
    m.register_forward_hook(lambda mod, args, out: out + 100)
    return m


def _forward_replaced(m):
    m.forward = lambda x: x * 7
    return m


@pytest.mark.parametrize("other", [
    lambda: _linear_with_scale(scale=2.0),            # a constant attribute
    lambda: _linear_with_scale(bias=False),           # a parameter that is None
    lambda: _with_hook(_linear_with_scale()),         # a hook on one instance only
    lambda: _linear_with_scale().train(False),        # the training flag
    lambda: _forward_replaced(_linear_with_scale()),  # `forward` set on the instance
], ids=["constant", "none_parameter", "hook", "training", "instance_forward"])
def test_modules_of_one_class_differing_in_what_is_read(other):
    # what the trace read from the first module is guarded through its source: another module of
    # the class that differs there recompiles
    def fn(m, x):
        return m(x) * m.scale + m.training

    first, second, x = _linear_with_scale(), other(), torch.randn(2, 3)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for m in (first, second, first):
        assert same(opt(m, x), fn(m, x))
    assert cnt.frame_count == 2


def test_iterating_parameters_of_modules_of_one_class():
    # `parameters()` lists what the module holds: a Linear without bias has one parameter fewer
    def total(m, x):
        return sum(p.sum() for p in m.parameters()) + x

    cnt = CompileCounter()
    opt = bytegraph.compile(total, backend=cnt)
    x = torch.zeros(1)
    for m in (torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 2)):
        assert same(opt(m, x), total(m, x))
    assert cnt.frame_count == 2


# -- nn.Module.to inside forward (HF's switch router casts its classifier every call) ------------------
class _CastsItsLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        self.lin = self.lin.to(torch.float32)    # nothing to convert: `p.data = p` for each parameter
        return self.lin(x)


def test_module_to_its_own_dtype_in_forward_is_one_graph():
    m = _CastsItsLayer()
    weight = m.lin.weight
    check(m, torch.randn(2, 3), graphs=1, breaks=0)
    assert m.lin.weight is weight


def test_module_to_follows_torch_future_flags():
    # `torch.__future__` decides whether `.to()` keeps the parameter objects: its flags are guarded
    m = _CastsItsLayer()
    cnt = CompileCounter()
    opt = bytegraph.compile(m, backend=cnt)
    x = torch.randn(2, 3)
    opt(x)
    weight = m.lin.weight
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        assert same(opt(x), m.lin(x))
        assert m.lin.weight is not weight      # replaced, as eager does under the flag
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(False)


def test_a_namedtuple_class_made_in_compiled_code_live_at_a_break_runs_as_python():
    # the resumed code would get a new class on every call and recompile each time: it runs as Python
    def f(x):
        P = collections.namedtuple("P", "a b")
        p = P(x + 1, 2)
        print(end="")
        return p.a * p.b, type(p).__name__
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for _ in range(4):
        assert same(opt(torch.ones(2)), f(torch.ones(2)))
    assert bytegraph.stats().recompiles == 0
