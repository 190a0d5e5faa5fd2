"""Found by the dynamo probes (probes_tensor_state::leafness_changes_between): an input's is_leaf (and
grad_fn of a leaf) was answered from the first call's tensor; the tensor guard checks requires_grad,
not leaf-ness, so a non-leaf passed later (`x * 2`) kept the leaf's answers (torch.compile too)."""
import sys

import torch

import bytegraph


def f(t):
    return t.is_leaf, t.grad_fn is None


leaf = torch.ones(2, requires_grad=True)
opt = bytegraph.compile(f, backend="eager")
eager = [f(leaf), f(leaf * 2)]
compiled = [opt(leaf), opt(leaf * 2)]
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
sys.exit(not ok)
