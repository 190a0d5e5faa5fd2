"""Fuzzer program 114: segfault.
explaining a miss guard by guard ran the memory-sharing check on a non-tensor
Run: python -m tests.oracles.found.fuzz_114_memory_sharing_explained  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 114
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nLOGB0 = []\nclass CMB0:\n    def __init__(self, tag):\n        self.tag = tag\n    def __enter__(self):\n        LOGB0.append(('in', self.tag))\n        return self.tag\n    def __exit__(self, et, ev, tb):\n        LOGB0.append(('out', self.tag, et.__name__ if et else None))\n        return et is KeyError\ndef genb0(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\ndef innerb0(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n    return t * v\n\nLOGB2 = []\nclass CMB2:\n    def __init__(self, tag):\n        self.tag = tag\n    def __enter__(self):\n        LOGB2.append(('in', self.tag))\n        return self.tag\n    def __exit__(self, et, ev, tb):\n        LOGB2.append(('out', self.tag, et.__name__ if et else None))\n        return et is KeyError\ndef genb2(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\ndef innerb2(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n    return t * v\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    buf = io.StringIO()\n    try:\n        print(n, s, file=buf)\n        if n > 3:\n            raise KeyError(n)\n        out.append(x * 2)\n    except KeyError as e:\n        out.append(e.args)\n    finally:\n        out.append(buf.getvalue())\n    alias = [x]\n    alias[0].sub_(1)\n    out.append(x.mean())\n    try:\n        out.append(innerb2(n, x))\n    except ValueError as e:\n        out.append(e.args)\n    return out, x, y\n\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=True)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
