"""The exceptions bytegraph raises to its users, in one place (`except bytegraph.exc.GraphBreakError`).

- `GraphBreakError`: `fullgraph=True` and the code could not be captured in one graph.
- `InternalError`: bytegraph itself failed on a frame (raised with `config.strict`, otherwise the
  frame runs eagerly with a warning).
- `BackendCompilerFailed` / `AccuracyError`: the minifier's verdicts on a backend
  (`BYTEGRAPH_REPRO_AFTER`).
- `BackendContractError`: a backend returned something that is not a compiled graph.
"""
from .backends.registry import BackendContractError
from .convert_frame import InternalError
from .frontend.graph_break import GraphBreakError
from .minifier import AccuracyError, BackendCompilerFailed

__all__ = ["GraphBreakError", "InternalError", "BackendCompilerFailed", "AccuracyError", "BackendContractError"]
