"""Probes restating behaviours torch's dynamo function tests rely on (part 5): torch ops called with keyword
arguments and their in-place forms, foreach ops, numpy interop on tensors, default tensor arguments
shared across calls, identity of in-place results, and torch's own predicates."""
import functools

import numpy as np
import torch

from . import probe


def _t():
    return (torch.randn(4),)


def _ttt():
    return (torch.randn(4), torch.randn(4), torch.rand(4) + 0.5)


@probe(_ttt)
def addcdiv_value_keyword(a, b, c):
    return torch.addcdiv(a, b, c, value=5.0), a.clone().addcdiv_(b, c, value=-2), torch.addcmul(a, b, c, value=0.5)


@probe(_ttt)
def add_alpha_keyword_inplace(a, b, c):
    out = a.clone()
    r = out.add_(b, alpha=5.0)
    return r is out, out, torch.sub(a, c, alpha=2), torch.add(a, 3, alpha=2)


@probe(lambda: ([torch.ones(2, 2) * 4.0, torch.ones(2, 2) * 3.0], [torch.ones(2, 2), torch.zeros(2, 2)],
                torch.tensor(0.5)))
def foreach_lerp_inplace(xs, ys, w):
    out = torch._foreach_lerp_(xs, ys, w)
    return out, xs


@probe(lambda: (torch.tensor(0.8), [torch.tensor(3.0), torch.tensor(2.0)]))
def foreach_pow_scalar_base(base, exps):
    return torch._foreach_pow(base, exps)


@probe(lambda: (torch.ones(2, 2), torch.ones(2, 2) + 1, torch.rand(2, 2), torch.tensor(0.3)))
def addcmul_tensor_value(x, y, z, s):
    return x.addcmul_(y, z, value=s)


def _bump(t=torch.zeros(2), *, k=torch.zeros(1)):  # noqa: B008 - the shared defaults are what is probed
    t.add_(1)
    k.add_(1)
    return t, k


def _reset_bump():
    _bump.__defaults__[0].zero_()
    _bump.__kwdefaults__["k"].zero_()
    return ()


@probe(_reset_bump)
def default_tensor_args_mutated_across_calls():
    t, k = _bump()
    return t.clone(), k.clone(), t is _bump.__defaults__[0]


@probe(lambda: (torch.randn(3, 4),))
def is_contiguous_branches(x):
    if x.is_contiguous():
        return x + 1
    elif x.is_contiguous(memory_format=torch.channels_last):
        return x + 2
    return x + 3


@probe(lambda: (torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last),))
def is_contiguous_channels_last(x):
    return x + 1, x.is_contiguous(), x.is_contiguous(memory_format=torch.channels_last), x.stride()


@probe(_t)
def numpy_of_tensor_roundtrip(x):
    a = x.numpy()
    return torch.from_numpy(a * 2), a.sum(), np.mean(a), type(a.sum()).__name__


@probe(lambda: (torch.randn(3), torch.randn(2)))
def numpy_meshgrid_of_tensors(x, y):
    r1, r2 = np.meshgrid(x.numpy(), y.numpy())
    return torch.from_numpy(r1), torch.from_numpy(r2)


@probe(lambda: (torch.randn(3, 4),))
def numpy_methods_on_tensor(x):
    a = x.numpy()
    return a.max(axis=0), a.all(axis=0), a.T.copy(), a.reshape([1, a.size]), np.linalg.norm(a, axis=0)


@probe(_t)
def numpy_info_constants(x):
    return x + np.iinfo(np.int16).max, x + float(np.finfo(np.float32).eps), np.float32(2.5) * 2


@probe(_t)
def inplace_result_identity(x):
    y = x.add_(1)
    z = torch.Tensor.mul_(y, 2)
    w = x.clone()
    v = w.relu_()
    return x is y, y is z, v is w, w is x


@probe(lambda: (torch.zeros(5), torch.zeros(5, 10)))
def tensor_membership_by_identity(p, q):
    p.add_(1)
    s = {q}
    return p in s, q in s, p in [q, p]


@probe(_t)
def torch_predicates(x):
    return x + 1, (torch.is_floating_point(x), torch.is_complex(x), torch.is_nonzero(torch.tensor([1.0])),
                   torch.onnx.is_in_onnx_export(), torch.jit.is_scripting(), torch.is_inference_mode_enabled(),
                   torch._C._get_privateuse1_backend_name(), torch.distributed.is_available())


@probe(_t)
def torch_nn_init_fan(x):
    w = torch.randn(4, 3)
    return x + torch.nn.init._calculate_correct_fan(w, "fan_in"), torch.nn.init.calculate_gain("relu")


@probe(_t)
def tensor_type_conversions(x):
    m = x.type(torch.HalfTensor)
    n = x.type("torch.DoubleTensor")
    return m, n, m.type(), x.type(n.type()).dtype


@probe(_t)
def partial_of_torch_functions(x):
    mul_ones = functools.partial(torch.mul, other=torch.ones(4))
    sm = functools.partial(torch.nn.functional.softmax, dim=-1)
    return mul_ones(x), sm(x), functools.partial(torch.clip, min=0.0, max=1.0)(x)


@probe(_t)
def torch_size_comparisons_with_sym(x):
    return x + 1, sum(s == -1 for s in x.size()), x.size() == torch.Size([4]), x.shape[0] in (4, 5)


@probe(lambda: (torch.randn(3), [1.0, 2.0, 3.0], [2.0, 5.0, 8.0]))
def zip_strict_accumulate(x, ys, zs):
    x = x.clone()
    for y, z in zip(ys, zs, strict=True):
        x += y * z
    return x


@probe(_t)
def manual_seed_inside(x):
    torch.manual_seed(3)
    a = torch.randint(0, 5, (5,))
    torch.manual_seed(3)
    b = torch.randint(0, 5, (5,))
    return x + 1, a, torch.equal(a, b)


@probe(_t)
def softmax_module_built_inline(x):
    return torch.nn.Softmax(dim=-1)(x * 2), torch.nn.ReLU()(x)


@probe(_t)
def distributions_log_prob(x):
    normal = torch.distributions.Normal(x, torch.tensor(1.0))
    return torch.distributions.Independent(normal, 1).log_prob(x)
