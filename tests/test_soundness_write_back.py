"""Containers of the program changed by compiled code are written back after the graph: what the program
sees afterwards (an iterator or view it holds, the container's order, its key objects, a held iterator's
"changed size during iteration") must be eager's. A dict's entries, an OrderedDict's linked list and a
set's slots depend on the history of changes, which the write-back replays (frontend/write_back.py)."""
from __future__ import annotations

import collections

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import assert_same

OD, DD = collections.OrderedDict, collections.defaultdict


def drain(it):
    """The rest of a held iterator, with the RuntimeError eager raises after a change of size."""
    got = []
    while True:
        try:
            got.append(next(it))
        except StopIteration:
            return got
        except RuntimeError as e:
            return got + [("RuntimeError", str(e))]


def held_run(fn, make, hold, skip=1):
    """Make a container, hold an iterator over it advanced by `skip`, run `fn(x, c)`, then read the rest
    of the iterator, the container's order and its keys' types."""
    c = make()
    it = hold(c)
    first = [next(it) for _ in range(skip)]
    out = fn(torch.ones(2), c)
    return out, first, drain(it), list(c.items()) if hasattr(c, "items") else list(c), [type(k) for k in c]


def compare_held(f, make, hold, skip=1, frames=1, breaks=None):
    cnt = CompileCounter()
    got = held_run(bytegraph.compile(f, backend=cnt), make, hold, skip)
    assert_same(got, held_run(f, make, hold, skip), exact=True)
    assert cnt.frame_count == frames
    return got


# -- sets: their slots -----------------------------------------------------------------------------------
def test_set_item_discarded_and_added_again_keeps_its_slot():
    """Cleared and refilled, the set put 8 after 16 and 24 (its old slot was taken first): a held iterator
    gave 8 twice and the set iterated in another order."""
    def f(x, s):
        s.discard(8)
        s.add(8)
        return x + 1
    got = compare_held(f, lambda: {8, 16, 24}, iter)
    assert got[2] == [16, 24]


@pytest.mark.parametrize("change", ["ior", "isub", "iand", "update_list"])
def test_set_merges_land_in_eagers_slots(change):
    def f(x, s, t):
        if change == "ior":
            s |= t
        elif change == "isub":
            s -= {1}
        elif change == "iand":
            s &= t
        else:
            s.update([17, 9])
        return x + 1

    def run(fn):
        s, t = ({1, 2, 3}, {9, 17}) if change == "ior" else ({1, 9, 17, 33, 41}, {41, 33, 9, 25})
        it = iter(s)
        next(it)
        return fn(torch.ones(1), s, t), drain(it), list(s)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 1


def test_global_set_changed_keeps_eagers_order():
    global GLOBAL_SET
    GLOBAL_SET = {8, 16}

    def f(x):
        GLOBAL_SET.discard(8)
        GLOBAL_SET.add(24)
        GLOBAL_SET.add(8)
        return x + 1

    def run(fn):
        global GLOBAL_SET
        GLOBAL_SET = {8, 16}
        it = iter(GLOBAL_SET)
        next(it)
        return fn(torch.ones(1)), drain(it), list(GLOBAL_SET)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 1


def test_set_pop_starts_where_the_last_pop_stopped():
    """set.pop searches from the slot after the last pop (kept by clear() too), not from the first slot:
    for a set of the program that place is not known (the pop runs as Python); for one made here it is."""
    def f(x, s):
        return x + 1, s.pop()

    def run(fn):
        s = {1, 2, 3}
        s.pop()
        s.add(1)
        return fn(torch.ones(1), s), list(s)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 1     # (the graph before the pop)

    def g(x):
        s = {1, 2, 3}
        a = s.pop()
        s.add(0)
        b = s.pop()
        s.clear()
        s.update([0, 4, 5])
        return x + 1, a, b, s.pop()
    cnt = CompileCounter()
    assert_same(bytegraph.compile(g, backend=cnt)(torch.ones(1)), g(torch.ones(1)), exact=True)
    assert cnt.frame_count == 1


def test_set_iterates_by_hash_only_when_no_other_key_took_a_slot():
    """Items of hash 0..7 sit in the slot of their hash unless another key took it first: in `{9, 2}`
    given 1, 1 goes to slot 3 (9 holds slot 1, 2 slot 2), and stays there once 9 is gone."""
    def f(x, s):
        s.add(3)
        return x + 1, list(s)

    def made():
        s = set()
        for v in (9, 2, 1):
            s.add(v)
        s.discard(9)
        return s
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(torch.ones(1), made()), f(torch.ones(1), made()), exact=True)
    assert cnt.frame_count == 1

    def g(x):
        s = {9, 2}
        s.add(1)
        s.discard(9)
        return x + 1, list(s)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(g, backend=cnt)(torch.ones(1)), g(torch.ones(1)), exact=True)
    assert cnt.frame_count == 0     # (the set's order is not known: it cannot be rebuilt for a break either)


# -- OrderedDict: its linked list ---------------------------------------------------------------------------
@pytest.mark.parametrize("hold", [iter, lambda c: iter(c.keys()), lambda c: iter(c.values()),
                                  lambda c: iter(c.items()), reversed])
def test_ordered_dict_value_changes_keep_a_held_iterator_going(hold):
    """Only values changed: eager's iterator goes on. Cleared and refilled, the OrderedDict's linked list
    was new and the iterator raised "OrderedDict mutated during iteration"."""
    def f(x, d):
        d["b"] = 9
        d[1.0] = "x"         # the key 1 stays 1
        return x + 1
    got = compare_held(f, lambda: OD([("a", 1), ("b", 2), (1, "i"), ("c", 3)]), hold)
    assert not any(isinstance(v, tuple) and v[0] == "RuntimeError" for v in got[2])


def test_ordered_dict_moves_are_replayed():
    """move_to_end of the last key changes nothing (a held iterator goes on); a key moved and another
    deleted leave dict's own order (dict.keys(od)) as eager's."""
    def f(x, d):
        d.move_to_end("c")
        d.move_to_end("a", last=False)
        return x + 1
    compare_held(f, lambda: OD(a=1, b=2, c=3), iter)

    def g(x, d):
        d.move_to_end("a")
        d["z"] = 0
        del d["b"]
        return x + 1, list(dict.keys(d))
    compare_held(g, lambda: OD(a=1, b=2, c=3), iter)


# -- dicts and defaultdicts: their entries ------------------------------------------------------------------
def test_dict_key_deleted_and_added_again_is_the_new_key_object_at_the_end():
    """Deleted and added again in the same order, the keys were kept: eager has 1.0 (the new key object)
    in a new entry, where a held iterator finds it."""
    def f(x, d):
        del d[2]
        del d[1]
        d[1.0] = "x"
        d[2] = "y"
        return x + 1
    got = compare_held(f, lambda: {1: "a", 2: "b"}, iter)
    assert got[4] == [float, int]


def test_defaultdict_missing_key_after_a_deletion_keeps_a_held_iterators_place():
    def f(x, d):
        del d["a"]
        d["z"] += 1
        return x + 1
    compare_held(f, lambda: DD(int, a=1, b=2, c=3), iter)


def test_dict_update_from_a_dict_sizes_the_table_first():
    """dict.update from a dict makes room for all its items at once (the entries compacted then);
    added one by one, the new key went after a hole, and a held iterator saw one key more."""
    def f(x, d):
        d.popitem()
        d |= {"c": 9, "y": 1}
        return x + 1

    def make():
        d = dict.fromkeys("abcde", 1)
        del d["a"]
        return d
    got = compare_held(f, make, iter, skip=2)
    assert got[2] == ["y"]


@pytest.mark.parametrize("update", [lambda d, v: d.update(key=v), lambda d, v: d.update({"key": v}),
                                    lambda d, v: d.__ior__({"key": v})])
def test_dict_update_to_the_values_held_keeps_the_dicts_version(update):
    """An update storing the objects a dict already holds leaves its version (PEP 509: what CPython's
    specialised lookups and test_dict_version read) as it is; the write-back's table sizing stored None
    first and the value after, two changes. A key whose value does change still changes it."""
    version = pytest.importorskip("_testcapi").dict_get_version
    value = object()

    def f(x, d, v):
        update(d, v)
        return x + 1

    for new, changed in ((value, False), (object(), True)):
        for fn in (f, bytegraph.compile(f, backend=(cnt := CompileCounter()))):
            d = {"a": 1, "key": value}
            before = version(d)
            assert_same(fn(torch.ones(2), d, new), torch.ones(2) + 1)
            assert (version(d) != before) is changed and d == {"a": 1, "key": new}
        assert cnt.frame_count == 1 and cnt.op_count == 1


def test_dict_made_in_compiled_code_keeps_the_holes_of_its_deleted_keys():
    @bytegraph.disable
    def hold(d):
        it = iter(d)
        return it, [next(it), next(it)]

    def f(x):
        d = dict.fromkeys("abcde", 1)
        del d["a"]
        it, first = hold(d)          # (a graph break: the dict is rebuilt for the call)
        d.popitem()
        d["y"] = 1
        d["q"] = 2
        del d["q"]
        return x + 1, first, list(it)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(torch.ones(1)), f(torch.ones(1)), exact=True)
    assert cnt.frame_count == 1


def test_changes_on_both_sides_of_a_graph_break():
    def f(x, d, s):
        y = x + 1
        d["z"] = 1
        s.add(17)
        del d["a"]
        bytegraph.graph_break()
        s.discard(1)
        d["a"] = 2
        s.add(9)
        return y * 2

    def run(fn):
        d, s = dict(a=1, b=2, c=3), {1, 2, 3}
        it, si = iter(d), iter(s)
        first = [next(it), next(si)]
        return fn(torch.ones(1), d, s), first, drain(it), drain(si), list(d.items()), list(s)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 2


# -- iterators made in compiled code, over containers written back -------------------------------------------
def test_iterator_made_after_a_change_is_rebuilt_after_the_write_back():
    """Rebuilt before the write-back, the iterator noted the dict's size from before `pop`: after
    another key was added it went on where eager's raised "changed size during iteration"."""
    @bytegraph.disable
    def rest(it):
        return drain(it)

    def f(x, d):
        d.pop("a", None)
        it = iter(d.items())
        rest(iter(()))               # (a graph break with the iterator held)
        d.setdefault("w", 0)
        return x + 1, rest(it)
    cnt = CompileCounter()
    got = bytegraph.compile(f, backend=cnt)(torch.ones(1), {"a": 1, "b": 2})
    assert_same(got, f(torch.ones(1), {"a": 1, "b": 2}), exact=True)
    assert got[1] == [("RuntimeError", "dictionary changed size during iteration")]
    assert cnt.frame_count == 1


@pytest.mark.parametrize("returned", ["items", "values_in_list", "enumerate", "set"])
def test_returned_iterator_over_a_changed_argument_is_eagers(returned):
    def f(x, c):
        if returned == "set":
            c.discard(8)
            return x + 1, iter(c)
        c.pop("a")
        if returned == "items":
            it = iter(c.items())
            next(it)
            return x + 1, it
        if returned == "values_in_list":
            return x + 1, [iter(c.values())]
        return x + 1, enumerate(c)

    def run(fn):
        c = {8, 16, 24} if returned == "set" else {"a": 1, "b": 2, "c": 3}
        out, it = fn(torch.ones(1), c)
        it = it[0] if isinstance(it, list) else it
        if returned == "set":
            c.add(99)
            c.discard(99)
        else:
            c["new"] = 1
            del c["new"]
        return out, drain(it)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 1


def test_exhausted_dict_iterator_stays_exhausted_when_the_dict_grows():
    def f(x, d):
        it = iter(d)
        for _ in it:
            pass
        return x + 1, it

    def run(fn):
        d = {"a": 1}
        out, it = fn(torch.ones(1), d)
        d["z"] = 2
        return out, drain(it)
    cnt = CompileCounter()
    assert_same(run(bytegraph.compile(f, backend=cnt)), run(f), exact=True)
    assert cnt.frame_count == 1


def test_cell_value_is_rebuilt_before_the_write_back():
    """A deque made of a list's items, in a closure's cell, was rebuilt after the list's write-back:
    an item read as `lst[2]` was then the new one (found with the fuzzer's "held" family)."""
    @bytegraph.disable
    def hold(make):
        return make()

    def f(x, lst, n):
        lst[1:2] = [n, n, n]
        c = collections.deque(lst)
        hold(lambda: iter(c))          # (a graph break with the deque in the lambda's cell)
        c.popleft()
        return x + 1, list(c)
    cnt = CompileCounter()
    got = bytegraph.compile(f, backend=cnt)(torch.ones(1), [1, 7, 9], 5)
    assert_same(got, f(torch.ones(1), [1, 7, 9], 5), exact=True)
    assert got[1] == [5, 5, 5, 9]
    assert cnt.frame_count == 1
