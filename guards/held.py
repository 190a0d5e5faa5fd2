"""How guards hold the program's objects: weakly, wherever Python allows it.

Compile time makes the holds; check functions (the hot path) call them. A cache entry must not keep
alive the objects it was compiled for (a class made in the frame, an object used as a dict key, a
function whose defaults were read): CPython frees them when the program drops them, and runs their
weak references' callbacks and their finalizers, which a program can watch (`weakref.finalize`, a
WeakKeyDictionary losing an entry). So a guard names such an object through a weak reference; what a
death means for the guard is decided where the check function is built (guards/builder.py
`CheckFunction._while_alive`). Objects that cannot be weakly referenced (ints, strings, tuples,
lists), and classes written in C, are held as they are.
"""
from __future__ import annotations

import weakref

# (read with type's own descriptors: a metaclass's attribute hooks never run)
_WEAKREF_OFFSET = type.__dict__["__weakrefoffset__"].__get__
_FLAGS = type.__dict__["__flags__"].__get__
_HEAPTYPE = 1 << 9    # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


class Kept:
    """A strong reference with weakref's interface (`held()` is the object)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __call__(self):
        return self.obj


def holds_weakly(obj) -> bool:
    """Whether guards hold `obj` through a weak reference: its type supports them, and it is not a
    class written in C (which never dies)."""
    tp = type(obj)
    return _WEAKREF_OFFSET(tp) != 0 and not (issubclass(tp, type) and not _FLAGS(obj) & _HEAPTYPE)


def needs_weak_hold(value) -> bool:
    """Whether `value` is, or is a tuple holding, an object guards hold weakly."""
    if type(value) is tuple:
        return any(needs_weak_hold(v) for v in value)
    return holds_weakly(value)


def hold(obj):
    """A callable giving `obj` back: a weak reference when it can be one (None once `obj` died), else
    a Kept. A tuple is held as it is (its identity may be what a guard checks)."""
    return weakref.ref(obj) if holds_weakly(obj) else Kept(obj)


def hold_items(value: tuple):
    """A callable giving back a tuple compared by value (the keys of a dict), its items held as `hold`
    does (nested tuples too): a HeldTuple, or a Kept when nothing in it is held weakly."""
    if not needs_weak_hold(value):
        return Kept(value)
    return HeldTuple(tuple(hold_items(v) if type(v) is tuple else hold(v) for v in value))


class HeldTuple:
    """A tuple whose items are holds; calling it gives an equal tuple back, or None when one of its
    objects died."""
    __slots__ = ("items",)

    def __init__(self, items: tuple):
        self.items = items

    def __call__(self):
        value = tuple(item() for item in self.items)
        return None if any(v is None and type(item) is not Kept for v, item in zip(value, self.items)) else value
