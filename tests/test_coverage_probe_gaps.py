"""Constructs of the dynamo probes (tests/oracles/dynamo_probes) that torch.compile captures whole:
each test compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it fails
if the construct ran eagerly."""
from __future__ import annotations

import collections

import torch

import bytegraph

from helpers import assert_same, compiled, standard_test


# -- attributes of a function made in the frame --------------------------------------------------------
def test_function_attributes_set_read_and_returned():
    def fn(x):
        def f():
            return f.flag + len(f.seen)
        f.flag = 3
        f.seen = [x]
        f.flag += 1
        g = lambda: 0   # noqa: E731
        return x + f(), hasattr(g, "flag"), getattr(g, "flag", 7), [f]
    x = torch.ones(2)
    standard_test(lambda x: fn(x)[:3], x, frames=1, breaks=0, fullgraph=True)
    f = bytegraph.compile(fn, backend="eager", fullgraph=True)(x)[3][0]
    assert f.__dict__ == {"flag": 4, "seen": [x]} and f() == 5     # the rebuilt function has them


def test_function_attribute_missing_raises_eagers_error():
    def fn(x):
        def f():
            return 1
        f.a = 1
        return f.b, x
    assert standard_test(fn, torch.ones(2), frames=0) == "AttributeError"


def test_function_type_attribute_write_breaks():
    def fn(x):
        def f(a=1):
            return a
        f.__defaults__ = (2,)
        return x + f()
    standard_test(fn, torch.ones(2), frames=1, breaks=1)     # (the write runs natively, `x + f()` after it)


def test_exit_stack_callback_runs_in_order():
    # ExitStack.callback sets `__wrapped__` on the wrapper function it makes
    import contextlib

    def fn(x, log):
        with contextlib.ExitStack() as stack:
            stack.callback(log.append, "cb")
            stack.callback(lambda: log.append("lambda"))
            log.append("body")
            y = x + 1
        return y
    x = torch.ones(2)
    log = []
    want = fn(x, log), list(log)
    log.clear()
    got = standard_test(lambda x: (fn(x, log), log), x, frames=1, breaks=0, fullgraph=True)
    assert got[1][-3:] == want[1]


# -- a function made by functools.wraps, rebuilt after the graph ----------------------------------------
def _plain(a: int) -> int:
    """doc"""
    return a


def test_wraps_function_rebuilt_like_update_wrapper():
    import functools

    def fn(x):
        def deco(f):
            @functools.wraps(f)
            def inner(*args):
                return f(*args) + 1
            return inner
        g = deco(_plain)
        return x + g(1), [g]
    x = torch.ones(2)
    standard_test(lambda x: fn(x)[0], x, frames=1, breaks=0, fullgraph=True)
    g = bytegraph.compile(fn, backend="eager", fullgraph=True)(x)[1][0]
    assert (g.__name__, g.__qualname__, g.__doc__, g.__module__) == ("_plain", "_plain", "doc", __name__)
    assert g.__wrapped__ is _plain and g.__annotations__ is _plain.__annotations__ and g(1) == 2


def test_contextmanager_decorating_a_recursive_function():
    import contextlib

    def fn(x, state):
        state[:] = [0, 0]

        @contextlib.contextmanager
        def ctx():
            state[1] += 1
            state[0] += 1
            yield
            state[0] -= 1

        @ctx()
        def recursive():     # (its cell holds the wrapper made by functools.wraps: rebuilt at the return)
            if state[0] < 3:
                recursive()
        recursive()
        return x + state[1], list(state)
    standard_test(fn, torch.ones(2), [0, 0], frames=1, breaks=0, fullgraph=True)


# -- zip(strict=True) -------------------------------------------------------------------------------------
def test_zip_strict_raises_eagers_error_lazily():
    def fn(x):
        def gen():
            yield 1
            yield 2
        out = [list(zip()), list(zip(strict=True)), list(zip("ab", [1, 2], strict=True))]
        try:
            for p in zip([1, 2, 3], gen(), strict=True):
                out.append(p)        # the tuples before the shortest end are produced
        except ValueError as e:
            out.append(str(e))
        it = iter([7, 8, 9])
        for args in (([1], [2], it), ([1, 2], [2], it), ([], [1], [2])):
            try:
                list(zip(*args, strict=True))
            except ValueError as e:
                out.append(str(e))
        out.append(list(it))       # "longer" took one item of the longer iterator
        return x + 1, out
    standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)


def test_zip_strict_over_lists_changed_while_iterated():
    def fn(x):
        a, b, out = [1, 2], [3, 4], []
        for p, q in zip(a, b, strict=True):
            out.append(p)
            if p == 1:
                a.append(5)
                b.append(6)
        z = zip([1, 2], [3, 4], strict=True)
        next(z)
        return x + len(out), out, z
    x = torch.ones(1)
    got = standard_test(lambda x: fn(x)[:2], x, frames=1, breaks=0, fullgraph=True)
    assert got[1] == [1, 2, 5]
    z = bytegraph.compile(fn, backend="eager", fullgraph=True)(x)[2]
    assert list(z) == [(2, 4)] and z.__reduce__()[2] is True     # rebuilt strict


# -- classes with a Python __new__ ---------------------------------------------------------------------
class _Made:
    def __new__(cls, a, b=1):
        self = super().__new__(cls)
        self.made = a
        return self

    def __init__(self, a, b=1):
        self.total = a + b


class _MadeSub(_Made):
    pass


class _NotAnInstance:
    def __new__(cls, v):
        return v * 2     # not an instance: __init__ is not called


class _NewOnly:
    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)


class _NewDict(dict):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class _PlainDict(dict):
    pass


def test_python_new_then_init_as_type_call_runs_them():
    def fn(x):
        p, s = _Made(x, b=2), _MadeSub(1)
        d = _NewDict({"a": 1}, b=x)
        d["c"] = x + 1
        e = dict.__new__(_PlainDict)       # empty, not initialized
        e["k"] = 2
        return (p.made + p.total, s.total, type(s).__name__, _NotAnInstance(3), type(_NewOnly(1, k=2)).__name__,
                d, type(d).__name__, "a" in d, e, type(e).__name__)
    standard_test(fn, torch.ones(2), frames=1, breaks=0, fullgraph=True)


def test_init_returning_a_value_raises_eagers_error():
    class WithNew:
        def __new__(cls):
            return object.__new__(cls)

        def __init__(self):
            return 3

    class Plain:
        def __init__(self):
            return "x"

    def fn(x):
        out = []
        for cls in (WithNew, Plain):
            try:
                cls()
            except TypeError as e:
                out.append(str(e))
        return x + 1, out
    standard_test(fn, torch.ones(2), frames=1, breaks=0, fullgraph=True)


def test_dict_new_of_a_non_dict_class_raises_eagers_error():
    def fn(x):
        try:
            dict.__new__(int)
        except TypeError as e:
            return x + 1, str(e)
    standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)


# -- a number given where an iterable is expected ------------------------------------------------------
def _error_of(fn):
    try:
        return fn()
    except TypeError as e:
        return str(e)


def test_non_iterable_numbers_raise_eagers_type_errors():
    import collections
    import itertools
    import math

    def fn(x):
        s = {"a", "b"}
        calls = (lambda: s.issubset(1), lambda: s.union([1], None), lambda: s.isdisjoint(2.0),
                 lambda: sorted(1), lambda: sum(1), lambda: tuple(None), lambda: list(1), lambda: max(1),
                 lambda: set(1.0), lambda: frozenset(1), lambda: dict.fromkeys(1), lambda: collections.deque(1),
                 lambda: math.fsum(1), lambda: itertools.product(1), lambda: 1 in 2, lambda: "a" in None,
                 lambda: [a for a, b in [1]], lambda: [a for a, *b in [None]])
        return x + 1, [_error_of(c) for c in calls]
    standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)


def test_len_of_an_iterator_and_hash_of_a_tuple_with_a_list():
    def fn(x):
        it = iter([1, 2])
        t = (1, "a", (2, 3), x.shape[0])
        return (x + 1, _error_of(lambda: len(it)), _error_of(lambda: len(zip([1]))),
                _error_of(lambda: len(i for i in [1])), _error_of(lambda: len(reversed([1]))),
                hash(t) == hash((1, "a", (2, 3), 3)), _error_of(lambda: hash((1, [2]))),
                _error_of(lambda: hash((1, (2, {3: 4})))), _error_of(lambda: hash({1}.copy())), next(it))
    standard_test(fn, torch.ones(3), frames=1, breaks=0, fullgraph=True)


def test_getrecursionlimit_is_guarded():
    import sys
    from helpers import compiled

    def fn(x):
        return x + 1, sys.getrecursionlimit()
    old = sys.getrecursionlimit()
    opt, cnt = compiled(fn, fullgraph=True)
    try:
        assert opt(torch.ones(1))[1] == old and cnt.frame_count == 1
        sys.setrecursionlimit(old + 7)
        assert opt(torch.ones(1))[1] == old + 7 and cnt.frame_count == 2     # recompiled
    finally:
        sys.setrecursionlimit(old)


# -- an OrderedDict subclass object the frame was given, changed ---------------------------------------
class _OD(collections.OrderedDict):
    pass


class _ODKeys(collections.OrderedDict):
    def keys(self):
        return super().keys()


class _ODHook(collections.OrderedDict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value * 10)


def _run_on_fresh(fn, make, frames, breaks):
    """fn(x, make()) eagerly and compiled (from a clean slate), each on its own object: the same results,
    the objects left equal (items in the same order), `frames` graphs and `breaks` breaks."""
    want_obj, got_obj = make(), make()
    want = fn(torch.ones(1), want_obj)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    got = opt(torch.ones(1), got_obj)
    assert_same(got, want)
    assert list(got_obj.items()) == list(want_obj.items()) and type(got_obj) is type(want_obj)
    assert cnt.frame_count == frames and len(bytegraph.stats.break_records) == breaks


def test_ordered_dict_subclass_argument_changed_like_eager():
    def fn(x, d):
        y = x + 1 if "a" in d else x
        d["z"] = 1
        d["a"] = 5
        d.move_to_end("b", last=False)
        d.pop("c")
        d.popitem(last=False)
        d.setdefault("w", 2)
        d.update(v=3)
        return y, list(d.items()), list(d.keys())
    for cls in (_OD, _ODKeys):
        _run_on_fresh(fn, lambda: cls(a=1, b=2, c=3, d=4), frames=1, breaks=0)


def test_ordered_dict_subclass_with_item_hook_still_breaks():
    def fn(x, d):
        d["k"] = 2
        return x + 1
    # (the store; the method, run natively, meets no tensor and is not traced; `x + 1` after)
    _run_on_fresh(fn, _ODHook, frames=1, breaks=1)


# -- str(), repr() and f-strings of builtin containers -------------------------------------------------
def test_text_of_containers_of_constants():
    def fn(x):
        d = dict(a=1)
        od = collections.OrderedDict(a=1, b=2)
        od.move_to_end("a")
        lst = [1, d]
        lst.append(lst)
        e = {"é": "'"}
        return (x + 1, str(d), f"{d}", str([1, d]), f"{lst!r} {e!a} {od!s} {od}", repr(od), str(od), f"{[1]:}",
                _error_of(lambda: f"{d:>5}"), str({3, 1}), repr(frozenset()))
    standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)


def test_repr_of_a_set_whose_table_differs_from_a_new_sets_breaks():
    def fn(x):
        s = {1, 8, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12}
        for i in (2, 3, 4, 5, 6, 7, 9, 10, 11, 12):
            s.discard(i)     # the table keeps its size: {1, 8} iterates 1, 8 (a new one 8, 1)
        return x + 1, repr(s)
    assert standard_test(fn, torch.ones(1), frames=0, breaks=1)[1] == "{1, 8}"


def test_fromkeys_argument_errors_are_eagers():
    def fn(x):
        od = collections.OrderedDict
        calls = (lambda: dict.fromkeys(), lambda: dict.fromkeys([1], 2, 3), lambda: dict.fromkeys([1], value=2),
                 lambda: od.fromkeys(), lambda: od.fromkeys([1], 2, 3), lambda: od.fromkeys(value=2),
                 lambda: collections.defaultdict.fromkeys([1], value=3))
        return x + 1, [_error_of(c) for c in calls], od.fromkeys(iterable="ab", value=1), dict.fromkeys("ab", 0)
    standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)


# -- an instance's __dict__ entry under the name of a property of its class ----------------------------
class _DictBacked:
    def __init__(self, x):
        self.__dict__["x"] = x

    @property
    def x(self):
        return self.__dict__["x"] * 10

    @x.setter
    def x(self, value):
        self.__dict__["x"] = value + 1


def test_instance_dict_entry_shadowed_by_a_property():
    def fn(x, obj):
        a = obj.x
        obj.x = 2
        obj.__dict__["x"] += 1
        new = _DictBacked(5)
        new.__dict__["x"] = 7
        return x + a, obj.x, obj.__dict__.get("x"), new, new.x, vars(new)

    def make():
        return _DictBacked(3)
    want_obj, got_obj = make(), make()
    want = fn(torch.ones(1), want_obj)
    opt, cnt = compiled(fn, fullgraph=True)
    got = opt(torch.ones(1), got_obj)
    assert_same(got[:3] + got[4:], want[:3] + want[4:])
    assert vars(got_obj) == vars(want_obj) == {"x": 4} and vars(got[3]) == {"x": 7} and cnt.frame_count == 1


def test_truth_of_a_tensor_of_several_elements_raises_eagers_error():
    def fn(x):
        y = x * 2
        out = []
        for test in (lambda: x in [x + 0, 1], lambda: bool(y), lambda: y[:0] or 1, lambda: [y].index(x)):
            try:
                out.append(test())
            except RuntimeError as e:
                out.append(str(e))
        return y + 1, out
    standard_test(fn, torch.randn(4), frames=1, breaks=0, fullgraph=True)


class _DeleteOnly:
    def __get__(self, obj, objtype=None):
        return 1

    def __delete__(self, obj):
        pass


class _WithDeleteOnly:
    d = _DeleteOnly()     # a data descriptor (it has __delete__): it wins over the instance's dict


def test_instance_dict_entry_shadowed_by_a_python_data_descriptor():
    def fn(x):
        o = _WithDeleteOnly()
        o.__dict__["d"] = 50
        return x + o.d, o.__dict__["d"], [o]
    got = standard_test(lambda x: fn(x)[:2], torch.ones(1), frames=1, breaks=0, fullgraph=True)
    assert got[1] == 50
    o = bytegraph.compile(fn, backend="eager", fullgraph=True)(torch.ones(1))[2][0]
    assert vars(o) == {"d": 50} and o.d == 1


def test_itertools_compress_lazy_as_eager():
    import itertools

    def fn(x, log):
        def data():
            for c in "abcde":
                log.append(c)
                yield c
        a = list(itertools.compress("abcd", [1, 0, 1, 0]))
        b = list(itertools.compress(data(), [0, 1, 1]))    # "d" is taken from data, then dropped
        c = itertools.compress(data=[1, 2, 3], selectors=[x.shape[0] > 1, [], "s"])
        next(c)
        return x + 1, a, b, list(log), c, _error_of(lambda: itertools.compress([1], 2))
    got = standard_test(lambda x: fn(x, [])[:4] + fn(x, [])[5:], torch.ones(2), frames=1, breaks=0, fullgraph=True)
    assert got[3] == ["a", "b", "c", "d"]
    c = bytegraph.compile(fn, backend="eager", fullgraph=True)(torch.ones(2), [])[4]
    assert list(c) == [3] and type(c).__name__ == "compress"


def _scale(x, c=1):
    return x * c


def test_duplicate_keyword_error_names_a_global_function_guarded():
    def fn(x):
        try:
            return _scale(x, **{"c": 1}, **{"c": 2})
        except TypeError as e:
            return x + 1, str(e)
    got = standard_test(fn, torch.ones(1), frames=1, breaks=0, fullgraph=True)
    assert got[1] == f"{__name__}._scale() got multiple values for keyword argument 'c'"
    opt, cnt = compiled(fn, fullgraph=True)
    opt(torch.ones(1))
    try:
        _scale.__qualname__ = "renamed"
        assert opt(torch.ones(1))[1].startswith(f"{__name__}.renamed()") and cnt.frame_count == 2
    finally:
        _scale.__qualname__ = "_scale"


def test_name_of_a_numpy_scalar_type_and_ufunc():
    import numpy as np

    def fn(x):
        a = x.numpy()
        return torch.from_numpy(a * 2), type(a.sum()).__name__, np.float32.__qualname__, np.add.__name__
    standard_test(fn, torch.ones(3), frames=1, breaks=0, fullgraph=True)


UNION = int | float


def test_union_type_annotations_fold_as_constants():
    # `X | Y` (types.UnionType) is immutable: its `__args__`, typing.get_args of it and isinstance /
    # issubclass against it trace as for a tuple of its classes (a model reading its annotations)
    import typing

    def f(x, v):
        args = typing.get_args(UNION)
        if isinstance(v, UNION) and issubclass(type(v), int | None):
            x = x + v
        return x * len(args), args, UNION.__args__, isinstance(v, str | None)
    assert standard_test(f, torch.ones(2), 3, frames=1, breaks=0)[1] == (int, float)


def test_lru_cached_method_read_from_an_object_breaks_at_its_call_only():
    # `logger.warning_once(...)` (an lru_cache'd method): reading it binds the cached function to the
    # object (C's method binding); the call runs natively, so the frame keeps a graph on each side
    import functools
    said = []

    class Log:
        @functools.lru_cache(None)
        def once(self, msg):
            said.append(msg)
    log = Log()

    def f(x):
        y = x + 1
        log.once("hello")
        return y * 2
    assert_same(standard_test(f, torch.ones(2), frames=2, breaks=1), torch.full((2,), 4.))
    assert said == ["hello"]        # eager's call filled the cache; the compiled one found it there
