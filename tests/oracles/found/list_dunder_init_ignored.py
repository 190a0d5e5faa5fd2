"""Found by the CPython-suite oracle (test_list.ListTest.test_init): calling `__init__` again on a list
is dropped when compiled: `a.__init__()` must clear the list and `a.__init__(it)` refill it. Eager:
([], [4, 5]). Compiled: ([1, 2, 3], [1, 2, 3]) - a silently wrong result."""
import sys

import bytegraph


def f():
    a = list([1, 2, 3])
    a.__init__()
    b = [1, 2, 3]
    b.__init__([4, 5])
    return a, b


eager = f()
compiled = bytegraph.compile(f, backend="eager")()
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
