"""Found by the CPython-suite oracle (test_iter test_in_and_not_in): an argument that is also an item of
a tuple argument is guarded "o is t[0]"; called again with an empty tuple, explaining the recompile
evaluated t[0] and raised IndexError out of the user's call (explaining a guard failure must never raise)."""
import sys

import torch

import bytegraph


def f(x, t, o):
    return x + len(t) + len(o)


shared = [1]
opt = bytegraph.compile(f, backend="eager")
results = []
for t in ((shared,), ()):
    try:
        results.append(torch.equal(opt(torch.ones(2), t, shared), f(torch.ones(2), t, shared)))
    except Exception as e:  # noqa: BLE001 - the bug: an exception out of the guard-failure explanation
        results.append(f"{type(e).__name__}: {e}")
ok = results == [True, True]
print("OK" if ok else f"MISMATCH: {results}")
sys.exit(not ok)
