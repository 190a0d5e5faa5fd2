"""Fuzzer program 23363: mismatch.
a global bound to `abs`, already tracked as a builtin (no source): its rebinding was unguarded, stale graph
Run: python -m tests.oracles.found.fuzz_23363_builtin_bound_to_a_global  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 23363
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nG_FLAG1 = True\nG_FN1 = abs\nG_CFG1 = {'scale': 3, 'on': True}\nclass G_CLS1:\n    scale = 2\n    items = []\n\nclass E2(ValueError):\n    pass\n\nG_FLAG4 = True\nG_FN4 = abs\nG_CFG4 = {'scale': 3, 'on': True}\nclass G_CLS4:\n    scale = 2\n    items = []\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append((min(lst, key=abs, default=0), max(n, 2, 7), abs(-n), any(v > n for v in lst)))\n    out.append(G_FN1(x - 0.5))\n    try:\n        int(s)\n    except (TypeError, ValueError) as e:\n        out.append(type(e).__name__)\n    out.append(list(map(lambda v: v * n, filter(None, lst))))\n    fn = G_FN4\n    out.append(fn(n - 5))\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=True, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
