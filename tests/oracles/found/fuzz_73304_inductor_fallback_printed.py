"""Fuzzer program 73304: mismatch.
call 0: printed: eager '' vs compiled ' return forward_call(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^^^
Run: python -m tests.oracles.found.fuzz_73304_inductor_fallback_printed  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 73304
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\ndef pick1(t, j, log):\n    try:\n        return t[j]\n    finally:\n        log.append('picked')\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append([t.sum() for t in (x, y) if t.dim() == 2])\n    w = x.detach().requires_grad_()\n    j = (x[0].abs() * 4).long()\n    try:\n        out.append((w * 2)[j].sum())\n    except IndexError:\n        out.append(torch.is_grad_enabled())\n    x = x * 2 + y\n    out.append(d.get('missing', n) + d.setdefault('a', 7))\n    y.mul_(n)\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
