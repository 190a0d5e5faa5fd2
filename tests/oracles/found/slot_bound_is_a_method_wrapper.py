"""Found by CPython's test_types (test_method_wrapper_types), compiled: `object().__init__` came back
as a bound method (types.MethodType) instead of eager's method-wrapper."""
import sys
import types

import bytegraph


def f(n):
    m = object().__init__
    return isinstance(m, types.MethodWrapperType), type(m).__name__, type(object().__init__).__name__, n


eager = f(1)
compiled = bytegraph.compile(f, backend="eager")(1)
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
