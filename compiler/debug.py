"""The debugging toolkit's entry points (`bytegraph.debug`).

For users:
    bytegraph.debug.replay(path)          re-run a frame recorded on a conversion failure
    bytegraph.debug.load_record(path)     look at such a record (error, location, what is missing)
    bytegraph.debug.minify(gm, inputs, backend)   shrink a failing graph by hand, write repro.py
    bytegraph.compile_times()             time per compile phase, as a table
    bytegraph.stats()                     frames compiled, graphs, recompiles, graph breaks by reason
    bytegraph.debug_dir.write_artifact    for backends: add a file to the frame's debug folder

For convert_frame: `FrameSession`, opened once per frame compile, which wraps the backend (timing,
debug dir, minifier) and is told how the compile ended (debug dir, bytecode logs, replay record).
Compile time only.
"""
from __future__ import annotations

import dataclasses
import dis
import logging

from . import debug_dir as _debug_dir
from .config import config
from .debug_dir import FrameDir, artifacts_into, bytecode_listing, readable_graph, runnable_script, warn_tool_failure
from .backends.registry import graph_runner
from .logs import enabled, log
from .minifier import AccuracyError, BackendCompilerFailed, compile_checked
from .replay import load_record, record_failure, replay
from .timing import compile_times, phase

__all__ = ["AccuracyError", "BackendCompilerFailed", "FrameSession", "StatsReport", "compile_times", "load_record",
           "minify", "replay"]

_warned: set = set()


class FrameSession:
    """What the debugging tools see of compiling one frame."""

    def __init__(self, code, func, args):
        self.code = code
        self.func = func
        self.args = args
        self.dir = FrameDir(code.co_name)
        self.backend = None

    @property
    def title(self) -> str:
        return f"{self.code.co_name} ({self.code.co_filename}:{self.code.co_firstlineno})"

    def wrap_backend(self, backend):
        """The backend as the frontend should call it: timed, and with the debug dir and the minifier
        when they are on."""
        self.backend = backend
        if config.repro_after not in ("", "dynamo", "aot") and config.repro_after not in _warned:
            _warned.add(config.repro_after)
            logging.getLogger("bytegraph").warning(
                "BYTEGRAPH_REPRO_AFTER=%s is not known (use 'dynamo' or 'aot'); no repro will be written",
                config.repro_after)

        def backend_with_debugging(gm, example_inputs):
            if config.compile_debug:
                with phase("debug artifacts"):
                    self.dir.save("fx_graph_readable.py", lambda: readable_graph(gm, f"graph of {self.title}"))
                    self.dir.save("fx_graph_runnable.py", lambda: runnable_script(gm, example_inputs,
                                                                           f"graph of {self.title}"))
            with phase("backend"), artifacts_into(self.dir):
                if config.repro_after == "dynamo":
                    compiled = compile_checked(backend, gm, example_inputs, self.dir, config.repro_level, self.title)
                else:
                    compiled = backend(gm, example_inputs)
            return graph_runner(backend, compiled, gm, example_inputs)
        return backend_with_debugging

    def compiled(self, compiled, check) -> None:
        """The frame compiled: log and save its bytecode and guards."""
        try:
            if enabled("bytecode"):
                log("bytecode", f"bytecode of {self.title}, original | transformed:\n"
                                f"{side_by_side(self.code, compiled.code)}")
            if compiled.graph is not None and enabled("graph_code"):
                log("graph_code", f"graph code of {self.title}:\n{compiled.graph.code.strip()}")
        except Exception as e:  # noqa: BLE001 - logs never change what the program does
            warn_tool_failure("bytecode logging failed", e)
        if not config.compile_debug:
            return
        with phase("debug artifacts"):
            self.dir.save("original_bytecode.txt", lambda: bytecode_listing(self.code))
            self.dir.save("transformed_bytecode.txt", lambda: bytecode_listing(compiled.code))
            self.dir.save("transformed_code.py", lambda: _debug_dir.transformed_source(compiled.code))
            self.dir.save("guards.txt", lambda: f"# guards of {self.title}, one per line\n{check.readable()}\n\n"
                                         f"# the generated check function\n{check.source}")
            breaks = "".join(f"\ngraph break: {e.reason}" for e in compiled.breaks)
            self.dir.save("summary.txt", lambda: f"frame: {self.title}\nops in graph: {compiled.op_count}\n"
                                          f"guards: {len(check.guards)}{breaks}\n")

    def failed(self, error: BaseException) -> None:
        """The frame could not be converted: save what helps to reproduce it."""
        if config.compile_debug:
            self.dir.save("original_bytecode.txt", lambda: bytecode_listing(self.code))
            self.dir.save("error.txt", lambda: f"{type(error).__name__}: {error}\n")
        if config.replay_record_enabled:
            try:
                record_failure(self.code, self.func, self.args, error, self.backend, self.dir)
            except Exception as e:  # noqa: BLE001
                warn_tool_failure("recording the failed frame failed", e)


def failure_site(tx) -> str:
    """Where tracing was when an internal error struck: the construct and the user's source line."""
    ins = getattr(tx, "current", None)
    if ins is None:
        return ""
    construct = ins.opname if ins.arg is None else f"{ins.opname} {ins.argval!r}"
    try:
        where = tx.user_stack()[-1]
    except Exception:  # noqa: BLE001 - the message must not fail in turn
        return f"\n  while tracing {construct}"
    line = f"\n      {where.line.strip()}" if where.line else ""
    return f"\n  while tracing {construct} at {where.filename}:{where.lineno} in {where.name}{line}"


def side_by_side(original, transformed, width: int = 56) -> str:
    def rows(code):
        return [f"{i.offset:>4} {i.opname:<20} {i.argrepr}"[:width] for i in dis.get_instructions(code)]
    left, right = rows(original), rows(transformed)
    n = max(len(left), len(right))
    left += [""] * (n - len(left))
    right += [""] * (n - len(right))
    return "\n".join(f"{a:<{width}} | {b}" for a, b in zip(left, right))


def minify(gm, example_inputs, backend, *, accuracy: bool = False, out_dir: str | None = None) -> str | None:
    """Shrink `gm` to the smallest subgraph on which `backend` still fails (raises while compiling
    or running it, or, with `accuracy=True`, computes a different result than eager) and write
    repro.py; returns its path, or None if `backend` does not fail on `gm`."""
    frame_dir = FrameDir("minify", out_dir)
    try:
        compile_checked(backend, gm, example_inputs, frame_dir, 4 if accuracy else 3, "the given graph")
    except (BackendCompilerFailed, AccuracyError) as e:
        return e.repro_path
    return None


@dataclasses.dataclass(frozen=True)
class StatsReport:
    """A snapshot of `bytegraph.stats`; prints as a summary."""
    frames_compiled: int
    graphs: int
    recompiles: int
    recompiles_by_function: dict    # function name -> count
    graph_breaks: dict          # reason -> count
    compile_time: float         # seconds in convert_frame
    cache_hits: int | None      # None: not counted (the C hook has no counter yet)

    @classmethod
    def of(cls, stats) -> StatsReport:
        by_function = getattr(stats, "recompiles_by_function", None) or {}
        return cls(stats.frames_compiled, stats.graphs, stats.recompiles, dict(by_function),
                   dict(stats.graph_breaks.most_common()), stats.compile_time, None)

    def __str__(self) -> str:
        hits = "not counted" if self.cache_hits is None else str(self.cache_hits)
        lines = ["bytegraph stats",
                 f"  frames compiled   {self.frames_compiled}",
                 f"  graphs            {self.graphs}",
                 f"  recompiles        {self.recompiles}",
                 *(f"    {count:>4}  {name}" for name, count in self.recompiles_by_function.items()),
                 f"  cache hits        {hits}",
                 f"  compile time      {self.compile_time:.3f} s",
                 f"  graph breaks      {sum(self.graph_breaks.values())}"]
        lines += [f"    {count:>4}  {reason}" for reason, count in self.graph_breaks.items()]
        return "\n".join(lines)

    __repr__ = __str__

