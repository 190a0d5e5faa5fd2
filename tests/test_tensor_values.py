"""Tensors as data of `torch.tensor(...)`, and tensors whose values the trace knows: built or
answered inside the graph exactly as eager does (frontend/variables/tensor_data.py,
`known_value` in frontend/variables/tensor.py)."""
from __future__ import annotations

import warnings

import pytest
import torch

import bytegraph
from helpers import compiled, outcome, standard_test


# -- torch.tensor(data) of tensors and symbolic numbers -------------------------------------------
def _cases():
    big = 2 ** 60 + 2 ** 36 + 1     # int64 -> float32 through a double rounds otherwise than directly
    return {
        "zero_dim": lambda x: (torch.tensor([x.sum(), x.max(), 3]), torch.tensor((x.sum() > 0, True))),
        "nested": lambda x: (torch.tensor([[x.sum()], [2.5]]), torch.tensor([[x[0], x[1]], [x[2], 7]])),
        "one_element_tensors": lambda x: torch.tensor([x.sum(), x[:1], x[1:2].reshape(1, 1)]),
        "promotion": lambda x: (torch.tensor([x.sum().to(torch.int8), 1]), torch.tensor([x.sum().half(), 3.0]),
                                torch.tensor([x.sum().double(), 1]), torch.tensor([x.sum() > 0, 2])),
        "through_a_double": lambda x: (torch.tensor([x.sum().long() * big, 1.5]),
                                       torch.tensor([x.sum().long() + big], dtype=torch.float16)),
        "explicit_dtype": lambda x: (torch.tensor([x.sum(), 1], dtype=torch.float64),
                                     torch.tensor([x.sum().long(), 2], dtype=torch.int64),
                                     torch.as_tensor([x.sum(), x.sum()], dtype=torch.float16)),
        "made_from_constants": lambda x: (torch.tensor([torch.tensor(12), torch.tensor(3)]),
                                          torch.tensor([torch.tensor(12), torch.tensor([[[34]]])]) + x[:2].long()),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_tensor_of_tensors_is_built_in_the_graph(case):
    fn = _cases()[case]
    standard_test(fn, torch.tensor([1.5, -2.0, 4.25]), frames=1, breaks=0, exact=True)


def test_tensor_of_sizes_stays_symbolic():
    def fn(x):
        return torch.tensor([x.shape[0], x.shape[0] * 2, 1]) + x.sum().long()
    opt, cnt = compiled(fn, dynamic=True)
    for n in (3, 5, 8):
        assert torch.equal(opt(torch.ones(n)), fn(torch.ones(n)))
    assert cnt.frame_count == 1


def _tensor_of_one_number(x, n, v):
    return (torch.tensor(n), torch.tensor(v), torch.as_tensor(n), torch.tensor(n, dtype=torch.float32),
            torch.tensor(v, dtype=torch.float64), x + torch.tensor(n))


def test_tensor_of_a_symbolic_number_stays_symbolic():
    """`torch.tensor(n)` of an int or float that automatic dynamic made symbolic is built in the graph
    from the number (`scalar_tensor`, then the dtype's conversion): no recompile per value."""
    opt, cnt = compiled(_tensor_of_one_number)
    x = torch.ones(2)
    for n, v in ((2, 0.1), (3, 0.3), (4, 1e-8), (7, 2.5)):
        got, want = opt(x, n, v), _tensor_of_one_number(x, n, v)
        assert all(torch.equal(g, w) and g.dtype == w.dtype and not g.requires_grad for g, w in zip(got, want))
    assert cnt.frame_count == 2        # the first values, then n and v symbolic


def test_tensor_of_items_under_fullgraph():
    def fn(v):
        return torch.tensor([v.item()]), torch.tensor([[v.item()], [2.0]])
    opt = bytegraph.compile(fn, backend="eager", fullgraph=True)
    v = torch.randn(1)
    got, want = opt(v), fn(v)
    assert all(torch.equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))


@pytest.mark.parametrize("fn", [
    lambda x: torch.tensor([x.sum(), 1], dtype=torch.int64),      # a float tensor's __index__: TypeError
    lambda x: torch.tensor([[x.sum()], [1, 2]]),                   # ragged: ValueError
    lambda x: torch.tensor([x[:2], x[:2]]),                        # two elements: TypeError
    lambda x: torch.tensor([x.sum().long(), 2], dtype=torch.int8),  # may overflow: not built
])
def test_data_the_constructor_refuses_or_may_refuse_runs_as_eager(fn):
    x = torch.tensor([1.5, -2.0, 4.25])
    standard_test(fn, x, frames=1)       # (the ops before it)
    assert bytegraph.stats.break_records


def test_a_tensor_requiring_grad_is_not_converted():
    # `float(t)` of a tensor requiring grad warns in eager: the constructor runs there
    def fn(x):
        return torch.tensor([x.sum(), 2.0])
    x = torch.randn(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        standard_test(fn, x, frames=1)
    assert bytegraph.stats.break_records


# -- tensors of known value ------------------------------------------------------------------------
def test_a_list_indexed_by_a_tensor_made_from_a_constant():
    def fn(a, b):
        ll = [a, b, a * 2, b * 2]
        return ll[torch.as_tensor(3)], (a, b)[torch.tensor(0)], ll[torch.tensor(1):]
    standard_test(fn, torch.randn(2), torch.randn(2), frames=1, breaks=0)


def test_known_values_answer_truth_and_numbers():
    def fn(x):
        t = torch.tensor(2) + 1
        if t > 2:
            x = x + 1
        return x * t.item(), int(t), float(t), bool(t - 3), t.__index__()
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


def test_max_of_known_values_is_the_operand_itself():
    def fn(x):
        t = torch.tensor(3)
        m = max(t, 2)
        return m is t, min(t, 2), x + m
    assert standard_test(fn, torch.randn(2), frames=1, breaks=0)[:2] == (True, 2)


def test_a_value_written_by_the_program_is_no_longer_known():
    def fn(a, n):
        t = torch.tensor(0)
        t.add_(n.sum().long())      # a write with a value the trace does not know
        return [a, a + 1, a + 2][t]
    standard_test(fn, torch.zeros(2), torch.ones(2), frames=1)
    assert bytegraph.stats.break_records


def test_max_over_unknown_tensors_stays_eagers_choice():
    # eager returns one operand itself: the int 0 when the sum is negative, else the tensor
    def fn(x):
        s = x.sum()
        return max(s, 0), min(1, s)
    for x in (-torch.ones(3), torch.ones(3) / 10):
        got = standard_test(fn, x, frames=1)
        assert type(got[0]) is type(fn(x)[0])
    opt = bytegraph.compile(fn, backend="eager", fullgraph=True)
    assert outcome(opt, torch.ones(2))[1] is bytegraph.exc.GraphBreakError
