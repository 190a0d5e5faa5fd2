"""A TorchScript function (`torch.jit.script`, `torch.jit.trace`) called from compiled code: one graph
node calling the ScriptFunction when its graph is plain tensor work (variables/torchscript.py);
otherwise the call breaks and runs natively. Compared with eager: values, gradients, errors, prints."""
import bytegraph
import pytest
import torch

from bytegraph.testing import CompileCounter, CompileCounterWithBackend
from helpers import assert_same, outcome, standard_test


def _mix(a, b):
    return a + b * 0.67


def _branchy(a, b):
    if a.sum() > 0:      # a traced function freezes the branch it took; a scripted one keeps both
        return a * b
    return a - b


_SCRIPT = torch.jit.script(_mix)
_TRACE = torch.jit.trace(_mix, [torch.zeros(4), torch.zeros(4)])
_TRACE_BRANCH = torch.jit.trace(_branchy, [torch.ones(4), torch.ones(4)])
_SCRIPT_BRANCH = torch.jit.script(_branchy)


@torch.jit.script
def _prints(a):
    print("from script")
    return a + 1


@torch.jit.script
def _in_place(a):
    a.add_(1)
    return a * 2


@torch.jit.script
def _size(a):
    return a.size(0)


@torch.jit.script
def _take(a, i):
    return a[i] * 2


@torch.jit.script
def _viewed(a):
    return a.t().reshape(-1) * 2


def _call(fn):
    def run(a, b):
        return fn(a, b) + 1
    return run


@pytest.mark.parametrize("fn", [_SCRIPT, _TRACE, _TRACE_BRANCH], ids=["script", "trace", "trace_frozen_branch"])
def test_script_function_is_one_node(fn):
    a = -torch.ones(4)    # the traced branch is the one eager's ScriptFunction replays too
    standard_test(_call(fn), a, torch.randn(4), frames=1, ops=2, breaks=0, fullgraph=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_through_a_script_function(backend):
    a, b = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    a2, b2 = (t.detach().clone().requires_grad_() for t in (a, b))
    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(_call(_SCRIPT), backend=cnt, fullgraph=True)
    opt(a, b).sum().backward()
    _call(_SCRIPT)(a2, b2).sum().backward()
    assert_same((a.grad, b.grad), (a2.grad, b2.grad))
    assert cnt.frame_count == 1


def test_a_data_dependent_branch_in_script_breaks():
    # its fake run cannot decide `a.sum() > 0`: the call runs natively
    standard_test(_call(_SCRIPT_BRANCH), torch.randn(4), torch.randn(4), frames=1, breaks=1)


def test_a_script_function_that_prints_runs_natively(capfd):
    def fn(a):
        return _prints(a) * 2
    standard_test(fn, torch.randn(3), frames=1, breaks=1)
    assert capfd.readouterr().out.count("from script") == 2     # eager's call and the compiled one


def test_a_script_function_writing_in_place_runs_natively():
    def fn(a):
        return _in_place(a) + 1
    a, b = torch.zeros(3), torch.zeros(3)
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(a)
    assert_same(got, fn(b))
    assert_same(a, b)
    assert len(bytegraph.stats.break_records) == 1


def test_a_script_function_returning_a_number_runs_natively():
    def fn(a):
        return a * _size(a)
    standard_test(fn, torch.randn(3), frames=1, breaks=1)


def test_its_errors_are_eagers():
    standard_test(_call(_SCRIPT), torch.randn(3), torch.randn(4), frames=0)


def test_compiling_does_not_advance_the_profiling_executor():
    # eager's first call profiles, the second runs the optimized plan; a fake run at compile time must
    # not count as one of them
    def g(a, b):
        return (a + b * 0.5).tanh()
    src = torch.jit.script(g)
    a, b = torch.randn(3, requires_grad=True), torch.randn(3)
    bytegraph.compile(lambda a, b: src(a, b) * 2, backend="eager")(a, b)
    assert "prim::profile" in str(torch.jit.last_executed_optimized_graph())


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_script_function_that_may_raise_by_value_runs_natively(backend):
    # a backend retracing the graph would run `aten.index` outside the interpreter: IndexError, where
    # eager's call raises the interpreter's RuntimeError
    def fn(a, i):
        return _take(a, i) + 1
    for i in (torch.tensor([1]), torch.tensor([7])):
        bytegraph.reset()
        want, cnt = outcome(fn, torch.ones(3), i), CompileCounterWithBackend(backend)
        got = outcome(bytegraph.compile(fn, backend=cnt), torch.ones(3), i)
        assert_same(got[:2], want[:2])
        assert any("may raise for some values" in b.reason for b in bytegraph.stats.break_records)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_views_and_float_arithmetic_stay_one_node(backend):
    cnt = CompileCounterWithBackend(backend)
    a = torch.randn(2, 3)
    assert_same(bytegraph.compile(lambda a: _viewed(a) + 1, backend=cnt, fullgraph=True)(a), _viewed(a) + 1)
    assert cnt.frame_count == 1 and cnt.op_count == 2
