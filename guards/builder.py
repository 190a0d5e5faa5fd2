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

from .guard import MODULE_HOOK_TABLES, Guard
from .source import ConstSource, LocalSource, const_name, local_param, type_lookup
from .._tensor_guards import GlobalStateGuard, TensorGuards


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
    """The source and every source it is read from."""
    seen, todo = [], [source]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.append(s)
            todo.extend(s.bases())
    return seen


class CheckFunction:
    def __init__(self, guards: list[Guard], arg_names: tuple, fn_name: str):
        self.guards = sorted(set(guards), key=lambda g: (g.order, g.describe()))
        self.arg_names = arg_names
        self.fn_name = fn_name
        self.consts: dict[str, object] = {}
        self.shared = SharedReads([g.source for g in self.guards if g.source is not None])
        for g in self.guards:   # objects the guards hold directly (guards/source.py ConstSource)
            for s in _chain(g.source) if g.source is not None else ():
                if isinstance(s, ConstSource):
                    self.consts[const_name(s.value)] = s.value
        fused = ("TENSOR_MATCH", "GLOBAL_STATE")
        self.checks = []
        state = {g.expected[0]: g.expected[1] for g in self.guards if g.kind == "GLOBAL_STATE"}
        if state:
            # one C++ call checks grad mode, default dtype, deterministic algorithms and autocast
            fast_state = GlobalStateGuard(state["grad_enabled"], state["default_dtype"],
                                          state["deterministic_algorithms"], state["autocast"],
                                          state["autocast_cache"])
            self.checks.append(f"{self._const(fast_state, 'global_state')}()")
        self.checks += [self._render(g) for g in self.guards if g.kind not in fused]
        tensor_guards = [g for g in self.guards if g.kind == "TENSOR_MATCH"]
        if tensor_guards:
            # one C++ call checks every tensor input
            fast = TensorGuards(tuple(tensor_spec(g.expected) for g in tensor_guards))
            tensors = ", ".join(g.source.sub_expr(self.shared) for g in tensor_guards)
            self.checks.append(f"{self._const(fast, 'tensor_guards')}({tensors})")
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

    def _const(self, value, hint: str = "c") -> str:
        """A name for `value` in the check function's namespace (the hint keeps the source readable)."""
        name = f"___{re.sub(chr(92) + 'W+', '_', hint).strip('_')}_{len(self.consts)}"
        self.consts[name] = value
        return name

    def _render(self, g: Guard) -> str:
        x = g.source.sub_expr(self.shared) if g.source is not None else None
        exp = g.expected
        if g.kind == "TYPE_MATCH":
            return f"type({x}) is {self._const(exp, exp.__name__)}"
        if g.kind == "ID_MATCH":
            return f"{x} is {self._const(exp, 'ref_' + g.source.name())}()"
        if g.kind == "CONSTANT_MATCH":
            if exp is None or isinstance(exp, bool):
                return f"{x} is {exp!r}"
            if type(exp) is float:  # bit-exact: -0.0 is not 0.0, and nan matches nan
                return f"type({x}) is float and {x}.hex() == {exp.hex()!r}"
            return f"type({x}) is {self._const(type(exp))} and {x} == {self._const(exp)}"
        if g.kind == "LEN_MATCH":
            return f"len({x}) == {exp}"
        if g.kind == "DICT_KEYS":
            if not exp:
                return f"not {x}"
            return f"tuple({x}.keys()) == {self._const(exp)}"
        if g.kind == "GRAD_IS_NONE":
            return f"{x}.grad is None"
        if g.kind == "KEY_ABSENT":
            return f"{exp!r} not in {x}"
        if g.kind == "NO_MODULE_HOOKS":
            return f"not ({' or '.join(f'{x}.{t}' for t in MODULE_HOOK_TABLES)})"
        if g.kind == "SAME_OBJECT":
            return f"{x} is {exp.expr()}"
        if g.kind == "SHAPE":
            return exp.fast  # printed from the ShapeEnv by guards/shape.py
        raise ValueError(g.kind)

    def readable(self) -> str:
        return "\n".join(g.describe() for g in self.guards)

    def failures(self, func, args) -> list[str]:
        """Each failing guard explained in words, for the given frame function and arguments."""
        return [why for _, _, why in self.failed_guards(func, args)]

    def failed_guards(self, func, args) -> list:
        """(guard, current value, reason) for each failing guard."""
        env = {"__func": func, "G": func.__globals__, "B": func.__builtins__}
        env.update({local_param(n): v for n, v in zip(self.arg_names, args)})
        env.update(self.consts, **_GUARD_GLOBALS)
        failed = []
        for g in self.guards:
            try:
                value = eval(g.source.expr(), env) if g.source is not None else None
            except Exception as e:  # noqa: BLE001 - the value is gone or changed shape
                failed.append((g, None, f"{g.source.name()} could not be read: {type(e).__name__}: {e}"))
                continue
            try:
                why = g.explain(value)
                if g.kind == "SAME_OBJECT" and value is not eval(g.expected.expr(), env):
                    why = f"{g.source.name()} is no longer the same object as {g.expected.name()}"
                if g.kind == "SHAPE":
                    why = g.expected.explain(env)
            except Exception as e:  # noqa: BLE001 - e.g. len() of a value whose type changed, or the
                # other object of SAME_OBJECT gone (a shorter tuple): explaining never raises
                what = g.source.name() if g.source is not None else "a shape guard"
                why = f"{what} changed: {type(e).__name__}: {e}"
            if why:
                failed.append((g, value, why))
        tensors = {}
        for g in self.guards:
            if g.kind == "TENSOR_MATCH":
                try:
                    value = eval(g.source.expr(), env)
                except Exception:  # noqa: BLE001 - reported above
                    continue
                if id(value) in tensors:
                    failed.append((g, value, f"{g.source.name()} and {tensors[id(value)]} are now the same "
                                             "tensor (they were distinct when compiled)"))
                tensors[id(value)] = g.source.name()
        return failed


_SHAPE_GLOBALS = {"math": math, "torch": torch}   # names that printed shape expressions may use
_GUARD_GLOBALS = dict(_SHAPE_GLOBALS, ___modules=sys.modules, ___type_lookup=type_lookup)


def tensor_spec(meta) -> tuple:
    """The C++ TensorGuards description of one tensor (None = a symbolic dim, not checked here)."""
    return (meta.cls, meta.dtype, meta.device, tuple(meta.shape), tuple(meta.stride), meta.requires_grad,
            meta.dispatch_keys.raw_repr())
