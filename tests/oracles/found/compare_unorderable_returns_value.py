"""Found by the CPython-suite oracle (test_richcmp.MiscTest.test_exception_message, VectorTest.test_mixed):
ordering comparisons between unorderable builtin types are folded to a value instead of raising
TypeError: `42 < []` compiled returns NotImplemented, `() > []` returns False. Eager: TypeError."""
import sys

import bytegraph


def f(a, b, c):
    out = []
    for thunk in (lambda: a < b, lambda: c > b):
        try:
            out.append(("value", thunk()))
        except TypeError as e:
            out.append(("TypeError", str(e)))
    return out


eager = f(42, [], ())
compiled = bytegraph.compile(f, backend="eager")(42, [], ())
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
