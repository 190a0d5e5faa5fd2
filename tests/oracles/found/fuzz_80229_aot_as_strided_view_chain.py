"""Fuzzer program 80229: bytegraph error.
call 0: InternalError: AOTAutograd refused a mutation on a view chain ending in as_strided (aten.t_ twice, the
Run: python -m tests.oracles.found.fuzz_80229_aot_as_strided_view_chain  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 80229
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    torch.ops.aten.t_(y)\n    lst.append(y.shape[0])\n    try:\n        out.append(y[(x[0, :2].abs() * 4).long()])\n    finally:\n        torch.ops.aten.t_(y)\n    y.as_strided((2,), (1,), y.storage_offset()).add_(1)\n    lst.append(n)\n    out.append(y.flatten()[(x[0, :2].abs() * 4).long()])\n    x.unsqueeze_(1)\n    x.add_(0.5)\n    d['u'] = x.shape[1]\n    try:\n        out.append(x[:, 0][(x[0, :2].abs() * 4).long()])\n    except IndexError:\n        out.append('oob')\n    x.squeeze_(1)\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
