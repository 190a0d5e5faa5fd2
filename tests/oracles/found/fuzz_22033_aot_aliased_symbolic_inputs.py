"""Fuzzer program 22033: bytegraph error.
inputs over one memory (x, x.detach()) written in a dynamic graph: AOTAutograd failed inside torch
Run: python -m tests.oracles.found.fuzz_22033_aot_aliased_symbolic_inputs  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 22033
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nLOGB1 = []\nclass CMB1:\n    def __init__(self, tag):\n        self.tag = tag\n    def __enter__(self):\n        LOGB1.append(('in', self.tag))\n        return self.tag\n    def __exit__(self, et, ev, tb):\n        LOGB1.append(('out', self.tag, et.__name__ if et else None))\n        return et is KeyError\ndef genb1(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\ndef innerb1(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n    return t * v\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    d['t'] = n\n    out.append(x * d['t'])\n    try:\n        try:\n            bytegraph.graph_break()\n            raise KeyError(s)\n        finally:\n            out.append('inner-fin')\n    except KeyError as e:\n        out.append(('caught', e.args, x.sum()))\n    prev = torch.is_grad_enabled()\n    torch.set_grad_enabled(n % 2 == 0)\n    w = x.detach().requires_grad_()\n    out.append((w * 2).requires_grad)\n    torch.set_grad_enabled(prev)\n    t = x.detach()\n    t.add_(1)\n    out.append(x)\n    out.append(x.shape[0] * 1.5 + x.shape[1])\n    x.clamp_(min=0)\n    out.append(x)\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=True)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
