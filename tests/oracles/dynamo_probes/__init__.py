"""Oracle: behaviours PyTorch's own dynamo tests rely on, restated as small probes written here, each run
eagerly, compiled by bytegraph and compiled by torch.compile (the reference) in the same process.

A probe file (`probes_*.py` in this folder) registers functions with `@probe(make_args)`: `make_args` is
called before each run (with the RNGs seeded) and returns the arguments, fresh, so that a run's mutations
never reach the next; it also resets any global state the probe touches. Each function is called `calls`
times on the same arguments (with `between(*args)`, when given, run eagerly before every call but the
first: a change the program makes between calls, such as a hook added or an attribute set); the outcomes
(values or exceptions) and the arguments afterwards are compared with eager's.

    python -m tests.oracles.dynamo_probes [--files probes_functions ...] [--json probes.json] [-v]

For each probe: equal to eager (bytegraph / torch), graphs and graph breaks (bytegraph), whether
fullgraph=True compiles (each), and compiles on the calls (each: a recompile on the same inputs shows an
unstable guard). The table counts probes in one graph with no break, fullgraph by each, the probes that
torch.compile runs fullgraph and bytegraph does not (coverage gaps), and wrong results (soundness bugs).
"""
from __future__ import annotations

import dataclasses
import random
import signal
from typing import Any, Callable

import numpy as np
import torch

import bytegraph
from bytegraph.testing import CompileCounter

from ...helpers import outcome, same

PROBES: list["Probe"] = []
TIMEOUT_S = 30      # per run of a probe (eager, or each compiled run)


@dataclasses.dataclass
class Probe:
    fn: Callable
    make_args: Callable[[], tuple]
    calls: int
    file: str
    between: Callable | None = None

    @property
    def name(self) -> str:
        return self.fn.__name__


def probe(make_args: Callable[[], tuple] = tuple, *, calls: int = 2, between: Callable | None = None):
    """Register the decorated function as a probe of the file it is written in."""
    def register(fn):
        PROBES.append(Probe(fn, make_args, calls, fn.__module__.rsplit(".", 1)[-1], between))
        return fn
    return register


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout(f"took longer than {TIMEOUT_S} s")


def _run(p: Probe, fn) -> tuple[Any, Any]:
    """The outcomes of `calls` calls of `fn` on fresh arguments, and the arguments afterwards."""
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    args = p.make_args()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(TIMEOUT_S)
    try:
        outs = []
        for i in range(p.calls):
            if i and p.between is not None:
                p.between(*args)
            outs.append(outcome(fn, *args))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return outs, ("ok", args)


class _TorchCounter:
    def __init__(self):
        self.frame_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        return gm.forward


def _compiled_run(p: Probe, compile_fn, counter, fullgraph: bool):
    """(outcomes, frames compiled, error text of a failed fullgraph compile or None)."""
    try:
        got = _run(p, compile_fn(p.fn, backend=counter, fullgraph=fullgraph))
    except _Timeout as e:
        return None, counter.frame_count, str(e)
    raised = [o for o in got[0] if o[0] == "raise"]
    error = None
    if fullgraph and raised:     # (an exception eager raises too is not a failed compile: compared later)
        error = f"{raised[0][1].__name__}: {raised[0][2]}"[:300]
    return got, counter.frame_count, error


def _torch_compile(fn, backend, fullgraph):
    import torch._dynamo
    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, fullgraph=fullgraph)


def _bytegraph_compile(fn, backend, fullgraph):
    bytegraph.reset()
    return bytegraph.compile(fn, backend=backend, fullgraph=fullgraph)


def run_probe(p: Probe) -> dict:
    """Eager, bytegraph and torch.compile on one probe: the row of the table."""
    row = {"file": p.file, "name": p.name}
    try:
        want = _run(p, p.fn)
    except _Timeout as e:
        return {**row, "eager_error": str(e)}
    eager_raises = any(o[0] == "raise" for o in want[0])
    for tag, compile_fn, make_counter in (("bg", _bytegraph_compile, CompileCounter),
                                          ("tc", _torch_compile, _TorchCounter)):
        cnt = make_counter()
        got, frames, error = _compiled_run(p, compile_fn, cnt, fullgraph=False)
        row[f"{tag}_equal"] = got is not None and same(got, want, exact=False)
        row[f"{tag}_graphs"] = frames
        if tag == "bg":
            row["bg_breaks"] = len(bytegraph.stats.break_records)
            row["bg_break_reasons"] = sorted({str(getattr(r, "reason", r))[:200]
                                              for r in bytegraph.stats.break_records})[:5]
        full = make_counter()
        got_full, _, error = _compiled_run(p, compile_fn, full, fullgraph=True)
        # fullgraph succeeded: the compiled runs raised nothing eager did not
        row[f"{tag}_full"] = got_full is not None and \
            (error is None or (eager_raises and same(got_full, want, exact=False)))
        row[f"{tag}_full_error"] = None if row[f"{tag}_full"] else error
    row["eager_raises"] = eager_raises
    return row
