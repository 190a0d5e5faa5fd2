"""convert_frame: the Python callback of the frame hook. On a cache miss it decides whether to
compile the frame, runs the frontend, builds the guard check function and stores the cache entry.

Compile time only (the hot path is the C hook and the guard functions).
"""
from __future__ import annotations

import builtins
import functools
import gc
import inspect
import logging
import threading
import time
import traceback
import types
import weakref

import torch

from . import _C, timing
from .cache import CacheEntry, CacheEntryInfo, FrameAction
from .config import config
from .frame_session import FrameSession, failure_site
from .logs import enabled, log, rank_prefix
from .runtime import BreakRecord, runtime
from .probe import frame_may_reach_tensors, has_finalizer, may_hold_tensors, source_lines_kept_apart
from .skipfiles import is_skipped_code, runs_eagerly_with_callees
from .frontend.frame_translator import InstructionTranslator
from .frontend.graph_break import GraphBreakError, Unsupported
from .frontend.output_graph import backend_declares
from .frontend.resume import is_resume_code, shaped_arguments
from .backends.distributed import DDPGraphSplitter, active_ddp_module
from .backends.registry import BackendContractError
from .guards.builder import CheckFunction
from .guards.guard import functorch_transform_active, user_dispatch_mode_active, user_function_mode_active
from .guards.shape import ShapePolicy


def _for_another_module(entry, func, args) -> bool:
    """Whether this call reaches other module objects than the cache entry was compiled for (another
    layer running the same code): the entry serves other instances and does not count toward this
    one's cache size limit."""
    return not entry.info.check.reads_same_objects(func, args, entry.info.modules)


def _resume_collector(enabled: bool, met_finalizer: bool) -> None:
    """After a compile, which runs with the cyclic collector paused: collections triggered by the
    compiler's own allocations would run the program's gc callbacks and the finalizers of its
    garbage at points eager never reaches (with `gc.set_threshold(1)`, at every allocation of the
    compiler: a compile that takes minutes). Tracing leaves its own garbage in reference cycles
    (trackers, the session) that hold the objects it read; nothing was collected meanwhile, so all
    of it is young and collecting the youngest generation frees it: an object the program drops
    later dies when its last real reference goes, as in eager. (A program that turned the collector
    off gets that collection only when the compile met a finalizer.)"""
    if enabled:
        gc.enable()
    if enabled or met_finalizer:
        gc.collect(0)


def _pure_python(code, cache, args) -> bool:
    """Whether a miss of `code` is for pure-Python work: each of its cache entries (whatever compile
    made it) holds no graph, and no argument may lead to a tensor (see `may_hold_tensors`)."""
    return bool(cache) and all(entry.info is not None and getattr(entry.info, "graph", True) is None
                               for entry in cache) and not any(may_hold_tensors(a) for a in args)


# one compile at a time in the process: the trace's caches, torch's fake-tensor state and the collector's
# switch are shared (two threads missing the cache at once raced on them, and the second could leave the
# collector off); re-entrant, as a compile may start another on the same thread
_COMPILE_LOCK = threading.RLock()


class InternalError(RuntimeError):
    pass


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


_BUILTINS = dict(builtins.__dict__)


def _builtins_intact() -> bool:
    """No builtin deleted or rebound (`builtins.len = ...`: the compiler's own code and torch's call
    them), no key that is not a string added (a program may do either, for a while)."""
    names = builtins.__dict__
    return all(names.get(k, _BUILTINS) is v for k, v in _BUILTINS.items()) and all(type(k) is str for k in names)


def _own_code(fn):
    """The code a call of `fn` runs first: a function's or method's, or its class's `__call__`'s (read
    without running the program's code)."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        fn = inspect.getattr_static(type(fn), "__call__", None)
    return fn.__code__ if isinstance(fn, types.FunctionType) else None


class FrameCompiler:
    """The callback installed by `bytegraph.compile`: one per compiled callable."""

    def __init__(self, backend, fullgraph=False, dynamic=None, options=None, hooks=None, stats=None, root=None):
        self.options = options or {}
        self.backend = _with_options(backend, self.options)
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.hooks = hooks
        root_code = _own_code(root)
        if root_code is not None:
            # compiled whatever its arguments, even when other compiled code calls it first (and asked
            # again if such a call has already marked it to be skipped)
            runtime.note_compiled_root(root_code, self)
            if _C.is_skipped(root_code):
                _C.clear(root_code)
        self.stats = runtime.stats if stats is None else stats   # explain() counts apart
        # cache entries hold their compile weakly (the C hook compares it with the running callback),
        # so entries die with the compiled function instead of living as long as the code object
        self.ref = weakref.ref(self, runtime.drop_entries_of)

    def __call__(self, code, func, args, n_entries):
        action = self._without_compiling(code, func)
        if action is not None:
            return action
        if user_dispatch_mode_active() or user_function_mode_active() or functorch_transform_active():
            return FrameAction.RUN_EAGERLY  # this call, and what it calls (the entries' guards refuse it too)
        if not _builtins_intact():
            return FrameAction.RUN_AS_IS    # the compiler's own code (and torch's) needs the builtins
        if _C.peek_cache(code) is None and not runtime.is_compiled_root(code) and not is_resume_code(code) and \
                not frame_may_reach_tensors(code, func, args):
            # a frame reached from running code (a comparison, a key function, a callback) that can
            # meet no tensor: it runs as written from now on, as a recompile for a later call would
            # rarely find a graph; its callees are still compiled. It leaves no object behind (a
            # program may count the collector's objects around such calls, as CPython's tests do).
            return FrameAction.SKIP_UNTIL_RESET
        cache = _C.get_cache(code)
        if cache is None:
            return FrameAction.RUN_AS_IS
        if n_entries and _pure_python(code, cache, args):
            # every compile of this code gave no graph and this call brings no tensor either: a
            # recompile would give none again (pure-Python helpers, loops that break each iteration);
            # it runs as written from now on
            log("recompiles", f"{code.co_name} ({code.co_filename}:{code.co_firstlineno}) compiled to no graph "
                              "and is called again without tensors: it runs as written from now on")
            runtime.touch(code)
            return FrameAction.SKIP_CODE
        if n_entries and self._note_recompile(code, func, args, cache):
            # eagerly, with what it calls (no per-submodule graphs past the limit); from now on
            # the C hook does so on a miss without calling back
            _C.mark_limit(code, self.ref)
            return FrameAction.RUN_EAGERLY
        with _COMPILE_LOCK:
            collecting = gc.isenabled()
            gc.disable()              # (no frame of its own: a deep stack leaves the compiler little room)
            met_finalizer = True
            # fake propagation and the backend's own tracing save tensors for backward: the user's
            # saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks`) see only the run's, as in eager
            hooks_were_paused = torch._C._autograd._saved_tensors_hooks_set_tracing(True)
            try:
                with source_lines_kept_apart():
                    decision, met_finalizer = self._compile(code, func, args, cache)
            finally:
                torch._C._autograd._saved_tensors_hooks_set_tracing(hooks_were_paused)
                _resume_collector(collecting, met_finalizer or any(has_finalizer(type(a)) for a in args))
        return decision

    def _compile(self, code, func, args, cache):
        """Trace the frame: (a new cache entry, or how to run it when it cannot be compiled;
        whether tracing met an object with a finalizer)."""
        session = FrameSession(code, func, args)   # debug dir, minifier, replay record, bytecode logs
        start, tx = time.perf_counter(), None
        backend = self.backend
        ddp = active_ddp_module() if config.optimize_ddp else None
        if ddp is not None:   # DDP's forward is running this frame's module: compile in bucket pieces
            backend = DDPGraphSplitter(backend, ddp)
        try:
            with timing.phase("tracing"):
                tx = InstructionTranslator(code, func, args, config, session.wrap_backend(backend),
                                           allow_breaks=not self.fullgraph, shape_policy=self._shape_policy(code))
                try:
                    compiled = tx.trace()
                except Unsupported as e:
                    if not e.user_stack:
                        e.user_stack = tx.user_stack()
                    raise
        except Unsupported as e:
            return self._on_unsupported(code, e), e.kind.name == "finalizer"
        except (GraphBreakError, BackendContractError):
            raise   # the user's to fix (fullgraph, their backend), never hidden as an internal error
        except RecursionError:
            # the program's stack is too deep for the compiler's own frames (deep user recursion, a
            # low recursion limit): this call runs as is, as it would without bytegraph; a call
            # from a shallower stack compiles. (Checks that bytegraph captured catch a recursion
            # bug of its own.)
            return FrameAction.RUN_AS_IS, False
        except Exception as e:  # noqa: BLE001 - an internal error of bytegraph
            session.failed(e)
            return self._on_internal_error(code, e, tx), False
        finally:
            self.stats.compile_time += time.perf_counter() - start
        if ddp is not None:
            self.stats.ddp_splits.extend((code.co_name, split) for split in backend.splits)
        return self._install(code, cache, compiled, session), False

    def _without_compiling(self, code, func) -> FrameAction | None:
        """How to run `code` when it is never compiled; None when it may be."""
        if runs_eagerly_with_callees(code):
            return FrameAction.RUN_EAGERLY
        debug_only = config.debug_function
        if is_skipped_code(code, func) or code.co_name == "<module>" or debug_only and \
                code.co_name != debug_only:    # (resume functions carry their function's name)
            runtime.touch(code)
            return FrameAction.SKIP_CODE
        return None

    def _install(self, code, cache, compiled, session) -> CacheEntry:
        """Store what tracing produced as a new cache entry of `code`, and account for it."""
        for e in compiled.breaks:
            self._record_break(code, e)
        with timing.phase("guards"):
            check = CheckFunction(list(compiled.guards), compiled.arg_names, code.co_name, kept=compiled.kept)
        _C.mark_skip(compiled.code)
        info = CacheEntryInfo(check, compiled.graph, compiled.op_count, compiled.modules)
        entry = CacheEntry(check.fn, compiled.code, info, self.ref)
        cache.append(entry)
        runtime.touch(code)
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

    def _specializes_float(self) -> bool:
        return config.specialize_float or backend_declares(self.backend, "specialize_float")

    def _shape_policy(self, code) -> ShapePolicy:
        mode = self._dynamic_mode()
        automatic = mode is None and config.automatic_dynamic_shapes
        return ShapePolicy(mode=mode, automatic_dims=runtime.automatic_dynamic.dims_for(code) if automatic else {},
                           automatic_scalars=runtime.automatic_dynamic.scalars_for(code) if automatic else frozenset(),
                           specialize_float=self._specializes_float(),
                           shaped_locals=shaped_arguments(code) if automatic else frozenset())

    def _note_size_changes(self, code, failed) -> list:
        """Automatic dynamic: when an entry failed only because input sizes changed, or Python
        ints/floats read from the frame changed value (see guards/shape.py), remember those dims
        and numbers so the recompile makes them symbolic. Returns what became dynamic, for the log."""
        if self._dynamic_mode() is not None or not config.automatic_dynamic_shapes or not failed:
            return []
        changes, scalars = [], []
        for guard, value, _ in failed:
            change = guard.kind.dynamic_change(guard, value)
            if change is None or change.scalar and type(value) is float and self._specializes_float():
                return []          # something other than a size or a number changed: a plain recompile
            if change.scalar:
                scalars.append(guard.source.name())
            if change.dims:
                changes.append((guard.source.name(), change.dims))
        memory = runtime.automatic_dynamic
        return [f"{name} dims {sorted(dims)}" for name, dims in changes if memory.note(code, name, dims)] \
            + [name for name in scalars if memory.note_scalar(code, name)]

    def own_entries(self, cache) -> list:
        """The cache entries this compiler made (another compile of the same function has its own)."""
        return [entry for entry in cache if entry.owner is self.ref]

    def _note_recompile(self, code, func, args, cache) -> bool:
        """Log and count a cache miss. Returns whether the frame reached its cache size limit: the
        entries compiled for the same modules as this call number `config.cache_size_limit`, or all
        its entries `config.accumulated_cache_size_limit` (one code run by many module instances, e.g.
        the blocks of a model sharded with FSDP, has an entry per instance)."""
        reasons, made_dynamic, same_modules = [], [], 0
        own = self.own_entries(cache)
        for entry in own:
            failed = entry.info.check.failed_guards(func, args)
            reasons.extend(why for _, _, why in failed[:1])
            made_dynamic.extend(self._note_size_changes(code, failed))
            same_modules += not _for_another_module(entry, func, args)
        text = "; ".join(dict.fromkeys(reasons)) or "no guard explains the miss"
        if made_dynamic:
            text += f" (automatic dynamic: {', '.join(dict.fromkeys(made_dynamic))} now symbolic)"
        limited = same_modules >= config.cache_size_limit or len(own) >= config.accumulated_cache_size_limit
        if not limited:
            self.stats.recompiles += 1
            self.stats.recompiles_by_function[code.co_name] += 1
            self.stats.recompile_reasons.append((code.co_name, text))
        log("recompiles", f"recompiling {code.co_name} ({code.co_filename}:{code.co_firstlineno}): {text}")
        if limited and runtime.first_time(("cache size limit", code)):
            logging.getLogger("bytegraph").warning(
                "%s%s (%s:%d) hit config.cache_size_limit (%d entries for the same modules, %d in all); it now "
                "runs eagerly when no cached graph fits. Last reasons: %s", rank_prefix(), code.co_name,
                code.co_filename, code.co_firstlineno, config.cache_size_limit, config.accumulated_cache_size_limit,
                text)
        return limited

    def _on_unsupported(self, code, e: Unsupported):
        """A break that could not resume in this frame: the whole frame runs eagerly."""
        if self.fullgraph and e.kind.name == "user_exception":
            # the frame raises the program's own exception (`raise ValueError`, a failed assert):
            # that is its outcome, not a graph break; run eagerly this time, with what it calls (which
            # may be code eager runs on the way to the raise, like an autograd.Function's forward,
            # that fullgraph would refuse), it raises it, and a later call that does not raise compiles
            return FrameAction.RUN_EAGERLY
        self._record_break(code, e)
        runtime.touch(code)
        cache = _C.get_cache(code)
        if e.kind.name == "no_tensor_work" and cache and self.own_entries(cache):
            # pure-Python work on this call only: the graphs compiled for other calls keep serving them,
            # a miss runs eagerly from the C hook (as past the cache size limit)
            _C.mark_limit(code, self.ref)
            return FrameAction.RUN_EAGERLY
        return FrameAction.SKIP_CODE

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
        verbose = config.verbose or enabled("frontend", logging.DEBUG)
        if not config.strict:
            logging.getLogger("bytegraph").warning(
                "internal error while compiling %s, running it eagerly: %s: %s\nThis is a bug of bytegraph: "
                "please report it with this message (BYTEGRAPH_LOGS=+frontend shows the internal traceback, "
                "BYTEGRAPH_COMPILE_DEBUG=1 saves the frame)%s", where, type(e).__name__, e,
                "\n" + "".join(traceback.format_exception(e)) if verbose else "")
            runtime.touch(code)
            return FrameAction.SKIP_CODE
        detail = "".join(traceback.format_exception(e)) if verbose else \
            "(the internal traceback is shown with config.verbose or BYTEGRAPH_LOGS=+frontend)"
        raise InternalError(f"bytegraph failed to compile {where}: {type(e).__name__}: {e}{failure_site(tx)}\n"
                            "with bytegraph.config.strict = False (the default; BYTEGRAPH_STRICT=0) such "
                            f"frames run eagerly instead{detail and chr(10) + detail}") from e
