"""Probes restating behaviours torch's dynamo misc tests rely on (part 3): process state programs read that
may change between calls (logger levels, builtins replaced or shadowed by globals, thread counts,
anomaly mode, abc registration, module backward hooks), and values reached through other modules'
globals, methods' defaults and dicts keyed by tensors."""
import abc
import builtins
import logging

import torch
from torch import nn

from . import probe
from . import probes_misc
from ._modstate import Box
from .probes_misc import StateEq


def _x():
    return (torch.randn(3),)


# ---- logging -------------------------------------------------------------------------------------------

_LOG = logging.getLogger("bytegraph_probe_logger")


def _reset_log():
    _LOG.setLevel(logging.WARNING)
    return _x()


def _flip_level(x):
    _LOG.setLevel(logging.DEBUG if _LOG.level == logging.WARNING else logging.WARNING)


@probe(_reset_log, calls=3, between=_flip_level)
def logger_level_read_between(x):
    if _LOG.isEnabledFor(logging.DEBUG):
        return x * 2
    return x + 1


@probe(_reset_log, calls=3, between=_flip_level)
def logger_level_attribute_between(x):
    return x * _LOG.level, _LOG.getEffectiveLevel()


# ---- builtins -----------------------------------------------------------------------------------------

_REAL_MAX = builtins.max


def _reset_builtins():
    builtins.max = _REAL_MAX
    globals().pop("min", None)
    return _x()


def _patch_builtin_max(x):
    builtins.max = (lambda *a, **k: 100) if builtins.max is _REAL_MAX else _REAL_MAX


@probe(_reset_builtins, calls=3, between=_patch_builtin_max)
def builtin_replaced_in_builtins_between(x):
    try:
        return x * max(1, 2)
    finally:
        pass


def _shadow_min(x):
    if "min" in globals():
        del globals()["min"]
    else:
        globals()["min"] = lambda *a: -5


@probe(_reset_builtins, calls=3, between=_shadow_min)
def builtin_shadowed_by_global_between(x):
    return x * min(3, 4)


# ---- torch process state ------------------------------------------------------------------------------

def _reset_threads():
    torch.set_num_threads(1)
    return _x()


@probe(_reset_threads, calls=3, between=lambda x: torch.set_num_threads(3 - torch.get_num_threads()))
def num_threads_read_between(x):
    return x * torch.get_num_threads()


def _reset_anomaly():
    torch.set_anomaly_enabled(False)
    return _x()


@probe(_reset_anomaly, calls=3, between=lambda x: torch.set_anomaly_enabled(not torch.is_anomaly_enabled()))
def anomaly_mode_read_between(x):
    return x + 1 if torch.is_anomaly_enabled() else x - 1


@probe(_x)
def is_compiling_flags(x):
    return x + 1, torch.jit.is_scripting(), torch.jit.is_tracing()


@probe(_x)
def autocast_state_reads(x):
    return x + 1, torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")


@probe(_x)
def autocast_cpu_block(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x.unsqueeze(0) @ x.unsqueeze(1)
    return y.dtype, (x * 2).dtype, y.float()


# ---- abc registration ----------------------------------------------------------------------------------

_ABC = [None, None]    # a fresh ABC and class per run (a registration cannot be undone)


def _fresh_abc():
    _ABC[0] = abc.ABCMeta("Shape", (), {})
    _ABC[1] = type("Circle", (StateEq,), {})
    return (torch.randn(3),)


@probe(_fresh_abc, calls=3, between=lambda x: _ABC[0].register(_ABC[1]))
def abc_register_between(x):
    shape, circle = _ABC
    return x * isinstance(circle(), shape), issubclass(circle, shape)


# ---- module backward hooks added between calls -----------------------------------------------------

class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


def _add_bw_hook(b, x):
    b.m.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0 + 7,))


@probe(lambda: (Box(m=Lin()), torch.randn(2, 3, requires_grad=True)), calls=2, between=_add_bw_hook)
def full_backward_hook_added_between(b, x):
    out = b.m(x)
    out.sum().backward()
    g = x.grad
    x.grad = None
    return out, g


def _add_bw_pre_hook(b, x):
    b.m.lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))


@probe(lambda: (Box(m=Lin()), torch.randn(2, 3, requires_grad=True)), calls=2, between=_add_bw_pre_hook)
def child_backward_pre_hook_added_between(b, x):
    out = b.m(x)
    out.sum().backward()
    g = x.grad
    x.grad = None
    return g


def _add_fwd_hook_kwargs(b, x):
    b.m.register_forward_hook(lambda m, a, k, o: o * 3, with_kwargs=True)


@probe(lambda: (Box(m=Lin()), torch.randn(2, 3)), calls=2, between=_add_fwd_hook_kwargs)
def forward_hook_with_kwargs_added_between(b, x):
    return b.m(x)


# ---- other modules' globals, method defaults, tensor-keyed dicts ------------------------------------

def _reset_misc_scale():
    probes_misc.SCALE = 2.0
    return _x()


def _bump_misc_scale(x):
    probes_misc.SCALE += 1


@probe(_reset_misc_scale, calls=3, between=_bump_misc_scale)
def other_module_global_read_through_its_function(x):
    return probes_misc.global_float_changed_between(x)


@probe(_reset_misc_scale, calls=3, between=_bump_misc_scale)
def other_module_attribute_read_directly(x):
    return x * probes_misc.SCALE


class WithDefaults(StateEq):
    def m(self, t, k=2):
        return t * k


def _reset_wd():
    WithDefaults.m.__defaults__ = (2,)
    return (WithDefaults(), torch.randn(3))


@probe(_reset_wd, calls=3,
       between=lambda o, x: setattr(WithDefaults.m, "__defaults__", (WithDefaults.m.__defaults__[0] + 1,)))
def method_defaults_changed_between(o, x):
    return o.m(x)


@probe(lambda: (torch.randn(3), torch.randn(3)))
def dict_keyed_by_tensors(x, y):
    d = {x: 1, y: 2}
    d[x] = 3
    return d[x], d[y], len(d), x in d, (x * 1) in d


_TK = {}


def _reset_tk():
    _TK.clear()
    x = torch.randn(3)
    _TK[x] = 1.0
    return (x,)


def _retag(x):
    _TK[x] = _TK.get(x, 0) + 1


@probe(_reset_tk, calls=3, between=_retag)
def global_dict_keyed_by_input_tensor_between(x):
    return x * _TK.get(x, -1.0)


@probe(_x)
def type_call_three_args_class(x):
    K = type("K", (), {"k": 3, "f": lambda self, t: t * self.k})
    return K().f(x), K.__name__


@probe(_x)
def vars_and_dir_of_instance(x):
    o = probes_misc.Holder(2.0)
    o.z = 1
    return x * o.k, sorted(vars(o)), "apply" in dir(o)


@probe(_x)
def getattr_with_default_on_module(x):
    return x * getattr(probes_misc, "NOT_THERE", 3), hasattr(probes_misc, "SCALE")


@probe(_x)
def print_inside_does_not_change_result(x):
    y = x * 2
    print(end="")
    return y + 1


# ---- torch.Tensor methods, class names and torch state queries changed between calls -----------------

_SAVED_TENSOR_ATTRS = {}


def _reset_tensor_patch():
    for name, value in _SAVED_TENSOR_ATTRS.items():
        setattr(torch.Tensor, name, value)
    torch.Tensor.probe_twice = lambda self: self * 2
    return _x()


def _patch_tensor_methods(x):
    _SAVED_TENSOR_ATTRS.setdefault("clamp_min", torch.Tensor.__dict__.get("clamp_min", torch.Tensor.clamp_min))
    torch.Tensor.probe_twice = lambda self: self * 3
    torch.Tensor.clamp_min = lambda self, v: self * 0 + v


@probe(_reset_tensor_patch, calls=2, between=_patch_tensor_methods)
def tensor_methods_replaced_between(x):
    return x.probe_twice(), x.clamp_min(0.5)


class Renamed(nn.Module):
    def forward(self, x):
        return x * len(type(self).__name__)


def _reset_renamed():
    Renamed.__name__ = "Renamed"
    return (Box(m=Renamed()), torch.randn(3))


@probe(_reset_renamed, calls=3, between=lambda b, x: setattr(Renamed, "__name__", Renamed.__name__ + "X"))
def module_class_renamed_between(b, x):
    return b.m(x), b.m._get_name()


@probe(lambda: (torch.manual_seed(0), torch.randn(3))[1:], calls=3,
       between=lambda x: torch.manual_seed(torch.initial_seed() + 1))
def initial_seed_read_between(x):
    return x * (torch.initial_seed() % 5)


@probe(lambda: (torch.set_warn_always(False), torch.randn(3))[1:], calls=3,
       between=lambda x: torch.set_warn_always(not torch.is_warn_always_enabled()))
def warn_always_read_between(x):
    return x + 1 if torch.is_warn_always_enabled() else x - 1
