"""Probes restating behaviours torch's dynamo function tests rely on (part 4): objects of the program's
classes (value-equal keys, the old iteration protocol, __index__, in-place operators without __iadd__,
__eq__ returning other things), unbound dunders of builtins (NotImplemented), inspect, and set orders."""
import dataclasses
import functools
import inspect

import torch

from . import probe


def _t():
    return (torch.randn(4),)


class _Key:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Key) and self.v == other.v

    def __hash__(self):
        return hash(self.v)


class _Seq:
    """Iterable by the old protocol: __getitem__ until IndexError."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return i * 10


class _Idx:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


class _AddOnly:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return _AddOnly(self.v + other)


class _AddInPlace(_AddOnly):
    def __iadd__(self, other):
        self.v += other
        return self


class _WeirdEq:
    def __eq__(self, other):
        return [1, 2]

    __hash__ = object.__hash__


class _Loud:
    def __repr__(self):
        return "Loud()"

    def __str__(self):
        return "loud"

    def __format__(self, spec):
        return f"<{spec}>"


class _Counted:
    n = 0

    def __init__(self):
        type(self).n += 1


class _Desc:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.name, 0) * 2

    def __set__(self, obj, value):
        setattr(obj, self.name, value + 1)


class _WithDesc:
    d = _Desc()


class _Props:
    def __init__(self):
        self._x = 1

    @property
    def x(self):
        return self._x

    @x.setter
    def x(self, v):
        self._x = v * 3

    @x.deleter
    def x(self):
        self._x = -1


class _Getattr:
    real = 1

    def __getattr__(self, name):
        if name.startswith("dyn_"):
            return len(name)
        raise AttributeError(name)


@dataclasses.dataclass(order=True, frozen=True)
class _Ver:
    major: int
    minor: int = 0


# ---------------------------------------------------------------- the program's classes

@probe(_t)
def value_equal_keys_in_dict_and_set(x):
    d = {_Key(1): "a", _Key(2): "b"}
    s = {_Key(3)}
    return x + 1, d[_Key(2)], _Key(1) in d, _Key(3) in s, _Key(4) in s, d.get(_Key(9), "none")


@probe(_t)
def value_equal_objects_in_list(x):
    items = [_Key(1), _Key(2)]
    return x + 1, _Key(2) in items, items.index(_Key(2)), items.count(_Key(1)), [_Key(1)] == [_Key(1)]


@probe(_t)
def old_sequence_protocol_iteration(x):
    s = _Seq(3)
    a, b, c = s
    return x + a + b + c, list(s), 20 in s, sum(s), list(enumerate(_Seq(2)))


@probe(_t)
def index_dunder_used_for_indexing(x):
    lst = [10, 20, 30]
    return x[_Idx(1)], lst[_Idx(2)], list(range(_Idx(3))), "abc"[_Idx(0)], lst[_Idx(0):_Idx(2)], hex(_Idx(255))


@probe(_t)
def inplace_without_iadd_rebinds(x):
    a = _AddOnly(1)
    alias = a
    a += 2
    b = _AddInPlace(1)
    alias_b = b
    b += 2
    return x + a.v + b.v, a is alias, b is alias_b, alias.v, alias_b.v


@probe(_t)
def eq_returning_list(x):
    w = _WeirdEq()
    r = w == 3
    return x + 1, r, w != 3, 3 in [w], w in [3]


@probe(_t)
def repr_str_format_dunders(x):
    o = _Loud()
    return x + 1, (repr(o), str(o), f"{o}", f"{o!r}", f"{o:spec}", format(o, "q"), "%s|%r" % (o, o), str([o]))


@probe(_t)
def class_counter_attribute_incremented(x):
    _Counted.n = 0
    for _ in range(3):
        _Counted()
    return x + _Counted.n


@probe(_t)
def descriptor_with_set_name(x):
    o = _WithDesc()
    before = o.d
    o.d = 5
    return x + o.d, before, o.__dict__, type(_WithDesc.__dict__["d"]).__name__


@probe(_t)
def property_setter_and_deleter(x):
    p = _Props()
    p.x = 2
    got = p.x
    del p.x
    return x + got + p.x


@probe(_t)
def getattr_fallback(x):
    g = _Getattr()
    return x + g.real + g.dyn_abc, hasattr(g, "other"), getattr(g, "dyn_q", None), getattr(g, "zz", "dflt")


@probe(_t)
def getattr_fallback_raises(x):
    return _Getattr().missing


@probe(_t)
def dataclass_ordering_and_hash(x):
    vs = [_Ver(1, 2), _Ver(0, 9), _Ver(1)]
    return x + 1, sorted(vs), max(vs), _Ver(1) < _Ver(1, 1), len({_Ver(1), _Ver(1, 0)}), _Ver(2) == _Ver(2, 0)


@probe(_t)
def frozen_dataclass_replace(x):
    v = _Ver(1)
    w = dataclasses.replace(v, minor=3)
    return x + w.minor, v, w, v is w


# ---------------------------------------------------------------- unbound dunders and NotImplemented

@probe(_t)
def unbound_dunders_notimplemented(x):
    return x + 1, (int.__eq__(1, 1.0), float.__eq__(1.0, 1), object.__eq__(1, 1), object.__eq__(1, 2),
                   int.__add__(1, 2.0), int.__lt__(1, 2), str.__add__("a", "b"), list.__len__([1, 2]),
                   tuple.__mul__((1,), 2))


@probe(_t)
def unbound_dunder_wrong_self_raises(x):
    return int.__add__("a", 1), x


@probe(_t)
def dict_unbound_methods(x):
    d = {"a": x}
    return dict.__getitem__(d, "a") + 1, dict.get(d, "zz", 3), dict.__contains__(d, "a"), dict.keys(d)


@probe(_t)
def object_new_and_init(x):
    o = object.__new__(_Props)
    has = hasattr(o, "_x")
    _Props.__init__(o)
    return x + o.x, has


# ---------------------------------------------------------------- inspect and function introspection

def _sig_target(a, b=2, *args, c, d=4, **kw):
    return a


@probe(_t)
def inspect_signature_parameters(x):
    sig = inspect.signature(_sig_target)
    params = sig.parameters
    return x + len(params), list(params), [p.kind.name for p in params.values()], params["b"].default, \
        params["c"].default is inspect.Parameter.empty


@probe(_t)
def inspect_signature_bind(x):
    sig = inspect.signature(_sig_target)
    bound = sig.bind(1, 5, 6, c=3, z=9)
    bound.apply_defaults()
    return x + 1, dict(bound.arguments)


@probe(_t)
def inspect_signature_bind_error(x):
    inspect.signature(_sig_target).bind(1)
    return x


@probe(_t)
def inspect_predicates(x):
    return x + 1, (inspect.isfunction(_sig_target), inspect.isfunction(len), inspect.isbuiltin(len),
                   inspect.isclass(_Key), inspect.ismethod(_Props().__init__), inspect.isgeneratorfunction(_sig_target),
                   inspect.iscoroutinefunction(_sig_target))


@probe(_t)
def inspect_getattr_static(x):
    p = _Props()
    return x + 1, type(inspect.getattr_static(p, "x")).__name__, inspect.getattr_static(p, "_x"), \
        inspect.getattr_static(p, "nope", "dflt")


@probe(_t)
def function_code_and_qualname(x):
    return x + 1, (_sig_target.__code__.co_varnames[:3], _sig_target.__qualname__, _sig_target.__module__.rsplit(".")[-1],  # noqa: E501
                   _sig_target.__kwdefaults__, _sig_target.__defaults__)


@probe(_t)
def partial_introspection(x):
    p = functools.partial(_sig_target, 1, c=3)
    return x + 1, p.args, p.keywords, p.func is _sig_target, list(inspect.signature(p).parameters)


@probe(_t)
def bound_method_attributes(x):
    p = _Props()
    m = p.__init__
    return x + 1, m.__self__ is p, m.__func__ is _Props.__init__, m.__name__


# ---------------------------------------------------------------- set and dict orders

@probe(_t)
def set_of_colliding_ints_order_after_removal(x):
    s = {1, 9, 17}
    s.remove(9)
    s.add(25)
    s.add(2)
    return x + 1, list(s)


@probe(_t)
def set_of_strings_order(x):
    s = {"b", "a", "c"}
    s.discard("a")
    s.add("d")
    return x + 1, sorted(s), len(s)


@probe(_t)
def set_built_from_range_then_pop(x):
    s = set(range(5))
    first = s.pop()
    return x + first, list(s)


@probe(_t)
def dict_reversed_views(x):
    d = {"a": 1, "b": 2, "c": 3}
    del d["b"]
    d["b"] = 4
    return x + 1, list(reversed(d)), list(reversed(d.items())), list(reversed(d.values()))


@probe(_t)
def dict_sorted_items_roundtrip(x):
    d = {"b": 2, "a": 1}
    e = dict(sorted(d.items()))
    return x + 1, list(e), d == e, list(enumerate(d))


@probe(_t)
def zip_star_transpose(x):
    m = [[1, 2, 3], [4, 5, 6]]
    t = list(zip(*m))
    return x + 1, t, [list(r) for r in zip(*t)]


@probe(_t)
def set_frozenset_dict_keys_equality(x):
    return x + 1, ({1, 2} == frozenset({1, 2}), {"a": 1}.keys() == {"a"}, {1: 2}.keys() <= {1, 3},
                   {1: 2}.items() == {(1, 2)}, type({1} | frozenset({2})).__name__, type(frozenset({2}) | {1}).__name__)


@probe(_t)
def string_format_fields(x):
    return x + 1, ("{0[1]}-{a.real}".format([5, 6], a=3), "%(k)s=%(v)d" % {"k": "n", "v": 4},
                   f"{x.shape[0]=}", "{:>{w}}".format("z", w=4), "{!s:^5}".format(None))


@probe(_t)
def negative_zero_results(x):
    return x * -0.0, (repr(round(-0.4, 0)), repr(-0.0 + 0.0), repr(0.0 * -1), repr(round(-0.5)), -0.0 == 0.0)


@probe(_t)
def int_float_bool_conversions(x):
    return x + 1, (int(True), float(False), int(-2.9), int("-0"), bool("False"), int(3.999e2), float("1_000.5"),
                   int("1_0"))


class _HashAs:
    def __init__(self, h):
        self.h = h

    def __hash__(self):
        return self.h


class _LenAs:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


@probe(_t)
def hash_dunder_result_converted(x):
    return x + 1, hash(_HashAs(-1)), hash(_HashAs(2 ** 70)), hash(_HashAs(True))


@probe(_t)
def truth_by_negative_len_raises(x):
    try:
        return x + bool(_LenAs(-1))
    except ValueError as e:
        return x - 1, str(e)


@probe(_t)
def descriptor_with_delete_only_is_data_descriptor(x):
    o = _WithDeleteOnly()
    o.__dict__["d"] = 50
    return x + o.d


class _DeleteOnlyDesc:
    def __get__(self, obj, objtype=None):
        return 1

    def __delete__(self, obj):
        pass


class _WithDeleteOnly:
    d = _DeleteOnlyDesc()
