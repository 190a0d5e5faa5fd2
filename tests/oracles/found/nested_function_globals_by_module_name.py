"""Found by the fuzzer (seeds 123, 188): a function created in compiled code (here a lambda with a default
and a closure, next to an inlined call of a closure factory) gets its globals from
`sys.modules[fn.__globals__['__name__']]` (frontend/codegen.py `_globals_of`), not from the frame's own
globals dict. Code exec'd in a namespace that is not a registered module (notebooks, exec, plugin
loaders) crashes with KeyError; a namespace whose `__name__` names another module reads THAT module's
globals - here the closure sees `json`'s globals, where `SCALE` does not exist (NameError) or would be
another value."""
import sys

import torch

import bytegraph

SRC = """
SCALE = 3
def make_adder(c):
    def add(v):
        return v * SCALE + c
    return add
def f(x, n):
    scale = n + 1
    fn = lambda t, m=2: t * scale + m
    return fn(x, m=n) + make_adder(n)(x)
"""
x = torch.ones(2)
ok = True
for name in ("not_a_module", "json"):
    ns_e, ns_c = {"__name__": name}, {"__name__": name}
    exec(SRC, ns_e)
    exec(SRC, ns_c)
    eager = ns_e["f"](x, 1)
    try:
        compiled = bytegraph.compile(ns_c["f"], backend="eager")(x, 1)
        same = torch.equal(eager, compiled)
        detail = f"eager {eager} vs compiled {compiled}"
    except Exception as e:  # noqa: BLE001
        same, detail = False, f"eager {eager}, compiled raised {type(e).__name__}: {e}"
    print(f"__name__={name!r}: " + ("OK" if same else "MISMATCH: " + detail))
    ok = ok and same
sys.exit(not ok)
