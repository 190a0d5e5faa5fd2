"""Whether eager's kernel refuses a call that fake propagation accepted.

Fake kernels check shapes, not the operand dtypes many eager kernels insist on: `F.layer_norm` of a
float64 input with float32 weights, `index_put_` of float64 values into a float32 tensor, `linear`,
`cross`, `nll_loss`... (benchmarks/fake_strictness.py lists ~90 ops, measured). Traced as accepted,
such a call makes a graph that raises at run time, part way through, after its earlier writes and
without the Python side effects replayed after it -- or, compiled by inductor, returns a value where
eager raises. So a call whose tensor operands carry more than one floating dtype is first run on real
zero-filled stand-ins of the same sizes, dtypes and devices: if that raises, the call runs as Python
and raises there as in eager. Operands of one dtype skip the check (the common case costs nothing).
"""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from .quiet_warnings import filters_set_to


def _hint(value):
    """A symbolic number's value in this trace (None when it has none: an unbacked size)."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.hint
    return value


class _NoStandIn(Exception):
    pass


def _stand_in(value):
    if isinstance(value, torch.Generator):
        raise _NoStandIn    # drawing from the program's own generator would move its stream
    if isinstance(value, torch.Tensor):
        sizes = [_hint(s) for s in value.shape]
        if value.device.type == "meta" or any(s is None for s in sizes):
            raise _NoStandIn
        return torch.zeros(sizes, dtype=value.dtype, device=value.device)
    hint = _hint(value)
    if hint is None:
        raise _NoStandIn
    return hint


def has_mixed_float_dtypes(fake_args, fake_kwargs) -> bool:
    leaves = pytree.tree_leaves((fake_args, fake_kwargs))
    dtypes = {x.dtype for x in leaves if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())}
    return len(dtypes) > 1


def eager_refusal(kind: str, target, fake_args, fake_kwargs) -> str | None:
    """Eager's error for this call (its first line), or None when eager accepts it or the call
    cannot be tried (an unbacked size, a meta tensor: fake propagation is all there is then).
    Called outside fake mode, under the trace's grad and autocast state."""
    if not has_mixed_float_dtypes(fake_args, fake_kwargs):
        return None
    try:
        args, kwargs = pytree.tree_map(_stand_in, (fake_args, fake_kwargs))
    except _NoStandIn:
        return None
    cuda = sorted({x.device.index or 0 for x in pytree.tree_leaves((args, kwargs))
                   if isinstance(x, torch.Tensor) and x.device.type == "cuda"})
    # the stand-ins must not move the program's random streams or print its warnings twice
    with torch.random.fork_rng(devices=cuda), filters_set_to("ignore"), torch.no_grad():
        try:
            if kind == "call_function":
                target(*args, **kwargs)
            else:
                getattr(args[0], target)(*args[1:], **kwargs)
        except Exception as e:      # noqa: BLE001 -- any refusal: the call runs as Python and raises there
            return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None
