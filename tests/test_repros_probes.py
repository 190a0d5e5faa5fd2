"""Behaviours from user bug reports (the shapes of torch's test_repros), restated: what a graph may
carry as a constant argument, keyword arguments fx cannot spell, `t.data` with a functionalizing
backend. Each test compares with eager and asserts what was captured."""
import typing

import torch

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend
from helpers import assert_same, standard_test


# -- a graph call never takes a constant its generated code cannot spell --------------------------
def test_typing_form_argument_runs_as_python():
    # torch.jit.isinstance(x, List[str]) went into the graph with `typing.List[str]` as an argument:
    # the generated code named `typing` without importing it (NameError on every call)
    def f(x):
        y = x * 3
        if torch.jit.isinstance(x, typing.List[str]):  # noqa: UP006
            return y * 2
        return y + 1

    standard_test(f, torch.ones(3), frames=2, breaks=1, exact=True)


# -- keyword arguments that are Python keywords ------------------------------------------------------
def test_keyword_named_like_python_keyword_breaks():
    # `t.random_(**{"from": -10, "to": 10})`: fx would write `random_(from = -10, ...)` (SyntaxError)
    def f(t):
        a = t * 2
        b = t.clone().random_(**{"from": -10, "to": 10})
        return a, b + 1

    def run(fn):
        torch.manual_seed(0)
        return fn(torch.zeros(4))
    want = run(f)
    bytegraph.reset()
    cnt = CompileCounter()
    with bytegraph.config.patch(strict=True):
        got = run(bytegraph.compile(f, backend=cnt))
    assert_same(got, want, exact=True)
    assert cnt.frame_count == 2 and len(bytegraph.stats.break_records) == 1


# -- t.data with a functionalizing backend -----------------------------------------------------------
def _data_write_after_save(x):
    out = x.sin()
    x.data.mul_(2)
    return out


def test_write_through_data_keeps_saved_tensor_valid_aot():
    # eager: `.data` has its own version counter, so the write does not invalidate x saved by sin
    x = torch.randn(4)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = _data_write_after_save(x1)
    want.sum().backward()
    cnt = CompileCounterWithBackend("aot_eager")
    with bytegraph.config.patch(strict=True):
        got = bytegraph.compile(_data_write_after_save, backend=cnt)(x2)
    got.sum().backward()         # raised "modified by an inplace operation" when .data was detach()
    assert_same(got, want)
    assert_same(x2.grad, x1.grad)
    assert_same(x2.detach(), x1.detach())
    assert x2._version == x1._version == 0
    assert cnt.frame_count == 1


def test_data_alias_leaving_the_graph_has_its_own_version_counter():
    def f(x):
        return x.data, x + 1

    x = torch.randn(4, requires_grad=True)
    cnt = CompileCounterWithBackend("aot_eager")
    with bytegraph.config.patch(strict=True):
        alias, y = bytegraph.compile(f, backend=cnt)(x)
    saved = x.sin()               # saves x
    alias.mul_(2)                 # eager: x's version counter unchanged
    saved.sum().backward()
    assert x._version == 0 and not alias.requires_grad and alias.data_ptr() == x.data_ptr()
    assert cnt.frame_count == 1


def test_data_reads_stay_in_the_graph_with_eager_backend():
    def f(x):
        out = x.sin()
        x.data.mul_(2)
        return out, x.data + 1

    x = torch.randn(4)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = f(x1)
    cnt = CompileCounter()
    with bytegraph.config.patch(strict=True):
        got = bytegraph.compile(f, backend=cnt)(x2)
    assert_same(got, want)
    assert cnt.frame_count == 1 and cnt.op_count == 5
    got[0].sum().backward()
    want[0].sum().backward()
    assert_same(x2.grad, x1.grad)


# -- torch's pass-through higher-order op -------------------------------------------------------------
def test_wrap_calls_its_function_inline():
    from torch._higher_order_ops.wrap import wrap
    free = torch.randn(3)

    def f(x):
        seen = []

        def inner(a, *, k):
            seen.append(1)
            return a.sin() + free * k
        return wrap(inner, x, k=2), wrap(lambda t: {"c": t.cos()}, x), seen

    got = standard_test(f, torch.randn(3), frames=1, ops=4, breaks=0, fullgraph=True)
    assert got[2] == [1]


# -- @classmethod over @property (Python < 3.13) --------------------------------------------------------
class _Box:
    k = 3

    @classmethod
    @property
    def doubled(cls):
        return cls.k * 2

    @classmethod
    @property
    def point(cls):
        return slice(0, cls.k - 1)


class _SubBox(_Box):
    k = 5


def test_classmethod_property_reads_getter_on_class():
    def f(x):
        x = x.clone()
        x[..., _Box.point] = x[..., _Box.point] * 2
        return x + _Box.doubled + _SubBox.doubled + _SubBox().doubled

    standard_test(f, torch.randn(2, 4), frames=1, breaks=0, fullgraph=True)
    # the class attribute the getter read is guarded
    opt = bytegraph.compile(f, backend=CompileCounter())
    x = torch.randn(2, 4)
    assert_same(opt(x), f(x))
    _SubBox.k = 7
    try:
        assert_same(opt(x), f(x))
    finally:
        _SubBox.k = 5


# -- a TypedDict class called: a plain dict --------------------------------------------------------------
class _Inputs(typing.TypedDict):
    kind: str
    data: torch.Tensor


def test_typed_dict_call_makes_a_dict():
    import os

    def f(x, y):
        obj = _Inputs(kind=int, data=y)
        out = x * obj["data"]
        obj["data"] = 3
        other = _Inputs({"data": x}, total=False)
        return out * obj["data"], type(obj), sorted(other), os.fspath("a/b"), os.fspath(b"c")

    standard_test(f, torch.randn(3), torch.randn(3), frames=1, breaks=0, fullgraph=True)


# -- descriptors with a Python __get__ ------------------------------------------------------------------
class _Scaled:
    def __init__(self, k):
        self.k = k

    def __get__(self, instance, owner):
        if instance is None:
            return self.k
        return instance.v * self.k


class _HasScaled:
    d = _Scaled(3)

    def __init__(self, v):
        self.v = v


class _SubCategorical(torch.distributions.Categorical):
    pass


def test_python_descriptor_get_is_inlined():
    def f(t, obj):
        categ = _SubCategorical(logits=t, validate_args=False)    # probs: a lazy_property
        return categ.log_prob(torch.tensor(2)) + categ.probs + categ.logits, obj.d, _HasScaled.d, _HasScaled(t).d

    standard_test(f, torch.randn(5), _HasScaled(2), frames=1, breaks=0, fullgraph=True)
    # the instance attribute the getter read is guarded
    opt = bytegraph.compile(f, backend=CompileCounter())
    t, obj = torch.randn(5), _HasScaled(2)
    assert_same(opt(t, obj), f(t, obj))
    obj.v = 5
    assert_same(opt(t, obj), f(t, obj))


# -- vars(obj) and obj.__dict__ identity ------------------------------------------------------------------
class _Plain:
    def __init__(self, a):
        self.a = a


class _Slots:
    __slots__ = ("a",)

    def __init__(self):
        self.a = 1


def test_vars_is_the_instance_dict():
    def f(x, o):
        v = vars(o)
        v["b"] = x + 1
        o.c = 3
        t = _Plain(x)
        vt = vars(t)
        del vt["a"]
        try:
            vars(_Slots())
        except TypeError as e:
            err = str(e)
        return v, sorted(v), vt, hasattr(t, "a"), err, vars(o) is o.__dict__, t.__dict__ is vars(t)

    x = torch.randn(2)
    o1, o2 = _Plain(1), _Plain(1)
    want = f(x, o1)
    cnt = CompileCounter()
    with bytegraph.config.patch(strict=True):
        got = bytegraph.compile(f, backend=cnt, fullgraph=True)(x, o2)
    assert_same(got, want)
    assert vars(o2).keys() == vars(o1).keys() and got[-2:] == (True, True)
    assert cnt.frame_count == 1 and cnt.op_count == 1


def test_instance_dict_read_twice_is_one_object():
    def f(x, o):
        t = _Plain(1)
        return x + 1, o.__dict__ is o.__dict__, t.__dict__ is t.__dict__, o.__dict__ is not t.__dict__

    got = standard_test(f, torch.randn(2), _Plain(1), frames=1, breaks=0, fullgraph=True)
    assert got[1:] == (True, True, True)


# -- t.grad = value ---------------------------------------------------------------------------------------
def test_grad_assignment_is_replayed_after_the_graph():
    def f(x, y):
        x._grad = y + 1
        y.grad = x + 2
        return x.grad.data * 2, y._grad.data, x.grad is x._grad

    x = torch.randn(4)
    x0, y0 = x.clone().requires_grad_(), (x * 3).requires_grad_()
    x1, y1 = x.clone().requires_grad_(), (x * 3).requires_grad_()
    want = f(x0, y0)
    cnt = CompileCounter()
    with bytegraph.config.patch(strict=True):
        got = bytegraph.compile(f, backend=cnt, fullgraph=True)(x1, y1)
    assert_same(got, want)
    assert_same(x1.grad, x0.grad)
    assert_same(y1.grad, y0.grad)
    assert cnt.frame_count == 1 and cnt.op_count == 5


def test_grad_assignment_of_another_size_raises_as_eager():
    def f(x, y):
        z = x * 2
        try:
            x.grad = y[:2] + 1
        except RuntimeError as e:
            return z, str(e), x.grad
        return z

    got = standard_test(f, torch.randn(4, requires_grad=True), torch.randn(4), frames=1, breaks=0)
    assert "size" in got[1]


def test_each_device_read_is_a_new_object():
    def f(x, y):
        d = x.device
        return x + 1, x.device is x.device, d is d, x.device is y.device, x.device == y.device, x.dtype is y.dtype

    got = standard_test(f, torch.randn(2), torch.randn(2), frames=1, breaks=0, fullgraph=True)
    assert got[1:] == (False, True, False, True, True)
