"""Found by the CPython-suite oracle (test_list.ListTest.test_exhausted_iterator): a list iterator that
ran to its end stays exhausted in CPython even if the list grows; one that did not sees the new items.
Compiled, the iterators are modelled as positions only. Eager: ([], [9]). Compiled differs."""
import sys

import bytegraph


def f():
    a = [1, 2, 3]
    exhit = iter(a)
    empit = iter(a)
    for _ in exhit:
        next(empit)
    a.append(9)
    return list(exhit), list(empit)


eager = f()
compiled = bytegraph.compile(f, backend="eager")()
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
