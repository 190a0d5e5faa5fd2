"""Found by the CPython-suite oracle (test_array.MiscTest.test_immutable): `array.array.foo = 1` inside a
`try` is refused by type.__setattr__ (array.array is made at run time by the extension, flagged
immutable). Compiled, the write was held for after the graph and its TypeError came out past the
`except`. Eager: ('caught', ...). Compiled (before the fix): TypeError raised out of f."""
import array
import sys

import bytegraph


def f():
    try:
        array.array.foo = 1
    except TypeError as e:
        return "caught", str(e)
    return "not caught"


def outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result being compared
        return ("raised", type(e).__name__, str(e))


eager = outcome(f)
compiled = outcome(bytegraph.compile(f, backend="eager"))
ok = eager == compiled
print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
sys.exit(not ok)
