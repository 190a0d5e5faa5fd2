"""Constructs of the dynamo probes (tests/oracles/dynamo_probes) that torch.compile captures whole:
each test compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it fails
if the construct ran eagerly."""
from __future__ import annotations

import torch

import bytegraph

from helpers import standard_test


# -- attributes of a function made in the frame --------------------------------------------------------
def test_function_attributes_set_read_and_returned():
    def fn(x):
        def f():
            return f.flag + len(f.seen)
        f.flag = 3
        f.seen = [x]
        f.flag += 1
        g = lambda: 0   # noqa: E731
        return x + f(), hasattr(g, "flag"), getattr(g, "flag", 7), [f]
    x = torch.ones(2)
    standard_test(lambda x: fn(x)[:3], x, frames=1, breaks=0, fullgraph=True)
    f = bytegraph.compile(fn, backend="eager", fullgraph=True)(x)[3][0]
    assert f.__dict__ == {"flag": 4, "seen": [x]} and f() == 5     # the rebuilt function has them


def test_function_attribute_missing_raises_eagers_error():
    def fn(x):
        def f():
            return 1
        f.a = 1
        return f.b, x
    assert standard_test(fn, torch.ones(2), frames=0) == "AttributeError"


def test_function_type_attribute_write_breaks():
    def fn(x):
        def f(a=1):
            return a
        f.__defaults__ = (2,)
        return x + f()
    standard_test(fn, torch.ones(2), frames=0, breaks=1)
