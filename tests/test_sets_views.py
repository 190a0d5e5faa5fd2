"""Set comparisons and dict views as sets: `!=`, NotImplemented for other operands, `keys() ^ x`
and friends built as CPython builds them, in one graph and compared with eager."""
from __future__ import annotations

import collections
import types

import pytest
import torch

import bytegraph
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


def dict_reversed(x):
    d = {"a": x, "b": x * 2, "c": 3}
    k, v = d.popitem()
    o = collections.OrderedDict(a=1, b=2)
    it = reversed(d)
    first = next(it)
    return k, v, first, list(it), list(reversed(d.values())), list(reversed(d.items())), list(reversed(o)), d


def dict_reversed_changed_size(x):
    d = {"a": 1, "b": 2}
    try:
        for k in reversed(d):
            d["z"] = 0
    except RuntimeError as e:
        return x + 1, str(e)


def defaultdict_counting(x):
    c = collections.defaultdict(int)
    for w in ["a", "b", "a"]:
        c[w] += 1
    return x * c["a"], dict(c), c.default_factory, collections.defaultdict().default_factory


@pytest.mark.parametrize("fn", [dict_reversed, dict_reversed_changed_size, defaultdict_counting])
def test_dicts_one_graph_like_eager(fn):
    standard_test(fn, torch.randn(3), frames=1, breaks=0)


def fills_a_missing_key(x, d):
    d["new"]
    return x + 1


def test_defaultdict_factory_of_an_argument_is_guarded():
    """A cached graph that fills a missing key calls the factory it was traced with: another
    factory recompiles."""
    import bytegraph
    opt = bytegraph.compile(fills_a_missing_key, backend="eager")
    for factory, filled in ((int, 0), (list, []), (str, "")):
        d = collections.defaultdict(factory)
        opt(torch.ones(1), d)
        assert d == {"new": filled} and type(d["new"]) is factory


def set_methods_called_on_the_class(x):
    p, q = set("abc"), set("bef")
    fp, fq = frozenset("abc"), frozenset("bef")
    return (x + 1, set.__sub__(p, q) == set("ac"), sorted(frozenset.__sub__(fp, fq)), set.__or__(p, [1]),
            frozenset.__sub__(fp, p) == frozenset(), set.union(p, "xy") == p | set("xy"))


def test_set_methods_called_on_the_class():
    standard_test(set_methods_called_on_the_class, torch.randn(3), frames=1, breaks=0)


# -- dict views ordered against sets and views, `|` of dicts, join of iterables ----------------------
def view_ordering_comparisons(x):
    keys = {"one": 1, "two": 2}.keys()
    items = {"one": 1, "two": 2}.items()
    s = {"one", "two", "three"}
    return (x + 1, keys < s, keys <= {"one", "two"}, keys > {"one"}, keys >= s, {"one"} < keys,
            s > keys, items <= {("one", 1), ("two", 2), ("x", 0)}, items < {("one", 1), ("two", 3), ("x", 0)},
            keys < items, items.__lt__(3), ("one", 1) in items, ("one", 2) in items, "one" in items)


def dict_or_answers_not_implemented_and_reflects(x):
    dd = collections.defaultdict(int, {1: 1})
    od = collections.OrderedDict({3: 3})
    base = {5: 5, 1: 0}
    try:
        bad = base | 1
    except TypeError as e:
        bad = str(e)
    kinds = [type(r).__name__ for r in (dd | od, dd | base, base | dd, od | dd, base | od, base | base)]
    return x + 1, base.__or__(1), base.__ror__([1]), bad, kinds, base | dd, od | base, base.__ror__({9: 9})


class _Letters:
    def __iter__(self):
        yield from "abc"


def join_of_iterables(x):
    return x + 1, "".join(collections.OrderedDict.fromkeys("xyz")), "-".join(_Letters()), ",".join({"k": 1})


@pytest.mark.parametrize("fn", [view_ordering_comparisons, dict_or_answers_not_implemented_and_reflects,
                                join_of_iterables])
def test_view_order_dict_or_and_join_in_one_graph(fn):
    standard_test(fn, torch.randn(3), frames=1, breaks=0)


# -- types.MappingProxyType: a live read-only view ---------------------------------------------------
_PROXIED = {}


def mapping_proxy_reads(x):
    d = {"a": 2, "b": 3, "c": 5}
    mp = types.MappingProxyType(d)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y = y + v
    d["d"] = 4            # seen through the proxy
    try:
        mp["e"] = 1
    except TypeError as e:
        err = str(e)
    return (y, dict(mp), len(mp), "d" in mp, mp.get("zz", 1), list(mp), isinstance(mp, types.MappingProxyType),
            mp == d, mp.copy(), err, {"z": 0} | dict(mp))


def mapping_proxy_of_a_global_returned(x):
    mp = types.MappingProxyType(_PROXIED)
    _PROXIED["new"] = 1
    return x + mp["a"], mp


@pytest.mark.parametrize("fn", [mapping_proxy_reads, mapping_proxy_of_a_global_returned])
def test_mapping_proxy_in_one_graph(fn):
    _PROXIED.clear()
    _PROXIED["a"] = 2
    standard_test(fn, torch.randn(3), frames=1, breaks=0)
    # the proxy returned shows the program's dict itself
    _PROXIED.clear()
    _PROXIED["a"] = 2
    out = bytegraph.compile(fn, backend="eager")(torch.randn(3))
    if fn is mapping_proxy_of_a_global_returned:
        _PROXIED["later"] = 3
        assert type(out[1]) is types.MappingProxyType and out[1]["later"] == 3


def view_equality_with_sets_and_views(x):
    keys = {"one": 1, "two": 2}.keys()
    items = {"one": 1, "two": 2}.items()
    s = {"one", "two"}
    od = collections.OrderedDict.fromkeys("abc")
    try:
        od.move_to_end("zz")
    except KeyError as e:
        err = e.args
    return (x + 1, keys == s, s == keys, keys != {"one"}, keys == items, items == {("one", 1), ("two", 2)},
            items != {("one", 1), ("two", 3)}, {("one", 1), ("two", 2)} == items, err)


def test_view_equality_with_sets_and_views():
    standard_test(view_equality_with_sets_and_views, torch.randn(3), frames=1, breaks=0)
