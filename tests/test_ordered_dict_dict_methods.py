"""dict's own C methods called on an OrderedDict (`dict.__ior__(od, other)`, `dict.get(od, k)`): reads
that do not depend on order, and writes that only replace values of keys already there, are traced;
a write adding a key (which leaves the OrderedDict's order list behind) breaks the graph."""
from collections import OrderedDict

import torch

from helpers import standard_test


def test_ior_and_update_of_present_keys_in_one_graph():
    def f(x):
        d1 = OrderedDict({"a": 1, "b": 2})
        d2 = OrderedDict({"b": 3, "c": 4})
        d3, d4 = d1.copy(), d2.copy()
        return (x + 1, type(d3.__ior__(d2)).__name__, type(dict.__ior__(d4, d2)).__name__,
                type(dict.__ior__(dict(d3), d2)).__name__, list(d4.items()), dict.__ior__(d4, d2) is d4)
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert got[1:4] == ("OrderedDict", "OrderedDict", "dict")


def test_reads_and_value_writes_keep_the_order_list():
    def f(x):
        d = OrderedDict(a=1, b=2)
        d.move_to_end("a")
        dict.update(d, {"a": 5})
        dict.__setitem__(d, "b", x)
        return d, dict.get(d, "a"), dict.__contains__(d, "z"), dict.__len__(d), dict.__getitem__(d, "b") + 1, list(d)
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert list(got[0]) == ["b", "a"]


def test_update_adding_a_key_breaks():
    # (the frame after it sees an OrderedDict whose table and order list differ: it runs as is)
    def f(x):
        y = x * 2
        d = OrderedDict(a=1)
        dict.update(d, {"a": 2, "z": 3})     # "z" goes into the table only
        return y + 1, dict.get(d, "z"), dict.__len__(d), list(d)
    got = standard_test(f, torch.ones(2), frames=1, breaks=2)
    assert got[1:] == (3, 2, ["a"])


class _Ordered(OrderedDict):
    pass


def test_merge_with_an_ordered_dict_subclass_on_the_right_is_of_the_subclass():
    """`dict | od` reaches the OrderedDict subclass's `__ror__`, which makes `type(od)(left)` updated
    with od: an object of the subclass. It was an OrderedDict (CPython's test_ordered_dict
    test_merge_operator)."""
    def f(x):
        a, b = _Ordered({0: 0, 1: 1}), _Ordered({1: 2, 3: 3})
        merged = [dict(a) | b, a | dict(b), b.__ror__({5: 5})]
        return x + 1, [type(m).__name__ for m in merged], [list(m.items()) for m in merged]
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert got[1] == ["_Ordered"] * 3
