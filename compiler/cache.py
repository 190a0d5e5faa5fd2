"""The contract with the C frame hook (compiler/_eval_frame.c): what a code object's cache holds,
and what the frame callback answers on a miss. Both types are defined by the hook itself, so C,
Python and tests read one definition.

- `CacheEntry(guard, code, info, owner)`: one compiled version of a code object. The hook calls
  `guard(func, *args)` and, when it accepts, runs `code`; `owner` is a weak reference to the
  `FrameCompiler` that made it (its backend, fullgraph and dynamic settings); `info` is a
  `CacheEntryInfo`, for Python only (recompile reasons, explain, tests).
- The callback returns the new CacheEntry (already appended to the cache), or a `FrameAction`.
"""
from __future__ import annotations

import dataclasses
import enum

from . import _C

CacheEntry = _C.CacheEntry


class FrameAction(enum.IntEnum):
    """What the frame callback may answer instead of a cache entry."""
    RUN_AS_IS = _C.RUN_AS_IS      # run the frame uncompiled this time
    SKIP_CODE = _C.SKIP_CODE      # run it uncompiled, and never call back for this code object again
    RUN_EAGERLY = _C.RUN_EAGERLY  # run it uncompiled, with the hook off for everything it calls
    SKIP_UNTIL_RESET = _C.SKIP_UNTIL_RESET   # SKIP_CODE until `reset`, recorded nowhere Python sees


@dataclasses.dataclass
class CacheEntryInfo:
    check: object           # guards.builder.CheckFunction
    graph: object           # the fx GraphModule, or None when the frame had no tensor work
    op_count: int
    modules: tuple = ()     # (source, weakref) of the nn.Modules it was compiled for
