"""Found by the dynamo probes (probes_misc::slots_attribute_missing_and_set): whether a `__slots__` member
holds a value was read once while tracing and not guarded, so `hasattr(o, "b")` stayed False after
the first call set the slot. Eager: [False, True]. Compiled (before the fix): [False, False]."""
import sys

import torch

import bytegraph


class S:
    __slots__ = ("a", "b")


def f(o, x):
    has = hasattr(o, "b")
    o.b = 4.0
    return has


eager_obj, compiled_obj = S(), S()
opt = bytegraph.compile(f, backend="eager")
x = torch.ones(2)
eager = [f(eager_obj, x) for _ in range(2)]
compiled = [opt(compiled_obj, x) for _ in range(2)]
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
sys.exit(not ok)
