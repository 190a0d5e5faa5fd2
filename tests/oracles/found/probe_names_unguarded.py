"""Found by the dynamo probes (probes_misc2::function_name_changed_between, class_name_changed_between):
`fn.__name__` and `Cls.__name__` (also __qualname__, __module__, __doc__, and `Cls.__mro__`) were folded
to the values seen while tracing, with no guard; and a bound method's __name__ was its code's co_name,
not the function's own (renamed) __name__."""
import sys

import torch

import bytegraph


def g(t):
    return t


class C:
    pass


def body(self):
    return 0


body.__name__ = "given"
C.m = body


def f(x):
    return g.__name__, C.__name__, C().m.__name__


opt = bytegraph.compile(f, backend="eager")
x = torch.ones(2)
results = []
for _ in range(2):
    results.append((f(x), opt(x)))
    g.__name__ += "x"
    C.__name__ += "y"
ok = all(e == c for e, c in results)
print("OK" if ok else f"MISMATCH: {results!r}")
sys.exit(not ok)
