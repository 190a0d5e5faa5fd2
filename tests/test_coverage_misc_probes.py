"""Coverage gaps found by probes restated from torch's test_misc (Python features mixed with tensor
code): each test compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it
fails if the construct ran eagerly."""
from __future__ import annotations

import enum

import numpy as np
import torch

import bytegraph
from helpers import assert_same, compiled, standard_test


class _Bag:
    pass


# -- torch.is_tensor of any object ------------------------------------------------------------------
def test_is_tensor_of_non_tensor_objects_is_folded():
    def fn(obj, y):
        if torch.is_tensor(obj):
            return y + 1
        return y + torch.is_tensor(None) + torch.is_tensor([y]) + torch.is_tensor(y)
    for obj in ({"input": torch.ones(2)}, _Bag(), [1], torch.ones(2)):
        standard_test(fn, obj, torch.randn(2), frames=1, breaks=0)


# -- torch._check with a message function -----------------------------------------------------------
_CHECK_GLOBAL = 1


def test_torch_check_with_message_function_on_known_condition():
    def passes(x):
        torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
        torch._check_index(x.dim() == 1, lambda: f"{_CHECK_GLOBAL} dims")
        return x + 1
    standard_test(passes, torch.randn(4), frames=1, breaks=0)

    log = []

    def caught(x):
        def message():
            log.append(1)      # runs only on failure, as eager's
            return f"{x.shape[0]} is too small"
        try:
            torch._check_value(x.shape[0] > 3, message)
        except ValueError as e:
            return x + 2, str(e)
        return x
    assert standard_test(caught, torch.randn(3), frames=1, breaks=0)[1] == "3 is too small"
    assert log == [1, 1]
    assert standard_test(caught, torch.randn(5), frames=0, breaks=0) is not None
    assert log == [1, 1]
    # uncaught: the same error and message as eager
    assert standard_test(passes, torch.randn(3), frames=0) == "RuntimeError"


# -- itertools.repeat / starmap / takewhile / dropwhile / pairwise / cycle ----------------------------
def _counting(log, n):
    for i in range(n):
        log.append(("gen", i))
        yield i


def test_itertools_repeat_and_ntuple():
    import itertools

    def fn(a):
        return (torch.zeros(torch.nn.modules.utils._pair(a.size()[0])) + a,
                [a * v for v in itertools.repeat(2, 3)], list(itertools.repeat(1, -2)))
    standard_test(fn, torch.randn(2, 2), frames=1, breaks=0)

    def handed_back(x):
        it = itertools.repeat(x, 3)
        next(it)
        return it.__length_hint__(), it, x + 1
    x = torch.randn(2)
    bytegraph.reset()
    opt, cnt = compiled(handed_back)
    got, want = opt(x), handed_back(x)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    assert type(got[1]) is itertools.repeat and got[0] == want[0] == 2
    assert_same(list(got[1]), list(want[1]))
    assert_same(got[2], want[2])


def test_itertools_lazy_iterators_keep_eager_order():
    import itertools
    import operator

    def fn(x):
        log = []

        def pred(v):
            log.append(("pred", v))
            return v < 2
        out = [x + v for v in itertools.takewhile(pred, _counting(log, 5))]
        g = _counting(log, 4)
        out.append(next(itertools.dropwhile(pred, g)))
        out.append(next(g))
        p = itertools.pairwise(_counting(log, 3))
        out.append(next(p))
        log.append("mid")
        out.extend(p)
        c = itertools.cycle([1, 2])
        out.extend([next(c), next(c), next(c)])
        out.extend(itertools.starmap(operator.mul, [(x, 2), (x, 3)]))
        return out, log
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


# -- a class's metaclass protocol (iterating an Enum class, len, in, reversed) ----------------------
class _Color(enum.Enum):
    RED = 1
    GREEN = 2


class _Flag(enum.IntFlag):
    A = 1
    B = 2


class _ItemsMeta(type):
    def __iter__(cls):
        return iter(cls.items)

    def __len__(cls):
        return len(cls.items)


class _Items(metaclass=_ItemsMeta):
    items = [1, 2]


def test_enum_class_iteration_len_contains_reversed():
    def fn(x):
        for c in _Color:
            x = x + c.value
        return (x, len(_Color), list(_Color), _Color.RED in _Color, [c.name for c in reversed(_Color)],
                list(_Flag), len(_Flag))
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


def test_metaclass_iter_is_traced_and_guarded():
    def fn(x):
        return x + sum(_Items), len(_Items), sorted(_Items)
    x = torch.randn(2)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    assert_same(opt(x), fn(x))
    _Items.items = [5, 6, 7]
    try:
        assert_same(opt(x), fn(x))      # what __iter__ read is guarded: a recompile, not a stale answer
    finally:
        _Items.items = [1, 2]
    assert cnt.frame_count == 2 and not bytegraph.stats.break_records


def test_flag_enum_operators_are_traced():
    class _Perm(enum.Flag):
        R = 1
        W = 2

    def fn(x):
        f = _Flag.A | _Flag.B
        return x * int(f), _Flag.A in f, bool(f & _Flag.B), _Perm.R in (_Perm.R | _Perm.W), repr(_Perm.R | _Perm.W)
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


# -- len() and iteration of a traced ndarray ----------------------------------------------------------
def test_ndarray_len_and_iteration():
    def rows(t):
        a = (t + 0).numpy()
        out = []
        for r in a:
            a[1] += 100.0        # the loop sees its own writes, as eager's iterator
            out.append(r * len(a))
        p, q = a
        return torch.from_numpy(np.stack(out)), torch.from_numpy(p + q)
    standard_test(rows, torch.arange(6.0).reshape(2, 3), frames=1, breaks=0)

    def mean(a):
        return a.sum() / len(a)
    standard_test(mean, np.arange(6.0).reshape(2, 3), frames=1, breaks=0)

    def scalar_len(t):
        return len(t.numpy())
    assert standard_test(scalar_len, torch.tensor(1.0), frames=0) == "TypeError"


# -- complex(), vars(), repr() of an exception ------------------------------------------------------
class _Slotted:
    __slots__ = ("a",)


def test_complex_constructor_of_constants_is_folded():
    def fn(x):
        c = complex(1, 2) * 2
        return x * c.real + c.imag, complex("3+4j") + complex(real=1) + complex()
    standard_test(fn, torch.randn(2), frames=1, breaks=0)

    def bad(x):
        return x + 1, complex("bad")
    assert standard_test(bad, torch.randn(2), frames=1) == "ValueError"


def test_vars_of_a_user_object_is_its_dict():
    def made(x):
        o = _Bag()
        o.w = x + 1
        vars(o)["z"] = 3
        return o.w * o.z, sorted(vars(o))
    standard_test(made, torch.randn(2), frames=1, breaks=0)

    def given(x, o):
        o.k = x
        return sorted(vars(o)), vars(o)["k"] + 1
    standard_test(given, torch.randn(2), _Bag(), frames=1, breaks=0)
    assert standard_test(lambda x: (x + 1, vars(_Slotted())), torch.randn(2), frames=1) == "TypeError"


def test_vars_of_a_new_object_returned_holds_a_symbolic_value():
    # the dict of an object made in the frame, returned, holding a number the graph computed from a
    # symbolic int: the number was not made a graph output (an internal error, the frame ran eagerly)
    def f(x, n):
        o = _Bag()
        o.v = n + 2
        return vars(o), x + 1
    opt, cnt = compiled(f)
    for n, x in ((5, torch.ones(2)), (9, torch.ones(2)), (7, torch.ones(2))):
        assert_same(opt(x, n), f(x, n))
    assert cnt.frame_count == 2 and not bytegraph.stats.break_records    # (n made symbolic on the 2nd)


def test_repr_of_a_builtin_exception_is_folded():
    class _Mine(KeyError):
        pass

    def fn(x):
        e = KeyError("a")
        return x + isinstance(e, LookupError), repr(e), repr(_Mine(1, "b")), repr(ValueError())
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


# -- iteration through __getitem__ alone; `in` through iteration ------------------------------------
_SEQ_LOG = []


class _Seq3:
    def __getitem__(self, i):
        _SEQ_LOG.append(i)
        if i >= 3:
            raise IndexError
        return i * 2


class _StopsAt2:
    def __getitem__(self, i):
        if i == 2:
            raise StopIteration
        return i


class _IterOnly:
    def __iter__(self):
        _SEQ_LOG.append("iter")
        return iter([1, 2, 3])


def test_getitem_sequence_iteration_and_iteration_search():
    def fn(x):
        _SEQ_LOG.clear()
        out = x + sum(_Seq3())
        for v in _Seq3():
            _SEQ_LOG.append("body")
            out = out + v
        return out, list(_StopsAt2()), 4 in _Seq3(), 9 in _Seq3(), 2 in _IterOnly(), list(_SEQ_LOG)
    standard_test(fn, torch.randn(2), frames=1, breaks=0)


# -- an input dict keyed by enum members ------------------------------------------------------------
def test_input_dict_with_enum_member_keys():
    def fn(x, d):
        return x * d[_Color.GREEN], _Color.RED in d, list(d)
    d = {_Color.RED: 2, _Color.GREEN: 3}
    standard_test(fn, torch.randn(2), d, frames=1, breaks=0)
    bytegraph.reset()
    opt, cnt = compiled(fn)
    assert_same(opt(torch.ones(2), d), fn(torch.ones(2), d))
    flipped = {_Color.GREEN: 5, _Color.RED: 2}      # the key order is guarded: a recompile
    assert_same(opt(torch.ones(2), flipped), fn(torch.ones(2), flipped))
    assert cnt.frame_count == 2


def test_itertools_groupby_as_cpython():
    import itertools

    def fn(x):
        log = []

        def key(v):
            log.append(v)
            return v // 2
        out = [x * k * len(list(g)) for k, g in itertools.groupby([1, 1, 2, 3, 3])]
        keyed = [(k, list(g)) for k, g in itertools.groupby(range(6), key)]
        stale = [(k, list(g)) for k, g in list(itertools.groupby("aabbbc"))]   # earlier groups: empty
        it = itertools.groupby("aabbc")
        k, g = next(it)
        first = next(g)
        k2, g2 = next(it)
        return out, keyed, log, stale, (k, first, list(g), k2, list(g2), [k for k, _ in it])
    standard_test(fn, torch.randn(2), frames=1, breaks=0)
