"""Fuzzer program 40683: bytegraph error.
inputs over one memory, one a view, one written: AOTAutograd asserted (non-differentiable view): now run as traced
Run: python -m tests.oracles.found.fuzz_40683_inductor_view_input_mutations  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 40683
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nG_T3 = torch.tensor(5)\nG_F3 = torch.tensor(3.25, dtype=torch.float64)\n\nLOGB4 = []\nclass CMB4:\n    def __init__(self, tag):\n        self.tag = tag\n    def __enter__(self):\n        LOGB4.append(('in', self.tag))\n        return self.tag\n    def __exit__(self, et, ev, tb):\n        LOGB4.append(('out', self.tag, et.__name__ if et else None))\n        return et is KeyError\ndef genb4(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\ndef innerb4(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n    return t * v\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    rows, cols = x.shape\n    out.append(x.reshape(cols, rows) if rows != cols else x)\n    out.append(str(x.shape) + repr(x.dtype))\n    z = x\n    z += 1\n    out.append((x is z, z.sum()))\n    out.append(torch.arange(0, G_F3, 0.5).sum() * x)\n    i = 0\n    while i < 3:\n        i += 1\n        if i == n:\n            bytegraph.graph_break()\n            continue\n        y = y + i\n    out.append(y)\n    out.append((x > 0) & (y < 1))\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
