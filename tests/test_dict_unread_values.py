"""A dict read from the program: only the values the code reads are wrapped and guarded, so calls that
differ in a value the code never reads reuse the graph; a value that is read is guarded as before."""
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import assert_same


def run_calls(fn, calls):
    """Each call's arguments run eagerly and compiled (same results, same dicts after); the compile count."""
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    for make in calls:
        want_args, got_args = make(), make()
        assert_same(opt(*got_args), fn(*want_args))
        assert_same(got_args, want_args)
    return cnt.frame_count


def test_unread_values_do_not_recompile():
    def f(d):
        return d["a"] * 2
    calls = [lambda: ({"a": torch.ones(3), "b": torch.ones(2)},),
             lambda: ({"a": torch.ones(3), "b": torch.ones(4, 4)},),
             lambda: ({"a": torch.ones(3), "b": [1, 2]},),
             lambda: ({"a": torch.ones(3), "b": None},)]
    assert run_calls(f, calls) == 1


def test_get_and_membership_read_one_value():
    def f(x, d):
        return x + d.get("a", 0), "b" in d, len(d), "z" in d
    calls = [lambda: (torch.ones(2), {"a": 2, "b": [1]}),
             lambda: (torch.ones(2), {"a": 2, "b": [1, 2]}),
             lambda: (torch.ones(2), {"a": 2, "b": torch.ones(1)})]
    assert run_calls(f, calls) == 1


def test_read_values_and_keys_stay_guarded():
    def f(x, d):
        return x * d["n"] + d["t"]
    calls = [lambda: (torch.ones(2), {"n": 3, "t": torch.ones(2)}),
             lambda: (torch.ones(2), {"n": 3, "t": torch.ones(2).double()}),
             lambda: (torch.ones(2), {"n": 3, "t": torch.ones(2), "k": 0})]   # (a key never looked up)
    assert run_calls(f, calls) == 2


def test_iterating_reads_every_value():
    def f(d):
        return sum(v.sum() for v in d.values())
    calls = [lambda: ({"a": torch.ones(3), "b": torch.ones(2)},),
             lambda: ({"a": torch.ones(3), "b": torch.ones(2).double()},)]
    assert run_calls(f, calls) == 2


def test_a_changed_dict_is_written_back_with_its_unread_values():
    def f(x, d):
        d["c"] = x + 1
        return d["a"] * 2
    calls = [lambda: (torch.ones(2), {"a": torch.ones(2), "b": [5]}),
             lambda: (torch.ones(2), {"a": torch.ones(2), "b": (6,)})]
    assert run_calls(f, calls) == 2      # (writing the dict back reads the unread value too)
    d = {"a": torch.ones(2), "b": [5]}
    bytegraph.compile(f, backend=CompileCounter())(torch.ones(2), d)
    assert d["b"] == [5] and list(d) == ["a", "b", "c"]


def test_value_aliasing_another_argument():
    def f(x, d):
        x.add_(1)
        return d["a"] * 2
    calls = [lambda: (lambda t: (t, {"a": t}))(torch.ones(2)),
             lambda: (torch.ones(2), {"a": torch.ones(2)})]
    assert run_calls(f, calls) == 2
