"""Found by the CPython-suite oracle (test_operator PyOperatorTestCase.test_indexOf): `enumerate(it)`
over an iterator the program holds was computed at once, exhausting `it`; after a graph break the
rebuilt `it` was empty and `next(it)` raised StopIteration instead of giving the item past the match."""
import sys

import bytegraph

note = bytegraph.disable(lambda: None)   # never traced: a graph break


def index_of(a, b):
    for i, j in enumerate(a):
        if j is b or j == b:
            return i
    raise ValueError


def f():
    it = iter("leave")
    r = index_of(it, "a")
    note()
    return r, next(it)


eager = f()
compiled = bytegraph.compile(f, backend="eager")()
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
