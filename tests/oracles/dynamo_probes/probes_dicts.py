"""Dicts: subclasses (with overridden __getitem__/__setitem__/__iter__/keys/__missing__), OrderedDict and
defaultdict, key order and guards on it (probes change a dict they read so that their next call differs),
views (live, set operations, comparisons, .mapping), mappingproxy, instance __dict__, unusual keys, and the
errors dict methods raise."""
import collections
import dataclasses
import enum
import functools
import operator
import types
import typing
import weakref
from collections import OrderedDict, defaultdict

import numpy as np
import torch

from . import probe


class SimpleDict(dict):
    pass


class MethodDict(dict):
    def add_1(self, x):
        return x + 1


class SetItemDict(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value + 1)


class ReversedIterDict(dict):
    def __iter__(self):
        return reversed(list(self.keys()))


class KeysDict(dict):
    def keys(self):
        return ["bar", "foo"]


class GetItemDict(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __getitem__(self, key):
        self.calls += 1
        return super().__getitem__(key) + 1


class MissingDict(dict):
    def __missing__(self, key):
        return ("missing", key)


class DotDict(dict):
    __getattr__ = dict.get
    __setattr__ = dict.__setitem__
    __delattr__ = dict.__delitem__


class OdKeys(OrderedDict):
    def keys(self):
        return super().keys()


class OdOverride(OrderedDict):
    def get(self, key, default=None, /):
        return default

    def move_to_end(self, key, last=True, /):
        self.pop(key)


class Instantier(OrderedDict):
    pass


class NewInitDict(dict):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class FakeMapping:
    def __init__(self, value):
        self._value = value
        self.keys = lambda: ["a", "b", "c"]

    def __getitem__(self, key):
        return self._value


class MappingLike:
    def __init__(self, x):
        self.d = {"a": x, "b": x + 1}

    def keys(self):
        return self.d.keys()

    def __getitem__(self, key):
        return self.d[key]


class BadCmpError(Exception):
    pass


class BadCmp:
    def __eq__(self, other):
        raise BadCmpError

    def __hash__(self):
        return 1


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Prio(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Dim(str, enum.Enum):
    DDP = "ddp"
    FSDP = "fsdp"


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Plain:
    def __init__(self):
        self.a = 3
        self.b = 5


class Scalar:
    def __init__(self):
        self.scalar = 10

    def __eq__(self, other):
        return type(other) is Scalar and other.scalar == self.scalar


class DictBacked:
    def __init__(self, x):
        self.__dict__["x"] = x

    @property
    def x(self):
        return self.__dict__["x"]

    @x.setter
    def x(self, value):
        self.__dict__["x"] = value

    def __eq__(self, other):
        return type(other) is DictBacked and other.__dict__ == self.__dict__


G_SD = SimpleDict()
G_D = {}
G_OD = OrderedDict()
G_WEAK = weakref.WeakKeyDictionary()
G_KEYS = [torch.nn.Module(), torch.nn.Module()]


def _reset():
    G_SD.clear()
    G_SD.update({2: 5, 4: 10})
    G_SD.attr = 4
    G_D.clear()
    G_D.update({"a": 2, "b": 3, "c": 5})
    G_OD.clear()
    G_OD.update([(2, 4), (3, 5)])
    G_OD.move_to_end(2)
    G_WEAK.clear()
    G_WEAK[G_KEYS[0]] = 2


def _t():
    _reset()
    return (torch.randn(4),)


def _td(d):
    def make():
        _reset()
        return (torch.randn(4), d())
    return make


# -- subclasses -------------------------------------------------------------------------------------

@probe(_t)
def subclass_built_with_kwargs(x):
    sd = SimpleDict(x=5)
    return sd["x"] * x, type(sd).__name__


@probe(_t)
def subclass_local_mutation(x):
    sd = SimpleDict(x=5)
    z = sd["x"] * x
    sd["x"] = 10
    return z * sd["x"], sd


@probe(_t)
def subclass_extra_method(x):
    sd = MethodDict(x=5)
    z = sd["x"] * x
    sd["x"] = 10
    return sd.add_1(z * sd["x"])


@probe(_t)
def str_enum_compares_with_str(x):
    val = x.sin()
    if Dim.DDP == "ddp":
        val = val + x.cos()
    if "ddp" == Dim.DDP:
        val = val + x.cos()
    d = {Dim.DDP: 1, "fsdp": 2}
    return val, d["ddp"], d[Dim.FSDP], Dim("ddp") is Dim.DDP


@probe(_t)
def global_subclass_read_then_changed(x):
    for value in G_SD.values():
        x = x * value
    for key in G_SD:
        x = x * key
    for k, v in G_SD.items():
        x = x * k * v
    x = x * (2 if 1 in G_SD else 3)
    x = x * G_SD.get(2, 0) * G_SD.get(3, 4)
    x = len(G_SD) * x * G_SD.attr
    G_SD[6] = 15
    G_SD.attr += 1
    return x


@probe(_td(lambda: SimpleDict({2: 5, 4: 10})))
def subclass_argument_mutated(x, sd):
    for value in sd.values():
        x = x * value
    sd[6] = 14
    for key in sd:
        x = x * key
    for k, v in sd.items():
        x = x * k * v
    x = x * (2 if 1 in sd else 3)
    return x * sd.get(2, 0) * sd.get(3, 4) * len(sd)


@probe(_t)
def subclass_returned(x):
    sd = SimpleDict(x=5 * x)
    sd["y"] = 10
    return sd


@probe(_t)
def subclass_setitem_override(x):
    sd = SetItemDict(x=5 * x)
    sd["y"] = 10
    sd.update(z=1)
    sd.setdefault("w", 7)
    return sd


@probe(_td(lambda: ReversedIterDict({"foo": 1, "bar": 2})))
def subclass_iter_override(x, d):
    d.sample = 1
    d["baz"] = 4
    return x * d["foo"] * d["bar"], list(d), [k for k in d], list(d.keys()), dict(d), sorted(d)


@probe(_td(lambda: KeysDict({"foo": 1, "bar": 2})))
def subclass_keys_override(x, d):
    return x * d["foo"] * d["bar"], list(d), d.keys(), dict(d), {**d}


@probe(_td(lambda: GetItemDict({"a": 2, "b": 3, "c": 5})))
def subclass_getitem_override_counts(x, d):
    d["d"] = 4
    r = x * d["a"] + d["b"] + d["c"] + d["d"]
    return r, d.calls, d.get("a"), dict(d)["a"]


@probe(_td(lambda: MissingDict({"a": 1})))
def subclass_missing(x, d):
    return x, d["a"], d["zz"], d.get("zz"), "zz" in d


@probe(_t)
def dotdict_get_as_getattr(x):
    config = DotDict({"a": 1, "b": 2})
    config.c = 3
    return x * config.get("a", 3) * config.b, config.zz, dict(config)


@probe(_t)
def subclass_new_init_in_graph(x):
    out = []
    for cls in (NewInitDict,):
        c = cls()
        c["key"] = x
        assert "key" in c
        out.append(c["key"] + 1)
    return out


@probe(_t)
def dict_new_of_subclass(x):
    d = dict.__new__(SimpleDict)
    d["x"] = x * 2
    if isinstance(d, SimpleDict):
        d.attr = 3
    return d, d.attr, type(d).__name__


@probe(lambda: (torch.ones(8), Instantier({"key1": torch.ones(8)})))
def ordered_subclass_contains(x, d):
    if "key1" in d:
        x = x + 2
    if "key2" in d:
        x = x + 4
    d["key2"] = 1
    return x + 8


# -- order and guards ------------------------------------------------------------------------------------

@probe(_td(lambda: {2: 4, 3: 5}), calls=3)
def items_then_reorder(x, d):
    for key, value in d.items():
        x = x * key + value
    d[2] = d.pop(2)
    return x


@probe(_td(lambda: {2: 4, 3: 5}), calls=3)
def keys_then_reorder(x, d):
    for key in d:
        x = x * key + d[key]
    d[3] = d.pop(3)
    return x


@probe(_t, calls=3)
def ordered_values_enumerate_then_move(x):
    y = 0
    for idx, value in enumerate(G_OD.values()):
        if idx == 0:
            y += torch.sin(x * value)
        else:
            y += torch.cos(x * value)
    G_OD.move_to_end(next(iter(G_OD)))
    return y


@probe(_td(lambda: OdKeys([(2, 4), (3, 5)])))
def ordered_subclass_keys_values(x, d):
    d.move_to_end(2)
    y = 0
    for idx, value in enumerate(d.values()):
        y += torch.sin(x * value) if idx == 0 else torch.cos(x * value)
    return y, list(d.keys())


@probe(_t, calls=3)
def unread_key_changes(x):
    r = x * G_D["a"]
    G_D.pop("c", None)
    G_D["d"] = 10
    G_D["a"] += 1
    return r


@probe(_t, calls=3)
def membership_then_insert(x):
    r = x * 2 if "z" in G_D else x * 3
    G_D["z"] = 1
    return r, len(G_D)


@probe(_t, calls=3)
def popitem_of_global(x):
    k, v = G_D.popitem()
    if k == "c" and v == 5:
        return x.sin(), k
    return x.cos(), k


@probe(lambda: (torch.randn(3), {"a": torch.randn(3), "b": torch.randn(3)}))
def mutation_returns_same_dict(d_x, d):
    d["c"] = d["a"] + d.pop("b")
    r = d
    return r is d, list(d), d_x


@probe(lambda: (torch.zeros(1), {}))
def copy_does_not_alias(x, d0):
    d1 = d0.copy()
    d1[0] = 1
    return x + 1, d1, d0


@probe(lambda: ({"a": torch.rand(3), "b": torch.rand(3)},))
def values_sum_in_order(d):
    c = 0
    for v in d.values():
        c += v
    d["a"], d["b"] = d["b"], d["a"]
    return c


@probe(lambda: ({collections.namedtuple: None, 3: torch.randn(3)},))
def class_as_key(d):
    r = d[3] * 2 if collections.namedtuple in d else d[3] * 3
    d.pop(collections.namedtuple, None)
    return r


@probe(lambda: (torch.randn(3),))
def tensor_as_key(x):
    y, z = x + 1, x + 2
    d = {x: y, 3: z}
    return d[x] + 3, x in d, (x + 0) in d


@probe(_t)
def module_as_key(x):
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    d = {a: b, 3: a}
    return d[a](x).shape, list(d.values())[1] is a


@probe(lambda: (torch.randn(4), {"a": 2, "b": 3, "c": Scalar()}), calls=3)
def value_object_attribute_changes(x, d):
    r = d["a"] * d["b"] * d["c"].scalar * x
    d["c"].scalar += 1
    d["a"] = 4
    return r


@probe(lambda: (torch.randn(4), {}), calls=3)
def truthiness_then_fill(x, d):
    r = torch.cos(x) if d else torch.sin(x)
    d[len(d)] = 1
    return r


@probe(_t, calls=3)
def weak_key_membership(x):
    if G_KEYS[0] in G_WEAK:
        x = torch.sin(x)
    if G_KEYS[1] in G_WEAK:
        x = torch.cos(x)
    G_WEAK[G_KEYS[1]] = 3
    return x, len(G_WEAK)


# -- construction and update -----------------------------------------------------------------------------

@probe(_t)
def dict_from_mapping_like_with_kwargs(x):
    return dict(FakeMapping(1), x=2), x


@probe(_t)
def update_without_arguments(x):
    d = {"a": x}
    result = d.update()
    return d["a"], result is None, len(d)


@probe(_t)
def update_from_mapping_like(x):
    d = {"a": x - 1}
    result = d.update(MappingLike(x))
    return d["a"], d["b"], result is None, list(d)


@probe(_t)
def update_from_mappingproxy(x):
    source = {"a": x, "b": x + 1}
    d = {"a": x - 1}
    d.update(types.MappingProxyType(source))
    return d["a"], d["b"]


@probe(_t)
def update_bad_sequence_element(x):
    try:
        {}.update([(1, 2, 3)])
    except ValueError as exc:
        return x, str(exc)


@probe(_t)
def update_too_many_args(x):
    try:
        {}.update({}, {})
    except TypeError as exc:
        return x, str(exc)


@probe(_t)
def update_non_mapping(x):
    d = {"a": 1}
    try:
        d.update(1)
    except TypeError as exc:
        return x, str(exc), d


@probe(_t)
def dict_from_zip_count(x):
    tensors = {"args": [x, x + 1, x + 2]}
    return [v[1].shape for v in zip(itertools_count(), tensors["args"])]


def itertools_count():
    import itertools
    return itertools.count()


@probe(_t)
def local_dict_iteration(x):
    z = {"my": 1, "const": 2, "dict": 3, "variable": 4}
    tot = 0
    for key in z:
        tot += z[key]
    return x + tot


@probe(_t)
def ordered_dict_update_items_keeps_order(x):
    modules = OrderedDict([("act", 1)])
    nxt = {"fc4": 2, "act3": 3, "act": 4}
    modules.update(nxt.items())
    return x, list(modules.items())


@probe(_t)
def duplicate_keys_collapse(x):
    d = {1: "a", True: "b", 1.0: "c"}  # noqa: F601
    e = {k % 3: k for k in range(7)}
    return x, d, list(d.keys()), type(list(d)[0]).__name__, e


@probe(_t)
def fromkeys_shares_value(x):
    d = dict.fromkeys(["a", "b"], [])
    d["a"].append(1)
    return x, d, d["a"] is d["b"], dict.fromkeys("ab")


@probe(_t)
def setdefault_returns_stored(x):
    d = {}
    lst = d.setdefault("k", [])
    lst.append(x.sum().item() * 0)
    again = d.setdefault("k", [9])
    return x, d, again is lst


@probe(_t)
def delete_and_reinsert_moves_to_end(x):
    d = {"a": 1, "b": 2, "c": 3}
    del d["a"]
    d["a"] = 4
    d["b"] = 5
    return x, list(d.items())


@probe(_t)
def reversed_dict_and_views(x):
    d = {"a": 1, "b": 2, "c": 3}
    return x, list(reversed(d)), list(reversed(d.items())), list(reversed(d.values()))


@probe(_t)
def splat_merge_order(x):
    a = {"a": 1, "b": 2}
    b = {"b": 3, "c": 4}

    def f(**kw):
        return list(kw.items())

    return x, {**a, **b}, {**b, **a}, f(**a, c=9)


@probe(_t)
def splat_duplicate_keyword_error(x):
    a = {"a": 1}

    def f(**kw):
        return kw

    try:
        return f(**a, **{"a": 2})
    except TypeError as e:
        return x, str(e)


@probe(_t)
def change_during_iteration_error(x):
    d = {"a": 1, "b": 2}
    try:
        for k in d:
            d[k + "x"] = 0
    except RuntimeError as e:
        return x, str(e), d


@probe(_t)
def delete_during_iteration_error(x):
    d = {"a": 1, "b": 2}
    try:
        for k in d:
            del d[k]
    except RuntimeError as e:
        return x, str(e), d


# -- defaultdict and OrderedDict ----------------------------------------------------------------------

@probe(_t)
def defaultdict_inplace_union(x):
    d = defaultdict(int, {1: 1, 2: 2})
    d |= [(0, "zero"), (1, "one")]
    result = d.__ior__({3: "three"})
    return (x, result is d, d.default_factory is int, type(d) is defaultdict, dict(d), list(d), d[4])


@probe(_t)
def defaultdict_copies(x):
    import copy
    d = defaultdict(list, {1: 1, 2: 2})
    c1 = d.copy()
    c2 = d.__copy__()
    c3 = copy.copy(d)
    return (x, c1.default_factory is list, c2.default_factory is list, c3.default_factory is list,
            dict(c1), c1 == d, c1[5], 5 in d, type(c3).__name__)


@probe(_t)
def defaultdict_returned(x):
    d = defaultdict(list)
    d[0] = [42]
    d[1].append(x.shape[0])
    return x + 1, d


@probe(_t)
def defaultdict_without_factory(x):
    out = []
    for d in (defaultdict(), defaultdict(None), defaultdict(None, {1: 10})):
        try:
            d[1] += 42
        except KeyError:
            d[1] = 1
        out.append(dict(d))
    return x + 1, out


@probe(_t)
def defaultdict_from_dict_and_kwargs(x):
    d = dict([("a", 1), ("b", 2)], c=3)
    dd = defaultdict(list, d, d=4, e=5)
    dd["x"].append(42)
    return x + 1, d, dd


@probe(_t)
def defaultdict_factory_only_on_getitem(x):
    calls = []

    def factory():
        calls.append(1)
        return len(calls)

    d = defaultdict(factory)
    got = (d.get("a"), "a" in d, d["a"], d["b"], d.setdefault("c", 0), d.pop("zz", None))
    return x, got, calls, dict(d)


@probe(_t)
def defaultdict_iterate_and_update(x):
    d = defaultdict(list)
    d[0] = 42
    for k in d:
        d[k] += 1
    return x + 1, d


@probe(_t)
def ordered_dict_kwargs_and_repr(x):
    od = OrderedDict(a=1, b=2)
    return x + od["a"], repr(od), str(dict(od))


@probe(_t)
def ordered_dict_from_generator(t):
    def whoo(v):
        yield 1, v + 1
        yield 2, v + 2
    return OrderedDict(whoo(t))


@probe(_t)
def enum_from_ordered_dict(x):
    od = OrderedDict(a=1, b=2)
    E = enum.Enum("E", od)
    return x + E.a.value, [m.name for m in E]


@probe(_t)
def defaultdict_isinstance(x):
    dd = defaultdict(int, a=1, b=2)
    return x + dd["a"], isinstance(dd, defaultdict), isinstance(dd, dict), isinstance({}, defaultdict)


@probe(_t)
def ordered_move_to_end_and_popitem(x):
    d = OrderedDict.fromkeys("abcde")
    d.move_to_end("b")
    s1 = "".join(d)
    OrderedDict.move_to_end(d, "a")
    s2 = "".join(d)
    d.move_to_end("a", last=False)
    s3 = "".join(d)
    try:
        d.move_to_end("zz")
    except KeyError as e:
        err = e.args
    return x, s1, s2, s3, err, d.popitem(last=False), d.popitem(), d.popitem(False), list(d)


@probe(_t)
def ordered_equality_is_order_sensitive(x):
    a = OrderedDict.fromkeys("abc")
    b = OrderedDict.fromkeys("bca")
    return x, a == b, dict(a) == dict(b), a == dict(b)


@probe(_t)
def ordered_subclass_overrides(x):
    p = OdOverride({"a": 1, "b": 2, "c": 3})
    p.move_to_end("a")
    return x, list(p.keys()), p.get("b", 9)


@probe(_t)
def ordered_move_to_end_local(x):
    d = OrderedDict({"a": torch.cos(x), "b": 3, "c": 5})
    d.move_to_end("a")
    return d


@probe(_t)
def union_result_types(x):
    dd = defaultdict(int, {1: 1, 2: 2})
    od = OrderedDict({3: 3, 4: 4})
    base = {5: 5, 6: 6}
    return x, [type(r).__name__ for r in (dd | od, dd | base, base | dd, od | dd, base | od, base | base)]


@probe(_t)
def ordered_ior_types(x):
    d1 = OrderedDict({"a": 1, "b": 2})
    d2 = OrderedDict({"b": 3, "c": 4})
    d3, d4 = d1.copy(), d2.copy()
    return (x, type(d3.__ior__(d2)).__name__, type(dict.__ior__(d4, d2)).__name__,
            type(dict.__ior__(dict(d3), d2)).__name__, list(d4.items()))


# -- operators ---------------------------------------------------------------------------------------

@probe(lambda: (1,))
def or_with_invalid_type(b):
    a = {"one": torch.ones(1)}
    try:
        return a | b
    except TypeError as e:
        return str(e)


@probe(_t)
def or_and_ior(x):
    a = {"one": x, "two": x + 1}
    b = {"one": x * 2, "three": x + 3}
    c = dict(a)
    c |= b
    return a | b, b | a, a.__or__(b), c, a.__or__(1)


@probe(_t)
def ior_with_pairs_and_generator(x):
    d1 = {"a": 1, "b": 2}
    d2 = {"b": 3, "c": 4}

    def fn(d):
        yield from d.items()

    d3, d4 = d1.copy(), d2.copy()
    return x, d3.__ior__(d2.items()), d4.__ior__(fn(d1))


@probe(_t)
def keys_set_operations(x):
    a = {"one": 1, "two": 2}
    b = {"one": 1, "three": 3}
    out = []
    for op in (operator.or_, operator.and_, operator.xor, operator.sub):
        out.append((sorted(op(a.keys(), b.keys())), sorted(op(b.keys(), a.keys()))))
    return x, out, type(a.keys() | b.keys()).__name__


@probe(_t)
def items_set_operations(x):
    a = {"one": 1, "two": 2}
    b = {"one": 1, "three": 3}
    out = []
    for op in (operator.or_, operator.and_, operator.xor, operator.sub):
        out.append(sorted(op(a.items(), b.items())))
    return x, out


@probe(_t)
def keys_inplace_ops_rebind(x):
    out = []
    for op in (operator.ior, operator.iand, operator.ixor, operator.isub):
        a = {"one": 1, "two": 2}.keys()
        b = {"one": 1, "three": 3}.keys()
        a = op(a, b)
        out.append((type(a).__name__, sorted(a)))
    d = {"one": 1, "two": 2, "three": 3}
    tmp = d.keys()
    tmp &= {"one", "four"}
    return x, out, tmp, d


@probe(_t)
def keys_vs_set_mixed(x):
    keys = {"one": 1, "two": 2, "three": 3}.keys()
    s = {"one", "four"}
    out = []
    for op in (operator.or_, operator.and_, operator.xor, operator.sub):
        out.append((sorted(op(keys, s)), sorted(op(s, keys))))
    return x, out


@probe(_t)
def view_comparisons_with_sets(x):
    keys = {"one": 1, "two": 2}.keys()
    items = {"one": 1, "two": 2}.items()
    s = {"one", "two", "three"}
    out = []
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        out.append((op(keys, s), op(s, keys), op(keys, items), op(items, {("one", 1)})))
    return x, out


@probe(_t)
def items_compare_values_raise(x):
    d1 = {1: BadCmp()}
    d2 = {1: BadCmp()}
    out = []
    for op in (operator.eq, operator.ne, operator.le, operator.lt):
        try:
            out.append(op(d1.items(), d2.items()))
        except BadCmpError:
            out.append("raised")
    return x, out


@probe(_t)
def items_compare_normal(x):
    d1 = {"a": 1, "b": 2}
    d2 = {"a": 1, "b": 2, "c": 3}
    d3 = {"a": 1, "b": 99}
    return x, (d1.items() == d2.items(), d1.items() <= d2.items(), d1.items() < d2.items(),
               d1.items() == d3.items(), d1.items() <= d3.items(), d2.items() >= d1.items())


@probe(_t)
def dict_eq_key_raises(x):
    try:
        return x, {BadCmp(): 1} == {1: 1}
    except BadCmpError:
        return x, "raised"


@probe(lambda: (torch.tensor(1.0), {1: 2, 3: 4}, {1: 2, 5: 6}))
def compare_argument_dicts(x, d1, d2):
    r = x.sin() if d1 == d2 else x.cos()
    d2.pop(5, None)
    d2[3] = 4
    return r, d1 != d2


@probe(lambda: (torch.tensor(1.0), {1: 2, 3: 4}, {1: 2, 5: 6}))
def or_of_argument_dicts(x, d1, d2):
    d = d1 | d2
    r = x.sin() if d.get(5, False) else x.cos()
    d2.clear()
    return r


@probe(lambda: (torch.tensor(1.0), {1: 2, 3: 4}, {1: 2, 5: 6}))
def ior_into_argument(x, d1, d2):
    d2 |= d1
    return x.sin() if d2.get(3, False) else x.cos()


# -- views, mappingproxy, __dict__ ---------------------------------------------------------------------------

@probe(_t)
def views_are_live(x):
    d = {"a": 1}
    k, v, i = d.keys(), d.values(), d.items()
    d["b"] = 2
    del d["a"]
    return x, list(k), list(v), list(i), len(k), "b" in k, ("b", 2) in i, 2 in v


@probe(_t)
def view_mapping_attribute(x):
    d = {"a": 1, "b": 2}
    m = d.keys().mapping
    d["c"] = 3
    return x, dict(m), type(m).__name__, dict(d.items().mapping) == d, m["a"]


@probe(_t)
def items_view_returned(x):
    d = dict({"a": 1, "b": "2", "c": 3})
    return x, d.items(), type(d.items()).__name__


@probe(_t)
def mappingproxy_of_local(x):
    d = {"a": 2, "b": 3, "c": 5}
    mp = types.MappingProxyType(d)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y += torch.cos(x * v)
    d["d"] = 4
    return y, dict(mp), type(mp).__name__


@probe(_t, calls=3)
def mappingproxy_of_global_mutated(x):
    mp = types.MappingProxyType(G_D)
    y = torch.sin(x * mp["a"])
    for v in mp.values():
        y += torch.cos(x * v)
    G_D["e"] = len(G_D)
    return y, dict(mp)


@probe(_t)
def mappingproxy_is_read_only(x):
    mp = types.MappingProxyType({"a": 1})
    try:
        mp["b"] = 2
    except TypeError as e:
        return x, str(e)


@probe(_t)
def class_dict_copy_then_set_attr(x):
    class Foo:
        b = 4

    d = dict(Foo.__dict__)
    y = torch.sin(x) * d["b"]
    Foo.bar = 3
    return y * Foo.__dict__["bar"], "bar" in d


@probe(_t)
def instance_dict_membership(x):
    obj = Plain()
    if "a" in obj.__dict__:
        x = x * obj.a
    obj.c = 7
    if "c" in obj.__dict__:
        x = x * obj.c
    del obj.b
    return x * obj.__dict__.get("a") * obj.__dict__.get("z", 2), len(obj.__dict__), list(obj.__dict__)


@probe(_t)
def instance_dict_write_visible_as_attribute(x):
    obj = Plain()
    obj.__dict__["a"] = 10
    obj.__dict__["new"] = 1
    return x * obj.a + obj.__dict__["a"] + obj.new, obj.__dict__


@probe(lambda: (DictBacked(3),))
def property_over_instance_dict(obj):
    a = obj.x
    obj.x = a + 1
    obj.__dict__["x"] += 1
    return obj.x, obj.__dict__.get("x")


@probe(_t)
def instance_dict_pop_reinsert_order(x):
    obj = Plain()
    obj.c = 7
    d = obj.__dict__
    d.pop("a")
    d["c"] = 30
    d["e"] = 5
    d["a"] = 20
    return x, list(d), dict(d)


@probe(_t)
def instance_dict_non_str_keys(x):
    obj = Plain()
    d = obj.__dict__
    d[1] = 10
    d[(3, 4)] = 30
    del d["a"]
    return x, dict(d), list(d)


@probe(_t)
def instance_dict_copy_is_separate(x):
    obj = Plain()
    obj.__dict__.copy()["x"] = 4
    return x, "x" in obj.__dict__, sorted(obj.__dict__.items())


# -- keys of many kinds -----------------------------------------------------------------------------------

@probe(_t)
def keys_of_many_kinds(x):
    d = {range(5): x * 2, (1, 2): x * 3, Color.RED: x * 4, Prio.LOW: x * 5,
         frozenset([1, 2]): x * 6, typing.Union[int, str]: x * 7, np.float32: x * 8,
         list.__add__: x * 9, torch.add: x * 10, Point(1, 2): x * 11}
    return (d[range(0, 5, 1)] + d[(1, 2)] + d[Color.RED] + d[1] + d[frozenset([2, 1])]
            + d[typing.Union[str, int]] + d[np.float32] + d[list.__add__] + d[torch.add] + d[Point(1, 2)])


@probe(_t)
def int_enum_key_equals_int(x):
    d = {Prio.LOW: "low", 3: "three"}
    return x, d[1], d[Prio.HIGH], list(d), type(list(d)[0]).__name__


@probe(_t)
def list_key_type_error(x):
    try:
        d = {[1, 2, 3]: x * 2}
        return d[[1, 2, 3]]
    except TypeError as e:
        return x, str(e)


@probe(_t)
def partial_and_namedtuple_keys(x):
    def gn(a, y):
        return a + y

    Container = collections.namedtuple("Container", ["fn", "const"])
    new_gn = functools.partial(gn, a=1)
    d = {new_gn: 5}
    d[Container(new_gn, 4)] = 6
    return x * d[new_gn] * d[Container(new_gn, 4)]


@probe(_t)
def identity_hashed_objects(x):
    class Key:
        def __init__(self, v):
            self.v = v

    k1, k2 = Key(42), Key(42)
    d = {k1: x * 2}
    d[k2] = x * 3
    return d[k1] * d[k2], len(d)


@probe(_t)
def nan_key_identity(x):
    nan = float("nan")
    d = {nan: 1}
    return x, d.get(nan), d.get(float("nan")), nan in d


# -- method errors -------------------------------------------------------------------------------------

@probe(_t)
def method_argument_errors(x):
    d = {"a": 1, "b": 2}
    out = []
    for call in (lambda: d.clear(1), lambda: d.copy(1), lambda: dict.fromkeys(),
                 lambda: dict.fromkeys(1, 2), lambda: d.get(), lambda: d.items(1),
                 lambda: d.keys(1), lambda: d.pop(), lambda: d.setdefault(),
                 lambda: d.setdefault([[]]), lambda: d.values(1), lambda: d.popitem(1)):
        try:
            call()
            out.append("ok")
        except TypeError as e:
            out.append(str(e))
    return x, out


@probe(_t)
def missing_key_errors(x):
    d = {"a": 1}
    out = []
    for call in (lambda: d["zz"], lambda: d.pop("zz"), lambda: d.__delitem__("zz"),
                 lambda: {}.popitem(), lambda: OrderedDict().popitem()):
        try:
            call()
        except KeyError as e:
            out.append((e.args, str(e)))
    return x, out, d.pop("zz", None)


@probe(_t)
def unbound_method_calls(x):
    d = {"a": 1, "b": 2}
    e = dict.copy(d)
    dict.update(e, {"c": 3})
    r = (dict.get(d, "b"), dict.pop(e, "a"), dict.setdefault(e, "f", 5), sorted(dict.keys(e)),
         dict.__eq__(d, e), dict.__ne__(d, e), dict.__or__(d, e), dict.__contains__(d, "a"))
    return x, r


@probe(_t)
def dict_type_identity(x):
    return x, [t is dict for t in (dict, OrderedDict, defaultdict)], type({}) is dict, type(OrderedDict()) is dict


@probe(_t)
def dunder_iter_next(x):
    d = {1: 2, 3: 4}
    it = d.__iter__()
    it2 = iter(d.items())
    return x, next(it), next(it2), list(it), type(it).__name__
