"""Fuzzer program 675: bytegraph error.
inductor printed a symbolic clamp bound as a constant: internal error
Run: python -m tests.oracles.found.fuzz_675_inductor_symbolic_clamp  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 675
SRC = 'import collections, contextlib, functools, itertools, math, operator\nimport torch\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(x[0].clone())\n    out.append((x.mean(), x.max(dim=1).values, x.argmax()))\n    out.append(torch.clamp(x, min=-1, max=n))\n    return out\n'  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
