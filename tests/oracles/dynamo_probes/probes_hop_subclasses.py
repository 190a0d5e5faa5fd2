"""Probes restating behaviours torch's dynamo higher-order-op and subclass tests rely on: torch.cond with
closures and constants, vmap with in_dims/out_dims and captured tensors, torch.func transforms and
functional_call, activation checkpointing, and tensor subclasses with __torch_function__ (results
keeping the subclass, attributes, isinstance, as_subclass, disabled torch function)."""
import torch
import torch.utils.checkpoint
from torch import nn

from . import probe
from ._modstate import Box


def _x():
    return (torch.randn(3),)


# ---- torch.cond ---------------------------------------------------------------------------------------

@probe(lambda: (torch.tensor([1.0, 2.0, 3.0]),), calls=2)
def cond_on_tensor_predicate(x):
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))


@probe(lambda: (torch.tensor([-1.0, -2.0]),))
def cond_false_branch(x):
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))


@probe(_x)
def cond_branches_close_over_tensor(x):
    w = torch.ones(3) * 3

    def yes(t):
        return t * w

    def no(t):
        return t + w
    return torch.cond(x.mean() > 10, yes, no, (x,))


@probe(_x)
def cond_python_bool_predicate(x):
    return torch.cond(True, lambda t: t.sin(), lambda t: t.cos(), (x,))


@probe(_x)
def cond_multiple_outputs(x):
    return torch.cond(x.sum() > 0, lambda a: (a + 1, a * 2), lambda a: (a - 1, a / 2), (x,))


@probe(lambda: (torch.randn(3), torch.randn(3)))
def cond_two_operands(x, y):
    return torch.cond(x.sum() > y.sum(), lambda a, b: a - b, lambda a, b: b - a, (x, y))


# ---- vmap and torch.func ------------------------------------------------------------------------------

@probe(lambda: (torch.randn(4, 3),))
def vmap_simple(x):
    return torch.vmap(lambda r: r.sum() * r)(x)


@probe(lambda: (torch.randn(4, 3), torch.randn(3)))
def vmap_in_dims_none(x, y):
    return torch.vmap(lambda a, b: a * b, in_dims=(0, None))(x, y)


@probe(lambda: (torch.randn(3, 4),))
def vmap_in_dim_one_out_dim_one(x):
    return torch.vmap(lambda c: c * 2, in_dims=1, out_dims=1)(x)


@probe(lambda: (torch.randn(4, 3),))
def vmap_captures_outer_tensor(x):
    w = torch.arange(3.0)
    return torch.vmap(lambda r: (r * w).sum())(x)


@probe(lambda: (torch.randn(2, 3, 4),))
def vmap_nested(x):
    return torch.vmap(torch.vmap(lambda v: v.max()))(x)


@probe(lambda: (torch.randn(3),))
def func_grad(x):
    return torch.func.grad(lambda t: (t ** 3).sum())(x)


@probe(lambda: (torch.randn(3),))
def func_grad_and_value(x):
    g, v = torch.func.grad_and_value(lambda t: (t.sin()).sum())(x)
    return g, v


@probe(lambda: (torch.randn(3),))
def func_jacrev(x):
    return torch.func.jacrev(lambda t: t * t)(x)


@probe(lambda: (Box(m=nn.Linear(3, 2)), torch.randn(4, 3)))
def functional_call_with_new_params(b, x):
    params = {k: torch.ones_like(v) for k, v in b.m.named_parameters()}
    return torch.func.functional_call(b.m, params, (x,)), b.m(x)


# ---- checkpoint ---------------------------------------------------------------------------------------

def _block(t):
    return (t.sin() * 2).cos()


@probe(lambda: (torch.randn(3, requires_grad=True),))
def checkpoint_forward_value(x):
    return torch.utils.checkpoint.checkpoint(_block, x, use_reentrant=False)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def checkpoint_backward_grads(x):
    y = torch.utils.checkpoint.checkpoint(_block, x, use_reentrant=False)
    y.sum().backward()
    g = x.grad
    x.grad = None
    return g


# ---- tensor subclasses --------------------------------------------------------------------------------

class Tagged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


class Counting(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counting.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _tagged():
    return (torch.randn(3).as_subclass(Tagged),)


@probe(_tagged)
def subclass_result_keeps_class(x):
    y = x * 2 + 1
    return type(y).__name__, y.as_subclass(torch.Tensor), isinstance(y, Tagged)


@probe(_tagged)
def subclass_torch_functions(x):
    return type(torch.sin(x)).__name__, type(x.sum()).__name__, torch.cat([x, x]).shape


@probe(_x)
def as_subclass_inside(x):
    t = x.as_subclass(Tagged)
    return type(t + 1).__name__, (t + 1).as_subclass(torch.Tensor)


def _reset_counting():
    Counting.calls = 0
    return (torch.randn(3).as_subclass(Counting),)


@probe(_reset_counting, calls=2)
def subclass_torch_function_side_effect_count(x):
    y = x + 1
    z = y * 2
    return z.as_subclass(torch.Tensor), Counting.calls


@probe(_tagged)
def subclass_attribute_on_instance(x):
    x.meta = "m"
    y = x + 1
    return x.meta, hasattr(y, "meta"), y.as_subclass(torch.Tensor)


@probe(_tagged)
def disable_torch_function_inside(x):
    with torch._C.DisableTorchFunctionSubclass():
        y = x + 1
    return type(y).__name__, y


class Param(nn.Parameter):
    pass


@probe(lambda: (torch.randn(3),))
def parameter_made_inside(x):
    p = nn.Parameter(x.clone())
    return type(p).__name__, p.requires_grad, (p * 2).requires_grad


@probe(lambda: (nn.Parameter(torch.randn(3)),))
def parameter_input_ops(p):
    y = p * 2
    return type(y).__name__, y.requires_grad, isinstance(p, nn.Parameter), p.detach() + 1


@probe(_tagged)
def subclass_isinstance_and_type_checks(x):
    return isinstance(x, torch.Tensor), type(x) is Tagged, issubclass(type(x), torch.Tensor), torch.is_tensor(x)


@probe(_tagged)
def subclass_mixed_with_plain(x):
    y = x + torch.ones(3)
    z = torch.ones(3) * x
    return type(y).__name__, type(z).__name__
