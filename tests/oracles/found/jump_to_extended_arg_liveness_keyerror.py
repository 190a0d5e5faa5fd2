"""Found by the CPython-suite oracle (test_bool.test_math, test_float.test_float_pow, test_list/test_tuple
test_iterator_pickle, test_dict test_popitem, test_set test_union, ... ~20 tests): a function with a graph
break fails to compile with an internal `KeyError: <offset>` in frontend/resume.py `_compute_liveness`
when a jump lands on an instruction carrying an EXTENDED_ARG prefix (an argument > 255: the 256th
constant or name). `_instructions` drops EXTENDED_ARG, so the jump's target offset (which is the
prefix's) is not in the offset index. Eager: runs. Compiled: InternalError."""
import sys

import bytegraph

note = bytegraph.disable(lambda v: None)     # a call that is never traced: a graph break
consts = "".join(f"    c{i} = {1000 + i}\n" for i in range(300))
src = ("def f(x):\n" + consts +
       "    note(x)\n"
       "    if x:\n        x = x + 1\n"
       "    y = 5000\n"             # the if's jump target: LOAD_CONST with an index past 255
       "    return x + y + c299\n")
ns = {"note": note}
exec(compile(src, "<many_consts>", "exec"), ns)
eager = ns["f"](1)
try:
    compiled = bytegraph.compile(ns["f"], backend="eager")(1)
    ok = compiled == eager
    print("OK" if ok else f"MISMATCH: eager {eager} vs compiled {compiled}")
except Exception as e:  # noqa: BLE001
    ok = False
    print(f"MISMATCH: eager {eager}, compiled raised {type(e).__name__}: {str(e).splitlines()[0][:200]}")
sys.exit(not ok)
