"""Fuzzer program 63366: bytegraph error.
call 0: InternalError: bytegraph failed to compile f (<fuzz_63366>:56): RuntimeError: one of the variables nee
Run: python -m tests.oracles.found.fuzz_63366  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 63366
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass R3:\n    count = 0\n    __slots__ = ('v', 'items')\n    def __init__(self, v):\n        self.v = v\n        self.items = {}\n        R3.count += 1\n    def __getitem__(self, key):\n        return self.items[key]\n    def __setitem__(self, key, val):\n        self.items[key] = val\n    def __contains__(self, key):\n        return key in self.items\n    def __iter__(self):\n        yield from sorted(self.items)\n    def __bool__(self):\n        return bool(self.items)\n    def __hash__(self):\n        return hash(self.v)\n    def __eq__(self, o):\n        return isinstance(o, R3) and o.v == self.v\nclass GA3:\n    real = 1\n    def __getattr__(self, name):\n        return name * 2\n@dataclasses.dataclass\nclass DC3:\n    a: int\n    b: list = dataclasses.field(default_factory=list)\n    def total(self):\n        return self.a + sum(self.b)\n\nclass N4(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(4, 4)\n        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))\n        self.gain = 2.0\n        self.mode = 'mean'\n    def forward(self, t):\n        h = self.body(self.lin(t.to(self.lin.weight.dtype))) * self.gain\n        if getattr(self, 'extra', None) is not None:\n            h = h + self.extra\n        return h.mean(0) if self.mode == 'mean' else h.sum(0)\n    def score(self, t, k=1):\n        return self(t).topk(k).values\n    def between_calls(self, call):\n        if call == 2:\n            self.lin.weight.requires_grad_(False)\ntorch.manual_seed(4 + 100)\nG_NET4 = N4()\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    dd = {**d, 'q': n}\n    out.append((len(dd), 'q' in dd, sorted(dd.values())))\n    out.append((x.float() ** 2).sum().item() >= 0 and x.numel() > 0)\n    if x.sum() > 0:\n        out.append(x + 1)\n    else:\n        out.append(x - 1)\n    dc = DC3(n, [1])\n    out.append((dataclasses.asdict(dc), dataclasses.replace(dc, a=0).a))\n    out.append(G_NET4(x))\n    x[x > 0] = 0\n    out.append(x)\n    return out\n"  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
