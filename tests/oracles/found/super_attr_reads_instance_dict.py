"""Found by the CPython-suite oracle (test_list test_len/test_iadd/test_imul/test_index, test_tuple
test_len/test_constructors...: RecursionError): when `super().m()` cannot be inlined whole (here A.m
calls something never traced), the call that runs natively finds the attribute `m` stored in the
INSTANCE's __dict__; CPython's super() looks only along the MRO after B (instance dicts are never read).
Eager: 'BA'. Compiled: infinite recursion, since the instance attribute calls back into B.m (as the
CPython-suite runner's per-instance compiled test methods do)."""
import sys

import bytegraph


note = bytegraph.disable(lambda: None)   # never traced


class A:
    def m(self):
        note()                           # A.m cannot be inlined whole: the call runs natively
        return "A"


class B(A):
    def m(self):
        return "B" + super().m()


b = B()
eager = b.m()
b.m = bytegraph.compile(b.m, backend="eager")    # the instance attribute shadows B.m, as the runner does
try:
    compiled = b.m()
    ok = compiled == eager
    print("OK" if ok else f"MISMATCH: eager {eager!r} vs compiled {compiled!r}")
except RecursionError as e:
    ok = False
    print(f"MISMATCH: eager {eager!r}, compiled raised RecursionError: {e}")
sys.exit(not ok)
