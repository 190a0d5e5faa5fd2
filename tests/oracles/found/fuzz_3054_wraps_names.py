"""Fuzzer program 3054: mismatch.
functools.wraps left the wrapper's __name__ 'w' (eager: 'base')
Run: python -m tests.oracles.found.fuzz_3054_wraps_names  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 3054
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    def deco(fn):\n        @functools.wraps(fn)\n        def w(*a, **kw):\n            return fn(*a, **kw) + 1\n        return w\n    @deco\n    def base(a, b=2):\n        return a * b\n    out.append((base(n), base(x, b=n), base.__name__))\n    out.append([(i, c) for i, c in enumerate(s) if i < n])\n    return out, x, y\n'  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
