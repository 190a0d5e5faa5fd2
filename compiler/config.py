"""bytegraph configuration: one object, scoped overrides, and the only place env vars are read.

Two environment variables are *set* (for libraries that only read the environment), not read:
`TRITON_INTERPRET=1` by the inductor backend on a machine without a GPU (before triton compiles
anything), and `TENSORIFY_PYTHON_SCALARS=0` by aot_eager around AOTAutograd when floats are SymFloat
graph inputs (see backends/aot_eager.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os


def _env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


@dataclasses.dataclass
class Config:
    # dynamic shapes: True = every input dim symbolic from the first compile
    dynamic_shapes: bool = dataclasses.field(default_factory=lambda: _env_flag("BYTEGRAPH_DYNAMIC_SHAPES"))
    # automatic dynamic: recompile with symbolic dims when only a size changed
    automatic_dynamic_shapes: bool = True
    # Python floats stay constants (CONSTANT_MATCH) even when they change between calls, instead of
    # becoming SymFloat graph inputs (automatic dynamic, guards/shape.py); a backend that cannot take
    # SymFloat inputs says so with an attribute `specialize_float = True` on its function
    specialize_float: bool = False
    # recompiles per code object before the frame runs eagerly
    cache_size_limit: int = dataclasses.field(default_factory=lambda: _env_int("BYTEGRAPH_CACHE_SIZE_LIMIT", 8))
    # entries per code object in all: a code run by many module instances (the blocks of a model) has
    # up to `cache_size_limit` entries per instance, and at most this many
    accumulated_cache_size_limit: int = 64
    # an internal error raises InternalError instead of running the frame eagerly with one warning
    # (on in the project's tests and oracles, so a fallback never hides a bug there)
    strict: bool = dataclasses.field(default_factory=lambda: _env_flag("BYTEGRAPH_STRICT"))
    # `.item()` becomes an unbacked symbol in the graph instead of a graph break
    capture_scalar_outputs: bool = False
    # only compile frames of this function name (empty: all)
    debug_function: str = dataclasses.field(default_factory=lambda: os.environ.get("BYTEGRAPH_DEBUG_FUNCTION", ""))
    # which logs to show, e.g. "graph,guards,+frontend"
    logs: str = dataclasses.field(default_factory=lambda: os.environ.get("BYTEGRAPH_LOGS", ""))
    # write a folder per compiled frame
    compile_debug: bool = dataclasses.field(default_factory=lambda: _env_flag("BYTEGRAPH_COMPILE_DEBUG"))
    debug_dir: str = dataclasses.field(
        default_factory=lambda: os.environ.get("BYTEGRAPH_DEBUG_DIR", os.path.join(os.getcwd(), "bytegraph_debug")))
    # minify a graph the backend fails on and write repro.py: "dynamo" (the graph bytegraph built)
    repro_after: str = dataclasses.field(default_factory=lambda: os.environ.get("BYTEGRAPH_REPRO_AFTER", ""))
    # 1: repro of the whole graph, 2: minified compile failures, 3: + run failures, 4: + accuracy vs eager
    repro_level: int = dataclasses.field(default_factory=lambda: _env_int("BYTEGRAPH_REPRO_LEVEL", 2))
    # on a conversion failure, record the frame for `bytegraph.debug.replay(path)`
    replay_record_enabled: bool = dataclasses.field(default_factory=lambda: _env_flag("BYTEGRAPH_REPLAY_RECORD"))
    # show internal tracebacks in error messages
    verbose: bool = False
    # code the inductor backend generates for CPU tensors: "cpp" (C++/OpenMP, built with g++) or
    # "triton" (Triton kernels run by Triton's interpreter; slow, for testing that printer on CPU) or
    # "metal" (the Metal printer's kernels compiled as C++ against metal_emu.h: checks that printer)
    cpu_codegen: str = dataclasses.field(default_factory=lambda: os.environ.get("BYTEGRAPH_CPU_CODEGEN", "cpp"))
    # under DistributedDataParallel, compile each graph in pieces at DDP's gradient-bucket boundaries
    # so each bucket's all-reduce overlaps the rest of the backward (backends/distributed.py)
    optimize_ddp: bool = True
    # how deep user functions are inlined before a call becomes a graph break
    max_inline_depth: int = 32
    # unroll at most this many loop iterations per frame before giving up on the frame
    max_instructions: int = 200_000
    # a frame whose arguments lead to no tensor and whose trace (inlined calls included) runs this
    # many instructions before any tensor enters its graph is pure Python (symbolic numbers alone
    # included): it runs as written instead (tracing it further costs compile time for no tensor
    # graph; not applied with fullgraph=True)
    max_instructions_without_tensors: int = 20_000

    @contextlib.contextmanager
    def patch(self, **changes):
        """Temporarily override settings: `with bytegraph.config.patch(cache_size_limit=2): ...`."""
        unknown = [k for k in changes if not hasattr(self, k)]
        if unknown:
            raise AttributeError(f"bytegraph.config has no setting(s) {unknown}; known: {self.names()}")
        saved = {k: getattr(self, k) for k in changes}
        for k, v in changes.items():
            setattr(self, k, v)
        try:
            yield self
        finally:
            for k, v in saved.items():
                setattr(self, k, v)

    def names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]


config = Config()
