"""`bytegraph.disable`: functions the frame hook never compiles.

Hot path: the wrapper runs on every call; it only turns the hook off for the call. It depends on
nothing but the hook, so the frontend can recognize the wrapper's code without importing the
compiler (frontend/builder.py).
"""
from __future__ import annotations

import functools

import torch

from . import _C


def _disabled_wrapper_template(fn):
    @functools.wraps(fn)
    def _bytegraph_disabled_call(*args, **kwargs):
        prev = _C.set_callback(None)
        try:
            return fn(*args, **kwargs)
        finally:
            _C.set_callback(prev)
    _bytegraph_disabled_call._bytegraph_disabled = True
    return _bytegraph_disabled_call


def disabled_wrapper_code():
    return _disabled_wrapper_template(lambda: None).__code__


def disable(fn=None):
    """Never compile `fn` (nor what it calls); inside compiled code, calling it is a graph break."""
    if fn is None:
        return disable
    if isinstance(fn, torch.nn.Module):
        fn.forward = disable(fn.forward)
        return fn
    return _disabled_wrapper_template(fn)
