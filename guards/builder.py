"""GuardBuilder: turns a set of guards into one check function per cache entry.

Compile time builds it; the function itself is the hot path (called by the frame hook on every
call). The generated source is kept readable (`BYTEGRAPH_LOGS=guards` prints it); a failed check
is explained guard by guard with `CheckFunction.failures`.
"""
from __future__ import annotations

import math
import collections
import re
import sys

import torch

from ..probe import class_namespace
from .guard import DICT_HAS_KEY, TYPE_MATCH, Guard
from .held import Kept, hold, hold_items, holds_weakly, needs_weak_hold
from .source import ConstSource, ItemSource, LocalSource, const_name, iterator_rest, local_param, type_lookup


class SharedReads:
    """Renders guard sources so that a value read by several guards (`L['self']._modules['h']`...)
    is evaluated once: its first use binds a local with `:=`, later uses read that local. The checks
    are one `and` chain evaluated left to right, so the binding always runs before any later use."""

    def __init__(self, sources):
        counts = collections.Counter()
        for source in sources:
            for s in _chain(source):
                counts[s] += 1
        self.names = {s: f"___v{i}" for i, s in enumerate(s for s, n in counts.items()
                                                          if n > 1 and not isinstance(s, LocalSource))}
        self.bound: set = set()

    def __call__(self, source) -> str:
        name = self.names.get(source)
        if name is None:
            return source.expr(self)
        if name in self.bound:
            return name
        self.bound.add(name)
        return f"({name} := {source.expr(self)})"


def _chain(source):
    """The source and every source it is read from. (A set finds the ones seen: a deep chain,
    `L['t'][0][0]...` into a nested tuple, compared with a list was quartic in its depth.)"""
    order, seen, todo = [], set(), [source]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            order.append(s)
            todo.extend(s.bases())
    return order


def _as_const(obj):
    """What the guard function's namespace binds to an object a source names (read by const_expr)."""
    return hold(obj) if holds_weakly(obj) else obj


class CheckFunction:
    def __init__(self, guards: list[Guard], arg_names: tuple, fn_name: str, kept: tuple = ()):
        self.kept = kept    # what the trace made (a namedtuple class), which guards holding it weakly read
        self.guards = sorted(set(guards), key=lambda g: (g.order, g.describe()))
        self.arg_names = arg_names
        self.fn_name = fn_name
        self.consts: dict[str, object] = {}
        self.shared = SharedReads([g.source for g in self.guards if g.source is not None])
        for g in self.guards:   # objects the guards hold directly (guards/source.py const_expr)
            for s in _chain(g.source) if g.source is not None else ():
                for obj in s.held_objects():
                    self.consts[const_name(obj)] = _as_const(obj)
        self.checks = self._render_checks()
        params = ", ".join(["__func"] + [local_param(n) for n in arg_names])
        body = " and\n            ".join(f"({c})" for c in self.checks) or "True"
        prologue = ""
        if any(re.search(r"\bG\b", c) for c in self.checks):
            prologue += "    G = __func.__globals__\n"
        if any(re.search(r"\bB\b", c) for c in self.checks):
            prologue += "    B = __func.__builtins__\n"
        py_name = "guard_" + re.sub(r"\W", "_", fn_name)  # `<lambda>`, `<genexpr>`... are not identifiers
        self.source = (f"def {py_name}({params}):\n{prologue}"
                       f"    try:\n        return ({body})\n    except Exception:\n        return False\n")
        namespace = dict(self.consts, **_GUARD_GLOBALS)
        exec(compile(self.source, f"<bytegraph guards for {fn_name}>", "exec"), namespace)
        self.fn = namespace[py_name]

    def _render_checks(self) -> list[str]:
        """One expression per guard, in guard order; a fast-path kind renders all its guards as one
        C++ call, at the place of the first."""
        checks, done = [], set()
        for g in self.guards:
            if not g.kind.fast_path:
                checks.append(self._while_alive(g))
            elif g.kind not in done:
                done.add(g.kind)
                checks.append(g.kind.render_all([h for h in self.guards if h.kind is g.kind], self))
        return checks

    def const(self, value, hint: str = "c") -> str:
        """A name for `value` in the check function's namespace (the hint keeps the source readable):
        bytegraph's own objects (a C++ checker, a helper), held as long as the function."""
        name = f"___{re.sub(chr(92) + 'W+', '_', hint).strip('_')}_{len(self.consts)}"
        self.consts[name] = value
        return name

    def held(self, value, hint: str = "c") -> str:
        """An expression for an object of the program a guard compares with by identity (a class, the
        very object expected): its name, or a call of the weak reference the function holds it by,
        which gives None once it died (guards/held.py): the guard must then fail."""
        if not holds_weakly(value):
            return self.const(value, hint)
        return self.const(hold(value), hint) + "()"

    def held_items(self, value: tuple, hint: str = "c") -> str:
        """An expression for a tuple a guard compares with by value (a dict's keys), the objects in
        it held weakly: None once one of them died."""
        if not needs_weak_hold(value):
            return self.const(value, hint)
        return self.const(hold_items(value), hint) + "()"

    def _while_alive(self, guard) -> str:
        """The guard's check, read while the objects its source names are alive (guards/held.py). A guard
        about an object reached without a source (its source's root is that object) holds for good once
        the object died: nothing can reach it again, and the code compiled for it does not hold it
        either. A dead object used along the way (a dict key) fails the guard: `d[None]` may find an item."""
        source = guard.source
        root = source.root() if source is not None else None
        weak_root = isinstance(root, ConstSource) and holds_weakly(root.value)
        # (the root read first: the first read of a shared source binds the name later reads use)
        dead_root = f"{self.read(root)} is None or " if weak_root else ""
        check = guard.kind.render(guard, self)
        names = [const_name(obj) for s in (_chain(source) if source is not None else ()) if s is not root
                 for obj in s.held_objects() if holds_weakly(obj)]
        alive = [f"{n}() is not None" for n in dict.fromkeys(names)]
        if alive:
            check = " and ".join(alive + [f"({check})"])
        return f"{dead_root}({check})" if dead_root else check

    def root_alive(self, guard) -> bool:
        """False for a guard about an object reached without a source that has died (it holds)."""
        root = guard.source.root() if guard.source is not None else None
        return not (isinstance(root, ConstSource) and root.value is None and not isinstance(root.held, Kept))

    def read(self, source) -> str:
        """The fast expression of `source`, evaluating reads shared by several guards once."""
        return source.sub_expr(self.shared)

    def readable(self) -> str:
        return "\n".join(g.describe() for g in self.guards)

    def failures(self, func, args) -> list[str]:
        """Each failing guard explained in words, for the given frame function and arguments."""
        return [why for _, _, why in self.failed_guards(func, args)]

    def _env(self, func, args) -> dict:
        """The names the sources' expressions read, for the given frame function and arguments."""
        env = {"__func": func, "G": func.__globals__, "B": func.__builtins__}
        env.update({local_param(n): v for n, v in zip(self.arg_names, args)})
        env.update(self.consts, **_GUARD_GLOBALS)
        return env

    def reads_same_objects(self, func, args, refs) -> bool:
        """Whether each (source, weakref) of `refs` reads its very object for the given frame function
        and arguments."""
        env = self._env(func, args)
        for source, _ in refs:    # (an object a source names itself, which no guard may have named)
            while source is not None:
                env.update({const_name(obj): _as_const(obj) for obj in source.held_objects()})
                source = getattr(source, "base", None)
        try:
            return all(ref() is not None and eval(source.expr(), env) is ref() for source, ref in refs)
        except Exception:  # noqa: BLE001 - the value is gone or changed shape
            return False

    def _reader(self, source):
        """The compiled expression of `source` (for explaining misses)."""
        readers = self.__dict__.setdefault("_readers", {})
        code = readers.get(source)
        if code is None:
            code = readers[source] = compile(source.expr(), "<bytegraph guard source>", "eval")
        return code

    def failed_guards(self, func, args) -> list:
        """(guard, current value, reason) for each failing guard."""
        env = self._env(func, args)
        values = {}

        def read(g):
            # each source compiled once per check function and read once per call: a recompile of a
            # frame with thousands of guards (the items of a long list) explains them all
            if g.source is None:
                return None
            if g.source not in values:
                try:
                    values[g.source] = (True, eval(self._reader(g.source), env))
                except Exception as e:  # noqa: BLE001 - raised again for each guard reading it
                    values[g.source] = (False, e)
            ok, value = values[g.source]
            if not ok:
                raise value
            return value

        failed = []
        # a source is read only while the guards before it that it reads through held, as in the check
        # function: reading an item of a defaultdict lacking the key adds it, and reading through a
        # value of another type may run that type's code
        unreadable, no_reads_through, read_guards = set(), set(), []
        for g in self.guards:
            if not self.root_alive(g):
                continue
            if g.source is not None and any(s in unreadable or (s in no_reads_through and s != g.source)
                                            for s in _chain(g.source)):
                continue
            read_guards.append(g)
            try:
                value = read(g)
            except Exception as e:  # noqa: BLE001 - the value is gone or changed shape
                failed.append((g, None, f"{g.name()} could not be read: {type(e).__name__}: {e}"))
                continue
            try:
                why = g.explain(value, env)
            except Exception as e:  # noqa: BLE001 - e.g. len() of a value whose type changed
                why = f"{g.name()} changed: {type(e).__name__}: {e}"
            if why:
                failed.append((g, value, why))
                if g.kind is TYPE_MATCH:
                    no_reads_through.add(g.source)
                elif g.kind is DICT_HAS_KEY and g.expected[1]:
                    unreadable.add(ItemSource(g.source, g.expected[0]))
        for kind in dict.fromkeys(g.kind for g in read_guards):
            failed += kind.explain_together([g for g in read_guards if g.kind is kind], read)
        return failed


_SHAPE_GLOBALS = {"math": math, "torch": torch}   # names that printed shape expressions may use
_GUARD_GLOBALS = dict(_SHAPE_GLOBALS, ___modules=sys.modules, ___type_lookup=type_lookup,
                      ___class_namespace=class_namespace, ___iterator_rest=iterator_rest)

