"""bytegraph: a bytecode-level JIT compiler frontend for PyTorch.

    opt = bytegraph.compile(model_or_fn, backend="eager")

Public API: compile, explain, reset, disable, run, mark_dynamic, config, list_backends,
register_backend, stats.
"""
from . import backends  # noqa: F401  (registers the built-in backends)
from .backends.registry import list_backends, register_backend
from .config import config
from .convert_frame import forget_all_codes, stats
from .eval_frame import OptimizedModule, compile, disable, run
from .frontend.graph_break import GraphBreakError

__all__ = ["compile", "disable", "run", "reset", "config", "list_backends", "register_backend", "stats",
           "OptimizedModule", "GraphBreakError"]


def reset() -> None:
    """Forget every compiled graph and every skip decision (like starting a new process)."""
    forget_all_codes()
    stats.__init__()
