"""Soundness of the inductor backend (issue 13): compiled outputs keep the strides the graph promises
(forward outputs, saved activations, views), transcendental functions are as accurate as eager, and an
op the lowering cannot handle runs as an extern aten call instead of crashing. Every case compares
values (and gradients, dtypes, strides or exception types) with eager and asserts that the graph was
captured and compiled by inductor. Shapes are tiny: Triton's interpreter is slow."""
import bytegraph
import pytest
import torch
import torch.nn.functional as F
from bytegraph.backends import inductor
from bytegraph.testing import CompileCounterWithBackend

torch.manual_seed(0)


def _compile(fn, **kw):
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend("inductor")
    return bytegraph.compile(fn, backend=cnt, **kw), cnt


def _grads(fn, inputs, **kw):
    """(value, input grads) of `fn` eagerly and compiled, and the compile counter."""
    def run(f):
        xs = [t.clone().requires_grad_(True) for t in inputs]
        out = f(*xs)
        return out.detach(), torch.autograd.grad(out.sum(), xs)
    opt, cnt = _compile(fn, **kw)
    return run(fn), run(opt), cnt


# --------------------------------------------------------------------------- promised strides
@pytest.mark.parametrize("shape,p,dim", [((3, 4), 1.0, 1), ((2, 1, 4, 5), 2.0, 2)])
def test_normalize_backward_reads_saved_expand_with_its_strides(shape, p, dim):
    # the forward saves an expanded (stride 0) tensor; the backward is compiled against that stride
    x = torch.randn(shape)
    (ev, eg), (cv, cg), cnt = _grads(lambda t: F.normalize(t, p=p, dim=dim), [x])
    assert cnt.frame_count == 1 and cnt.op_count >= 1
    assert inductor.metrics.compiles == 2  # forward and backward both compiled to kernels
    torch.testing.assert_close(cv, ev, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(cg[0], eg[0], rtol=1e-5, atol=1e-6)


def test_normalize_backward_dynamic_shapes():
    for shape in [(3, 4), (5, 6)]:
        x = torch.randn(shape)
        (ev, eg), (cv, cg), cnt = _grads(lambda t: F.normalize(t, p=1.0, dim=1), [x], dynamic=True)
        assert cnt.frame_count == 1
        torch.testing.assert_close(cv, ev, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(cg[0], eg[0], rtol=1e-5, atol=1e-6)


def test_sdpa_3d_backward_grad_q():
    q, k, v = torch.randn(2, 4, 3), torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    (ev, eg), (cv, cg), cnt = _grads(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), [q, k, v])
    assert cnt.frame_count == 1 and cnt.op_count >= 1
    torch.testing.assert_close(cv, ev, rtol=1e-5, atol=1e-6)
    for c, e in zip(cg, eg):
        torch.testing.assert_close(c, e, rtol=1e-5, atol=1e-6)


def test_forward_outputs_have_eager_strides_and_views_alias():
    def f(x):
        y = x.t() * 2                     # eager: the layout of x.t(), strides (1, 4)
        z = (x.sum(1, keepdim=True) + 1).expand(3, 4)   # eager: stride 0 in the expanded dim
        w = x.t() + 1                     # used twice: realized in its promised layout
        return y, y[1:], z, w, w * w
    x = torch.randn(3, 4)
    opt, cnt = _compile(f)
    expected, got = f(x), opt(x)
    assert cnt.frame_count == 1 and inductor.metrics.kernel_count >= 1 and inductor.metrics.extern_count == 0
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride(), (g.stride(), e.stride())
    # y[1:] is a view of y, as in eager
    assert got[1].data_ptr() - got[0].data_ptr() == expected[1].data_ptr() - expected[0].data_ptr()
    got[0][1, 0] = 100.0
    assert got[1][0, 0] == 100.0


# --------------------------------------------------------------------------- precision
_TINY = [1e-4, -1e-4, 1e-8, -1e-8, 1e-30, -3e-6, 0.5, -2.0, 3.0, 20.0, -20.0]


def _transcendentals(x):
    return (torch.expm1(x), torch.log1p(x.abs()), torch.tanh(x), torch.sinh(x), torch.cosh(x),
            F.elu(x), F.softplus(x), F.logsigmoid(x), F.mish(x), torch.pow(x.abs(), 2.5),
            torch.sigmoid(x), torch.exp2(x), torch.log2(x.abs()), torch.erf(x))


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_transcendentals_match_eager_for_tiny_and_large_inputs(dtype, rtol):
    # exp(x) - 1, log(1 + x), (e^x - e^-x) / 2 ... give 0 or ~7% error here: the tolerance is relative
    x = torch.tensor(_TINY, dtype=dtype)
    opt, cnt = _compile(_transcendentals)
    with torch.no_grad():
        expected, got = _transcendentals(x), opt(x)
    assert cnt.frame_count == 1 and inductor.metrics.extern_count == 0 and inductor.metrics.kernel_count >= 1
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=rtol, atol=0, msg=lambda m, i=i: f"output {i}: {m}")


def test_transcendental_gradients_match_eager():
    def f(x):
        return torch.stack([torch.expm1(x), torch.tanh(x) * torch.sinh(x), torch.log1p(x.abs()), F.softplus(-x * 30)])
    x = torch.tensor([1e-4, -1e-4, 1e-6, 0.5, -2.0, 3.0])
    (ev, eg), (cv, cg), cnt = _grads(f, [x])
    assert cnt.frame_count == 1 and inductor.metrics.compiles == 2
    torch.testing.assert_close(cv, ev, rtol=1e-5, atol=0)
    torch.testing.assert_close(cg[0], eg[0], rtol=1e-5, atol=0)


# --------------------------------------------------------------------------- ops the lowering does not handle
@pytest.mark.parametrize("index", [torch.tensor([0]), torch.tensor(0)])
def test_index_select_on_0d_input_falls_back(index):
    x = torch.tensor(3.0)
    (ev, eg), (cv, cg), cnt = _grads(lambda t: torch.index_select(t * 2, 0, index), [x])
    assert cnt.frame_count == 1 and cnt.op_count >= 2
    assert cv.shape == ev.shape and cg[0].shape == eg[0].shape
    torch.testing.assert_close(cv, ev)
    torch.testing.assert_close(cg[0], eg[0])


def test_linalg_solve_with_grad_and_its_error():
    # the backward graph checks errors with an effectful op (a higher-order `with_effects` call)
    a = torch.randn(3, 3) + 3 * torch.eye(3)
    b = torch.randn(3, 2)
    def solve(x, y):
        return torch.linalg.solve(x, y)
    (ev, eg), (cv, cg), cnt = _grads(solve, [a, b])
    assert cnt.frame_count == 1 and cnt.op_count >= 1
    torch.testing.assert_close(cv, ev, rtol=1e-5, atol=1e-5)
    for c, e in zip(cg, eg):
        torch.testing.assert_close(c, e, rtol=1e-5, atol=1e-5)
    # a singular matrix raises the same error as eager
    singular = torch.zeros(3, 3, requires_grad=True)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(singular, b)
    opt, cnt = _compile(solve)
    with pytest.raises(torch.linalg.LinAlgError):
        opt(singular, b)
    assert cnt.frame_count == 1


class _TanhGelu(torch.autograd.Function):
    # no setup_context: functorch transforms refuse such a Function, so tracing may not use them
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 0.5 * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(1.702 * x)


def test_autograd_function_without_setup_context_in_inference_graph():
    # BLOOM's GELU is such a Function; an inference graph is functionalized without functorch
    def f(x):
        return _TanhGelu.apply(x * 2) + 1
    x = torch.randn(4, 8)
    opt, cnt = _compile(f)
    torch.testing.assert_close(opt(x), f(x))
    assert cnt.frame_count == 1 and cnt.op_count >= 2


def test_effectful_check_in_inference_graph_raises_like_eager():
    # linalg.inv checks its result with an ordered-effect op; without grad it runs as a plain call
    def inv(a):
        return torch.linalg.inv(a) + 1
    a = torch.randn(4, 4) + 4 * torch.eye(4)
    opt, cnt = _compile(inv)
    torch.testing.assert_close(opt(a), inv(a))
    with pytest.raises(torch.linalg.LinAlgError):
        inv(torch.zeros(4, 4))
    with pytest.raises(torch.linalg.LinAlgError):
        opt(torch.zeros(4, 4))
    assert cnt.frame_count == 1


@pytest.mark.parametrize("mutate", [lambda x: x.t_(), lambda x: x.unsqueeze_(0).mul_(2),
                                    lambda x: x.transpose_(0, 1).add_(1)])
def test_input_size_and_stride_changes_are_kept(mutate):
    def f(x):
        mutate(x)
        return x + 1
    a = torch.randn(2, 3)
    b = a.clone()
    expected = f(a)
    opt, cnt = _compile(f)
    got = opt(b)
    assert cnt.frame_count == 1
    assert (b.shape, b.stride()) == (a.shape, a.stride()) and torch.equal(b, a) and torch.equal(got, expected)


def test_input_mutation_after_a_raising_extern_call_does_not_happen():
    def f(a, b, c):
        z = c * 2
        y = torch.linalg.inv(a)      # raises on a singular matrix: the write to `b` after it never runs
        b.add_(1)
        return y, z
    opt, cnt = _compile(f)
    for fn in (f, opt):
        b = torch.zeros(4)
        with pytest.raises(torch.linalg.LinAlgError):
            fn(torch.zeros(3, 3), b, torch.ones(4))
        assert torch.equal(b, torch.zeros(4))
    assert cnt.frame_count == 1


# --------------------------------------------------------------------------- OpInfo slice
def test_opinfo_slice_matches_eager():
    # a quick slice of benchmarks/inductor_opinfo_sweep.py: forward and input gradient vs eager
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "inductor_opinfo_sweep.py"
    spec = importlib.util.spec_from_file_location("inductor_opinfo_sweep", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    names = {"expm1", "log1p", "tanh", "sinh", "index_select", "nn.functional.normalize"}
    ops = [o for o in sweep.op_database() if o.name in names and not o.variant_test_name]
    assert {o.name for o in ops} == names
    counts, problems = sweep.sweep(ops, samples=1)
    assert problems == []
    assert counts["pass"] == len(names), counts  # every sample captured and equal to eager


# --------------------------------------------------------------------------- found by the fuzzer (inductor)
def test_an_output_aliasing_an_input_is_a_new_tensor():
    # `x.detach()` returns a new tensor over x's memory: the graph returned x itself, so identity was
    # wrong and `requires_grad_()` on the result (after the break it causes) flagged the caller's x
    def f(x):
        d = x.detach()
        return d, d is x, d.requires_grad_() * 2
    opt, cnt = _compile(f)
    x = torch.randn(3, 4)
    d, same, y = opt(x)
    assert d is not x and same is False and d.data_ptr() == x.data_ptr()
    assert not x.requires_grad and y.requires_grad and torch.equal(y, f(x.clone())[2].detach())
    assert cnt.frame_count == 2 and inductor.metrics.compiles >= 1

    # `y` and `y.detach()` both leave the graph (the break at requires_grad_): one buffer, two objects
    def g(y):
        y = y + 1
        w = y.detach().requires_grad_(True)
        return y, w
    opt, cnt = _compile(g)
    y, w = opt(torch.randn(3, 4))
    assert not y.requires_grad and w.requires_grad and y is not w and y.data_ptr() == w.data_ptr()
    assert cnt.frame_count == 1

    # a view output (`x[:, 1:]` of a buffer the graph also returns as `x.detach()`) is not linked to
    # that output: requires_grad_() on it does not reach the view
    def h(x):
        x = x.clone()
        t = x[:, 1:]
        w = x.detach().requires_grad_()
        return t, w
    opt, cnt = _compile(h)
    t, w = opt(torch.randn(3, 4))
    assert not t.requires_grad and w.requires_grad and t.data_ptr() == w.data_ptr() + 4
    assert cnt.frame_count == 1


@pytest.mark.parametrize("dynamic", [False, True])
def test_outputs_over_a_mutated_input_share_its_memory(dynamic):
    # `t = x[:, 1:]` then `x.mul_(2)`: functionalized, t was computed from x's new value in a buffer
    # of its own (and `x.detach()` was that buffer too): eager's t and x.detach() are x's memory
    def f(x):
        t = x[:, 1:]
        x.mul_(2)
        return t, x.detach(), x.sum()
    opt, cnt = _compile(f, dynamic=dynamic)
    for n in (3, 5):
        x = torch.randn(n, 4)
        ref_x = x.clone()
        t, d, total = opt(x)
        rt, rd, rtotal = f(ref_x)
        assert torch.equal(t, rt) and torch.equal(d, rd) and torch.equal(x, ref_x)
        torch.testing.assert_close(total, rtotal)
        x.add_(1)   # writes through x are seen by both, as in eager
        assert t.data_ptr() == x.data_ptr() + 4 and torch.equal(t, x[:, 1:]) and torch.equal(d, x)
        assert not t.requires_grad and not d.requires_grad
    assert cnt.frame_count == (1 if dynamic else 2) and inductor.metrics.compiles >= 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_dropout_draws_the_random_numbers_eager_draws(backend, dynamic):
    # under dynamic shapes torch's decomposition turns dropout into native_dropout (a bool mask: other
    # random numbers, and a draw for p = 1): after the same seed, compiled values and the next draws
    # equal eager's
    def f(x, w):
        torch.manual_seed(7)
        a = F.dropout(x * w, 0.3, True)
        b = torch.dropout(x, 1.0, True)
        return (a + b).sum(), torch.rand(3)
    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(f, backend=cnt, dynamic=dynamic)
    for n in (4, 6):
        x, w = torch.randn(n, 5), torch.randn(5, requires_grad=True)
        w2 = w.detach().clone().requires_grad_()
        (ev, er), (cv, cr) = f(x, w), opt(x, w2)
        ev.backward(), cv.backward()
        torch.testing.assert_close(cv, ev)
        assert torch.equal(cr, er)
        torch.testing.assert_close(w2.grad, w.grad)
    assert cnt.frame_count == (1 if dynamic else 2)  # the graph after manual_seed, per size unless dynamic


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_dropout_probability_computed_from_a_size_draws_as_eager(backend):
    # p = n / 100 is symbolic under dynamic shapes; the kernel's fake run guards its value, and the
    # probability reaches the graph as that constant, so the eager draw (bernoulli_) is traced
    def f(x):
        return F.dropout(x, x.shape[0] / 100, True) * 2
    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(f, backend=cnt, dynamic=True)
    for n in (8, 9, 9, 10):
        x = torch.randn(n, 5)
        torch.manual_seed(0)
        expected = f(x)
        torch.manual_seed(0)
        assert torch.equal(opt(x), expected)
    assert cnt.frame_count == 3 and cnt.op_count >= 2   # a graph per probability (per size here)


_OUT_OF_RANGE = {   # what eager raises for an index out of range, by op
    "indexing": (lambda w, i: w[i] * 2, IndexError),
    "embedding": (lambda w, i: F.embedding(i, w) * 2, IndexError),
    "gather": (lambda w, i: torch.gather(w, 0, i.unsqueeze(1).expand(2, 4)) * 2, RuntimeError),
}


@pytest.mark.parametrize("codegen", ["cpp", "metal", "triton"])
@pytest.mark.parametrize("op", sorted(_OUT_OF_RANGE))
def test_index_out_of_range_raises_what_eager_raises(op, codegen):
    # the kernel checks an index read from memory; its wrapper raises the eager op's exception type
    fn, error = _OUT_OF_RANGE[op]
    w = torch.randn(10, 4)
    with pytest.raises(error):
        fn(w, torch.tensor([1, 10]))
    with bytegraph.config.patch(cpu_codegen=codegen):
        opt, cnt = _compile(fn)
        good = torch.tensor([1, 9])
        torch.testing.assert_close(opt(w, good), fn(w, good))
        with pytest.raises(error) as raised:
            opt(w, torch.tensor([1, 10]))
    assert type(raised.value) is error and "generated kernel" in str(raised.value)
    assert (cnt.frame_count, inductor.metrics.codegen, inductor.metrics.kernel_count) == (1, codegen, 1)
