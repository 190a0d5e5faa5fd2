"""Loops over data-dependent values with a graph break in their body: the expert loop of a mixture of
experts (`for idx in mask.nonzero(): ... w[idx] ...`). Each resume function the loop goes through
must serve every iteration: not one graph per count of items left (the loop's iterator reaches it
item by item), per index value (a 0-d index tensor is a `select` at a symbolic value), or per size of
what a data-dependent op returned (symbolic from the first compile). Every test compares with eager
and counts graphs."""
import bytegraph
import pytest
import torch
from bytegraph.frontend import resume
from bytegraph.testing import CompileCounter
from helpers import assert_same, outcome


def expert_loop(x, w):
    hit = (x.sum(1) > 0).nonzero()      # rows of a data-dependent tensor: nonzero breaks
    out = torch.zeros(w.shape[1])
    for row in hit:
        idx = row[0]
        if idx == w.shape[0]:            # the truth of a tensor: a break inside the loop body
            continue
        out = out + w[idx] * 2
    return out


def _hits(rows, n=8):
    x = torch.zeros(n, 2)
    x[list(rows)] = 1.0
    return x


def _resume_entries(fn) -> dict:
    """{resume code: number of cache entries} for `fn`'s resume functions."""
    from bytegraph import _C
    return {code: len(_C.get_cache(code)) for code in resume.resume_codes_of(fn.__code__)}


@pytest.mark.parametrize("count", [3, 4, 7])
def test_loop_over_rows_compiles_the_same_graphs_whatever_the_count(count):
    # before: the rows left travelled as a tuple whose length was guarded: one graph per count left
    w = torch.randn(9, 3)
    cnt = CompileCounter()
    opt = bytegraph.compile(expert_loop, backend=cnt)
    x = _hits(range(count))
    assert_same(opt(x, w), expert_loop(x, w))
    # the frame up to nonzero; the loop's entry; the rest of the first body; the body for the later
    # iterations (other locals travel) that go on, and the one that ends the loop
    assert cnt.frame_count == 5
    assert [r.kind for r in bytegraph.stats.break_records] == ["data_dependent", "tensor_branch",
                                                               "tensor_branch", "tensor_branch"]
    assert cnt.op_count >= 3 * count       # each expert's `w[idx] * 2` and `+` are in graphs
    assert bytegraph.stats.recompiles == 1   # (the body that ends the loop)


def test_loop_over_rows_serves_other_indices_and_other_counts():
    w = torch.randn(9, 3)
    cnt = CompileCounter()
    opt = bytegraph.compile(expert_loop, backend=cnt)
    for rows in ((0, 2, 5), (1, 3, 4), (6, 7, 0)):   # same count, other experts
        x = _hits(rows)
        assert_same(opt(x, w), expert_loop(x, w))
    assert cnt.frame_count == 5            # the index is read at run time: no graph per expert
    for rows in ((0, 1, 2, 3, 4, 5), (2, 7)):
        x = _hits(rows)
        assert_same(opt(x, w), expert_loop(x, w))
    # another count of hits: the loop's entry iterates a new number of rows, and the rows of a
    # nonzero result are strided by that number: the body's graphs are compiled for it too. None of
    # the graphs depends on the count of rows left.
    assert cnt.frame_count <= 5 + 2 * 4
    assert all(n <= 6 for n in _resume_entries(expert_loop).values())


def test_loop_whose_body_breaks_every_iteration_over_a_tuple_of_tensors():
    # the iterator is a plain tuple's: its items are read as the loop takes them
    def f(ts):
        acc = torch.zeros(2)
        for t in ts:
            acc = acc + t
            print("step")
        return acc * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for n in (5, 3, 6):
        ts = tuple(torch.full((2,), float(i)) for i in range(n))
        assert_same(opt(ts), f(ts))
    # the frame up to the first print (its tuple argument's length is guarded: once per length);
    # the resume function that goes on and the one that ends the loop, whatever the length
    assert cnt.frame_count == 3 + 2
    assert sorted(_resume_entries(f).values()) == [2]


def test_iterator_left_in_a_resume_function_is_the_rest_of_the_items(capsys):
    # a break in the body, then a second break before the next item is taken: the rest travels on
    def f(x, items):
        out = []
        for k in items:
            print("a", k)
            out.append(x * k)
            print("b", k)
        return out, x.sum()
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2)
    assert_same(opt(x, (1, 2, 3)), f(x, (1, 2, 3)))
    assert_same(opt(x, (4, 5)), f(x, (4, 5)))
    assert capsys.readouterr().out.count("b 3") == 2
    assert cnt.frame_count >= 3


def test_index_by_a_zero_dim_tensor_is_a_select_at_its_value():
    def f(w, idx):
        v = w[idx]
        v.mul_(2)                # a view, as eager's: the write reaches `w`
        return v + 1
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    for i in (2, 0, 5, -1, -6):
        w, w_eager = torch.arange(18.0).reshape(6, 3), torch.arange(18.0).reshape(6, 3)
        assert_same(opt(w, torch.tensor(i)), f(w_eager, torch.tensor(i)))
        assert_same(w, w_eager)
    assert cnt.frame_count == 2                 # one per sign (select wraps negative indices)
    assert "select" in cnt.graphs[0].code
    for bad in (6, -7):                         # out of range: eager's own IndexError
        w = torch.arange(18.0).reshape(6, 3)
        assert outcome(opt, w, torch.tensor(bad)) == outcome(f, w.clone(), torch.tensor(bad))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool, torch.float32])
def test_zero_dim_masks_and_float_indices_keep_their_meaning(dtype):
    def f(w, idx):
        return w[idx] * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    w = torch.arange(6.0).reshape(3, 2)
    for value in (1, 0):
        idx = torch.tensor(value, dtype=dtype)
        assert_same(outcome(opt, w, idx), outcome(f, w, idx))    # a mask, or eager's IndexError
    if dtype is not torch.float32:
        assert all("select" not in g.code for g in cnt.graphs)   # (masks: no select at a value)

def test_index_tensor_written_before_use_is_read_as_written():
    def f(w, idx):
        idx.add_(1)
        return w[idx] * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    w = torch.randn(6, 3)
    for i in (1, 3):
        a, b = torch.tensor(i), torch.tensor(i)
        assert_same(opt(w, a), f(w, b))
        assert_same(a, b)
    assert cnt.frame_count >= 1


def test_data_shaped_result_is_symbolic_in_the_resume_function():
    def f(x, y):
        hit = torch.nonzero(x > 0)           # a break: its size depends on the data
        return y[hit[:, 0]].sum(0) * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    y = torch.randn(8, 3)
    for k in (3, 5, 2, 7):
        x = torch.zeros(8)
        x[:k] = 1
        assert_same(opt(x, y), f(x, y))
    assert cnt.frame_count == 2      # x > 0; the rest, for every count of hits (not one per count)
    assert bytegraph.stats.recompiles == 0


def test_writes_into_an_input_beside_views_of_one_tensor_go_dynamic():
    # `torch.where(mask)` returns two views of one tensor at a distance that follows the count of
    # hits; the graph after it writes into `out`, which shares memory with neither: only the sharing
    # of the written input is guarded, so automatic dynamic serves every count
    def f(out, mask, x):
        rows, cols = torch.where(mask)
        out.index_add_(0, rows, x[rows, cols].unsqueeze(1).expand(-1, 2))
        return out
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(6, 4)
    for k in (3, 5, 9, 12):
        mask = torch.zeros(6, 4, dtype=torch.bool)
        mask.view(-1)[:k] = True
        got, want = torch.zeros(6, 2), torch.zeros(6, 2)
        assert_same(opt(got, mask, x), f(want, mask, x))
        assert_same(got, want)
    assert cnt.frame_count == 1      # (nothing before `torch.where`)
    assert bytegraph.stats.recompiles == 0


def test_written_input_sharing_memory_with_another_still_recompiles():
    def f(a, b):
        a.add_(1)
        return b * 2
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    base = torch.zeros(4)
    assert_same(opt(base, torch.zeros(4)), torch.zeros(4))
    base, base_eager = torch.zeros(4), torch.zeros(4)
    assert_same(opt(base, base), f(base_eager, base_eager))     # b is a now: it sees the write
    assert cnt.frame_count == 2


HELD = []


def _loop_over_held_iterator(x, seq):
    x = x * 2
    HELD.clear()
    HELD.append(iter(seq))           # the program holds the loop's iterator elsewhere
    for v in HELD[0]:
        bytegraph.graph_break()
        x = x + v
        if v == 2:
            break
    return x, list(HELD[0])          # what the held iterator has left after the loop


def _loop_over_iterator_in_a_tuple(x, seq):
    x = x + 1
    pair = (iter(seq), 1)
    for v in pair[0]:
        bytegraph.graph_break()
        x = x * v
    return x, next(pair[0], "end")


@pytest.mark.parametrize("fn", [_loop_over_held_iterator, _loop_over_iterator_in_a_tuple])
@pytest.mark.parametrize("seq", [(1, 2, 3, 4), [1, 2, 3, 4]])
def test_loop_iterator_held_elsewhere_travels_as_itself(fn, seq):
    # before: the resume function got a fresh iterator over the items left, and the held one stayed
    # at the break (a wrong value), or was replaced by the tuple of the items left (a TypeError)
    cnt = CompileCounter()
    want = outcome(fn, torch.ones(1), seq)
    got = outcome(bytegraph.compile(fn, backend=cnt), torch.ones(1), seq)
    assert_same(got, want)
    assert cnt.frame_count >= 1 and cnt.op_count >= 1 and bytegraph.stats.break_records
