"""Sets, frozensets, lists and tuples: their methods called bound and through the type, operators, errors
(type and message), order, in-place changes seen through aliases, sorting with keys that misbehave, and the
sys functions that report the exception being handled."""
import collections
import functools
import math
import sys

import torch

from . import probe


def _x():
    return (torch.randn(3),)


def _err(fn, *args, **kw):
    """What the call did: its value, or the exception's type name and message."""
    try:
        return ("ok", fn(*args, **kw))
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return (type(e).__name__, str(e))


class SetSub(set):
    pass


class FrozenSub(frozenset):
    pass


class AddsOne(set):
    def add(self, item):
        return super().add(item + 1)

    def contains(self, item):
        return True


# ---- sets and frozensets


@probe(_x)
def set_binops(x):
    p, q = set("abc"), set("bef")
    return sorted(p - q), sorted(q - p), sorted(p | q), sorted(p & q), sorted(p ^ q), p - p == set(), x + 1


@probe(_x)
def frozenset_binops_keep_left_type(x):
    p, q = frozenset("abc"), set("bef")
    return type(p | q).__name__, type(q | p).__name__, type(p - q).__name__, sorted(p ^ q), x + 1


@probe(_x)
def set_binop_with_non_set_raises(x):
    p = set("abc")
    return _err(lambda: p - 1), _err(lambda: p | [1]), _err(lambda: p & "ab"), x


@probe(_x)
def set_dunder_methods_through_type(x):
    p, q = set("abc"), set("bef")
    return (sorted(set.__sub__(p, q)), sorted(set.__or__(p, q)), sorted(set.__and__(p, q)),
            sorted(set.__xor__(p, q)), set.__eq__(p, p), set.__ne__(p, q), set.__sub__(p, [1]), x)


@probe(_x)
def set_comparisons(x):
    p, q, r = set("abc"), set("bef"), set("ab")
    return (p < p, p < q, r < p, r < q, p <= p, r <= p, p > r, q > r, p >= p, q >= r,
            set.__lt__(p, p), set.__le__(p, p), x * 2)


@probe(_x)
def set_equality_across_kinds(x):
    p = set("abc")
    return (p == frozenset("abc"), p == SetSub("abc"), frozenset("abc") == FrozenSub("abc"),
            p != list("abc"), p != dict.fromkeys("abc"), p == dict.fromkeys("abc").keys(), p != 1, x)


@probe(_x)
def set_copy(x):
    p = set("abc")
    q = p.copy()
    q.add("z")
    return sorted(p), sorted(q), _err(p.copy, 1), set.copy(p) == p, x


@probe(_x)
def frozenset_copy_is_same_object(x):
    p = frozenset("abc")
    return p.copy() is p, frozenset.copy(p) is p, frozenset(p) is p, x


@probe(_x)
def frozenset_subclass_copy_is_plain(x):
    p = FrozenSub("abc")
    c = p.copy()
    return type(c).__name__, c is p, type(frozenset.copy(p)).__name__, x


@probe(_x)
def set_subset_superset(x):
    p, q, r = set("abc"), set("bc"), set("bef")
    return (q.issubset(p), r.issubset(p), p.issuperset(q), p.issuperset("bc"), q.issubset(["a", "b", "c"]),
            _err(p.issubset), _err(p.issubset, 1), _err(p.issuperset, [[]]), set.issubset(q, p), x)


@probe(_x)
def set_isdisjoint(x):
    a, b, c = {"apple", "banana"}, {"google", "apple"}, {"shoes"}
    return a.isdisjoint(b), a.isdisjoint(c), _err(a.isdisjoint), _err(a.isdisjoint, 1), \
        _err(a.isdisjoint, [[]]), x


_GEN_STEPS = []


def _reset_gen():
    _GEN_STEPS.clear()
    return _x()


@probe(_reset_gen)
def isdisjoint_stops_consuming_generator(x):
    def gen():
        _GEN_STEPS.append(1)
        yield 1
        _GEN_STEPS.append(2)
        yield 2
        _GEN_STEPS.append(3)
        yield 3
    del _GEN_STEPS[:]
    r = {2, 4, 5}.isdisjoint(gen())
    return r, list(_GEN_STEPS), x.sin() if len(_GEN_STEPS) == 2 else x.cos()


@probe(_x)
def set_multi_argument_methods(x):
    s1, s2, s3 = {"apple", "banana", "cherry"}, {"google", "apple"}, {"shoes", "apple"}
    return (sorted(s1.intersection(s2, s3)), sorted(s1.union(s2, ["z"])), sorted(s1.difference(s2, s3)),
            sorted(s1.symmetric_difference(s2)), _err(s1.symmetric_difference), _err(s1.intersection, 1),
            _err(s1.union, [[]]), sorted(set.union(s2, s3)), sorted(s1.union()), x)


@probe(_x)
def set_in_place_updates(x):
    a = {"apple", "banana", "cherry"}
    b = {"apple", "banana", "cherry"}
    c = {"apple", "banana", "cherry"}
    r = (a.intersection_update({"apple", "x"}, ["apple"]), b.difference_update({"apple"}, "xyz"),
         c.symmetric_difference_update({"apple", "kiwi"}))
    return r, sorted(a), sorted(b), sorted(c), _err(a.intersection_update, [[]]), x


@probe(_x)
def set_in_place_operators_keep_identity(x):
    s = {1, 2, 3}
    alias = s
    s |= {4}
    s &= {1, 2, 4, 9}
    s -= {1}
    s ^= {7, 2}
    return s is alias, sorted(alias), x


@probe(_x)
def frozenset_in_place_operator_rebinds(x):
    s = frozenset({1, 2})
    alias = s
    s |= {3}
    return s is alias, sorted(s), sorted(alias), x


@probe(_x)
def set_add_remove_discard_pop_clear(x):
    p = set("abc")
    out = [p.add("d"), p.add("a"), _err(p.add, ["ab"]), _err(p.add), set.add(p, "e"), sorted(p)]
    out += [p.remove("a"), _err(p.remove, "a"), p.discard("zz"), p.discard("b"), sorted(p)]
    q = set("a")
    out += [set.pop(q), _err(q.pop), _err(set().pop), len(p)]
    p.clear()
    out.append(p == set())
    return out, x


@probe(_x)
def set_remove_discard_unhashable(x):
    return _err(set("abc").remove, []), _err(set("abc").discard, []), _err(lambda: [] in set("abc")), x


@probe(_x)
def set_key_coerced_to_frozenset(x):
    s = {frozenset("ab")}
    s.remove(set("ab"))
    t = {frozenset("ab")}
    t.discard(set("ab"))
    t.discard(set("ab"))
    return len(s), len(t), _err({frozenset("ab")}.remove, set("z")), set("ab") in {frozenset("ab")}, x


@probe(_x)
def set_subclass_overrides_add(x):
    s = AddsOne([1, 2])
    s.add(3)
    set.add(s, 10)
    return s == {1, 2, 4, 10}, s.contains(99), type(s | {5}).__name__, type(s.copy()).__name__, x


@probe(_x)
def set_of_ints_iteration_order(x):
    s = {5, 1, 33, 2}
    s.remove(1)
    s.add(65)
    s.add(1)
    acc = x
    for i, v in enumerate(s):
        acc = acc + v * (i + 1)
    return list(s), acc


@probe(_x)
def set_of_strings_order_matches_eager(x):
    s = {"delta", "alpha", "charlie", "bravo"}
    s.discard("alpha")
    s.update(["echo", "alpha"])
    return list(s), [c for c in s if c < "d"], x


@probe(_x)
def set_iterator_length_hint(x):
    out = []
    for obj in ({1, 2, 3}, {1: "a", 2: "b"}, {1: "a"}.values()):
        it = iter(obj)
        out.append(it.__length_hint__())
        next(it)
        out.append(it.__length_hint__())
    out.append(iter(set()).__length_hint__())
    return out, x.sin()


@probe(_x)
def set_changed_during_iteration_raises(x):
    s = {1, 2, 3}
    for v in s:
        s.add(v + 10)
    return s, x


@probe(lambda: ({"Dynamo", "Inductor", "PyTorch", math.nan}, torch.randn(3)),
       between=lambda s, x: (s.remove("PyTorch"), s.add("Cuda")))
def set_membership_changed_between_calls(s, x):
    return x.sin() if "PyTorch" in s else x.cos()


@probe(lambda: ({torch.sin, torch.cos, "k"}, torch.randn(3)),
       between=lambda s, x: (s.remove(torch.cos), s.add(torch.tan)))
def set_of_functions_changed_between_calls(s, x):
    return x.sin() if torch.cos in s else x.cos(), len(s)


@probe(lambda: ({3, 1, 2}, torch.randn(3)), between=lambda s, x: (s.discard(1), s.add(9)))
def set_argument_iterated(s, x):
    for v in s:
        x = x * v
    return x, sorted(s)


@probe(lambda: ({3, 1, 2}, torch.randn(3)))
def set_argument_mutated(s, x):
    s.add(len(s) + 10)
    s.discard(1)
    return x + len(s)


@probe(lambda: (torch.ones(1), torch.zeros(1), torch.ones(1)))
def set_of_tensors_iterated(a, b, x):
    z = torch.zeros(1)
    for t in {a, b, a}:
        z = z + t
    return x + z


@probe(_x)
def set_built_from_dict_and_generators(x):
    d = dict.fromkeys([3, 1, 2])
    return (list(set(d)), sorted(frozenset(d.items())), sorted({v * 2 for v in d}),
            sorted(set(map(str, range(3)))), sorted(set(range(5)) - set(range(0, 5, 2))), x)


@probe(_x)
def set_contains_via_dunder_and_type(x):
    s = set(["a", "b", "c"])
    return "a" in s, "d" not in s, s.__contains__("a"), set.__contains__(s, "b"), \
        frozenset("abc") in {frozenset("abc")}, x


@probe(_x)
def set_min_max_sorted_sum(x):
    s = {4, -2, 9}
    return min(s), max(s), sorted(s, reverse=True), sum(s), max(s, key=lambda v: -v), x


@probe(_x)
def frozenset_hash_and_as_key(x):
    d = {frozenset({1, 2}): "a"}
    return d[frozenset([2, 1])], hash(frozenset()) == hash(frozenset([])), _err(hash, {1}), x


@probe(_x)
def ordered_set_keeps_insertion_order(x):
    from torch.utils._ordered_set import OrderedSet
    s = OrderedSet(["c", "b", "a"])
    s.add("d")
    s.discard("b")
    u = s | OrderedSet(["z", "c"])
    return list(s), list(u), list(s & OrderedSet(["a", "c"])), type(u).__name__, x


# ---- lists and tuples


@probe(_x)
def tuple_count_index(x):
    p = tuple("abcab")
    return p.count("a"), p.count("ab"), p.index("b"), p.index("b", 2), _err(p.count), _err(p.count, 2, 3), \
        _err(p.index, "e"), _err(p.index), x


@probe(_x)
def list_index_not_found_messages(x):
    return (_err([1, 2, 3].index, "z"), _err((1, 2, 3).index, "z"),
            _err(collections.deque([1, 2]).index, "z"), _err([1, 2, 3].index, 2, 0, 1), x)


@probe(_x)
def sequence_mul_add(x):
    p = (1, 2, 3)
    q = [1, 2]
    return (p.__mul__(2), p * 0, _err(p.__mul__), _err(p.__mul__, 2.2), p + (4,), _err(p.__add__, [4]),
            q * 2, 2 * q, q + [3], _err(lambda: q + (3,)), x)


@probe(_x)
def sequence_comparisons(x):
    return ((1, 2) < (1, 2, 3), [1, 2] <= [1, 2], ("a", "b") > ("a",), [3] >= [2, 9],
            (1, 2) == (1, 2), [1] != [1], (1, 2).__lt__((1, 3)), _err(lambda: (1,) < [1]),
            (1, 2).__eq__([1, 2]), _err(lambda: [1] < ["a"]), x)


@probe(_x)
def sequence_dunder_getitem_contains_iter(x):
    p = list("abc")
    it = p.__iter__().__iter__()
    return (p.__getitem__(2), _err(p.__getitem__, 10), _err(p.__getitem__), p.__contains__("a"),
            _err(p.__contains__, 1, 2), next(it), tuple("ab").__getitem__(slice(None, None, -1)), x)


@probe(_x)
def repeated_tuple_in_list_is_same_object(x):
    tree = (1, 2)
    res = [tree] * 2
    res2 = [[0]] * 2
    res2[0].append(1)
    return res[0] is res[1], res2, x


@probe(_x)
def list_append_copy_clear_extend_insert(x):
    p = list("abc")
    out = [p.append("d"), _err(p.append), _err(p.append, 2, 3), p.copy() == p, p.copy() is p, _err(p.copy, 1)]
    out += [p.extend("ef"), _err(p.extend, 1), p.insert(1, "z"), p.insert(-1, "y"), p.insert(100, "end"),
            _err(p.insert, 1), list(p)]
    p.clear()
    out += [p, _err(p.clear, 1)]
    return out, x


@probe(_x)
def list_pop_remove(x):
    p = list("abcd")
    out = [p.pop(), p.pop(1), _err(p.pop, 2), _err(p.pop, 2, 3), _err([].pop), p.pop(-2)]
    q = list("abad")
    out += [q.remove("a"), list(q), _err(q.remove, "x"), _err(q.remove)]
    return out, x


class AlwaysEq:
    def __eq__(self, other):
        return True


class NeverEq:
    def __eq__(self, other):
        return False


@probe(_x)
def list_remove_uses_item_equality(x):
    p = [AlwaysEq()]
    p.remove(NeverEq())
    item = NeverEq()
    q = [item]
    q.remove(item)
    return len(p), len(q), NeverEq() in [NeverEq()], item in [item], [item].count(item), x


@probe(_x)
def list_reverse_and_sort(x):
    p = list("dbca")
    q = [3, 1, 2]
    return p.reverse(), list(p), p.sort(), list(p), _err(p.reverse, 1), q.sort(reverse=True), q, \
        _err(q.sort, lambda a: a), x


@probe(_x)
def sort_with_cmp_to_key(x):
    def revcmp(a, b):
        return (a < b) - (a > b)
    p = [1, 3, 2]
    p.sort(key=functools.cmp_to_key(revcmp))
    a = list(p)
    p.sort(key=functools.cmp_to_key(revcmp), reverse=True)
    return a, p, sorted([5, 4, 6], key=functools.cmp_to_key(revcmp)), x


class ModKey:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v % 3 < other.v % 3


@probe(_x)
def sort_with_user_class_key_is_stable(x):
    p = [3, 4, 5, 6, 7]
    p.sort(key=ModKey)
    a = list(p)
    p.sort(key=ModKey, reverse=True)
    return a, p, sorted(["bb", "a", "ccc", "dd"], key=len), min([3, 4, 5], key=ModKey), x


@probe(_x)
def list_modified_during_sort_raises(x):
    p = [1, 3, 2]

    def cmp(a, b):
        p.append(4)
        return (a > b) - (a < b)
    r = _err(p.sort, key=functools.cmp_to_key(cmp))
    return r, p, x


@probe(_x)
def list_looks_empty_during_sort(x):
    p = [1, 3, 2]
    sizes = []

    def key(v):
        sizes.append(len(p))
        return v
    p.sort(key=key)
    return p, sizes, x


@probe(_x)
def sort_key_raises_leaves_list(x):
    p = [3, "a", 1]
    r = _err(p.sort)
    q = [3, 1, 2]

    def key(v):
        if v == 1:
            raise KeyError("boom")
        return v
    r2 = _err(q.sort, key=key)
    return r, p, r2, q, x


@probe(lambda: (torch.tensor([3.0, 1.0, 2.0]),))
def sorted_with_tensor_keys(x):
    ts = [x * 3, x, x * 2]
    ordered = sorted(ts, key=lambda t: t.sum().item())
    return ordered[0], max(ts, key=lambda t: t.max().item())


@probe(_x)
def list_dunder_imul_iadd(x):
    p = [1, 2, 3]
    r = p.__imul__(2)
    q = list("ab")
    alias = q
    q *= 2
    q += "cd"
    r2 = q.__iadd__(("e",))
    return r is p, p, alias is q, q, r2 is q, _err(p.__imul__, 2.2), _err(p.__imul__), \
        _err(p.__add__, dict.fromkeys("x")), x


GLOBAL_LIST = []


def _reset_global_list():
    global GLOBAL_LIST
    GLOBAL_LIST = ["a", "b", "c"]
    return _x()


@probe(_reset_global_list)
def global_list_in_place_ops(x):
    global GLOBAL_LIST
    GLOBAL_LIST *= 2
    GLOBAL_LIST.__imul__(2)
    GLOBAL_LIST += ["z"]
    del GLOBAL_LIST[1]
    return x.sin(), list(GLOBAL_LIST)


@probe(_reset_global_list)
def global_list_rebound_vs_mutated(x):
    global GLOBAL_LIST
    alias = GLOBAL_LIST
    GLOBAL_LIST = GLOBAL_LIST + ["new"]
    alias.append("old")
    return GLOBAL_LIST, alias, x


@probe(_x)
def list_setitem_and_slices(x):
    p = list("abcdef")
    out = [p.__setitem__(2, "a"), list(p)]
    p[1:3] = ["x", "y", "z"]
    out.append(list(p))
    p[::2] = "123"
    out.append(list(p))
    out.append(_err(p.__setitem__, slice(None, None, 2), "12"))
    out.append(_err(p.__setitem__, slice(1, 3), 1))
    out.append(_err(p.__setitem__, slice(1, 5, 2), 1))
    out.append(_err(p.__setitem__, 1))
    p[0:] = []
    out.append(p)
    return out, x


@probe(_x)
def list_delitem(x):
    p = list("abcdef")
    out = [p.__delitem__(1), list(p), p.__delitem__(slice(1, 3)), list(p),
           _err(p.__delitem__, slice(1, 1, 0)), _err(p.__delitem__), _err(p.__delitem__, 1.1),
           _err(p.__delitem__, 10)]
    q = list(range(10))
    del q[::3]
    del q[-1]
    return out, q, x


@probe(_x)
def list_slice_assignment_from_itself(x):
    p = [1, 2, 3, 4]
    p[1:3] = p
    q = [1, 2, 3]
    q[:] = reversed(q)
    return p, q, x


class ListWithNew(list):
    def __new__(cls, arg, extra=None):
        self = super().__new__(cls)
        self.extra = extra
        return self

    def __init__(self, arg, extra=None):
        super().__init__(arg)


class PlainListSub(list):
    pass


class PlainListSub2(PlainListSub):
    pass


class TupleWithNew(tuple):
    def __new__(cls, arg, extra=None):
        self = super().__new__(cls, arg)
        self.extra = extra
        return self


class TupleWithNew2(TupleWithNew):
    pass


@probe(_x)
def list_subclass_with_new(x):
    a = ListWithNew([1, 2, 3], extra=7)
    b = PlainListSub2.__new__(PlainListSub2, [1, 2], extra="ignored")
    c = PlainListSub2([4])
    d = list.__new__(list, [1, 2], extra="ignored")
    return type(a).__name__, list(a), a.extra, type(b).__name__, list(b), list(c), d, x


@probe(_x)
def tuple_subclass_with_new(x):
    t = TupleWithNew([1, 2], extra=5)
    g = TupleWithNew2([1, 2, 3])
    e = tuple.__new__(tuple, [1, 2])
    return type(t).__name__, tuple(t), t.extra, type(g).__name__, g.extra, e, \
        _err(lambda: tuple.__new__(tuple, [1], extra=1)), x


@probe(_x)
def list_subclass_returned(x):
    a = PlainListSub([1, 2, 3])
    a.append(4)
    return a, x + 1


@probe(lambda: ([1, 2], torch.randn(3)))
def list_argument_aliased_in_place(lst, x):
    alias = lst
    lst += [3]
    lst *= 2
    alias.append(len(lst))
    return alias is lst, x + len(alias)


@probe(lambda: ([1, 2], torch.randn(3)), calls=3)
def list_argument_grows_each_call(lst, x):
    lst.append(len(lst))
    return x * len(lst)


@probe(lambda: ((lambda s: (s, s))([1]) + (torch.randn(3),)))
def same_list_passed_twice(a, b, x):
    a.append(2)
    b.append(3)
    return a is b, list(a), x + len(b)


@probe(lambda: ([[1], [2]], torch.randn(3)))
def nested_list_alias_mutation(lst, x):
    inner = lst[0]
    inner.append(9)
    lst[1] = inner
    lst[1].append(8)
    return lst, lst[0] is lst[1], x + sum(map(len, lst))


@probe(lambda: ([torch.ones(2), torch.zeros(2)], torch.randn(2)))
def list_of_tensors_mutated(lst, x):
    lst.insert(0, x * 2)
    lst.pop()
    lst[1] = lst[1] + 1
    return torch.stack(lst).sum(0)


@probe(lambda: ([3, 1, 2], torch.randn(3)), between=lambda lst, x: lst.append(0))
def list_argument_sorted_copy_between_calls(lst, x):
    s = sorted(lst)
    return x * s[0] + len(s), s


@probe(lambda: ([3, 1, 2], torch.randn(3)))
def list_argument_sorted_in_place(lst, x):
    lst.sort()
    lst.reverse()
    return x * lst[0]


@probe(_x)
def min_max_with_key_and_default(x):
    return (min([3, 1, 2], key=lambda v: -v), max("abc", "b", key=ord), min([], default=None),
            max([], default="empty", key=len), _err(min, []), _err(max, 1), _err(min, [1], [2], default=0),
            max([1, 3, 3.0], key=int), min((2, "a"), (2, "b")), x)


@probe(_x)
def sorted_keyword_forms(x):
    data = [("b", 2), ("a", 2), ("c", 1)]
    return (sorted(data, key=lambda t: t[1]), sorted(data, key=lambda t: t[1], reverse=True),
            sorted(data, reverse=True), _err(sorted, data, lambda t: t), _err(sorted),
            sorted({"b": 1, "a": 2}), sorted("hello"), x)


@probe(_x)
def builtins_with_keywords(x):
    return (sum([1, 2, 3], start=10), sum([[1], [2]], []), list(enumerate("ab", start=5)),
            int("ff", base=16), round(2.675, ndigits=2), list(zip("ab", [1, 2], strict=True)),
            _err(lambda: list(zip("ab", [1], strict=True))), print.__name__, divmod(-7, 2),
            pow(3, 4, mod=5), x)


@probe(_x)
def any_all_short_circuit(x):
    seen = []

    def check(v):
        seen.append(v)
        return v > 1
    return any(check(v) for v in [0, 2, 5]), all(check(v) for v in [3, 0, 9]), seen, any([]), all([]), x


@probe(_x)
def map_filter_zip_reversed(x):
    d = {"a": 1, "b": 2, "c": 3}
    d["a"] = d.pop("a")
    return (list(map(lambda a, b: a * b, [1, 2, 3], (4, 5))), list(filter(None, [0, 1, "", "x", None])),
            list(reversed(d)), list(reversed(range(1, 7, 2))), list(zip(*[(1, 2), (3, 4)])),
            list(reversed([1, 2, 3])), _err(reversed, {1, 2}), x)


@probe(_x)
def len_and_bool_of_containers(x):
    return len(()), len([1]), len({1: 2}), len({1, 2}), len(range(0, 10, 3)), bool(()), bool([0]), \
        _err(len, 5), _err(len, iter([1])), x


@probe(_x)
def unpacking_and_star(x):
    a, *b, c = [1, 2, 3, 4]
    (d, e), f = (5, 6), 7
    first, *rest = "xyz"
    return a, b, c, d, e, f, first, rest, [*range(2), *"ab"], (*b, *(9,)), _err(lambda: [*1]), x


@probe(_x)
def unpack_wrong_length_errors(x):
    def two():
        a, b = [1, 2, 3]
        return a, b

    def three():
        a, b, c = (1, 2)
        return a, b, c

    def star():
        a, b, *c = [1]
        return a, b, c
    return _err(two), _err(three), _err(star), x


@probe(_x)
def tuple_hash_and_identity(x):
    t = (1, "a", (2, 3))
    return hash(t) == hash((1, "a", (2, 3))), _err(hash, (1, [2])), tuple(t) is t, t[:] is t, x


@probe(_x)
def list_comparison_with_tensors_raises(x):
    return _err(lambda: [x] == [x + 1]), [x] == [x] if False else len([x]), x


@probe(_x)
def deque_methods(x):
    d = collections.deque([1, 2, 3], maxlen=4)
    d.append(4)
    d.append(5)
    d.appendleft(0)
    d.rotate(1)
    r = d.popleft()
    d.extendleft([7, 8])
    return list(d), r, d.maxlen, d.count(2), _err(collections.deque().pop), x


@probe(_x)
def range_behaviours(x):
    r = range(2, 20, 3)
    return (r[1], r[-1], r[1:3], list(r[::-1]), 8 in r, 9 in r, r.index(8), r.count(5), len(r),
            _err(r.index, 9), range(0) == range(2, 2), _err(lambda: r[100]), x)


@probe(_x)
def dict_ordering_after_changes(x):
    d = {"b": 1, "a": 2}
    d["c"] = 3
    del d["b"]
    d["b"] = 4
    d.update(a=5)
    return list(d), list(d.items()), list(dict.fromkeys("hello")), d.popitem(), list(d), x


# ---- sys


@probe(_x)
def sys_exc_info_in_except(x):
    try:
        raise ValueError
    except Exception:
        typ, val, tb = sys.exc_info()
        if typ is ValueError:
            return x.sin(), type(val).__name__, tb is not None
        return x.cos()


@probe(_x)
def sys_exc_info_outside_except(x):
    return sys.exc_info(), sys.exception(), x


@probe(_x)
def sys_exc_info_matches_caught(x):
    def f():
        raise ValueError(42)
    try:
        f()
    except Exception as e_:
        e = e_
        info = sys.exc_info()
        cur = sys.exception()
    return info[0] is ValueError, info[1] is e, info[2] is e.__traceback__, cur is e, e.args, x


@probe(_x)
def sys_exc_info_after_nested_handlers(x):
    out = []
    try:
        raise KeyError("outer")
    except KeyError:
        try:
            raise IndexError("inner")
        except IndexError:
            out.append(sys.exc_info()[0].__name__)
        out.append(sys.exc_info()[0].__name__)
    out.append(sys.exc_info()[0])
    return out, x


@probe(_x)
def sys_constants(x):
    return (sys.maxsize > 2 ** 31, sys.version_info >= (3, 8), sys.version_info[:2] == tuple(sys.version_info[:2]),
            sys.byteorder, sys.platform == sys.platform, "torch" in sys.modules, sys.getrecursionlimit() > 10,
            sys.float_info.epsilon, sys.maxunicode, x)


@probe(_x)
def tuple_item_augmented_assignment_mutates_then_raises(x):
    t = ([1],)
    alias = t[0]
    try:
        t[0] += [2]
    except TypeError as e:
        return alias, t, str(e), x + 1
    return x


@probe(lambda: ([1, 2, 3], torch.randn(3)))
def alias_cleared_by_slice_and_imul(lst, x):
    alias = lst
    snapshot = lst[:]
    lst[:] = [9]
    n1 = len(alias)
    lst *= 0
    del snapshot[:1]
    return n1, alias, snapshot, x + len(lst)


@probe(lambda: ({"k": [3, 1, 2]}, torch.randn(3)))
def list_in_dict_sorted_through_alias(d, x):
    lst = d["k"]
    lst.sort(reverse=True)
    d["j"] = lst
    lst.append(0)
    return d, x * d["j"][0]


class BadLt:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        if self.v == 2 or other.v == 2:
            raise ValueError("no order")
        return self.v < other.v

    def __repr__(self):
        return f"B{self.v}"


@probe(_x)
def sort_comparison_raises_midway(x):
    p = [BadLt(3), BadLt(1), BadLt(2), BadLt(0)]
    try:
        p.sort()
    except ValueError as e:
        return [b.v for b in p], str(e), x
    return x


@probe(_x)
def chained_assignment_shares_list(x):
    a = b = []
    a.append(1)
    b += [2]
    a = a + [3]
    return a, b, x + len(b)


@probe(lambda: ([torch.ones(2), torch.zeros(2)], torch.randn(2)))
def list_of_tensors_extended_by_itself(lst, x):
    lst.extend(lst)
    lst += lst[:1]
    return len(lst), torch.stack(lst).sum(0) + x


@probe(_x)
def set_update_with_dict_keys_and_items(x):
    s = {1}
    s.update({2: "a", 3: "b"}, {4: 0}.keys(), [(5, 6)])
    return sorted(s, key=str), x
