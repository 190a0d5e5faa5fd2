"""Dicts (incl. OrderedDict and defaultdict) and sets: contents live in SideEffects."""
from __future__ import annotations

import collections
import dataclasses
import enum
import types

from bytecode import Instr

from ...guards.guard import Guard
from ...guards.source import AttrSource, is_literal
from ...probe import is_c_level, plain_hash
from .. import exception_state, reads
from ..graph_break import Unsupported, user_error
from ..signals import UserException
from ..reads import class_lookup
from ..write_back import rebuilt_dict
from .base import (
    NOT_IMPLEMENTED,
    NotConstant,
    VariableTracker,
    check_modelled_arguments,
    compare_equal,
    families,
    python_value,
)
from .constant import const
from .iterators import ContainerIteratorVariable, StopIterationSignal, key_layout, next_of
from .lists import TupleVariable, for_each_item
from .misc import ExceptionVariable
from .tensor import SymNodeVariable, TensorVariable


def _hashes_plainly(value, depth: int = 3) -> bool:
    """`plain_hash`, also for enum members: Enum's own `__hash__` (the hash of the member's name) is
    pure Python of the standard library, which the trace runs as eager's lookups do."""
    if type(value) in (tuple, frozenset):
        return depth > 0 and len(value) <= 16 and all(_hashes_plainly(item, depth - 1) for item in value)
    if isinstance(value, enum.Enum) and type(value).__hash__ is enum.Enum.__hash__ and \
            is_c_level(type(value).__eq__):
        return True
    return plain_hash(value)


def hashable_key(tx, var):
    """The Python key a tracker stands for in a dict or set (constants, or identity for objects)."""
    if var.is_python_constant():
        value = var.as_python_constant()
        if not _hashes_plainly(value):
            # a class whose metaclass defines __hash__/__eq__: eager runs them at every lookup
            raise Unsupported("python_protocol", what=f"a {type(value).__name__} key with its own __hash__ or __eq__")
        try:
            hash(value)
            return value
        except TypeError:
            pass
    if isinstance(var, SetVariable) and var.cls is frozenset:
        return _frozenset_key(tx, var)
    if isinstance(var, TensorVariable):
        return ("__tensor__", var.proxy.node)
    if isinstance(var, SymNodeVariable):
        return var.evaluate()   # a symbolic number hashes as its value: specialized, with a guard
    if isinstance(var, TupleVariable):
        # a tuple hashes and compares by its items (two tuples built apart are one key), unless a
        # subclass (a named tuple) has its own __hash__ or __eq__
        cls = var.python_type()
        if cls is not tuple and any(class_lookup(tx, cls, name)[0] is not tuple.__dict__[name]
                                    for name in ("__hash__", "__eq__")):
            raise Unsupported("non_constant_value", what=f"a {cls.__name__} key with its own __hash__ or __eq__")
        return ("__tuple__", tuple(hashable_key(tx, item) for item in var.get_items(tx)))
    kind = var.python_type()
    if class_lookup(tx, kind, "__hash__")[0] is None:   # (guarded: a class may gain a __hash__ later)
        raise user_error(TypeError(f"unhashable type: '{kind.__name__}'"))    # a list, dict, set...
    if isinstance(var, families.UserDefinedObjectVariable) and any(
            class_lookup(tx, var.cls, name)[0] is not object.__dict__[name] for name in ("__eq__", "__hash__")):
        # a lookup would run the class's own __hash__/__eq__ (and match keys of other types)
        raise Unsupported("non_constant_value", what=f"a {var.cls.__name__} key with its own __hash__ or __eq__")
    if getattr(var, "value", None) is not None and isinstance(var, families.UserDefinedObjectVariable):
        var.guard_identity(tx)
        return ("__object__", id(var.value))     # hashed by identity: the real object's
    if var.source is not None:
        return ("__source__", var.source)
    return ("__id__", id(var))


def _frozenset_key(tx, var):
    """A frozenset made while tracing hashes and compares by its items, as the real one does: the
    real frozenset it equals when made of constants (and of such frozensets)."""
    keys = {i: hashable_key(tx, i) for i in var.items(tx)}
    if all(i.is_python_constant() or (isinstance(i, SetVariable) and isinstance(k, frozenset))
           for i, k in keys.items()):
        return frozenset(keys.values())
    return ("__frozenset__", frozenset(keys.values()))


def member_key(tx, var):
    """The key `x in s`, `s.remove(x)` and `s.discard(x)` look up: a set `x` (unhashable) as the
    frozenset of its items, as CPython's set does."""
    if isinstance(var, SetVariable) and var.cls is not frozenset and issubclass(var.python_type(), set):
        return _frozenset_key(tx, var)
    return hashable_key(tx, var)


def store_keyed(tx, container, contents, *, moved=False, clear=False, event=None) -> None:
    """Store the new contents of a dict or set; a change of size (or a key moved) changes its key layout.
    For a container of the program, the change of its keys is recorded as an event the write-back
    replays (write_back.py), and for a dict made here, the rebuilt one (its holes): `event` when given
    (a pop, a move, a merge), else the keys deleted and added, found by comparing the contents."""
    effects = tx.output.side_effects
    contents = tuple(contents)
    old = effects.get(container)
    before = len(old)
    if isinstance(container, SetVariable) and container.small_history(tx) and \
            (event is not None and event[0] == "merge" or not _all_small_hashes(contents)):
        effects.track(("set small hashes", container), False)   # (a merge copies the operand's slots)
    if container.source is not None or isinstance(container, DictVariable):
        for e in [event] if event is not None else [("clear",)] if clear else _key_changes(tx, old, contents):
            effects.record_key_event(container, e)
    effects.store(container, contents)
    if not clear and (moved or len(contents) != before):
        effects.track(("key layout", container), key_layout(tx, container) + 1)


def _key_changes(tx, old, new) -> list:
    """The events turning the keys of contents `old` into those of `new`: deletions, then additions
    in their order (a dict's (key, value) pairs or a set's items)."""
    if len(new) >= len(old) and new[:len(old)] == old:     # keys only added (at C speed: a loop adding)
        return [("add", entry[0] if type(entry) is tuple else entry) for entry in new[len(old):]]

    def keyed(contents):
        return {hashable_key(tx, entry[0] if type(entry) is tuple else entry): entry for entry in contents}
    before, after = keyed(old), keyed(new)
    events = [("del", entry[0] if type(entry) is tuple else entry) for k, entry in before.items() if k not in after]
    events += [("add", entry[0] if type(entry) is tuple else entry) for k, entry in after.items() if k not in before]
    return events


def _merges_tables(tx, var) -> bool:
    """Whether dict.update(var) merges `var`'s table into the dict's (a dict, or a dict subclass
    iterating as dict does), rather than adding its items one by one."""
    try:
        cls = var.python_type()
    except Unsupported:
        return False
    return isinstance(cls, type) and issubclass(cls, dict) and class_lookup(tx, cls, "__iter__")[0] is dict.__iter__


def is_other_mapping(var) -> bool:
    """A mapping that is not a dict tracker: `dict(m)`, `d.update(m)` and `f(**m)` read it through
    its keys() and __getitem__."""
    return not isinstance(var, DictVariable) and hasattr(var.python_type(), "keys")


def mapping_as_dict(tx, mapping) -> "DictVariable":
    """A new dict of a mapping's items, read as CPython's dict merge does: the list of
    `mapping.keys()`, then `mapping[key]` for each key."""
    if _merges_tables(tx, mapping):
        # a dict subclass iterating as dict does is merged table to table: its own keys() and
        # __getitem__ are never called (CPython's dict_merge fast path)
        store = families.dict_store(tx, mapping)
        if store is not None:
            return DictVariable.create(tx, list(store.pairs(tx)))
        if mapping.python_type() is not dict:
            raise Unsupported("python_protocol", what=f"merging {mapping.describe()} as a dict")
        # (a plain dict shown otherwise, an object's __dict__: its keys() and [] are dict's own)
    keys = tx.unpack_iterable(tx.call(tx.getattr(mapping, "keys"), [], {}))
    pairs = {}
    for key in keys:
        pairs[hashable_key(tx, key)] = (key, tx.getitem(mapping, key))
    return DictVariable.create(tx, list(pairs.values()))


@dataclasses.dataclass(frozen=True, eq=False)
class UnreadValue:
    """A value of a dict read from the program that the trace has not looked at yet: wrapped (and so
    guarded, a tensor made a graph input) only when it is read, so that calls differing only in a value
    the code never reads reuse the graph. Never a tracker: `DictVariable.pairs` wraps every one first."""
    value: object
    source: object
    trusted: bool

    def realize(self, tx):
        return tx.wrap(self.value, self.source, self.trusted)


@dataclasses.dataclass(frozen=True, eq=False)
class DictVariable(VariableTracker):
    """A dict; contents are a tuple of (key tracker, value tracker) pairs in SideEffects. `owner`:
    the object of a dict subclass whose items these are (user_defined.dict_store); `cls` is then
    the builtin base whose methods apply (dict or OrderedDict). A dict read from the program holds
    `UnreadValue`s until its values are read: `lookup` wraps one, `pairs` all (its keys are guarded
    when read). Its key set is guarded only when something depends on it all (`_raw_pairs`, the
    contents read through `SideEffects.get`): until then a lookup of a literal key guards that key's
    presence or absence, and `len()` the length (`_index_of`, `_length`)."""
    cls: type = dict
    default_factory: VariableTracker = None
    owner: VariableTracker = None

    def build_python_value(self, tx, memo):
        if self.cls not in (dict, collections.OrderedDict):
            raise NotConstant(self.describe())
        out = memo[id(self)] = self.cls()     # (an OrderedDict's order is its items')
        for k, v in self.pairs(tx):
            out[python_value(tx, k, memo)] = python_value(tx, v, memo)
        return out

    def parts(self, tx):
        # (an unread value is nothing the graph made or changed: the dict is rebuilt from its source;
        # the trackers it holds depend on no key the code did not look up)
        pairs = tx.output.side_effects.peek(self)
        attrs = tx.output.side_effects.contents.get(("dict attributes", self), {})
        return tuple(x for pair in pairs for x in pair if not isinstance(x, UnreadValue)) + tuple(attrs.values())

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})   # live: sees changes made while iterating

    @staticmethod
    def create(tx, pairs, cls=dict, default_factory=None, source=None, owner=None):
        var = DictVariable(cls=cls, default_factory=default_factory, source=source, owner=owner)
        tx.output.side_effects.track(var, tuple(pairs))
        if source is None:
            tx.output.side_effects.track(("initial keys", var), tuple(k for k, _ in var._raw_pairs(tx)))
        return var

    def pairs(self, tx):
        raw = self._raw_pairs(tx)
        if any(isinstance(v, UnreadValue) for _, v in raw):
            raw = tuple((k, self._realize(tx, k, v) if isinstance(v, UnreadValue) else v) for k, v in raw)
            tx.output.side_effects.track(self, raw)     # (not a change of the dict: what it held all along)
        return raw

    def _raw_pairs(self, tx):
        return tx.output.side_effects.get(self)     # (guards the key set: the caller may depend on it)

    def _read_value(self, tx, index):
        """The value of the `index`th pair, wrapped now if it was unread."""
        effects = tx.output.side_effects
        k, v = effects.peek(self)[index]
        if isinstance(v, UnreadValue):
            v = self._realize(tx, k, v)
            raw = effects.peek(self)      # (wrapping reads nothing else of this dict)
            tx.output.side_effects.track(self, raw[:index] + ((k, v),) + raw[index + 1:])
        return v

    def _realize(self, tx, key_var, unread):
        """Wrap an unread value. A defaultdict's value guards read `d[k]`, which would add `k` to a
        dict lacking it: its presence is checked first (DICT_HAS_KEY comes before them, the key
        set's guard after)."""
        if issubclass(self.cls, collections.defaultdict) and not unread.trusted:
            if not (key_var.is_python_constant() and is_literal(key_var.as_python_constant())):
                raise Unsupported("python_protocol", what="a defaultdict's value under a key no guard can name")
            tx.output.guards.add(Guard.dict_has_key(self.source, key_var.as_python_constant(), True))
        return unread.realize(tx)

    def var_getattr(self, tx, name):
        if name == "default_factory" and self.owner is None and issubclass(self.cls, collections.defaultdict):
            return self.default_factory if self.default_factory is not None else const(None)
        attrs = tx.output.side_effects.contents.get(("dict attributes", self), {})
        if name in attrs:
            return attrs[name]      # (its instance dict comes before OrderedDict's non-data descriptors)
        real = self._real_ordered_dict(tx)
        if real is not None and not (name.startswith("__") and name.endswith("__")) and \
                not hasattr(collections.OrderedDict, name):
            # an OrderedDict of the program's (a state dict's `_metadata`): its own attributes, the
            # absence of one guarded (reads.instance_attr)
            own = reads.instance_attr(tx, real, self.source, name)
            if own is reads.MISSING:
                raise user_error(AttributeError(f"'collections.OrderedDict' object has no attribute '{name}'"))
            return tx.wrap(own, AttrSource(self.source, name))
        return super().var_getattr(tx, name)

    def _real_ordered_dict(self, tx):
        """The program's OrderedDict this tracker was read from (None: another kind, or made here)."""
        if self.cls is not collections.OrderedDict or self.source is None or self.owner is not None:
            return None
        real = next((value for value, var in tx.output.wrapped_objects.values() if var is self), None)
        return real if type(real) is collections.OrderedDict else None

    def setattr(self, tx, name, value):
        """`d.name = value` on an OrderedDict made in the frame (its instances have a `__dict__`:
        `state_dict()` keeps `_metadata` there), for a name OrderedDict's class does not define; the
        attributes are set when it is rebuilt. A dict of the program's, or any other name, breaks."""
        if self.cls is not collections.OrderedDict or self.source is not None or self.owner is not None or \
                name.startswith("__") and name.endswith("__") or hasattr(collections.OrderedDict, name):
            raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {self.describe()}")
        key = ("dict attributes", self)
        effects = tx.output.side_effects
        effects.track(key, {**effects.contents.get(key, {}), name: value})

    def as_mapping(self, tx) -> dict:
        return {hashable_key(tx, k): (k, v) for k, v in self.pairs(tx)}

    def set_pairs(self, tx, pairs, *, moved=False, clear=False, event=None):
        store_keyed(tx, self, pairs, moved=moved, clear=clear, event=event)

    def python_type(self):
        return self.cls

    def describe(self):
        return self.cls.__name__

    def truth(self, tx):
        return self._length(tx) > 0

    def has_len(self, tx):
        return self._length(tx)

    def _length(self, tx) -> int:
        """The number of keys; of a dict whose key set is not guarded, with a guard on that number only."""
        effects = tx.output.side_effects
        if not effects.keys_unguarded(self):
            return len(self._raw_pairs(tx))
        n = len(effects.peek(self))
        effects.add_guard(Guard.length(self.source, n))
        return n

    def unpack(self, tx):
        return [k for k, _ in self._raw_pairs(tx)]

    def lookup(self, tx, key_var):
        index = self._index_of(tx, key_var)
        return None if index is None else self._read_value(tx, index)

    def _index_of(self, tx, key_var):
        key = hashable_key(tx, key_var)
        effects = tx.output.side_effects
        presence_only = effects.keys_unguarded(self) and key_var.is_python_constant() and is_literal(key)
        if effects.keys_unguarded(self) and not presence_only:
            effects.guard_keys(self)    # (a key the guard could not name: compared with every key)
        index = next((i for i, (k, _) in enumerate(effects.peek(self))
                      if (found := hashable_key(tx, k)) is key or found == key), None)   # (identity, then equality)
        if presence_only:
            effects.add_guard(Guard.dict_has_key(self.source, key, index is not None))
        return index

    def setitem(self, tx, key_var, value):
        mapping = self.as_mapping(tx)
        key = hashable_key(tx, key_var)
        if key in mapping:
            mapping[key] = (mapping[key][0], value)
        else:
            mapping[key] = (key_var, value)
        self.set_pairs(tx, mapping.values())

    def call_method(self, tx, name, args, kwargs):
        ordered = issubclass(self.cls, collections.OrderedDict)
        # only OrderedDict's popitem takes `last`: dict's takes nothing (a dict's popitem(1) is eager's TypeError)
        check_modelled_arguments(self.describe(), name, args, kwargs, _DICT_ARITY if ordered else _PLAIN_DICT_ARITY,
                                 {"update": ("*",), "popitem": ("last",) if ordered else (),
                                  "move_to_end": ("last",)}, minimum=_DICT_MINIMUM, cls=self.python_type())
        merged = name in ("update", "__ior__") and bool(args) and _merges_tables(tx, args[0])
        if name == "update" and args and is_other_mapping(args[0]):
            args = [mapping_as_dict(tx, args[0])]
        if name not in ("__getitem__", "get", "__contains__", "__len__", "keys", "values", "items"):
            pairs = self.pairs(tx)      # (the others read one value at most, or make a live view)
        if name == "__getitem__":
            return self._getitem(tx, args[0])
        if name == "get":
            found = self.lookup(tx, args[0])
            if found is None:
                return args[1] if len(args) > 1 else const(None)
            return found
        if name == "__contains__":
            return const(self._index_of(tx, args[0]) is not None)
        if name == "__len__":
            return const(self._length(tx))
        if name in ("__setitem__",):
            self.setitem(tx, args[0], args[1])
            return const(None)
        if name == "setdefault":
            found = self.lookup(tx, args[0])
            if found is not None:
                return found
            value = args[1] if len(args) > 1 else const(None)
            self.setitem(tx, args[0], value)
            return value
        if name in ("__delitem__", "pop"):
            return self._pop(tx, name, args)
        if name == "popitem":
            return self._popitem(tx, pairs, args, kwargs)
        if name == "update":
            self._update(tx, args, kwargs, merged)
            return const(None)
        if name == "clear":
            self.set_pairs(tx, (), clear=True)
            return const(None)
        if name == "copy":
            return DictVariable.create(tx, pairs, self.cls, self.default_factory)
        if name == "keys":
            return DictViewVariable.create(tx, self, "keys")
        if name == "values":
            return DictViewVariable.create(tx, self, "values")
        if name == "items":
            return DictViewVariable.create(tx, self, "items")
        if name == "__iter__":
            return ContainerIteratorVariable.create(tx, self, "keys")
        if name == "move_to_end" and self.cls is collections.OrderedDict:
            self._move_to_end(tx, args, kwargs)
            return const(None)
        if name == "__ior__" and len(args) == 1 and not kwargs:
            # `d |= other` updates in place from a mapping or pairs, as update() does, and is d
            self.call_method(tx, "update", args, {})
            return self
        if name in ("__or__", "__ror__") and len(args) == 1 and not kwargs:
            other = args[0]
            if not isinstance(other, DictVariable):
                kind = other.python_type()
                if isinstance(kind, type) and issubclass(kind, dict):
                    raise Unsupported("python_protocol", what=f"{self.cls.__name__} | {other.describe()}")
                return NOT_IMPLEMENTED      # not a dict: eager tries the other operand, then TypeError
            # a copy of the left operand made by this dict's class (defaultdict keeps its factory),
            # updated with the right one (`d | od` reaches OrderedDict's __ror__ first)
            left, right = (self, other) if name == "__or__" else (other, self)
            merged = DictVariable.create(tx, left.pairs(tx), self.cls, self.default_factory)
            merged.call_method(tx, "update", [right], {})
            return merged
        if name in ("__eq__", "__ne__") and isinstance(args[0], DictVariable):
            equal = self._equals(tx, args[0])
            return const(equal if name == "__eq__" else not equal)
        return super().call_method(tx, name, args, kwargs)

    def _getitem(self, tx, key_var):
        found = self.lookup(tx, key_var)
        if found is not None:
            return found
        if self.default_factory is not None and not (self.default_factory.is_python_constant()
                                                     and self.default_factory.as_python_constant() is None):
            value = self.default_factory.call_function(tx, [], {})
            self.setitem(tx, key_var, value)
            return value
        if self.cls is not dict and hasattr(self.cls, "__missing__") and self.default_factory is None:
            raise Unsupported("python_protocol", what=f"{self.cls.__name__}.__missing__")
        raise user_error(KeyError(key_var.as_python_constant() if key_var.is_python_constant() else "<key>"))

    def _pop(self, tx, name, args):
        """`del d[k]` and `d.pop(k[, default])`."""
        mapping = self.as_mapping(tx)
        key = hashable_key(tx, args[0])
        if key not in mapping:
            if name == "pop" and len(args) > 1:
                return args[1]
            raise user_error(KeyError(args[0].as_python_constant() if args[0].is_python_constant() else "<key>"))
        value = mapping.pop(key)[1]
        self.set_pairs(tx, mapping.values())
        return value if name == "pop" else const(None)

    def _popitem(self, tx, pairs, args, kwargs):
        if not pairs:
            message = "dictionary is empty" if self.cls is not dict else "popitem(): dictionary is empty"
            raise user_error(KeyError(message))
        last = kwargs.get("last", args[0] if args else const(True)).as_python_constant()
        if last:
            k, v = pairs[-1]
            self.set_pairs(tx, pairs[:-1], event=("popitem", True))
        else:
            k, v = pairs[0]
            self.set_pairs(tx, pairs[1:], event=("popitem", False))
        return TupleVariable((k, v))

    def _update(self, tx, args, kwargs, merged=False) -> None:
        """`merged`: the argument is a dict CPython merges table to table (dict.update sizes the table
        for all its items first), as it does the keywords' dict; an OrderedDict adds them one by one."""
        groups = []
        if args:
            other = args[0]
            if isinstance(other, DictVariable):
                groups.append((other.pairs(tx), merged and other is not self))
            else:
                # pairs from an iterable go in one at a time (a generator may read this dict)
                count = [0]

                def add_pair(item):
                    if item.is_python_constant() and type(item.as_python_constant()) in (int, float, bool,
                                                                                          type(None)):
                        raise user_error(TypeError("cannot convert dictionary update sequence element "
                                                   f"#{count[0]} to a sequence"))
                    pair = tx.unpack_iterable(item)
                    if len(pair) != 2:
                        raise user_error(ValueError(f"dictionary update sequence element #{count[0]} has "
                                                    f"length {len(pair)}; 2 is required"))
                    count[0] += 1
                    mapping = self.as_mapping(tx)
                    key = hashable_key(tx, pair[0])
                    mapping[key] = (mapping[key][0], pair[1]) if key in mapping else tuple(pair)
                    self.set_pairs(tx, mapping.values())
                for_each_item(tx, other, add_pair)
        if kwargs:
            groups.append(([(const(k), v) for k, v in kwargs.items()], True))
        for pairs, merge in groups:
            mapping = self.as_mapping(tx)
            for k, v in pairs:
                key = hashable_key(tx, k)
                mapping[key] = (mapping[key][0], v) if key in mapping else (k, v)
            merge = merge and pairs and self.cls is not collections.OrderedDict
            self.set_pairs(tx, mapping.values(), event=("update", tuple(k for k, _ in pairs)) if merge else None)

    def _move_to_end(self, tx, args, kwargs) -> None:
        mapping = self.as_mapping(tx)
        key = hashable_key(tx, args[0])
        if key not in mapping:
            raise user_error(KeyError(args[0].as_python_constant() if args[0].is_python_constant() else "<key>"))
        entry = mapping.pop(key)
        last = kwargs.get("last", args[1] if len(args) > 1 else const(True)).as_python_constant()
        items = list(mapping.values())
        items = items + [entry] if last else [entry] + items
        self.set_pairs(tx, items, moved=True, event=("move", entry[0], bool(last)))

    def _equals(self, tx, other) -> bool:
        a, b = self.as_mapping(tx), other.as_mapping(tx)
        equal = a.keys() == b.keys() and all(compare_equal(tx, a[k][1], b[k][1]) for k in a)
        if equal and self.cls is collections.OrderedDict and other.cls is collections.OrderedDict:
            equal = list(a) == list(b)      # two OrderedDicts compare in order too
        return equal

    def as_python_constant(self):
        raise NotConstant(self.describe())

    def reconstruct_method_call(self, codegen, name) -> None:
        """`self.<name>()` rebuilt (a view, an iterator); for the items of a dict-subclass object,
        called on the object itself through the builtin base's method (as traced: the subclass's
        overrides never ran), so that it reads the object, not a copy."""
        if self.owner is None:
            codegen.reconstruct(self)
            codegen.load_method(name)
            codegen.call_method(0)
            return
        codegen.load_callable(getattr(self.cls, name))
        codegen.reconstruct(self.owner)
        codegen.call(1)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        effects = codegen.tx.output.side_effects
        pairs = effects.get(self)    # (a dict with unread values has a source)
        events = effects.key_events(self) if self.cls is not collections.OrderedDict else []
        replayed = any(e[0] in ("del", "popitem") for e in events)
        if replayed:
            # keys deleted since it was made left holes in its entries, where an iterator the program
            # takes over it counts its place: made with its first keys, then the changes replayed
            # (an OrderedDict iterates its linked list, which has no holes)
            codegen.load_callable(rebuilt_dict)
            pairs = [(k, const(None)) for k in effects.contents[("initial keys", self)]]
        if self.cls is not dict:
            codegen.load_callable(self.cls)
            if self.default_factory is not None:
                codegen.reconstruct(self.default_factory)
        for k, v in pairs:
            codegen.reconstruct(k)
            codegen.reconstruct(v)
        codegen.build_map(len(pairs))
        if self.cls is not dict:
            codegen.call(2 if self.default_factory is not None else 1)
        if replayed:
            effects.codegen_key_events(codegen, self)
            final = effects.get(self)
            for k, v in final:
                codegen.reconstruct(k)
                codegen.reconstruct(v)
            codegen.build_map(len(final))
            codegen.call(3)
        for name, value in effects.contents.get(("dict attributes", self), {}).items():
            codegen.append(Instr("COPY", 1))     # the new OrderedDict's attributes (setattr above)
            codegen.reconstruct(value)
            codegen.append(Instr("SWAP", 2))
            codegen.store_attr(name)


@dataclasses.dataclass(frozen=True, eq=False)
class DictViewVariable(VariableTracker):
    """dict.keys()/values()/items(): a live view over a DictVariable."""
    dict_var: DictVariable = None
    kind: str = "keys"

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})   # live: sees changes made while iterating

    @staticmethod
    def create(tx, dict_var, kind):
        return DictViewVariable(dict_var=dict_var, kind=kind)

    def python_type(self):
        return type(getattr(self.dict_var.cls(), self.kind)())

    def unpack(self, tx):
        pairs = self.dict_var.pairs(tx)
        if self.kind == "keys":
            return [k for k, _ in pairs]
        if self.kind == "values":
            return [v for _, v in pairs]
        return [TupleVariable((k, v)) for k, v in pairs]

    def truth(self, tx):
        return self.dict_var.truth(tx)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return const(self.dict_var.has_len(tx))
        if name == "__contains__":
            if self.kind == "keys":
                return const(self.dict_var.lookup(tx, args[0]) is not None)
            if self.kind == "items":
                # CPython looks the key up, then compares the value found (identity first)
                item = args[0]
                if not issubclass(item.python_type(), tuple):
                    return const(False)
                parts = tx.unpack_iterable(item)
                if len(parts) != 2:
                    return const(False)
                found = self.dict_var.lookup(tx, parts[0])
                return const(found is not None and compare_equal(tx, found, parts[1]))
            return const(any(compare_equal(tx, i, args[0]) for i in self.unpack(tx)))
        if name == "__iter__":
            return ContainerIteratorVariable.create(tx, self.dict_var, self.kind)
        if name in ("__eq__", "__ne__") and self.kind in ("keys", "items"):
            equal = self._set_equal(tx, args[0])
            if equal is None:
                return const(NotImplemented)
            return const(equal if name == "__eq__" else not equal)
        if name in _VIEW_SET_OPERATORS and self.kind in ("keys", "items") and len(args) == 1 and not kwargs:
            return self._set_operator(tx, name, args[0])
        if name in ("__lt__", "__le__", "__gt__", "__ge__") and self.kind in ("keys", "items") and len(args) == 1:
            return self._set_order(tx, name, args[0])
        return super().call_method(tx, name, args, kwargs)

    def _set_order(self, tx, name, other):
        """`view < other` and friends, as CPython's dictview_richcompare: NotImplemented unless the other
        is a set or a keys/items view; else the lengths first, then every item of the smaller side
        looked up in the other (an items view compares the value it finds)."""
        if isinstance(other, DictViewVariable) and other.kind in ("keys", "items"):
            pass
        elif isinstance(other, SetVariable):
            pass
        else:
            kind = other.python_type()
            if isinstance(kind, type) and issubclass(kind, (set, frozenset)):
                raise Unsupported("python_protocol", what=f"comparing {self.kind}() with {other.describe()}")
            return NOT_IMPLEMENTED
        mine, theirs = self.unpack(tx), _members(tx, other)
        if name == "__lt__" and len(mine) < len(theirs) or name == "__le__" and len(mine) <= len(theirs):
            inner, outer = mine, other
        elif name == "__gt__" and len(mine) > len(theirs) or name == "__ge__" and len(mine) >= len(theirs):
            inner, outer = theirs, self
        else:
            return const(False)
        for item in inner:
            if not outer.call_method(tx, "__contains__", [item], {}).truth(tx):
                return const(False)
        return const(True)

    def _members(self, tx):
        """{key: item}: the keys, or the (key, value) tuples of constant values (an items view's
        tuples compare their values: a tensor's `==` is not a truth value)."""
        if self.kind == "keys":
            return {hashable_key(tx, k): k for k, _ in self.dict_var.pairs(tx)}
        pairs = self.dict_var.pairs(tx)
        if not all(v.is_python_constant() for _, v in pairs):
            raise Unsupported("python_protocol",
                              what="a set operation on items() holding values that are not constants")
        return {hashable_key(tx, t): t for t in (TupleVariable((k, v)) for k, v in pairs)}

    def _set_operator(self, tx, name, other):
        """`view op other` / `other op view` (a set answers NotImplemented for a view): a new set, as
        CPython builds it. Its iteration order is known where CPython builds it by additions alone
        (an intersection; a union onto a small dict's keys or an items view; items ^ items)."""
        reflected = name.startswith("__r")
        op = "__" + name[3:] if reflected else name
        mine = self._members(tx)
        if isinstance(other, DictViewVariable) and other.kind in ("keys", "items"):
            theirs = other._members(tx)
        else:
            theirs = _keyed(tx, _members(tx, other))
        order = _UNKNOWN_ORDER
        if op == "__and__":
            # CPython iterates the smaller view (or this view, against a larger exact set) and adds
            # the items the other holds
            walk, probe = theirs, mine
            if isinstance(other, SetVariable) and other.cls is set and len(mine) <= len(theirs):
                walk, probe = mine, theirs
            elif isinstance(other, DictViewVariable) and len(theirs) > len(mine):
                walk, probe = mine, theirs
            result = [item for k, item in walk.items() if k in probe]
            order = _INSERTION_ORDER
        elif op == "__xor__" and isinstance(other, DictViewVariable) and self.kind == other.kind == "items":
            # the other's items this one lacks, then this one's the other lacks (order known)
            left, right = (theirs, mine) if reflected else (mine, theirs)
            result = [item for k, item in right.items() if k not in left] + \
                     [item for k, item in left.items() if k not in right]
            order = _INSERTION_ORDER
        else:
            left, right = (theirs, mine) if reflected else (mine, theirs)
            keys = getattr(set(left), op)(set(right))
            result = [left[k] for k in left if k in keys] + [right[k] for k in right if k in keys and k not in left]
            # a union onto this view built by additions (an items view, or the keys of a dict too
            # small for CPython to presize the set), with the other's items added one by one
            if op == "__or__" and not reflected and not isinstance(other, (SetVariable, DictVariable)) and \
                    (self.kind == "items" or len(mine) < 5):
                order = _INSERTION_ORDER
        # (made from this view by additions; a set operand merged into it is copied when it is empty)
        return SetVariable.create(tx, result, order=order, copies=[other] if isinstance(other, SetVariable) else [])

    def _set_equal(self, tx, other):
        """keys()/items() compare as sets with any set-like (None: not a set-like, NotImplemented)."""
        if not (isinstance(other, DictViewVariable) and other.kind in ("keys", "items") or
                isinstance(other, SetVariable)):
            return None
        # as CPython's dictview_richcompare: equal lengths, then each of this view's items in the other
        mine = self.unpack(tx)
        if len(mine) != len(_members(tx, other)):
            return False
        return all(other.call_method(tx, "__contains__", [item], {}).truth(tx) for item in mine)

    def reconstruct(self, codegen):
        self.dict_var.reconstruct_method_call(codegen, self.kind)


@dataclasses.dataclass(frozen=True, eq=False)
class MappingProxyVariable(VariableTracker):
    """types.MappingProxyType(d) of a dict tracker: a live, read-only view of d."""
    dict_var: DictVariable = None

    def python_type(self):
        return types.MappingProxyType

    def describe(self):
        return "mappingproxy"

    def parts(self, tx):
        return (self.dict_var,)

    def unpack(self, tx):
        return [k for k, _ in self.dict_var.pairs(tx)]

    def iterate(self, tx):
        return ContainerIteratorVariable.create(tx, self.dict_var, "keys")

    def has_len(self, tx):
        return self.dict_var.has_len(tx)

    def truth(self, tx):
        return self.dict_var.truth(tx)

    def call_method(self, tx, name, args, kwargs):
        if name in ("__getitem__", "get", "__contains__", "__len__", "keys", "values", "items", "__iter__", "copy"):
            return self.dict_var.call_method(tx, name, args, kwargs)
        if name in ("__eq__", "__ne__", "__or__") and len(args) == 1 and not kwargs:
            # compared (and merged) as the mapping it shows
            other = args[0].dict_var if isinstance(args[0], MappingProxyVariable) else args[0]
            return self.dict_var.call_method(tx, name, [other], {})
        if name in ("__setitem__", "__delitem__"):
            what = "assignment" if name == "__setitem__" else "deletion"
            raise user_error(TypeError(f"'mappingproxy' object does not support item {what}"))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.load_callable(types.MappingProxyType)
        codegen.reconstruct(self.dict_var)
        codegen.call(1)


def make_mapping_proxy(tx, mapping, /):
    """`types.MappingProxyType(mapping)` (an Enum class's `__members__`), or None when not modelled (a
    mapping of another kind, a dict subclass's object: its own `__getitem__` would answer)."""
    if isinstance(mapping, DictVariable) and mapping.cls in (dict, collections.OrderedDict) and mapping.owner is None:
        return MappingProxyVariable(dict_var=mapping)
    return None


_SET_OPERATORS = ("__or__", "__and__", "__sub__", "__xor__")
# what the operators and comparisons of a set take (a dict view answers the reflected one)
_SET_OPERANDS = (set, frozenset)
_SET_COMPARISONS = ("__le__", "__ge__", "__lt__", "__gt__", "__eq__", "__ne__")
_VIEW_SET_OPERATORS = ("__and__", "__or__", "__sub__", "__xor__", "__rand__", "__ror__", "__rsub__", "__rxor__")
_INSERTION_ORDER, _REAL_ORDER, _UNKNOWN_ORDER = "insertion", "real", "unknown"
# methods that do not change the set
_READS_ONLY = {"__contains__", "__len__", "__iter__", "copy", "isdisjoint", "issuperset",
                          "issubset", "union", "intersection", "difference", "symmetric_difference", "__or__",
                          "__and__", "__sub__", "__xor__", "__le__", "__ge__", "__lt__", "__gt__", "__eq__",
                          "__ne__"}
_SET_INPLACE = ("__ior__", "__iand__", "__isub__", "__ixor__")
_SET_UPDATES = ("difference_update", "intersection_update", "symmetric_difference_update")


@dataclasses.dataclass(frozen=True, eq=False)
class SetVariable(VariableTracker):
    """A set or frozenset; contents are a tuple of trackers in SideEffects."""
    cls: type = set

    def build_python_value(self, tx, memo):
        # a real set iterates (and reprs) in its own table's order: taken only when that is the order
        # the program's set has (its history may have left another table: `{1, 8}` after removals)
        values = [python_value(tx, i, memo) for i in self.ordered_items(tx)]
        real = self.cls(values)
        if [id(v) for v in real] != [id(v) for v in values]:
            raise Unsupported("python_protocol", what="the real value of a set whose table is not what a new "
                                                      "set of its items has")
        return real

    def parts(self, tx):
        return tuple(tx.output.side_effects.get(self))

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})   # live: sees changes made while iterating

    @staticmethod
    def create(tx, items, cls=set, source=None, order=None, copies=None):
        """`order`: how its iteration order is known (see `ordered_items`): a set read from the
        program keeps the real one; a new one is built item by item unless it says otherwise.
        `copies`: for a new set made otherwise, the sets whose slots CPython may have copied into it
        (else it was made by additions): its slots are known when theirs are (`small_history`)."""
        var = SetVariable(cls=cls, source=source)
        unique = {}
        for item in items:
            unique.setdefault(hashable_key(tx, item), item)
        tx.output.side_effects.track(var, tuple(unique.values()))
        var.set_order(tx, order or (_REAL_ORDER if source is not None else _INSERTION_ORDER))
        if source is None and _all_small_hashes(unique.values()) and (
                order in (None, _INSERTION_ORDER) or
                (copies is not None and all(_home_slots(tx, c) for c in copies))):
            tx.output.side_effects.track(("set small hashes", var), True)
        return var

    def small_history(self, tx) -> bool:
        """Made here, and every item it ever held is a constant of hash 0..7 (see `_all_small_hashes`):
        each sits in the slot of its hash, whatever else happened to the set."""
        return tx.output.side_effects.contents.get(("set small hashes", self), False)

    def _pop_choice(self, tx):
        """The item pop() takes: CPython's pop searches from where the last pop left off (the set's
        `finger`, which clear() keeps), not from the first slot. Known for a set made here: 0 until a
        pop, then the popped item's slot plus one where slots are known (small hashes)."""
        effects = tx.output.side_effects
        finger = effects.contents.get(("set finger", self), 0 if self.source is None else None)
        items = self.items(tx)
        if finger == 0:
            first = self.ordered_items(tx)[0]
        elif finger is not None and self.small_history(tx):
            ordered = _order_by_small_hashes(items)
            first = next((i for i in ordered if hash(i.as_python_constant()) >= finger), ordered[0])
        else:
            raise Unsupported("python_protocol", what="set.pop of a set whose pop position is not known "
                                                      "(CPython's pop starts where the last one stopped)")
        slot = hash(first.as_python_constant()) if self.small_history(tx) else None
        effects.track(("set finger", self), None if slot is None else slot + 1)
        return first

    def items(self, tx):
        """The items, in the order they were added (the model's order, not CPython's)."""
        return tx.output.side_effects.get(self)

    def set_order(self, tx, order):
        tx.output.side_effects.track(("set order", self), order)

    def ordered_items(self, tx):
        """The items in the order CPython iterates them. CPython's order comes from the hash table,
        which depends on the set's whole history. Known exactly: a set read from the program and not
        changed since (its real order), or one only ever added to item by item (BUILD_SET, set(list),
        a comprehension, add()): a real set built the same way has that order. Otherwise unknown,
        and the order cannot be observed in the graph."""
        items = self.items(tx)
        order = tx.output.side_effects.contents.get(("set order", self), _INSERTION_ORDER)
        if len(items) < 2 or order == _REAL_ORDER:
            return items
        if order == _INSERTION_ORDER:
            try:
                values = [i.as_python_constant() for i in items]
            except NotConstant:
                values = None
            if values is not None:
                real = set()
                for v in values:
                    real.add(v)
                position = {id(v): n for n, v in enumerate(real)}
                if len(position) == len(values):
                    return tuple(sorted(items, key=lambda i: position[id(values[items.index(i)])]))
        if self.small_history(tx):
            return _order_by_small_hashes(items)
        raise Unsupported("python_protocol", what="the iteration order of a set whose history is not only "
                                                  "additions (CPython's hash-table order is not modelled)")

    def keys(self, tx):
        return {hashable_key(tx, i): i for i in self.items(tx)}

    def _merge_event(self, tx, name, other, items):
        """The write-back event of merging `other` into this set (see write_back.write_set), for a set
        of the program. A set operand (or this set itself) is replayed with the operand: where the items
        land follows its slots, which only the real object has. Its rebuilt value is the object it was
        here when it is a constant, a set of the program this frame does not change, or a set made here
        by additions alone; another one cannot be replayed exactly and the operation is not traced."""
        if self.source is None:
            if _is_set(other) and not self.items(tx) and not _home_slots(tx, other):
                # merged into an empty set, the operand's slots may be copied
                tx.output.side_effects.track(("set small hashes", self), False)
            return None
        if other is self:
            return ("merge", name, "self", None)
        if not _is_set(other):
            if isinstance(other, DictVariable) and other.cls is dict and other.owner is None:
                return ("dict_keys", tuple(items))     # an exact dict sizes the set's table first
            return ("items", tuple(items))
        effects = tx.output.side_effects
        if isinstance(other, SetVariable):
            order = effects.contents.get(("set order", other), _INSERTION_ORDER)
            exact = (other.source is not None and other not in effects.mutated and order == _REAL_ORDER) or \
                (other.source is None and (order == _INSERTION_ORDER or other.small_history(tx)))
            if not exact:
                raise Unsupported("python_protocol", what=f"{self.cls.__name__}.{name} with a set whose slots "
                                                          "are not known (CPython's hash-table order is not modelled)")
            return ("merge", name, other, effects.get(other))
        if other.is_python_constant():
            return ("merge", name, other, None)
        raise Unsupported("python_protocol", what=f"{self.cls.__name__}.{name} with {other.describe()}")

    def python_type(self):
        return self.cls

    def unpack(self, tx):
        return list(self.ordered_items(tx))

    def truth(self, tx):
        return bool(self.items(tx))

    def as_python_constant(self):
        raise NotConstant("set")

    def call_method(self, tx, name, args, kwargs):
        keys = self.keys(tx)
        if name == "__hash__" and not args and not kwargs and self.cls in (set, frozenset):
            if self.cls is set:
                raise user_error(TypeError("unhashable type: 'set'"))
            if all(v.is_python_constant() for v in keys.values()):   # (no order: a frozenset's hash has none)
                return const(hash(frozenset(v.as_python_constant() for v in keys.values())))
        check_modelled_arguments(self.cls.__name__, name, args, kwargs, _SET_ARITY, minimum=_SET_MINIMUM,
                                 cls=self.cls)
        # pop() takes the first item in CPython's order: read while that order is still known
        first = self._pop_choice(tx) if name == "pop" and self.items(tx) else None
        if name not in _READS_ONLY:
            # a change: additions item by item keep an order built so; anything else (a removal
            # leaves a dummy slot, a merge presizes the table, a real set's history is unknown) does not
            added = name == "add" or (name == "update" and not any(
                _is_set(a) or isinstance(a, (DictVariable, DictViewVariable)) for a in args))
            current = tx.output.side_effects.contents.get(("set order", self), _INSERTION_ORDER)
            if name == "clear":
                self.set_order(tx, _INSERTION_ORDER)
            elif not (added and current == _INSERTION_ORDER) and current != _UNKNOWN_ORDER:
                self.set_order(tx, _UNKNOWN_ORDER)
        if name == "add":
            keys.setdefault(hashable_key(tx, args[0]), args[0])
            store_keyed(tx, self, keys.values())
            return const(None)
        if name in ("discard", "remove"):
            k = member_key(tx, args[0])
            if k not in keys and name == "remove":
                # the KeyError carries the very key object (a set key coerced to a frozenset too)
                exc = ExceptionVariable(cls=KeyError, args=(args[0],))
                exception_state.chain(tx, exc)
                raise UserException(exc)
            keys.pop(k, None)
            store_keyed(tx, self, keys.values())
            return const(None)
        if name == "__contains__":
            return const(member_key(tx, args[0]) in keys)
        if name == "__len__":
            return const(len(keys))
        if name == "update":
            for other in args:
                if _lazy_operand(other):
                    # consumed item by item, each added first: a generator may read this set
                    def add(item):
                        now = self.keys(tx)
                        now.setdefault(hashable_key(tx, item), item)
                        store_keyed(tx, self, now.values(), event=self._merge_event(tx, "update", other, [item]))
                    for_each_item(tx, other, add)
                    keys = self.keys(tx)
                    continue
                items = _members(tx, other)
                for item in items:
                    keys.setdefault(hashable_key(tx, item), item)
                store_keyed(tx, self, keys.values(), event=self._merge_event(tx, "update", other, items))
            return const(None)
        if name == "__iter__":
            return ContainerIteratorVariable.create(tx, self, "set")
        if name in _SET_UPDATES and self.cls is set and self.source is None and not kwargs and \
                (name != "symmetric_difference_update" or len(args) == 1):
            # a set made here (a program's set is replayed by the write-back item by item, while CPython
            # may resize the table at the end and so change its order); each operand's items as
            # CPython walks them, the equal item it keeps (see _intersection)
            pool = keys
            for other in args:
                theirs = {} if other is self and name != "intersection_update" else _keyed(tx, _members(tx, other))
                if name == "difference_update":
                    pool = {} if other is self else {k: v for k, v in pool.items() if k not in theirs}
                elif name == "intersection_update":
                    pool = _intersection(pool, False, _is_set(other), theirs)
                else:
                    pool = {} if other is self else {**{k: v for k, v in pool.items() if k not in theirs},
                                                     **{k: v for k, v in theirs.items() if k not in pool}}
            store_keyed(tx, self, pool.values())
            return const(None)
        if name in _SET_INPLACE and self.cls is not frozenset:
            # `s |= t` (and friends, with a set or a keys view) changes s itself and gives s;
            # another operand answers NotImplemented, and `s = s | t` raises as in eager
            if not issubclass(args[0].python_type(), _SET_OPERANDS):
                return NOT_IMPLEMENTED
            theirs = _keyed(tx, _members(tx, args[0]))
            if name == "__ior__":
                kept = {**keys, **{k: v for k, v in theirs.items() if k not in keys}}
            elif name == "__iand__":
                kept = _intersection(keys, args[0] is self, True, theirs)
            elif name == "__isub__":
                kept = {k: v for k, v in keys.items() if k not in theirs}
            else:   # __ixor__
                kept = {**{k: v for k, v in keys.items() if k not in theirs},
                        **{k: v for k, v in theirs.items() if k not in keys}}
            event = None
            if name != "__isub__" or args[0] is self:
                # (a difference with another set discards item by item, as the events found by
                # comparing say; the others follow the operand's slots, or clear the table)
                event = self._merge_event(tx, name, args[0], None)
            store_keyed(tx, self, kept.values(), event=event)
            return self
        if name in ("isdisjoint", "issuperset") and len(args) == 1 and not _is_set(args[0]):
            # CPython walks a non-set argument and stops at the first item that decides the answer:
            # a generator is left partly consumed
            it = tx.get_iter(args[0])
            while True:
                try:
                    item = next_of(tx, it)
                except StopIterationSignal:
                    return const(True)
                if (hashable_key(tx, item) in keys) == (name == "isdisjoint"):
                    return const(False)
        if name in _SET_OPERATORS + _SET_COMPARISONS and not issubclass(args[0].python_type(), _SET_OPERANDS):
            return NOT_IMPLEMENTED     # `{1} | [2]` raises TypeError; `union` takes any iterable
        if name in ("union", "__or__", "intersection", "__and__", "difference", "__sub__",
                    "symmetric_difference", "__xor__", "issubset", "issuperset", "isdisjoint") + _SET_COMPARISONS:
            others = [_keyed(tx, _members(tx, a)) for a in args]
            result = getattr(set(keys), name)(*[set(o) for o in others])
            if isinstance(result, bool):
                return const(result)
            pool = dict(keys)
            if _SET_METHOD_NAMES.get(name, name) == "intersection":
                # equal items of both sides (1 and 1.0): the result holds the one CPython keeps
                for a, o in zip(args, others):
                    pool = _intersection(pool, a is self and pool is keys, _is_set(a), o)
            for o in others:
                for k, v in o.items():
                    pool.setdefault(k, v)
            # the sets whose slots the result may copy (CPython copies a set into an empty one slot
            # for slot): this one for a union or a difference (the others for a union onto an empty
            # one), the others too for a symmetric difference; an intersection is made by additions
            sets = [a for a in args if _is_set(a)]
            copies = {"union": [self] if keys else [self] + sets, "intersection": [],
                      "difference": [self], "symmetric_difference": [self] + sets}[_SET_METHOD_NAMES.get(name, name)]
            return SetVariable.create(tx, [pool[k] for k in keys if k in result] +
                                      [pool[k] for k in result if k not in keys], self.cls, order=_UNKNOWN_ORDER,
                                      copies=copies)
        if name == "copy":
            if self.cls is frozenset:
                return self     # immutable: the copy is the frozenset itself
            return copied_set(tx, self, self.cls)
        if name == "pop":
            items = self.items(tx)
            if not items:
                raise user_error(KeyError("pop from an empty set"))
            store_keyed(tx, self, [i for i in items if i is not first], event=("pop",))
            return first
        if name == "clear":
            store_keyed(tx, self, (), clear=True)
            return const(None)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        items = codegen.tx.output.side_effects.get(self)
        if len(items) > 1 and codegen.tx.output.side_effects.contents.get(("set order", self)) == _UNKNOWN_ORDER \
                and not self.small_history(codegen.tx):
            # a set built anew item by item would iterate in another order than the program's
            raise Unsupported("python_protocol", what="rebuilding a set whose history is not only additions "
                                                      "(CPython's hash-table order is not modelled)")
        if self.cls is frozenset:
            codegen.load_callable(frozenset)
        for item in items:
            codegen.reconstruct(item)
        codegen.build_set(len(items))
        if self.cls is frozenset:
            codegen.call(1)


# the positional arguments each modelled method takes (see check_modelled_arguments)
_DICT_ARITY = {"__getitem__": 1, "get": 2, "__contains__": 1, "__len__": 0, "__setitem__": 2, "setdefault": 2,
               "__delitem__": 1, "pop": 2, "popitem": 1, "update": 1, "clear": 0, "copy": 0, "keys": 0,
               "values": 0, "items": 0, "__iter__": 0, "move_to_end": 2, "__ior__": 1}
_PLAIN_DICT_ARITY = {**_DICT_ARITY, "popitem": 0}
def copied_set(tx, original, cls):
    """A new set (or frozenset) of `original`'s items, as CPython's copy makes it: merged into an empty
    table, slot for slot when both have 8 slots, else item by item in the original's order. A set of
    at most 4 items (no resize either way) so gets the order a set built by adding them in the
    original's order has; a larger one is presized, and its order is not modelled."""
    items = original.items(tx)
    if len(items) <= 4:
        try:
            return SetVariable.create(tx, original.ordered_items(tx), cls, order=_INSERTION_ORDER)
        except Unsupported:
            pass
    return SetVariable.create(tx, items, cls, order=_UNKNOWN_ORDER)


def _home_slots(tx, var) -> bool:
    """Whether each item of set `var` sits in the slot of its hash (see SetVariable.small_history)."""
    if isinstance(var, SetVariable):
        return var.small_history(tx)
    return var.is_python_constant() and _all_small_hashes(_members(tx, var))


_SET_METHOD_NAMES = {"__or__": "union", "__and__": "intersection", "__sub__": "difference",
                     "__xor__": "symmetric_difference"}


def _all_small_hashes(items) -> bool:
    """Constants whose hashes are distinct and in 0..7. A set that only ever held such items has each
    in the slot of its hash in any table (the smallest has 8 slots): no other key ever took that slot
    first. One item of another hash, now gone, may have: the set `{9, 2}` given 1 puts it in slot 3."""
    try:
        hashes = [hash(i.as_python_constant()) for i in items]
    except (NotConstant, TypeError):
        return False
    return len(set(hashes)) == len(hashes) and all(0 <= h < 8 for h in hashes)


def _order_by_small_hashes(items):
    """The iteration order of a set with a small-hash history (SetVariable.small_history): by hash."""
    return tuple(sorted(items, key=lambda i: hash(i.as_python_constant())))


def _lazy_operand(var) -> bool:
    """An iterable whose items may be computed while they are consumed (a generator, map(), a user's
    iterator): not a container whose items are all there already."""
    if isinstance(var, (SetVariable, DictVariable, DictViewVariable)):
        return False
    try:
        return var.python_type() not in (list, tuple, str, bytes, range)
    except Unsupported:
        return True


def _members(tx, var):
    """The items of an operand whose order does not matter (a set's: never its iteration order)."""
    return var.items(tx) if isinstance(var, SetVariable) else tx.iterate_all(var)


def _keyed(tx, items) -> dict:
    """{key: item} of an operand's items, the first of equal items kept (as a set built from them)."""
    keyed = {}
    for item in items:
        keyed.setdefault(hashable_key(tx, item), item)
    return keyed


def _intersection(mine: dict, same: bool, is_set: bool, theirs: dict) -> dict:
    """{key: item} of CPython's `set_intersection(mine, other)`: it walks the other operand (a set only
    when it is not larger than this one, else this one) and adds each walked item the other holds, so
    of two equal items (1 and 1.0) the walked side's object is the one kept."""
    if same:
        return dict(mine)
    if is_set and len(theirs) > len(mine):
        return {k: v for k, v in mine.items() if k in theirs}
    return {k: v for k, v in theirs.items() if k in mine}


def _is_set(var) -> bool:
    try:
        return issubclass(var.python_type(), (set, frozenset))
    except Unsupported:
        return False


_SET_ARITY = {"__ior__": 1, "__iand__": 1, "__isub__": 1, "__ixor__": 1,
              "add": 1, "discard": 1, "remove": 1, "__contains__": 1, "__len__": 0, "__iter__": 0, "copy": 0,
              "pop": 0, "clear": 0}
_SET_ARITY.update({"issubset": 1, "issuperset": 1, "isdisjoint": 1, "symmetric_difference": 1,
                   "symmetric_difference_update": 1})
_SET_MINIMUM = {"issubset": 1, "issuperset": 1, "isdisjoint": 1, "symmetric_difference": 1,
                "symmetric_difference_update": 1, "__ior__": 1, "__iand__": 1, "__isub__": 1, "__ixor__": 1,
                "add": 1, "discard": 1, "remove": 1, "__contains__": 1}
_DICT_MINIMUM = {"__getitem__": 1, "get": 1, "__contains__": 1, "__setitem__": 2, "setdefault": 1,
                 "__delitem__": 1, "pop": 1, "move_to_end": 1, "__ior__": 1}
