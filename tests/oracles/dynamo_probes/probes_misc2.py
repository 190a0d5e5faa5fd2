"""Probes restating behaviours torch's dynamo misc tests rely on (part 2), aimed at state a program reads
that another part of the process may change between calls: slots, function and class metadata, class
bases, monkeypatched torch functions, numpy arrays and bytearrays mutated in place, os.environ,
context variables, thread-locals, iterators advanced elsewhere, exception objects, defaultdict
factories, weak references."""
import collections
import contextvars
import functools
import itertools
import os
import threading
import weakref

import numpy as np
import torch
import torch.nn.functional as F

from . import probe
from .probes_misc import StateEq


def _x():
    return (torch.randn(3),)


_HELD = [None]     # an argument compared by identity (an iterator, a weak reference) is held here


def _holding(make):
    def make_args():
        _HELD[0] = make()
        return _x()
    return make_args


# ---- slots ---------------------------------------------------------------------------------------------

class Slotted(StateEq):
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1.0


class SlottedChild(Slotted):
    __slots__ = ("c",)


class SlotsAndDict(StateEq):
    __slots__ = ("a", "__dict__")


def _flip_slot_b(o, x):
    if hasattr(o, "b"):
        del o.b
    else:
        o.b = 3.0


@probe(lambda: (Slotted(), torch.randn(3)), calls=4, between=_flip_slot_b)
def slot_set_and_deleted_between(o, x):
    return x * getattr(o, "b", -1.0), hasattr(o, "b")


@probe(lambda: (SlottedChild(), torch.randn(3)), calls=3,
       between=lambda o, x: setattr(o, "b", getattr(o, "b", 0) + 1))
def inherited_slot_set_between(o, x):
    try:
        v = o.b
    except AttributeError:
        v = 0
    return x + v, hasattr(o, "c")


@probe(lambda: (Slotted(), torch.randn(3)), calls=2)
def slot_deleted_inside_then_read(o, x):
    o.b = 2.0
    y = x * o.b
    del o.b
    return y, hasattr(o, "b"), getattr(o, "b", None)


@probe(lambda: (SlotsAndDict(), torch.randn(3)), calls=3,
       between=lambda o, x: setattr(o, "a", 5.0) if not hasattr(o, "a") else setattr(o, "z", 1))
def slots_with_dict_between(o, x):
    return x * getattr(o, "a", 2.0), getattr(o, "z", 0)


@probe(lambda: (Slotted(), torch.randn(3)), calls=2)
def slot_unset_read_raises(o, x):
    try:
        return o.b
    except AttributeError as e:
        return "missing", str(e), x * o.a


# ---- function and class metadata ---------------------------------------------------------------------

def _named(t):
    return t * 2


def _reset_named():
    _named.__name__ = "_named"
    _named.__dict__.clear()
    return _x()


@probe(_reset_named, calls=3, between=lambda x: setattr(_named, "__name__", _named.__name__ + "x"))
def function_name_changed_between(x):
    return _named(x), _named.__name__, len(_named.__name__)


@probe(_reset_named, calls=3, between=lambda x: setattr(_named, "scale", getattr(_named, "scale", 1) + 1))
def function_dict_attr_changed_between(x):
    return x * getattr(_named, "scale", 0)


class BaseA:
    def who(self, t):
        return t + 1


class BaseB:
    def who(self, t):
        return t - 1


class Rebased(BaseA):
    pass


def _reset_bases():
    Rebased.__bases__ = (BaseA,)
    BaseA.who = _BASEA_WHO
    return Rebased()


_BASEA_WHO = BaseA.who


@probe(_holding(_reset_bases), calls=3,
       between=lambda x: setattr(Rebased, "__bases__", (BaseB,) if Rebased.__bases__ == (BaseA,) else (BaseA,)))
def class_bases_changed_between(x):
    o = _HELD[0]
    return o.who(x), isinstance(o, BaseA), len(Rebased.__mro__)


@probe(_holding(_reset_bases), calls=2, between=lambda x: setattr(BaseA, "who", lambda self, t: t * 100))
def base_class_method_patched_between(x):
    return _HELD[0].who(x)


class Named(StateEq):
    pass


def _reset_clsname():
    Named.__name__ = "Named"
    return _x()


@probe(_reset_clsname, calls=3, between=lambda x: setattr(Named, "__name__", Named.__name__ + "!"))
def class_name_changed_between(x):
    return x * len(Named.__name__), type(Named()).__name__


# ---- monkeypatched torch functions --------------------------------------------------------------------

_REAL_RELU = F.relu
_REAL_SIGMOID = torch.sigmoid


def _reset_torch_patches():
    F.relu = _REAL_RELU
    torch.sigmoid = _REAL_SIGMOID
    return _x()


def _patch_relu(x):
    F.relu = (lambda t, inplace=False: t * 0 - 1) if F.relu is _REAL_RELU else _REAL_RELU


@probe(_reset_torch_patches, calls=3, between=_patch_relu)
def functional_relu_monkeypatched_between(x):
    try:
        return F.relu(x)
    finally:
        pass


def _patch_sigmoid(x):
    torch.sigmoid = torch.tanh if torch.sigmoid is _REAL_SIGMOID else _REAL_SIGMOID


@probe(_reset_torch_patches, calls=3, between=_patch_sigmoid)
def torch_sigmoid_monkeypatched_between(x):
    return torch.sigmoid(x)


# ---- numpy, bytearray, array mutated in place ---------------------------------------------------------

@probe(lambda: (torch.randn(3), np.array([1.0, 2.0, 3.0])), calls=3, between=lambda x, a: a.__imul__(2))
def numpy_array_mutated_between(x, a):
    return x * torch.from_numpy(a).float(), float(a.sum())


@probe(lambda: (torch.randn(3), np.array([1, 2, 3])), calls=3, between=lambda x, a: a.__setitem__(0, a[0] + 5))
def numpy_array_python_read_between(x, a):
    n = int(a[0])
    return x * n, a.tolist(), n > 5


@probe(lambda: (torch.randn(3), bytearray(b"ab")), calls=3, between=lambda x, b: b.append(ord("c")))
def bytearray_grows_between(x, b):
    return x * len(b), bytes(b)


@probe(lambda: (torch.randn(3), np.float64(1.5)), calls=2)
def numpy_scalar_arg(x, s):
    return x * s, s * 2, type(s * 2).__name__


@probe(lambda: (torch.randn(3), np.zeros(3)), calls=2)
def numpy_array_mutated_inside(x, a):
    a += 1
    return x + torch.from_numpy(a), a.copy()


# ---- process state -------------------------------------------------------------------------------------

_ENV = "BYTEGRAPH_PROBE_ENV_FLAG"


def _reset_env():
    os.environ.pop(_ENV, None)
    return _x()


def _flip_env(x):
    if _ENV in os.environ:
        del os.environ[_ENV]
    else:
        os.environ[_ENV] = "3"


@probe(_reset_env, calls=3, between=_flip_env)
def os_environ_read_between(x):
    v = os.environ.get(_ENV)
    return x * (int(v) if v else 1), v


_CV = contextvars.ContextVar("probe_cv", default=1)


def _reset_cv():
    _CV.set(1)
    return _x()


@probe(_reset_cv, calls=3, between=lambda x: _CV.set(_CV.get() + 1))
def contextvar_changed_between(x):
    return x * _CV.get()


_TLS = threading.local()


def _reset_tls():
    _TLS.k = 1
    return _x()


@probe(_reset_tls, calls=3, between=lambda x: setattr(_TLS, "k", _TLS.k * 3))
def thread_local_changed_between(x):
    return x * _TLS.k


# ---- iterators and stateful objects as arguments -----------------------------------------------------

@probe(_holding(lambda: iter([1, 2, 3, 4, 5, 6])), calls=3, between=lambda x: next(_HELD[0]))
def iterator_advanced_between(x):
    return x * next(_HELD[0])


@probe(_holding(lambda: itertools.count(3)), calls=3, between=lambda x: next(_HELD[0]))
def count_advanced_between(x):
    return x * next(_HELD[0])


@probe(lambda: (torch.randn(3), collections.deque([1, 2], maxlen=3)), calls=3,
       between=lambda x, d: d.append(len(d) + 10))
def deque_arg_changed_between(x, d):
    return x * d[-1], list(d), d.maxlen


@probe(lambda: (torch.randn(3), collections.defaultdict(int)), calls=3,
       between=lambda x, d: setattr(d, "default_factory", (lambda: 7) if d.default_factory is int else int))
def defaultdict_factory_changed_between(x, d):
    v = d["missing"]
    del d["missing"]
    return x * v


@probe(lambda: (torch.randn(3), collections.Counter("aab")), calls=3, between=lambda x, c: c.update("b"))
def counter_arg_updated_between(x, c):
    return x * c["b"], c.most_common(1)


@probe(lambda: (torch.randn(3), collections.OrderedDict(a=1, b=2)), calls=3,
       between=lambda x, d: d.move_to_end(next(iter(d))))
def ordered_dict_reordered_between(x, d):
    return x * next(iter(d.values())), list(d)


@probe(lambda: (torch.randn(3), ValueError("a", 1)), calls=3,
       between=lambda x, e: setattr(e, "args", e.args + (len(e.args),)))
def exception_args_changed_between(x, e):
    return x * len(e.args), e.args


class Target(StateEq):
    def __init__(self, k):
        self.k = k


_KEEP = []


def _weak():
    _KEEP.clear()
    t = Target(2.0)
    _KEEP.append(t)
    return weakref.ref(t)


@probe(_holding(_weak), calls=2, between=lambda x: _KEEP.clear())
def weakref_referent_dies_between(x):
    o = _HELD[0]()
    return x * (o.k if o is not None else -1.0), o is None


@probe(_holding(lambda: functools.partial(max, 3)), calls=2)
def partial_of_builtin_held(x):
    p = _HELD[0]
    return x * p(1), p.args, p.func is max
