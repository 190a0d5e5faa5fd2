"""Found by the fuzzer (seed 83401, inductor, --dynamic): `np.float64(v) + n` with n a symbolic int gave a
plain float (torch's symbolic arithmetic), eager a numpy float64. The same class: `max(n, 2.5)` gave a
float where eager gives n itself, and `n.__add__(2.5)` a number where eager gives NotImplemented."""
import sys

import numpy as np
import torch

import bytegraph


def f(x, n):
    return x + 1, np.float64(2.5) + n, max(n, 2.5), n.__add__(2.5)


x = torch.ones(2)
opt = bytegraph.compile(f, backend="eager", dynamic=True)
for n in (3, 4):
    eager, compiled = f(x, n)[1:], opt(x, n)[1:]
    ok = [type(v) for v in eager] == [type(v) for v in compiled] and eager == compiled
    if not ok:
        break
print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
sys.exit(not ok)
