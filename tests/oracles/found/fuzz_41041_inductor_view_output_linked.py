"""Fuzzer program 41041: mismatch.
t = x[:, 1:] and x.detach() returned: requires_grad_() on the detach reached t, an as_strided view of it
Run: python -m tests.oracles.found.fuzz_41041_inductor_view_output_linked  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 41041
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    x = x.clone()\n    x[0] = n\n    t = x[:, 1:]\n    x.mul_(2)\n    out.append(t)\n    w = x.detach().requires_grad_()\n    g, = torch.autograd.grad(w.sin().sum(), [w])\n    out.append(g)\n    out.append({c: s.count(c) for c in s})\n    out.append((min(lst, key=abs, default=0), max(n, 2, 7), abs(-n), any(v > n for v in lst)))\n    return (out, x + y, n)\n'  # noqa: E501
OPTIONS = dict(backend='inductor', shared=True, dynamic=True)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
