"""bytegraph's process state, in one object: `runtime`.

Everything bytegraph remembers between compiles lives here: the counters of `bytegraph.stats`,
automatic dynamic's memory of changing sizes and numbers, the code objects whose cache (co_extra)
bytegraph has touched, the warnings already given once, the compile-time table and the debug dir's
run folder and frame numbers. `bytegraph.reset()` is `runtime.reset()`: like starting a new process.
The modules that use a piece of it (convert_frame, explain, timing, debug_dir) go through this
object; none keeps state of its own.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import traceback
import weakref

from . import _C
from .code_keyed import CodeKeyed
from .frontend.graph_break import format_user_stack
from .guards.shape import AutomaticDynamic


@dataclasses.dataclass
class BreakRecord:
    reason: str
    kind: str                                   # the break kind's short name
    user_stack: list[traceback.FrameSummary]

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
    ddp_splits: list = dataclasses.field(default_factory=list)   # (function name, GraphSplit) per graph under DDP

    def __call__(self) -> "StatsReport":
        """`bytegraph.stats()`: a snapshot of these counters that prints as a summary."""
        return StatsReport.of(self)

    def clear(self) -> None:
        """Back to zero, in place (`bytegraph.stats` stays the same object)."""
        self.__init__()


@dataclasses.dataclass(frozen=True)
class StatsReport:
    """A snapshot of `bytegraph.stats`; prints as a summary."""
    frames_compiled: int
    graphs: int
    recompiles: int
    recompiles_by_function: dict    # function name -> count
    graph_breaks: dict          # reason -> count
    compile_time: float         # seconds in convert_frame
    cache_hits: int | None      # None: not counted (the C hook has no counter yet)

    @classmethod
    def of(cls, stats: Stats) -> StatsReport:
        return cls(stats.frames_compiled, stats.graphs, stats.recompiles, dict(stats.recompiles_by_function),
                   dict(stats.graph_breaks.most_common()), stats.compile_time, None)

    def __str__(self) -> str:
        hits = "not counted" if self.cache_hits is None else str(self.cache_hits)
        lines = ["bytegraph stats",
                 f"  frames compiled   {self.frames_compiled}",
                 f"  graphs            {self.graphs}",
                 f"  recompiles        {self.recompiles}",
                 *(f"    {count:>4}  {name}" for name, count in self.recompiles_by_function.items()),
                 f"  cache hits        {hits}",
                 f"  compile time      {self.compile_time:.3f} s",
                 f"  graph breaks      {sum(self.graph_breaks.values())}"]
        lines += [f"    {count:>4}  {reason}" for reason, count in self.graph_breaks.items()]
        return "\n".join(lines)

    __repr__ = __str__


class Runtime:
    """All of bytegraph's process state; the one instance is `runtime`."""

    def __init__(self):
        self.stats = Stats()
        self.automatic_dynamic = AutomaticDynamic()
        self.phases: dict = {}             # compile phase name -> timing.PhaseTime
        self.run_dirs: dict = {}           # debug dir -> this process's run folder in it
        self.frame_numbers: dict = {}      # run folder -> itertools.count numbering its frame folders
        self._touched = CodeKeyed()      # every code object whose co_extra we set (by identity: see code_keyed)
        # the code of each function given to `compile` -> its live compiled callbacks (kept over a
        # reset: the compiled functions live on)
        self.compiled_roots = CodeKeyed()
        self._warned: set = set()

    # -- code objects ---------------------------------------------------------------------------
    def touch(self, code) -> None:
        """bytegraph stored something on `code` (a cache entry or a skip mark)."""
        self._touched[code] = True

    def note_compiled_root(self, code, callback) -> None:
        self.compiled_roots.setdefault(code, weakref.WeakSet()).add(callback)

    def is_compiled_root(self, code) -> bool:
        return bool(self.compiled_roots.get(code))

    def touched_codes(self) -> list:
        return list(self._touched)

    def forget_all_codes(self) -> None:
        """Drop every cache entry and skip mark bytegraph stored, and what automatic dynamic learnt."""
        for code in list(self._touched):
            _C.clear(code)
        self._touched.clear()
        _C.forget_skips_until_reset()
        self.automatic_dynamic.clear()

    def drop_entries_of(self, owner_ref) -> None:
        """A compiled function was freed: drop the cache entries it made (and with them their graphs)."""
        for code in list(self._touched):
            cache = _C.peek_cache(code)
            if cache:
                cache[:] = [entry for entry in cache if entry.owner is not owner_ref]

    @contextlib.contextmanager
    def isolated_caches(self):
        """Set aside every cache entry and skip mark bytegraph has stored; afterwards drop what was
        stored meanwhile and put the old ones back."""
        saved = []
        for code in list(self._touched):
            saved.append((code, None if _C.is_skipped(code) else list(_C.peek_cache(code) or ())))
            _C.clear(code)
        self._touched.clear()
        try:
            yield
        finally:
            for code in list(self._touched):
                _C.clear(code)
            self._touched.clear()
            for code, entries in saved:
                if entries is None:
                    _C.mark_skip(code)
                else:
                    _C.get_cache(code).extend(entries)
                self._touched[code] = True

    # -- once per process -----------------------------------------------------------------------
    def first_time(self, key) -> bool:
        """True the first time `key` is seen (for warnings given once per process)."""
        if key in self._warned:
            return False
        self._warned.add(key)
        return True

    def reset(self) -> None:
        """Forget everything, as if the process had just started."""
        self.forget_all_codes()
        self.stats.clear()
        self.phases.clear()
        self.run_dirs.clear()
        self.frame_numbers.clear()
        self._warned.clear()


runtime = Runtime()
