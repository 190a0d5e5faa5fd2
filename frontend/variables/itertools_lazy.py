"""itertools iterators pulled lazily as CPython's (compile time only): repeat, starmap, takewhile,
dropwhile, pairwise, cycle, groupby and tee. Each asks its iterator for an item, and calls the user's function,
only when its own next item is asked for, so effects keep eager order. State lives in SideEffects
(advancing one is a mutation). One that cannot be handed over as an equal object after the graph
(a started cycle, a dropwhile past its prefix) says so when rebuilt."""
from __future__ import annotations

import dataclasses
import itertools

from ..graph_break import Unsupported, fold, user_error
from ..signals import UserException
from .base import VariableTracker, compare_equal
from .constant import const
from .iterators import IteratorVariable, StopIterationSignal, next_of
from .lists import TupleVariable, python_index


@dataclasses.dataclass(frozen=True, eq=False)
class RepeatVariable(IteratorVariable):
    """itertools.repeat(obj[, times]): state is the count left, None for endless."""
    item: VariableTracker = None

    def parts(self, tx):
        return (self.item,)

    def python_type(self):
        return itertools.repeat

    def describe(self):
        return "itertools.repeat"

    def next_item(self, tx):
        left = tx.output.side_effects.get(self)
        if left == 0:
            raise StopIterationSignal()
        if left is not None:
            tx.output.side_effects.track(self, left - 1)
        return self.item

    def unpack(self, tx):
        left = tx.output.side_effects.get(self)
        if left is None:
            raise Unsupported("endless_iterator", what="consuming an endless itertools.repeat")
        if left > tx.config.max_instructions:
            raise Unsupported("endless_iterator", what=f"consuming itertools.repeat of {left} items")
        tx.output.side_effects.track(self, 0)
        return [self.item] * left

    def call_method(self, tx, name, args, kwargs):
        if name == "__length_hint__" and not args and not kwargs:
            left = tx.output.side_effects.get(self)
            if left is not None:        # (endless: CPython raises TypeError)
                return const(left)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        left = codegen.tx.output.side_effects.get(self)
        codegen.load_callable(itertools.repeat)
        codegen.reconstruct(self.item)
        if left is None:
            codegen.call(1)
        else:
            codegen.load_const(left)
            codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class StarmapVariable(IteratorVariable):
    """itertools.starmap(fn, iterator): `fn(*item)` for each item as it is asked for."""
    fn: VariableTracker = None
    iterator: VariableTracker = None

    def parts(self, tx):
        return (self.fn, self.iterator)

    def python_type(self):
        return itertools.starmap

    def describe(self):
        return "itertools.starmap"

    def next_item(self, tx):
        item = next_of(tx, self.iterator)
        return self.fn.call_function(tx, tx.unpack_iterable(item), {})

    def reconstruct(self, codegen):
        codegen.load_callable(itertools.starmap)
        codegen.reconstruct(self.fn)
        codegen.reconstruct(self.iterator)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class CompressVariable(IteratorVariable):
    """itertools.compress(data, selectors): each step takes one item of data, then one selector (an
    item taken from data is dropped when selectors end), and gives the item when the selector is true."""
    data: VariableTracker = None
    selectors: VariableTracker = None

    def parts(self, tx):
        return (self.data, self.selectors)

    def python_type(self):
        return itertools.compress

    def describe(self):
        return "itertools.compress"

    def next_item(self, tx):
        while True:
            datum = next_of(tx, self.data)
            if next_of(tx, self.selectors).truth(tx):
                return datum

    def reconstruct(self, codegen):
        codegen.load_callable(itertools.compress)
        codegen.reconstruct(self.data)
        codegen.reconstruct(self.selectors)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class TakeWhileVariable(IteratorVariable):
    """itertools.takewhile / dropwhile(predicate, iterator). State: for takewhile, whether a false
    test ended it; for dropwhile, whether the prefix is still being dropped."""
    predicate: VariableTracker = None
    iterator: VariableTracker = None
    dropping: bool = False     # True: dropwhile

    def parts(self, tx):
        return (self.predicate, self.iterator)

    def python_type(self):
        return itertools.dropwhile if self.dropping else itertools.takewhile

    def describe(self):
        return f"itertools.{self.python_type().__name__}"

    def next_item(self, tx):
        effects = tx.output.side_effects
        if self.dropping:
            item = next_of(tx, self.iterator)
            while effects.get(self):
                if not self.predicate.call_function(tx, [item], {}).truth(tx):
                    effects.track(self, False)
                    return item
                item = next_of(tx, self.iterator)
            return item
        if effects.get(self):
            raise StopIterationSignal()
        item = next_of(tx, self.iterator)
        if self.predicate.call_function(tx, [item], {}).truth(tx):
            return item
        effects.track(self, True)
        raise StopIterationSignal()

    def reconstruct(self, codegen):
        flag = codegen.tx.output.side_effects.get(self)
        if flag != self.dropping:   # ended, or past the dropped prefix: a new one would test again
            raise Unsupported("unrebuildable", what=f"rebuilding a started {self.describe()} after the graph")
        codegen.load_callable(self.python_type())
        codegen.reconstruct(self.predicate)
        codegen.reconstruct(self.iterator)
        codegen.call(2)


_NOT_STARTED = "not started"


@dataclasses.dataclass(frozen=True, eq=False)
class PairwiseVariable(IteratorVariable):
    """itertools.pairwise(iterator). State: the last item taken, _NOT_STARTED, or None once exhausted
    (CPython drops its iterator then and asks it nothing more)."""
    iterator: VariableTracker = None

    def parts(self, tx):
        last = tx.output.side_effects.get(self)
        return (self.iterator,) + ((last,) if isinstance(last, VariableTracker) else ())

    def python_type(self):
        return itertools.pairwise

    def describe(self):
        return "itertools.pairwise"

    def next_item(self, tx):
        effects = tx.output.side_effects
        old = effects.get(self)
        if old is None:
            raise StopIterationSignal()
        try:
            if old is _NOT_STARTED:
                old = next_of(tx, self.iterator)
                effects.track(self, old)
            new = next_of(tx, self.iterator)
        except StopIterationSignal:
            effects.track(self, None)
            raise
        effects.track(self, new)
        return TupleVariable((old, new))

    def reconstruct(self, codegen):
        if codegen.tx.output.side_effects.get(self) is not _NOT_STARTED:
            raise Unsupported("unrebuildable", what="rebuilding a started itertools.pairwise after the graph")
        codegen.load_callable(itertools.pairwise)
        codegen.reconstruct(self.iterator)
        codegen.call(1)


@dataclasses.dataclass(frozen=True, eq=False)
class CycleVariable(IteratorVariable):
    """itertools.cycle(iterator): the first pass takes items from the iterator and saves them, then
    the saved items repeat. State: (saved items, index into them once the first pass ended, or None
    during it)."""
    iterator: VariableTracker = None

    def parts(self, tx):
        saved, _ = tx.output.side_effects.get(self)
        return (self.iterator, *saved)

    def python_type(self):
        return itertools.cycle

    def describe(self):
        return "itertools.cycle"

    def next_item(self, tx):
        effects = tx.output.side_effects
        saved, index = effects.get(self)
        if index is None:
            try:
                item = next_of(tx, self.iterator)
            except StopIterationSignal:
                if not saved:
                    raise
                effects.track(self, (saved, 1 % len(saved)))
                return saved[0]
            effects.track(self, (saved + (item,), None))
            return item
        if not saved:
            raise StopIterationSignal()
        effects.track(self, (saved, (index + 1) % len(saved)))
        return saved[index]

    def unpack(self, tx):
        raise Unsupported("endless_iterator", what="consuming an endless itertools.cycle")

    def reconstruct(self, codegen):
        saved, _ = codegen.tx.output.side_effects.get(self)
        if saved:
            raise Unsupported("unrebuildable", what="rebuilding a started itertools.cycle after the graph")
        codegen.load_callable(itertools.cycle)
        codegen.reconstruct(self.iterator)
        codegen.call(1)


_UNSET = "unset"


@dataclasses.dataclass(frozen=True, eq=False)
class GroupbyVariable(IteratorVariable):
    """itertools.groupby(iterator, key): CPython's state machine. State: (target key, current key,
    current value, current group), each _UNSET when CPython's is NULL; a group iterates only while
    it is the current one."""
    iterator: VariableTracker = None
    keyfunc: VariableTracker = None     # None: the items are their own keys

    def parts(self, tx):
        return (self.iterator, *(p for p in tx.output.side_effects.get(self) if isinstance(p, VariableTracker)),
                *((self.keyfunc,) if self.keyfunc is not None else ()))

    def python_type(self):
        return itertools.groupby

    def describe(self):
        return "itertools.groupby"

    def step(self, tx):
        """Take the next item and its key (StopIterationSignal at the end)."""
        value = next_of(tx, self.iterator)
        key = value if self.keyfunc is None else self.keyfunc.call_function(tx, [value], {})
        target, _, _, group = tx.output.side_effects.get(self)
        tx.output.side_effects.track(self, (target, key, value, group))

    def next_item(self, tx):
        effects = tx.output.side_effects
        target, current, value, _ = effects.get(self)
        effects.track(self, (target, current, value, _UNSET))
        while True:
            target, current, _, _ = effects.get(self)
            if current is not _UNSET and (target is _UNSET or not compare_equal(tx, target, current)):
                break
            self.step(tx)
        _, current, value, _ = effects.get(self)
        group = GrouperVariable(parent=self, key=current)
        effects.track(self, (current, current, value, group))
        return TupleVariable((current, group))

    def reconstruct(self, codegen):
        if codegen.tx.output.side_effects.get(self) != (_UNSET,) * 4:
            raise Unsupported("unrebuildable", what="rebuilding a started itertools.groupby after the graph")
        codegen.load_callable(itertools.groupby)
        codegen.reconstruct(self.iterator)
        if self.keyfunc is None:
            codegen.load_const(None)
        else:
            codegen.reconstruct(self.keyfunc)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class GrouperVariable(IteratorVariable):
    """One group of an itertools.groupby: the items while their key equals the group's and the
    group is still the groupby's current one."""
    parent: GroupbyVariable = None
    key: VariableTracker = None

    def parts(self, tx):
        return (self.parent, self.key)

    def python_type(self):
        return _GROUPER_TYPE

    def describe(self):
        return "itertools._grouper"

    def next_item(self, tx):
        effects = tx.output.side_effects
        if effects.get(self.parent)[3] is not self:
            raise StopIterationSignal()
        if effects.get(self.parent)[2] is _UNSET:
            self.parent.step(tx)
        target, current, value, group = effects.get(self.parent)
        if not compare_equal(tx, self.key, current):
            raise StopIterationSignal()
        effects.track(self.parent, (target, _UNSET, _UNSET, group))
        return value

    def reconstruct(self, codegen):
        raise Unsupported("unrebuildable", what="rebuilding a group of itertools.groupby after the graph")


_GROUPER_TYPE = type(next(itertools.groupby([1]))[1])


def _groupby(tx, iterable, key=None):
    if key is not None and key.is_python_constant() and key.as_python_constant() is None:
        key = None
    var = GroupbyVariable(iterator=tx.get_iter(iterable), keyfunc=key)
    tx.output.side_effects.track(var, (_UNSET,) * 4)
    return var


def _repeat(tx, item, times=None):
    left = None
    if times is not None:
        left = python_index(times)
        fold(itertools.repeat, None, left)      # not an int: the program's TypeError
        left = max(left, 0)
    var = RepeatVariable(item=item)
    tx.output.side_effects.track(var, left)
    return var


def _compress(tx, data, selectors):
    return CompressVariable(data=tx.get_iter(data), selectors=tx.get_iter(selectors))


def _starmap(tx, fn, iterable, /):
    return StarmapVariable(fn=fn, iterator=tx.get_iter(iterable))


def _while(dropping):
    def handler(tx, predicate, iterable, /):
        var = TakeWhileVariable(predicate=predicate, iterator=tx.get_iter(iterable), dropping=dropping)
        tx.output.side_effects.track(var, dropping)
        return var
    return handler


def _pairwise(tx, iterable, /):
    var = PairwiseVariable(iterator=tx.get_iter(iterable))
    tx.output.side_effects.track(var, _NOT_STARTED)
    return var


def _cycle(tx, iterable, /):
    var = CycleVariable(iterator=tx.get_iter(iterable))
    tx.output.side_effects.track(var, ((), None))
    return var


@dataclasses.dataclass(frozen=True, eq=False)
class TeeBufferVariable(VariableTracker):
    """What the iterators of one itertools.tee share (CPython's teedataobject chain): the items taken
    from the underlying iterator so far. State: (items, running). An iterator at the end asks the
    underlying one again each time (CPython records no exhaustion)."""
    iterator: VariableTracker = None

    def parts(self, tx):
        items, _ = tx.output.side_effects.get(self)
        return (self.iterator, *items)

    def describe(self):
        return "itertools.tee's buffer"

    def item(self, tx, index):
        effects = tx.output.side_effects
        items, running = effects.get(self)
        if index < len(items):
            return items[index]
        if running:     # the underlying iterator asked a tee of its own (CPython raises RuntimeError)
            raise Unsupported("python_protocol", what="re-entering an itertools.tee iterator")
        effects.track(self, (items, True))
        try:
            item = next_of(tx, self.iterator)
        finally:
            effects.track(self, (effects.get(self)[0], False))
        # CPython frees the items every tee passed, in blocks: the death of an item that runs code
        # (a finalizer) would come at a place the trace does not know
        from ..lifetimes import finalizer_may_run    # (lifetimes imports the trackers)
        finalizer_may_run(tx, item)
        effects.track(self, (items + (item,), False))
        return item


@dataclasses.dataclass(frozen=True, eq=False)
class TeeVariable(IteratorVariable):
    """One iterator of itertools.tee: state is its index into the shared buffer. Not rebuilt after
    the graph (the iterators share their buffer)."""
    buffer: TeeBufferVariable = None

    def parts(self, tx):
        return (self.buffer,)

    def python_type(self):
        return _TEE_TYPE

    def describe(self):
        return "itertools._tee"

    def next_item(self, tx):
        index = tx.output.side_effects.get(self)
        item = self.buffer.item(tx, index)
        tx.output.side_effects.track(self, index + 1)
        return item

    def call_method(self, tx, name, args, kwargs):
        if name == "__copy__" and not args and not kwargs:
            return self.copy(tx)
        return super().call_method(tx, name, args, kwargs)

    def copy(self, tx):
        var = TeeVariable(buffer=self.buffer)
        tx.output.side_effects.track(var, tx.output.side_effects.get(self))
        return var

    def reconstruct(self, codegen):
        raise Unsupported("unrebuildable", what="rebuilding an itertools.tee iterator after the graph")


_TEE_TYPE = type(itertools.tee(())[0])


def _tee(tx, iterable, n=None, /):
    """itertools.tee(iterable, n=2) as CPython's: n checked first (no iterator made for 0), then
    `iter(iterable)`; an iterator with `__copy__` (a tee) is the first result and copied for the
    others, any other is wrapped in a new tee. An iterator of the program's class breaks (its
    `__copy__` is not looked up here)."""
    count = 2 if n is None else python_index(n)
    if type(count) not in (int, bool):
        raise Unsupported("unsupported_call", fn="itertools.tee", detail=" with these arguments")
    if count < 0:
        raise user_error(ValueError("n must be >= 0"))
    if count == 0:
        return TupleVariable(())
    it = tx.get_iter(iterable)
    if isinstance(it, TeeVariable):
        first = it
    else:
        if not isinstance(it, IteratorVariable) or hasattr(it.python_type(), "__copy__"):
            raise Unsupported("unsupported_call", fn="itertools.tee", detail=f" of {it.describe()}")
        buffer = TeeBufferVariable(iterator=it)
        tx.output.side_effects.track(buffer, ((), False))
        first = TeeVariable(buffer=buffer)
        tx.output.side_effects.track(first, 0)
    return TupleVariable((first,) + tuple(first.copy(tx) for _ in range(count - 1)))


@dataclasses.dataclass(frozen=True, eq=False)
class CallableIteratorVariable(IteratorVariable):
    """iter(fn, sentinel): each item is a call `fn()`; an item equal to the sentinel (`sentinel == item`,
    identity first, as CPython compares) or a StopIteration raised by the call ends it for good. State:
    whether it ended."""
    fn: VariableTracker = None
    sentinel: VariableTracker = None

    def parts(self, tx):
        return (self.fn, self.sentinel)

    def python_type(self):
        return _CALLABLE_ITERATOR

    def describe(self):
        return "callable_iterator"

    def next_item(self, tx):
        effects = tx.output.side_effects
        if effects.get(self):
            raise StopIterationSignal()
        try:
            item = self.fn.call_function(tx, [], {})
        except UserException as e:
            if not issubclass(e.exc_var.cls, StopIteration):
                raise
            effects.track(self, True)
            raise StopIterationSignal() from None
        if compare_equal(tx, self.sentinel, item):
            effects.track(self, True)
            raise StopIterationSignal()
        return item

    def reconstruct(self, codegen):
        if codegen.tx.output.side_effects.get(self):   # (a new one would call fn again)
            raise Unsupported("unrebuildable", what="rebuilding an exhausted callable_iterator after the graph")
        codegen.load_callable(iter)
        codegen.reconstruct(self.fn)
        codegen.reconstruct(self.sentinel)
        codegen.call(2)


_CALLABLE_ITERATOR = type(iter(int, 0))


def callable_iterator(tx, fn, sentinel):
    var = CallableIteratorVariable(fn=fn, sentinel=sentinel)
    tx.output.side_effects.track(var, False)
    return var


HANDLERS = {itertools.repeat: _repeat, itertools.starmap: _starmap, itertools.takewhile: _while(False),
            itertools.dropwhile: _while(True), itertools.pairwise: _pairwise, itertools.cycle: _cycle,
            itertools.groupby: _groupby, itertools.tee: _tee, itertools.compress: _compress}
