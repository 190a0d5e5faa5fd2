"""Fuzzer program 50085: mismatch.
mismatch: set_grad_enabled made before a break restored the resumed code's mode
Run: python -m tests.oracles.found.fuzz_50085_set_grad_enabled_prev  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 50085
SRC = 'import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n@torch.no_grad()\ndef ng1(t):\n    return t * 2, torch.is_grad_enabled()\n@torch.enable_grad()\ndef eg1(t):\n    return (t * 3).requires_grad, torch.is_grad_enabled()\n@torch.inference_mode()\ndef im1(t):\n    return t + 1\n@torch.no_grad()\ndef ngb1(t):\n    a = t * 2\n    bytegraph.graph_break()\n    return a, (t * 2).requires_grad, torch.is_grad_enabled()\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    v = x[0, 0].item()\n    out.append(x * 2 if v > 0 else y * 3)\n    w = x.detach().requires_grad_()\n    with torch.set_grad_enabled(n % 2 == 0):\n        a = w * 2\n    out.append((a.requires_grad, torch.is_grad_enabled()))\n    return out, x, y\n'  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
