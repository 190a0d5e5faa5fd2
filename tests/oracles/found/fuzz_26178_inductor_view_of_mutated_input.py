"""Fuzzer program 26178: mismatch.
t = x[:, 1:] then x.mul_(2): t was computed in memory of its own, not over x (functionalization lost the alias)
Run: python -m tests.oracles.found.fuzz_26178_inductor_view_of_mutated_input  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 26178
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass P1:\n    tag = 'p1'\n    def __init__(self, v):\n        self.v = v\n    @property\n    def double(self):\n        return self.v * 2\n    def __add__(self, o):\n        return P1(self.v + (o.v if isinstance(o, P1) else o))\n    def __radd__(self, o):\n        return P1(o + self.v)\n    def __eq__(self, o):\n        return isinstance(o, P1) and self.v == o.v\n    def __len__(self):\n        return 3\n    def __getitem__(self, i):\n        if i >= 3:\n            raise IndexError(i)\n        return self.v * i\n    def __repr__(self):\n        return 'P1(%r)' % (self.v,)\n    @classmethod\n    def make(cls, v):\n        return cls(v + 1)\n    @staticmethod\n    def unit():\n        return 1\nclass Q1(P1):\n    def __init__(self, v):\n        super().__init__(v * 10)\n    @property\n    def double(self):\n        return super().double + 1\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(x.view(x.shape[0] * 2, -1).shape)\n    p = P1(n)\n    out.append(p.double + (p + 1).v)\n    out.append({c: s.count(c) for c in s})\n    t = x[:, 1:]\n    x.mul_(2)\n    out.append(t)\n    w = x.detach().requires_grad_()\n    g, = torch.autograd.grad(w.sin().sum(), [w])\n    out.append(g)\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
