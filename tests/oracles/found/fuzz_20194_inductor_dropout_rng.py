"""Fuzzer program 20194: mismatch.
dynamic-shape recompile traced dropout as native_dropout: other random numbers than eager
Run: python -m tests.oracles.found.fuzz_20194_inductor_dropout_rng  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 20194
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    torch.manual_seed(n)\n    out.append(torch.nn.functional.dropout(x, p=0.5, training=True))\n    out.append(list(torch.split(x, 2, dim=1)))\n    i = 0\n    while i < n and i < 5:\n        i += 1\n        if i == 2:\n            continue\n        out.append(i)\n    out.append(x.new_zeros(2) + torch.full((2,), n))\n    out.append(int(x.shape[0]) * x.max())\n    return (out, x + y, n)\n'  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
