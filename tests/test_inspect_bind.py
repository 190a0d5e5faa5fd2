"""inspect.Signature.bind folded on constant arguments, then its BoundArguments used in the trace:
apply_defaults reads the signature back from the object (an immutable value, folded like
inspect.signature's result)."""
from __future__ import annotations

import inspect

import torch

from helpers import standard_test


def _target(a, b=2, *args, c, d=4, **kw):
    return a


def bind_apply_defaults(x):
    bound = inspect.signature(_target).bind(1, 5, 6, c=3, z=9)
    bound.apply_defaults()
    return x + 1, dict(bound.arguments), bound.args, bound.kwargs


def bind_partial_apply_defaults(x):
    bound = inspect.signature(_target).bind_partial(1)
    bound.apply_defaults()
    return x * 2, dict(bound.arguments)


def parameters_of_bound_signature(x):
    bound = inspect.signature(_target).bind(1, c=3)
    kinds = [(name, str(p.kind), p.default) for name, p in bound.signature.parameters.items()]
    return x - 1, kinds


def test_apply_defaults_in_one_graph():
    standard_test(bind_apply_defaults, torch.arange(3.0), frames=1, breaks=0)


def test_bind_partial_apply_defaults_in_one_graph():
    standard_test(bind_partial_apply_defaults, torch.arange(3.0), frames=1, breaks=0)


def test_parameters_of_the_bound_signature():
    standard_test(parameters_of_bound_signature, torch.arange(3.0), frames=1, breaks=0)
