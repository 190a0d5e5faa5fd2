"""Test helpers: backends that count what was captured."""
from __future__ import annotations

from .backends.registry import lookup_backend


def count_ops(gm) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


class CompileCounter:
    """A backend that counts compiled graphs (`frame_count`) and their ops (`op_count`), then runs
    the graph eagerly."""
    eager_autograd = True

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += count_ops(gm)
        self.graphs.append(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []


class CompileCounterWithBackend(CompileCounter):
    """Counts like CompileCounter, then compiles with the named backend."""

    def __init__(self, backend: str):
        super().__init__()
        self.backend = lookup_backend(backend)
        # what the wrapped backend says about its inputs holds for the counter too
        self.specialize_float = getattr(self.backend, "specialize_float", False)
        self.eager_autograd = getattr(self.backend, "eager_autograd", False)

    def __call__(self, gm, example_inputs):
        super().__call__(gm, example_inputs)
        return self.backend(gm, example_inputs)
