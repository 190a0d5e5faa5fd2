"""An autograd.Function whose forward changes an input in place and marks it dirty (`ctx.mark_dirty`):
one graph node whose result is that very input, with its autograd history moved onto the Function's
node, as eager's apply leaves it. Eager's errors (an in-place write into a leaf requiring grad, or a
view of one) are the program's outcome, also with fullgraph. Compared with eager: values, identity,
gradients, errors."""
import warnings

import bytegraph
import pytest
import torch

from bytegraph.testing import CompileCounterWithBackend
from helpers import assert_same


class TimesThree(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


class DirtyNotReturned(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * 3


class WritesWithoutMarking(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g


def _discarded_result(w):
    y = torch.ones(2, 2) @ w
    TimesThree.apply(y)
    return y.sum()


def _same_object(w):
    y = w * 2
    z = TimesThree.apply(y)
    return z is y, z + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [_discarded_result, _same_object])
def test_dirty_input_is_the_result(fn, backend):
    w = torch.eye(2, requires_grad=True)
    w2 = w.detach().clone().requires_grad_()
    cnt = CompileCounterWithBackend(backend)
    got = bytegraph.compile(fn, backend=cnt, fullgraph=True)(w)
    want = fn(w2)
    assert_same(got, want)
    loss = got if isinstance(got, torch.Tensor) else got[1].sum()
    loss.backward()
    (want if isinstance(want, torch.Tensor) else want[1].sum()).backward()
    assert_same(w.grad, w2.grad)
    assert cnt.frame_count == 1


def test_a_graph_input_without_grad_is_written():
    def fn(x):
        return TimesThree.apply(x) + 1
    x, x2 = torch.ones(3), torch.ones(3)
    cnt = CompileCounterWithBackend("eager")
    got = bytegraph.compile(fn, backend=cnt, fullgraph=True)(x)
    assert_same(got, fn(x2))
    assert_same(x, x2)
    assert cnt.frame_count == 1


def test_a_graph_input_whose_history_changes_runs_as_python():
    def fn(x):
        return TimesThree.apply(x) + 1
    base = torch.ones(3, requires_grad=True)
    x, x2 = base * 1, base * 1       # non-leaf inputs: apply moves their history onto its node
    cnt = CompileCounterWithBackend("eager")
    got = bytegraph.compile(fn, backend=cnt)(x)
    want = fn(x2)
    assert_same(got, want)
    assert type(x.grad_fn) is type(x2.grad_fn)
    assert any("autograd history of a graph input" in b.reason for b in bytegraph.stats.break_records)


def _view_of_leaf(x):
    return TimesThree.apply(x.view_as(x))


def _leaf(x):
    return TimesThree.apply(x)


@pytest.mark.parametrize("fn", [_view_of_leaf, _leaf])
@pytest.mark.parametrize("fullgraph", [True, False])
def test_eager_error_on_a_leaf_is_raised(fn, fullgraph):
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        fn(x.detach().clone().requires_grad_())
    with pytest.raises(RuntimeError) as got:
        bytegraph.compile(fn, backend="eager", fullgraph=fullgraph)(x)
    assert str(got.value) == str(want.value)


def _leaf_error_caught(w):
    try:
        w.add_(1)
    except RuntimeError as e:
        return w * 3, str(e)
    return w * 2, ""


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_eager_error_on_a_leaf_is_caught_by_the_program(backend):
    # the program's own exception: its except block is traced, as eager runs it (nothing was written)
    w = torch.randn(3, requires_grad=True)
    cnt = CompileCounterWithBackend(backend)
    got = bytegraph.compile(_leaf_error_caught, backend=cnt, fullgraph=True)(w)
    assert_same(got, _leaf_error_caught(w))
    assert got[1].startswith("a leaf Variable that requires grad")
    assert cnt.frame_count == 1 and cnt.op_count == 1


@pytest.mark.parametrize("cls", [DirtyNotReturned, WritesWithoutMarking])
def test_other_in_place_forwards_still_break(cls):
    def fn(w):
        y = w * 2
        r = cls.apply(y)
        return r, y
    w = torch.randn(3, requires_grad=True)
    cnt = CompileCounterWithBackend("eager")
    opt = bytegraph.compile(fn, backend=cnt)
    outcome = []
    for f in (opt, fn):
        try:
            outcome.append(("ok", f(w)))
        except RuntimeError as e:
            outcome.append(("raise", str(e)))
    assert_same(outcome[0], outcome[1])
    assert bytegraph.stats.break_records


# -- a Function object: `MyFunction().apply(x)` ------------------------------------------------------
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x + x

    @staticmethod
    def backward(ctx, g):
        return g


def _apply_on_object(x):
    return Double().apply(x)


def _registry_and_result(fn, x):
    globals().pop("__warningregistry__", None)
    result = fn(x)
    return result, dict(globals().get("__warningregistry__", {"absent": True}))


def test_apply_on_a_function_object_with_its_warning_ignored():
    x = torch.randn(2, 3, requires_grad=True)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _registry_and_result(_apply_on_object, x)
        cnt = CompileCounterWithBackend("eager")
        got = _registry_and_result(bytegraph.compile(_apply_on_object, backend=cnt, fullgraph=True), x)
    assert_same(got, want)        # the registry made (and versioned) as eager's warn makes it
    assert cnt.frame_count == 1 and cnt.op_count == 1


def test_apply_on_a_function_object_whose_warning_shows_breaks():
    x = torch.randn(2, 3)
    import warnings
    cnt = CompileCounterWithBackend("eager")
    opt = bytegraph.compile(_apply_on_object, backend=cnt)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        want = _apply_on_object(x)
        got = opt(x)
    assert_same(got, want)
    assert [(w.category, str(w.message), w.filename, w.lineno) for w in shown[:1]] == \
        [(w.category, str(w.message), w.filename, w.lineno) for w in shown[1:]]
    assert any("do not ignore" in b.reason for b in bytegraph.stats.break_records)


_ERROR_FILTER = ("error", None, DeprecationWarning, None, 0)


def _filters_changed_after_the_warning(x):
    y = Double().apply(x)
    warnings.filters.insert(0, _ERROR_FILTER)    # eager's warning was issued (and ignored) before this
    return y * 2


def test_a_change_to_the_filters_after_the_warning_is_not_seen_by_it():
    x = torch.randn(2)
    outcomes = []
    cnt = CompileCounterWithBackend("eager")
    for fn in (_filters_changed_after_the_warning,
               bytegraph.compile(_filters_changed_after_the_warning, backend=cnt, fullgraph=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outcomes.append(("ok", fn(x), warnings.filters[0]))
            except DeprecationWarning as e:    # (the warning replayed under the new filters raised)
                outcomes.append(("raise", str(e)))
    assert_same(outcomes[1], outcomes[0])
    assert cnt.frame_count == 1 and cnt.op_count == 2


def test_a_registry_set_to_none_stays_none():
    x = torch.randn(2)
    registries = []
    cnt = CompileCounterWithBackend("eager")
    for fn in (_apply_on_object, bytegraph.compile(_apply_on_object, backend=cnt, fullgraph=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            globals()["__warningregistry__"] = None     # eager's warn then keeps no registry
            fn(x)
            registries.append(globals().pop("__warningregistry__", "absent"))
    assert registries == [None, None]
    assert cnt.frame_count == 1
