"""Side effects: the current state of mutable Python objects while tracing, and what to replay.

Compile time only. Trackers of mutable objects (lists, dicts, sets, user objects, cells) are
frozen; their contents live here, keyed by the tracker. A mutation stores new contents and, for an
object that existed before the frame, records that it must be written back after the graph runs.
Global and closure-cell writes are recorded the same way. `snapshot()`/`restore()` make
checkpoint/rollback a matter of copying a few dicts whose values are immutable.
`codegen_replay` emits the code that writes the changes back after the graph has run.
"""
from __future__ import annotations

import collections
import dataclasses
import types
from typing import Any, NamedTuple

from bytecode import Instr
import torch
from bytecode.instr import CellVar, FreeVar

from .. import _C
from ..guards.source import ConstSource
from .graph_break import Unsupported
from .reads import MISSING, class_lookup, instance_attr
from .variables.base import VariableTracker
from .variables.dicts import DictVariable, SetVariable
from .variables.iterators import (
    ContainerIteratorVariable,
    DequeIteratorVariable,
    ListIteratorVariable,
    ListSequenceIteratorVariable,
    ResumedLiveIterator,
    advance_list_iterator,
    advanced,
)
from .variables.lists import ListVariable
from .variables.misc import FrameFreeCell, RealCellVariable
from .variables.user_defined import _MISSING, UserDefinedClassVariable, UserDefinedObjectVariable
from .write_back import del_instance_attr, set_instance_attr, write_dict, write_set


class SideEffectsState(NamedTuple):
    """What `SideEffects.snapshot()` saves for a checkpoint."""
    contents: dict
    mutated: dict
    globals: dict
    cells: dict
    deleted_globals: set
    counter: int
    deferred_key_guards: dict
    calls: tuple


def _gone_entries(old, new):
    """The entries (items, (key, value) pairs, attribute values) of contents `old` that `new` lacks.
    Ends added or taken (append, pop, popleft...) are found by comparing slices at C speed: a store
    happens on every such change, and a set of every entry each time would make a loop quadratic."""
    if isinstance(old, dict):
        return set(old.values()).difference(new.values())
    n, m = len(old), len(new)
    if m >= n and (new[:n] == old or new[m - n:] == old):
        return ()
    if m < n and old[n - m:] == new:
        return old[:n - m]
    if m < n and old[:m] == new:
        return old[m:]
    return set(old).difference(new)


def _dropped_objects(old, new) -> list:
    """The objects (UserDefinedObjectVariables) that contents `old` of a container or object hold and
    `new` does not."""
    objects = [t for entry in _gone_entries(old, new) for t in (entry if type(entry) is tuple else (entry,))
               if isinstance(t, UserDefinedObjectVariable)]
    if objects and isinstance(new, tuple) and new and type(new[0]) is tuple:   # a pair replaced, its key kept
        kept = {id(t) for pair in new for t in pair}
        objects = [t for t in objects if id(t) not in kept]
    return objects


class SideEffects:
    def __init__(self):
        self.contents: dict[Any, Any] = {}    # tracker -> tuple of items / tuple of (k, v) / attr dict
        self.mutated: dict[Any, int] = {}     # pre-existing tracker -> order of its first mutation
        self.globals: dict[str, Any] = {}     # global name -> tracker (pending STORE_GLOBAL)
        self.cells: dict[Any, Any] = {}       # cell tracker -> tracker of its contents
        self.deleted_globals: set = set()
        self.counter = 0
        self.generators: list = []            # GeneratorVariables made while tracing (see lifetimes.py)
        self.unsourced: set = set()           # trackers of real objects reached without a source
        self.on_drop = None                   # called with each object a store drops (lifetimes.finalizer_may_run)
        self.finalizers_met = False           # a real user object was read (builder._wrap): a drop may finalize it
        self.deferred_key_guards: dict = {}   # dict tracker -> the guard of its key set, not added yet
        # functions of no arguments the transformed code calls after the graph, in order, before the
        # write-back: effects that only the real machinery makes exactly (a warning's registry,
        # variables/warning.py)
        self.calls: tuple = ()
        self.add_guard = None                 # adds a guard to the trace's (set by the OutputGraph)
        # id of a class -> the one tracker whose contents are the attributes the trace set on that class
        # (`Cls.n = v`, see UserDefinedClassVariable.setattr); not part of a snapshot: a tracker
        # without contents stands for no write
        self.class_vars: dict = {}
        # id of a class -> (the class, a name): looked up by the trace after it wrote to the class or a
        # base. Eager's lookup gave the class a new version tag (a write resets it; the C API shows
        # it): made again after the writes (`_C.type_lookup`)
        self.classes_read: dict = {}

    def snapshot(self) -> SideEffectsState:
        return SideEffectsState(dict(self.contents), dict(self.mutated), dict(self.globals), dict(self.cells),
                                set(self.deleted_globals), self.counter, dict(self.deferred_key_guards),
                                self.calls)

    def restore(self, snap: SideEffectsState) -> None:
        self.contents, self.mutated = dict(snap.contents), dict(snap.mutated)
        self.globals, self.cells = dict(snap.globals), dict(snap.cells)
        self.deleted_globals, self.counter = set(snap.deleted_globals), snap.counter
        self.deferred_key_guards = dict(snap.deferred_key_guards)
        self.calls = snap.calls

    # -- containers and objects --------------------------------------------
    def track(self, var, contents) -> None:
        """Start tracking a mutable object with its initial contents (not a mutation)."""
        self.contents[var] = contents

    def get(self, var):
        if var in self.deferred_key_guards:
            self.guard_keys(var)
        return self.contents[var]

    def peek(self, var):
        """The contents, for a lookup of one key whose presence the caller guards itself
        (`DictVariable._index_of`): a dict of the program keeps its key set unguarded."""
        return self.contents[var]

    def defer_key_guard(self, var, guard) -> None:
        """`var`, a dict read from the program, has its whole key set guarded by `guard` only when
        something reads more of its keys than lookups of single keys do (`get` of its contents):
        calls differing in a key the code never looked up reuse the graph."""
        self.deferred_key_guards[var] = guard

    def keys_unguarded(self, var) -> bool:
        return var in self.deferred_key_guards

    def guard_keys(self, var) -> None:
        self.add_guard(self.deferred_key_guards.pop(var))

    def is_tracked(self, var) -> bool:
        return var in self.contents

    def mark_unsourced(self, var) -> None:
        """`var` is a real object that existed before the frame, reached without a source (a list in
        the closure of a method found on a class...): the transformed code could not write a change
        back to it, so changing it is not traced (the instruction runs natively instead)."""
        self.unsourced.add(var)

    def store(self, var, contents) -> None:
        if var.source is None and var in self.unsourced:
            raise Unsupported("untracked_mutation", what=f"changing {var.describe()} reached without a source")
        if self.on_drop is not None and self.finalizers_met and var in self.contents:
            for dropped in _dropped_objects(self.contents[var], contents):
                self.on_drop(dropped)
        self.contents[var] = contents
        if (var.source is not None or written_through_owner(var)) and var not in self.mutated:
            self.counter += 1
            self.mutated[var] = self.counter

    def advance(self, var, position) -> None:
        """A list or range iterator moved. One the program holds (with a source: handed to a resume
        function, and maybe kept elsewhere too) gets its new position written back after the graph."""
        if self.contents.get(var) == position:
            return
        self.contents[var] = position
        if var.source is not None and var not in self.mutated:
            self.counter += 1
            self.mutated[var] = self.counter

    def record_key_event(self, var, event) -> None:
        """A change of the keys of a dict or set of the program (see write_back.py), kept as a linked
        list of tuples: appending copies nothing, and a checkpoint saves it with the contents."""
        key = ("key events", var)
        self.contents[key] = (self.contents.get(key), event)

    def key_events(self, var) -> list:
        """The key events of `var` in program order, runs of additions (or deletions) merged into one."""
        events, node = [], self.contents.get(("key events", var))
        while node is not None:
            node, event = node
            events.append(event)
        merged = []
        for event in reversed(events):
            if merged and event[0] in ("add", "del") and merged[-1][0] == event[0]:
                merged[-1] = merged[-1] + event[1:]
            else:
                merged.append(event)
        return merged

    def built_after_write_back(self, tx, values) -> list:
        """The values (among `values`) that must be rebuilt after the write-back: those holding an
        iterator over a container of the program that is written back. CPython's dict, set and deque
        iterators note the container's size (or state) when made, and a dict's iterator counts its
        place in the entries: rebuilt before the write-back, it would see the container as it was
        before the frame. (A traced iterator is rebuildable only if no key changed since it was made:
        made after the write-back and advanced, it is where eager's is.)"""
        def late(v, depth):
            if isinstance(v, (ContainerIteratorVariable, DequeIteratorVariable)):
                container = v.container if isinstance(v, ContainerIteratorVariable) else v.seq
                if container in self.mutated:
                    return True
            if depth > 4 or not isinstance(v, VariableTracker):
                return False
            children = list(v.parts(tx)) if not isinstance(v, (ContainerIteratorVariable,)) else []
            for field in dataclasses.fields(v) if dataclasses.is_dataclass(v) else ():
                value = getattr(v, field.name)
                children.extend(value if isinstance(value, tuple) else (value,))
            return any(late(c, depth + 1) for c in children if isinstance(c, VariableTracker))
        if not self.mutated:
            return []
        written = [v for var in self.mutated if not isinstance(var, _ITERATORS)    # (a position, no values)
                   for v in _written_values(self.get(var))]
        if any(late(v, 0) for v in written):
            # (it is also written into a container or object: rebuilt once, before the write-back)
            raise Unsupported("unrebuildable", what="an iterator over a container written back, itself "
                                                    "written into another container")
        return [v for v in values if late(v, 0)]

    def pending(self) -> bool:
        """Whether the transformed code has anything to write back after the graph."""
        return bool(self.mutated or self.globals or self.deleted_globals or self.cells or self.calls or
                    self.input_tensor_attributes())

    def call_after(self, fn) -> None:
        """Have the transformed code call `fn()` after the graph (see `calls`)."""
        self.calls = self.calls + (fn,)

    def mutated_in_order(self) -> list:
        return sorted(self.mutated, key=self.mutated.get)

    # -- class attributes ----------------------------------------------------
    def class_tracker(self, cls):
        """The tracker holding the attributes the trace set on class `cls`, as an object's are held."""
        var = self.class_vars.get(id(cls))     # (by id: a metaclass's __hash__ is the program's code)
        if var is None:
            var = self.class_vars[id(cls)] = UserDefinedClassVariable(value=cls, source=ConstSource(cls))
        return var

    def class_attr(self, cls, name):
        """The tracker of the value the trace set as `cls.name` (None: not set)."""
        var = self.class_vars.get(id(cls))
        return None if var is None else self.contents.get(var, {}).get(name)

    def class_written(self, cls) -> bool:
        var = self.class_vars.get(id(cls))
        return var is not None and bool(self.contents.get(var))

    # -- globals ------------------------------------------------------------
    def store_global(self, name: str, var) -> None:
        self.globals[name] = var
        self.deleted_globals.discard(name)

    def delete_global(self, name: str) -> None:
        self.globals.pop(name, None)
        self.deleted_globals.add(name)

    # -- replay -----------------------------------------------------------------
    def codegen_replay(self, cg, returning=False) -> None:
        """Emit the code that writes back what the traced code changed, the frame's own closure cells
        included (read by the resume functions, and by closures made in the frame, which may outlive it).
        Every new value is rebuilt first: it may be read from an object that a write overwrites; and
        every object written to is fetched first: its source may go through a container an earlier
        write changes (`del node_map[k]`, then `node.owner = None` with node reached as node_map[k])."""
        payloads = self._rebuild_contents(cg)
        input_attributes = self._rebuild_input_tensor_attributes(cg)
        targets = self._fetch_targets(cg)
        global_values = []
        for name, value in self.globals.items():
            cg.reconstruct(value)
            global_values.append((name, cg.store_temp()))
        written_cells = self._written_cells(cg.tx, returning)
        late = self.built_after_write_back(cg.tx, written_cells)
        for value in written_cells:
            # a cell's new value too: a deque made of a list's items reads `lst[2]`, which the list's
            # write-back changes (one holding an iterator over a container written back, after it)
            if value not in cg.temps and value not in late:
                cg.reconstruct_to_temp(value)
        # the calls first: what they read (a warning's filters) is then as eager's call found it, as long
        # as nothing written back changed it before them (which their makers refuse, variables/warning.py)
        for fn in self.calls:
            cg.load_callable(fn)
            cg.call(0)
            cg.pop_top()
        # then written back, in program order (a module container's iterator first: it took its steps
        # before the trace could change the table)
        self._advance_table_iterators(cg, targets)
        self._write_back_contents(cg, payloads, targets)
        self._write_back_iterators(cg, targets)      # (after the lists they index)
        self._write_back_attributes(cg, targets)
        self._renew_version_tags(cg)
        for source, name, temp in input_attributes:    # `x.note = v` on a tensor the frame was given
            cg.load_temp(temp)
            cg.load_temp(targets[source])
            cg.store_attr(name)
        for name, temp in global_values:
            cg.load_temp(temp)
            cg.append(Instr("STORE_GLOBAL", name))
        for name in self.deleted_globals:
            cg.append(Instr("DELETE_GLOBAL", name))
        self._write_back_cells(cg, targets, returning)

    def _fetch_targets(self, cg) -> dict:
        """Each object the write-back changes, read through its source into a temp, before any write:
        {tracker, or the source of a tensor or cell: temp}."""
        targets = {}

        def fetch(key, source):
            if key not in targets:
                source.reconstruct(cg)
                targets[key] = cg.store_temp()
        for var in self.mutated_in_order():
            if isinstance(var, _ITERATORS) and var.source is not None:
                fetch(var, var.source)
            elif isinstance(var, (ListVariable, SetVariable, DictVariable, UserDefinedObjectVariable,
                                  UserDefinedClassVariable)):
                source = var.source if var.source is not None or not isinstance(var, DictVariable) else \
                    var.owner.source
                if source is not None:
                    fetch(var, source)
        for node, _ in self.input_tensor_attributes():
            fetch(node.meta["source"], node.meta["source"])
        for cell in self.cells:
            if isinstance(cell, RealCellVariable):
                fetch(cell, cell.source)
        return targets

    def _rebuild_contents(self, cg) -> list:
        """The new contents of each mutated list/dict/set, in a temp; an object's new attribute
        values into temps. Returns [(tracker, temp)]."""
        payloads = []
        for var in self.mutated_in_order():
            if isinstance(var, ListVariable):
                items = self.get(var)
                for item in items:
                    cg.reconstruct(item)
                cg.build_list(len(items))
            elif isinstance(var, SetVariable):
                self.codegen_key_events(cg, var)
            elif isinstance(var, DictVariable):
                self.codegen_key_events(cg, var)
                events = cg.store_temp()
                pairs = self.get(var)
                for k, v in pairs:
                    cg.reconstruct(k)
                    cg.reconstruct(v)
                cg.build_map(len(pairs))
                payloads.append((var, (events, cg.store_temp())))
                continue
            elif isinstance(var, (UserDefinedObjectVariable, UserDefinedClassVariable)):
                for name, value in self.get(var).items():
                    if value is not _MISSING and value not in cg.temps:
                        cg.reconstruct_to_temp(value)
                continue
            else:
                continue
            payloads.append((var, cg.store_temp()))
        return payloads

    def codegen_key_events(self, cg, var) -> None:
        """The tuple of `var`'s key events (write_back.py) on the stack: trackers rebuilt, flags as
        constants. A merge is replayed with its operand, which must still be what it was then."""
        events = self.key_events(var)
        for event in events:
            cg.load_const(event[0])
            args = event[1:]
            if event[0] == "merge":
                name, operand, seen = args
                if operand != "self" and isinstance(operand, SetVariable) and self.get(operand) is not seen:
                    raise Unsupported("python_protocol", what=f"replaying set.{name} with a set changed since")
                args = (name, var if operand == "self" else operand)
            for arg in args:
                if isinstance(arg, tuple):
                    for item in arg:
                        cg.reconstruct(item)
                    cg.build_tuple(len(arg))
                elif isinstance(arg, (str, bool)):
                    cg.load_const(arg)
                else:
                    cg.reconstruct(arg)
            cg.build_tuple(1 + len(args))
        cg.build_tuple(len(events))

    def _rebuild_input_tensor_attributes(self, cg) -> list:
        """Attributes set while tracing on input tensors (see tensor.set_tensor_attr; a tensor made
        while tracing gets them when it leaves the graph): [(tensor's source, name, temp of the value)]."""
        writes = []
        for node, attrs in self.input_tensor_attributes():
            for name, value in attrs.items():
                cg.reconstruct(value)
                writes.append((node.meta["source"], name, cg.store_temp()))
        return writes

    def input_tensor_attributes(self) -> list:
        """[(placeholder node, {name: value})] of the attributes set on input tensors while tracing."""
        return [(key[1], attrs) for key, attrs in self.contents.items()
                if isinstance(key, tuple) and key[0] == "tensor attributes" and key[1].op == "placeholder"]

    def _write_back_contents(self, cg, payloads, targets) -> None:
        for var, temp in payloads:
            if isinstance(var, ListVariable):   # src[:] = new items
                if not self.get(var) and self.contents.get(("list grew", var)):
                    # it grew and shrank back to empty: a list being sorted (emptied while it is) must
                    # see that it was given items, as list.sort checks ("list modified during sort")
                    cg.load_temp(targets[var])
                    cg.load_method("append")
                    cg.load_const(None)
                    cg.call_method(1)
                    cg.pop_top()
                cg.load_temp(temp)
                cg.load_temp(targets[var])
                cg.load_const(slice(None))
                cg.append(Instr("STORE_SUBSCR"))
            elif isinstance(var, DictVariable):
                # the program's key changes replayed with the builtin's own methods (dict's for a
                # dict, a defaultdict and a dict subclass's items: none of the subclass's methods
                # runs; OrderedDict's for an OrderedDict), then the values (write_back.py)
                cg.load_callable(write_dict)
                cg.load_temp(targets[var])
                cg.load_temp(temp[0])
                cg.load_temp(temp[1])
                cg.load_const(var.cls is collections.OrderedDict)
                cg.call(4)
                cg.pop_top()
            else:                               # a set: its key changes replayed with set's methods
                cg.load_callable(write_set)
                cg.load_temp(targets[var])
                cg.load_temp(temp)
                cg.call(2)
                cg.pop_top()

    def _advance_table_iterators(self, cg, targets) -> None:
        """The program's iterators over module containers' tables, moved by the steps the trace took."""
        for var in self.mutated_in_order():
            if isinstance(var, ResumedLiveIterator) and var.watches == "modules":
                cg.load_callable(advanced)
                cg.load_temp(targets[var])
                cg.load_const(self.get(var))
                cg.call(2)
                cg.pop_top()

    def _write_back_iterators(self, cg, targets) -> None:
        """The program's list and range iterators the trace advanced, put where the traced ones are."""
        for var in self.mutated_in_order():
            if isinstance(var, ResumedLiveIterator) and var.watches == "lists":
                cg.load_callable(advance_list_iterator)
                cg.load_temp(targets[var])
                cg.load_const(self.get(var))
                cg.call(2)
                cg.pop_top()
            elif isinstance(var, ListIteratorVariable):     # a range iterator: its index into its range
                cg.load_temp(targets[var])
                cg.load_method("__setstate__")
                cg.load_const(self.get(var)[1])
                cg.call_method(1)
                cg.pop_top()

    def _write_back_attributes(self, cg, targets) -> None:
        """The traced writes already went through the class's own __setattr__/__delattr__ (a frozen
        dataclass's raises): what is left is object's, which they are written back with (a tracker
        with its own setattr model, an nn.Module's, is written back through the class)."""
        for var in self.mutated_in_order():
            if isinstance(var, UserDefinedClassVariable):    # `Cls.n = v`: type.__setattr__, as eager's
                for name, value in self.get(var).items():
                    cg.reconstruct(value)
                    cg.load_temp(targets[var])
                    cg.store_attr(name)
                continue
            if not isinstance(var, UserDefinedObjectVariable):
                continue
            # (a module's writes the trace keeps as attributes are object's: its tables are written as dicts)
            generic = type(var).setattr is UserDefinedObjectVariable.setattr or var.source is not None and \
                isinstance(var.value, torch.nn.Module)
            for name, value in self.get(var).items():
                if generic and value is _MISSING and not _had_attribute(cg.tx, var, name):
                    continue        # set and deleted again while tracing
                if not generic:
                    if value is not _MISSING:
                        cg.reconstruct(value)
                    cg.load_temp(targets[var])
                    cg.append(Instr("DELETE_ATTR", name) if value is _MISSING else Instr("STORE_ATTR", name))
                    continue
                cg.load_callable(del_instance_attr if value is _MISSING else set_instance_attr)
                cg.load_temp(targets[var])
                cg.load_const(name)
                if value is not _MISSING:
                    cg.reconstruct(value)
                cg.call(2 if value is _MISSING else 3)
                cg.pop_top()

    def _renew_version_tags(self, cg) -> None:
        for cls, name in self.classes_read.values():
            cg.load_callable(_C.type_lookup)
            cg.load_const(cls)
            cg.load_const(name)
            cg.call(2)
            cg.pop_top()

    def _written_cells(self, tx, returning=False) -> list:
        """The new values of the cells `_write_back_cells` writes (a callee's cell dies with it)."""
        own = {tx.cells[n] for n in _live_cellvars(tx.code, returning)}
        return [value for cell, value in self.cells.items()
                if isinstance(cell, (FrameFreeCell, RealCellVariable)) or cell in own]

    def _write_back_cells(self, cg, targets, returning=False) -> None:
        tx = cg.tx
        own = {tx.cells[n]: n for n in _live_cellvars(tx.code, returning)}
        for cell, value in self.cells.items():
            if isinstance(cell, FrameFreeCell):
                cg.reconstruct(value)
                cg.append(Instr("STORE_DEREF", FreeVar(cell.name)))
            elif isinstance(cell, RealCellVariable):
                cg.reconstruct(value)
                cg.load_temp(targets[cell])
                cg.store_attr("cell_contents")
            elif cell in own:
                cg.reconstruct(value)
                cg.append(Instr("STORE_DEREF", CellVar(own[cell])))
        for cell, name in own.items():
            if cell not in self.cells and name in tx.arg_names:
                # an argument's cell, deleted while tracing: empty the real one (filled on entry)
                cg.load_const(None)
                cg.append(Instr("STORE_DEREF", CellVar(name)))
                cg.append(Instr("DELETE_DEREF", CellVar(name)))


_ITERATORS = (ListIteratorVariable, ListSequenceIteratorVariable, ResumedLiveIterator)
_COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>")


def _live_cellvars(code, returning) -> tuple:
    """The frame's own cells whose values must be written back: all of them at a graph break (the
    resume function reads them); at the return, those a function made in the frame may still hold.
    A cell only list, set or dict comprehensions close over (a comprehension's function is called at
    once and dropped; a generator expression, a lambda or a def may outlive the frame) dies with it."""
    if not returning:
        return code.co_cellvars
    return tuple(n for n in code.co_cellvars if not _only_comprehensions_hold(code, n))


def _only_comprehensions_hold(code, name) -> bool:
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and (name in const.co_freevars or name in const.co_cellvars):
            if const.co_name not in _COMPREHENSIONS or name in const.co_cellvars or \
                    not _only_comprehensions_hold(const, name):
                return False
        elif isinstance(const, types.CodeType) and not _only_comprehensions_hold(const, name):
            return False
    return True


def _written_values(contents) -> list:
    """The trackers the new contents of a container or object hold."""
    if isinstance(contents, dict):
        return [v for v in contents.values() if isinstance(v, VariableTracker)]
    return [t for entry in contents for t in (entry if type(entry) is tuple else (entry,))
            if isinstance(t, VariableTracker)]


def written_through_owner(var) -> bool:
    """`var` holds the items of a dict-subclass object that existed before the frame (see
    user_defined.dict_store), written back through dict's own C methods after the graph: neither
    they nor a plain dict argument to dict.update run any of the subclass's methods; or through
    OrderedDict's, for a subclass that keeps OrderedDict's item hooks (the only ones they call, checked
    where the trace changes it: builtins._plain_item_hooks)."""
    return isinstance(var, DictVariable) and var.owner is not None and \
        var.cls in (dict, collections.OrderedDict) and var.owner.source is not None and not var.owner.is_new()


def _had_attribute(tx, var, name) -> bool:
    """Whether the real object has `name` in its instance dict (guarded) or a filled slot (no user
    code runs)."""
    obj = var.value
    if instance_attr(tx, obj, var.source, name) is not MISSING:
        return True
    slot = class_lookup(tx, type(obj), name)[0]
    if isinstance(slot, types.MemberDescriptorType):
        try:
            slot.__get__(obj)
            return True
        except AttributeError:
            return False
    return False
