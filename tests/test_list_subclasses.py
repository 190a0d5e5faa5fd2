"""Objects of list subclasses made in compiled code: their items are modelled through list's own
methods (kept with the object's attributes, rebuilt after the graph); the subclass's own Python
methods still run; a list that slicing, `+` or `copy` makes is a plain list, as in CPython. One that
existed before the frame is not modelled: list's methods on it break the graph."""
import torch

import bytegraph
from helpers import compiled, standard_test


class PlainList(list):
    pass


class Tagged(list):
    def __init__(self, items, tag):
        super().__init__(items)
        self.tag = tag

    def append(self, value):
        super().append(value * 10)


class OwnIter(list):
    def __radd__(self, other):
        return "radd"

    def __iter__(self):
        return iter([100])


class Box:
    pass


def test_list_subclass_built_and_returned():
    def f(x):
        a = PlainList([1, 2, 3])
        a.append(4)
        return a, x + 1
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert type(got[0]) is PlainList and got[0] == [1, 2, 3, 4]


def test_list_methods_operators_and_overrides():
    def f(x):
        a = Tagged([1, 2], "t")
        a.append(3)           # the subclass's own append, which calls list's
        a += [5]
        a *= 2
        a.extend(range(2))
        b, c = a[1:3], a + [9]
        a[0] = 7
        del a[1]
        total = 0
        for v in a:
            total += v
        return (a, a.tag, b, type(b), c, type(c), len(a), 3 in a, a == [7, 30, 5, 1], list(a), bool(a),
                bool(PlainList()), total, a.pop(), sorted(a), x * len(a), a.copy(), type(a.copy()), a.index(5),
                a.count(5), [0] + PlainList([1]))
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert type(got[0]) is Tagged and got[0].tag == "t"


def test_own_iter_and_reflected_add_run():
    def f(x):
        a = OwnIter([3, 1])
        return [1] + a, list(a), [*a], a + [2], len(a), sum(a), tuple(a), sorted(a), x + 1
    got = standard_test(f, torch.ones(2), frames=1, breaks=0)
    assert got[0] == "radd" and got[1] == [100] and got[3] == [3, 1, 2]


def test_object_stored_twice_is_one_object_after_the_graph():
    def f(x, box):
        a = Tagged([1], "u")
        box.a = a
        box.b = a
        a.append(2)
        return x + 1
    bytegraph.reset()
    opt, cnt = compiled(f)
    got, want = Box(), Box()
    opt(torch.ones(2), got)
    f(torch.ones(2), want)
    assert cnt.frame_count == 1 and len(bytegraph.stats.break_records) == 0
    assert type(got.a) is Tagged and got.a == want.a == [1, 20] and got.a.tag == "u" and got.a is got.b


def test_list_subclass_argument_still_breaks():
    # its items are not read through guards: list's methods on it run in eager code
    def f(x, a):
        a.append(len(a))
        return x + len(a)
    bytegraph.reset()
    opt, cnt = compiled(f)
    got, want = PlainList([1]), PlainList([1])
    assert torch.equal(opt(torch.ones(2), got), f(torch.ones(2), want)) and got == want == [1, 1]
    assert bytegraph.stats.break_records and cnt.frame_count >= 1
