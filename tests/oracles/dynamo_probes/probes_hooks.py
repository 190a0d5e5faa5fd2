"""Probes restating behaviours torch's dynamo hook tests rely on: tensor hooks registered inside the compiled
code (on inputs and intermediates, removed by handle, several in order), module forward / pre / backward
hooks added, replaced or removed between calls, global module hooks, and the gradients they shape.
A probe that needs gradients runs the backward itself and returns them."""
import torch
from torch import nn

from . import probe
from ._modstate import Box


def _leaf():
    return (torch.tensor([1.0, 2.0, 3.0], requires_grad=True),)


def _leaf_and_t():
    return (torch.tensor([1.0, 2.0, 3.0], requires_grad=True), torch.randn(2, 2))


def _grad(x):
    g = x.grad
    x.grad = None
    return g


# ---- tensor hooks registered inside ------------------------------------------------------------------

@probe(_leaf)
def hook_on_input_lambda_then_backward(x):
    x.register_hook(lambda g: g * 2)
    (x * x).sum().backward()
    return _grad(x)


@probe(_leaf_and_t)
def hook_on_input_returned_with_other_work(x, t):
    x.register_hook(lambda g: g * 3)
    y = t * t
    return x * 2, y


def _g4(g):
    return g * 4


def _g_half(g):
    return g / 2


@probe(_leaf)
def several_hooks_apply_in_order(x):
    x.register_hook(_g4)
    x.register_hook(_g_half)
    x.register_hook(lambda g: g + 1)
    (x * 1.0).sum().backward()
    return _grad(x)


@probe(_leaf)
def hook_removed_by_handle_inside(x):
    h = x.register_hook(lambda g: g * 100)
    y = x * 2
    h.remove()
    x.register_hook(lambda g: g * 3)
    y.sum().backward()
    return _grad(x)


@probe(_leaf)
def handle_removed_twice_is_fine(x):
    h = x.register_hook(lambda g: g * 2)
    h.remove()
    h.remove()
    x.sum().backward()
    return _grad(x), type(h).__name__


@probe(_leaf)
def hook_on_intermediate_changes_input_grad(x):
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    return _grad(x)


@probe(_leaf)
def hook_on_intermediate_used_before_and_after(x):
    y = x * 2
    z = y + 1
    y.register_hook(lambda g: g * 2)
    w = y * 3
    (z + w).sum().backward()
    return _grad(x)


@probe(_leaf)
def hook_returning_none_keeps_grad(x):
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.clone()))
    y.sum().backward()
    return _grad(x), seen


@probe(_leaf)
def hook_closure_over_local_tensor(x):
    scale = torch.tensor(5.0)
    y = x * 1.0
    y.register_hook(lambda g: g * scale)
    y.sum().backward()
    return _grad(x)


@probe(_leaf)
def hook_records_into_list(x):
    seen = []

    def rec(g):
        seen.append(g.sum())
    x.register_hook(rec)
    (x ** 2).sum().backward()
    return seen, _grad(x)


@probe(_leaf)
def hook_registered_not_run_before_backward(x):
    seen = []
    x.register_hook(lambda g: seen.append(1))
    y = x * 2
    return len(seen), y


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def retain_grad_on_intermediate(x):
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    return y.grad, _grad(x)


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def register_hook_on_no_grad_tensor_raises(x):
    t = torch.ones(2)
    t.register_hook(lambda g: g)
    return x


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def post_accumulate_grad_hook(x):
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (x * 4).sum().backward()
    return seen, _grad(x)


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def autograd_grad_with_hook(x):
    y = x * x
    y.register_hook(lambda g: g * 10)
    (gx,) = torch.autograd.grad(y.sum(), x)
    return gx


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),), calls=3)
def grad_accumulates_across_calls(x):
    (x * 2).sum().backward()
    return x.grad.clone()


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def hook_handle_in_returned_tuple(x):
    h = x.register_hook(lambda g: g * 2)
    y = x * 1
    y.sum().backward()
    h.remove()
    return _grad(x), h is not None


G_HANDLE = [None]


@probe(lambda: (G_HANDLE.__setitem__(0, None), torch.tensor([1.0, 2.0], requires_grad=True))[1:])
def hook_handle_stored_in_global(x):
    G_HANDLE[0] = x.register_hook(lambda g: g * 7)
    (x * 1).sum().backward()
    G_HANDLE[0].remove()
    (x * 1).sum().backward()
    return _grad(x)


@probe(lambda: (Box(m=nn.Module()), torch.tensor([1.0, 2.0], requires_grad=True)))
def hook_handle_stored_on_module_attr(b, x):
    b.m.handle = x.register_hook(lambda g: g * 2)
    (x * 1).sum().backward()
    b.m.handle.remove()
    return _grad(x)


# ---- module hooks ------------------------------------------------------------------------------------

class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


def _lin():
    return (Box(m=Lin()), torch.randn(2, 3))


@probe(_lin)
def forward_hook_registered_inside(b, x):
    h = b.m.register_forward_hook(lambda m, i, o: o + 1)
    out = b.m(x)
    h.remove()
    return out, b.m(x)


@probe(_lin)
def forward_pre_hook_with_kwargs(b, x):
    def pre(m, args, kwargs):
        return (args[0] * 2,), kwargs
    h = b.m.register_forward_pre_hook(pre, with_kwargs=True)
    out = b.m(x)
    h.remove()
    return out


@probe(_lin)
def forward_hook_with_kwargs_and_always_call(b, x):
    def post(m, args, kwargs, out):
        return out - 1
    h = b.m.register_forward_hook(post, with_kwargs=True, always_call=True)
    out = b.m(x)
    h.remove()
    return out


@probe(_lin)
def forward_hook_prepend_order(b, x):
    seen = []
    h1 = b.m.register_forward_hook(lambda m, i, o: seen.append("a"))
    h2 = b.m.register_forward_hook(lambda m, i, o: seen.append("b"), prepend=True)
    b.m(x)
    h1.remove()
    h2.remove()
    return seen


def _hooked_lin():
    b, x = _lin()
    b.m.register_forward_hook(lambda m, i, o: o * 2)
    return b, x


def _clear(b, x):
    b.m._forward_hooks.clear()


@probe(_hooked_lin, between=_clear)
def forward_hook_cleared_between(b, x):
    return b.m(x)


def _add_pre(b, x):
    b.m.lin.register_forward_pre_hook(lambda m, a: (a[0] + 1,))


@probe(_lin, calls=3, between=_add_pre)
def pre_hook_on_child_added_between(b, x):
    return b.m(x)


@probe(_lin)
def full_backward_hook_sees_grads(b, x):
    seen = []
    h = b.m.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].sum()))
    x = x.requires_grad_()
    b.m(x).sum().backward()
    h.remove()
    return seen, x.grad


@probe(_lin)
def full_backward_pre_hook_scales(b, x):
    h = b.m.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    x = x.requires_grad_()
    b.m(x).sum().backward()
    h.remove()
    return x.grad


@probe(_lin)
def parameter_hook_on_weight(b, x):
    h = b.m.lin.weight.register_hook(lambda g: g * 0)
    b.m(x).sum().backward()
    h.remove()
    return b.m.lin.weight.grad, b.m.lin.bias.grad


@probe(_lin)
def forward_hook_returns_none_keeps_output(b, x):
    seen = []
    h = b.m.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    out = b.m(x)
    h.remove()
    return out, seen


@probe(_lin)
def forward_hook_modifies_module_state(b, x):
    def count(m, i, o):
        m.calls = getattr(m, "calls", 0) + 1
    h = b.m.register_forward_hook(count)
    b.m(x)
    b.m(x)
    h.remove()
    return b.m.calls


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(()))

    def forward(self, x):
        return x * 2


def _counting_with_hook():
    m = Counting()

    def bump(mod, i, o):
        mod.n.add_(1)
        return o + mod.n
    m.register_forward_hook(bump)
    return (Box(m=m), torch.randn(3))


@probe(_counting_with_hook, calls=3)
def forward_hook_mutates_buffer(b, x):
    return b.m(x)


@probe(_lin)
def hooks_dict_len_read(b, x):
    n0 = len(b.m._forward_hooks)
    h = b.m.register_forward_hook(lambda m, i, o: o)
    n1 = len(b.m._forward_hooks)
    h.remove()
    return n0, n1, len(b.m._forward_hooks), b.m(x)


def _remove_pre(b, x):
    for h in b.handles:
        h.remove()
    b.handles.clear()


def _lin_with_pre():
    m = Lin()
    h = m.register_forward_pre_hook(lambda mod, a: (a[0] * 0,))
    return (Box(m=m, handles=[h]), torch.randn(2, 3))


@probe(_lin_with_pre, calls=2, between=_remove_pre)
def pre_hook_removed_by_handle_between(b, x):
    return b.m(x)


def _lin_state_hook():
    m = Lin()
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: None)
    return (Box(m=m), torch.randn(2, 3))


@probe(_lin_state_hook)
def module_with_state_dict_hook_runs(b, x):
    return b.m(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def tensor_hook_on_view(x):
    y = x * 1
    v = y[:2]
    v.register_hook(lambda g: g * 5)
    v.sum().backward()
    return _grad(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def hook_modifying_captured_list_then_read(x):
    calls = []
    y = x * 2
    y.register_hook(lambda g: calls.append(len(calls)) or g)
    z = y.sum()
    z.backward()
    return calls, _grad(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def backward_with_retain_graph_twice(x):
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return _grad(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def grad_is_none_before_backward(x):
    a = x.grad is None
    (x * 1).sum().backward()
    return a, x.grad is None, _grad(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def grad_set_manually(x):
    x.grad = torch.ones(3)
    (x * 2).sum().backward()
    return _grad(x)


@probe(lambda: (torch.randn(3, requires_grad=True),))
def grad_zeroed_in_place(x):
    (x * 2).sum().backward()
    x.grad.zero_()
    (x * 3).sum().backward()
    return _grad(x)


# ---- global module hooks (last: see _lin_handles) ------------------------------------------------------

_GLOBAL_HANDLES = []


def _add_global_hook(b, x):
    _GLOBAL_HANDLES.append(nn.modules.module.register_module_forward_hook(lambda m, i, o: o * 0 + 5))


def _lin_handles():
    # (a fullgraph compile that fails never runs the probe's cleanup: what a run leaves is removed here;
    # this probe is the file's last, so nothing runs after its final run)
    while _GLOBAL_HANDLES:
        _GLOBAL_HANDLES.pop().remove()
    return (Box(m=Lin(), handles=_GLOBAL_HANDLES), torch.randn(2, 3))


def _global_hook_probe(b, x):
    try:
        return b.m(x)
    finally:
        for h in b.handles:
            h.remove()


@probe(_lin_handles, calls=2, between=_add_global_hook)
def global_forward_hook_added_between(b, x):
    return _global_hook_probe(b, x)
