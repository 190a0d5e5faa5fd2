"""Found while probing monkeypatched functions: the graph calls tensor methods and operators by name, and
torch.Tensor's entry for them was not guarded; with a backend that traces through them (aot_eager,
inductor) a method or operator replaced on torch.Tensor between calls kept the old one."""
import sys

import torch

import bytegraph


def f(x):
    return x.add(1) * 2


opt = bytegraph.compile(f, backend="aot_eager")
x = torch.ones(2)
ok = torch.equal(opt(x), f(x))
saved_add, saved_mul = torch.Tensor.add, torch.Tensor.__mul__
torch.Tensor.add = lambda self, o: torch.sub(self, o)
torch.Tensor.__mul__ = lambda self, o: torch.sub(self, o)
try:
    ok = ok and torch.equal(opt(x), f(x))
finally:
    torch.Tensor.add, torch.Tensor.__mul__ = saved_add, saved_mul
print("OK" if ok else "MISMATCH: the replaced torch.Tensor methods were not seen")
sys.exit(not ok)
