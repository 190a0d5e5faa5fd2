"""Found by the CPython-suite oracle (test_operator test_is / test_is_not): `a[:3] + b[3:]` builds a new
str object in CPython, so `operator.is_(a, c)` / `a is c` is False; compiled, the concatenation is folded
into a constant equal to `a`; rebuilt at a graph break from that constant, `c` becomes the very object `a`
is, and the identity tests answer the other way."""
import operator
import sys

import bytegraph


note = bytegraph.disable(lambda: None)   # never traced: a graph break


def f():
    a = b = "xyzpdq"
    c = a[:3] + b[3:]
    note()
    return operator.is_(a, c), a is c, operator.is_not(a, c)


eager = f()
compiled = bytegraph.compile(f, backend="eager")()
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
