"""Fuzzer program 20156: mismatch.
x.detach() returned x itself; requires_grad_() on it flagged the caller's tensor
Run: python -m tests.oracles.found.fuzz_20156_inductor_detach_output  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 20156
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    def gen_c():\n        v = 0\n        while True:\n            got = yield v\n            v += got or 1\n    gc = gen_c()\n    next(gc)\n    gc.send(n)\n    out.append(next(gc))\n    w = x.detach().requires_grad_()\n    loss = (w * w).sum()\n    loss.backward()\n    out.append(w.grad)\n    return out\n'  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
