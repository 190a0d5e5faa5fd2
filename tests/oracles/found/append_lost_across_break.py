"""Found by the fuzzer (seeds 2, 4, 18, 25, 32, 33, 35, 40, 41, 48, 56, ...): `out.append(<expr>)` where
<expr> graph-breaks (str/repr of a list or a user object, sum() over a user iterable, .tolist()) drops the
append when `out` was created in the frame and this is the first break: at the break the new list is
rebuilt twice, once for the local `out` and once for the bound method `out.append` waiting on the stack,
so the append lands in a copy. Eager: ['[3]', 6, 'P(3)', [2.0]]. Compiled: [6, 'P(3)', [2.0]] - a
silently wrong result (later appends, after `out` exists as a real object, are kept)."""
import sys

import torch

import bytegraph


class P:
    def __init__(self, v):
        self.v = v

    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return self.v * i

    def __repr__(self):
        return "P(%r)" % (self.v,)


def f(x, lst):
    out = []
    out.append(str(lst))      # list.__str__ is not traceable: a break inside the call's arguments
    out.append(sum(P(2)))
    out.append(repr(P(3)))
    out.append(x.tolist()[:1])
    return out


x = torch.ones(2) * 2
eager = f(x, [3])
compiled = bytegraph.compile(f, backend="eager")(x, [3])
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
sys.exit(not ok)
