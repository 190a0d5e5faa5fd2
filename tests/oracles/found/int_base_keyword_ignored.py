"""Found by the fuzzer (seed 159): `int('12', base=8)` compiled returns 12, eager 10 - the `base`
keyword of int() is dropped when the call is constant-folded."""
import sys

import bytegraph


def f(s, n):
    return int(s, base=8) + n, int("12", base=8), int("ff", base=16), round(n / 3, ndigits=2)


eager = f("12", 1)
compiled = bytegraph.compile(f, backend="eager")("12", 1)
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
