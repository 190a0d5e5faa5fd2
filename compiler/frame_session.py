"""FrameSession: what the debugging tools see of compiling one frame.

convert_frame opens one per frame compile. It wraps the backend (timing, debug dir, minifier) and
is told how the compile ended (debug dir, bytecode logs, replay record). Compile time only.
"""
from __future__ import annotations

import dis
import logging

from . import bytecode_source
from .backends.registry import graph_runner
from .config import config
from .debug_dir import FrameDir, artifacts_into, bytecode_listing, readable_graph, warn_tool_failure
from .logs import enabled, log
from .minifier import compile_checked
from .replay import record_failure
from .runtime import runtime
from .scripts import runnable_script
from .timing import phase


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
        if config.repro_after not in ("", "dynamo", "aot") and runtime.first_time(("repro_after", config.repro_after)):
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
        backend_with_debugging.func = backend   # what the backend declares stays readable (backend_declares)
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
            self.dir.save("transformed_code.py", lambda: bytecode_source.transformed_source(compiled.code))
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
