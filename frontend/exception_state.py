"""The run-time state of exceptions raised by the traced program: `__context__`, `__cause__` and
`__suppress_context__`, set at each raise as CPython sets them, and written `__traceback__`s.

Compile time only. An ExceptionVariable is immutable; its state lives in SideEffects under the key
("exception state", exc), so a checkpoint rolls it back. Raised exceptions never leave the graph
(ExceptionVariable.reconstruct refuses them), so nothing is replayed.

CPython, on a new raise of `exc` (a `raise` statement with an operand, an error in a builtin, a
generator's StopIteration), sets `exc.__context__` to the exception being handled, if there is one and
it is not `exc` itself, after cutting `exc` out of that exception's context chain (no cycles). A
bare `raise`, a re-raise at the end of a handler and the unwinding through frames change nothing.
The exception being handled when the root frame started is its caller's (translator.handled_exception
is None): a context set then is `CallersOrKept`, the caller's exception if it handles one, else the
context the exception had. Reading it, or the caller's exception itself (sys.exc_info(), a bare
`raise`), is traced only when the caller handled none at compile time, which is then guarded
(`caller_handles_nothing`).
"""
from __future__ import annotations

import dataclasses
import types

from ..guards.guard import Guard
from .signals import UserException


@dataclasses.dataclass(frozen=True)
class CallersOrKept:
    """The context of an exception raised while the frame handled none: the compiled frame's caller's
    exception if it handles one, else `kept` (CPython leaves the context alone then)."""
    kept: object = None


UNKNOWN = CallersOrKept      # (the class: `isinstance(value, UNKNOWN)` tells such a context)


def caller_handles_nothing(tx) -> bool:
    """Whether the compiled frame's caller is known to handle no exception (sys.exception() was None
    when the frame was compiled, and is guarded so from now on). False: it may handle one."""
    root = tx
    while getattr(root, "parent", None) is not None:
        root = root.parent
    code = getattr(root, "f_code", None) or getattr(root, "code", None)
    if not tx.output.caller_handled_none or not isinstance(code, types.CodeType) or \
            code.co_flags & (0x20 | 0x80 | 0x200):   # a generator, coroutine or async generator frame
        return False
    tx.output.guards.add(Guard.no_handled_exception())
    return True


def resolve(tx, context):
    """A context as CPython has it, or UNKNOWN when it depends on the caller's unknown exception."""
    if isinstance(context, CallersOrKept):
        return context.kept if caller_handles_nothing(tx) else UNKNOWN
    return context

_NEVER_RAISED = (None, None, False)   # (__cause__, __context__, __suppress_context__) of a new exception


def _key(exc):
    return ("exception state", exc)


def state(tx, exc) -> tuple:
    return tx.output.side_effects.contents.get(_key(exc), _NEVER_RAISED)


def _set(tx, exc, cause, context, suppress) -> None:
    tx.output.side_effects.track(_key(exc), (cause, context, suppress))


def mark_changed(tx, exc) -> None:
    """`exc` was changed in a way not kept here (a `__traceback__` written)."""
    tx.output.side_effects.track(("exception changed", exc), True)


def traceback_written(tx, exc) -> bool:
    return ("exception changed", exc) in tx.output.side_effects.contents


def changed(tx, exc) -> bool:
    """Whether `exc` differs from a new exception of its class and arguments: it cannot be rebuilt
    by calling the class again."""
    contents = tx.output.side_effects.contents
    return _key(exc) in contents or ("exception changed", exc) in contents


def chain(tx, exc) -> None:
    """`exc` is raised anew at the current instruction of `tx`: chain it to the handled exception."""
    handled = tx.handled_exception
    cause, context, suppress = state(tx, exc)
    if handled is None:
        # not handling one, unless the frame's caller is: unchanged or the caller's exception
        if not isinstance(context, CallersOrKept):
            _set(tx, exc, cause, CallersOrKept(context), suppress)
        return
    if handled is exc:
        return
    link, seen = handled, {id(handled)}
    while True:         # cut `exc` out of the handled exception's chain
        link_state = state(tx, link)
        nxt = link_state[1]
        if isinstance(nxt, CallersOrKept):
            # the caller's exception, made before the frame, or (it handles none) the context kept
            nxt = resolve(tx, nxt)
            if nxt is UNKNOWN:
                break
        if nxt is None:
            break
        if nxt is exc:
            _set(tx, link, link_state[0], None, link_state[2])
            break
        if id(nxt) in seen:     # a cycle the program made (`e.__context__ = e`): CPython stops there too
            break
        seen.add(id(nxt))
        link = nxt
    _set(tx, exc, cause, handled, suppress)


def raise_new(tx, exc) -> UserException:
    """The UserException for a new raise of `exc` (chained first)."""
    chain(tx, exc)
    return UserException(exc)


def set_cause(tx, exc, cause) -> None:
    """`raise exc from cause` (cause an exception tracker, or None): also sets __suppress_context__."""
    _, context, _ = state(tx, exc)
    _set(tx, exc, cause, context, True)


def wrap_cause(tx, exc, cause) -> None:
    """`exc` is raised in place of `cause` (a generator's StopIteration becoming a RuntimeError):
    both its cause and its context are `cause`."""
    _set(tx, exc, cause, cause, True)


def write(tx, exc, name, value, is_exception) -> bool:
    """`exc.<name> = value` for a chaining attribute, as BaseException's setters check it
    (`is_exception`: value is an exception tracker); False when that is not modelled.
    `__traceback__` is accepted and forgotten: it is never read (frames are not modelled)."""
    is_none = value.is_python_constant() and value.as_python_constant() is None
    cause, context, suppress = state(tx, exc)
    if name in ("__cause__", "__context__"):
        if not (is_none or is_exception):
            return False     # a TypeError, or a user exception object: not modelled
        new = None if is_none else value
        if name == "__cause__":   # the setter also sets __suppress_context__
            _set(tx, exc, new, context, True)
        else:
            _set(tx, exc, cause, new, suppress)
        return True
    if name == "__suppress_context__" and value.is_python_constant() and \
            type(value.as_python_constant()) is bool:
        _set(tx, exc, cause, context, value.as_python_constant())
        return True
    return False
