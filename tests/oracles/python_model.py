"""Oracle: the trace's model of Python's builtins and operators against CPython itself.

The frontend answers `a + b`, `len(x)`, `divmod(a, b)`, `x in s`... at trace time, by its own model
of CPython's protocols. A model that raises where CPython does not (or the reverse) is a silent wrong
answer as soon as the program catches it: under a bare `except:` the trace's own TypeError became
the result. So every builtin and operator below is applied to every value (or pair of values) of a
zoo of builtin types and their subclasses, inside `try: ... except: ...`, once plainly and once in a
freshly compiled function (a new code object each time: no cache reuse, no cache limit), and the
outcomes (result type and repr, or "raised") are compared.

    python -m tests.oracles.python_model [--only add,len] [--json out.json]
"""
from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import operator
import sys
import types


class Int(int):
    pass


class Float(float):
    pass


class Complex(complex):
    pass


class Str(str):
    pass


class Tuple(tuple):
    pass


class List(list):
    pass


class Dict(dict):
    pass


class Overriding(int):
    """An int subclass with its own operators: the reflected one must go first where CPython says."""

    def __add__(self, other):
        return "Overriding.add"

    def __radd__(self, other):
        return "Overriding.radd"

    def __lt__(self, other):
        return "Overriding.lt"


VALUES = [0, 3, -2, 2.5, float("inf"), 1 + 2j, True, Int(3), Float(2.5), Complex(1 + 2j), Overriding(4), "ab",
          Str("ab"), "", "__call__", (1, 2), Tuple((1,)), [3, 1], List([2]), {1: 2}, Dict({1: 2}), None, {2},
          frozenset({1}), b"xy", range(3)]

UNARY = [len, abs, int, float, str, repr, bool, hash, round, sorted, sum, min, max, list, tuple, set, dict, iter,
         reversed, any, all, math.floor, math.ceil, math.sqrt, math.isfinite, operator.neg, operator.not_,
         operator.index, ord, chr, hex, bin, enumerate, callable, type, complex, frozenset, bytes,
         # methods called through their class, on every value (the wrong types must raise as CPython does)
         str.upper, str.isdigit, str.strip, list.copy, list.sort, list.reverse, list.pop, list.clear, dict.keys,
         dict.items, dict.popitem, dict.copy, set.pop, set.copy, tuple.__len__, next]

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
          operator.and_, operator.or_, operator.xor, operator.lshift, operator.matmul, operator.lt, operator.le,
          operator.gt, operator.ge, operator.eq, operator.ne, operator.getitem, operator.contains, operator.concat,
          divmod, pow, round, min, max, isinstance, getattr, math.copysign, math.gcd, math.isclose, math.log, int,
          sum, sorted, zip, map, filter, str.join, list.index, list.count, dict.get, str.split, str.startswith,
          tuple.count, list.append, list.extend, list.remove, list.pop, dict.setdefault, dict.pop, dict.update,
          set.add, set.discard, set.update, set.issubset, frozenset.union, str.find, str.count, bytes.find,
          tuple.index, issubclass, hasattr, operator.iadd, operator.imul, operator.ior, operator.isub]


def outcome(fn, *args):
    """("ok", the result, the arguments as they are after the call -- methods mutate them) or
    ("raised", the arguments); compared by `_seen` outside the compiled code."""
    try:
        result = fn(*args)
        if type(result) in (zip, map, filter, enumerate, reversed) or type(result).__name__.endswith("iterator"):
            result = list(result)
        return "ok", result, args
    except:  # noqa: E722 -- a bare except: whatever the trace raises becomes the answer, as in user code
        return "raised", args


def _seen(answer) -> tuple:
    if answer[0] == "ok":
        return "ok", type(answer[1]).__name__, repr(answer[1]), repr(answer[2])
    return "raised", repr(answer[1])


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


def cases(only=None):
    """(fn, args) to check: every unary builtin on every value, every binary one on every pair."""
    keep = (lambda fn: _name(fn) in only) if only else (lambda fn: True)
    for fn in filter(keep, UNARY):
        for value in VALUES:
            yield fn, (value,)
    for fn in filter(keep, BINARY):
        for a, b in itertools.product(VALUES, VALUES):
            if fn in (operator.pow, pow) and isinstance(b, (int, float)) and not isinstance(b, bool) and b > 3:
                continue    # (huge powers of the big values: slow, and nothing new)
            yield fn, (a, b)


def check(fn, args, index: int) -> dict | None:
    """None when the compiled outcome equals the plain one; else the mismatch."""
    import bytegraph
    fresh = types.FunctionType(outcome.__code__.replace(co_name=f"outcome_{index}"), outcome.__globals__)
    want = _seen(outcome(fn, *copy.deepcopy(args)))     # each run on its own copies: some calls mutate them
    try:
        got = _seen(bytegraph.compile(fresh, backend="eager")(fn, *copy.deepcopy(args)))
    except Exception as e:  # noqa: BLE001 -- an internal error of the compiler is a finding too
        got = ("internal error", repr(e)[:200])
    if got == want:
        return None
    return {"fn": _name(fn), "args": [type(a).__name__ for a in args], "plain": want, "compiled": got}


def run(only=None) -> tuple[int, int, list]:
    """(calls, calls that met a graph break -- answered partly by running them --, mismatches)."""
    import bytegraph
    bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run
    mismatches, total, broke, current = [], 0, 0, None
    for total, (fn, args) in enumerate(cases(only), 1):
        if fn is not current:
            bytegraph.reset()
            current = fn
        breaks_before = sum(bytegraph.stats().graph_breaks.values())
        found = check(fn, args, total)
        broke += sum(bytegraph.stats().graph_breaks.values()) > breaks_before
        if found:
            mismatches.append(found)
    return total, broke, mismatches


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated builtin / operator names")
    parser.add_argument("--json", help="write the mismatches here")
    args = parser.parse_args()
    total, broke, mismatches = run(set(args.only.split(",")) if args.only else None)
    for m in mismatches:
        print(f"{m['fn']}({', '.join(m['args'])}): plainly {m['plain']}, compiled {m['compiled']}")
    print(f"{total} calls ({broke} met a graph break; the others were answered by the trace alone), "
          f"{len(mismatches)} where the compiled outcome differs", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"calls": total, "breaks": broke, "mismatches": mismatches}, f, indent=1)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
