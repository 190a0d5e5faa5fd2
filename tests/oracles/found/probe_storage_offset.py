"""Found while probing tensor state: `x.storage_offset()` of an input (or of a view of one) was answered
from the first call's input and not guarded (the tensor guard checks sizes and strides): an input of
the same size at another offset kept the first offset."""
import sys

import torch

import bytegraph


def f(x):
    return x[1:].storage_offset()


opt = bytegraph.compile(f, backend="eager")
inputs = [torch.arange(6.0)[2:4], torch.arange(6.0)[0:2]]
eager = [f(t) for t in inputs]
compiled = [opt(t) for t in inputs]
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
sys.exit(not ok)
