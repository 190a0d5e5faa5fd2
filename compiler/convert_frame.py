"""convert_frame: the Python callback of the frame hook. On a cache miss it decides whether to
compile the frame, runs the frontend, builds the guard check function and stores the cache entry.

Compile time only (the hot path is the C hook and the guard functions).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import logging
import time
import traceback
import weakref

from . import _C, timing
from .config import config
from .debug import FrameSession, failure_site
from .logs import enabled, log
from .skipfiles import is_skipped_file, runs_eagerly_with_callees
from .frontend.frame_translator import InstructionTranslator
from .frontend.graph_break import GraphBreakError, Unsupported, format_user_stack
from .backends.registry import BackendContractError
from .guards.builder import CheckFunction
from .guards.shape import AutomaticDynamic, ScalarConstantGuard, ShapePolicy


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

    def __call__(self):
        """`bytegraph.stats()`: a snapshot of these counters that prints as a summary."""
        from .debug import StatsReport
        return StatsReport.of(self)


stats = Stats()
_process_stats = stats
_touched_codes: "weakref.WeakSet" = weakref.WeakSet()   # every code object whose co_extra we set
_warned_limit: set = set()
# automatic dynamic: per code object, the input dims whose size changed between compiles
_automatic_dynamic = AutomaticDynamic()


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
    _automatic_dynamic.clear()


def _drop_entries_of(owner_ref) -> None:
    """A compiled function was freed: drop the cache entries it made (and with them their graphs)."""
    for code in list(_touched_codes):
        cache = _C.peek_cache(code)
        if cache:
            cache[:] = [entry for entry in cache if entry[3] is not owner_ref]


def _with_options(backend, options: dict):
    """`compile(..., options={...})` reaches the backend as keyword arguments:
    `backend(gm, example_inputs, **options)`. Without options the backend is called as is."""
    if not options:
        return backend
    try:
        inspect.signature(backend).bind(None, None, **options)
    except TypeError as e:
        name = getattr(backend, "__name__", type(backend).__name__)
        raise TypeError(f"backend {name!r} does not accept options {sorted(options)}: {e}") from None
    except ValueError:  # no signature to check (a builtin): let the call itself decide
        pass
    return functools.partial(backend, **options)


def _backend_specializes_float(backend) -> bool:
    """A backend that cannot take SymFloat inputs sets `specialize_float = True` on its function."""
    while backend is not None:
        if getattr(backend, "specialize_float", False):
            return True
        backend = getattr(backend, "func", None)    # functools.partial (backend options)
    return False


class FrameCompiler:
    """The callback installed by `bytegraph.compile`: one per compiled callable."""

    def __init__(self, backend, fullgraph=False, dynamic=None, options=None, hooks=None, stats=None):
        self.options = options or {}
        self.backend = _with_options(backend, self.options)
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.hooks = hooks
        self.stats = _process_stats if stats is None else stats   # explain() counts apart
        # cache entries hold their compile weakly (the C hook compares it with the running callback),
        # so entries die with the compiled function instead of living as long as the code object
        self.ref = weakref.ref(self, _drop_entries_of)

    def __call__(self, code, func, args, n_entries):
        if runs_eagerly_with_callees(code):
            return ...
        if is_skipped_file(code.co_filename) or code.co_name == "<module>":
            _touched_codes.add(code)
            return False
        if config.debug_function and code.co_name != config.debug_function:   # (resume functions share it)
            _touched_codes.add(code)
            return False
        cache = _C.get_cache(code)
        if cache is None:
            return None
        if n_entries:
            self._note_recompile(code, func, args, cache)
            if n_entries >= config.cache_size_limit:
                # eagerly, with what it calls (no per-submodule graphs past the limit); from now on
                # the C hook does so on a miss without calling back
                _C.mark_limit(code, self.ref)
                return ...
        session = FrameSession(code, func, args)   # debug dir, minifier, replay record, bytecode logs
        start, tx = time.perf_counter(), None
        try:
            with timing.phase("tracing"):
                tx = InstructionTranslator(code, func, args, config, session.wrap_backend(self.backend),
                                           allow_breaks=not self.fullgraph, shape_policy=self._shape_policy(code))
                try:
                    compiled = tx.trace()
                except Unsupported as e:
                    if not e.user_stack:
                        e.user_stack = tx.user_stack()
                    raise
        except Unsupported as e:
            return self._on_unsupported(code, e)
        except (GraphBreakError, BackendContractError):
            raise   # the user's to fix (fullgraph, their backend), never hidden as an internal error
        except RecursionError:
            # the program's stack is too deep for the compiler's own frames (deep user recursion, a
            # low recursion limit): this call runs eagerly, as it would without bytegraph; a call
            # from a shallower stack compiles. (Checks that bytegraph captured catch a recursion
            # bug of its own.)
            return None
        except Exception as e:  # noqa: BLE001 - an internal error of bytegraph
            session.failed(e)
            return self._on_internal_error(code, e, tx)
        finally:
            self.stats.compile_time += time.perf_counter() - start
        for e in compiled.breaks:
            self._record_break(code, e)
        with timing.phase("guards"):
            check = CheckFunction(list(compiled.guards), compiled.arg_names, code.co_name)
        _C.mark_skip(compiled.code)
        entry = (check.fn, compiled.code, CacheEntryInfo(check, compiled.graph, compiled.op_count), self.ref)
        cache.append(entry)
        _touched_codes.add(code)
        self.stats.frames_compiled += 1
        session.compiled(compiled, check)
        if compiled.graph is not None:
            self.stats.graphs += 1
            log("graph", f"graph for {code.co_name} ({code.co_filename}:{code.co_firstlineno}):\n"
                         f"{compiled.graph.graph}")
        log("guards", f"guards for {code.co_name}:\n{check.source}")
        if self.hooks is not None:
            self.hooks(code, compiled, check)
        return entry

    def _dynamic_mode(self):
        """True: every input dim symbolic; False: static; None: static, then automatic dynamic."""
        if self.dynamic is not None:
            return self.dynamic
        return True if config.dynamic_shapes else None

    def _shape_policy(self, code) -> ShapePolicy:
        mode = self._dynamic_mode()
        automatic = mode is None and config.automatic_dynamic_shapes
        return ShapePolicy(mode=mode, automatic_dims=_automatic_dynamic.dims_for(code) if automatic else {},
                           automatic_scalars=_automatic_dynamic.scalars_for(code) if automatic else frozenset(),
                           specialize_float=config.specialize_float or _backend_specializes_float(self.backend))

    def _note_size_changes(self, code, failed) -> list:
        """Automatic dynamic: when an entry failed only because input sizes changed, or Python
        ints/floats read from the frame changed value (see guards/shape.py), remember those dims
        and numbers so the recompile makes them symbolic. Returns what became dynamic, for the log."""
        if self._dynamic_mode() is not None or not config.automatic_dynamic_shapes or not failed:
            return []
        changes, scalars = [], []
        for guard, value, _ in failed:
            if isinstance(guard, ScalarConstantGuard) and guard.value_change(value) and not \
                    (type(value) is float and (config.specialize_float or _backend_specializes_float(self.backend))):
                scalars.append(guard.source.name())
                continue
            dims = guard.expected.size_change(value) if guard.kind == "TENSOR_MATCH" else None
            if guard.kind == "TENSOR_MATCH" and dims is None or guard.kind not in ("TENSOR_MATCH", "SHAPE"):
                return []          # something other than a size or a number changed: a plain recompile
            if dims:
                changes.append((guard.source.name(), dims))
        return [f"{name} dims {sorted(dims)}" for name, dims in changes if _automatic_dynamic.note(code, name, dims)] \
            + [name for name in scalars if _automatic_dynamic.note_scalar(code, name)]

    def own_entries(self, cache) -> list:
        """The cache entries this compiler made (another compile of the same function has its own)."""
        return [entry for entry in cache if entry[3] is self.ref]

    def _note_recompile(self, code, func, args, cache):
        reasons, made_dynamic = [], []
        for entry in self.own_entries(cache):
            failed = entry[2].check.failed_guards(func, args)
            reasons.extend(why for _, _, why in failed[:1])
            made_dynamic.extend(self._note_size_changes(code, failed))
        text = "; ".join(reasons) or "no guard explains the miss"
        if made_dynamic:
            text += f" (automatic dynamic: {', '.join(dict.fromkeys(made_dynamic))} now symbolic)"
        own = len(self.own_entries(cache))
        if own < config.cache_size_limit:
            self.stats.recompiles += 1
            self.stats.recompiles_by_function[code.co_name] += 1
            self.stats.recompile_reasons.append((code.co_name, text))
        log("recompiles", f"recompiling {code.co_name} ({code.co_filename}:{code.co_firstlineno}): {text}")
        if own >= config.cache_size_limit and code not in _warned_limit:
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
        self.stats.graph_breaks[e.reason] += 1
        self.stats.break_records.append(BreakRecord(e.reason, e.kind.name, list(e.user_stack)))
        log("graph_breaks", f"graph break in {location}: {e.reason}", logging.WARNING
            if "graph_breaks" in config.logs else logging.DEBUG)

    def _on_internal_error(self, code, e, tx=None):
        where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
        if not config.strict:
            logging.getLogger("bytegraph").warning(
                "internal error while compiling %s, running it eagerly: %s: %s\nThis is a bug of bytegraph: "
                "please report it with this message (BYTEGRAPH_LOGS=+frontend shows the internal traceback, "
                "BYTEGRAPH_COMPILE_DEBUG=1 saves the frame)", where, type(e).__name__, e)
            _touched_codes.add(code)
            return False
        verbose = config.verbose or enabled("frontend", logging.DEBUG)
        detail = "".join(traceback.format_exception(e)) if verbose else \
            "(the internal traceback is shown with config.verbose or BYTEGRAPH_LOGS=+frontend)"
        raise InternalError(f"bytegraph failed to compile {where}: {type(e).__name__}: {e}{failure_site(tx)}\n"
                            "with bytegraph.config.strict = False (the default; BYTEGRAPH_STRICT=0) such "
                            f"frames run eagerly instead{detail and chr(10) + detail}") from e
