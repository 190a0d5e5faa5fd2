"""Set comparisons and dict views as sets: `!=`, NotImplemented for other operands, `keys() ^ x`
and friends built as CPython builds them, in one graph and compared with eager."""
from __future__ import annotations

import pytest
import torch

from helpers import standard_test


def set_comparisons(x):
    p, q = set("abc"), frozenset("ab")
    return (x + 1, p != q, p != frozenset("abc"), q != p, p == "abc", p != "abc",
            p.__eq__("abc"), p.__ne__("abc"), p.__le__("abc"), p.__or__({1: 2}.keys()))


def set_ordering_with_a_string_raises(x):
    try:
        return x + 1, set("abc") <= "abc"
    except TypeError as e:
        return x - 1, str(e)


def dict_view_set_operators(x):
    d = {"a": 1, "b": 2}
    e = {"b": 3, "c": 4}
    return (x + 1, d.keys() & e.keys(), d.keys() | e.keys(), d.keys() - e.keys(), list(d.items() ^ e.items()),
            list(d.keys() | ["z", "y", "a"]), list(d.items() & e.items()), list(d.keys() & {"b", "a", "q"}))


def set_updated_with_a_view(x):
    s = {"q", "b"}
    d = {"a": 1, "b": 2}
    t = frozenset(["a"])
    s |= d.keys()      # set.__ior__ answers NotImplemented: `s = s | view`, a new set
    return x + 1, sorted(s), type(t | d.keys()).__name__, sorted(t | d.keys()), sorted({"b"} ^ d.keys())


@pytest.mark.parametrize("fn", [set_comparisons, set_ordering_with_a_string_raises, dict_view_set_operators,
                                set_updated_with_a_view])
def test_one_graph_like_eager(fn):
    standard_test(fn, torch.randn(3), frames=1, breaks=0)
