"""Graph breaks that keep going: the root frame compiles the graph so far, runs the unsupported
instruction natively and continues in a resume function that is compiled in turn. Every test checks
the result against eager and the exact number of graphs."""
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter


def straight_line_print(x):
    a = x * 2
    b = a.sin()
    print("between the graphs")
    c = b + a
    return c.relu()


def test_print_in_straight_line_code_makes_two_graphs(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(straight_line_print, backend=cnt)
    x = torch.randn(5)
    torch.testing.assert_close(opt(x), straight_line_print(x))
    assert cnt.frame_count == 2
    assert cnt.op_count == 4
    assert capsys.readouterr().out == "between the graphs\n" * 2
    opt(torch.randn(5))
    assert cnt.frame_count == 2          # both frames hit their caches
    (record,) = bytegraph.stats.break_records
    assert record.kind == "io"
    assert record.user_stack[-1].name == "straight_line_print"
    assert record.user_stack[-1].lineno == straight_line_print.__code__.co_firstlineno + 3


@bytegraph.disable
def _eager_scale(t, k=3):
    return t * k


def calls_disabled(x, y):
    a = x + y
    b = _eager_scale(a, k=2)
    return (b - y).cos()


def test_disabled_function_in_the_middle_makes_two_graphs():
    cnt = CompileCounter()
    opt = bytegraph.compile(calls_disabled, backend=cnt)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(opt(x, y), calls_disabled(x, y))
    assert cnt.frame_count == 2
    assert cnt.op_count == 3             # add | sub, cos: the disabled multiply is not captured
    assert [r.kind for r in bytegraph.stats.break_records] == ["skipped_function"]


def branch_on_tensor(x):
    y = x.cos()
    if x.sum() > 0:
        z = y + 1
    else:
        z = y - 1
    return z * 2


def test_if_on_tensor_value_is_correct_on_both_branches():
    cnt = CompileCounter()
    opt = bytegraph.compile(branch_on_tensor, backend=cnt)
    pos, neg = torch.rand(4) + 0.1, -torch.rand(4) - 0.1
    torch.testing.assert_close(opt(pos), branch_on_tensor(pos))
    assert cnt.frame_count == 2          # cos, sum, gt | add, mul
    torch.testing.assert_close(opt(neg), branch_on_tensor(neg))
    assert cnt.frame_count == 3          # sub, mul: the other resume function
    torch.testing.assert_close(opt(pos * 2), branch_on_tensor(pos * 2))
    torch.testing.assert_close(opt(neg * 2), branch_on_tensor(neg * 2))
    assert cnt.frame_count == 3
    assert [r.kind for r in bytegraph.stats.break_records] == ["tensor_branch"]


def break_in_loop(x):
    acc = x
    for i in range(3):
        acc = acc * 2
        print("iteration", i)
        acc = acc + i
    return acc.sum()


def test_break_inside_for_loop_reuses_cached_resume(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_loop, backend=cnt)
    x = torch.randn(4)
    torch.testing.assert_close(opt(x), break_in_loop(x))
    # the frame up to the first print, then one resume frame per remaining iteration count (the loop
    # iterator travels as the tuple of its remaining items)
    assert cnt.frame_count == 4
    first = cnt.frame_count
    torch.testing.assert_close(opt(x + 1), break_in_loop(x + 1))
    assert cnt.frame_count == first      # no new graphs, no new resume code objects
    out = capsys.readouterr().out
    assert out.count("iteration 2") == 4
    from bytegraph.frontend import resume
    codes = resume._RESUME_CACHE[break_in_loop.__code__]
    assert len([k for k in codes if k[0] == "code"]) == 1


def test_fullgraph_still_raises_with_location():
    opt = bytegraph.compile(straight_line_print, backend=CompileCounter(), fullgraph=True)
    with pytest.raises(bytegraph.GraphBreakError, match=r"test_graph_breaks.py:\d+ in straight_line_print"):
        opt(torch.randn(3))


def break_in_try(x):
    y = x + 1
    try:
        print("inside try")
    finally:
        y = y * 2
    return y


def test_break_inside_try_block_runs_the_frame_eagerly():
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_try, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), break_in_try(x))
    assert cnt.frame_count == 0


def break_inside_inlined(x):
    return _helper_that_prints(x * 2) + 1


def _helper_that_prints(t):
    t = t.sin()
    print("in helper")
    return t.cos()


def test_break_inside_inlined_callee_breaks_at_the_callers_call():
    cnt = CompileCounter()
    opt = bytegraph.compile(break_inside_inlined, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), break_inside_inlined(x))
    # caller: mul | helper (its own frame): sin | cos | caller's resume: add
    assert cnt.frame_count == 4
    record = bytegraph.stats.break_records[0]
    assert [f.name for f in record.user_stack] == ["break_inside_inlined", "_helper_that_prints"]


def test_stack_values_below_the_call_and_side_effects_survive_the_break():
    log = []

    def fn(x, items):
        items.append(x.sum())
        total = x.cos() + print_and_return(x * 3)
        log.append("after")
        return total, len(items)

    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(4)
    items_c, items_e = [], []
    out_c, out_e = opt(x, items_c), fn(x, items_e)
    torch.testing.assert_close(out_c, out_e)
    torch.testing.assert_close(items_c, items_e)
    assert log == ["after", "after"]
    assert cnt.frame_count == 2


@bytegraph.disable
def print_and_return(t):
    print("value", t.shape)
    return t
