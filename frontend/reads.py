"""Guarded reads: the one place where the interpreter reads a fact from a real object while tracing.

Each accessor reads one fact (what a class's MRO holds under a name, whether an instance has an
attribute of its own, a function's defaults or code) and records the guard that keeps that fact
true at run time, so a tracker that asks here cannot forget the guard. Values themselves are
wrapped through their sources by `builder.wrap`, which guards them; what is read here is what
decides *how* the program runs (which method, which default, which branch of a `hasattr`).

A real object reached without a source of its own (a function found in a class, an object made
before the frame and held by a class attribute) is guarded through a `ConstSource`: the guard
holds the object and re-reads the fact from it on every call. Compile time only.
"""
from __future__ import annotations

import abc
from typing import NamedTuple

import torch

from ..guards.guard import Guard
from ..probe import class_mro as _class_mro
from ..probe import class_namespace
from ..guards.source import (  # noqa: F401 - re-exported for callers
    MISSING,
    AttrSource,
    CellEmptySource,
    ClassAttrSource,
    ClassNamespaceSource,
    ConstSource,
    DeathRunsCodeSource,
    InstanceDictSource,
    ItemSource,
    ReaderSource,
    SlotSetSource,
    TypeFlagSource,
    type_lookup,
)
from ..probe import runs_code_when_dropped
from .graph_break import Unsupported

_IMMUTABLE_TYPE = 1 << 8   # Py_TPFLAGS_IMMUTABLETYPE: builtin and extension types cannot be changed


def record(tx, guard: Guard) -> None:
    if guard.source is not None:
        tx.output.guards.add(guard)


def source_of(real, source):
    """`source`, or a ConstSource holding `real` when it reached the trace without one."""
    return source if source is not None else ConstSource(real)


class PendingClassAttr(NamedTuple):
    """What a class lookup finds where the trace itself set the attribute (`Cls.n = v`, written back
    after the graph): the tracker of the value set."""
    var: object


def pending_class_attr(tx, cls: type, name: str):
    """The tracker of the value the trace set as `name` on a class of `cls`'s MRO, if the lookup of
    `name` finds that class first (None: the lookup finds a real entry, or nothing)."""
    effects = tx.output.side_effects
    if not effects.class_vars:
        return None
    if any(effects.class_written(klass) for klass in _class_mro(cls)):
        effects.classes_read.setdefault(id(cls), (cls, name))
    for klass in _class_mro(cls):
        var = effects.class_attr(klass, name)
        if var is not None:
            return var
        if name in class_namespace(klass):
            return None
    return None


def _refuse_pending(cls, name):
    raise Unsupported("attribute_write", what=f"this lookup of {cls.__qualname__}.{name}, set earlier in the "
                                              "trace,")


def class_lookup(tx, cls: type, name: str, instance_source=None, pending_ok=False):
    """`name` in the MRO of `cls` without descriptors (the raw class-dict entry, or MISSING), and
    the source that re-reads it. Guarded once per class and name: the same lookup must find the same
    object at run time (a method replaced or added on the class, or on a subclass, recompiles).
    `instance_source`, if given, is an instance whose class this is: its exact type is guarded too.
    Where the trace set the attribute itself, the lookup finds a PendingClassAttr: only callers
    that ask for it (`pending_ok`, plain attribute reads) get it; for the others it is a break (the
    write is made first, then the instruction runs as Python and sees it)."""
    attr = type_lookup(cls, name)
    if cls.__flags__ & _IMMUTABLE_TYPE:
        return attr, None
    src = ClassAttrSource(ConstSource(cls), name)
    record(tx, Guard.id_match(src, attr))
    if instance_source is not None:
        record(tx, Guard.type_match(instance_source, cls))
    pending = pending_class_attr(tx, cls, name)
    if pending is not None:
        if not pending_ok:
            _refuse_pending(cls, name)
        return PendingClassAttr(pending), None
    return attr, src


def instance_dict(real):
    """The real object's `__dict__` (None if it has none), read without running a Python
    `__getattribute__` of its class."""
    try:
        d = object.__getattribute__(real, "__dict__")
    except AttributeError:
        return None
    return d if isinstance(d, dict) else None


def instance_attr(tx, real, source, name: str, dict_source=None):
    """`name` in the real object's own `__dict__` (or MISSING). Absence is guarded here; a value found
    is guarded by the caller wrapping it through its source. `dict_source` re-reads the instance dict
    (default: `object.__getattribute__(obj, '__dict__')`, which runs no user code)."""
    d = instance_dict(real)
    if d is not None and name in d:
        return d[name]
    if d is not None:   # (an object without a __dict__ never gets one)
        src = dict_source or InstanceDictSource(source_of(real, source))
        record(tx, Guard.key_absent(src, name))
    return MISSING


def slot_member(tx, real, source, descr):
    """The value the `__slots__` member `descr` of the real object holds, or MISSING. Whether it holds
    one is guarded here (a later call may find it set, or deleted); a value found is guarded by the
    caller wrapping it through its source."""
    try:
        value = descr.__get__(real, type(real))
    except AttributeError:
        value = MISSING
    record(tx, Guard.constant(SlotSetSource(source_of(real, source), descr), value is not MISSING))
    return value


def name_attr(tx, real, source, name: str):
    """`__name__`, `__qualname__`, `__module__` or `__doc__` of a Python function or a class: plain values
    the program (or anyone) may reassign between calls, so each is guarded (a builtin type's never
    changes). MISSING when it is not a string or None: the caller wraps it through its source."""
    value = getattr(real, name)
    if type(value) not in (str, type(None)):
        return MISSING
    if not (isinstance(real, type) and real.__flags__ & _IMMUTABLE_TYPE):
        record(tx, Guard.constant(AttrSource(source_of(real, source), name), value))
    return value


def function_code(tx, fn, source) -> None:
    """The code a Python function runs: `f.__code__` may be reassigned on the same function object."""
    record(tx, Guard.id_match(AttrSource(source_of(fn, source), "__code__"), fn.__code__))


def function_defaults(tx, fn, source, need_positional: bool, need_keyword: bool):
    """The trackers of a function's positional defaults (a tuple) and keyword-only defaults (a
    dict), each read (and guarded) only when the call leaves some parameter of that kind unbound."""
    src = source_of(fn, source)
    defaults = _defaults(tx, fn, src, "__defaults__") if need_positional else ()
    kwdefaults = _defaults(tx, fn, src, "__kwdefaults__") if need_keyword else {}
    return defaults, kwdefaults


def _defaults(tx, fn, src, name: str):
    """`fn.__defaults__` (a tuple) or `fn.__kwdefaults__` (a dict) as trackers; None, or the type and
    the length or keys, guarded."""
    kind = tuple if name == "__defaults__" else dict
    dsrc = AttrSource(src, name)
    real = getattr(fn, name)
    if real is None:
        record(tx, Guard.constant(dsrc, None))
        return kind()
    record(tx, Guard.type_match(dsrc, kind))
    if kind is tuple:
        record(tx, Guard.length(dsrc, len(real)))
        return tuple(tx.wrap(v, ItemSource(dsrc, i)) for i, v in enumerate(real))
    record(tx, Guard.dict_keys(dsrc, list(real)))
    return {k: tx.wrap(v, ItemSource(dsrc, k)) for k, v in real.items()}


def mro_lookup(tx, classes, name: str):
    """`name` in the first of `classes` (a slice of an MRO, as `super()` searches) whose dict has it:
    (attr, source), or (MISSING, None). Each class passed over is guarded not to gain the name."""
    for klass in classes:
        d = class_namespace(klass)
        dsrc = ClassNamespaceSource(ConstSource(klass))
        mutable = not klass.__flags__ & _IMMUTABLE_TYPE
        if mutable and tx.output.side_effects.class_attr(klass, name) is not None:
            _refuse_pending(klass, name)
        if name in d:
            src = ItemSource(dsrc, name) if mutable else None
            if src is not None:
                record(tx, Guard.id_match(src, d[name]))
            return d[name], src
        if mutable:
            record(tx, Guard.key_absent(dsrc, name))
    return MISSING, None


def tensor_class_entry(tx, name: str):
    """torch.Tensor's entry for `name` (a method the trace calls on a tensor), guarded: a library may
    replace a method on torch.Tensor, or add one, between calls (its C base class cannot change)."""
    return mro_lookup(tx, _class_mro(torch.Tensor), name)[0]


def mapping_lookup(tx, mapping: dict, mapping_source, name: str):
    """`mapping[name]` (a globals or builtins dict) or MISSING; absence is guarded (a global defined
    later, shadowing a builtin or answering a NameError, recompiles)."""
    if name in mapping:
        return mapping[name]
    record(tx, Guard.key_absent(source_of(mapping, mapping_source), name))
    return MISSING


def class_mro(tx, cls: type) -> tuple:
    """`cls.__mro__`, guarded (assigning `cls.__bases__` replaces it; the guard holds the tuple)."""
    if not cls.__flags__ & _IMMUTABLE_TYPE:
        record(tx, Guard.id_match(AttrSource(ConstSource(cls), "__mro__"), cls.__mro__))
    return cls.__mro__


def type_flag(tx, cls: type, mask: int) -> bool:
    """Whether `cls.__flags__` has `mask` (how `match` tells a sequence or a mapping):
    `collections.abc.Sequence.register(cls)` sets the flag on a class later."""
    value = bool(cls.__flags__ & mask)
    if not cls.__flags__ & _IMMUTABLE_TYPE:
        record(tx, Guard.constant(TypeFlagSource(ConstSource(cls), mask), value))
    return value


def abc_registry(tx) -> None:
    """What an ABC answers to isinstance/issubclass: the registries of every ABC, whose changes
    (`ABC.register(cls)`) move `abc.get_cache_token()`."""
    record(tx, Guard.constant(ReaderSource(ConstSource(abc.get_cache_token)), abc.get_cache_token()))


def object_identity(tx, real, source) -> int:
    """id() of a real object. Read from the frame, it is guarded to be that very object (an equal
    or same-typed one in its place next call has another id)."""
    record(tx, Guard.id_match(source, real))
    return id(real)


def death_runs_code(tx, real, source) -> bool:
    """Whether the death of `real` runs Python code (its class's `__del__`, the callback of a weak
    reference to it: `weakref.finalize`, a WeakKeyDictionary's cleanup). Guarded: a callback added
    later recompiles."""
    value = runs_code_when_dropped(real)
    record(tx, Guard.constant(DeathRunsCodeSource(source_of(real, source)), value))
    return value


def cell_contents(tx, cell, source):
    """The contents of a real closure cell, or MISSING when it is empty. Emptiness is guarded (a
    cell filled later recompiles); contents found are guarded by the caller wrapping them (a guard
    reading an emptied cell fails)."""
    try:
        return cell.cell_contents
    except ValueError:
        record(tx, Guard.constant(CellEmptySource(source_of(cell, source)), True))
        return MISSING


def class_dict_entry(tx, cls: type, name: str):
    """`cls.__dict__[name]`, in the class's own namespace (not its MRO), or MISSING, with the guard
    that keeps the answer true: the key absent, or the entry equal to a constant (None, an empty
    list). Returns (entry, guard); any other entry is returned unguarded (None) for the caller to
    refuse."""
    src = AttrSource(ConstSource(cls), "__dict__")
    if tx.output.side_effects.class_attr(cls, name) is not None:
        _refuse_pending(cls, name)
    entry = cls.__dict__.get(name, MISSING)
    if entry is MISSING:
        guard = Guard.key_absent(src, name)
    elif entry is None or type(entry) is list and not entry:
        guard = Guard.constant(ItemSource(src, name), entry)
    else:
        return entry, None
    record(tx, guard)
    return entry, guard


def sequence_item(tx, seq: tuple, source, index: int):
    """`seq[index]` of a real tuple, or MISSING past its end. Only what the caller learns is guarded:
    that the tuple has more than `index` items, or exactly `index` (a loop taking items one at a time
    assumes nothing about how many are left until it reaches the end)."""
    if index < len(seq):
        record(tx, Guard.length_at_least(source, index + 1))
        return seq[index]
    record(tx, Guard.length(source, len(seq)))
    return MISSING
