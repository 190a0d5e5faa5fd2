"""Fuzzer program 90675: mismatch.
call 1: return[7][6][0]: 4 vs 3
Run: python -m tests.oracles.found.fuzz_90675_held_cell_rebuilt_after_write_back  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 90675
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\n@bytegraph.disable\ndef hold4(make, *args):\n    return make(*args)\n@bytegraph.disable\ndef drain4(it, m):\n    got = []\n    for _ in range(m):\n        try:\n            got.append(next(it))\n        except StopIteration:\n            got.append('stop')\n            break\n        except RuntimeError as e:\n            got.append(('RuntimeError', str(e)))\n            break\n    return got\n\n@bytegraph.disable\ndef hold5(make, *args):\n    return make(*args)\n@bytegraph.disable\ndef drain5(it, m):\n    got = []\n    for _ in range(m):\n        try:\n            got.append(next(it))\n        except StopIteration:\n            got.append('stop')\n            break\n        except RuntimeError as e:\n            got.append(('RuntimeError', str(e)))\n            break\n    return got\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    x = torch.relu(x - 0.5)\n    lst[1:2] = [n, n, n]\n    out.append(list(reversed(lst)))\n    out.append((True + 2, False * 3.5, n * 1.0 is not None, int(True) + n))\n    out.append([t.sum() for t in (x, y) if t.dim() == 2])\n    c = collections.deque(lst)\n    it = hold4(lambda: iter(c))\n    out.append(drain4(it, 1))\n    out.append(x * len(c))\n    c.extend([n, 5])\n    bytegraph.graph_break()\n    c.appendleft(n)\n    c.appendleft(n)\n    out.append(y + len(c))\n    out.append(drain4(it, 8))\n    out.append([(kk, type(kk).__name__) for kk in c])\n    c = d\n    c.pop('a', None)\n    it = hold5(lambda: iter(c.items()))\n    out.append(drain5(it, 0))\n    out.append(x * len(c))\n    c[True] = 't'\n    c |= {'c': 9, 'y': n}\n    bytegraph.graph_break()\n    out.append(y + len(c))\n    out.append(drain5(it, 8))\n    out.append([(kk, type(kk).__name__) for kk in c])\n    return out\n"  # noqa: E501
OPTIONS = dict(backend='aot_eager', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
