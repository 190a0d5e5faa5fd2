"""A weak mapping keyed by a code object's identity, for what the compiler derives from one code object.

Compile time only. CPython's code objects compare (and hash) equal when their bytecode, names, constants,
first line and line table are, whatever file they come from: two functions of the same text in different
files (doctest examples, code made with `exec`) are equal. Keyed by equality (a `WeakKeyDictionary`), the
second shared the first's entries: its resume functions, and the nested code objects its decoded
instructions load, named the first one's file (tracebacks, `co_filename`, a debugger's listing).
"""
from __future__ import annotations

import types
import weakref

_ABSENT = object()


class CodeKeyed:
    """`{code: value}` by identity; an entry goes when its code object dies."""
    __slots__ = ("_entries", "__weakref__")

    def __init__(self):
        self._entries: dict = {}     # id(code) -> (weak reference to the code, value)

    def get(self, code: types.CodeType, default=None):
        entry = self._entries.get(id(code))
        return entry[1] if entry is not None and entry[0]() is code else default

    def __getitem__(self, code):
        value = self.get(code, _ABSENT)
        if value is _ABSENT:
            raise KeyError(code)
        return value

    def __contains__(self, code) -> bool:
        return self.get(code, _ABSENT) is not _ABSENT

    def __setitem__(self, code, value) -> None:
        key, entries = id(code), self._entries

        def forget(ref):
            # (a newer code object at the same address has its own reference)
            if entries.get(key, (None,))[0] is ref:
                del entries[key]
        self._entries[key] = (weakref.ref(code, forget), value)

    def setdefault(self, code, default):
        value = self.get(code, _ABSENT)
        if value is _ABSENT:
            self[code] = value = default
        return value

    def __iter__(self):
        """The live code objects (a list taken now: entries may go meanwhile)."""
        return iter([code for code in (ref() for ref, _ in list(self._entries.values())) if code is not None])

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
