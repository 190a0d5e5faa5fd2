"""Probes restating behaviours torch's dynamo misc tests rely on: closures and nonlocal, globals and class
attributes changed between calls, descriptors and properties, __getattr__, dataclasses and namedtuples,
super(), tensor attributes, dtype promotion with Python scalars, shapes used as ints, in-place ops on views,
random state and grad mode."""
import collections
import dataclasses
import enum
import functools
import math
import operator

import torch

from ...helpers import same
from . import probe


class StateEq:
    """Compares by type and attributes (the probe arguments are compared with eager's after the runs)."""
    __slots__ = ()      # (a subclass with __slots__ of its own has no instance dict)

    def _state(self):
        d = dict(getattr(self, "__dict__", {}))
        for klass in type(self).__mro__:
            for k in vars(klass).get("__slots__", ()):
                if k != "__dict__":
                    d[k] = getattr(self, k, "<unset>")
        return {k: getattr(v, "__qualname__", v) if callable(v) and not isinstance(v, torch.Tensor) else v
                for k, v in d.items()}

    def __eq__(self, other):
        return type(other) is type(self) and same(StateEq._state(self), StateEq._state(other), exact=False)

    __hash__ = object.__hash__


def _x():
    return (torch.randn(3, 4),)


def _xy():
    return (torch.randn(3, 4), torch.randn(3, 4))


# ---- globals changed between calls -------------------------------------------------------------------

SCALE = 2.0
FLAG = True
G_LIST = [1, 2]
G_TENSOR = torch.ones(4)
G_DICT = {"a": 1.0}


def _reset_globals():
    global SCALE, FLAG, G_LIST, G_TENSOR, G_DICT
    SCALE, FLAG, G_LIST, G_TENSOR, G_DICT = 2.0, True, [1, 2], torch.ones(4), {"a": 1.0}
    return _x()


def _bump_scale(x):
    global SCALE
    SCALE += 1.5


@probe(_reset_globals, calls=3, between=_bump_scale)
def global_float_changed_between(x):
    return x * SCALE


def _flip_flag(x):
    global FLAG
    FLAG = not FLAG


@probe(_reset_globals, calls=3, between=_flip_flag)
def global_bool_branch_changed_between(x):
    if FLAG:
        return x + 1
    return x - 1


def _append_glist(x):
    G_LIST.append(len(G_LIST) + 1)


@probe(_reset_globals, calls=3, between=_append_glist)
def global_list_grows_between(x):
    for v in G_LIST:
        x = x + v
    return x, len(G_LIST)


def _rebind_gtensor(x):
    global G_TENSOR
    G_TENSOR = torch.full((4,), 3.0)


@probe(_reset_globals, calls=2, between=_rebind_gtensor)
def global_tensor_rebound_between(x):
    return x + G_TENSOR


def _mutate_gtensor(x):
    G_TENSOR.mul_(2)


@probe(_reset_globals, calls=3, between=_mutate_gtensor)
def global_tensor_mutated_between(x):
    return x + G_TENSOR


def _set_gdict(x):
    G_DICT["a"] = G_DICT["a"] + 1
    G_DICT["b"] = 5.0


@probe(_reset_globals, calls=3, between=_set_gdict)
def global_dict_changed_between(x):
    return x * G_DICT["a"] + sum(G_DICT.values()), sorted(G_DICT)


@probe(_reset_globals, calls=3)
def global_counter_written_inside(x):
    global SCALE
    SCALE = SCALE * 2
    return x * SCALE


@probe(_reset_globals, calls=2)
def global_list_appended_inside(x):
    G_LIST.append(x.sum())
    return len(G_LIST), x + len(G_LIST)


@probe(_reset_globals, calls=2)
def global_tensor_inplace_inside(x):
    G_TENSOR.add_(1)
    return x + G_TENSOR, G_TENSOR.clone()


# ---- closures and nonlocal ----------------------------------------------------------------------------

def _make_counter():
    n = 0

    def bump(t):
        nonlocal n
        n += 1
        return t * n
    return bump


_COUNTER = [_make_counter()]


def _reset_counter():
    _COUNTER[0] = _make_counter()
    return _x()


@probe(_reset_counter, calls=3)
def closure_nonlocal_counter_across_calls(x):
    return _COUNTER[0](x)


@probe(_x)
def nonlocal_in_inner_function(x):
    acc = 0

    def add(v):
        nonlocal acc
        acc += v
    for i in range(3):
        add(i)
    return x + acc, acc


@probe(_x)
def nonlocal_tensor_rebound(x):
    y = x

    def step():
        nonlocal y
        y = y * 2
    step()
    step()
    return y, x


@probe(_x)
def closure_created_in_loop_late_binding(x):
    fns = [lambda t: t * i for i in range(3)]
    return [f(x) for f in fns]


@probe(_x)
def closure_default_arg_binding(x):
    fns = [lambda t, i=i: t * i for i in range(3)]
    return [f(x) for f in fns]


@probe(_x)
def closure_cell_changed_after_creation(x):
    k = 1

    def f(t):
        return t + k
    a = f(x)
    k = 10
    return a, f(x)


@probe(_x)
def nested_closure_three_levels(x):
    a = 2

    def outer():
        b = 3

        def inner(t):
            return t * a + b
        return inner
    return outer()(x)


def _make_cell_fn():
    box = {"k": 1.0}

    def f(t):
        return t * box["k"]
    return f, box


_CELLFN = [None, None]


def _reset_cellfn():
    _CELLFN[0], _CELLFN[1] = _make_cell_fn()
    return _x()


def _change_cell(x):
    _CELLFN[1]["k"] += 1


@probe(_reset_cellfn, calls=3, between=_change_cell)
def closure_dict_changed_between(x):
    return _CELLFN[0](x)


def _make_cell_int():
    k = 1

    def f(t):
        return t * k

    def setk(v):
        nonlocal k
        k = v
    return f, setk


_CELLINT = [None, None]


def _reset_cellint():
    _CELLINT[0], _CELLINT[1] = _make_cell_int()
    return _x()


def _set_cell_int(x):
    _CELLINT[1](_CELLINT[0].__closure__[0].cell_contents + 2)


@probe(_reset_cellint, calls=3, between=_set_cell_int)
def closure_int_cell_changed_between(x):
    return _CELLINT[0](x)


@probe(_x)
def closure_returned_and_called_outside(x):
    def make(s):
        return lambda t: t * s
    f = make(x.sum())
    return f(x), f(torch.ones(2))


@probe(_x)
def functools_partial_of_closure(x):
    def f(a, b, c=1):
        return a * b + c
    g = functools.partial(f, c=3)
    return g(x, 2), functools.partial(g, x)(4)


@probe(_x)
def closure_reads_loop_var_after_loop(x):
    for i in range(4):
        pass

    def f():
        return x * i
    return f()


# ---- class attributes, descriptors, properties -------------------------------------------------------

class Cfg:
    factor = 2
    mode = "add"


def _reset_cfg():
    Cfg.factor, Cfg.mode = 2, "add"
    return _x()


def _flip_cfg(x):
    Cfg.factor += 1
    Cfg.mode = "mul" if Cfg.mode == "add" else "add"


@probe(_reset_cfg, calls=3, between=_flip_cfg)
def class_attr_changed_between(x):
    if Cfg.mode == "add":
        return x + Cfg.factor
    return x * Cfg.factor


class Holder(StateEq):
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return t * self.k


def _holder():
    return (Holder(2.0), torch.randn(3))


def _bump_holder(h, x):
    h.k = h.k + 1


@probe(_holder, calls=3, between=_bump_holder)
def instance_attr_changed_between(h, x):
    return h.apply(x)


def _add_instance_override(h, x):
    h.apply = lambda t: t - 100


@probe(_holder, calls=2, between=_add_instance_override)
def instance_method_shadowed_between(h, x):
    return h.apply(x)


class WithProp(StateEq):
    def __init__(self):
        self._v = 1.0
        self.reads = 0

    @property
    def v(self):
        self.reads += 1
        return self._v * 2

    @v.setter
    def v(self, val):
        self._v = val + 1


@probe(lambda: (WithProp(), torch.randn(3)), calls=2)
def property_getter_side_effect(o, x):
    a = x * o.v
    o.v = 3.0
    return a + o.v, o.reads


class Desc:
    def __get__(self, obj, owner=None):
        if obj is None:
            return "cls"
        return obj.base * 10

    def __set__(self, obj, value):
        obj.base = value // 10


class UsesDesc(StateEq):
    d = Desc()

    def __init__(self):
        self.base = 3


@probe(lambda: (UsesDesc(), torch.randn(3)))
def data_descriptor_get_set(o, x):
    a = x + o.d
    o.d = 70
    return a, x + o.d, UsesDesc.d, o.base


class NonDataDesc:
    def __get__(self, obj, owner=None):
        return 5


class UsesNonData(StateEq):
    nd = NonDataDesc()


@probe(lambda: (UsesNonData(), torch.randn(3)))
def non_data_descriptor_shadowed_by_instance(o, x):
    a = x * o.nd
    o.__dict__["nd"] = 7
    return a, x * o.nd


class GetAttrFallback(StateEq):
    def __init__(self):
        self.real = 2.0

    def __getattr__(self, name):
        if name.startswith("scale_"):
            return float(name[6:])
        raise AttributeError(name)


@probe(lambda: (GetAttrFallback(), torch.randn(3)))
def getattr_fallback_dynamic_name(o, x):
    return x * o.real + o.scale_3, hasattr(o, "missing"), getattr(o, "nope", 9)


class GetAttribute(StateEq):
    def __init__(self):
        self.v = 1.0

    def __getattribute__(self, name):
        if name == "v":
            return object.__getattribute__(self, name) + 100
        return object.__getattribute__(self, name)


@probe(lambda: (GetAttribute(), torch.randn(3)))
def getattribute_override(o, x):
    return x + o.v


class SlotsObj(StateEq):
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1.0


@probe(lambda: (SlotsObj(), torch.randn(3)))
def slots_attribute_missing_and_set(o, x):
    has = hasattr(o, "b")
    o.b = 4.0
    return x * o.a + o.b, has


class CachedProp(StateEq):
    def __init__(self):
        self.calls = 0

    @functools.cached_property
    def heavy(self):
        self.calls += 1
        return torch.arange(3.0) * 2


@probe(lambda: (CachedProp(), torch.randn(3)), calls=2)
def cached_property_computed_once(o, x):
    return x + o.heavy + o.heavy, o.calls


class ClsMethods:
    base = 3

    @classmethod
    def make(cls, t):
        return t * cls.base

    @staticmethod
    def st(t):
        return t + 1


class ClsMethodsSub(ClsMethods):
    base = 5


@probe(_x)
def classmethod_on_subclass(x):
    return ClsMethods.make(x), ClsMethodsSub.make(x), ClsMethodsSub().st(x)


@probe(_x)
def setattr_getattr_delattr_builtin(x):
    o = Holder(1.0)
    setattr(o, "extra", 3)
    a = x * getattr(o, "extra")
    delattr(o, "extra")
    return a, hasattr(o, "extra")


@probe(_x)
def object_created_inside_and_returned(x):
    o = Holder(x.sum())
    o.other = x * 2
    return o.apply(x), o.other, type(o).__name__


# ---- super() and inheritance ---------------------------------------------------------------------------

class Base:
    def f(self, t):
        return t + 1

    def g(self, t):
        return self.f(t) * 2


class Mid(Base):
    def f(self, t):
        return super().f(t) * 3


class Leaf(Mid):
    def f(self, t):
        return super().f(t) - 1


@probe(_x)
def super_chain_three_levels(x):
    return Leaf().g(x), Mid().g(x)


class A1:
    def who(self):
        return ["A1"]


class B1(A1):
    def who(self):
        return ["B1"] + super().who()


class C1(A1):
    def who(self):
        return ["C1"] + super().who()


class D1(B1, C1):
    def who(self):
        return ["D1"] + super().who()


@probe(_x)
def super_diamond_mro(x):
    w = D1().who()
    return x * len(w), w


class InitChain:
    def __init__(self, t):
        self.t = t * 2


class InitChainSub(InitChain):
    def __init__(self, t):
        super().__init__(t + 1)
        self.u = self.t + 1


@probe(_x)
def super_init_in_compiled(x):
    o = InitChainSub(x)
    return o.t, o.u


class ExplicitSuper(Base):
    def f(self, t):
        return super(ExplicitSuper, self).f(t) + 10


@probe(_x)
def super_two_arg_form(x):
    return ExplicitSuper().g(x)


@probe(_x)
def isinstance_issubclass_chain(x):
    o = Leaf()
    return x + isinstance(o, Base), issubclass(Leaf, Mid), isinstance(o, (int, Mid)), type(o) is Leaf


# ---- dataclasses and namedtuples ----------------------------------------------------------------------

@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: float = 1.0


@probe(_x)
def dataclass_create_and_read(x):
    p = Pair(x)
    q = Pair(x * 2, b=3.0)
    return p.a * p.b + q.a * q.b


@probe(_x)
def dataclass_replace_and_fields(x):
    p = Pair(x, 2.0)
    q = dataclasses.replace(p, b=5.0)
    return q.a * q.b, [f.name for f in dataclasses.fields(p)]


@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    k: int = 2


@probe(_x)
def frozen_dataclass_setattr_raises(x):
    c = FrozenCfg()
    try:
        c.k = 3
    except dataclasses.FrozenInstanceError:
        return x * c.k
    return x


@dataclasses.dataclass(eq=False)
class MutPair(StateEq):
    a: torch.Tensor
    b: float = 1.0


@probe(lambda: (MutPair(torch.randn(3), 2.0),))
def dataclass_input_mutated(p):
    p.b = p.b + 1
    p.a = p.a * p.b
    return p.a.clone(), p.b


@dataclasses.dataclass
class WithPost:
    x: torch.Tensor
    y: torch.Tensor = None

    def __post_init__(self):
        self.y = self.x + 1


@probe(_x)
def dataclass_post_init(x):
    w = WithPost(x)
    return w.y, dataclasses.astuple(Pair(1, 2.0))


@probe(_x)
def dataclass_eq(x):
    return x * (Pair(1, 2.0) == Pair(1, 2.0)), Pair(1, 2.0) == Pair(1, 3.0)


Point = collections.namedtuple("Point", ["x", "y"])


class Point3(collections.namedtuple("Point3", "a b c")):
    def total(self):
        return self.a + self.b + self.c


@probe(_xy)
def namedtuple_create_index_attr(x, y):
    p = Point(x, y)
    return p.x + p[1], p._replace(y=x), p._fields, len(p)


@probe(_x)
def namedtuple_subclass_method(x):
    p = Point3(x, 2, 3)
    return p.total(), type(p).__name__, isinstance(p, tuple)


@probe(lambda: (Point(torch.randn(3), torch.randn(3)),))
def namedtuple_input(p):
    a, b = p
    return Point(a * 2, b + 1), p._asdict()


class TypedPoint(__import__("typing").NamedTuple):
    u: torch.Tensor
    v: int = 3


@probe(_x)
def typing_namedtuple_default(x):
    p = TypedPoint(x)
    return p.u * p.v, p


# ---- enums -------------------------------------------------------------------------------------------

class Mode(enum.Enum):
    A = 1
    B = 2


class Flag(enum.IntFlag):
    R = 1
    W = 2


@probe(lambda: (torch.randn(3), Mode.A), calls=2)
def enum_arg_branch(x, m):
    if m is Mode.A:
        return x + m.value
    return x * m.value


@probe(_x)
def intflag_ops(x):
    f = Flag.R | Flag.W
    return x * int(f), bool(f & Flag.W), Mode(2).name


# ---- tensor attributes --------------------------------------------------------------------------------

@probe(lambda: (torch.randn(2, 3, 4),))
def tensor_shape_as_ints(x):
    n, c, w = x.shape
    return x.reshape(n * c, w), x.size(-1) * 2, x.dim(), x.ndim, x.numel(), len(x)


@probe(lambda: (torch.randn(2, 3),))
def tensor_meta_attrs(x):
    return x.dtype, x.device.type, x.is_floating_point(), x.requires_grad, x.is_leaf, x.layout, x.T, x.mT


@probe(lambda: (torch.randn(3, 4),))
def tensor_stride_storage_offset(x):
    v = x[1:, ::2]
    return v.stride(), v.storage_offset(), v.is_contiguous(), v.contiguous().stride()


@probe(lambda: (torch.randn(3, requires_grad=True),))
def requires_grad_attrs_in_graph(x):
    y = x * 2
    return y.requires_grad, y.is_leaf, x.is_leaf, y.grad_fn is not None, y.detach().requires_grad


@probe(lambda: (torch.randn(3),))
def tensor_setattr_custom_attribute(x):
    y = x * 2
    y.tag = "hello"
    return y, y.tag


@probe(lambda: (torch.randn(3),))
def tensor_item_and_python_math(x):
    v = x.sum().item()
    return math.floor(v * 100), x + v


@probe(lambda: (torch.randn(3),))
def tensor_tolist_loop(x):
    out = 0.0
    for v in x.tolist():
        out += v
    return out, x.tolist()


@probe(lambda: (torch.randn(4, 4),))
def size_object_ops(x):
    s = x.size()
    return s, s[0] + s[1], tuple(s), torch.Size([2, 3]) + s, s.numel(), type(s).__name__


@probe(lambda: (torch.randn(2, 3),))
def new_tensor_methods(x):
    return x.new_zeros(2), x.new_ones((1, 2)), x.new_full((2,), 7), x.new_empty(0).shape, x.new_tensor([1, 2])


@probe(lambda: (torch.randn(3),))
def tensor_type_conversions(x):
    return x.int(), x.long().dtype, x.double(), x.half().float(), x.to(torch.int8), x.type(torch.float64)


@probe(lambda: (torch.randn(3, 4),))
def tensor_dunder_len_iter(x):
    rows = [r * i for i, r in enumerate(x)]
    return len(x), rows


@probe(lambda: (torch.randn(3, requires_grad=True),))
def tensor_data_attr(x):
    d = x.data
    return d.requires_grad, d * 2, x.detach().is_leaf


@probe(lambda: (torch.randn(3),))
def tensor_bool_in_if(x):
    if (x > 10).any():
        return x * 0
    return x + 1


# ---- dtype promotion with python scalars --------------------------------------------------------------

@probe(lambda: (torch.arange(4, dtype=torch.int32),))
def int_tensor_times_float(x):
    return x * 2.5, x + 1, x / 2, x // 2, x * True, (x + 1).dtype


@probe(lambda: (torch.arange(4, dtype=torch.float16),))
def half_tensor_plus_python_float(x):
    return x + 1.5, (x * 2).dtype, x + torch.tensor(1.0), x + torch.tensor([1.0], dtype=torch.float64)


@probe(lambda: (torch.tensor([True, False]),))
def bool_tensor_arith(x):
    return x + 1, x * 2.0, x & True, ~x, x.sum()


@probe(lambda: (torch.arange(3, dtype=torch.uint8),))
def uint8_wraparound_and_promotion(x):
    return x - 1, x + 300 if False else x + 255, x * -1.0


@probe(lambda: (torch.randn(3), 3, 2.5), calls=2)
def python_scalar_args(x, i, f):
    return x * i + f, i * f, x.pow(i), torch.full((2,), i).dtype


@probe(lambda: (torch.arange(6),))
def int_tensor_true_div_floor_div(x):
    return x / 4, x // 4, x % 4, torch.div(x, 4, rounding_mode="trunc"), (-x) // 4


@probe(lambda: (torch.randn(3, dtype=torch.float64),))
def double_with_complex_scalar(x):
    return x * 1j, (x + 0j).dtype


@probe(lambda: (torch.randn(3),))
def default_dtype_scope(x):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        y = torch.ones(2)
        z = x + torch.tensor(1.5)
    finally:
        torch.set_default_dtype(old)
    return y, z, torch.ones(1).dtype


# ---- in-place ops and views --------------------------------------------------------------------------

@probe(lambda: (torch.randn(4, 4),))
def view_inplace_updates_base(x):
    v = x[1]
    v.mul_(0)
    return x, v


@probe(lambda: (torch.randn(4, 4),))
def transpose_view_inplace(x):
    t = x.t()
    t[0].fill_(3.0)
    return x.sum(), t.is_contiguous()


@probe(lambda: (torch.randn(6),))
def view_chain_inplace(x):
    a = x.view(2, 3)
    b = a[:, 1:]
    b.add_(10)
    return x, a, b


@probe(lambda: (torch.randn(4),))
def inplace_on_input_returned(x):
    y = x.add_(1)
    return y is x, y


@probe(lambda: (torch.randn(4),))
def setitem_with_tensor_mask(x):
    x[x > 0] = 0.0
    return x


@probe(lambda: (torch.randn(4, 3),))
def setitem_slice_with_tensor(x):
    x[:2] = torch.ones(3)
    x[-1, 1:] = 7
    return x


@probe(lambda: (torch.randn(4),))
def clone_then_inplace_leaves_input(x):
    y = x.clone()
    y.relu_()
    return x, y


@probe(lambda: (torch.randn(2, 3),))
def unsqueeze_inplace_metadata(x):
    y = x.clone()
    y.unsqueeze_(0)
    y.t_() if y.dim() == 2 else None
    return y.shape, y


@probe(lambda: (torch.randn(4),))
def inplace_alias_through_list(x):
    lst = [x, x]
    lst[0].mul_(2)
    return lst[1], x


@probe(lambda: (torch.randn(3, requires_grad=True),))
def inplace_on_nonleaf_requires_grad(x):
    y = x * 1
    y.add_(1)
    return y, y.requires_grad


@probe(lambda: (torch.randn(3, requires_grad=True),))
def inplace_on_leaf_requires_grad_raises(x):
    x.add_(1)
    return x


@probe(lambda: (torch.randn(4),))
def out_kwarg(x):
    out = torch.empty(4)
    torch.add(x, 1, out=out)
    return out


@probe(lambda: (torch.randn(4),))
def tensor_copy_into_view(x):
    buf = torch.zeros(2, 4)
    buf[0].copy_(x)
    return buf


# ---- grad mode ---------------------------------------------------------------------------------------

@probe(lambda: (torch.randn(3, requires_grad=True),))
def no_grad_block_result_flags(x):
    with torch.no_grad():
        y = x * 2
    z = x * 2
    return y.requires_grad, z.requires_grad, y, z


@probe(lambda: (torch.randn(3, requires_grad=True),))
def set_grad_enabled_false_then_true(x):
    torch.set_grad_enabled(False)
    try:
        a = x + 1
    finally:
        torch.set_grad_enabled(True)
    return a.requires_grad, (x + 1).requires_grad


@probe(lambda: (torch.randn(3, requires_grad=True),))
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            a = x * 3
        b = x * 3
    return a.requires_grad, b.requires_grad


@probe(lambda: (torch.randn(3),))
def is_grad_enabled_branch(x):
    if torch.is_grad_enabled():
        return x + 1
    return x - 1


def _no_grad_between(x):
    torch.set_grad_enabled(not torch.is_grad_enabled())


@probe(lambda: (torch.set_grad_enabled(True), torch.randn(3, requires_grad=True))[1:], calls=3,
       between=_no_grad_between)
def grad_mode_changed_between(x):
    y = x * 2
    return y.requires_grad, torch.is_grad_enabled()


@probe(lambda: (torch.randn(3, requires_grad=True),))
def requires_grad_toggled_inside(x):
    y = x.detach()
    y.requires_grad_(True)
    z = y * 2
    return z.requires_grad, y.is_leaf


@probe(lambda: (torch.randn(3, requires_grad=True),))
def autograd_grad_inside(x):
    y = (x * x).sum()
    (g,) = torch.autograd.grad(y, x)
    return g


@probe(lambda: (torch.randn(3, requires_grad=True),))
def inference_mode_result(x):
    with torch.inference_mode():
        y = x * 2
    return y.requires_grad, y


# ---- random state ------------------------------------------------------------------------------------

@probe(lambda: (torch.randn(3),))
def manual_seed_inside_same_values(x):
    torch.manual_seed(5)
    a = torch.randn(3)
    torch.manual_seed(5)
    b = torch.randn(3)
    return x + a, torch.equal(a, b)


@probe(lambda: (torch.randn(3),), calls=2)
def rng_state_save_restore(x):
    s = torch.get_rng_state()
    a = torch.rand(3)
    torch.set_rng_state(s)
    b = torch.rand(3)
    return x + a - b, torch.rand(1)


@probe(lambda: (torch.randn(3),), calls=2)
def randn_advances_global_rng(x):
    a = torch.randn(3)
    b = torch.randn(3)
    return x + a, b, torch.equal(a, b)


@probe(lambda: (torch.randn(3),), calls=2)
def dropout_training_rng(x):
    return torch.nn.functional.dropout(x, 0.5, training=True), torch.nn.functional.dropout(x, 0.5, training=False)


@probe(lambda: (torch.randn(3),), calls=2)
def generator_object_local(x):
    g = torch.Generator().manual_seed(3)
    return x + torch.rand(3, generator=g), torch.rand(2, generator=g)


@probe(lambda: (torch.randn(8),), calls=2)
def randperm_and_bernoulli(x):
    return x[torch.randperm(8)], torch.bernoulli(torch.full((4,), 0.5)), x.uniform_()


# ---- misc python semantics ---------------------------------------------------------------------------

@probe(_x)
def chained_comparisons_python_ints(x):
    n = x.shape[0]
    return x * (0 < n < 10), 1 < n <= 2


@probe(_x)
def walrus_in_comprehension(x):
    out = [y for i in range(3) if (y := x * i).sum() is not None]
    return out


@probe(_x)
def star_unpack_and_args(x):
    a, *rest = x
    first, *mid, last = range(5)
    return a, rest, mid, first + last


@probe(_x)
def kwargs_dict_splat(x):
    def f(t, *, scale=1, shift=0, **kw):
        return t * scale + shift + len(kw)
    opts = {"scale": 2, "shift": 3, "extra": 1}
    return f(x, **opts), f(x, **{"scale": 5})


@probe(_x)
def fstring_and_str_ops(x):
    s = f"{x.shape[0]}x{x.shape[1]}"
    return x.reshape(int(s.split("x")[0]), -1), s.upper(), s.replace("x", "*")


@probe(_x)
def sorted_with_key_lambda(x):
    items = [(3, "c"), (1, "a"), (2, "b")]
    s = sorted(items, key=lambda p: -p[0])
    return x * s[0][0], s, max(items, key=operator.itemgetter(1))


@probe(_x)
def builtins_on_python_values(x):
    vals = [3, 1, 2]
    return x * sum(vals), min(vals), any(v > 2 for v in vals), all(vals), list(reversed(vals)), divmod(7, 3)


@probe(_x)
def zip_enumerate_map_filter(x):
    a = list(zip(range(3), "abc"))
    b = list(map(lambda v: v * 2, filter(lambda v: v % 2, range(6))))
    return x + len(a), a, b, list(enumerate("xy", start=1))


@probe(_x)
def math_module_funcs(x):
    return x * math.sqrt(4) + math.pi, math.ceil(2.1), math.isclose(1.0, 1.0 + 1e-12), math.log2(8)


@probe(_x)
def id_and_is_on_objects(x):
    a = [1]
    b = a
    return x + (a is b), id(a) == id(b), a is not list(a)


@probe(_x)
def global_function_rebound_between_setup(x):
    return _helper_fn(x)


def _helper_fn(t):
    return t * 3


@probe(_x)
def lru_cached_pure_function(x):
    return x * _cached_sq(4) + _cached_sq(4)


@functools.lru_cache
def _cached_sq(n):
    return n * n


@probe(_x)
def type_builtin_calls(x):
    return type(x).__name__, type(3)(2.7) if False else int(2.7), float("1.5") * x, bool([]), str(3)


@probe(_x)
def exec_like_dynamic_attr_names(x):
    o = Holder(1.0)
    for i in range(3):
        setattr(o, f"w{i}", x * i)
    return [getattr(o, f"w{i}") for i in range(3)], sorted(k for k in vars(o))


@probe(_x)
def abs_neg_pos_on_tensor(x):
    return abs(x), -x, +x, ~(x > 0), x ** 2, 2 ** x, pow(x, 2)


@probe(_x)
def matmul_operator_and_rmatmul(x):
    return x @ x.T, x.T.__matmul__(x).shape


@probe(_x)
def inplace_operators_on_tensor_local(x):
    y = x.clone()
    y += 1
    y *= 2
    y -= x
    y /= 3
    return y


@probe(lambda: (torch.randn(3), [1, 2]))
def iadd_on_list_argument_mutates(x, lst):
    lst += [3]
    return x * len(lst), lst


@probe(lambda: (torch.randn(3), (1, 2)))
def iadd_on_tuple_argument_rebinds(x, tup):
    tup += (3,)
    return x * len(tup), tup


@probe(_x)
def string_formatting_percent_and_format(x):
    return "%d-%s" % (x.shape[0], "a"), "{:.2f}".format(1.2345), x + 1


@probe(_x)
def slice_objects(x):
    s = slice(1, None)
    return x[s], s.start, x[slice(None, None, 2)]


@probe(_x)
def ellipsis_and_none_indexing(x):
    return x[..., 0], x[None, :, None].shape, x[:, None, ...].shape


@probe(_x)
def tensor_in_python_containers_sorted_by_key(x):
    ts = [x * 3, x, x * 2]
    return sorted(ts, key=lambda t: t.sum().item())


@probe(_x)
def getattr_on_torch_module_dynamic(x):
    fn = getattr(torch, "relu")
    return fn(x), getattr(torch.nn.functional, "gelu")(x)


@probe(_x)
def callable_object_with_call(x):
    class Mul:
        def __init__(self, k):
            self.k = k

        def __call__(self, t):
            return t * self.k
    m = Mul(3)
    return m(x), callable(m)


@probe(_x)
def class_defined_inside_compiled(x):
    class Local:
        k = 2

        def f(self, t):
            return t * self.k
    return Local().f(x)


@probe(_x)
def assert_statement_true(x):
    assert x.dim() == 2, "two dims"
    return x + 1


@probe(_x)
def assert_statement_false_raises(x):
    assert x.dim() == 3, "three dims"
    return x + 1


@probe(_x)
def dict_of_tensors_comprehension(x):
    d = {f"k{i}": x * i for i in range(3)}
    return {k: v.sum() for k, v in d.items()}


@probe(lambda: (torch.randn(3), None))
def none_default_branch(x, maybe):
    if maybe is None:
        maybe = torch.ones(3)
    return x + maybe


@probe(lambda: (torch.randn(3), 0))
def int_arg_truthiness(x, n):
    return x * 2 if n else x * 3


@probe(lambda: (torch.randn(3), 3), calls=3, between=None)
def int_arg_range_loop(x, n):
    for i in range(n):
        x = x + i
    return x
