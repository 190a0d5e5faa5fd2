"""Fuzzer program 50001: bytegraph error.
internal error: list() of a user iterator class recursed
Run: python -m tests.oracles.found.fuzz_50001_user_iterator_recursion  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 50001
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass Base0:\n    registry = []\n    def __init__(self, v):\n        self._v = v\n    @property\n    def v(self):\n        return self._v\n    @v.setter\n    def v(self, val):\n        self._v = val * 2\n    def scaled(self, t):\n        return t * self.factor()\n    def factor(self):\n        return 1\n    @classmethod\n    def create(cls, v):\n        cls.registry.append(v)\n        return cls(v)\n    @staticmethod\n    def helper(a, b=2):\n        return a * b\nclass Child0(Base0):\n    def __init__(self, v, extra=1):\n        super().__init__(v)\n        self.extra = extra\n    def factor(self):\n        return super().factor() + self.extra\nclass Count0:\n    def __init__(self, m):\n        self.m = m\n        self.i = 0\n    def __iter__(self):\n        return self\n    def __next__(self):\n        if self.i >= self.m:\n            raise StopIteration\n        self.i += 1\n        return self.i * 2\nclass Key0:\n    def __init__(self, a):\n        self.a = a\n    def __eq__(self, o):\n        return isinstance(o, Key0) and self.a % 3 == o.a % 3\n    def __hash__(self):\n        return hash(self.a % 3)\n    def __len__(self):\n        return self.a % 4\n    def __contains__(self, v):\n        return v == self.a\n    def __bool__(self):\n        return self.a > 2\nclass Desc0:\n    def __set_name__(self, owner, name):\n        self.name = '_' + name\n    def __get__(self, obj, objtype=None):\n        if obj is None:\n            return self\n        return getattr(obj, self.name, 0) + 100\n    def __set__(self, obj, value):\n        setattr(obj, self.name, value * 3)\nclass HasDesc0:\n    d = Desc0()\n    shared = 1\nclass G_KS0:\n    level = 1\n    seen = []\n    @classmethod\n    def between_calls(cls, call):\n        cls.level += call\n        cls.seen.append(call)\n\nimport numpy as np\n\nimport random\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(sum(Count0(3)) * x)\n    a = x.numpy()\n    a *= 2\n    out.append(x.sum())\n    out.append(list(itertools.product(s[:2], range(2))) + list(itertools.combinations(lst[:4], 2)))\n    out.append((x * complex(1, n), (x.int() + 1j).dtype))\n    sz = x.size()\n    out.append((sz == (x.shape[0], 4), sz[1:] * 2, list(sz), sz.index(4)))\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
