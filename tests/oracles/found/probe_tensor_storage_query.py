"""Found while probing tensor state: a no-argument query of an input tensor answered by its fake value
(`x.is_shared()`, `x._is_view()`) was neither guarded nor true to the input (a fake carries no storage
facts): an input moved to shared memory, or a view passed where a plain tensor was, kept the first answer."""
import sys

import torch

import bytegraph

box = [torch.ones(2)]


def f(x):
    return box[0].is_shared(), box[0]._is_view()


opt = bytegraph.compile(f, backend="eager")
x = torch.ones(2)
results = [(f(x), opt(x))]
box[0].share_memory_()
results.append((f(x), opt(x)))
box[0] = torch.ones(4)[:2]
results.append((f(x), opt(x)))
ok = all(e == c for e, c in results)
print("OK" if ok else f"MISMATCH: (eager, compiled) {results!r}")
sys.exit(not ok)
