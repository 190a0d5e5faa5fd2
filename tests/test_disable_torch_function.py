"""`with torch._C.DisableTorchFunctionSubclass()` / `DisableTorchFunction()` in compiled code: traced in
the graph, ops inside give plain tensors (no subclass `__torch_function__`), the state queries answer as
in eager, the state is back after the block (also after an exception or a break)."""
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import assert_same


class Sub(torch.Tensor):
    pass


def _tf_state():
    return torch._C._is_torch_function_enabled(), torch._C._is_torch_function_all_disabled()


def run_both(fn, make_args, graphs=1, breaks=0):
    want = fn(*make_args())
    bytegraph.reset()
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(*make_args())
    assert_same(got, want)
    assert _tf_state() == (True, False)
    assert cnt.frame_count == graphs, cnt.frame_count
    assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]
    return got


def sub():
    return (torch.arange(3.0).as_subclass(Sub),)


def test_subclass_block_gives_plain_tensors_in_one_graph():
    def f(x):
        with torch._C.DisableTorchFunctionSubclass():
            y = x + 1
            inside = _tf_state()
        z = x * 2
        return y, z, type(y).__name__, type(z).__name__, inside, _tf_state()
    got = run_both(f, sub)
    assert got[2:5] == ("Tensor", "Sub", (False, False)) and type(got[0]) is torch.Tensor and type(got[1]) is Sub


def test_all_block_and_nesting():
    def f(x):
        with torch._C.DisableTorchFunction():
            with torch._C.DisableTorchFunctionSubclass():
                y = torch.add(x, 1)
                inner = _tf_state()
            after_inner = _tf_state()
        return y, type(y).__name__, inner, after_inner, x.sin()
    got = run_both(f, sub)
    assert got[1:4] == ("Tensor", (False, True), (False, True)) and type(got[4]) is Sub


def test_exception_leaving_the_block_restores_the_state():
    def f(x):
        try:
            with torch._C.DisableTorchFunctionSubclass():
                y = x + 1
                raise ValueError
        except ValueError:
            pass
        return y, _tf_state(), type(x * 2).__name__
    assert run_both(f, sub)[1:] == ((True, False), "Sub")


def test_break_inside_the_block_resumes_inside_it():
    def f(x):
        with torch._C.DisableTorchFunctionSubclass():
            y = x + 1
            bytegraph.graph_break()
            z = x * 3
            s = _tf_state()
        return y, z, s, type(z).__name__, type(x - 1).__name__
    got = run_both(f, sub, graphs=2, breaks=1)
    assert got[2:] == ((False, False), "Tensor", "Sub")


def test_plain_tensors_with_a_retracing_backend():
    def f(x):
        with torch._C.DisableTorchFunctionSubclass():
            y = x.sin()
            s = _tf_state()
        return y + 1, s
    bytegraph.reset()
    cnt = bytegraph.testing.CompileCounterWithBackend("aot_eager")
    x = torch.arange(3.0)
    assert_same(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records and _tf_state() == (True, False)


def test_graph_compiled_outside_a_block_is_not_reused_inside_it():
    def g(x):
        return x + 1, _tf_state()
    cnt = CompileCounter()
    opt = bytegraph.compile(g, backend=cnt)
    x = sub()[0]
    assert_same(opt(x), g(x))
    with torch._C.DisableTorchFunctionSubclass():
        got, want = opt(x), g(x)
    assert_same(got, want)
    assert type(got[0]) is torch.Tensor and got[1] == (False, False)
    assert cnt.frame_count == 2
