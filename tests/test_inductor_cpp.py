"""The inductor backend's C++/OpenMP printer (CPU tensors). Every case compares with eager AND asserts
what was generated: the kernel count (`metrics.kernel_count`), and that the C++ printer ran
(`metrics.codegen == "cpp"`, `extern "C"` in the generated source) rather than Triton's interpreter.
Built libraries are cached on disk by source hash, so only the first run of this file pays for g++."""
import bytegraph
import pytest
import torch
import torch.nn.functional as F
from bytegraph.backends import inductor
from bytegraph.backends.inductor import cpp_build, gemm
from bytegraph.testing import CompileCounterWithBackend
from helpers import assert_same, run_inductor

pytestmark = pytest.mark.skipif(not cpp_build.available(), reason="no C++ compiler")
torch.manual_seed(0)


def _run(fn, args, *, kernels=None, externs=None, atol=1e-5, rtol=1e-5, dynamic=None, frames=1):
    opt, cnt = run_inductor(fn, args, frames=frames, atol=atol, rtol=rtol, dynamic=dynamic)
    m = inductor.metrics
    assert m.codegen == "cpp" and 'extern "C" int kernel0(' in m.last_source, m.last_source
    if kernels is not None:
        assert m.kernel_count == kernels, f"{m.kernel_count} kernels, expected {kernels}:\n{m.last_groups}"
    if externs is not None:
        assert m.extern_count == externs, f"{m.extern_count} extern calls, expected {externs}: {m.extern_ops}"
    return opt, cnt


def test_pointwise_chain_one_kernel():
    x, y = torch.randn(33, 70), torch.randn(33, 70)
    _run(lambda x, y: (torch.relu(x * 2 + y).sin() - y.exp()) / (1 + y.abs()), [x, y], kernels=1)


def test_transcendentals_accurate():
    # expm1/log1p near 0 and tanh/sigmoid tails: naive formulas lose every digit here, libm does not
    x = torch.cat([torch.logspace(-12, -1, 50), -torch.logspace(-12, -1, 50), torch.linspace(-30, 30, 61)])
    _run(lambda x: (torch.expm1(x), torch.log1p(x.abs()), torch.tanh(x), torch.sigmoid(x), torch.erf(x)),
         [x], kernels=1, atol=0, rtol=2e-6)
    # gelu's tail (x < -3) is a cancellation in eager's own formula: compare absolutely there
    _run(lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")), [x], kernels=1, atol=1e-6, rtol=2e-6)


def test_broadcasting():
    _run(lambda x, r, c: x * r + c, [torch.randn(40, 50), torch.randn(50), torch.randn(40, 1)], kernels=1)


def test_transposed_sliced_expanded_inputs():
    base = torch.randn(64, 48)
    t = base.t()                               # strides (1, 48)
    s = torch.randn(50, 100)[5:53:1, 2:66]      # storage offset, row stride 100
    e = torch.randn(48, 1).expand(48, 64)       # stride 0
    _run(lambda t, s, e: t + e * 2, [t, s[:, :64].t().contiguous().t()[:48], e], kernels=1)
    _run(lambda s: s.exp() + 1, [s], kernels=1)


def test_views_inside_the_graph():
    x = torch.randn(8, 6, 10)
    _run(lambda x: (x.permute(2, 0, 1) * 3)[1:, ::2].reshape(9, -1).cos(), [x], kernels=1)


def test_flat_indexing_when_last_dims_differ():
    x = torch.randn(6, 20)
    _run(lambda x: (x + 1, (x * 2).reshape(120).exp()), [x])


def test_merged_dimensions_index_with_the_row_variable():
    # NCHW batch norm + relu: rows span H*W, per-channel values are indexed by the outer variable only,
    # and no division or modulo by the row position is left in the inner loop
    x, m, v = torch.randn(2, 8, 5, 7), torch.randn(8), torch.rand(8) + 0.5
    w, b = torch.randn(8), torch.randn(8)
    _run(lambda x: F.relu(F.batch_norm(x, m, v, w, b, training=False) + x), [x], kernels=1, externs=0)
    src = inductor.metrics.last_source
    assert "const int64_t inner = 35;" in src and "(x1 + (35 * x0))" in src, src
    assert not any(s in src for s in ("x1 /", "x1 %", "bg_floordiv(x1", "bg_mod(x1")), src
    # a transposed read cannot merge: rows fall back to the last dimension, still correct
    _run(lambda x, y: x + y.transpose(2, 3), [torch.randn(2, 3, 4, 6), torch.randn(2, 3, 6, 4)], kernels=1)


def test_index_folding_is_exact():
    # merged dimensions fold back into one variable (ir.fold_index), exactly; C++'s `/` and `%` only
    # where both operands are non-negative (there C and Python agree)
    from bytegraph.backends.inductor.codegen_cpp import cexpr
    from bytegraph.backends.inductor.ir import fold_index, index_floordiv as fd, index_mod as md, index_var
    x0, x1 = index_var("x0"), index_var("x1")
    assert fold_index(fd(x1, 3136) * 3136 + md(fd(x1, 56), 56) * 56 + md(x1, 56)) == x1
    merged = md(fd(x0, 7), 3) * 7 + md(x0, 7) + 5
    assert cexpr(fold_index(merged)) == "((x0 % 21) + 5)"
    apart = fd(x1, 56) * 57 + md(x1, 56)
    assert fold_index(apart) == apart  # not a pair: unchanged
    for e in (fd(x1, 3136) * 6272 + md(fd(x1, 56), 56) * 56 + md(x1, 56), merged):
        folded = fold_index(e)
        for v in range(0, 20000, 397):
            assert folded.subs({x0: v, x1: v}) == e.subs({x0: v, x1: v}), (e, folded, v)
    # an operand that may be negative (a shifted index) keeps Python's floor semantics
    assert cexpr(fd(x1 - 5, 3)) == "bg_floordiv((x1 - 5), 3)"
    assert cexpr(md(x1 - 5, 3)) == "bg_mod((x1 - 5), 3)"


def test_fusion_is_decided_from_the_ir():
    # the scheduler imports no code generator: legality and grouping come from the IR's loads and stores
    import ast
    import inspect
    from bytegraph.backends.inductor import scheduler
    tree = ast.parse(inspect.getsource(scheduler))
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any("codegen" in m for m in imported), imported

    # the flip reads `a` at another index than it is written: two kernels; `z * 3` could join either
    # and joins the one that already loads `z` (memory traffic saved), not the first
    def f(x, z):
        a = x * 2
        return a, a.flip(0) + z, z * 3
    _run(f, [torch.randn(16), torch.randn(16)], kernels=2)
    groups = inductor.metrics.last_groups
    assert [g.count(",") + 1 for g in groups] == [1, 2] and all(g.startswith("kernel [16]") for g in groups), groups


def test_unused_allocations_of_decompositions_are_dropped():
    # batch norm's decomposition returns statistics buffers nobody reads: no extern call for them
    x, m, v = torch.randn(2, 4, 3, 3), torch.randn(4), torch.rand(4) + 0.5
    conv = torch.nn.Conv2d(4, 4, 3, padding=1)
    with torch.no_grad():
        _run(lambda x: F.batch_norm(conv(x), m, v, training=False), [x], kernels=1, externs=1)
    assert inductor.metrics.extern_ops == ["aten.convolution.default"], inductor.metrics.extern_ops


def test_kernels_write_in_place_of_dying_inputs():
    lin1, lin2 = torch.nn.Linear(16, 64), torch.nn.Linear(64, 16)
    with torch.no_grad():
        # GELU over addmm's result, and the residual add over the second: both written in place
        _run(lambda x: lin2(F.gelu(lin1(x))) + x, [torch.randn(8, 16)], kernels=2, externs=2)
        assert inductor.metrics.last_source.count("# in place") == 2, inductor.metrics.last_source
        # a buffer read at another index than the output's (a transpose) or by a later kernel is no donor
        _run(lambda x: (lin1(x).t() * 2, ), [torch.randn(64, 16)], kernels=1, externs=1)
        assert "# in place" not in inductor.metrics.last_source
        _run(lambda x: (lambda y: (y.exp(), y[:, :8].sum(0)))(lin1(x)), [torch.randn(8, 16)], kernels=2, externs=1)
        assert "# in place" not in inductor.metrics.last_source
        # two outputs of one kernel from one dying input: the first takes its storage
        _run(lambda x: (lambda y: (y.exp(), y + 1))(lin1(x)), [torch.randn(8, 16)], kernels=1, externs=1)
        assert inductor.metrics.last_source.count("# in place") == 1


def test_sparse_results_run_the_graph_as_is():
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend("inductor")
    x = torch.randn(4, 5)
    got = bytegraph.compile(lambda x: (x * 2).to_sparse(), backend=cnt)(x)
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 0
    assert got.layout == torch.sparse_coo and torch.equal(got.to_dense(), x * 2)
    # a sparse input has no strides to guard: the frame runs eagerly, with the kind of break named
    bytegraph.reset()
    cnt = CompileCounterWithBackend("inductor")
    sp = x.to_sparse()
    got = bytegraph.compile(lambda s: torch.sparse.mm(s, x.t()) * 2, backend=cnt)(sp)
    assert cnt.frame_count == 0 and torch.equal(got, torch.sparse.mm(sp, x.t()) * 2)
    assert any(r.kind == "non_strided_tensor" for r in bytegraph.stats.break_records), bytegraph.stats.break_records


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.int32])
def test_dtypes(dtype):
    if dtype.is_floating_point:
        x, y = torch.randn(30, 17, dtype=dtype), torch.randn(30, 17, dtype=dtype)
    else:
        x, y = torch.randint(-50, 50, (30, 17), dtype=dtype), torch.randint(1, 9, (30, 17), dtype=dtype)
    _run(lambda x, y: (x * y - x // y + torch.remainder(x, y), torch.maximum(x, y), x.sum(-1)), [x, y], kernels=1)


def test_bool_and_comparisons():
    x, y = torch.randn(25, 9), torch.randn(25, 9)
    _run(lambda x, y: ((x > y) & (y > 0), torch.where(x > 0, x, y), (x > 0).any(-1), (x > -3).all(-1)),
         [x, y], kernels=1)


def test_half_types():
    for dt in (torch.float16, torch.bfloat16):
        x = torch.randn(20, 30).to(dt)
        _run(lambda x: ((x * 3).sigmoid() + 1, x.sum(-1)), [x])


def test_integer_division_by_zero_raises():
    x, y = torch.tensor([4, 5, 6]), torch.tensor([1, 0, 2])
    bytegraph.reset()
    opt = bytegraph.compile(lambda x, y: x // y, backend="inductor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x // y
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        opt(x, y)
    assert inductor.metrics.codegen == "cpp"


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "prod", "mean", "argmax", "argmin"])
def test_reductions_innermost(op):
    x = torch.randn(37, 45) * (0.5 if op == "prod" else 1)
    x[3, 7] = float("nan")
    _run(lambda x: getattr(torch, op)(x, -1), [x], kernels=1)


def test_reduction_long_rows_and_all_elements():
    x = torch.randn(5, 10000)
    _run(lambda x: (x.sum(-1), x.amax(-1), x.argmin(-1), x.sum()), [x], kernels=2, rtol=1e-4, atol=1e-4)


def test_reduction_over_outer_dim_and_middle_dim():
    x = torch.randn(20, 30, 7)
    _run(lambda x: (x.sum(0), x.amax(1)), [x], kernels=2, rtol=1e-5, atol=1e-5)


def test_argmax_ties_and_nan_first_index():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [float("nan"), 1.0, float("nan"), 5.0], [2.0] * 4])
    _run(lambda x: (x.argmax(-1), x.argmin(-1), x.amax(-1)), [x], kernels=1)


def test_welford_var_mean():
    # large mean, small spread: a naive sum-of-squares variance loses it, Welford does not
    x = torch.randn(16, 3000, dtype=torch.float32) * 0.01 + 1000.0
    _run(lambda x: torch.var_mean(x, -1), [x], kernels=1, rtol=1e-3, atol=1e-5)
    _run(lambda x: (x.var(-1, correction=0), x.std(-1)), [x], rtol=1e-3, atol=1e-5)


def test_softmax_one_kernel():
    x = torch.randn(64, 333)
    _run(lambda x: torch.softmax(x, -1), [x], kernels=1)
    # three loops over each row (max, sum of exp, normalize); exp is computed once, kept in a row buffer
    src = inductor.metrics.last_source
    assert src.count("std::exp(") == 2 and "row_tmp" in src, src  # main loop and tail of the 2nd loop
    _run(lambda x: torch.log_softmax(x * 2, -1), [x], kernels=1)


def test_layer_norm():
    x, w, b = torch.randn(32, 256), torch.randn(256), torch.randn(256)
    _run(lambda x, w, b: F.layer_norm(x, (256,), w, b), [x, w, b], kernels=1, rtol=1e-4, atol=1e-5)


def test_addmm_stays_one_extern_with_bias():
    lin = torch.nn.Linear(32, 16)
    with torch.no_grad():
        _run(lambda x: torch.relu(lin(x)), [torch.randn(8, 32)], externs=1, kernels=1)
    assert "addmm" in " ".join(inductor.metrics.extern_ops)


@pytest.mark.skipif(gemm.onednn_linear() is None, reason="torch built without oneDNN")
@pytest.mark.parametrize("onednn_faster", [True, False])
def test_linear_layers_call_the_faster_library(monkeypatch, onednn_faster):
    # which library wins is measured per machine: both choices are exercised here
    monkeypatch.setattr(gemm, "_onednn_is_faster", lambda threads: onednn_faster)
    big, small = torch.nn.Linear(128, 96), torch.nn.Linear(96, 8)   # 128 x 128 x 96 >= MIN_MACS > 128 x 96 x 8
    w = torch.randn(96, 128)
    onednn = "mkldnn._linear_pointwise.default"
    with torch.no_grad():
        _run(lambda x: small(torch.relu(big(x))), [torch.randn(128, 128)], externs=2, kernels=1, atol=1e-4)
        assert inductor.metrics.extern_ops == [onednn if onednn_faster else "aten.addmm.default",
                                               "aten.addmm.default"], inductor.metrics.extern_ops
        _run(lambda x: (x @ w.t()) * 2, [torch.randn(128, 128)], externs=1, kernels=1, atol=1e-4)
        assert inductor.metrics.extern_ops == [onednn if onednn_faster else "aten.mm.default"]
        # a contiguous (in, out) weight (`x @ w`, as GPT-2's Conv1D): oneDNN reads it as it is
        _run(lambda x: (x @ w.t().contiguous()) * 2, [torch.randn(128, 128)], externs=1, atol=1e-4)
        assert inductor.metrics.extern_ops == [onednn if onednn_faster else "aten.mm.default"]
        # a weight that is not dense, a bias that is not a vector: BLAS
        w2 = torch.randn(256, 192)
        _run(lambda x: (x @ w2[::2, ::2]) * 2, [torch.randn(128, 128)], externs=1, atol=1e-4)
        assert inductor.metrics.extern_ops == ["aten.mm.default"]
        _run(lambda x, b: torch.addmm(b, x, w.t()).cos(), [torch.randn(128, 128), torch.randn(128, 96)], externs=1,
             atol=1e-4)
        assert inductor.metrics.extern_ops == ["aten.addmm.default"]
        # a symbolic batch: one compile serves both sizes
        opt, cnt = _run(lambda x: big(x).sin(), [torch.randn(160, 128)], dynamic=True, atol=1e-4)
        assert inductor.metrics.extern_ops == [onednn if onednn_faster else "aten.addmm.default"]
        x = torch.randn(5, 128)
        assert_same(opt(x), big(x).sin(), atol=1e-4, rtol=1e-5)
        assert cnt.frame_count == 1


@pytest.mark.skipif(gemm.onednn_linear() is None, reason="torch built without oneDNN")
@pytest.mark.parametrize("onednn_faster", [True, False])
def test_pointwise_convolutions_are_linear_layers(monkeypatch, onednn_faster):
    # a 1x1 convolution (stride 1, no padding) of a channels-last image is a product of its rows of
    # channels with the weight: oneDNN's linear where that is faster, else the convolution
    monkeypatch.setattr(gemm, "_onednn_is_faster", lambda threads: onednn_faster)
    expand, project = torch.nn.Conv2d(16, 96, 1), torch.nn.Conv2d(96, 24, 1, bias=False)
    strided = torch.nn.Conv2d(16, 96, 1, stride=2)
    pw = "bytegraph.backends.inductor.gemm.pointwise_convolution"
    with torch.no_grad():
        for fmt in (torch.contiguous_format, torch.channels_last):
            x = torch.randn(2, 16, 24, 24).contiguous(memory_format=fmt)
            opt, _ = _run(lambda x: project(F.relu6(expand(x))) + 1, [x], externs=2, atol=1e-4)
            assert inductor.metrics.extern_ops == [pw if onednn_faster else "aten.convolution.default"] * 2
            assert opt(x).stride() == (project(F.relu6(expand(x))) + 1).stride()
        _run(lambda x: strided(x).relu(), [x], externs=1, atol=1e-4)  # stride 2: a convolution
        assert inductor.metrics.extern_ops == ["aten.convolution.default"]
        bias = torch.randn(192)   # a strided bias (oneDNN's linear reads a plain array): a convolution
        _run(lambda x: F.conv2d(x, expand.weight, bias[::2]).relu(), [x], externs=1, atol=1e-4)
        assert inductor.metrics.extern_ops == ["aten.convolution.default"]


def test_mlp_forward_and_backward():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                torch.nn.Linear(64, 10))
    ref = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(16, 32)

    def step(x):
        loss = torch.log_softmax(model(x), -1).sum()
        loss.backward()
        return loss

    expected = step(x)
    grads = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend("inductor")
    got = bytegraph.compile(step, backend=cnt)(x)
    assert cnt.frame_count == 1
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    for p, g in zip(model.parameters(), grads):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-5)
    for p, r in zip(model.parameters(), ref):
        assert torch.equal(p.detach(), r)
    m = inductor.metrics
    assert m.compiles == 2 and m.codegen == "cpp", (m.compiles, m.codegen)  # forward and backward graphs
    assert m.total_kernel_count >= 4


def test_dynamic_shapes_one_compile_two_sizes():
    def f(x, w):
        return torch.softmax(x * w, -1) + x.mean(-1, keepdim=True)
    w = torch.randn(1)
    opt, cnt = _run(f, [torch.randn(8, 40), w], dynamic=True, kernels=1)
    src = inductor.metrics.last_source
    assert "int64_t s" in src  # sizes are kernel arguments
    for shape in [(3, 17), (11, 1000)]:
        x = torch.randn(*shape)
        assert_same(opt(x, w), f(x, w), atol=1e-5, rtol=1e-5, equal_nan=True)
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 1


def test_symbolic_clamp_bounds():
    # linear interpolation clamps its source index to `size - 1`: with dynamic sizes a symbolic bound
    def f(x):
        return F.interpolate(x, scale_factor=2, mode="linear") + 1
    opt, cnt = _run(f, [torch.randn(2, 3, 5)], dynamic=True, kernels=2)  # source indices, result
    for n in (7, 2):
        x = torch.randn(2, 3, n)
        assert_same(opt(x), f(x), atol=1e-6, rtol=1e-5)
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 1


def test_dynamic_numbers_only_and_a_rotating_index():
    # a graph whose inputs are only symbolic numbers traces in their ShapeEnv; fftshift's index is
    # torch's Mod of a symbolic size (printed in C++, not handed to Triton's interpreter)
    def numbers(n, m):
        return torch.arange(n, dtype=torch.float32) * 2, torch.eye(n, m)
    opt, cnt = _run(numbers, [5, 3], dynamic=True)
    assert_same(opt(7, 2), numbers(7, 2))
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 1

    def shift(x):
        return torch.fft.fftshift(x, dim=-1) + 1
    opt, cnt = _run(shift, [torch.randn(3, 5)], dynamic=True, kernels=1)
    x = torch.randn(2, 8)
    assert_same(opt(x), shift(x))
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 1


def test_output_strides_and_inplace_mutation():
    def f(x, y):
        x.mul_(2)
        return (y.t() + 1, x + y)
    x, y = torch.randn(12, 12), torch.randn(12, 12)
    x2 = x.clone()
    _run(f, [x, y])
    torch.testing.assert_close(x, x2 * 2)


def test_vectorized_inner_loops():
    """The inner loops of a pointwise and a reduction kernel are vectorized by g++ (-fopt-info-vec)."""
    import subprocess
    x, y = torch.randn(64, 128), torch.randn(1000)
    _run(lambda x, y: (y * 2 + 1, torch.softmax(x, -1)), [x, y], kernels=2)
    src = inductor.metrics.last_source
    cpp = src.split("CPP_SOURCE = r'''\n", 1)[1].split("'''", 1)[0]
    proc = subprocess.run([cpp_build.compiler(), *cpp_build.FLAGS, "-fopt-info-vec-optimized", "-x", "c++", "-",
                           "-o", "/dev/null"], input=cpp, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "loop vectorized" in ln]
    assert len(lines) >= 2, proc.stderr


def test_triton_printer_still_selectable_on_cpu():
    x = torch.randn(4, 5)
    bytegraph.reset()
    with bytegraph.config.patch(cpu_codegen="triton"):
        opt = bytegraph.compile(lambda x: x.exp() + 1, backend="inductor")
        torch.testing.assert_close(opt(x), x.exp() + 1)
    assert inductor.metrics.codegen == "triton" and "@triton.jit" in inductor.metrics.last_source


def test_default_backend_is_inductor_with_cpp_kernels():
    def f(x):
        return torch.relu(x * 2 + 1).sum(-1)
    bytegraph.reset()
    inductor.metrics.reset()
    x = torch.randn(6, 40)
    assert_same(bytegraph.compile(f)(x), f(x), atol=1e-5, rtol=1e-5)
    m = inductor.metrics
    assert m.compiles == 1 and m.codegen == "cpp" and m.kernel_count == 1, (m.codegens, m.kernel_count)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                                dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1),
                                     ceil_mode=True)])
def test_max_pool2d_is_a_kernel(kw):
    # values and indices as eager's scan: the first of equal maxima, the last NaN, -inf windows, padding
    x = torch.randn(2, 3, 9, 10)
    x[0, 0, :3, :3] = float("nan")
    x[0, 1, 4, 4:6] = float("nan")
    x[1, 0] = float("-inf")
    x[1, 1, :, :4] = 1.0
    _run(lambda x: F.max_pool2d(x.relu() * 2, return_indices=True, **kw), [x], kernels=1, externs=0)
    _run(lambda x: F.max_pool2d(x[0], **kw) + 1, [x], kernels=1, externs=0)  # 3-d input; indices unused


def test_max_pool2d_recomputes_a_cheap_producer():
    # batch norm and ReLU over a convolution, read 9 times per pooled element: recomputed in the pooling
    # kernel instead of stored and loaded back (one kernel after the convolution)
    conv, bn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8).eval()
    bn.running_mean.normal_(), bn.running_var.uniform_(0.5, 2), bn.weight.data.normal_()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        _run(lambda x: F.max_pool2d(F.relu(bn(conv(x))), 3, 2, 1), [x], kernels=1, externs=1)
        # an expensive producer, or one something else reads too, is computed once
        _run(lambda x: F.max_pool2d(x.exp().sin(), 3, 2, 1), [x], kernels=2)
        _run(lambda x: (lambda y: (F.max_pool2d(y, 3, 2, 1), y + 1))(x.relu() * 2), [x], kernels=2)


class _Block(torch.nn.Module):
    """A ResNet basic block (eval batch norm): conv, bn, relu, conv, bn, residual add, relu."""

    def __init__(self, c=16):
        super().__init__()
        self.conv1, self.conv2 = (torch.nn.Conv2d(c, c, 3, padding=1, bias=False) for _ in range(2))
        self.bn1, self.bn2 = torch.nn.BatchNorm2d(c), torch.nn.BatchNorm2d(c)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
        self.eval()

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_convolutions_run_channels_last(memory_format):
    # convolutions get channels-last operands (oneDNN's fast layout); the batch norm / relu / add
    # kernels between them iterate channels innermost; outputs keep eager's strides
    block, x = _Block(), torch.randn(2, 16, 20, 20).contiguous(memory_format=memory_format)
    with torch.no_grad():
        # kernels: the weights' channels-last copies, bn1 + relu, bn2 + add + relu; a contiguous input's
        # channels-last copy
        opt, _ = _run(block, [x], kernels=4 + (memory_format == torch.contiguous_format), externs=2)
        assert opt(x).stride() == block(x).stride()
        src = inductor.metrics.last_source
    cl = "(6400, 1, 320, 16)"  # channels-last strides of (2, 16, 20, 20)
    assert src.count("_with_strides(externs[") == 2 and src.count(f"{cl})  # aten.convolution") == 2, src
    assert src.count("const int64_t inner = 16;") >= 2, src  # rows of channels
    assert "torch.empty_strided((16, 16, 3, 3), (144, 1, 48, 16)" in src, src  # the weights (one buffer, reused)


def test_weight_dominated_convolutions_stay_contiguous():
    # late layers (a small image, many channels: 2 * 64 * 4 * 4 inputs < 64 * 64 * 3 * 3 weights):
    # converting the weight costs more than channels-last kernels save, so nothing is converted
    # but a channels-last activation coming in (from an early, activation-dominated convolution)
    early, late = torch.nn.Conv2d(8, 64, 3, stride=4, padding=1), torch.nn.Conv2d(64, 64, 3, padding=1)
    with torch.no_grad():
        _run(lambda x: late(x).relu(), [torch.randn(2, 64, 4, 4)], kernels=1, externs=1)
        assert "channels" not in inductor.metrics.last_source and ", 1, " not in inductor.metrics.last_source
        # early: input and weight to channels-last; late: its input back to contiguous (with the relu)
        opt, _ = _run(lambda x: late(early(x).relu()), [torch.randn(2, 8, 32, 64)], kernels=3, externs=2,
                      atol=1e-4)
        src = inductor.metrics.last_source
        assert src.count("(8192, 1, 1024, 64))  # aten.convolution") == 1, src  # early: channels-last
        assert src.count("(8192, 128, 16, 1)") == 2, src  # late's input and output: contiguous


def test_small_convolutions_keep_their_layout():
    conv = torch.nn.Conv2d(2, 3, 3, padding=1)
    with torch.no_grad():
        _run(lambda x: conv(x).relu(), [torch.randn(1, 2, 4, 4)], kernels=1, externs=1)
        assert "channels" not in inductor.metrics.last_source and ", 1, " not in inductor.metrics.last_source
        # a channels-last input stays so (aten returns a channels-last result: no copy into eager's
        # contiguous layout after the call); kernels: the weight's channels-last copy, the relu
        x = torch.randn(1, 2, 4, 4).contiguous(memory_format=torch.channels_last)
        opt, _ = _run(lambda x: conv(x).relu(), [x], kernels=2, externs=1)
        assert "(48, 1, 12, 3))  # aten.convolution" in inductor.metrics.last_source
        assert opt(x).stride() == conv(x).relu().stride()


def test_channels_last_values_feed_reductions_and_pooling():
    # a squeeze-excitation gate (mean over H, W with keepdim) and max pooling of a channels-last
    # convolution result; a channels-last input's pooling indices as eager's channels-last kernel
    conv = torch.nn.Conv2d(8, 16, 3, padding=1)
    x = torch.randn(2, 8, 24, 24)  # (1.3M multiply-adds: channels-last)
    x[0, :, 2:4, 2:4] = float("nan")
    x[1, :, :, :5] = 0.5

    def f(x):
        y = conv(x)
        gate = y.mean((2, 3), keepdim=True).sigmoid()
        v, i = F.max_pool2d(y * gate, 3, 2, 1, return_indices=True)
        return (v, i, *F.max_pool2d(x, 2, return_indices=True))
    with torch.no_grad():
        for xx in (x, x.contiguous(memory_format=torch.channels_last)):
            opt, _ = _run(f, [xx], externs=1)
            assert "(9216, 1, 384, 16))  # aten.convolution" in inductor.metrics.last_source
            assert [t.stride() for t in opt(xx)] == [t.stride() for t in f(xx)]


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, bias=True), dict(dilation=2, groups=4, padding=2),
                                dict(groups=16, padding=1), dict(kernel_size=1, bias=True)])
def test_channels_last_convolution_variants(kw, monkeypatch):
    monkeypatch.setattr(gemm, "_onednn_is_faster", lambda threads: False)  # 1x1: a convolution here
    kw = {"kernel_size": 3, "bias": False, **kw}
    conv = torch.nn.Conv2d(16, 32 if kw.get("groups") != 16 else 16, **kw)
    x = torch.randn(2, 16, 64, 64)  # (depthwise: 1.2M multiply-adds, channels-last)
    with torch.no_grad():
        # input, weight (a depthwise or 1x1 weight is channels-last already: a view), relu
        same_memory = kw.get("groups") == 16 or kw["kernel_size"] == 1
        opt, _ = _run(lambda x: F.relu(conv(x)) * 2, [x], kernels=2 if same_memory else 3, externs=1)
        assert opt(x).stride() == conv(x).stride()
    assert ", 1, " in inductor.metrics.last_source.split("# aten.convolution")[0].splitlines()[-1]


def test_three_channel_image_converted_along_its_rows():
    # writing channels-last rows of 3 vectorizes poorly: the conversion kernel reads whole image rows
    conv = torch.nn.Conv2d(3, 16, 3, padding=1)
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        _run(conv, [x], kernels=3, externs=1)  # input and weight to channels-last, result back
    src = inductor.metrics.last_source
    assert "const int64_t inner = 3;" not in src and "const int64_t inner = 4096;" in src, src


def test_padding_tests_only_padded_sides():
    # a side padded by 0 needs no bounds test (TF-style "same" padding pads one side of each dimension)
    def f(x):
        return F.pad(x, (0, 2, 1, 0)) * 2
    _run(f, [torch.randn(4, 8)], kernels=1)
    src = inductor.metrics.last_source
    assert "((x0 >= 1) & (x1 < 8))" in src and ">= 0" not in src and "< 4" not in src, src


def test_small_convolution_of_channels_last_activation_stays_channels_last():
    # a convolution too small to repay converting its input still reads the layout its producer wrote
    # (channels-last here): aten returns channels-last, and the graph promises exactly that (a
    # contiguous promise cost a copy of the result, then a transposing read in the next kernel)
    first = torch.nn.Conv2d(16, 64, 3, padding=1)
    dw = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64)
    x = torch.randn(2, 16, 24, 24)   # (the depthwise convolution: 0.7M multiply-adds)
    with torch.no_grad():
        opt, _ = _run(lambda x: dw(first(x).relu()).relu() + 1, [x], externs=2, atol=1e-4)
    src = inductor.metrics.last_source
    assert src.count(", 1, 1536, 64))  # aten.convolution") == 2, src


def test_depthwise_weight_is_restrided_not_copied():
    # a (C, 1, kh, kw) weight is laid out channels-last already (its strides differ only on the size-1
    # dimension): the convolution gets a view of it, not a copy kernel on every call
    dw = torch.nn.Conv2d(32, 32, 3, groups=32, bias=False)
    x = torch.randn(2, 32, 40, 40).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        _run(lambda x: dw(x).relu(), [x], kernels=1, externs=1, atol=1e-4)
    assert "_reinterpret(" in inductor.metrics.last_source


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="glibc's allocator thresholds")
def test_buffers_are_recycled_not_mapped_afresh_each_call():
    # eight 2 MB results alive together: freed by the caller, they exceed the heap's trim threshold that
    # freeing one of them set, so each call would map fresh pages (a page fault per 4 KiB); the compiled
    # graph primes the allocator for all its buffers together, so they are recycled by the heap
    import resource

    def fn(x):
        return x.sin(), x.cos(), x.exp(), x.tanh(), x.sigmoid(), x.abs(), x.neg(), x.relu()

    def faults_per_call(f, x):
        f(x)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            f(x)
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5

    x = torch.randn(512, 1024)
    opt, _ = _run(fn, [x], kernels=1, atol=1e-4)
    assert faults_per_call(opt, x) < 400   # eight fresh 2 MB blocks are 4,096 faults


def test_per_channel_math_is_computed_once_per_thread():
    # batch norm over channels-last rows: 1 / sqrt(var + eps) depends on the channel alone, so the kernel
    # computes it into a per-thread array before its rows loop; under a pad's mask too (the per-channel
    # loads are in bounds for every row position, so they need no mask). NaN in the input and in the
    # statistics propagates through the clamp as in eager.
    bn = torch.nn.BatchNorm2d(24, eps=1e-3).eval()
    bn.running_mean.normal_(), bn.running_var.uniform_(0.5, 2), bn.weight.data.normal_()
    bn.running_var[5] = float("nan")
    x = torch.randn(2, 24, 12, 12).contiguous(memory_format=torch.channels_last)
    x[0, 3, 2, 2] = float("nan")
    x[1, :, 4, 4] = float("-inf")
    with torch.no_grad():
        for f in (lambda x: torch.clamp(bn(x), 0, 6), lambda x: F.pad(F.relu6(bn(x)), (0, 1, 0, 1))):
            _run(f, [x], kernels=1)
            src = inductor.metrics.last_source
            assert "float h_tmp" in src and "#pragma omp for schedule(static)" in src, src
            prologue = src[src.index("float h_tmp"):src.index("#pragma omp for")]
            assert "std::sqrt(" in prologue and "? in_ptr" not in prologue, prologue
        # written in place of the convolution's result, which it reads row by row: only the per-channel
        # values are computed ahead
        conv, conv2 = torch.nn.Conv2d(8, 24, 3, padding=1), torch.nn.Conv2d(24, 8, 3, padding=1)
        _run(lambda x: conv2(F.relu6(bn(conv(x)))), [torch.randn(2, 8, 24, 24)], externs=2)
        src = inductor.metrics.last_source
        assert "# in place" in src and "float h_tmp" in src, src


def test_max_min_propagate_nan_from_either_operand():
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([nan, 1.0, 2.0, nan, -inf, 0.0, -0.0, 3.0] * 8)
    b = torch.tensor([1.0, nan, 2.0, nan, 5.0, -0.0, 0.0, inf] * 8)
    _run(lambda a, b: (torch.maximum(a, b), torch.minimum(a, b), a.clamp(b, b + 1), a.clamp_max(b), a.clamp(-1, 2.5)),
         [a, b], kernels=1, atol=0, rtol=0)


def test_row_invariant_masks_are_computed_per_row_and_selected_branch_free():
    # channels-last padding and max pooling: whether a (n, h, w) position is inside is the same for
    # the whole row of channels, so the mask is computed once per row and applied with bit operations
    # (g++ does not vectorize a select on a loop-invariant condition); the padded input is read at
    # the row's start when masked off (in bounds), never conditionally
    conv, conv2 = torch.nn.Conv2d(8, 32, 3), torch.nn.Conv2d(32, 8, 3)
    x = torch.randn(2, 8, 20, 20)
    x[0, :, 5, 5] = float("nan")
    with torch.no_grad():
        _run(lambda x: conv2(F.pad(torch.relu(conv(x)), (1, 2, 2, 1), value=0.5)), [x], externs=2)
        src = inductor.metrics.last_source
        assert "bg_sel<float>(" in src, src
        k = [part for part in src.split('extern "C"') if "bg_sel<float>(" in part][0]
        rows, elems = k.split("#pragma omp for schedule(static)")[1].split("#pragma omp simd")
        assert "const bool" in rows and "const bool" not in elems, k
        _run(lambda x: conv2(F.max_pool2d(conv(x), 3, 2, 1)), [x], externs=2)
        assert "bg_sel<float>(" in inductor.metrics.last_source
        # pooling a channels-last result into the graph's contiguous output: rows of channels (9
        # contiguous reads per element, one strided write), not rows of width (9 strided reads)
        _run(lambda x: F.max_pool2d(conv(x), 3, 2, 1), [x], externs=1)
        assert "const int64_t inner = 32;" in inductor.metrics.last_source


def test_size_true_division_prints_in_cpp_and_mul_add_rounds_as_eager():
    # `x.shape[-1] / 2` (a float from sizes) is printed as C++ (was: the graph went to Triton's
    # interpreter), and `x * a + b` rounds after the multiply and after the add as eager's two ops do
    # (no fused multiply-add): bit for bit
    def f(x):
        return x * (x.shape[-1] / 2) + x.shape[0] / 3
    for shape in ((3, 4), (5, 7), (2, 9)):
        _run(f, [torch.randn(shape)], kernels=1, atol=0, rtol=0, dynamic=True)
    assert "static_cast<double>(s" in inductor.metrics.last_source
