"""`bytegraph.explain(fn)(*args, **kwargs)`: what compiling `fn` captures, and why it breaks.

Compile time only. explain runs `fn` once under its own FrameCompiler, with a backend that records
each graph and runs it eagerly, and its own `Stats`. The code objects' caches the caller already has
are set aside for the run and put back afterwards (what explain compiled is dropped), so explain
neither uses nor disturbs the caller's compiled code, and `bytegraph.stats` does not change.

    out = bytegraph.explain(fn)(x)
    out.graph_count, out.graph_break_count, out.break_reasons[0].reason, out.break_reasons[0].frames
    print(out)      # summary, the graph breaks with the user's source lines, one section per graph
"""
from __future__ import annotations

import dataclasses
import os
import traceback

import torch

from . import _C, timing
from .convert_frame import FrameCompiler
from .debug_dir import readable_graph
from .frontend.graph_break import kinds
from .runtime import Stats, runtime


@dataclasses.dataclass
class BreakReason:
    reason: str
    kind: str                                   # the break kind's short name, e.g. "io"
    hint: str
    user_stack: list[traceback.FrameSummary]    # outermost first; the last frame is where it broke

    @property
    def frames(self) -> list[str]:
        """The user's stack as `file:line:function` strings, outermost first."""
        return [f"{f.filename}:{f.lineno}:{f.name}" for f in self.user_stack]

    def __str__(self) -> str:
        lines = [f"{self.reason}  [{self.kind}]"]
        for f in self.user_stack:
            lines.append(f"  at {_short(f.filename)}:{f.lineno} in {f.name}")
            if f.line:
                lines.append(f"      {f.line.strip()}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


@dataclasses.dataclass
class ExplainedFrame:
    """One compiled frame: its graph (None when it had no tensor work) and its guards."""
    name: str
    filename: str
    lineno: int
    graph: torch.fx.GraphModule | None
    ops: list
    guards: list
    breaks: list[BreakReason]                   # the graph breaks that ended this frame's graph


@dataclasses.dataclass
class ExplainOutput:
    graphs: list                    # the fx GraphModules, in compile order
    graph_count: int
    graph_break_count: int
    break_reasons: list[BreakReason]
    ops_per_graph: list[list]       # per graph, the targets of its op nodes
    out_guards: list                # every guard of every compiled frame
    compile_times: dict[str, float]  # seconds per compile phase, for this run
    frames: list[ExplainedFrame]
    fn_name: str = ""

    def __str__(self) -> str:
        ops = sum(len(o) for o in self.ops_per_graph)
        per = " + ".join(str(len(o)) for o in self.ops_per_graph)
        total = sum(self.compile_times.values())
        out = [f"bytegraph.explain({self.fn_name})",
               (f"  graphs: {self.graph_count}    graph breaks: {self.graph_break_count}    "
                f"ops: {ops}{f' ({per})' if len(self.ops_per_graph) > 1 else ''}    guards: {len(self.out_guards)}"
                f"    compile time: {total * 1e3:.1f} ms")]
        if self.break_reasons:
            out += ["", "Graph breaks"]
            for i, b in enumerate(self.break_reasons, 1):
                text = str(b).splitlines()
                out.append(f"  {i}. {text[0]}")
                out += [f"     {line}" for line in text[1:]]
        graphs = [f for f in self.frames if f.graph is not None]
        for i, frame in enumerate(graphs, 1):
            ends = [self.break_reasons.index(b) + 1 for b in frame.breaks if b in self.break_reasons]
            ending = f", ends at graph break {', '.join(map(str, ends))}" if ends else ""
            out += ["", (f"Graph {i} of {len(graphs)}: {frame.name} ({_short(frame.filename)}:{frame.lineno}) — "
                         f"{len(frame.ops)} op(s){ending}"),
                    f"  ops: {', '.join(op_name(op) for op in frame.ops)}"]
            code = [line for line in readable_graph(frame.graph).splitlines()[2:] if line.strip()]
            out += ["  " + line for line in code]
            out.append(f"  guards ({len(frame.guards)}):")
            out += [f"    {g.describe()}" for g in frame.guards]
        if self.compile_times:
            out += ["", "Compile times: " + ", ".join(f"{name} {s * 1e3:.1f} ms"
                                                      for name, s in self.compile_times.items())]
        return "\n".join(out)

    __repr__ = __str__


def op_name(target) -> str:
    """`torch.relu`, `mul`, `.sum()`: a short name for an fx node target."""
    if isinstance(target, str):
        return f".{target}()"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    if module in ("_operator", "operator"):
        return name
    if module.startswith("torch") or isinstance(target, torch._ops.OpOverload):
        return f"torch.{name}" if module in ("torch", "torch._C._VariableFunctions") or not module else \
            f"{module}.{name}"
    return name


def _short(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def _ops(gm) -> list:
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


class _Recorder:
    """The explain run's backend (records and runs graphs eagerly) and compile hook."""

    def __init__(self, stats: Stats):
        self.stats = stats
        self.frames: list[ExplainedFrame] = []
        self.breaks: list[BreakReason] = []

    def backend(self, gm, example_inputs):
        return gm.forward

    def _new_breaks(self) -> list[BreakReason]:
        hints = kinds()
        for rec in self.stats.break_records[len(self.breaks):]:
            kind = hints.get(rec.kind)
            self.breaks.append(BreakReason(rec.reason, rec.kind, kind.hint if kind else "", list(rec.user_stack)))
        return self.breaks

    def on_frame(self, code, compiled, check) -> None:
        before = sum(len(f.breaks) for f in self.frames)
        breaks = self._new_breaks()[before:]
        graph = compiled.graph
        self.frames.append(ExplainedFrame(code.co_name, code.co_filename, code.co_firstlineno, graph,
                                          _ops(graph) if graph is not None else [], list(check.guards),
                                          list(breaks)))


def explain(fn):
    """`explain(fn)(*args, **kwargs)` runs `fn` once, compiling it, and returns an ExplainOutput."""
    target = getattr(fn, "_orig_fn", None) or getattr(fn, "_orig_mod", None) or fn

    def run(*args, **kwargs) -> ExplainOutput:
        stats = Stats()
        recorder = _Recorder(stats)
        callback = FrameCompiler(recorder.backend, hooks=recorder.on_frame, stats=stats, root=target)
        before = timing.snapshot()
        with runtime.isolated_caches():
            prev = _C.set_callback(callback)
            try:
                target(*args, **kwargs)
            finally:
                _C.set_callback(prev)
        breaks = recorder._new_breaks()
        graphs = [f for f in recorder.frames if f.graph is not None]
        return ExplainOutput(
            graphs=[f.graph for f in graphs], graph_count=len(graphs), graph_break_count=len(breaks),
            break_reasons=list(breaks), ops_per_graph=[f.ops for f in graphs],
            out_guards=[g for f in recorder.frames for g in f.guards], compile_times=timing.since(before),
            frames=recorder.frames, fn_name=getattr(target, "__qualname__", type(target).__name__))
    return run
