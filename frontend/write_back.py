"""Run time: what transformed code calls to write a traced change back into the program's object.

A dict is changed item by item, as the program's own stores and deletions change it: cleared and
filled again it gets a new table, and an iterator the program holds over it (its position an index
into that table) skipped or repeated items afterwards; its version tag changed even when no item did.
"""
from __future__ import annotations

_get, _set, _delete, _keys = dict.__getitem__, dict.__setitem__, dict.__delitem__, dict.keys


def write_dict(target: dict, new: dict) -> None:
    """Make `target` (a dict, or a dict subclass's object: only dict's own methods run) hold `new`'s
    items in `new`'s order. Keys the trace allows are constants, classes
    and functions: hashing and comparing them runs no program code. The keys `new` lists first in
    the order `target` has them stay where they are (their value stored only if it is another
    object); the others are deleted, and the rest of `new` is added after them, in order."""
    position = {key: i for i, key in enumerate(_keys(target))}
    keys = list(new)
    kept, last = 0, -1
    for key in keys:
        i = position.get(key)
        if i is None or i < last:
            break
        kept, last = kept + 1, i
    staying = dict.fromkeys(keys[:kept])
    for key in [key for key in _keys(target) if key not in staying]:
        _delete(target, key)
    for key in keys[:kept]:
        if _get(target, key) is not new[key]:
            _set(target, key, new[key])
    for key in keys[kept:]:
        _set(target, key, new[key])
