"""Helpers of the module probes: a box that carries modules as probe arguments and compares by their state.

A probe's arguments are compared with eager's after the runs; an nn.Module compares by identity, and every
run builds fresh ones, so modules travel inside a `Box`, whose equality is that of a snapshot of what a
program can see of them: class, training flag, plain attributes, tensors (rounded), the names and order of
parameters, buffers and children, and how many hooks each module holds."""
from __future__ import annotations

import torch

_PLAIN = (int, float, str, bool, type(None), tuple)


def _tensor(t):
    values = [round(v, 4) for v in t.detach().double().flatten().tolist()]
    return (tuple(t.shape), str(t.dtype), t.requires_grad, values)


def snapshot(m):
    if isinstance(m, torch.Tensor):
        return _tensor(m)
    if isinstance(m, (tuple, list)):
        return (type(m).__name__, [snapshot(v) for v in m])
    if not isinstance(m, torch.nn.Module):
        return m if isinstance(m, _PLAIN + (list, dict)) else type(m).__name__
    out = []
    for name, sub in m.named_modules(remove_duplicate=False):
        attrs = {}
        for k, v in sorted(vars(sub).items()):
            if k.startswith("_") and k not in ("_val",):
                continue
            if isinstance(v, (torch.Tensor, tuple)):
                attrs[k] = snapshot(v)
            elif isinstance(v, _PLAIN) or isinstance(v, (list, dict)) and all(isinstance(e, _PLAIN) for e in v):
                attrs[k] = v
            else:
                attrs[k] = type(v).__name__
        out.append((name, type(sub).__name__, sub.training, attrs,
                    [(k, None if p is None else _tensor(p)) for k, p in sub._parameters.items()],
                    [(k, None if b is None else _tensor(b)) for k, b in sub._buffers.items()],
                    list(sub._modules),
                    len(sub._forward_hooks), len(sub._forward_pre_hooks)))
    return out


class Box:
    """Holds whatever a probe needs (modules, tensors, lists) as attributes; equal by snapshot."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __eq__(self, other):
        return type(other) is Box and {k: snapshot(v) for k, v in vars(self).items()} == \
            {k: snapshot(v) for k, v in vars(other).items()}

    __hash__ = object.__hash__

    def __repr__(self):
        return f"Box({sorted(vars(self))})"
