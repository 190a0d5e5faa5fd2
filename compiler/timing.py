"""Compile-time accounting: how long each phase of compiling a frame takes.

Compile time only. Code that does a phase of work wraps it in `with phase("name"):`; phases nest,
and each is charged only its own time (a nested phase's time is subtracted from its parent), so the
table adds up to the total. convert_frame charges "tracing" (bytecode analysis, graph building, fake
propagation and bytecode generation), "guards" and "debug artifacts"; the backend wrapper charges
"backend". A finer split only needs another `phase(...)` where the work happens.

`bytegraph.compile_times()` returns the table; `bytegraph.reset()` clears it (the table is kept by
`runtime.phases`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Mapping

from .runtime import runtime


@dataclasses.dataclass
class PhaseTime:
    calls: int = 0
    total: float = 0.0      # seconds
    max: float = 0.0        # seconds, slowest single call

    def add(self, seconds: float) -> None:
        self.calls += 1
        self.total += seconds
        self.max = max(self.max, seconds)


class CompileTimes(Mapping):
    """Phase name -> PhaseTime, in the order phases were first seen; prints as a table."""

    def __init__(self, phases: dict[str, PhaseTime]):
        self._phases = phases

    def __getitem__(self, name: str) -> PhaseTime:
        return self._phases[name]

    def __iter__(self):
        return iter(self._phases)

    def __len__(self) -> int:
        return len(self._phases)

    @property
    def total(self) -> float:
        return sum(p.total for p in self._phases.values())

    def seconds(self) -> dict[str, float]:
        return {name: p.total for name, p in self._phases.items()}

    def __str__(self) -> str:
        if not self._phases:
            return "bytegraph compile times: nothing compiled yet"
        width = max(len("phase"), *(len(n) for n in self._phases))
        lines = [f"{'phase':<{width}}  {'calls':>6}  {'total (s)':>10}  {'mean (ms)':>10}  {'max (ms)':>10}",
                 "-" * (width + 44)]
        for name, p in self._phases.items():
            mean = p.total / p.calls * 1e3 if p.calls else 0.0
            lines.append(f"{name:<{width}}  {p.calls:>6}  {p.total:>10.4f}  {mean:>10.2f}  {p.max * 1e3:>10.2f}")
        lines.append(f"{'total':<{width}}  {'':>6}  {self.total:>10.4f}")
        return "\n".join(lines)

    __repr__ = __str__


_local = threading.local()   # per thread: the stack of open phases


@contextlib.contextmanager
def phase(name: str):
    """Charge the time spent in the block to `name` (minus the time of phases nested inside it)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(0.0)   # time spent in nested phases
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        nested = stack.pop()
        runtime.phases.setdefault(name, PhaseTime()).add(elapsed - nested)
        if stack:
            stack[-1] += elapsed


def snapshot() -> dict[str, tuple[int, float]]:
    return {name: (p.calls, p.total) for name, p in runtime.phases.items()}


def since(before: dict[str, tuple[int, float]]) -> dict[str, float]:
    """Seconds per phase spent after `before = snapshot()` was taken."""
    return {name: p.total - before.get(name, (0, 0.0))[1] for name, p in runtime.phases.items()
            if p.calls > before.get(name, (0, 0.0))[0]}


def compile_times() -> CompileTimes:
    """Time spent compiling, per phase, since the process started or `bytegraph.reset()`."""
    return CompileTimes({name: dataclasses.replace(p) for name, p in runtime.phases.items()})
