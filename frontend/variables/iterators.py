"""Iterators: a position over a known sequence of trackers (iter, zip, enumerate, map, ...)."""
from __future__ import annotations

import collections
import dataclasses
import inspect
import itertools
import operator
import types
from typing import Any

from ...guards.guard import Guard
from ...guards.source import ItemSource, ListIteratorSource, iterator_rest
from .. import exception_state, reads
from ..graph_break import Unsupported, user_error
from ..instructions import instructions_of
from ..quiet_warnings import filters_set_to
from ..signals import GeneratorYield, ReturnValue, UserException
from .base import VariableTracker, families
from .constant import const
from .lists import ListVariable, TupleVariable
from .misc import ExceptionVariable, TracebackVariable


class StopIterationSignal(Exception):
    """The symbolic iterator is exhausted (FOR_ITER jumps, next() raises StopIteration); `value`
    is a finished generator's return value (the result of `yield from`)."""

    def __init__(self, value=None):
        super().__init__()
        self.value = value if value is not None else const(None)


@dataclasses.dataclass(frozen=True, eq=False)
class IteratorVariable(VariableTracker):
    """The iterator protocol over `next_item(tx)`, which returns the next tracker or raises
    StopIterationSignal."""
    is_iterator = True
    walks_known_items = True     # False: it stands for a live container (zip/enumerate stay lazy over it)

    def next_item(self, tx):
        raise NotImplementedError

    def unpack(self, tx):
        items = []
        while True:
            try:
                items.append(self.next_item(tx))
            except StopIterationSignal:
                return items
            if len(items) > tx.config.max_instructions:
                raise Unsupported("endless_iterator", what=f"consuming {self.describe()} (endless?)")

    def truth(self, tx):
        # CPython's iterator types define neither __bool__ nor __len__: always true
        return True

    def call_method(self, tx, name, args, kwargs):
        if name == "__next__":
            try:
                return self.next_item(tx)
            except StopIterationSignal as done:
                raise stop_iteration(tx, done.value) from None
        if name == "__iter__":
            return self
        return super().call_method(tx, name, args, kwargs)


# the real type of what a ListIteratorVariable of that kind stands for (others: a tuple iterator)
_KIND_TYPES = {"product": itertools.product, "combinations": itertools.combinations,
               "permutations": itertools.permutations, "zip_longest": itertools.zip_longest, "filter": filter,
               "reversed": reversed, "zip": zip,
               "enumerate": enumerate, "range_iterator": type(iter(range(0))),
               "longrange_iterator": type(iter(range(2 ** 64)))}


@dataclasses.dataclass(frozen=True, eq=False)
class ListIteratorVariable(IteratorVariable):
    """An iterator whose items live in SideEffects (advancing it is a mutation). The state is
    (items, index of the next one): taking an item is O(1), as a loop over a long range needs. The
    items of a range iterator are the range itself (numbers made as they are taken): making one,
    rebuilding it and handing it to a resume function cost the same however long the range.
    With a source it is the program's own range iterator (one a resume function is handed): rebuilt
    as that object, its position written back (`SideEffects.advance`)."""
    kind: str = "iterator"

    def parts(self, tx):
        items, _ = tx.output.side_effects.get(self)
        return () if type(items) is range else self.remaining_items(tx)

    @staticmethod
    def create(tx, items, kind="iterator"):
        var = ListIteratorVariable(kind=kind)
        tx.output.side_effects.track(var, (items if type(items) is range else tuple(items), 0))
        return var

    def python_type(self):
        return _KIND_TYPES.get(self.kind, type(iter(())))

    def describe(self):
        return self.kind

    def over_numbers(self, tx) -> bool:
        """Its items are a range's numbers (it travels to a resume function as a range iterator)."""
        return type(tx.output.side_effects.get(self)[0]) is range

    def next_item(self, tx):
        items, index = tx.output.side_effects.get(self)
        if index >= len(items):
            raise StopIterationSignal()
        tx.output.side_effects.advance(self, (items, index + 1))
        return const(items[index]) if type(items) is range else items[index]

    def unpack(self, tx):
        remaining = self.remaining_items(tx)
        items, _ = tx.output.side_effects.get(self)
        tx.output.side_effects.advance(self, (items, len(items)))
        return list(remaining)

    def remaining_items(self, tx) -> tuple:
        items, index = tx.output.side_effects.get(self)
        if type(items) is range:
            if len(items) - index > tx.config.max_instructions:
                raise Unsupported("endless_iterator", what=f"consuming {self.describe()} over {items!r}")
            return tuple(const(v) for v in items[index:])
        return items[index:] if index else items

    def call_method(self, tx, name, args, kwargs):
        if name == "__length_hint__":
            items, index = tx.output.side_effects.get(self)
            return const(len(items) - index)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if self.source is not None:      # the program's iterator: its position is written back
            return self.source.reconstruct(codegen)
        items, index = codegen.tx.output.side_effects.get(self)
        if type(items) is range:    # the rest of the range
            rest = items[index:]
            if type(iter(rest)).__name__ != self.kind:    # (a longrange_iterator whose rest fits a C long)
                raise Unsupported("unrebuildable", what=f"rebuilding a {self.kind} object after the graph")
            codegen.load_global_builtin("iter")
            codegen.load_const(rest)
            codegen.call(1)
            return
        remaining = self.remaining_items(codegen.tx)
        if self.kind in _KIND_TYPES:   # rebuilt as a tuple iterator it would change type
            raise Unsupported("unrebuildable", what=f"rebuilding a {self.kind} object after the graph")
        codegen.load_global_builtin("iter")
        for item in remaining:
            codegen.reconstruct(item)
        codegen.build_tuple(len(remaining))
        codegen.call(1)


@dataclasses.dataclass(frozen=True, eq=False)
class ResumedIteratorVariable(IteratorVariable):
    """A loop's iterator handed to a resume function: a fresh tuple iterator over the items the loop
    had left at the break (made by the transformed code for that call only). Its items are read from
    the real tuple one at a time, as the loop takes them, and only what each step learns is guarded
    (`reads.sequence_item`): a resume function that breaks again in the next iteration, or leaves the
    loop, serves every count of remaining items with the same code. State in SideEffects: the index of
    the next item, or None once exhausted."""
    items: tuple = ()        # the real tuple (read at compile time only)
    seq_source: Any = None   # re-reads it at run time

    @staticmethod
    def create(tx, items, seq_source, index):
        var = ResumedIteratorVariable(items=items, seq_source=seq_source)
        tx.output.side_effects.track(var, index)
        return var

    def python_type(self):
        return type(iter(()))

    def describe(self):
        return "tuple_iterator"

    def next_item(self, tx):
        index = tx.output.side_effects.get(self)
        if index is None:
            raise StopIterationSignal()
        item = reads.sequence_item(tx, self.items, self.seq_source, index)
        if item is reads.MISSING:
            tx.output.side_effects.track(self, None)
            raise StopIterationSignal()
        tx.output.side_effects.track(self, index + 1)
        return tx.wrap(item, ItemSource(self.seq_source, index))

    def remaining_items(self, tx) -> tuple:
        """Every item left (their number guarded)."""
        index = tx.output.side_effects.get(self)
        items = []
        if index is not None:
            while (item := reads.sequence_item(tx, self.items, self.seq_source, index)) is not reads.MISSING:
                items.append(tx.wrap(item, ItemSource(self.seq_source, index)))
                index += 1
        return tuple(items)

    def unpack(self, tx):
        remaining = self.remaining_items(tx)
        tx.output.side_effects.track(self, None)
        return list(remaining)

    def call_method(self, tx, name, args, kwargs):
        if name == "__length_hint__":
            return const(len(self.remaining_items(tx)))
        return super().call_method(tx, name, args, kwargs)

    def push_remaining_tuple(self, codegen):
        """Push the tuple of the items left, sliced off the real one: their number stays unread."""
        index = codegen.tx.output.side_effects.get(self)
        if index is None:
            codegen.load_const(())
            return
        self.seq_source.reconstruct(codegen)
        if index:
            codegen.load_const(slice(index, None))
            codegen.binary_subscr()

    def reconstruct(self, codegen):
        codegen.load_global_builtin("iter")
        self.push_remaining_tuple(codegen)
        codegen.call(1)


@dataclasses.dataclass(frozen=True, eq=False)
class ResumedLiveIterator(IteratorVariable):
    """A loop's iterator over a live container, handed to a resume function as the program's own
    object: a list iterator, or the dict iterator over a ModuleList's, Sequential's or ModuleDict's
    `_modules` table (rebuilt at its position at the break, ModuleTableIterator.reconstruct). What runs
    between the graphs moved it and changed the container as eager does. Its remaining items are read
    one at a time from a copy (`guards.source.iterator_rest`, which runs no user code and leaves it where
    it is): the resumed loop does not depend on where it stands or how many are left. Once the trace
    changed the list it walks (`watches` "lists"; any other list changed is guarded to stay another
    object), it reads that list as it is now, at its index. A step after the trace changed any module's
    state ("modules": which table it walks is not known here) breaks the graph. Its steps are written
    back by moving it on: a dict iterator before the containers are (eager took them before the
    changes), a list iterator's index after. State: the items taken, or None once exhausted."""
    items: tuple = ()        # the items it had left (read at compile time only)
    rest_source: Any = None  # re-reads them at run time
    cls: type = None         # its type: list_iterator, list_reverseiterator, dict_valueiterator...
    watches: str = "lists"
    seq: Any = None          # the list it walks, and where it stood (compile time only)
    position: int = None

    @staticmethod
    def create(tx, it, source, watches):
        rest_source = ListIteratorSource(source, "rest")
        reduced = it.__reduce__() if watches == "lists" else (None, (None,))
        var = ResumedLiveIterator(items=tuple(iterator_rest(it)), rest_source=rest_source, cls=type(it),
                                  watches=watches, seq=reduced[1][0], position=(reduced[2:] or (None,))[0],
                                  source=source)
        tx.output.side_effects.track(var, 0)
        return var

    def python_type(self):
        return self.cls

    def describe(self):
        return self.cls.__name__

    def _traced_list(self, tx):
        """The tracker of the list it walks, if the trace changed that list (other lists the trace changed
        are guarded to stay other objects)."""
        mutated = tx.output.side_effects.mutated
        for value, var in list(tx.output.wrapped_objects.values()):
            if isinstance(var, ListVariable) and var.source is not None and var in mutated:
                if value is self.seq:
                    return var
                tx.output.guards.add(Guard.distinct_objects(var.source, ListIteratorSource(self.source, "seq")))
        return None

    def next_item(self, tx):
        taken = tx.output.side_effects.get(self)
        if taken is None:
            raise StopIterationSignal()
        if self.watches == "modules" and families.module_state_changed(tx):
            raise Unsupported("mutated_while_iterating", what="a module container's iterator handed on at a "
                                                                 "graph break, after the trace changed a module")
        traced = self._traced_list(tx) if self.watches == "lists" else None
        if traced is not None:
            # the list changed: the next item is the one at its index in the list as it is now, as
            # CPython's iterator reads it (where it stood at the break is guarded then)
            tx.output.guards.add(Guard.constant(ListIteratorSource(self.source, "position"), (self.position,)))
            reverse = self.cls is type(reversed([]))
            index = self.position - taken if reverse else self.position + taken
            items = traced.get_items(tx)
            if not 0 <= index < len(items):
                tx.output.side_effects.advance(self, None)
                raise StopIterationSignal()
            tx.output.side_effects.advance(self, taken + 1)
            return items[index]
        item = reads.sequence_item(tx, self.items, self.rest_source, taken)
        if item is reads.MISSING:
            tx.output.side_effects.advance(self, None)
            raise StopIterationSignal()
        tx.output.side_effects.advance(self, taken + 1)
        return tx.wrap(item, ItemSource(self.rest_source, taken))

    def reconstruct(self, codegen):
        self.source.reconstruct(codegen)     # the program's iterator: its steps are written back


@dataclasses.dataclass(frozen=True, eq=False)
class ListSequenceIteratorVariable(IteratorVariable):
    """iter() / reversed() of a list: CPython's list iterators hold an index into the live list, so
    items appended or removed while iterating are seen. State in SideEffects: the index of the
    next item, or None once exhausted (an exhausted list iterator stays exhausted)."""
    seq: VariableTracker = None      # a ListVariable
    reverse: bool = False

    def parts(self, tx):
        return (self.seq,)

    @staticmethod
    def create(tx, seq, reverse=False):
        var = ListSequenceIteratorVariable(seq=seq, reverse=reverse)
        tx.output.side_effects.track(var, len(seq.get_items(tx)) - 1 if reverse else 0)
        return var

    def python_type(self):
        return type(reversed([])) if self.reverse else type(iter([]))

    def describe(self):
        return "list_reverseiterator" if self.reverse else "list_iterator"

    def next_item(self, tx):
        index = tx.output.side_effects.get(self)
        items = self.seq.get_items(tx)
        if index is None or not 0 <= index < len(items):
            tx.output.side_effects.advance(self, None)
            raise StopIterationSignal()
        tx.output.side_effects.advance(self, index - 1 if self.reverse else index + 1)
        return items[index]

    def remaining_items(self, tx) -> tuple:
        """The items it would give now, if the list stays as it is (passed to resume functions)."""
        index = tx.output.side_effects.get(self)
        items = self.seq.get_items(tx)
        if index is None or not 0 <= index < len(items):
            return ()
        return tuple(items[index::-1]) if self.reverse else tuple(items[index:])

    def call_method(self, tx, name, args, kwargs):
        if name == "__length_hint__":
            return const(len(self.remaining_items(tx)))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        index = codegen.tx.output.side_effects.get(self)
        codegen.load_callable(list_iterator_at)
        codegen.reconstruct(self.seq)
        codegen.load_const(index)
        codegen.load_const(self.reverse)
        codegen.call(3)


def list_iterator_at(seq, index, reverse):
    """A real list iterator at `index` (None: exhausted), as a traced one is rebuilt."""
    if index is None:
        return reversed([]) if reverse else iter([])
    it = reversed(seq) if reverse else iter(seq)
    _place(it, seq, index, reverse)
    return it


def advance_list_iterator(it, taken) -> None:
    """Move the program's list iterator on by the `taken` steps the trace took from wherever it stood
    (None: exhausted for good), whatever its list holds now."""
    reduced = it.__reduce__()
    if len(reduced) < 3:        # exhausted already
        return
    reverse = type(it) is type(reversed([]))
    if taken is None:
        place_list_iterator(it, None, reverse)
    else:
        _place(it, reduced[1][0], reduced[2] - taken if reverse else reduced[2] + taken, reverse)


def place_list_iterator(it, index, reverse) -> None:
    """Put the program's list iterator where the traced one stopped: at `index` of its list, or
    exhausted for good (None), as CPython's is once it reached the end. (The trace met it at a position:
    it was not exhausted then, so its list is still there.)"""
    seq = it.__reduce__()[1][0]
    if index is None:
        it.__setstate__(-1 if reverse else len(seq))
        next(it, None)                      # past the end: CPython's iterator lets go of the list
        return
    _place(it, seq, index, reverse)


def _place(it, seq, index, reverse) -> None:
    size = len(seq)
    if index + reverse > size:
        # `__setstate__` clamps to the size; the list shrank since the iterator was there (and it
        # was not advanced since, or it would be exhausted): set the index on a padded list
        seq.extend([None] * (index + reverse - size))
        it.__setstate__(index)
        del seq[size:]
    else:
        it.__setstate__(index)


@dataclasses.dataclass(frozen=True, eq=False)
class DequeIteratorVariable(IteratorVariable):
    """iter() / reversed() of a deque: like CPython's, it reads the live deque and raises once the
    deque's state counter changed (DequeVariable.set_items). State in SideEffects: (items given,
    the deque's state when created)."""
    seq: VariableTracker = None      # a DequeVariable
    reverse: bool = False

    def parts(self, tx):
        return (self.seq,)

    @staticmethod
    def create(tx, seq, reverse=False):
        var = DequeIteratorVariable(seq=seq, reverse=reverse)
        tx.output.side_effects.track(var, (0, seq.state(tx), len(seq.get_items(tx))))
        return var

    def python_type(self):
        return type(reversed(collections.deque())) if self.reverse else type(iter(collections.deque()))

    def describe(self):
        return "deque iterator"

    def next_item(self, tx):
        given, state, size = tx.output.side_effects.get(self)
        if state != self.seq.state(tx):
            raise user_error(RuntimeError("deque mutated during iteration"))
        if given == size:
            raise StopIterationSignal()
        tx.output.side_effects.track(self, (given + 1, state, size))
        items = self.seq.get_items(tx)
        return items[-1 - given] if self.reverse else items[given]

    def reconstruct(self, codegen):
        given, state, _ = codegen.tx.output.side_effects.get(self)
        if state != self.seq.state(codegen.tx):
            raise Unsupported("unrebuildable", what="rebuilding a deque iterator after the deque changed")
        codegen.load_callable(advanced)
        codegen.load_global_builtin("reversed" if self.reverse else "iter")
        codegen.reconstruct(self.seq)
        codegen.call(1)
        codegen.load_const(given)
        codegen.call(2)


def key_layout(tx, container) -> int:
    """How many times keys were added to, removed from or moved in `container` while tracing (clear()
    aside): an iterator compares it with its own, as an OrderedDict iterator compares the dict's state
    counter; a plain dict or set iterator whose container changed so but kept its size gives what
    CPython's hash table gives, which is not modelled."""
    return tx.output.side_effects.contents.get(("key layout", container), 0)


_BROKEN = "broken"    # the container changed size: every later next() raises again, as in CPython


def exhausted_like(kind):
    """An exhausted iterator of type `kind` (a dict's, a dict view's, an OrderedDict's, a set's)."""
    for container in ({}, collections.OrderedDict(), set()):
        for make in (iter, reversed, lambda c: iter(c.keys()), lambda c: iter(c.values()),
                     lambda c: iter(c.items()), lambda c: reversed(c.keys()), lambda c: reversed(c.values()),
                     lambda c: reversed(c.items())):
            try:
                it = make(container)
            except (TypeError, AttributeError):
                continue
            if type(it) is kind:
                for _ in it:
                    pass
                return it
    raise TypeError(kind)


def advanced(it, n):
    """`it` after `n` items (rebuilds an iterator over a dict or set at its position), or run out (None)."""
    if n is None:
        for _ in it:
            pass
    for _ in range(n or 0):
        next(it)
    return it


@dataclasses.dataclass(frozen=True, eq=False)
class ContainerIteratorVariable(IteratorVariable):
    """iter() of a dict, of one of its views, or of a set: each step reads the container as it is
    now, and raises RuntimeError once its size changed, as CPython's iterators do. An OrderedDict's
    iterator raises first once a key was added, removed or moved (its state counter changed). A plain
    dict or set whose keys changed but kept their number gives what CPython's hash table gives: not
    modelled. State in SideEffects: (position, key layout when created), _BROKEN (with that layout),
    or None when exhausted."""
    container: VariableTracker = None    # a DictVariable or SetVariable
    kind: str = "keys"                   # keys / values / items of a dict, or "set"
    reverse: bool = False                # reversed() of a dict or of one of its views: from the end

    @staticmethod
    def create(tx, container, kind, reverse=False):
        var = ContainerIteratorVariable(container=container, kind=kind, reverse=reverse)
        tx.output.side_effects.track(var, (0, key_layout(tx, container), len(var._entries(tx))))
        return var

    def _entries(self, tx):
        """The items still in the container."""
        if self.kind == "set":
            return list(self.container.ordered_items(tx))
        pairs = self.container.pairs(tx)
        if self.reverse:
            pairs = pairs[::-1]
        if self.kind == "keys":
            return [k for k, _ in pairs]
        if self.kind == "values":
            return [v for _, v in pairs]
        return [TupleVariable((k, v)) for k, v in pairs]

    def _ordered(self):
        return self.kind != "set" and issubclass(self.container.cls, collections.OrderedDict)

    def python_type(self):
        if self.kind == "set":
            return type(iter(set()))
        return type((reversed if self.reverse else iter)(getattr(self.container.cls(), self.kind)()))

    def describe(self):
        return f"{self.container.describe()} {self.kind} iterator"

    def next_item(self, tx):
        state = tx.output.side_effects.get(self)
        if state is None:
            raise StopIterationSignal()
        position, layout, size = state
        entries = self._entries(tx)
        changed = layout != key_layout(tx, self.container)
        if self._ordered() and changed:
            tx.output.side_effects.track(self, None)
            raise user_error(RuntimeError("OrderedDict mutated during iteration"))
        if position == _BROKEN or len(entries) != size:
            tx.output.side_effects.track(self, (_BROKEN, layout, size))
            what = "Set" if self.kind == "set" else "OrderedDict" if self._ordered() else "dictionary"
            raise user_error(RuntimeError(f"{what} changed size during iteration"))
        if changed:
            raise Unsupported("mutated_while_iterating", what=f"a {self.container.describe()} whose keys changed "
                                                     "(same size) while iterating it")
        if position >= len(entries):
            tx.output.side_effects.track(self, None)
            raise StopIterationSignal()
        tx.output.side_effects.track(self, (position + 1, layout, size))
        return entries[position]

    def reconstruct(self, codegen):
        state = codegen.tx.output.side_effects.get(self)
        if state is None:
            # exhausted: CPython's iterator let go of its container and gives nothing more even if
            # the container grows (one at the end of it would raise "changed size")
            codegen.load_callable(exhausted_like)
            codegen.load_const(self.python_type())
            codegen.call(1)
            return
        if state[0] == _BROKEN or state[1] != key_layout(codegen.tx, self.container):
            raise Unsupported("unrebuildable", what=f"rebuilding {self.describe()} after its container changed")
        else:
            position = state[0]
        codegen.load_callable(advanced)
        if self.kind == "keys":
            self.container.reconstruct_method_call(codegen, "__reversed__" if self.reverse else "__iter__")
        else:
            codegen.load_global_builtin("reversed" if self.reverse else "iter")
            if self.kind == "set":
                codegen.reconstruct(self.container)
            else:
                self.container.reconstruct_method_call(codegen, self.kind)
            codegen.call(1)
        codegen.load_const(position)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class GeneratorVariable(IteratorVariable):
    """A generator made by calling a user generator function (or a generator expression) while
    tracing. It runs lazily, like the real one: each `next()` resumes its body in a fresh
    translator from the saved position and stops at the next `yield`, so the body's effects
    interleave with the consumer's exactly as in eager mode. The position (instruction, stack,
    locals) lives in SideEffects, so checkpoints roll it back like any other mutable state."""
    code: Any = None
    f_globals: dict = None
    name: str = "generator"
    function: Any = None    # the generator function's tracker (called again to rebuild an unstarted one)

    @staticmethod
    def create(tx, code, f_globals, symbolic_locals, cells, name, function=None):
        var = GeneratorVariable(code=code, f_globals=f_globals, name=name, function=function)
        start = next(ins.index for ins in instructions_of(code)[0] if ins.opname == "RESUME")
        # (a body with cells keeps them in its paused frame, and a closure's cells may change after a
        # step while the frame runs: not replayed, see `replayable`)
        replay = None if function is None or code.co_cellvars or code.co_freevars else \
            (dict(symbolic_locals), (), True)
        tx.output.side_effects.track(var, GeneratorState(start, (), dict(symbolic_locals), dict(cells),
                                                         replay=replay))
        tx.output.side_effects.generators.append(var)   # closed when they die (frontend/lifetimes.py)
        return var

    def python_type(self):
        return types.GeneratorType

    def describe(self):
        return f"generator {self.name}"

    def parts(self, tx):
        state = tx.output.side_effects.get(self)
        if self.function is None or (state is not None and state.started):
            return ()
        if state is None:
            return (self.function,)
        return (self.function, *state.symbolic_locals.values())

    def reconstruct(self, codegen):
        """An unstarted generator is the generator function called again with the very objects it
        was bound to (a call that runs none of the body); a finished one is such a call closed at
        once (closing an unstarted generator runs nothing), so it holds no arguments, as the eager
        one whose frame was cleared. A started one would need its paused frame: not rebuilt."""
        state = codegen.tx.output.side_effects.get(self)
        if self.function is not None and state is not None and state.started and \
                replayable(codegen.tx, self, state):
            codegen.load_callable(replayed)
            self._reconstruct_call(codegen, state.replay[0])
            codegen.load_const(state.replay[1])
            codegen.call(2)
            return
        if self.function is None or (state is not None and state.started):
            raise Unsupported("unrebuildable", what=f"rebuilding the started {self.describe()} after the graph")
        if state is None:
            codegen.load_callable(finished_generator)
            codegen.reconstruct(self.function)
            codegen.call(1)
            return
        self._reconstruct_call(codegen, state.symbolic_locals)

    def _reconstruct_call(self, codegen, bound):
        """Push `call_again(function, ...)`: the generator function called with the arguments `bound`."""
        code = self.code
        names = code.co_varnames
        npos, nkw = code.co_argcount, code.co_kwonlyargcount
        index = npos + nkw
        varargs = names[index] if code.co_flags & inspect.CO_VARARGS else None
        index += varargs is not None
        varkw = names[index] if code.co_flags & inspect.CO_VARKEYWORDS else None
        if any(n not in bound for n in names[:index + (varkw is not None)]):
            raise Unsupported("unrebuildable", what=f"rebuilding {self.describe()} (an argument is unknown)")
        codegen.load_callable(call_again)
        codegen.reconstruct(self.function)
        for name in names[:npos]:
            codegen.reconstruct(bound[name])
        codegen.build_tuple(npos)
        if varargs is not None:
            codegen.reconstruct(bound[varargs])
        else:
            codegen.build_tuple(0)
        for name in names[npos:npos + nkw]:
            codegen.load_const(name)
            codegen.reconstruct(bound[name])
        codegen.build_map(nkw)
        if varkw is not None:
            codegen.reconstruct(bound[varkw])
        else:
            codegen.build_map(0)
        codegen.call(5)

    def next_item(self, tx, sent=None):
        state = tx.output.side_effects.get(self)
        if state is None:
            raise StopIterationSignal()
        if not state.started and sent is not None and not _is_none(sent):
            raise user_error(TypeError("can't send non-None value to a just-started generator"))

        def enter(gtx):
            if state.started:
                gtx.push(sent if sent is not None else const(None))  # the value of the paused `yield`
        return self._resume(tx, state, enter, sent if sent is not None else const(None))

    def _resume(self, tx, state, enter, sent=None):
        """Run the body from `state` after `enter(gtx)` (push the sent value, or raise an exception
        at the paused `yield`) to its next `yield` (returned), its return (StopIterationSignal) or an
        exception leaving it (the generator is finished)."""
        effects = tx.output.side_effects
        step = _StepWatch(tx, self) if state.replay is not None and sent is not None else None
        gtx = tx.resume_generator(self, state)
        try:
            enter(gtx)
            gtx.run()
        except GeneratorYield as y:
            replay = step.replay_after(state.replay, sent, y.value) if step is not None else None
            effects.track(self, GeneratorState(gtx.ip, tuple(gtx.stack), gtx.symbolic_locals, gtx.cells,
                                               started=True, exception=gtx.own_exception, replay=replay))
            return y.value
        except ReturnValue as r:
            effects.track(self, None)
            gtx.returned(r.value)
            raise StopIterationSignal(r.value) from None
        except UserException as e:
            effects.track(self, None)
            if issubclass(e.exc_var.cls, StopIteration):   # PEP 479: it would end the consumer's loop
                error = ExceptionVariable(cls=RuntimeError, args=(const("generator raised StopIteration"),))
                exception_state.wrap_cause(tx, error, e.exc_var)
                raise UserException(error) from None
            raise
        raise AssertionError("unreachable")

    def throw(self, tx, exc):
        """`gen.throw(exc)`: `exc` raised at the paused `yield` (or in the generator it delegates to
        with `yield from`); what the body yields next is the result."""
        effects = tx.output.side_effects
        state = effects.get(self)
        if state is None or not state.started:   # raised at once; the generator is finished
            effects.track(self, None)
            raise UserException(exc)
        insts = instructions_of(self.code)[0]
        paused, delegate = insts[state.ip - 1], None
        if state.ip >= 2 and insts[state.ip - 2].opname == "SEND" and state.stack:
            delegate, send = state.stack[-1], insts[state.ip - 2]
            if issubclass(exc.cls, GeneratorExit):
                # CPython's gen_throw closes the delegate, then raises GeneratorExit (or what closing it
                # raised) at the paused `yield` of the `yield from`
                error, state = tx.close_delegate(self, state, delegate)
                exc, delegate = error or exc, None
            elif not isinstance(delegate, GeneratorVariable):
                raise Unsupported("unsupported_call", fn=f"{self.describe()}.throw",
                                  detail=f" while it delegates to {delegate.describe()} with `yield from`")
        if delegate is not None:
            after = GeneratorState(send.target, state.stack[:-1], state.symbolic_locals, state.cells,
                                   started=True, exception=state.exception)
            try:
                return delegate.throw(tx, exc)
            except StopIterationSignal as done:   # the `yield from` ends with the delegate's result
                result = done.value
                return self._resume(tx, after, lambda gtx: gtx.push(result))
            except UserException as e:            # raised in this body, just past the `yield from`
                paused, state, exc = insts[send.target - 1], after, e.exc_var

        def enter(gtx):
            gtx.current = paused
            gtx.handle_exception(exc)
        return self._resume(tx, state, enter)

    def call_method(self, tx, name, args, kwargs):
        if name == "send" and len(args) == 1 and not kwargs:
            try:
                return self.next_item(tx, args[0])
            except StopIterationSignal as done:
                raise stop_iteration(tx, done.value) from None
        if name == "throw" and len(args) in (1, 2, 3) and not kwargs:
            exc = _thrown_exception(tx, args)
            try:
                return self.throw(tx, exc)
            except StopIterationSignal as done:
                raise stop_iteration(tx, done.value) from None
        if name == "close" and not args and not kwargs:
            tx.close_generator(self)
            return const(None)
        return super().call_method(tx, name, args, kwargs)


def call_again(fn, positional, varargs, keyword_only, varkw):
    """Run time: a generator function called with every parameter given (no default read again)."""
    return fn(*positional, *varargs, **keyword_only, **varkw)


def replayed(gen, sends):
    """Run time: `gen`, a generator just made, advanced natively by sending `sends` in turn (see
    `replayable`). Its steps' warnings are not shown again: the graph ran their ops, which showed
    them as eager's steps did (a Python `warnings.warn` of a step is held back, so not replayed)."""
    with filters_set_to("ignore"):
        for value in sends:
            gen.send(value)
    return gen


# a generator advanced more often than this is not replayed (each step is checked: compile time)
_MAX_REPLAYED_STEPS = 32


class _StepWatch:
    """What one step of a generator's body (from a `next()`/`send()` to its next `yield`) did, to tell
    whether running the step again natively after the graph would do the same: nothing held back was
    pending when it started (the program state it read is the state before the frame, which is what a
    replay before the write-back reads), and it changed nothing the trace tracks but generators and
    objects it made. (That its graph ops draw no random numbers and change no tensor or global state is
    checked with the whole graph's when the generator is rebuilt: `replayable`.)"""

    def __init__(self, tx, gen):
        self.tx, self.gen = tx, gen
        effects = tx.output.side_effects
        self.clean = not effects.pending() and families.torch_state_as_at_entry(tx.output)
        self.contents = dict(effects.contents) if self.clean else None
        # (a number drawn from Python's `random` is drawn by the transformed code before the graph:
        # a replay would draw it again)
        self.draws = len(tx.output.random_draws)

    def replay_after(self, replay, sent, yielded):
        """The replay record after this step, which sent `sent` and got `yielded` (None: the generator
        cannot be replayed)."""
        effects = self.tx.output.side_effects
        if not self.clean or effects.pending() or len(replay[1]) >= _MAX_REPLAYED_STEPS or \
                len(self.tx.output.random_draws) != self.draws:
            return None
        if not sent.is_python_constant() or not _immutable_constant(sent.as_python_constant()):
            return None
        contents = effects.contents
        # (a generator the step advanced is one the body made: the program reaches no other, see
        # `replayable`, unless the body yielded it, which `plain` records)
        if any(not isinstance(key, GeneratorVariable) and not (isinstance(key, tuple) and key[:1] == ("key events",))
               and (key not in contents or contents[key] is not value) for key, value in self.contents.items()):
            return None
        plain = replay[2] and (isinstance(yielded, families.TensorVariable) or yielded.is_python_constant() and
                               _immutable_constant(yielded.as_python_constant()))
        return replay[0], replay[1] + (sent.as_python_constant(),), plain


def _immutable_constant(value) -> bool:
    if type(value) is tuple:
        return all(_immutable_constant(v) for v in value)
    return type(value) in (int, float, bool, str, bytes, complex, type(None))


def replayable(tx, gen, state) -> bool:
    """Whether the started generator `gen` (paused at `state`) is rebuilt exactly by calling its function
    again with the objects it was first bound to and sending it what it was sent (`replayed`): every
    step was replayable (`_StepWatch`); its paused frame holds nothing a replay would make anew (each
    local and stack value is one of those arguments or an immutable constant; no exception being
    handled), so no object the program saw is replaced by a copy; and no graph op changes a tensor in
    place, so the arguments a replay reads are as the steps read them. A replay runs before the
    write-back (side_effects.py), so the Python objects it reads are too; and the torch state (grad
    mode...) is the frame's entry state at each step and here, with no graph op setting it, so the
    replay runs under the state the steps saw."""
    return _replays_exactly(tx, gen, state, None) and families.torch_state_as_at_entry(tx.output) and \
        families.pure_graph_nodes(tx.output, list(tx.output.graph.nodes))


def _replays_exactly(tx, gen, state, outer_arguments) -> bool:
    """`replayable` but for the graph ops; `outer_arguments`: for a generator that `gen` delegates to
    with `yield from` (a replay of the outer one makes and advances it again), the outer one's arguments,
    the only objects its own may be."""
    if state is None or state.replay is None or state.exception is not None:
        return False
    arguments = list(state.replay[0].values())
    delegate = _paused_delegate(gen, state)
    kept = list(state.stack) + list(state.symbolic_locals.values()) + list(state.cells.values())
    for value in arguments + kept:
        if isinstance(value, VariableTracker) and value.is_python_constant() and \
                _immutable_constant(value.as_python_constant()):
            continue
        if value is delegate and value is not None and state.replay[2] and \
                _replays_exactly(tx, value, tx.output.side_effects.get(value), arguments):
            # a generator its body made and delegates to, which it never yielded (so the program never
            # got it)
            continue
        if not any(value is a for a in arguments):
            return False
        if outer_arguments is not None and not any(value is a for a in outer_arguments):
            return False
        # an argument a replay reads as the steps did: a tensor (no graph op changes one in place), or an
        # object of the program (a change to it is written back after the replay); one made in the frame
        # may have changed since
        if not isinstance(value, families.TensorVariable) and value.source is None:
            return False
        if isinstance(value, families.TensorVariable) and families.tensor_attrs(tx, value):
            return False    # (Python attributes the trace set on the tensor: they may have changed too)
    return True


def _paused_delegate(gen, state):
    """The generator `gen` is paused in a `yield from` of (the top of its stack), or None."""
    insts = instructions_of(gen.code)[0]
    if state.ip >= 2 and insts[state.ip - 2].opname == "SEND" and state.stack and \
            isinstance(state.stack[-1], GeneratorVariable) and state.stack[-1].function is not None:
        return state.stack[-1]
    return None


def finished_generator(fn):
    """Run time: a finished generator of `fn`: made with placeholder arguments and closed before it
    started, so none of its body runs and it keeps no argument alive."""
    code = fn.__code__
    names = code.co_varnames
    gen = fn(*[None] * code.co_argcount,
             **dict.fromkeys(names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]))
    gen.close()
    return gen


def _is_none(var) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def _thrown_exception(tx, args):
    """The exception `gen.throw(*args)` raises: an instance, a class (called), or (class, instance
    of it[, traceback]) as `with` blocks' `__exit__` pass them."""
    typ = args[0]
    value = typ.as_python_constant_or_none() if typ.is_python_constant() else None
    if len(args) == 1 and typ.is_python_constant() and not (isinstance(value, type) and
                                                             issubclass(value, BaseException)):
        # the generator is left as it was
        raise user_error(TypeError("exceptions must be classes or instances deriving from BaseException, "
                                   f"not {type(value).__name__}"))
    if len(args) == 1 or all(_is_none(a) or isinstance(a, TracebackVariable) for a in args[1:]):
        if isinstance(typ, ExceptionVariable):
            if len(args) == 1:
                return typ
        else:
            exc = tx.call(typ, [], {}) if isinstance(typ.as_python_constant_or_none(), type) else None
            if isinstance(exc, ExceptionVariable):
                return exc
    elif isinstance(args[1], ExceptionVariable) and typ.as_python_constant_or_none() is args[1].cls:
        return args[1]
    raise Unsupported("unsupported_call", fn="generator.throw", detail=" with these arguments")


def stop_iteration(tx, value):
    """The StopIteration a finished generator's `send`/`__next__` raises: its args are the return
    value, none for None (so `e.value` is the return value)."""
    if _is_none(value):
        return user_error(StopIteration())
    return exception_state.raise_new(tx, ExceptionVariable(cls=StopIteration, args=(value,)))


@dataclasses.dataclass(frozen=True)
class GeneratorState:
    ip: int
    stack: tuple
    symbolic_locals: dict
    cells: dict
    started: bool = False
    exception: Any = None   # the exception its own except block handles (a `yield` inside one), or None
    # (the arguments it was first bound to, the values sent to it so far, whether every value it yielded
    # was a tensor or an immutable constant) while a native replay of its steps rebuilds it exactly (see
    # `replayable`), else None
    replay: Any = None


def next_of(tx, it):
    """The next item of any iterator tracker; StopIterationSignal when it is exhausted."""
    tx.count_iteration()
    if it.is_iterator:
        return it.next_item(tx)
    try:
        return tx.call_method_on(it, "__next__", [], {})
    except StopIteration:
        raise StopIterationSignal() from None
    except UserException as e:
        if issubclass(e.exc_var.cls, StopIteration):
            raise StopIterationSignal() from None
        raise


@dataclasses.dataclass(frozen=True, eq=False)
class ZipVariable(IteratorVariable):
    """zip/map/enumerate over iterators, pulled lazily in lockstep as in eager mode (so endless
    generators work, and a generator's effects happen when its item is asked for). `fn(tx, items)`
    turns one item from each iterator into the produced item."""
    iterators: tuple = ()
    fn: Any = None
    kind: str = "zip"

    mapped: Any = None  # for map(): the function tracker, rebuilt with the iterators
    strict: bool = False  # zip(..., strict=True)

    def python_type(self):
        return {"zip": zip, "map": map, "enumerate": enumerate}.get(self.kind, type(iter(())))

    def reconstruct(self, codegen):
        """`zip(*iterators)` / `map(fn, *iterators)` (enumerate as a zip with a count: it
        iterates the same)."""
        codegen.load_callable(map if self.mapped is not None else _strict_zip if self.strict else zip)
        if self.mapped is not None:
            codegen.reconstruct(self.mapped)
        for it in self.iterators:
            codegen.reconstruct(it)
        codegen.call(len(self.iterators) + (self.mapped is not None))

    def describe(self):
        return f"{self.kind} object"

    def next_item(self, tx):
        if not self.iterators:     # `zip()`: empty
            raise StopIterationSignal()
        if self.strict:
            return self.fn(tx, self._strict_items(tx))
        return self.fn(tx, [next_of(tx, it) for it in self.iterators])

    def _strict_items(self, tx) -> list:
        """One item of each iterator, in order; when one is exhausted, CPython's check: a later one
        ending there is "shorter"; when the first ended, each later one is asked for one more item
        (taken) and the first that gives one is "longer"."""
        items = []
        for i, it in enumerate(self.iterators):
            try:
                items.append(next_of(tx, it))
            except StopIterationSignal:
                if i:
                    raise user_error(ValueError(f"zip() argument {i + 1} is shorter than {_zip_args(i)}")) from None
                break
        else:
            return items
        for i, it in enumerate(self.iterators[1:], 1):
            try:
                next_of(tx, it)
            except StopIterationSignal:
                continue
            raise user_error(ValueError(f"zip() argument {i + 1} is longer than {_zip_args(i)}"))
        raise StopIterationSignal()


def _zip_args(i) -> str:
    return "argument 1" if i == 1 else f"arguments 1-{i}"


def _strict_zip(*iterables):
    return zip(*iterables, strict=True)


@dataclasses.dataclass(frozen=True, eq=False)
class FilterVariable(IteratorVariable):
    """filter(predicate, iterator), pulled lazily as in eager mode: the predicate runs on an item
    only when the next item is asked for. `predicate` None keeps the truthy items."""
    iterator: VariableTracker = None
    predicate: VariableTracker = None

    def python_type(self):
        return filter

    def describe(self):
        return "filter object"

    def next_item(self, tx):
        keep_truthy = self.predicate.is_python_constant() and self.predicate.as_python_constant() is None
        while True:
            item = next_of(tx, self.iterator)
            test = item if keep_truthy else self.predicate.call_function(tx, [item], {})
            if test.truth(tx):
                return item

    def reconstruct(self, codegen):
        codegen.load_callable(filter)
        codegen.reconstruct(self.predicate)
        codegen.reconstruct(self.iterator)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class CountIteratorVariable(IteratorVariable):
    """itertools.count (and enumerate's index): an endless counter whose next value lives in
    SideEffects."""
    step: VariableTracker = None

    @staticmethod
    def create(tx, start, step):
        var = CountIteratorVariable(step=step)
        tx.output.side_effects.track(var, start)
        return var

    def python_type(self):
        return itertools.count

    def describe(self):
        return "itertools.count"

    def next_item(self, tx):
        value = tx.output.side_effects.get(self)
        tx.output.side_effects.track(self, tx.binary_op(operator.add, value, self.step))
        return value

    def unpack(self, tx):
        raise Unsupported("endless_iterator", what="consuming an endless itertools.count")

    def reconstruct(self, codegen):
        codegen.load_callable(itertools.count)
        codegen.reconstruct(codegen.tx.output.side_effects.get(self))
        codegen.reconstruct(self.step)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class IsliceVariable(IteratorVariable):
    """itertools.islice(iterator, start, stop, step), pulled lazily as CPython's: the items before
    the next wanted one are taken from the iterator (and dropped) only when an item is asked for, so
    an iterator the program also holds is left just past the items taken. State in SideEffects:
    (items taken so far, index of the next item to yield), or None once exhausted."""
    iterator: VariableTracker = None
    stop: Any = None     # an int, or None: no end
    step: int = 1

    @staticmethod
    def create(tx, iterator, start, stop, step):
        var = IsliceVariable(iterator=iterator, stop=stop, step=step)
        tx.output.side_effects.track(var, (0, start))
        return var

    def parts(self, tx):
        return (self.iterator,)

    def python_type(self):
        return itertools.islice

    def describe(self):
        return "itertools.islice"

    def next_item(self, tx):
        effects = tx.output.side_effects
        state = effects.get(self)
        if state is None:
            raise StopIterationSignal()
        taken, wanted = state
        try:
            while taken < wanted:
                next_of(tx, self.iterator)
                taken += 1
                effects.track(self, (taken, wanted))
            if self.stop is not None and taken >= self.stop:
                raise StopIterationSignal()
            item = next_of(tx, self.iterator)
        except StopIterationSignal:
            effects.track(self, None)    # exhausted for good, as CPython drops its iterator
            raise
        following = wanted + self.step
        effects.track(self, (taken + 1, min(following, self.stop) if self.stop is not None else following))
        return item

    def reconstruct(self, codegen):
        """The same slice of what is left, counted from the items already taken."""
        state = codegen.tx.output.side_effects.get(self)
        codegen.load_callable(itertools.islice)
        if state is None:
            codegen.load_const(())
            codegen.load_const(0)
            codegen.call(2)
            return
        taken, wanted = state
        codegen.reconstruct(self.iterator)
        codegen.load_const(wanted - taken)
        codegen.load_const(max(self.stop - taken, 0) if self.stop is not None else None)
        codegen.load_const(self.step)
        codegen.call(4)


@dataclasses.dataclass(frozen=True, eq=False)
class ChainVariable(IteratorVariable):
    """itertools.chain(*iterables), pulled lazily as CPython's: an iterable's iterator is made
    when the one before it is exhausted, so a list changed meanwhile is seen and an iterator the
    program also holds is left just past the items taken. State in SideEffects: (the current
    iterator or None, the iterables not started). `chain.from_iterable(outer)` (`from_iterator`):
    the iterables not started are the rest of an iterator over `outer`, read one at a time."""
    from_iterator: bool = False

    @staticmethod
    def create(tx, iterables):
        var = ChainVariable()
        tx.output.side_effects.track(var, (None, tuple(iterables)))
        return var

    @staticmethod
    def create_from_iterable(tx, outer):
        var = ChainVariable(from_iterator=True)
        tx.output.side_effects.track(var, (None, (tx.get_iter(outer),)))
        return var

    def parts(self, tx):
        active, rest = tx.output.side_effects.get(self)
        return (active, *rest) if active is not None else rest

    def python_type(self):
        return itertools.chain

    def describe(self):
        return "itertools.chain"

    def next_item(self, tx):
        effects = tx.output.side_effects
        active, rest = effects.get(self)
        while True:
            if active is None:
                if self.from_iterator:
                    active = tx.get_iter(next_of(tx, rest[0]))   # (its StopIteration ends the chain)
                elif not rest:
                    raise StopIterationSignal()
                else:
                    active, rest = tx.get_iter(rest[0]), rest[1:]
                effects.track(self, (active, rest))
            try:
                return next_of(tx, active)
            except StopIterationSignal:
                active = None
                effects.track(self, (None, rest))

    def reconstruct(self, codegen):
        parts = self.parts(codegen.tx)
        codegen.load_callable(itertools.chain)
        if self.from_iterator:      # chain(active..., chain.from_iterable(rest of outer))
            *active, outer = parts
            for part in active:
                codegen.reconstruct(part)
            codegen.load_callable(itertools.chain.from_iterable)
            codegen.reconstruct(outer)
            codegen.call(1)
            codegen.call(len(active) + 1)
            return
        for part in parts:
            codegen.reconstruct(part)
        codegen.call(len(parts))


@dataclasses.dataclass(frozen=True, eq=False)
class ZipLongestVariable(IteratorVariable):
    """itertools.zip_longest(*iterators, fillvalue=...), pulled lazily as CPython's: each row asks
    every iterator still active for an item, in order; one that is exhausted gives `fillvalue` from
    then on, and when the last active one is exhausted the iteration ends there (the items taken for
    that row are dropped). State in SideEffects: the iterators, None for an exhausted one."""
    fillvalue: VariableTracker = None

    @staticmethod
    def create(tx, iterators, fillvalue):
        var = ZipLongestVariable(fillvalue=fillvalue)
        tx.output.side_effects.track(var, tuple(iterators))
        return var

    def parts(self, tx):
        return tuple(it for it in tx.output.side_effects.get(self) if it is not None) + (self.fillvalue,)

    def python_type(self):
        return itertools.zip_longest

    def describe(self):
        return "itertools.zip_longest"

    def next_item(self, tx):
        effects = tx.output.side_effects
        iterators = list(effects.get(self))
        if not any(it is not None for it in iterators):
            raise StopIterationSignal()
        row = []
        for i, it in enumerate(iterators):
            if it is None:
                row.append(self.fillvalue)
                continue
            try:
                row.append(next_of(tx, it))
            except StopIterationSignal:
                iterators[i] = None
                if not any(other is not None for other in iterators):
                    effects.track(self, tuple(iterators))
                    raise
                row.append(self.fillvalue)
        effects.track(self, tuple(iterators))
        return TupleVariable(tuple(row))

    def reconstruct(self, codegen):
        iterators = codegen.tx.output.side_effects.get(self)
        if any(it is None for it in iterators) and any(it is not None for it in iterators):
            # a slot that gives fillvalue cannot be handed to a new zip_longest
            raise Unsupported("unrebuildable", what="rebuilding an itertools.zip_longest with an exhausted "
                              "iterator after the graph")
        codegen.load_callable(itertools.zip_longest)
        live = [it for it in iterators if it is not None]   # (none left: an exhausted one, as empty)
        for it in live:
            codegen.reconstruct(it)
        codegen.reconstruct(self.fillvalue)
        codegen.call(len(live) + 1, kw_names=("fillvalue",))


@dataclasses.dataclass(frozen=True, eq=False)
class AccumulateVariable(IteratorVariable):
    """itertools.accumulate(iterator, func, initial=...), pulled lazily as CPython's. State in
    SideEffects: (the running total or None before the first item, the initial value still to
    yield or None)."""
    iterator: VariableTracker = None
    func: VariableTracker = None     # None: addition

    @staticmethod
    def create(tx, iterator, func, initial):
        var = AccumulateVariable(iterator=iterator, func=func)
        tx.output.side_effects.track(var, (None, initial))
        return var

    def parts(self, tx):
        total, initial = tx.output.side_effects.get(self)
        return tuple(p for p in (self.iterator, self.func, total, initial) if p is not None)

    def python_type(self):
        return itertools.accumulate

    def describe(self):
        return "itertools.accumulate"

    def next_item(self, tx):
        effects = tx.output.side_effects
        total, initial = effects.get(self)
        if initial is not None:
            effects.track(self, (initial, None))
            return initial
        value = next_of(tx, self.iterator)
        if total is not None:
            value = self.func.call_function(tx, [total, value], {}) if self.func is not None else \
                tx.binary_op(operator.add, total, value)
        effects.track(self, (value, None))
        return value

    def reconstruct(self, codegen):
        total, initial = codegen.tx.output.side_effects.get(self)
        if total is not None:     # a running total cannot be handed to a new accumulate
            raise Unsupported("unrebuildable", what="rebuilding a started itertools.accumulate after the graph")
        codegen.load_callable(itertools.accumulate)
        codegen.reconstruct(self.iterator)
        if self.func is not None:
            codegen.reconstruct(self.func)
        else:
            codegen.load_const(None)
        if initial is not None:
            codegen.reconstruct(initial)
        else:
            codegen.load_const(None)
        codegen.call(3, kw_names=("initial",))


families.register(ListIteratorVariable, ListSequenceIteratorVariable, DequeIteratorVariable, StopIterationSignal)


def exact_iterator_type(var):
    """The real type of the iterator `var` stands for, where its tracker knows it exactly (a list
    iterator made over items of unknown origin does not: `iter("ab")` and `iter(())` share it)."""
    if isinstance(var, ListIteratorVariable):
        return _KIND_TYPES.get(var.kind) if type(var) is ListIteratorVariable else None
    if isinstance(var, ZipVariable):
        return var.python_type() if var.kind in ("zip", "map", "enumerate") else None
    if isinstance(var, (ResumedIteratorVariable, ListSequenceIteratorVariable, DequeIteratorVariable,
                        ContainerIteratorVariable, GeneratorVariable, FilterVariable, CountIteratorVariable,
                        IsliceVariable, ChainVariable, ZipLongestVariable, AccumulateVariable)):
        return var.python_type()
    return None
