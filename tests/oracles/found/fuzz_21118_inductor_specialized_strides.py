"""Fuzzer program 21118: mismatch.
a symbolic graph specialized per size promised strides with an unbound symbol: NameError
Run: python -m tests.oracles.found.fuzz_21118_inductor_specialized_strides  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 21118
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    match lst:\n        case []:\n            out.append('empty')\n        case [a]:\n            out.append(('one', a))\n        case [a, b, *rest]:\n            out.append((a, b, len(rest)))\n    out.append((n < 3.5, 3 == 3.0, 'a' < s, [1] * n, 0 < n <= 5, n != None))\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=True)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
