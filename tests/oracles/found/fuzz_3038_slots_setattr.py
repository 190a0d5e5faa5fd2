"""Fuzzer program 3038: mismatch.
setting a non-slot attribute did not raise inside the try
Run: python -m tests.oracles.found.fuzz_3038_slots_setattr  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 3038
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass R1:\n    count = 0\n    __slots__ = ('v', 'items')\n    def __init__(self, v):\n        self.v = v\n        self.items = {}\n        R1.count += 1\n    def __getitem__(self, key):\n        return self.items[key]\n    def __setitem__(self, key, val):\n        self.items[key] = val\n    def __contains__(self, key):\n        return key in self.items\n    def __iter__(self):\n        yield from sorted(self.items)\n    def __bool__(self):\n        return bool(self.items)\n    def __hash__(self):\n        return hash(self.v)\n    def __eq__(self, o):\n        return isinstance(o, R1) and o.v == self.v\nclass GA1:\n    real = 1\n    def __getattr__(self, name):\n        return name * 2\n@dataclasses.dataclass\nclass DC1:\n    a: int\n    b: list = dataclasses.field(default_factory=list)\n    def total(self):\n        return self.a + sum(self.b)\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    d['k%d' % n] = x.shape[0]\n    out.append(sorted(d.items()))\n    try:\n        R1(n).w = 1\n    except AttributeError as e:\n        out.append(type(e).__name__)\n    fs = frozenset(s)\n    out.append((len(fs), 'a' in fs, sorted(fs - {'a'})))\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
