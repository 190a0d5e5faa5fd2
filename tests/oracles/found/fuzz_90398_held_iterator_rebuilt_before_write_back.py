"""Fuzzer program 90398: mismatch.
call 0: return[0][3]: len 1 vs 3: [('RuntimeError', 'dictionary changed size during iteration')] vs [('b', 2),
Run: python -m tests.oracles.found.fuzz_90398_held_iterator_rebuilt_before_write_back  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 90398
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n@bytegraph.disable\ndef hold0(make, *args):\n    return make(*args)\n@bytegraph.disable\ndef drain0(it, m):\n    got = []\n    for _ in range(m):\n        try:\n            got.append(next(it))\n        except StopIteration:\n            got.append('stop')\n            break\n        except RuntimeError as e:\n            got.append(('RuntimeError', str(e)))\n            break\n    return got\n\nLOGB1 = []\nclass CMB1:\n    def __init__(self, tag):\n        self.tag = tag\n    def __enter__(self):\n        LOGB1.append(('in', self.tag))\n        return self.tag\n    def __exit__(self, et, ev, tb):\n        LOGB1.append(('out', self.tag, et.__name__ if et else None))\n        return et is KeyError\ndef genb1(t, m):\n    for i in range(m):\n        yield t * i\n        bytegraph.graph_break()\ndef innerb1(v, t):\n    bytegraph.graph_break()\n    if v > 3:\n        raise ValueError('inner', v)\n    return t * v\n\n@bytegraph.disable\ndef hold2(make, *args):\n    return make(*args)\n@bytegraph.disable\ndef drain2(it, m):\n    got = []\n    for _ in range(m):\n        try:\n            got.append(next(it))\n        except StopIteration:\n            got.append('stop')\n            break\n        except RuntimeError as e:\n            got.append(('RuntimeError', str(e)))\n            break\n    return got\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    c = d\n    c.pop('a', None)\n    it = iter(c.items())\n    out.append(drain0(it, 0))\n    out.append(x * len(c))\n    c.setdefault('w', 0)\n    c.pop(1, None)\n    out.append(y + len(c))\n    out.append(drain0(it, 8))\n    out.append([(kk, type(kk).__name__) for kk in c])\n    gz = (t * 2 for t in (x, y))\n    out.append(next(gz))\n    bytegraph.graph_break()\n    out.append(next(gz, None))\n    c = set(lst)\n    c.discard(n + 8)\n    it = hold2(lambda: zip(c, 'abcdef'))\n    out.append(drain2(it, 2))\n    out.append(x * len(c))\n    c.remove(3) if 3 in c else None\n    c.update(dict.fromkeys([5, 13]))\n    out.append(y + len(c))\n    out.append(drain2(it, 8))\n    out.append([(kk, type(kk).__name__) for kk in c])\n    return (out, x + y, n)\n"  # noqa: E501
OPTIONS = dict(backend='eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
