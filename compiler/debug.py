"""The debugging toolkit's entry points (`bytegraph.debug`).

    bytegraph.debug.replay(path)          re-run a frame recorded on a conversion failure
    bytegraph.debug.load_record(path)     look at such a record (error, location, what is missing)
    bytegraph.debug.minify(gm, inputs, backend)   shrink a failing graph by hand, write repro.py
    bytegraph.compile_times()             time per compile phase, as a table
    bytegraph.stats()                     frames compiled, graphs, recompiles, graph breaks by reason
    bytegraph.debug_dir.write_artifact    for backends: add a file to the frame's debug folder

What runs while a frame compiles (debug dir, minifier, replay record) is frame_session.py.
Compile time only.
"""
from __future__ import annotations

from .config import config
from .debug_dir import FrameDir
from .eval_frame import compile as bytegraph_compile
from .minifier import AccuracyError, BackendCompilerFailed, compile_checked
from .replay import load_record, rebuild
from .runtime import StatsReport
from .scripts import load_backend
from .timing import compile_times

__all__ = ["AccuracyError", "BackendCompilerFailed", "StatsReport", "compile_times", "load_record", "minify",
           "replay"]


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


def replay(path: str, backend=None, **compile_options):
    """Compile and run the recorded frame again, with the recorded backend unless `backend` is given.
    The original failure is raised again (errors are not suppressed during a replay); once it is
    fixed, the frame's result is returned."""
    record = load_record(path)
    fn, args, kwargs = rebuild(record)
    if backend is None:
        backend = load_backend(record.backend) if record.backend is not None else "eager"
    with config.patch(strict=True, replay_record_enabled=False):
        return bytegraph_compile(fn, backend=backend, **compile_options)(*args, **kwargs)
