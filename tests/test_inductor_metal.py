"""The inductor backend's Metal printer, checked on Linux: `config.cpu_codegen = "metal"` compiles the
generated MSL as C++ against metal_emu.h and runs it on CPU tensors. Every case compares with eager
AND asserts that the kernels came from the Metal printer (`metrics.codegen == "metal"`, a kernel
count, MSL in the source); views and in-place updates of views check that no load or store assumes a
contiguous layout."""
import ctypes

import bytegraph
import pytest
import torch
import torch.nn.functional as F
from bytegraph.backends import inductor
from bytegraph.backends.inductor import codegen_metal, cpp_build
from bytegraph.backends.inductor.codegen_cpp import TEMPLATES
from bytegraph.testing import CompileCounterWithBackend

pytestmark = pytest.mark.skipif(not cpp_build.available(), reason="no C++ compiler")
torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _metal_printer():
    with bytegraph.config.patch(cpu_codegen="metal"):
        yield


def _clone(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _run(fn, args, *, kernels=None, atol=1e-5, rtol=1e-5, dynamic=None, check_args=False):
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend("inductor")
    opt = bytegraph.compile(fn, backend=cnt, dynamic=dynamic)
    eager_args = _clone(args)
    expected = fn(*eager_args)
    got = opt(*args)
    assert cnt.frame_count == 1, cnt.frame_count
    _assert_close(got, expected, atol, rtol)
    if check_args:  # in-place updates: the inputs must end up as eager left them
        _assert_close(list(args), eager_args, atol, rtol)
    m = inductor.metrics
    assert m.codegen == "metal" and m.kernel_count > 0, (m.codegen, m.kernel_count)
    src = m.last_source
    assert "kernel void kernel0(" in src and "std::" not in src.split("MSL_SOURCE", 1)[1].split("'''", 2)[1]
    if kernels is not None:
        assert m.kernel_count == kernels, f"{m.kernel_count} kernels, expected {kernels}:\n{m.last_groups}"
    return m


def _assert_close(got, expected, atol, rtol):
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_close(g, e, atol, rtol)
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape)
    if expected.dtype in (torch.float16, torch.bfloat16):
        atol = rtol = None
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol, equal_nan=True)


# --------------------------------------------------------------------------- pointwise and dtypes
def test_pointwise_chain_one_kernel():
    x, y = torch.randn(33, 70), torch.randn(33, 70)
    m = _run(lambda x, y: (torch.relu(x * 2 + y).sin() - y.exp()) / (1 + y.abs()), [x, y], kernels=1)
    assert "[[thread_position_in_grid]]" in m.last_source


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8])
def test_dtypes(dtype):
    x = (torch.randn(6, 40) * 10).to(dtype)
    y = (torch.randn(6, 40) * 10).to(dtype)
    _run(lambda x, y: (x * y + x, (x > y) & (y != 0), torch.maximum(x, y)), [x, y], kernels=1)


def test_transcendentals_accurate():
    # expm1/log1p/erf are the prelude's own (MSL has none): accurate where naive formulas lose digits
    x = torch.cat([torch.logspace(-12, -1, 50), -torch.logspace(-12, -1, 50), torch.linspace(-6, 6, 61)])
    _run(lambda x: (torch.expm1(x), torch.log1p(x.abs()), torch.erf(x), torch.tanh(x), torch.sigmoid(x)),
         [x], kernels=1, atol=1e-7, rtol=1e-6)


def test_nan_and_inf_follow_eager():
    x = torch.tensor([float("nan"), 1.0, float("inf"), -float("inf"), 0.0, -2.0])
    y = torch.tensor([1.0, float("nan"), 2.0, float("nan"), -0.0, 3.0])
    _run(lambda x, y: (torch.maximum(x, y), torch.minimum(x, y), x.isnan(), x.isinf(), torch.where(x > y, x, y)),
         [x, y], kernels=1)


def test_integer_division_semantics():
    # Metal and C++ both truncate; floor division and Python's modulo are the printer's helpers
    a = torch.tensor([7, -7, 7, -7, 0, 5], dtype=torch.int32)
    b = torch.tensor([2, 2, -2, -2, 3, -5], dtype=torch.int32)
    _run(lambda a, b: (a // b, a % b, torch.fmod(a, b), torch.div(a, b, rounding_mode="trunc")), [a, b], kernels=1)
    # signed overflow wraps, as on the GPU and in eager (the emulation is built with -fwrapv)
    big = torch.tensor([2**31 - 1, -2**31, 123456789], dtype=torch.int32)
    _run(lambda x: x * 7 + 2**30, [big], kernels=1)


def test_integer_division_by_zero_raises_as_eager():
    # undefined on the GPU, a trap in C++: the printer checks and flags it, the wrapper raises
    a, b = torch.tensor([4, 5], dtype=torch.int64), torch.tensor([2, 0], dtype=torch.int64)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // b
    opt = bytegraph.compile(lambda a, b: a // b, backend="inductor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        opt(a, b)
    assert inductor.metrics.codegen == "metal" and "bg_err" in inductor.metrics.last_source


def test_index_out_of_range_raises():
    w, i = torch.randn(10, 4), torch.tensor([1, 10])
    with pytest.raises(IndexError):
        w[i]
    bytegraph.reset()
    opt = bytegraph.compile(lambda w, i: w[i] * 2, backend="inductor")
    with pytest.raises(IndexError):
        opt(w, i)
    assert inductor.metrics.codegen == "metal"


# --------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("n", [7, 300])  # one simdgroup / several simdgroups and a strided row loop
def test_reductions(n):
    x = torch.randn(5, n)
    x[1, 3] = float("nan")
    m = _run(lambda x: (x.sum(1), x.amax(1), x.amin(1), x.argmax(1), x.argmin(1), x.mean(1), x.var(1),
                        (x > 0).any(1), (x > -3).all(1), (x.abs() + 0.5).prod(1)),
             [x], atol=1e-4, rtol=1e-4)
    src = m.last_source
    assert "simd_sum(" in src and "bg_shfl_down(" in src and "bg_welford_merge(" in src
    assert "threadgroup_barrier(" in src and "[[threadgroup_position_in_grid]]" in src


def test_argmax_ties_take_the_first_index_and_int64_sums():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0] * 20, [0.0] * 80])
    big = torch.full((3, 100), 2**40, dtype=torch.int64)
    _run(lambda x: x.argmax(1), [x], kernels=1)
    _run(lambda b: b.sum(1) - 7, [big], kernels=1)


def test_softmax_and_layer_norm_one_kernel_each():
    x, w, b = torch.randn(16, 96), torch.randn(96), torch.randn(96)
    _run(lambda x: torch.softmax(x, -1), [x], kernels=1)
    _run(lambda x, w, b: F.layer_norm(x, (96,), w, b), [x, w, b], kernels=1, atol=1e-4, rtol=1e-4)


class Block(torch.nn.Module):
    """A pre-norm transformer block: causal self-attention and a GELU MLP."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def test_transformer_block():
    torch.manual_seed(0)
    model = Block().eval()
    with torch.no_grad():
        m = _run(model, [torch.randn(2, 8, 32)], atol=1e-5, rtol=1e-4)
    assert m.kernel_count >= 4 and m.extern_count >= 4, (m.kernel_count, m.last_groups)


# --------------------------------------------------------------------------- views
def test_strided_inputs():
    base = torch.randn(64, 48)
    t = base.t()                                      # transposed: strides (1, 48)
    s = torch.randn(60, 100)[5:53, 2:66]              # storage offset 502, row stride 100
    e = torch.randn(48, 1).expand(48, 64)             # stride 0
    a = torch.randn(500).as_strided((48, 64), (7, 2), 11)  # overlapping rows, offset
    m = _run(lambda t, s, e, a: t + e * 2 - a * s, [t, s, e, a], kernels=1)
    _run(lambda s: s.exp() + 1, [s], kernels=1)
    _run(lambda a: a.sum(0), [a], kernels=1)
    assert "_rt.launch(" in m.last_source


def test_views_inside_the_graph():
    x = torch.randn(8, 6, 10)
    _run(lambda x: (x.permute(2, 0, 1) * 3)[1:, ::2].reshape(9, -1).cos(), [x], kernels=1)
    _run(lambda x: x.transpose(0, 2).sum(-1) + x[:, 1:4].as_strided((3, 5), (11, 2), 7).sum(), [x])


def test_in_place_updates_of_views():
    def f(x, y):
        x[:, 1:3].mul_(2)           # a slice: offset 1, row stride 6
        x.t()[2].add_(y[:5])        # a column through a transpose
        y.diagonal(offset=0).zero_() if y.dim() == 2 else y[::2].sub_(1)
        return x.sum(), y
    _run(f, [torch.randn(5, 6), torch.randn(12)], check_args=True)

    def g(x):
        x[1:].t().add_(x[1:].t().amax(0, keepdim=True))  # in-place into a strided view of a row-reduction
        return x
    _run(g, [torch.randn(4, 9)], check_args=True)

    def h(x, y):
        y.add_(x.sum(1))  # a row's value read by every thread, written once at the end by thread 0
        return y
    m = _run(h, [torch.randn(4, 300), torch.randn(4, 3)[:, 1]], check_args=True, kernels=1)
    assert "if (lid == 0) {" in m.last_source


# --------------------------------------------------------------------------- sizes
def test_symbolic_sizes_are_kernel_arguments():
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend("inductor")
    fn = lambda x: torch.softmax(x * 2, -1) + 1  # noqa: E731
    opt = bytegraph.compile(fn, backend=cnt, dynamic=True)
    for shape in [(3, 40), (5, 300), (2, 7)]:
        x = torch.randn(shape)
        torch.testing.assert_close(opt(x), fn(x))
    assert cnt.frame_count == 1 and inductor.metrics.codegen == "metal"
    assert "constant int64_t& s" in inductor.metrics.last_source


# --------------------------------------------------------------------------- the emulation itself
def test_every_cpp_template_has_a_metal_spelling():
    dtypes = [[torch.float32, torch.float32, torch.float32], [torch.int32] * 3, [torch.bool] * 3]
    for name, tmpl in codegen_metal.TEMPLATES_MSL.items():
        forms = [tmpl(d) for d in dtypes] if callable(tmpl) else [tmpl]
        assert all("std::" not in f for f in forms), (name, forms, TEMPLATES[name])


def _emulate(kernel_src, name, ids, nptrs):
    params = [p.strip() for p in kernel_src.split("(", 1)[1].split(")")[0].split(",") if "buffer(" in p]
    sig = {name: ([p.split(" [[")[0] for p in params], ids)}
    src = codegen_metal.emulation_source(codegen_metal.PRELUDE + kernel_src, sig)
    lib = ctypes.CDLL(cpp_build.build(src, codegen_metal.EMULATION_FLAGS))
    return cpp_build.kernel(lib, f"{name}_launch", nptrs, 2)


IDS = ["tg_pos", "lid", "tg_size", "lane", "sg", "nsg"]
SIG = ("uint tg_pos [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]], "
       "uint tg_size [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]], "
       "uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]")


def test_emulated_simd_functions_and_threadgroup_memory():
    src = f"""kernel void k(device float* out [[buffer(0)]], {SIG}) {{
    threadgroup float shm[64];
    shm[lid] = float(lid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float v = shm[(lid + 1) % tg_size];               // a neighbour's write, seen after the barrier
    out[tg_pos * 64 + lid] = simd_sum(v) + 1000.0f * simd_shuffle_down(v, 3) + 1e6f * simd_broadcast(v, 5);
}}
"""
    fn = _emulate(src, "k", IDS, 1)
    out = torch.zeros(2 * 64)
    assert fn(out.data_ptr(), 2 * 64, 64) == 0
    v = (torch.arange(64) + 1) % 64
    lane, sg = torch.arange(64) % 32, torch.arange(64) // 32
    sums = torch.stack([v[:32].sum(), v[32:].sum()])[sg].float()
    down = torch.where(lane + 3 < 32, v[(torch.arange(64) + 3).clamp(max=63)], v).float()
    bcast = v[sg * 32 + 5].float()
    torch.testing.assert_close(out, (sums + 1000 * down + 1e6 * bcast).repeat(2))


def test_emulation_rejects_a_barrier_not_reached_by_every_thread():
    src = f"""kernel void k(device float* out [[buffer(0)]], {SIG}) {{
    if (lid == 0) threadgroup_barrier(mem_flags::mem_threadgroup);  // undefined behaviour on a GPU
    out[lid] = 1.0f;
}}
"""
    fn = _emulate(src, "k", IDS, 1)
    out = torch.zeros(64)
    assert fn(out.data_ptr(), 64, 64) == 3


def test_mps_tensors_select_the_metal_printer():
    assert inductor._use_metal({"mps"}) and not inductor._use_cpp({"mps"})
    with bytegraph.config.patch(cpu_codegen="cpp"):
        assert not inductor._use_metal({"cpu"}) and inductor._use_metal({"mps"})
