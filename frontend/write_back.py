"""Run time: what transformed code calls to write a traced change back into the program's object.

A dict, OrderedDict or set is changed by replaying the changes of its keys the program made, in its
order, with the builtin's own methods: where keys sit in the table (a dict's entries, an OrderedDict's
linked list, a set's hash slots) depends on the whole history of additions and removals, and an
iterator the program holds (its position an index into that table, a key of the linked list, the
size it started with) sees that history. Cleared and filled again, a dict had a new table and a held
iterator skipped items; an OrderedDict's iterator saw a "mutation" where only values changed; a set
iterated in another order. Values are stored afterwards: where a key sits does not depend on its value.
Keys the trace allows are constants, classes and functions: hashing and comparing them runs no program
code, so nothing can observe the placeholder values between the two steps.

Events (see side_effects.record_key_event): ("add", k, ...) ("del", k, ...) ("clear",) ("popitem", last)
("move", k, last), ("update", keys) for a dict updated from a dict; for a set ("pop",), ("merge", method,
operand), ("items", keys) and ("dict_keys", keys).
"""
from __future__ import annotations

import collections
import types

from ..probe import class_dict_lookup, class_mro, class_namespace

_get, _set = dict.__getitem__, dict.__setitem__

_DICT_METHODS = {"add": dict.__setitem__, "del": dict.__delitem__, "clear": dict.clear, "popitem": dict.popitem}
_ODICT_METHODS = {"add": collections.OrderedDict.__setitem__, "del": collections.OrderedDict.__delitem__,
                  "clear": collections.OrderedDict.clear, "popitem": collections.OrderedDict.popitem,
                  "move": collections.OrderedDict.move_to_end}


def write_dict(target, events: tuple, new: dict, ordered: bool = False) -> None:
    """Make `target` (a dict, a dict subclass's object: only dict's own methods run; or an exact
    OrderedDict when `ordered`) hold `new`'s items, replaying the key events, then storing each value
    that is another object than the one held (a value stored again leaves the dict as it is)."""
    methods = _ODICT_METHODS if ordered else _DICT_METHODS
    for op, *args in events:
        if op == "add":
            for key in args:
                methods["add"](target, key, None)
        elif op == "del":
            for key in args:
                methods["del"](target, key)
        elif op == "popitem":
            methods["popitem"](target, *args[:1] if ordered else ())
        elif op == "move":
            methods["move"](target, args[0], args[1])
        elif op == "update":
            # dict.update from a dict sizes the table for all the operand's items first; a dict of
            # the same keys in the same order does the same. A key already held is given the value it
            # holds: storing the same object leaves the dict's version as it is (PEP 509), as eager's
            # update of a key to the value it held did
            dict.update(target, {key: _get(target, key) if dict.__contains__(target, key) else None
                                 for key in args[0]})
        else:
            methods["clear"](target)
    for key, value in new.items():
        if _get(target, key) is not value:
            methods["add"](target, key, value)


def rebuilt_dict(made, events: tuple, new: dict):
    """A dict made in compiled code, rebuilt: `made` holds the keys it was made with; the changes
    since are replayed (`write_dict`), so that its entries have the holes eager's have."""
    write_dict(made, events, new)
    return made


_SET_METHODS = {"add": set.add, "del": set.discard, "clear": set.clear, "pop": set.pop}


def write_set(target, events: tuple) -> None:
    """Replay a set's changes with set's own methods: single items added and discarded, items added
    from an iterable (set.update from a tuple adds them one by one, as eager's iterable did), a dict's
    keys (update from an exact dict sizes the table first: a dict of the same keys does the same), and
    merges with another set (the operand itself: the table copies or follows its slots)."""
    for op, *args in events:
        if op in ("add", "del"):
            method = _SET_METHODS[op]
            for key in args:
                method(target, key)
        elif op == "items":
            set.update(target, args[0])
        elif op == "dict_keys":
            set.update(target, dict.fromkeys(args[0]))
        elif op == "merge":
            getattr(set, args[0])(target, args[1])
        else:
            _SET_METHODS[op](target)


def _shadows_data_descriptor(obj, name) -> bool:
    """Whether `name` is a data descriptor of type(obj) other than a slot (a property...): the trace
    held such an attribute only when the program wrote it into the instance's `__dict__` itself.
    (Namespaces read as type keeps them: a metaclass's `__dict__` property is the program's code.)"""
    attr = class_dict_lookup(type(obj), name, _ABSENT)
    if attr is _ABSENT:
        return False
    kind = type(attr)     # (CPython's test: the type's MRO has __set__ or __delete__)
    return kind is not types.MemberDescriptorType and \
        any("__set__" in class_namespace(k) or "__delete__" in class_namespace(k) for k in class_mro(kind))


_ABSENT = object()


def set_instance_attr(obj, name, value) -> None:
    """An attribute the trace set, written back as it was written: through `object.__setattr__` (the
    instance dict, or a slot), or into the instance's `__dict__` when a property of the class has the
    name (object.__setattr__ would call the property's setter)."""
    if _shadows_data_descriptor(obj, name):
        object.__getattribute__(obj, "__dict__")[name] = value
    else:
        object.__setattr__(obj, name, value)


def del_instance_attr(obj, name) -> None:
    if _shadows_data_descriptor(obj, name):
        del object.__getattribute__(obj, "__dict__")[name]
    else:
        object.__delattr__(obj, name)
