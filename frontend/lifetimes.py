"""When generators made while tracing die, and what their death runs; objects with a finalizer.
Compile time only.

CPython closes a generator when its last reference goes: `close()` throws GeneratorExit at the
paused `yield`, so a `finally`, an `except GeneratorExit` or a context manager's `__exit__` around
that `yield` runs right then. Only a generator that was started and is paused inside an
exception-table range has a close anyone can observe ("pending" here); the others die silently.

Modelled exactly:
- a frame returns and only its own locals (or stack) held the generator: it is closed after the
  return value is computed, as clearing the frame does (the root frame and inlined calls alike);
- POP_TOP, STORE_FAST or DELETE_FAST drops the last reference (a `for` loop left by `break`, a
  local rebound or deleted), or an exhausted `for` loop drops the iterator holding the last one (a
  `zip` whose shorter input ended first): it is closed at that instruction.

Anything else stops tracing with `Unsupported`, so the code runs natively: a pending generator that
died some other way (a container holding it dropped), two dying at once (their order is the
frame's clearing order), a close that raises or yields again (CPython reports those as
unraisable), a graph break while a pending generator exists (it cannot be rebuilt, and a dead local
holding it would be closed at frame exit).

An object whose class defines `__del__`, or that a weak reference with a callback points to, is never
modelled dying: dropping a reference to one (a local rebound or deleted, a dict item replaced) stops
tracing, and the frame runs as is (`finalizer_may_run`).
"""
from __future__ import annotations

import collections
import dataclasses

from ..guards.source import LocalSource
from . import exception_state, reads
from .graph_break import Unsupported
from .instructions import instructions_of
from .reads import MISSING
from .signals import GeneratorYield, ReturnValue, UserException, raised_by_user
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable, const
from .variables.iterators import GeneratorState, GeneratorVariable, IteratorVariable
from .variables.misc import ExceptionVariable, UnreadArgument
from .variables.tensor import SymNodeVariable, TensorVariable
from .variables.user_defined import UserDefinedObjectVariable


def _not_modelled(what):
    return Unsupported("generator_cleanup", what=f"{what} (a generator's finally would run at another point)")


def close_is_observable(tx, gen) -> bool:
    """Whether closing `gen` now would run any of its code (or a delegate's)."""
    state = tx.output.side_effects.contents.get(gen)
    if not isinstance(state, GeneratorState) or not state.started:
        return False
    insts, _, table = instructions_of(gen.code)
    offset = insts[state.ip - 1].offset        # the paused YIELD_VALUE
    if any(e.start <= offset < e.end for e in table):
        return True
    delegate = _delegate(gen, state, insts)
    return delegate is not None and (not isinstance(delegate, GeneratorVariable) or
                                     close_is_observable(tx, delegate))


def _delegate(gen, state, insts):
    """The sub-iterator of a `yield from` the generator is paused in, or None."""
    if state.ip >= 2 and insts[state.ip - 2].opname == "SEND" and state.stack:
        return state.stack[-1]
    return None


def pending(tx) -> list:
    effects = tx.output.side_effects
    return [g for g in effects.generators if close_is_observable(tx, g)]


def _reachable(tx, roots, targets, made_here_only=False) -> set:
    """ids of the trackers reachable from `roots` (tracker fields, tracked contents, cells); the walk
    stops once every tracker in `targets` is found (the callers only ask whether those are reached:
    walking all a long trace made at each generator's return made compiles quadratic). With
    `made_here_only`, objects that existed before the trace (with a source) are not walked into."""
    effects = tx.output.side_effects
    seen: set = set()
    missing = {id(t) for t in targets}
    # breadth first, each root's reach before the next one's: a target held near an early root (a
    # paused `with` generator on a caller's stack, the roots' first group) is found at once
    todo = collections.deque()
    for root in roots:
        todo.append(root)
        _walk(effects, todo, seen, missing, made_here_only)
    return seen


def _walk(effects, todo, seen, missing, made_here_only=False) -> None:
    while todo and missing:
        v = todo.popleft()
        if isinstance(v, VariableTracker):
            if id(v) in seen:
                continue
            seen.add(id(v))
            missing.discard(id(v))
            if isinstance(v, (ConstantVariable, TensorVariable, SymNodeVariable)) or \
                    made_here_only and v.source is not None:
                continue
            for table in (effects.contents, effects.cells):
                try:
                    if v in table:
                        todo.append(table[v])
                except TypeError:      # an unhashable tracker is never a key
                    pass
            todo.extend(getattr(v, f.name) for f in dataclasses.fields(v) if f.name not in ("source", "f_globals"))
        elif isinstance(v, (tuple, list)):
            todo.extend(x for x in v if isinstance(x, (VariableTracker, tuple, list, dict, GeneratorState)))
        elif isinstance(v, dict):
            todo.extend(x for x in (*v.keys(), *v.values())
                        if isinstance(x, (VariableTracker, tuple, list, dict, GeneratorState)))
        elif isinstance(v, GeneratorState):
            todo.extend((v.stack, v.symbolic_locals, v.cells))


def _frame_roots(tx) -> list:
    return [tuple(tx.stack), tx.symbolic_locals, tx.cells]


def _outside_roots(tx) -> list:
    """What outlives the frame of `tx`: its callers' frames and what the program changed outside."""
    effects = tx.output.side_effects
    callers = []
    caller = tx.parent
    while caller is not None:
        callers.append(caller)
        caller = caller.parent
    # the callers' stacks first: where a paused `with` block's generator is held
    return [tuple(c.stack) for c in callers] + [list(effects.mutated), effects.globals, effects.cells] + \
        [root for c in callers for root in _frame_roots(c)[1:]]


def frame_returns(tx, value) -> None:
    """`tx`'s frame returns `value`: close the pending generators that only its locals held."""
    gens = pending(tx)
    if not gens:
        return
    live = _reachable(tx, [value] + _outside_roots(tx), gens)
    held = _reachable(tx, _frame_roots(tx), gens)
    dying = [g for g in gens if id(g) not in live]
    if any(id(g) not in held for g in dying):
        raise _not_modelled("a generator that died before its frame returned")
    _close_dying(tx, dying, "at the same frame exit")


def finalizer_may_run(tx, var) -> None:
    """A reference to `var` was just dropped, by a local or by a container or object (a dict item
    replaced): if it is an object whose class has a `__del__`, or that a weak reference with a
    callback points to (`weakref.finalize`, a WeakKeyDictionary's cleanup), that code may run right
    here, in the middle of the traced code, and change what the trace reads next (a registry, the
    weak dictionary). Not modelled: the frame runs as is (see graph_break's "finalizer").
    (Such an object is never made while tracing: see UserDefinedObjectVariable.create_new, and
    making a weak reference is not traced.) An argument the frame never read is asked too."""
    if isinstance(var, UserDefinedObjectVariable):
        if reads.class_lookup(tx, var.cls, "__del__")[0] is not MISSING:
            raise Unsupported("finalizer", what=f"dropping a reference to a {var.cls.__qualname__} object "
                                                "(its class defines __del__)")
        real = var.value
    elif isinstance(var, UnreadArgument):
        real = var.value
    else:
        return
    if real is not None and reads.death_runs_code(tx, real, var.source):
        raise Unsupported("finalizer", what=f"dropping a reference to a {type(real).__qualname__} object "
                                            "(its death runs code: a weak reference's callback, or __del__)")


def dropped(tx, var) -> None:
    """A reference to `var` was just dropped (POP_TOP, STORE_FAST, DELETE_FAST, a `for` loop's
    iterator when it is exhausted): if it was the last one to a pending generator, or to an iterator
    holding one (a `zip` whose shorter input ended first), the generator is closed here; a finalizer
    may run (not for an object read through an attribute or item: that slot still holds it, and a
    change to the slot is checked as a store)."""
    if var is not None and (var.source is None or isinstance(var.source, LocalSource)) and not _frame_holds(tx, var):
        finalizer_may_run(tx, var)
    if var is None or var.source is not None or isinstance(var, (ConstantVariable, TensorVariable,
                                                                 SymNodeVariable)):
        return      # (an object from before the trace lives on; made to hold a generator, it was
        # changed, and a changed object counts as live: `_outside_roots`)
    gens = pending(tx)
    # a generator reached only through such an object is live for the same reason: not walked into
    held = _reachable(tx, [var], gens, made_here_only=True) if gens else ()
    gens = [g for g in gens if id(g) in held]
    if not gens:
        return
    live = _reachable(tx, _frame_roots(tx) + _outside_roots(tx), gens)
    _close_dying(tx, [g for g in gens if id(g) not in live], "with one reference")


def _close_dying(tx, dying, when: str) -> None:
    """Close the generators of `dying` that no other dying one holds (a generator held by another,
    its `yield from` delegate, goes with that one); two or more such: their order is not modelled,
    nor one left pending by that close (held by the closed one's frame, not its delegate)."""
    inner = _reachable(tx, [tx.output.side_effects.contents.get(g) for g in dying], dying)
    outermost = [g for g in dying if id(g) not in inner]
    if len(outermost) > 1:
        raise _not_modelled(f"several generators dying {when}")
    for g in outermost:
        close(tx, g)
    if any(close_is_observable(tx, g) for g in dying):
        raise _not_modelled("a generator dying with the generator that held it")


def _frame_holds(tx, var) -> bool:
    """Whether the frame's stack or another local still holds `var` (not the last reference: a
    resume prologue moving an argument onto the stack)."""
    return any(v is var for v in tx.stack) or any(v is var for v in tx.symbolic_locals.values())


def check_none_pending(tx) -> None:
    """Before a graph break: a pending generator cannot cross it."""
    if pending(tx):
        raise _not_modelled("a graph break while a started generator is paused in a try/with block")


def close(tx, gen, explicit=False) -> None:
    """`gen.close()`, traced: GeneratorExit thrown at the paused `yield` (a `yield from` delegate
    is closed first, and what closing it raises is thrown instead). `explicit`: the program calls
    close(), which raises what the generator raises, and RuntimeError when it yields again (left
    paused at that `yield`); a dying generator's exception is only printed (not modelled)."""
    effects = tx.output.side_effects
    state = effects.get(gen)
    effects.track(gen, None)     # finished, unless it yields again
    delegate = _delegate(gen, state, instructions_of(gen.code)[0])
    thrown = ExceptionVariable(cls=GeneratorExit, args=())
    if delegate is not None:
        thrown = close_delegate(tx, delegate) or thrown
        state = drop_delegate(tx, gen, state, delegate)
    gtx = tx.resume_generator(gen, state)
    gtx.current = gtx.instructions[state.ip - 1]
    try:
        gtx.handle_exception(thrown)
        gtx.run()
    except GeneratorYield as y:
        if not explicit:
            raise _not_modelled("a generator that yields when closed") from None
        # CPython's gen_close drops the value and leaves the generator paused at that `yield` (its
        # death closes it again)
        effects.track(gen, GeneratorState(gtx.ip, tuple(gtx.stack), gtx.symbolic_locals, gtx.cells,
                                          started=True, exception=gtx.own_exception))
        finalizer_may_run(tx, y.value)
        raise exception_state.raise_new(tx, ExceptionVariable(
            cls=RuntimeError, args=(const("generator ignored GeneratorExit"),))) from None
    except ReturnValue:
        pass
    except UserException as e:
        if not issubclass(e.exc_var.cls, (GeneratorExit, StopIteration)):
            if explicit:
                raise      # out of the program's close() call, the generator finished
            raise _not_modelled(f"a generator whose close raises {e.exc_var.cls.__name__}") from None


def drop_delegate(tx, gen, state, delegate):
    """An exception is about to be raised at the `yield` of `gen`'s `yield from`: unwinding pops the
    sub-iterator off the stack before any handler of the body runs (the handlers' depth is below it),
    which may be its last reference (a generator left paused by its close then dies: closed here).
    The state without it."""
    state = dataclasses.replace(state, stack=state.stack[:-1])
    if tx.output.side_effects.get(gen) is not None:
        tx.output.side_effects.track(gen, state)
    dropped(tx, delegate)
    return state


def close_delegate(tx, delegate):
    """Close the sub-iterator of a `yield from` (CPython's gen_close_iter): a generator's close(), or
    the object's own `close` method if it has one; the exception that raised (an ExceptionVariable,
    which the delegating generator gets instead of GeneratorExit), or None."""
    try:
        if isinstance(delegate, GeneratorVariable):
            if close_is_observable(tx, delegate):
                close(tx, delegate, explicit=True)
            else:
                tx.output.side_effects.track(delegate, None)
        elif isinstance(delegate, UserDefinedObjectVariable):
            try:
                method = delegate.var_getattr(tx, "close")
            except Exception as e:
                if raised_by_user(e, AttributeError):
                    return None       # no close: nothing to call
                if isinstance(e, UserException) or getattr(e, "bytegraph_user_exception", False):
                    # (CPython prints another error of the lookup as unraisable)
                    raise _not_modelled(f"looking up close of {delegate.describe()}") from None
                raise
            method.call_function(tx, [], {})
        elif not isinstance(delegate, IteratorVariable):
            raise _not_modelled(f"closing {delegate.describe()}")
    except UserException as e:
        return e.exc_var
    return None
