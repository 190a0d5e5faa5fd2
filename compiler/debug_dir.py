"""The debug dir (`BYTEGRAPH_COMPILE_DEBUG=1`) and the standalone scripts the debugging tools write.

Compile time only. Layout, under `config.debug_dir` (`BYTEGRAPH_DEBUG_DIR`, default
`./bytegraph_debug`):

    run_<time>-pid_<pid>/                one per process
        <n>_<function>/                  one per compiled frame, numbered in compile order
            original_bytecode.txt        `dis` of the frame's code
            transformed_bytecode.txt     `dis` of the code bytegraph generated for it
            transformed_code.py          the same, rendered as (approximate) Python (bytecode_source.py)
            fx_graph_readable.py         the graph, each line annotated with its shape and dtype
            fx_graph_runnable.py         runs the graph standalone on random inputs of the recorded
                                         shapes/strides/dtypes: `python fx_graph_runnable.py`
            guards.txt                   the guards in words and the generated check function
            summary.txt                  where the frame is, op count, graph breaks
            ...                          whatever the backend adds with `write_artifact`
            repro.py                     written by the minifier (BYTEGRAPH_REPRO_AFTER)
            replay.bgrec                 written on a conversion failure (config.replay_record_enabled)

A backend adds its own files (IR, generated code) with `bytegraph.debug_dir.write_artifact(name,
text)`, which writes into the folder of the frame being compiled when the debug dir is on.

The scripts themselves (`fx_graph_runnable.py`, `repro.py`) are written by scripts.py.
"""
from __future__ import annotations

import contextlib
import dis
import io
import itertools
import logging
import os
import re
import threading
import time

import torch
import torch.fx

from .config import config
from .runtime import runtime

_local = threading.local()   # per thread: the folder of the frame whose graph a backend compiles


# -- folders ----------------------------------------------------------------------------------
def run_dir() -> str:
    """This process's `run_<time>-pid_<pid>` folder under `config.debug_dir` (created on first use)."""
    base = os.path.abspath(config.debug_dir)
    path = runtime.run_dirs.get(base)
    if path is None:
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S") + f"_{int(time.time() * 1e6) % 1_000_000:06d}"
        path = os.path.join(base, f"run_{stamp}-pid_{os.getpid()}")
        os.makedirs(path, exist_ok=True)
        runtime.run_dirs[base] = path
        runtime.frame_numbers[path] = itertools.count()
    return path


def warn_tool_failure(what: str, error: BaseException) -> None:
    """Log a failure of a debugging tool once per kind; the user's program goes on."""
    if runtime.first_time(("tool failure", what, type(error))):
        logging.getLogger("bytegraph").warning("%s (%s: %s); please report it at bytegraph's issue tracker",
                                               what, type(error).__name__, error)


class FrameDir:
    """The folder of one compiled frame; created, and numbered, when the first file is written."""

    def __init__(self, name: str, path: str | None = None):
        self.name = re.sub(r"\W+", "_", name).strip("_") or "frame"
        self._path = path

    @property
    def path(self) -> str:
        if self._path is None:
            run = run_dir()
            self._path = os.path.join(run, f"{next(runtime.frame_numbers[run])}_{self.name}")
        os.makedirs(self._path, exist_ok=True)
        return self._path

    def save(self, name: str, produce) -> str | None:
        """Write `produce()` as `name`. Debug tooling never changes what the program does: a failure
        here (rendering, disk) is logged once and the compile goes on."""
        try:
            return self.write(name, produce())
        except Exception as e:  # noqa: BLE001
            warn_tool_failure(f"the debug dir could not write {name}", e)
            return None

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.path, name)
        with open(path, "w") as f:
            f.write(text)
        return path


@contextlib.contextmanager
def artifacts_into(frame_dir: FrameDir | None):
    """While a backend compiles, `write_artifact` writes into `frame_dir` (None: nowhere)."""
    prev = getattr(_local, "frame_dir", None)
    _local.frame_dir = frame_dir
    try:
        yield
    finally:
        _local.frame_dir = prev


def current_frame_dir() -> FrameDir | None:
    """The folder of the frame whose graph a backend is compiling (None outside a compile)."""
    return getattr(_local, "frame_dir", None)


def write_artifact(name: str, text: str) -> str | None:
    """For backends: save `text` as `name` in the debug folder of the frame being compiled.
    Does nothing (returns None) unless the debug dir is on."""
    frame_dir = getattr(_local, "frame_dir", None)
    if frame_dir is None or not config.compile_debug:
        return None
    return frame_dir.save(name, lambda: text)


# -- what goes into a frame's folder ----------------------------------------------------------
def bytecode_listing(code) -> str:
    """`dis` of a code object and of the code objects nested in it."""
    out = io.StringIO()
    out.write(f"# {code.co_name} ({code.co_filename}:{code.co_firstlineno})\n")
    dis.dis(code, file=out, depth=None)
    return out.getvalue()


def describe_value(value) -> str:
    """`float32[4, 3]`-style summary of a tensor (real or fake), or the type of anything else."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        shape = ", ".join(str(s) for s in value.size())
        extra = "" if value.device.type == "cpu" else f" {value.device}"
        if value.dim() and not value.is_contiguous():
            extra += f" stride={tuple(value.stride())}"
        return f"{dtype}[{shape}]{extra}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(describe_value(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(value).__name__}({value})"
    return type(value).__name__


def readable_graph(gm: torch.fx.GraphModule, title: str = "") -> str:
    """The graph's Python code, every assignment annotated with the shape/dtype of its value."""
    by_name = {n.name: n for n in gm.graph.nodes}
    src = gm.graph.python_code(root_module="self").src.strip("\n")
    lines = [f"# {title}" if title else "# bytegraph fx graph", "#", "# inputs:"]
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            source = node.meta.get("source")
            origin = f"  <- {source.name()}" if source is not None else ""
            lines.append(f"#   {node.name}: {describe_value(node.meta.get('example_value'))}{origin}")
    lines += ["", "", "class GraphModule(torch.nn.Module):"]
    for line in src.splitlines():
        m = re.match(r"\s*(\w+) = ", line)
        node = by_name.get(m.group(1)) if m else None
        if node is not None and node.op != "placeholder" and "example_value" in node.meta:
            line = f"{line}  # {describe_value(node.meta['example_value'])}"
        lines.append("    " + line if line.strip() else "")
    return "\n".join(lines) + "\n"
