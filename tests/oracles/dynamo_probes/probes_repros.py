"""Probes restating behaviours torch's dynamo repro tests rely on, aimed at stale cached results: objects,
classes, functions and tensors changed between calls (methods monkeypatched, defaults and code replaced,
attributes shadowed or deleted, __class__ reassigned, tensors whose requires_grad, layout or aliasing
change), and user types driving Python protocols (__len__, __bool__, __index__, __eq__, __hash__,
__iter__, __contains__, operator overloads with tensors)."""
import functools
import types

import torch

from . import probe
from .probes_misc import StateEq


def _x():
    return (torch.randn(3),)


# ---- classes and instances changed between calls ------------------------------------------------------

class Knob(StateEq):
    k = 2.0

    def scale(self, t):
        return t * self.k


def _knob():
    Knob.k = 2.0
    Knob.scale = _KNOB_SCALE
    for name in ("extra", "__getattr__"):
        if name in Knob.__dict__:
            delattr(Knob, name)
    return (Knob(), torch.randn(3))


_KNOB_SCALE = Knob.scale


@probe(_knob, calls=3, between=lambda o, x: setattr(Knob, "scale", lambda self, t: t - self.k))
def method_monkeypatched_on_class_between(o, x):
    return o.scale(x)


@probe(_knob, calls=3, between=lambda o, x: setattr(o, "k", o.k + 1))
def instance_shadows_class_attr_between(o, x):
    return o.scale(x), o.k


def _del_instance_k(o, x):
    if "k" in vars(o):
        del o.k
    else:
        o.k = 10.0


@probe(_knob, calls=4, between=_del_instance_k)
def instance_attr_deleted_between(o, x):
    return o.scale(x)


@probe(_knob, calls=3, between=lambda o, x: setattr(Knob, "extra", 5))
def class_attr_added_between(o, x):
    return x * getattr(o, "extra", 1), hasattr(o, "extra")


@probe(_knob, calls=3, between=lambda o, x: setattr(Knob, "__getattr__", lambda self, n: 7))
def getattr_hook_added_to_class_between(o, x):
    return x * getattr(o, "missing", 1)


class KnobB(Knob):
    k = 5.0

    def scale(self, t):
        return t / self.k


def _swap_class(o, x):
    o.__class__ = KnobB if type(o) is Knob else Knob


@probe(_knob, calls=3, between=_swap_class)
def class_reassigned_between(o, x):
    return o.scale(x), type(o).__name__


@probe(_knob, calls=3, between=lambda o, x: o.__dict__.update(k=o.__dict__.get("k", 1.0) * 3))
def instance_dict_updated_between(o, x):
    return o.scale(x)


class PropKnob(StateEq):
    @property
    def v(self):
        return 1.0


_PROPKNOB_V = PropKnob.v


def _propknob():
    PropKnob.v = _PROPKNOB_V
    return (PropKnob(), torch.randn(3))


@probe(_propknob, calls=2, between=lambda o, x: setattr(PropKnob, "v", property(lambda self: 9.0)))
def property_replaced_on_class_between(o, x):
    return x * o.v


@probe(_propknob, calls=2, between=lambda o, x: setattr(PropKnob, "v", 4.0))
def property_replaced_by_plain_value_between(o, x):
    return x * o.v


# ---- functions changed between calls -----------------------------------------------------------------

def _helper(t, k=2):
    return t * k


_HELPER_DEFAULTS = _helper.__defaults__
_HELPER_CODE = _helper.__code__


def _reset_helper():
    _helper.__defaults__ = _HELPER_DEFAULTS
    _helper.__code__ = _HELPER_CODE
    return _x()


@probe(_reset_helper, calls=3, between=lambda x: setattr(_helper, "__defaults__", (_helper.__defaults__[0] + 1,)))
def function_defaults_changed_between(x):
    return _helper(x)


def _other(t, k=2):
    return t + k


@probe(_reset_helper, calls=2, between=lambda x: setattr(_helper, "__code__", _other.__code__))
def function_code_replaced_between(x):
    return _helper(x)


def _kwonly(t, *, k=1):
    return t * k


def _reset_kwonly():
    _kwonly.__kwdefaults__ = {"k": 1}
    return _x()


def _bump_kwonly(x):
    _kwonly.__kwdefaults__["k"] += 2


@probe(_reset_kwonly, calls=3, between=_bump_kwonly)
def kwdefaults_dict_mutated_between(x):
    return _kwonly(x)


_PARTIAL = [None]


def _reset_partial():
    _PARTIAL[0] = functools.partial(_helper, k=3)
    return _x()


@probe(_reset_partial, calls=3, between=lambda x: _PARTIAL[0].keywords.__setitem__("k", _PARTIAL[0].keywords["k"] + 1))
def partial_keywords_mutated_between(x):
    return _PARTIAL[0](x)


_FN_SLOT = [None]


def _reset_fn_slot():
    _FN_SLOT[0] = torch.sin
    return _x()


def _swap_fn_slot(x):
    _FN_SLOT[0] = torch.cos if _FN_SLOT[0] is torch.sin else torch.sin


@probe(_reset_fn_slot, calls=3, between=_swap_fn_slot)
def torch_function_swapped_between(x):
    return _FN_SLOT[0](x)


def _make_adder(k):
    def add(t):
        return t + k
    return add


_ADDER = [None]


def _reset_adder():
    _ADDER[0] = _make_adder(1)
    return _x()


def _new_adder(x):
    _ADDER[0] = _make_adder(_ADDER[0].__closure__[0].cell_contents + 5)


@probe(_reset_adder, calls=3, between=_new_adder)
def closure_same_code_new_cell_between(x):
    return _ADDER[0](x)


@probe(_reset_adder, calls=3,
       between=lambda x: setattr(_ADDER[0].__closure__[0], "cell_contents", _ADDER[0].__closure__[0].cell_contents * 3))
def closure_cell_contents_set_between(x):
    return _ADDER[0](x)


# ---- tensors changed between calls -------------------------------------------------------------------

@probe(lambda: (torch.randn(3),), calls=3, between=lambda x: x.requires_grad_(not x.requires_grad))
def requires_grad_toggled_between(x):
    y = x * 2
    return y.requires_grad, y.detach()


@probe(lambda: (torch.randn(4),), calls=3, between=lambda x: x.resize_(x.numel() + 1).fill_(0.5))
def tensor_resized_between(x):
    return x.shape, x.sum() * 0 + x.numel()


@probe(lambda: (torch.randn(2, 3),), calls=3, between=lambda x: x.t_())
def tensor_transposed_inplace_between(x):
    return x.shape, x.is_contiguous(), x.stride(), x @ x.T


@probe(lambda: (torch.randn(3),), calls=3, between=lambda x: setattr(x, "tag", getattr(x, "tag", 0) + 1))
def tensor_python_attr_changed_between(x):
    return x * getattr(x, "tag", -1)


@probe(lambda: (torch.randn(3),), calls=3, between=lambda x: x.set_(torch.arange(5.0)))
def tensor_set_storage_between(x):
    return x + 1, x.shape


def _alias_box():
    a = torch.randn(4)
    return ([a, torch.randn(4)],)


def _make_alias(box):
    box[1] = box[0] if box[1] is not box[0] else torch.randn(4)


@probe(_alias_box, calls=3, between=_make_alias)
def aliasing_of_inputs_changes_between(box):
    a, b = box
    a.add_(1)
    return a + b, b.clone()


def _view_box():
    a = torch.randn(6)
    return ([a, torch.randn(3)],)


def _make_view(box):
    box[1] = box[0][:3] if box[1]._base is None else torch.randn(3)


@probe(_view_box, calls=3, between=_make_view)
def view_of_other_input_between(box):
    a, b = box
    a.mul_(2)
    return b.clone(), a.clone()


@probe(lambda: ([torch.randn(3)],), calls=3, between=lambda box: box.__setitem__(0, box[0].double()))
def dtype_of_input_changes_between(box):
    return box[0] * 2, box[0].dtype


@probe(lambda: ([torch.randn(2, 3)],), calls=3, between=lambda box: box.__setitem__(0, box[0].t()))
def noncontiguous_input_between(box):
    t = box[0]
    return t.view(-1) if t.is_contiguous() else t.reshape(-1), t.is_contiguous()


@probe(lambda: ([torch.randn(3)],), calls=3, between=lambda box: box.__setitem__(0, box[0].unsqueeze(0)))
def input_rank_changes_between(box):
    t = box[0]
    return t.dim(), t.sum(-1), len(t)


@probe(lambda: (torch.randn(3, requires_grad=True),), calls=2,
       between=lambda x: setattr(x, "grad", torch.ones(3)))
def grad_attr_set_between(x):
    return x.grad is None, (x.grad * 2) if x.grad is not None else None


def _defdtype_reset():
    torch.set_default_dtype(torch.float32)
    return _x()


def _defdtype_flip(x):
    torch.set_default_dtype(torch.float64 if torch.get_default_dtype() == torch.float32 else torch.float32)


def _defdtype_probe(x):
    try:
        return torch.ones(2), torch.tensor(1.5).dtype, x + torch.arange(3.0)
    finally:
        pass


@probe(_defdtype_reset, calls=3, between=_defdtype_flip)
def default_dtype_changed_between(x):
    out = _defdtype_probe(x)
    return out


@probe(lambda: (torch.use_deterministic_algorithms(False), torch.randn(3))[1:], calls=3,
       between=lambda x: torch.use_deterministic_algorithms(not torch.are_deterministic_algorithms_enabled()))
def deterministic_flag_read_between(x):
    return x * 2, torch.are_deterministic_algorithms_enabled()


# ---- containers changed between calls ----------------------------------------------------------------

@probe(lambda: (torch.randn(3), [1.0, 2.0]), calls=3, between=lambda x, lst: lst.__setitem__(0, lst[0] + 10))
def list_item_replaced_same_length(x, lst):
    return x * lst[0] + lst[1]


@probe(lambda: (torch.randn(3), {"a": 1, "b": 2}), calls=3,
       between=lambda x, d: d.update({k: d.pop(k) for k in list(d)[:1]}))
def dict_key_order_changed_between(x, d):
    return [k for k in d], x * list(d.values())[0]


@probe(lambda: (torch.randn(3), [torch.ones(3)]), calls=3,
       between=lambda x, lst: lst.append(torch.ones(3) * len(lst)))
def list_of_tensors_grows_between(x, lst):
    out = x
    for t in lst:
        out = out + t
    return out


@probe(lambda: (torch.randn(3), ((1, 2), 3)), calls=2)
def nested_tuple_constant_arg(x, tup):
    (a, b), c = tup
    return x * (a + b + c)


# ---- user types driving python protocols --------------------------------------------------------------

class Bag(StateEq):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        return iter(range(self.n))

    def __contains__(self, v):
        return v < self.n


@probe(lambda: (Bag(2), torch.randn(3)), calls=3, between=lambda b, x: setattr(b, "n", b.n + 1))
def user_len_iter_contains_changes(b, x):
    out = x
    for i in b:
        out = out + i
    return out, len(b), 2 in b, bool(b)


class Truthy(StateEq):
    def __init__(self):
        self.on = False

    def __bool__(self):
        return self.on


@probe(lambda: (Truthy(), torch.randn(3)), calls=3, between=lambda o, x: setattr(o, "on", not o.on))
def user_bool_changes_between(o, x):
    if o:
        return x + 1
    return x - 1


class Idx(StateEq):
    def __init__(self, i):
        self.i = i

    def __index__(self):
        return self.i


@probe(lambda: (Idx(1), torch.arange(6.0)), calls=3, between=lambda o, x: setattr(o, "i", o.i + 1))
def user_index_used_for_indexing(o, x):
    return x[o], [10, 20, 30, 40, 50][o], x[:o]


class Key(StateEq):
    def __init__(self, v):
        self.v = v

    def __hash__(self):
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, Key) and self.v == other.v


@probe(_x)
def user_hash_eq_dict_keys(x):
    d = {Key(1): x, Key(2): x * 2}
    return d[Key(2)], Key(1) in d, Key(3) in d, [Key(1)].index(Key(1))


class Vec(StateEq):
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Vec(self.t + (other.t if isinstance(other, Vec) else other))

    def __radd__(self, other):
        return Vec(other * 10 + self.t)

    def __mul__(self, other):
        return NotImplemented


@probe(_x)
def user_add_radd_with_tensor(x):
    a = Vec(x) + 1
    b = 2 + Vec(x)
    c = Vec(x) + Vec(x)
    return a.t, b.t, c.t


@probe(_x)
def user_mul_notimplemented_raises(x):
    try:
        Vec(x) * 2
    except TypeError as e:
        return str(e), x
    return None


class Cmp(StateEq):
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v < other.v


@probe(_x)
def user_lt_sorted_and_min(x):
    items = [Cmp(3), Cmp(1), Cmp(2)]
    return x * min(items).v, [c.v for c in sorted(items)], max(items).v


class CallCount(StateEq):
    def __init__(self):
        self.n = 0

    def __call__(self, t):
        self.n += 1
        return t * self.n


@probe(lambda: (CallCount(), torch.randn(3)), calls=3)
def callable_object_state_across_calls(c, x):
    return c(x), c(x), c.n


class Ctx(StateEq):
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("in")
        return self

    def __exit__(self, *exc):
        self.log.append("out")
        return False


@probe(lambda: (Ctx(), torch.randn(3)), calls=2)
def user_context_manager_arg(c, x):
    with c as cc:
        y = x * len(cc.log)
    return y, list(c.log)


class Seq(StateEq):
    def __init__(self):
        self.data = [1, 2, 3]

    def __getitem__(self, i):
        return self.data[i]

    def __setitem__(self, i, v):
        self.data[i] = v


@probe(lambda: (Seq(), torch.randn(3)), calls=2)
def user_getitem_setitem(s, x):
    s[0] = s[0] + 1
    return x * s[0], s[1:], list(s.data)


class WithClassVarCounter(StateEq):
    made = 0

    def __init__(self):
        type(self).made += 1


def _reset_made():
    WithClassVarCounter.made = 0
    return _x()


@probe(_reset_made, calls=3)
def class_counter_incremented_inside(x):
    WithClassVarCounter()
    WithClassVarCounter()
    return x * WithClassVarCounter.made


class Meta(type):
    def __call__(cls, *a):
        obj = super().__call__(*a)
        obj.via_meta = True
        return obj


class WithMeta(StateEq, metaclass=Meta):
    def __init__(self, t):
        self.t = t


@probe(_x)
def metaclass_call_override(x):
    o = WithMeta(x)
    return o.t * 2, o.via_meta


class InitSubclassBase:
    registry = []

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        InitSubclassBase.registry.append(cls.__name__)


@probe(_x)
def init_subclass_hook(x):
    n = len(InitSubclassBase.registry)

    class Child(InitSubclassBase):
        pass
    out = x * (len(InitSubclassBase.registry) - n)
    InitSubclassBase.registry.pop()
    return out


@probe(_x)
def types_simplenamespace(x):
    ns = types.SimpleNamespace(a=x, b=2)
    ns.c = ns.a * ns.b
    return ns.c, sorted(vars(ns)), ns == types.SimpleNamespace(a=x, b=2, c=ns.c)


class NewOverride(StateEq):
    def __new__(cls, v):
        obj = super().__new__(cls)
        obj.from_new = v * 2
        return obj

    def __init__(self, v):
        self.from_init = v


@probe(_x)
def user_new_and_init(x):
    o = NewOverride(x)
    return o.from_new, o.from_init


class Singleton(StateEq):
    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
            cls._inst.count = 0
        return cls._inst


def _reset_singleton():
    Singleton._inst = None
    return _x()


@probe(_reset_singleton, calls=3)
def singleton_new_across_calls(x):
    s = Singleton()
    s.count += 1
    return x * s.count, Singleton() is s
