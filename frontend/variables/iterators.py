"""Iterators: a position over a known sequence of trackers (iter, zip, enumerate, map, ...)."""
from __future__ import annotations

import dataclasses

from .base import VariableTracker
from .constant import const


class StopIterationSignal(Exception):
    """The symbolic iterator is exhausted (FOR_ITER jumps, next() raises StopIteration)."""


@dataclasses.dataclass(frozen=True, eq=False)
class ListIteratorVariable(VariableTracker):
    """An iterator whose remaining items live in SideEffects (advancing it is a mutation)."""
    kind: str = "iterator"

    @staticmethod
    def create(tx, items, kind="iterator"):
        var = ListIteratorVariable(kind=kind)
        tx.output.side_effects.track(var, tuple(items))
        return var

    def python_type(self):
        return type(iter(()))

    def describe(self):
        return self.kind

    def next_item(self, tx):
        remaining = tx.output.side_effects.get(self)
        if not remaining:
            raise StopIterationSignal()
        tx.output.side_effects.track(self, remaining[1:])
        return remaining[0]

    def unpack(self, tx):
        remaining = tx.output.side_effects.get(self)
        tx.output.side_effects.track(self, ())
        return list(remaining)

    def call_method(self, tx, name, args, kwargs):
        if name == "__next__":
            try:
                return self.next_item(tx)
            except StopIterationSignal:
                raise StopIteration from None
        if name == "__iter__":
            return self
        if name == "__length_hint__":
            return const(len(tx.output.side_effects.get(self)))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        from .constant import const as _c  # noqa: F401
        remaining = codegen.tx.output.side_effects.get(self)
        codegen.load_global_builtin("iter")
        for item in remaining:
            codegen.reconstruct(item)
        codegen.build_tuple(len(remaining))
        codegen.call(1)
