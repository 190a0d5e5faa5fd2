"""Fuzzer program 664: mismatch.
inductor wrapper returned math.floor(s0 / 2) without importing math: NameError
Run: python -m tests.oracles.found.fuzz_664_inductor_math_import  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 664
SRC = 'import collections, contextlib, functools, itertools, math, operator\nimport torch\ndef gen1(m):\n    yield from range(m)\n    yield -1\n\ndef gen2(t, m):\n    for i in range(m):\n        yield t * i\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(x if n % 2 else y)\n    out.append(list(gen1(n % 4)))\n    out.append(sum(gen2(x, 3)))\n    out.append(x[0].clone())\n    out.append((x > 0) & (y < 1))\n    out.append((math.floor(n / 2), math.sqrt(n * n), math.isclose(0.1 + 0.2, 0.3), math.pi * n))\n    return (out, x + y, n)\n'  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
