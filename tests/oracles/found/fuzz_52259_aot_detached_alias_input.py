"""Fuzzer program 52259: mismatch.
mismatch (raised): AOTAutograd synthetic base of x and x.detach() could not rebuild an output
Run: python -m tests.oracles.found.fuzz_52259_aot_detached_alias_input  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 52259
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n@torch.no_grad()\ndef ng0(t):\n    return t * 2, torch.is_grad_enabled()\n@torch.enable_grad()\ndef eg0(t):\n    return (t * 3).requires_grad, torch.is_grad_enabled()\n@torch.inference_mode()\ndef im0(t):\n    return t + 1\n@torch.no_grad()\ndef ngb0(t):\n    a = t * 2\n    bytegraph.graph_break()\n    return a, (t * 2).requires_grad, torch.is_grad_enabled()\n\n@torch.no_grad()\ndef ng1(t):\n    return t * 2, torch.is_grad_enabled()\n@torch.enable_grad()\ndef eg1(t):\n    return (t * 3).requires_grad, torch.is_grad_enabled()\n@torch.inference_mode()\ndef im1(t):\n    return t + 1\n@torch.no_grad()\ndef ngb1(t):\n    a = t * 2\n    bytegraph.graph_break()\n    return a, (t * 2).requires_grad, torch.is_grad_enabled()\n\nimport random\n\nimport numpy as np\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    w = x.detach().requires_grad_()\n    with torch.no_grad():\n        w.mul_(2)\n    out.append((w.requires_grad, w.is_leaf, w))\n    w = x.detach().requires_grad_()\n    with torch.set_grad_enabled(n % 2 == 0):\n        a = w * 2\n    out.append((a.requires_grad, torch.is_grad_enabled()))\n    out.append(list(itertools.zip_longest(lst, s, fillvalue='-')))\n    out.append(torch.from_numpy(np.stack([x.numpy(), y.numpy()])).sum(0))\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
