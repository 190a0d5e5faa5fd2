"""Fuzzer program 3065: bytegraph error.
sorted(reverse=n % 2 == 0) with n symbolic: internal error
Run: python -m tests.oracles.found.fuzz_3065_symbolic_sort_flag  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 3065
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    rows, cols = x.shape\n    out.append(x.reshape(cols, rows) if rows != cols else x)\n    fs = [lambda v, i=i: v + i for i in range(3)]\n    out.append([g(n) for g in fs])\n    out.append(sorted(set(lst), reverse=n % 2 == 0))\n    z = x\n    z += 1\n    out.append((x is z, z.sum()))\n    out.append(x.numel() // x.shape[-1] == x.shape[0])\n    d['t'] = n\n    out.append(x * d['t'])\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=True)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
