"""Side effects: the current state of mutable Python objects while tracing, and what to replay.

Compile time only. Trackers of mutable objects (lists, dicts, sets, user objects, cells) are
frozen; their contents live here, keyed by the tracker. A mutation stores new contents and, for an
object that existed before the frame, records that it must be written back after the graph runs.
Global and closure-cell writes are recorded the same way. `snapshot()`/`restore()` make
checkpoint/rollback a matter of copying a few dicts whose values are immutable.
"""
from __future__ import annotations

from typing import Any

from .graph_break import Unsupported


class SideEffects:
    def __init__(self):
        self.contents: dict[Any, Any] = {}    # tracker -> tuple of items / tuple of (k, v) / attr dict
        self.mutated: dict[Any, int] = {}     # pre-existing tracker -> order of its first mutation
        self.globals: dict[str, Any] = {}     # global name -> tracker (pending STORE_GLOBAL)
        self.cells: dict[Any, Any] = {}       # cell tracker -> tracker of its contents
        self.deleted_globals: set = set()
        self.counter = 0
        self.generators: list = []            # GeneratorVariables made while tracing (see lifetimes.py)
        self.unsourced: set = set()           # trackers of real objects reached without a source

    def snapshot(self):
        return (dict(self.contents), dict(self.mutated), dict(self.globals), dict(self.cells),
                set(self.deleted_globals), self.counter)

    def restore(self, snap) -> None:
        (self.contents, self.mutated, self.globals, self.cells, self.deleted_globals,
         self.counter) = (dict(snap[0]), dict(snap[1]), dict(snap[2]), dict(snap[3]), set(snap[4]), snap[5])

    # -- containers and objects --------------------------------------------
    def track(self, var, contents) -> None:
        """Start tracking a mutable object with its initial contents (not a mutation)."""
        self.contents[var] = contents

    def get(self, var):
        return self.contents[var]

    def is_tracked(self, var) -> bool:
        return var in self.contents

    def mark_unsourced(self, var) -> None:
        """`var` is a real object that existed before the frame, reached without a source (a list in
        the closure of a method found on a class...): the transformed code could not write a change
        back to it, so changing it is not traced (the instruction runs natively instead)."""
        self.unsourced.add(var)

    def store(self, var, contents) -> None:
        if var.source is None and var in self.unsourced:
            raise Unsupported("untracked_mutation", what=f"changing {var.describe()} reached without a source")
        self.contents[var] = contents
        if var.source is not None and var not in self.mutated:
            self.counter += 1
            self.mutated[var] = self.counter

    def mutated_in_order(self) -> list:
        return sorted(self.mutated, key=self.mutated.get)

    # -- globals ------------------------------------------------------------
    def store_global(self, name: str, var) -> None:
        self.globals[name] = var
        self.deleted_globals.discard(name)

    def delete_global(self, name: str) -> None:
        self.globals.pop(name, None)
        self.deleted_globals.add(name)
