"""Exceptions of the program's classes with a Python `__init__`: made, raised, caught and read in one
graph, as CPython makes them (BaseException.__new__ keeps the positional arguments as `args` whether
or not `__init__` calls super), and rebuilt without running `__init__` again when they leave the frame."""
from __future__ import annotations

import pytest
import torch

import bytegraph

from helpers import compiled, outcome, standard_test


class ErrorWithInit(Exception):
    def __init__(self, a, b=None):
        self.a = a
        self.b = b


class ErrorWithSuperInit(ValueError):
    def __init__(self, a, b=None):
        super().__init__(a, b)
        self.total = a + (b or 0)


class ExplicitBaseInit(Exception):
    def __init__(self, msg, code):
        Exception.__init__(self, msg)
        self.code = code


class OwnStr(Exception):
    def __init__(self, t, name):
        self.t = t * 2
        self.name = name

    def __str__(self):
        return f"bad {self.name}"

    def describe(self, suffix):
        return self.name + suffix


class SetsArgs(Exception):
    kind = "fixed"

    def __init__(self, a):
        super().__init__("ignored")
        self.args = (a, "x")


INIT_CALLS = []


class CountsInit(Exception):
    def __init__(self, a, t=None):
        INIT_CALLS.append(a)
        self.t = t


class ReturnsValue(Exception):
    def __init__(self):
        return 1


class Validates(Exception):
    def __init__(self, n):
        if n < 0:
            raise ValueError("negative")
        self.n = n


class WithProperty(Exception):
    def __init__(self, a):
        self.a = a

    @property
    def a(self):
        return 1

    @a.setter
    def a(self, value):
        INIT_CALLS.append(value)


class WithSlots(Exception):
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


class KeyErrorWithInit(KeyError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _t():
    return torch.arange(4.0)


def catch_without_super(t):
    try:
        raise ErrorWithInit(2, b=3)
    except ValueError:
        z = 1
    except ErrorWithInit as e:
        z = (e.args, e.a, e.b, str(e), repr(e))
    return t + 1, z


def catch_with_super(t):
    try:
        raise ErrorWithSuperInit(2, b=3)
    except ValueError as e:
        return t + e.total, e.args, str(e), repr(e), isinstance(e, ErrorWithSuperInit)


def catch_explicit_base_init(t):
    try:
        raise ExplicitBaseInit("m", code=7)
    except ExplicitBaseInit as e:
        return t * e.code, e.args, str(e), repr(e)


def own_str_and_method(t):
    try:
        raise OwnStr(t, "shape")
    except OwnStr as e:
        return e.t + 1, str(e), f"{e}", e.describe("!"), e.args[1], e.args[0] is t


def args_written(t):
    try:
        raise SetsArgs(5)
    except SetsArgs as e:
        return t + e.args[0], e.args, str(e), e.kind


def no_arguments(t):
    try:
        raise ErrorWithInit
    except TypeError as e:
        return t - 1, str(e)


def chained_in_frame(t):
    try:
        try:
            raise ErrorWithInit(1)
        except ErrorWithInit as e:
            first = e
            raise ErrorWithSuperInit(2, 3) from e
    except ErrorWithSuperInit as second:
        return (t + second.total, second.__cause__ is first, second.__context__ is first,
                second.__suppress_context__, second.__cause__.a)


def init_returns_value(t):
    try:
        ReturnsValue()
    except TypeError as e:
        return t + 1, str(e)


def init_raises(t):
    try:
        Validates(-1)
    except ValueError as e:
        return t + 2, str(e)


@pytest.mark.parametrize("fn", [catch_without_super, catch_with_super, catch_explicit_base_init,
                                own_str_and_method, args_written, no_arguments, chained_in_frame,
                                init_returns_value, init_raises])
def test_caught_in_one_graph(fn):
    standard_test(fn, _t(), frames=1, breaks=0)


def _same_values(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        assert torch.equal(g, w) if isinstance(w, torch.Tensor) else g == w


def _same_exception(got, want):
    assert type(got) is type(want)
    _same_values(got.args, want.args)
    assert list(got.__dict__) == list(want.__dict__)
    _same_values(list(got.__dict__.values()), list(want.__dict__.values()))
    assert str(got) == str(want)


def made_and_returned(t):
    e = CountsInit(3, t=t * 2)
    e.extra = "late"
    return t + 1, e


def test_returned_exception_is_rebuilt_without_init():
    INIT_CALLS.clear()
    want = made_and_returned(_t())
    assert INIT_CALLS == [3]
    bytegraph.reset()
    opt, cnt = compiled(made_and_returned)
    INIT_CALLS.clear()
    got = opt(_t())
    assert INIT_CALLS == [3]            # traced once, not run again to rebuild the object
    assert torch.equal(got[0], want[0])
    _same_exception(got[1], want[1])
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def raised_out(t):
    try:
        raise ValueError("first")
    except ValueError:
        raise ErrorWithSuperInit(1, 2)


def raised_from(t):
    raise OwnStr(t, "x") from KeyError("k")


@pytest.mark.parametrize("fn", [raised_out, raised_from])
def test_raised_out_of_the_frame(fn):
    try:
        fn(_t())
    except Exception as e:  # noqa: BLE001
        want = e
    bytegraph.reset()
    opt, _ = compiled(fn)
    try:
        opt(_t())
    except Exception as e:  # noqa: BLE001
        got = e
    _same_exception(got, want)
    assert type(got.__cause__) is type(want.__cause__) and type(got.__context__) is type(want.__context__)
    assert got.__suppress_context__ == want.__suppress_context__
    assert (got.__context__.args if got.__context__ else None) == (want.__context__.args if want.__context__ else None)


def property_write(t):
    try:
        raise WithProperty(4)
    except WithProperty as e:
        return t + e.a


def slots_write(t):
    try:
        raise WithSlots(4)
    except WithSlots as e:
        return t + e.a


def key_error_subclass(t):
    try:
        raise KeyErrorWithInit("k")
    except KeyError as e:
        return t + 1, str(e), e.key


def missing_attribute(t):
    e = ErrorWithInit(1)
    return t + 1, hasattr(e, "zz"), getattr(e, "b")


@pytest.mark.parametrize("fn", [property_write, slots_write, key_error_subclass, missing_attribute])
def test_not_modelled_still_matches_eager(fn):
    INIT_CALLS.clear()
    want = outcome(fn, _t())
    calls = list(INIT_CALLS)
    bytegraph.reset()
    opt, _ = compiled(fn)
    INIT_CALLS.clear()
    got = outcome(opt, _t())
    assert INIT_CALLS == calls
    assert got[0] == want[0]
    _same_values(got[1], want[1])
