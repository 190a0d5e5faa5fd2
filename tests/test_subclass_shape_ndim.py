"""Tensor subclasses replacing `shape` or `ndim` (a property caching the shape, `ndim` as a method):
compiling reads `size()`/`dim()` on real tensors (guards, fake conversion), never the class's own, so
those tensors are graph values and the class's property or method is traced. Compared with eager:
results, classes, attributes the property sets, and how often it runs."""
import bytegraph
import pytest
import torch

from bytegraph.testing import CompileCounter
from helpers import assert_same

LOG = []


class Counted(torch.Tensor):
    @property
    def shape(self):
        LOG.append("shape")
        return self.size()

    @property
    def ndim(self):
        LOG.append("ndim")
        return 7


class NDimProp(torch.Tensor):
    def __init__(self, *args, **kwargs):
        self._nd = 10

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)

    @property
    def ndim(self):
        return self._nd


class NDimMethod(torch.Tensor):
    def ndim(self):
        return 42

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class ShapeCache(torch.Tensor):
    def to(self, *args, **kwargs):
        new = super().to(*args, **kwargs)
        new.tensor_shape = getattr(self, "tensor_shape", new.data.shape)
        return new

    @property
    def shape(self):
        if not hasattr(self, "tensor_shape"):
            self.tensor_shape = self.size()
        return self.tensor_shape


def _counted(x):
    return x * 2, x.ndim, x.shape


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_property_runs_as_often_as_eager_and_guards_never_call_it(dynamic):
    cnt = CompileCounter()
    opt = bytegraph.compile(_counted, backend=cnt, fullgraph=True, dynamic=dynamic)
    for n in (3, 4, 5, 4):
        x = torch.randn(n, 2).as_subclass(Counted)
        LOG.clear()
        want = _counted(x)
        eager_log = list(LOG)
        LOG.clear()
        got = opt(x)
        assert LOG == eager_log == ["ndim", "shape"]
        assert type(got[0]) is Counted
        assert_same(got, want, exact=True)
    assert cnt.frame_count == {None: 2, True: 1, False: 3}[dynamic]


def _plus_ndim(x):
    return x + x.ndim


def _plus_ndim_call(x):
    return x + x.ndim()


def _shape_cache(x):
    s = x.shape
    y = x.to("cpu")
    return x + 1, y + 2, s, x.tensor_shape, y.tensor_shape


def _classes(value):
    return [type(v) for v in value] if isinstance(value, tuple) else type(value)


@pytest.mark.parametrize("fn,make", [
    (_plus_ndim, lambda: NDimProp(torch.ones(2, 2))),
    (_plus_ndim_call, lambda: torch.nn.Parameter(torch.randn(2, 2).as_subclass(NDimMethod))),
    (_shape_cache, lambda: torch.nn.Parameter(torch.randn(2, 2).as_subclass(ShapeCache))),
], ids=["ndim_property", "ndim_method", "shape_cache"])
def test_replaced_shape_or_ndim_is_one_graph(fn, make):
    torch.manual_seed(0)
    x = make()
    torch.manual_seed(0)
    x2 = make()
    want = fn(x)
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt, fullgraph=True)(x2)
    assert _classes(got) == _classes(want)
    assert_same(got, want)
    assert vars(x2).keys() == vars(x).keys()
    assert cnt.frame_count == 1


class ShapeOfOther(torch.Tensor):
    """A `shape` that is not the sizes: eager's `len(x)` (torch.Tensor.__len__) answers its first item."""
    @property
    def shape(self):
        LOG.append("shape")
        return torch.Size([7, 1])


class ShapeOfOtherWithHook(ShapeOfOther):
    """The same through a __torch_function__ of its own: `Tensor.__len__` reaches it first."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


def _len(x):
    return x * 2, len(x)


@pytest.mark.parametrize("cls", [Counted, ShapeOfOther, ShapeOfOtherWithHook])
def test_len_reads_the_class_shape(cls):
    x = torch.randn(3, 2).as_subclass(cls)
    LOG.clear()
    want = _len(x)
    eager_log = list(LOG)
    LOG.clear()
    cnt = CompileCounter()
    got = bytegraph.compile(_len, backend=cnt, fullgraph=True)(x)
    assert LOG == eager_log and eager_log
    assert_same(got, want)
    assert cnt.frame_count == 1
