"""Found by the CPython-suite oracle (test_scope testGlobalInParallelNestedFunctions): a frame that
assigns a cell variable and returns a closure over it; compiled, the frame's own cells were written
back only before a resume function, never at return, so the returned closure raised NameError
("cannot access free variable 'y'")."""
import sys

import bytegraph


def f():
    y = 1

    def h():
        return y + 1
    return h


eager = f()()
try:
    compiled = bytegraph.compile(f, backend="eager")()()
except NameError as e:
    compiled = f"NameError: {e}"
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
