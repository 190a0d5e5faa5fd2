"""`torch.inference_mode` inside compiled code: traced into the graph (enter/exit nodes), with the
tensors made inside it inference tensors, grad and inference mode right after the block (also when an
exception leaves it), for backends that run the graph as recorded and for those that retrace it."""
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend
from helpers import assert_same

BACKENDS = ["counter", "aot_eager", "inductor"]


def _counter(backend):
    return CompileCounter() if backend == "counter" else CompileCounterWithBackend(backend)


def _flags(value):
    """What inference mode decides about each tensor of a result: inference tensor, requires_grad."""
    if isinstance(value, torch.Tensor):
        return [(value.is_inference(), value.requires_grad)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _flags(v)]
    return []


def _state():
    return torch.is_inference_mode_enabled(), torch.is_grad_enabled()


def run_both(fn, make_args, backend="counter", graphs=1, breaks=0):
    """fn eagerly and compiled on fresh arguments: same values, same inference/requires_grad flags,
    same mode afterwards (or the same exception); `graphs` graphs and `breaks` breaks."""
    def outcome(f):
        torch.manual_seed(0)
        try:
            value = f(*make_args())
        except Exception as e:  # noqa: BLE001
            return ("raise", type(e), str(e).splitlines()[0]), _state()
        return ("ok", value, _flags(value)), _state()
    want = outcome(fn)
    bytegraph.reset()
    cnt = _counter(backend)
    got = outcome(bytegraph.compile(fn, backend=cnt))
    assert got[1] == want[1] == (False, True)
    if want[0][0] == "raise":
        assert got[0] == want[0]
    else:
        assert got[0][0] == "ok", got
        assert_same(got[0][1], want[0][1])
        assert got[0][2] == want[0][2]
    assert cnt.frame_count == graphs, cnt.frame_count
    assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]
    return got[0][1]


def leaf():
    return (torch.arange(3.0).requires_grad_(),)


@pytest.mark.parametrize("backend", BACKENDS)
def test_block_is_one_graph_and_its_tensors_are_inference_tensors(backend):
    def f(x):
        with torch.inference_mode():
            y = x * 2
            inside = _state()
        z = y + 1
        return z, y, inside, (x * 3)
    got = run_both(f, leaf, backend)
    assert got[1].is_inference() and not got[0].is_inference() and got[2] == (True, False)
    assert got[3].requires_grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_decorated_function_runs_in_the_mode(backend):
    @torch.inference_mode()
    def helper(x):
        return x.cos() * 2, torch.is_inference_mode_enabled()

    def f(x):
        y, flag = helper(x)
        return y + 1, flag, y
    assert run_both(f, leaf, backend)[2].is_inference()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_with_no_grad_and_inference_mode_false(backend):
    def f(x):
        with torch.no_grad():
            a = x * 2
            with torch.inference_mode():
                b = a + 1
                with torch.inference_mode(False):
                    c = x * 5
                    s = _state()
        return a, b, c, s, x * 4
    got = run_both(f, leaf, backend)
    assert got[1].is_inference() and not got[2].is_inference() and got[2].requires_grad and got[3] == (False, True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exception_leaving_the_block_restores_the_modes(backend):
    def caught(x):
        try:
            with torch.inference_mode():
                y = x + 1
                raise ValueError("boom")
        except ValueError:
            pass
        return y, _state(), x * 2

    def escapes(x):
        with torch.inference_mode():
            y = x + 1
            if y.shape[0] == 3:
                raise KeyError("k")
        return y
    run_both(caught, leaf, backend)
    run_both(escapes, leaf, backend, graphs=0, breaks=1)   # (an exception leaving the frame: run as Python)


def test_inference_tensor_rules_raise_as_in_eager():
    def inplace_outside(x):
        with torch.inference_mode():
            y = x * 2
        y.add_(1)
        return y

    def saved_for_backward(x):
        with torch.inference_mode():
            y = x * 2
        return x * y
    for fn in (inplace_outside, saved_for_backward):
        want = pytest.raises(RuntimeError, fn, *leaf()).value
        opt = bytegraph.compile(fn, backend=CompileCounter())
        with pytest.raises(RuntimeError) as got:
            opt(*leaf())
        assert str(got.value).splitlines()[0] == str(want).splitlines()[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_break_inside_the_block_resumes_in_the_mode(backend):
    def f(x):
        with torch.inference_mode():
            y = x * 2
            bytegraph.graph_break()
            z = x + 1
            s = _state()
        return y, z, s, x * 3
    # (the resumed frame reads y, an inference tensor, which a graph does not take: the rest runs as Python)
    got = run_both(f, leaf, backend, graphs=1, breaks=2)
    assert got[0].is_inference() and got[1].is_inference() and got[2] == (True, False)


def test_returned_view_of_an_inference_tensor_keeps_its_sharing():
    def f(x):
        with torch.inference_mode():
            y = x * 2
            v = y[1:]
        return y, v
    # (the backend would lose the sharing: the graph runs as recorded, not handed to it)
    y, v = run_both(f, leaf, "aot_eager", graphs=0)
    assert v.untyped_storage().data_ptr() == y.untyped_storage().data_ptr() and v.is_inference()


def test_enabling_grad_inside_the_mode():
    # (grad mode on inside inference mode records nothing: a backend that retraces the graph models the
    # block as grad mode off, so there the block breaks)
    def f(x):
        with torch.inference_mode():
            with torch.enable_grad():
                b = x + 1
                g = torch.is_grad_enabled()
        return b, g
    assert run_both(f, leaf, "counter")[1] is True
    bytegraph.reset()
    opt = bytegraph.compile(f, backend=CompileCounterWithBackend("aot_eager"))
    got = opt(*leaf())
    assert got[1] is True and got[0].is_inference() and not got[0].requires_grad and _state() == (False, True)


def test_grad_mode_a_native_instruction_sets_inside_a_block_survives_the_break():
    class GradOn:
        def __enter__(self):
            bytegraph.graph_break()
            self.prev = torch.is_grad_enabled()
            torch._C._set_grad_enabled(True)

        def __exit__(self, *exc):
            torch._C._set_grad_enabled(self.prev)

    def f(x):
        with torch.no_grad():
            with GradOn():
                y = x * 2
                g = torch.is_grad_enabled()
            a = x * 3
        return y, g, a
    got = run_both(f, leaf, "counter", graphs=3, breaks=2)
    assert got[0].requires_grad and got[1] is True and not got[2].requires_grad


def test_a_mode_object_made_outside_is_guarded_on_its_mode():
    ctx = torch.inference_mode()

    def f(x):
        with ctx:
            y = x * 2
        return y
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    assert opt(*leaf()).is_inference()
    ctx.mode = False
    y = opt(*leaf())
    assert not y.is_inference() and y.requires_grad == f(*leaf()).requires_grad
    assert cnt.frame_count == 2


def test_an_ndarray_read_inside_inference_mode_is_a_graph_input():
    # the compile-time tensor over the array was made inside inference mode: an inference tensor,
    # whose version counter the trace reads (an internal error; found by the fuzzer, seed 85311)
    import numpy as np

    def f(x, a, n):
        a[:, 0] = n              # through the array into the graph input's memory
        return x * 2, a.sum()

    x = torch.ones(2, 2)
    a1, a2 = np.ones((2, 2), dtype=np.float32), np.ones((2, 2), dtype=np.float32)
    with torch.inference_mode():
        expected = f(x, a1, 3)
        cnt = CompileCounter()
        got = bytegraph.compile(f, backend=cnt)(x, a2, 3)
    assert_same(got, expected)
    assert np.array_equal(a1, a2)
    assert cnt.frame_count == 1
