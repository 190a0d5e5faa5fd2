"""Fuzzer program 80008: mismatch.
call 0: return[2]: tensor values differ (_foreach_add_([x, y], [y, x]) read the old x for y under inductor)
Run: python -m tests.oracles.found.fuzz_80008_inductor_foreach_reads_written  (prints OK or MISMATCH)
once kept in tests/oracles/found/, where tests/test_oracles_quick.py runs it."""
import sys

from tests.oracles.fuzz import check

SEED = 80008
SRC = "import collections, contextlib, dataclasses, functools, io, itertools, math, operator\nimport torch\nimport bytegraph\nclass E3(ValueError):\n    pass\n\ndef f(x, y, n, s, lst, d):\n    out = []\n    out.append(x.sum() + n)\n    del lst[0]\n    out.append(lst.copy())\n    torch._foreach_add_([x, y], [y, x], alpha=0.5)\n    d['fe'] = n\n    out.append(x.flatten()[(x[0, :2].abs() * 4).long()])\n    try:\n        out.append(10 // (n - n))\n    except ZeroDivisionError as e:\n        out.append(str(e))\n    out.append(str(lst) + repr(d.get('a')) + format(n, 'x'))\n    return out, x, y\n"  # noqa: E501
OPTIONS = dict(backend='inductor', shared=False, dynamic=False)

if __name__ == "__main__":
    rec = check(SEED, SRC, **OPTIONS)
    print("OK" if rec["status"] == "equal" else "MISMATCH: " + rec["status"] + ": " + rec["detail"])
    sys.exit(rec["status"] != "equal")
