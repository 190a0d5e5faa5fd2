"""`torch.cond`: a tensor predicate gives one `higher_order.cond` node over two traced branches, a
Python predicate calls the chosen branch; anything a branch does besides tensor work on its own
values breaks the graph at the call (torch.cond then runs natively, raising what eager raises)."""
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend

from helpers import assert_same, outcome, standard_test

COND = torch.ops.higher_order.cond


def cond_nodes(cnt):
    return [n for gm in cnt.graphs for n in gm.graph.nodes if n.target is COND]


def run(fn, *args, backend="eager", frames=1, conds=1, breaks=0, **kwargs):
    """`fn(*args)` compiled with `backend` from a clean slate on clones of args, compared with eager
    (the value or the exception), with `frames` graphs, `conds` cond nodes and `breaks` breaks."""
    def clones():
        return [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                for a in args]
    want = outcome(fn, *clones())
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    got = outcome(bytegraph.compile(fn, backend=cnt, **kwargs), *clones())
    assert_same(got, want)
    assert cnt.frame_count == frames, cnt.frame_count
    assert len(cond_nodes(cnt)) == conds
    assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]
    return got[1]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_tensor_predicate_is_one_node(backend, sign):
    def fn(x):
        return torch.cond(x.sum() > 0, lambda t: t.sin() + 1, lambda t: t.cos() * 2, (x,))
    run(fn, torch.randn(4).abs() * sign, backend=backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_closures_tuples_lists_and_module_parameters(backend):
    lin = torch.nn.Linear(4, 4)

    def fn(x, y):
        a = torch.cond(x.mean() > 0, lambda t: (t + y, t * 2), lambda t: (t - y, t / 2), (x,))
        b = torch.cond(y[0] > 0, lambda t: [lin(t)], lambda t: [lin(t) * 0], [x])
        return a, b
    for seed in range(3):
        torch.manual_seed(seed)
        run(fn, torch.randn(2, 4), torch.randn(4), backend=backend, conds=2)


def test_python_predicate_calls_the_chosen_branch():
    def fn(x, p):
        return torch.cond(p, lambda t: t + 1, lambda t: t - 1, (x,))
    assert_same(standard_test(fn, torch.ones(2), True, ops=1, breaks=0), torch.full((2,), 2.0))
    assert_same(standard_test(fn, torch.ones(2), False, ops=1, breaks=0), torch.zeros(2))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_flow_through_the_taken_branch(backend):
    def fn(x, w):
        return torch.cond(x.sum() > 0, lambda a, b: (a * b).sin(), lambda a, b: (a + b).cos(), (x, w))
    for sign in (1.0, -1.0):
        x, w = (torch.randn(3).abs() * sign).requires_grad_(), torch.randn(3, requires_grad=True)
        x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        fn(x, w).sum().backward()
        bytegraph.reset()
        cnt = CompileCounterWithBackend(backend)
        bytegraph.compile(fn, backend=cnt, fullgraph=True)(x2, w2).sum().backward()
        assert len(cond_nodes(cnt)) == 1
        assert_same((x2.grad, w2.grad), (x.grad, w.grad))


def test_dynamic_shapes():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t[:1].expand_as(t) + 0, (x,))
    run(fn, torch.randn(5), dynamic=True)


SEEN = []


def appends(t):
    SEEN.append(1)
    return t + 1


def in_place_on_operand(t):
    return t.add_(1)


def raises(t):
    raise ValueError("no")


def notes_operand(t):
    t.note = 1
    return t + 1


@pytest.mark.parametrize("branch", [lambda t: t, lambda t: t.view(2, 2), appends, in_place_on_operand, raises,
                                    lambda t: t.sum(), lambda t: t.double() + 1, lambda t: (t + 1, t + 2),
                                    lambda t: 3, notes_operand],
                         ids=["alias", "view", "side_effect", "in_place", "raises", "shape", "dtype", "arity",
                              "not_tensor", "tensor_attribute"])
def test_branches_it_cannot_model_break_the_graph(branch):
    def fn(x):
        y = x * 2
        return torch.cond(y.sum() > 0, branch, lambda t: (t + 1).view(2, 2) if False else t + 1, (y,))
    SEEN.clear()
    run(fn, torch.ones(4), frames=1, conds=0, breaks=1)


def test_non_bool_or_non_scalar_predicate_breaks():
    def fn(x):
        return torch.cond(x > 0, lambda t: t + 1, lambda t: t - 1, (x,))
    run(fn, torch.ones(3), frames=1, conds=0, breaks=1)


def test_random_branch_breaks():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda t: t + torch.rand(4), lambda t: t - 1, (x,))
    torch.manual_seed(0)
    want = fn(-torch.ones(4))
    bytegraph.reset()
    cnt = CompileCounterWithBackend("eager")
    assert_same(bytegraph.compile(fn, backend=cnt)(-torch.ones(4)), want)
    assert not cond_nodes(cnt) and len(bytegraph.stats.break_records) == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_outputs_require_grad_when_a_read_input_does(backend, sign):
    # eager's outputs require grad when a tensor the branches read does (an operand they ignore
    # does not count), whichever branch made them
    lin = torch.nn.Linear(4, 4)

    def fresh(x):
        return torch.cond(x.sum() > 0, lambda t: torch.ones(4), lambda t: torch.zeros(4), (x,))

    def through_module(x):
        return torch.cond(x.sum() > 0, lambda a: lin(a), lambda a: a * 0, (x,))
    assert not run(fresh, torch.ones(4, requires_grad=True) * sign, backend=backend).requires_grad
    assert run(through_module, torch.ones(4) * sign, backend=backend).requires_grad



@pytest.mark.parametrize("branch", [lambda t: t[:2].add_(1) * 1, lambda t: t[:2].__setitem__(0, 5.0) or t * 1,
                                    lambda t: torch.add(t, 1, out=t[:2]) * 1],
                         ids=["in_place_on_view", "setitem_on_view", "out_on_view"])
def test_writing_into_memory_it_was_given_breaks(branch):
    # eager's capture refuses it (UncapturedHigherOrderOpError): so does the native call at the break
    def fn(x):
        y = x * 2
        return torch.cond(y.sum() > 0, branch, lambda t: t + 1, (y,)), y
    run(fn, torch.ones(4), frames=1, conds=0, breaks=1)


def _nested(x):
    def t(a):
        return torch.cond(a.mean() > 0, lambda b: b.sin(), lambda b: b.cos(), (a,))
    return torch.cond(x.sum() > 0, t, lambda a: a * 0, (x,))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0, 4.0], [3.0, -5.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0]],
                         ids=["inner_true", "inner_false", "outer_false"])
def test_cond_inside_a_branch(backend, values):
    # the inner cond's subgraphs are get_attr nodes of the branch: carried into its subgraph
    run(_nested, torch.tensor(values), backend=backend, fullgraph=True)


def test_random_branch_of_a_nested_cond_breaks():
    def fn(x):
        def t(a):
            return torch.cond(a.mean() > 0, lambda b: b + torch.rand(4), lambda b: b - 1, (a,))
        return torch.cond(x.sum() > 0, t, lambda a: a * 0, (x,))
    torch.manual_seed(0)
    want = fn(-torch.ones(4))
    bytegraph.reset()
    cnt = CompileCounterWithBackend("eager")
    torch.manual_seed(0)
    assert_same(bytegraph.compile(fn, backend=cnt)(-torch.ones(4)), want)
    assert not cond_nodes(cnt) and len(bytegraph.stats.break_records) >= 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_operands_are_trees_of_tensors(backend, sign):
    def fn(x, y):
        def t(d, pair):
            return d["a"] * 2 + d["b"] + pair[0]

        def f(d, pair):
            return d["a"] - d["b"] - pair[1]
        return torch.cond(x.sum() > 0, t, f, ({"a": x, "b": y}, [y, x]))
    run(fn, torch.ones(4) * sign, torch.randn(4), backend=backend, fullgraph=True)


def test_operand_tree_with_a_non_tensor_leaf_breaks():
    def fn(x):
        y = x * 2
        return torch.cond(y.sum() > 0, lambda d: d["a"] + d["k"], lambda d: d["a"] - d["k"], ({"a": y, "k": 3},))
    run(fn, torch.ones(4), frames=1, conds=0, breaks=1)


_HOOK_HANDED_BACK = '''
import collections, json, torch, bytegraph
from bytegraph.testing import CompileCounter
NT = collections.namedtuple("NT", "a b")

def fn(x):
    return torch.cond(x.sum() > 0, lambda n: n.a + n.b, lambda n: n.a - n.b, (NT(x, x * 2),))

def outcome(f, x):
    try:
        return repr(f(x))
    except Exception as e:
        return type(e).__name__
x = torch.ones(3)
want = outcome(fn, x)
cnt = CompileCounter()
got = outcome(bytegraph.compile(fn, backend=cnt), x)
print(json.dumps([want, got, cnt.frame_count, len(bytegraph.stats.break_records)]))
'''


def test_a_frame_hook_installed_after_bytegraphs_that_hands_frames_back():
    """torch.cond run eagerly (its operands are no tensors: a named tuple) compiles its branches with
    torch.compile, whose frame hook, installed over bytegraph's, passes the frames it skips to the hook
    it found: bytegraph's, which passed them back to it -- a silent endless loop (tail calls). A frame
    handed back runs as is. (In a fresh process, where the first call installs torch's hook.)"""
    import json
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _HOOK_HANDED_BACK], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    want, got, frames, breaks = json.loads(done.stdout.strip().splitlines()[-1])
    assert want == got == "UncapturedHigherOrderOpError"
    assert frames == 1 and breaks == 1      # (the predicate and `x * 2` traced; torch.cond runs natively)
