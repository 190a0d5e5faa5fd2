"""inspect.Signature.bind folded on constant arguments, then its BoundArguments used in the trace:
apply_defaults reads the signature back from the object (an immutable value, folded like
inspect.signature's result)."""
from __future__ import annotations

import inspect

import torch

import bytegraph

from helpers import compiled, standard_test


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


def bind_keeps_the_programs_list(x):
    items = [1]
    bound = inspect.signature(_target).bind(items, c=3)
    bound.arguments["a"].append(2)       # the program's own list, not a copy made for folding
    return x + 1, items, bound.arguments["a"] is items


def test_folded_call_keeping_an_argument_container_is_not_folded():
    standard_test(bind_keeps_the_programs_list, torch.arange(3.0), frames=1, breaks=1)


def returns_bound_arguments(x):
    return x + 1, inspect.signature(_target).bind(1, c=3)


def test_folded_new_object_is_new_at_each_call():
    bytegraph.reset()
    opt, _ = compiled(returns_bound_arguments)
    first, second = opt(torch.arange(3.0))[1], opt(torch.arange(3.0))[1]
    assert first is not second and first.arguments is not second.arguments   # as eager: a new one each call
    assert first == returns_bound_arguments(torch.arange(3.0))[1]
    assert len(bytegraph.stats.break_records) >= 1
