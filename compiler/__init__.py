"""bytegraph: a bytecode-level JIT compiler frontend for PyTorch.

    opt = bytegraph.compile(model_or_fn)            # backend="inductor" by default; or "eager", "aot_eager"

Public API: compile, explain, reset, disable, run, mark_dynamic, config, list_backends,
register_backend, stats, compile_times. Called from inside compiled code: graph_break, is_compiling,
allow_in_graph, assume_constant_result, mark_static, maybe_mark_dynamic. Exceptions: `bytegraph.exc`.

Debugging: `explain(fn)(*args)` reports graphs and graph breaks; `stats` holds the live counters
(`stats.frames_compiled`, ...) and `stats()` returns a printable summary; `compile_times()` is a
table of time per compile phase; `bytegraph.debug` has replay/minify; see `config` for the debug
dir (BYTEGRAPH_COMPILE_DEBUG), the minifier (BYTEGRAPH_REPRO_AFTER) and logs (BYTEGRAPH_LOGS).
"""
from . import backends  # noqa: F401  (registers the built-in backends)
from . import debug, debug_dir  # noqa: F401  (bytegraph.debug.replay, bytegraph.debug_dir.write_artifact)
from . import exc  # noqa: F401
from .backends.registry import list_backends, register_backend
from .config import config
from .decorators import (
    allow_in_graph,
    assume_constant_result,
    graph_break,
    is_compiling,
    mark_static,
    maybe_mark_dynamic,
)
from .eval_frame import OptimizedModule, compile, disable, run
from .explain import ExplainOutput, explain
from .frontend.graph_break import GraphBreakError
from .guards.shape import mark_dynamic
from .runtime import runtime
from .timing import compile_times

__all__ = ["compile", "disable", "run", "reset", "config", "list_backends", "register_backend", "stats", "mark_dynamic",
           "OptimizedModule", "GraphBreakError", "explain", "ExplainOutput", "compile_times", "debug", "exc",
           "graph_break", "is_compiling", "allow_in_graph", "assume_constant_result", "mark_static",
           "maybe_mark_dynamic"]

stats = runtime.stats


def reset() -> None:
    """Forget every compiled graph, every skip decision and every counter (like starting a new process)."""
    runtime.reset()
