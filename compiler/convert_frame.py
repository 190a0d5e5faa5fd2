"""convert_frame: the Python callback of the frame hook. On a cache miss it decides whether to
compile the frame, runs the frontend, builds the guard check function and stores the cache entry.

Compile time only (the hot path is the C hook and the guard functions).
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import time
import traceback
import weakref

from . import _C
from .config import config
from .logs import log
from .skipfiles import is_skipped_file
from .frontend.frame_translator import InstructionTranslator
from .frontend.graph_break import GraphBreakError, Unsupported, format_user_stack
from .guards.builder import CheckFunction


@dataclasses.dataclass
class BreakRecord:
    reason: str
    kind: str
    user_stack: list

    def __str__(self):
        return f"{self.reason}\n{format_user_stack(self.user_stack)}"


@dataclasses.dataclass
class Stats:
    frames_compiled: int = 0
    graphs: int = 0
    recompiles: int = 0
    recompiles_by_function: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    recompile_reasons: list = dataclasses.field(default_factory=list)   # (function name, reason text)
    graph_breaks: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    break_records: list = dataclasses.field(default_factory=list)
    compile_time: float = 0.0


stats = Stats()
_touched_codes: "weakref.WeakSet" = weakref.WeakSet()   # every code object whose co_extra we set
_warned_limit: set = set()


@dataclasses.dataclass
class CacheEntryInfo:
    check: CheckFunction
    graph: object
    op_count: int


class InternalError(RuntimeError):
    pass


def forget_all_codes() -> None:
    for code in list(_touched_codes):
        _C.clear(code)
    _touched_codes.clear()
    _warned_limit.clear()


class FrameCompiler:
    """The callback installed by `bytegraph.compile`: one per compiled callable."""

    def __init__(self, backend, fullgraph=False, dynamic=None, options=None, hooks=None):
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.options = options or {}
        self.hooks = hooks

    def __call__(self, code, func, args, n_entries):
        if is_skipped_file(code.co_filename) or code.co_name == "<module>":
            _touched_codes.add(code)
            return False
        if config.debug_function and code.co_name != config.debug_function:
            _touched_codes.add(code)
            return False
        cache = _C.get_cache(code)
        if cache is None:
            return None
        if n_entries:
            self._note_recompile(code, func, args, cache)
            if n_entries >= config.cache_size_limit:
                return None
        start = time.perf_counter()
        try:
            tx = InstructionTranslator(code, func, args, config, self.backend, allow_breaks=not self.fullgraph)
            try:
                compiled = tx.trace()
            except Unsupported as e:
                if not e.user_stack:
                    e.user_stack = tx.user_stack()
                raise
        except Unsupported as e:
            return self._on_unsupported(code, e)
        except GraphBreakError:
            raise
        except Exception as e:  # noqa: BLE001 - an internal error of bytegraph
            return self._on_internal_error(code, e)
        finally:
            stats.compile_time += time.perf_counter() - start
        for e in compiled.breaks:
            self._record_break(code, e)
        check = CheckFunction(list(compiled.guards), compiled.arg_names, code.co_name)
        _C.mark_skip(compiled.code)
        entry = (check.fn, compiled.code, CacheEntryInfo(check, compiled.graph, compiled.op_count))
        cache.append(entry)
        _touched_codes.add(code)
        stats.frames_compiled += 1
        if compiled.graph is not None:
            stats.graphs += 1
            log("graph", f"graph for {code.co_name} ({code.co_filename}:{code.co_firstlineno}):\n"
                         f"{compiled.graph.graph}")
        log("guards", f"guards for {code.co_name}:\n{check.source}")
        if self.hooks is not None:
            self.hooks(code, compiled, check)
        return entry

    def _note_recompile(self, code, func, args, cache):
        reasons = []
        for entry in cache:
            reasons.extend(entry[2].check.failures(func, args)[:1])
        text = "; ".join(reasons) or "no guard explains the miss"
        if len(cache) < config.cache_size_limit:
            stats.recompiles += 1
            stats.recompiles_by_function[code.co_name] += 1
            stats.recompile_reasons.append((code.co_name, text))
        log("recompiles", f"recompiling {code.co_name} ({code.co_filename}:{code.co_firstlineno}): {text}")
        if len(cache) >= config.cache_size_limit and code not in _warned_limit:
            _warned_limit.add(code)
            logging.getLogger("bytegraph").warning(
                "%s (%s:%d) hit config.cache_size_limit (%d); it now runs eagerly when no cached graph "
                "fits. Last reasons: %s", code.co_name, code.co_filename, code.co_firstlineno,
                config.cache_size_limit, text)

    def _on_unsupported(self, code, e: Unsupported):
        """A break that could not resume in this frame: the whole frame runs eagerly."""
        self._record_break(code, e)
        _touched_codes.add(code)
        return False

    def _record_break(self, code, e: Unsupported):
        where = e.user_stack[-1] if e.user_stack else None
        location = f"{where.filename}:{where.lineno} in {where.name}" if where else code.co_filename
        if self.fullgraph:
            line = f"\n    {where.line}" if where is not None and where.line else ""
            raise GraphBreakError(f"graph break in {location}: {e.reason}{line}\nhint: {e.kind.hint}") from None
        stats.graph_breaks[e.reason] += 1
        stats.break_records.append(BreakRecord(e.reason, e.kind.name, list(e.user_stack)))
        log("graph_breaks", f"graph break in {location}: {e.reason}", logging.WARNING
            if "graph_breaks" in config.logs else logging.DEBUG)

    def _on_internal_error(self, code, e):
        where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
        if config.suppress_errors:
            logging.getLogger("bytegraph").warning("internal error while compiling %s, running it eagerly: "
                                                   "%s: %s", where, type(e).__name__, e)
            _touched_codes.add(code)
            return False
        detail = "".join(traceback.format_exception(e)) if config.verbose else ""
        raise InternalError(f"bytegraph failed to compile {where}: {type(e).__name__}: {e}\n"
                            "set bytegraph.config.suppress_errors = True (BYTEGRAPH_SUPPRESS_ERRORS=1) to run "
                            f"such frames eagerly instead{detail and chr(10) + detail}") from e
