"""Objects of set/frozenset subclasses: their items are modelled through set's own methods (read from
an argument with its items guarded, or made in compiled code and rebuilt after it); the subclass's own
Python methods still run; a set an operator makes is of the builtin type, as in CPython."""
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import assert_same, standard_test


class MySet(set):
    pass


class MyFrozen(frozenset):
    pass


class PlusOne(set):
    def add(self, item):
        return super().add(item + 1)


class Tagged(set):
    def __init__(self, items, tag):
        super().__init__(items)
        self.tag = tag


def test_argument_is_read_in_one_graph():
    def f(x, s):
        return x * len(s), 2 in s, sorted(s), type(s).__name__, sorted(s | {9}), type(s | {9}).__name__, \
            s.issubset({1, 2, 3})
    got = standard_test(f, torch.ones(2), MySet([1, 2, 3]), frames=1, breaks=0)
    assert got[4] == [1, 2, 3, 9] and got[5] == "set"


def test_frozenset_subclass_argument_and_new_object():
    def f(x, s):
        t = MyFrozen([4, 5])
        return x + len(s) + len(t), type(t).__name__, 4 in t, sorted(s & {1, 7}), type(s & {1}).__name__, t
    got = standard_test(f, torch.ones(2), MyFrozen([1, 2]), frames=1, breaks=0)
    assert type(got[5]) is MyFrozen and got[5] == {4, 5} and got[4] == "frozenset"


def test_copy_of_a_frozenset_subclass_is_a_new_frozenset():
    # frozenset.copy returns the object itself only for an exact frozenset (CPython's test_set)
    def f(x, s):
        dup, made = s.copy(), MyFrozen([3]).copy()
        return x + len(dup), dup is s, type(dup).__name__, dup, type(made).__name__, made
    got = standard_test(f, torch.ones(2), MyFrozen([1, 2]), frames=1, breaks=0)
    assert got[1] is False and got[2] == "frozenset" and got[4] == "frozenset"


def test_object_made_in_compiled_code_keeps_its_class_attributes_and_overrides():
    def f(x):
        s = MySet([1, 2])
        s.add(5)
        s |= {7}
        p = PlusOne()
        p.add(1)
        t = Tagged([3], tag="a")
        return x + len(s), s, p, t, t.tag
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert type(got[1]) is MySet and got[1] == {1, 2, 5, 7}
    assert type(got[2]) is PlusOne and got[2] == {2}
    assert type(got[3]) is Tagged and got[3] == {3} and got[3].tag == "a"


def test_items_of_an_argument_are_guarded():
    def f(x, s):
        return x * (3 in s)
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2)
    for s in (MySet([1, 3]), MySet([1, 3]), MySet([1, 2]), MySet([1, 2])):
        assert_same(opt(x, s), f(x, s))
    assert cnt.frame_count == 2
    s = MySet([3])
    s.add(4)      # changed in place: still guarded
    assert_same(opt(x, s), f(x, s))


def test_changing_an_argument_breaks_and_still_changes_it():
    def f(x, s):
        s.add(9)
        s.discard(1)
        return x * len(s)
    s1, s2 = MySet([1, 2]), MySet([1, 2])
    want = f(torch.ones(2), s1)
    bytegraph.reset()
    got = bytegraph.compile(f, backend=CompileCounter())(torch.ones(2), s2)
    assert_same(got, want)
    assert s1 == s2 == {2, 9} and type(s2) is MySet
    assert any("existed before the compiled frame" in r.reason for r in bytegraph.stats.break_records)


def test_equal_sets_iterating_in_another_order_or_with_other_item_types_are_not_reused():
    # {1, 9} built in two orders iterates in two orders (9 collides with 1 in CPython's table)
    def f(x, s):
        return x + 1, list(s)
    for kind in (set, MySet, frozenset, MyFrozen):
        bytegraph.reset()
        cnt = CompileCounter()
        opt = bytegraph.compile(f, backend=cnt)
        for items in ([1, 9], [9, 1], [True, 9]):
            s = kind(items)
            got, want = opt(torch.ones(1), s), f(torch.ones(1), s)
            assert_same(got, want)
            assert [type(v) for v in got[1]] == [type(v) for v in want[1]]
        assert cnt.frame_count == 3, kind
