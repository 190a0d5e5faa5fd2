"""Found by CPython's test_decorators (test_memoize), compiled: a dict lookup with an unhashable key
(`saved[([10],)]`) was modelled as a miss (KeyError) instead of eager's TypeError, so the compiled
function took the other `except` branch and then raised while replaying `saved[args] = ...`."""
import sys

import bytegraph

saved = {}


def memo(*args):
    try:
        return saved[args]
    except KeyError:
        saved[args] = 1
        return "stored"
    except TypeError:
        return "unhashable"


def f(n):
    return memo([10]), memo(n), n + 1


eager = f(3)
saved.clear()
try:
    compiled = bytegraph.compile(f, backend="eager")(3)
except TypeError as e:
    compiled = f"raised {e}"
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
