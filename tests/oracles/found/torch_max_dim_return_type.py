"""Found by the fuzzer (seeds 24, 29): `x.max(dim=1)` compiled returns a plain tuple, not
torch.return_types.max, so `.values` raises AttributeError where eager works (same for torch.max(x, 1),
x.min(dim=...), torch.sort, torch.topk ... : every op returning a torch.return_types structseq)."""
import sys

import torch

import bytegraph


def f(x):
    a = x.max(dim=1)
    b = torch.sort(x, dim=0)
    c = x.topk(2)
    return a.values, a.indices, b.values, c.indices, type(a).__name__


x = torch.arange(12.0).reshape(3, 4)
eager = f(x)
try:
    compiled = bytegraph.compile(f, backend="eager")(x)
    ok = all(torch.equal(u, v) for u, v in zip(eager[:4], compiled[:4])) and eager[4] == compiled[4]
    print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
except Exception as e:  # noqa: BLE001
    ok = False
    print(f"MISMATCH: eager ran, compiled raised {type(e).__name__}: {e}")
sys.exit(not ok)
