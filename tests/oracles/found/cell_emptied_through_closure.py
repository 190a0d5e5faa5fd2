"""Found by CPython's test_funcattrs (test_set_cell), compiled: `del f.__closure__[0].cell_contents`
empties the frame's own cell, but the deletion was kept as an attribute change of an opaque object,
so a later call of `f` read the old value instead of raising NameError."""
import sys

import bytegraph


def f(n):
    a = n

    def g():
        return a
    c = g.__closure__
    del c[0].cell_contents
    try:
        return g()
    except NameError:
        return "NameError"


eager = f(3)
compiled = bytegraph.compile(f, backend="eager")(3)
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
