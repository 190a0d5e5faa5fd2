"""Sequences: tuple, list, torch.Size, range, slice and named tuples."""
from __future__ import annotations

import collections
import dataclasses
import operator

import torch

from ...probe import static_getattr, static_hasattr
from ..graph_break import Unsupported, fold, user_error
from .base import NotConstant, VariableTracker, check_modelled_arguments, compare_equal, families, python_value
from .constant import ConstantVariable, const


def constant_items(items):
    return [i.as_python_constant() for i in items]


def python_index(var):
    """An index, count or slice as Python needs it: a symbolic int specializes to its value (the
    ShapeEnv guards it), a slice with symbolic bounds too; anything else that is not a constant
    (a tensor, a symbolic float) is not modelled: a graph break, so the real call decides."""
    if isinstance(var, families.SymNodeVariable) and var.python_type() in (int, bool):
        return var.evaluate()
    if isinstance(var, SliceVariable):
        return slice(python_index(var.start), python_index(var.stop), python_index(var.step))
    if var.is_python_constant():
        return var.as_python_constant()
    value = families.known_value(var)
    if value is not None:
        try:
            return value.__index__()     # what CPython asks of the index (only integer tensors of one element)
        except TypeError:
            pass
    raise Unsupported("python_protocol", what=f"indexing or repeating a sequence with {var.describe()}")


def is_structseq(cls) -> bool:
    """A C struct sequence (`torch.return_types.topk`, `sys.float_info`): a tuple subclass whose
    fields are named by `__match_args__` and whose constructor takes one sequence."""
    return isinstance(cls, type) and issubclass(cls, tuple) and \
        isinstance(static_getattr(cls, "n_sequence_fields"), int)


def is_named_tuple_class(cls) -> bool:
    """A tuple type whose every field is one of its items, so the items alone rebuild it exactly:
    a `collections.namedtuple`/`typing.NamedTuple`, or a struct sequence without hidden fields
    (`os.stat_result` and `time.struct_time` have some: those are not modelled)."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        return False
    if is_structseq(cls):
        return cls.n_fields == cls.n_sequence_fields and not cls.n_unnamed_fields
    return static_hasattr(cls, "_fields")


def tuple_fields(cls) -> tuple:
    return tuple(cls.__match_args__) if is_structseq(cls) else tuple(static_getattr(cls, "_fields", ()))


@dataclasses.dataclass(frozen=True, eq=False)
class BaseSequence(VariableTracker):
    """Shared behaviour of sequences whose items are a tuple of trackers."""
    is_sequence = True

    def build_python_value(self, tx, memo):
        if self.python_type() is list:
            out = memo[id(self)] = []
            out.extend(python_value(tx, i, memo) for i in self.get_items(tx))
            return out
        return tuple(python_value(tx, i, memo) for i in self.get_items(tx))

    def parts(self, tx):
        return tuple(self.get_items(tx))

    def get_items(self, tx) -> tuple:
        raise NotImplementedError

    def unpack(self, tx):
        return list(self.get_items(tx))

    def truth(self, tx):
        return len(self.get_items(tx)) > 0

    def has_len(self, tx):
        return len(self.get_items(tx))

    def getitem(self, tx, index_var):
        items = self.get_items(tx)
        index = python_index(index_var)
        if isinstance(index, slice):
            if self.python_type() is tuple and index.indices(len(items))[::2] == (0, 1) and \
                    len(items[index]) == len(items):
                return self     # a whole tuple sliced is that tuple (as CPython's tuple_subscript)
            return self.rebuild(tx, items[index])
        if isinstance(index, int):
            # out of range: the program's own IndexError, with eager's message ("list index out of range")
            kind = next((c for c in (list, collections.deque) if issubclass(self.python_type(), c)), tuple)
            fold(operator.getitem, kind(range(len(items))), index)
            return items[index]
        raise Unsupported("python_protocol", what=f"indexing {self.describe()} with {index_var.describe()}")

    def rebuild(self, tx, items):
        """A new sequence of the same kind with these items (slicing, +, *)."""
        return TupleVariable(tuple(items))

    def concatenate(self, tx, other):
        """`self + other` as the C type's concatenation: the other operand must be of the same kind
        (a subclass counts), and a tuple plus an empty tuple is the other tuple itself."""
        kind = next(k for k in (list, collections.deque, tuple, range) if issubclass(self.python_type(), k))
        other_type = other.python_type()
        if kind is list and families.list_store(tx, other) is not None:
            other = families.list_store(tx, other)    # a list-subclass object made here: its items
        if kind is not range and issubclass(other_type, kind) and (
                isinstance(other, BaseSequence) or _is_constant_tuple(other)):
            other_items = tuple(other.get_items(tx)) if isinstance(other, BaseSequence) else \
                tuple(const(v) for v in other.as_python_constant())
            if kind is tuple and not other_items and self.python_type() is tuple:
                return self
            if kind is tuple and not self.get_items(tx) and other_type is tuple:
                return other
            return self.rebuild(tx, self.get_items(tx) + other_items)
        if kind is not range and other_type.__module__ == "builtins":   # no reflected operand to try
            raise user_error(TypeError(f'can only concatenate {kind.__name__} (not "{other_type.__name__}") '
                                       f'to {kind.__name__}'))
        return super().call_method(tx, "__add__", [other], {})

    def call_method(self, tx, name, args, kwargs):
        items = self.get_items(tx)
        check_modelled_arguments(self.describe(), name, args, kwargs, _SEQUENCE_ARITY, minimum=_SEQUENCE_MINIMUM,
                                 cls=self.python_type())
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__len__":
            return const(len(items))
        if name == "__contains__":
            return const(any(compare_equal(tx, i, args[0]) for i in items))
        if name == "index":
            bounds = [a.as_python_constant() for a in args[1:]] + [None, None]   # clamped like a slice
            for n in range(len(items))[slice(bounds[0], bounds[1])]:
                if compare_equal(tx, items[n], args[0]):
                    return const(n)
            if issubclass(self.python_type(), tuple):
                raise user_error(ValueError("tuple.index(x): x not in tuple"))
            if not args[0].is_python_constant():   # the message is the item's repr: user code
                raise Unsupported("python_protocol", what=f"list.index of {args[0].describe()} not in the list")
            raise user_error(ValueError(f"{args[0].as_python_constant()!r} is not in {self.python_type().__name__}"))
        if name in ("__setitem__", "__delitem__") and self.python_type() is tuple:
            # (STORE_SUBSCR / DELETE_SUBSCR on a tuple: `t[0] += [x]` changes the list, then raises)
            raise user_error(TypeError("'tuple' object does not support item assignment" if name == "__setitem__"
                                       else "'tuple' object doesn't support item deletion"))
        if name in _RICH_COMPARE and len(args) == 1 and not kwargs and self.python_type() in (list, tuple):
            # `t.__eq__(other)`: another of the same exact type compares item by item; a value that is not
            # a list (tuple) at all answers NotImplemented (a subclass of it: not modelled)
            kind, other = self.python_type(), args[0]
            other_type = other.python_type()
            if other_type is kind and isinstance(other, BaseSequence):
                # (not through the operator: the operator's own fallback is this very method)
                mine, theirs = items, other.get_items(tx)
                if name in ("__eq__", "__ne__"):
                    equal = len(mine) == len(theirs) and all(compare_equal(tx, a, b) for a, b in zip(mine, theirs))
                    return const(equal if name == "__eq__" else not equal)
                if all(i.is_python_constant() for i in mine + theirs):
                    return const(fold(_RICH_COMPARE[name], tuple(i.as_python_constant() for i in mine),
                                      tuple(i.as_python_constant() for i in theirs)))
            elif not issubclass(other_type, kind):
                return const(NotImplemented)
        if name == "count":
            return const(sum(1 for i in items if compare_equal(tx, i, args[0])))
        if name == "__add__":
            return self.concatenate(tx, args[0])
        if name in ("__mul__", "__rmul__") and args[0].is_python_constant():
            times = _repeat_count(args[0])
            if times == 1 and self.python_type() is tuple:
                return self     # a tuple times one is itself (a list's copy is new)
            return self.rebuild(tx, fold(operator.mul, items, times))
        if name == "__iter__":
            return families.ListIteratorVariable.create(tx, items)
        return super().call_method(tx, name, args, kwargs)

    def as_python_constant(self):
        raise NotConstant(self.describe())


@dataclasses.dataclass(frozen=True, eq=False)
class TupleVariable(BaseSequence):
    items: tuple = ()

    def get_items(self, tx=None):
        return self.items

    def python_type(self):
        return tuple

    def describe(self):
        return f"tuple of {len(self.items)}"

    def as_python_constant(self):
        return tuple(constant_items(self.items)) if self._all_const() else super().as_python_constant()

    def _all_const(self):
        return all(i.is_python_constant() for i in self.items)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.build_sequence(self.items, tuple)


@dataclasses.dataclass(frozen=True, eq=False)
class NamedTupleVariable(TupleVariable):
    cls: type = tuple

    def build_python_value(self, tx, memo):
        raise NotConstant(self.describe())

    def python_type(self):
        return self.cls

    def describe(self):
        return f"{self.cls.__name__} namedtuple"

    def as_python_constant(self):
        if self._all_const():
            if is_structseq(self.cls):
                return self.cls(constant_items(self.items))
            return self.cls(*constant_items(self.items))
        raise NotConstant(self.describe())

    def rebuild(self, tx, items):
        return TupleVariable(tuple(items))

    def var_getattr(self, tx, name):
        fields = tuple_fields(self.cls)
        if name in fields:
            return self.items[fields.index(name)]
        return families.class_attribute(tx, self, self.cls, name)

    def reconstruct(self, codegen):
        # through C constructors only (no Python `__new__` frame for the hook to compile):
        # `topk((values, indices))` for a struct sequence, `tuple.__new__(cls, items)` for a namedtuple
        if is_structseq(self.cls):
            codegen.load_callable(self.cls)
        else:
            codegen.load_callable(tuple.__new__)
            codegen.load_const(self.cls)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build_tuple(len(self.items))
        codegen.call(1 if is_structseq(self.cls) else 2)


@dataclasses.dataclass(frozen=True, eq=False)
class SizeVariable(TupleVariable):
    """torch.Size: a tuple of ints, each a ConstantVariable or (dynamic shapes) a SymNodeVariable.
    Slicing, `+`, `*` and `numel()` keep the symbolic items; comparisons compare item by item
    (a symbolic comparison specializes, with a shape guard)."""

    def python_type(self):
        return torch.Size

    def describe(self):
        return "torch.Size"

    def as_python_constant(self):
        if self._all_const():
            return torch.Size(constant_items(self.items))
        raise NotConstant(self.describe())

    def rebuild(self, tx, items):
        return SizeVariable(tuple(items))

    def call_method(self, tx, name, args, kwargs):
        if name == "numel":
            result = const(1)
            for item in self.items:
                result = tx.binary_op(operator.mul, result, item)
            return result
        other = None
        if name in ("__add__", "__radd__") and args and _is_constant_tuple(args[0]):
            other = tuple(const(v) for v in args[0].as_python_constant())
        elif name == "__radd__" and args and isinstance(args[0], BaseSequence):
            other = tuple(args[0].get_items(tx))
        if other is not None:
            if not all(_is_size_item(i) for i in other):
                # torch.Size raises on anything but ints (a tensor, a float): let it, where eager does
                raise Unsupported("python_protocol", what=f"torch.Size + {args[0].describe()}")
            return SizeVariable(self.items + other if name == "__add__" else other + self.items)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        codegen.load_callable(torch.Size)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build_tuple(len(self.items))
        codegen.call(1)


@dataclasses.dataclass(frozen=True, eq=False)
class ListVariable(BaseSequence):
    """A Python list; its items live in SideEffects (lists are mutable)."""

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})   # live: sees changes made while iterating

    @staticmethod
    def create(tx, items, source=None):
        var = ListVariable(source=source)
        tx.output.side_effects.track(var, tuple(items))
        return var

    def get_items(self, tx):
        return tx.output.side_effects.get(self)

    def set_items(self, tx, items):
        items = tuple(items)
        if len(items) > len(self.get_items(tx)):
            tx.output.side_effects.track(("list grew", self), True)   # see SideEffects._write_back_contents
        tx.output.side_effects.store(self, items)

    def python_type(self):
        return list

    def describe(self):
        return "list"

    def rebuild(self, tx, items):
        return ListVariable.create(tx, items)

    def call_method(self, tx, name, args, kwargs):
        items = list(self.get_items(tx))
        check_modelled_arguments("list", name, args, kwargs, _LIST_ARITY, {"sort": ("key", "reverse")},
                                 minimum=_LIST_MINIMUM, cls=self.python_type())
        if name == "append":
            self.set_items(tx, items + [args[0]])
            return const(None)
        if name == "extend":
            extend_from(tx, self, args[0], lambda added: self.set_items(tx, self.get_items(tx) + tuple(added)))
            return const(None)
        if name == "insert":
            items.insert(python_index(args[0]), args[1])
            self.set_items(tx, items)
            return const(None)
        if name == "pop":
            index = python_index(args[0]) if args else -1
            if not items:
                raise user_error(IndexError("pop from empty list"))
            value = fold(items.pop, index)    # (out of range: eager's IndexError)
            self.set_items(tx, items)
            return value
        if name == "remove":
            self._remove(tx, items, args[0])
            return const(None)
        if name == "clear":
            self.set_items(tx, [])
            return const(None)
        if name == "reverse":
            self.set_items(tx, items[::-1])
            return const(None)
        if name == "copy":
            return ListVariable.create(tx, items)
        if name == "sort":
            if args or set(kwargs) - {"key", "reverse"}:
                raise Unsupported("unsupported_call", fn="list.sort", detail=" with these arguments")
            self._sort(tx, items, kwargs)
            return const(None)
        if name == "__setitem__":
            index = python_index(args[0])
            value = tx.unpack_iterable(args[1]) if isinstance(index, slice) else args[1]
            _as_eager(list, len(items), operator.setitem, index, range(len(value)) if isinstance(index, slice) else 0)
            items[index] = value
            self.set_items(tx, items)
            return const(None)
        if name == "__delitem__":
            index = python_index(args[0])
            _as_eager(list, len(items), operator.delitem, index)
            del items[index]
            self.set_items(tx, items)
            return const(None)
        if name == "__iadd__":
            extend_from(tx, self, args[0], lambda added: self.set_items(tx, self.get_items(tx) + tuple(added)))
            return self
        if name == "__imul__":
            self.set_items(tx, fold(operator.mul, items, _repeat_count(args[0])))
            return self
        if name in ("__iter__", "__reversed__"):
            return families.ListSequenceIteratorVariable.create(tx, self, reverse=name == "__reversed__")
        return super().call_method(tx, name, args, kwargs)

    def _remove(self, tx, items, value):
        for n, i in enumerate(items):
            if compare_equal(tx, i, value):
                del items[n]
                self.set_items(tx, items)
                return
        raise user_error(ValueError("list.remove(x): x not in list"))

    def _sort(self, tx, items, kwargs):
        self.set_items(tx, ())     # CPython empties the list while sorting: a key function sees []
        emptied = self.get_items(tx)
        try:
            ordered = sorted_items(tx, items, kwargs, in_place=True)
        except _SortFailed as failed:
            self.set_items(tx, failed.order)    # (what a key function did to the list is dropped)
            raise user_error(failed.error) from None
        except Exception:
            self.set_items(tx, items)   # a failing key leaves the list as it was
            raise
        modified = self.get_items(tx) is not emptied
        self.set_items(tx, ordered)    # what the key function did to the list is dropped
        if modified:
            raise user_error(ValueError("list modified during sort"))

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        codegen.build_sequence(codegen.tx.output.side_effects.get(self), list)


@dataclasses.dataclass(frozen=True, eq=False)
class DequeVariable(BaseSequence):
    """A collections.deque made while tracing; its items live in SideEffects."""
    maxlen: object = None   # int or None

    @staticmethod
    def create(tx, items, maxlen=None):
        var = DequeVariable(maxlen=maxlen)
        items = tuple(items)
        tx.output.side_effects.track(var, items[len(items) - maxlen:] if maxlen is not None and len(items) > maxlen
                                      else items)
        return var

    def get_items(self, tx):
        return tx.output.side_effects.get(self)

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})   # live: sees changes made while iterating

    def set_items(self, tx, items, left=False, mutated=True):
        """New contents; `mutated`: the change counts as one for CPython's deque state counter,
        which its iterators, `in`, count() and index() check (replacing an item or reversing does not)."""
        items = tuple(items)
        if self.maxlen is not None and len(items) > self.maxlen:
            items = items[:self.maxlen] if left else items[len(items) - self.maxlen:]
        tx.output.side_effects.store(self, items)
        if mutated:
            tx.output.side_effects.track(("deque state", self), self.state(tx) + 1)

    def state(self, tx) -> int:
        return tx.output.side_effects.contents.get(("deque state", self), 0)

    def _search(self, tx, name, value):
        """`in`, count() and index(): compare item by item; a comparison that changed the deque
        raises, as CPython's does."""
        items, start = self.get_items(tx), self.state(tx)
        found = []
        for n, item in enumerate(items):
            equal = compare_equal(tx, item, value)
            if self.state(tx) != start:
                raise user_error(RuntimeError("deque mutated during iteration"))
            if equal:
                found.append(n)
                if name != "count":
                    break
        if name == "__contains__":
            return const(bool(found))
        if name == "count":
            return const(len(found))
        if found:
            return const(found[0])
        if value.is_python_constant() and type(value.as_python_constant()) in (int, float, str, bool, type(None)):
            # the message is the item's repr (a builtin constant's runs no user code)
            raise user_error(ValueError(f"{value.as_python_constant()!r} is not in deque"))
        raise Unsupported("python_protocol", what="deque.index of an item not in the deque")

    def python_type(self):
        return collections.deque

    def describe(self):
        return "deque"

    def rebuild(self, tx, items):
        return DequeVariable.create(tx, items, self.maxlen)

    def var_getattr(self, tx, name):
        if name == "maxlen":
            return const(self.maxlen)
        return super().var_getattr(tx, name)

    def getitem(self, tx, index_var):
        if isinstance(index_var.as_python_constant_or_none(), slice):
            raise user_error(TypeError("sequence index must be integer, not 'slice'"))
        return super().getitem(tx, index_var)

    def call_method(self, tx, name, args, kwargs):
        items = list(self.get_items(tx))
        check_modelled_arguments("list", name, args, kwargs, _LIST_ARITY, {"sort": ("key", "reverse")},
                                 minimum=_LIST_MINIMUM, cls=self.python_type())
        if name in ("__contains__", "count") or (name == "index" and len(args) == 1):
            return self._search(tx, name, args[0])
        if name == "append":
            self.set_items(tx, items + [args[0]])
        elif name == "appendleft":
            self.set_items(tx, [args[0]] + items, left=True)
        elif name in ("extend", "extendleft", "__iadd__"):
            def add(added):
                now = list(self.get_items(tx))
                if name == "extendleft":
                    self.set_items(tx, added[::-1] + now, left=True, mutated=bool(added) and self.maxlen != 0)
                else:
                    self.set_items(tx, now + added, mutated=bool(added) and self.maxlen != 0)
            extend_from(tx, self, args[0], add)
            if name == "__iadd__":
                return self
        elif name in ("pop", "popleft"):
            if not items:
                raise user_error(IndexError(f"{name} from an empty deque"))
            value = items.pop() if name == "pop" else items.pop(0)
            self.set_items(tx, items)
            return value
        elif name == "rotate":
            n = python_index(args[0]) if args else 1
            if items:
                n %= len(items)
                items = items[len(items) - n:] + items[:len(items) - n]
            self.set_items(tx, items, mutated=len(items) > 1)
        elif name == "clear":
            self.set_items(tx, [], mutated=bool(items))
        elif name == "reverse":
            self.set_items(tx, items[::-1], mutated=False)
        elif name == "copy":
            return DequeVariable.create(tx, items, self.maxlen)
        elif name == "remove":
            for n, i in enumerate(items):
                if compare_equal(tx, i, args[0]):
                    del items[n]
                    self.set_items(tx, items)
                    return const(None)
            raise user_error(ValueError("deque.remove(x): x not in deque"))
        elif name == "insert":
            if self.maxlen is not None and len(items) >= self.maxlen:
                raise user_error(IndexError("deque already at its maximum size"))
            items.insert(python_index(args[0]), args[1])
            self.set_items(tx, items)
        elif name == "__setitem__":
            index = python_index(args[0])
            _as_eager(collections.deque, len(items), operator.setitem, index, 0)
            items[index] = args[1]
            self.set_items(tx, items, mutated=False)
        elif name == "__delitem__":
            index = python_index(args[0])
            _as_eager(collections.deque, len(items), operator.delitem, index)
            del items[index]
            self.set_items(tx, items)
        elif name in ("__iter__", "__reversed__"):
            return families.DequeIteratorVariable.create(tx, self, reverse=name == "__reversed__")
        else:
            return super().call_method(tx, name, args, kwargs)
        return const(None)

    def reconstruct(self, codegen):
        if self.source is not None:
            return self.source.reconstruct(codegen)
        items = codegen.tx.output.side_effects.get(self)
        codegen.load_callable(collections.deque)
        for item in items:
            codegen.reconstruct(item)
        codegen.build_list(len(items))
        codegen.load_const(self.maxlen)
        codegen.call(2)


@dataclasses.dataclass(frozen=True, eq=False)
class RangeVariable(BaseSequence):
    value: range = range(0)

    def get_items(self, tx=None):
        return tuple(const(i) for i in self.value)

    def python_type(self):
        return range

    def describe(self):
        return repr(self.value)

    def as_python_constant(self):
        return self.value

    def getitem(self, tx, index_var):
        result = fold(operator.getitem, self.value, python_index(index_var))
        return RangeVariable(result) if isinstance(result, range) else const(result)

    def var_getattr(self, tx, name):
        if name in ("start", "stop", "step"):
            return const(getattr(self.value, name))
        return super().var_getattr(tx, name)

    def parts(self, tx):
        return ()     # numbers only (and a range may be too long to list)

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})

    def unpack(self, tx):
        r = self.value
        if (r.stop - r.start) // r.step > tx.config.max_instructions:    # (len() overflows past sys.maxsize)
            raise Unsupported("endless_iterator", what=f"consuming {self.describe()}")
        return list(self.get_items(tx))

    def truth(self, tx):
        return bool(self.value)

    def has_len(self, tx):
        return fold(len, self.value)     # (OverflowError past sys.maxsize, as CPython's)

    def call_method(self, tx, name, args, kwargs):
        if name == "__iter__" and not args and not kwargs:    # a range_iterator (or longrange_iterator)
            return families.ListIteratorVariable.create(tx, self.value, type(iter(self.value)).__name__)
        if name in ("__len__", "__contains__", "index", "count") and not kwargs and all(
                a.is_python_constant() and type(a.as_python_constant()).__module__ == "builtins" for a in args):
            # arithmetic on the range, never its items (comparisons of builtin values run no user code)
            return const(fold(getattr(range, name), self.value, *(a.as_python_constant() for a in args)))
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            return self.getitem(tx, args[0])
        self.unpack(tx)     # (what follows lists the items: not for a very long range)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        codegen.load_const(self.value)


@dataclasses.dataclass(frozen=True, eq=False)
class SliceVariable(VariableTracker):
    start: VariableTracker
    stop: VariableTracker
    step: VariableTracker

    def parts(self, tx):
        return (self.start, self.stop, self.step)

    def python_type(self):
        return slice

    def as_python_constant(self):
        return slice(self.start.as_python_constant(), self.stop.as_python_constant(),
                     self.step.as_python_constant())

    def var_getattr(self, tx, name):
        if name in ("start", "stop", "step"):
            return getattr(self, name)
        return super().var_getattr(tx, name)   # methods (indices): call_method on the constant slice

    def call_method(self, tx, name, args, kwargs):
        if self.is_python_constant():
            return ConstantVariable(self.as_python_constant()).call_method(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen):
        for part in (self.start, self.stop, self.step):
            codegen.reconstruct(part)
        codegen.build_slice(3)


def _is_size_item(var) -> bool:
    """An int (not a bool) or a symbolic int: what torch.Size holds."""
    if var.is_python_constant():
        return type(var.as_python_constant()) is int
    return var.python_type() is int if hasattr(var, "proxy") else False


def _is_constant_tuple(var) -> bool:
    return not isinstance(var, BaseSequence) and var.is_python_constant() and \
        isinstance(var.as_python_constant(), tuple)


# the positional arguments each modelled method takes (see check_modelled_arguments)
_SEQUENCE_ARITY = {"__getitem__": 1, "__len__": 0, "__contains__": 1, "index": 3, "count": 1, "__add__": 1,
                   "__mul__": 1, "__rmul__": 1, "__iter__": 0}
def for_each_item(tx, iterable, fn) -> None:
    """Call `fn` on each item of `iterable` as CPython's consuming loops do: the next item is asked
    for only after `fn` handled the previous one (a generator reading the container being filled sees
    the items added so far; items before a raise stay added)."""
    it = tx.get_iter(iterable)
    for _ in range(tx.config.max_instructions + 1):
        try:
            item = it.next_item(tx)
        except families.StopIterationSignal:
            return
        fn(item)
    raise Unsupported("endless_iterator", what=f"consuming {iterable.describe()} (endless?)")


def extend_from(tx, target, iterable, add):
    """CPython's list/deque extend: a list or tuple argument, or the container itself, is copied first
    (`add` gets all its items); any other iterable is consumed one item at a time (`for_each_item`). A
    number or None is not iterable: eager's TypeError (other ways in, `[*1]` or `f(*1)`, word it differently)."""
    if iterable.is_python_constant() and type(iterable.as_python_constant()) in (type(None), int, float, bool, complex):
        raise user_error(TypeError(f"'{type(iterable.as_python_constant()).__name__}' object is not iterable"))
    try:
        kind = iterable.python_type()
    except Unsupported:
        kind = None
    if iterable is target or kind in (list, tuple):
        add(tx.unpack_iterable(iterable))
        return
    for_each_item(tx, iterable, lambda item: add([item]))


_LIST_ARITY = {"append": 1, "extend": 1, "insert": 2, "pop": 1, "remove": 1, "clear": 0, "reverse": 0, "copy": 0,
               "sort": 0, "__setitem__": 2, "__delitem__": 1, "__iadd__": 1, "__imul__": 1, "__iter__": 0,
               "__reversed__": 0}
# the positional arguments they need (fewer: eager's TypeError)
_SEQUENCE_MINIMUM = {"__getitem__": 1, "__contains__": 1, "index": 1, "count": 1, "__add__": 1, "__mul__": 1,
                     "__rmul__": 1}
_LIST_MINIMUM = {"append": 1, "extend": 1, "insert": 2, "remove": 1, "__setitem__": 2, "__delitem__": 1,
                 "__iadd__": 1, "__imul__": 1}


_RICH_COMPARE = {"__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
                 "__gt__": operator.gt, "__ge__": operator.ge}


def _repeat_count(var):
    """The count of `seq * n` (and `*=`): a value without `__index__` raises a TypeError whose message
    depends on the way in (`seq * 2.5` or `seq.__mul__(2.5)`), which the model does not tell apart: the
    real call decides."""
    times = python_index(var)
    if not hasattr(type(times), "__index__"):
        raise Unsupported("unsupported_call", fn="sequence repetition", detail=f" by {type(times).__name__}")
    return times


def _as_eager(kind, n, op, *args):
    """`op` on a stand-in `kind` of `n` items: an index out of range (or an extended slice given the
    wrong number of items) raises the program's own error, with eager's message."""
    fold(op, kind(range(n)), *args)


class _SortFailed(Exception):
    """list.sort whose keys did not compare: the order it left and the program's TypeError."""
    def __init__(self, order, error):
        super().__init__(error)
        self.order, self.error = order, error


def sorted_items(tx, items, kwargs, in_place=False):
    """`sorted(items, key=..., reverse=...)` over trackers (`sorted`, and `list.sort` with `in_place`): keys
    must be constants."""
    key = kwargs.get("key")
    reverse = kwargs.get("reverse", const(False))
    # a symbolic flag (`reverse=n % 2 == 0` under dynamic shapes) is specialized, with its guard
    reverse = reverse.evaluate() if isinstance(reverse, families.SymNodeVariable) else reverse.as_python_constant()
    keyed = [(key.call_function(tx, [i], {}) if key is not None and not (key.is_python_constant() and
                                                                             key.as_python_constant() is None)
              else i, i) for i in items]
    # symbolic numbers (ints that changed between calls) are specialized: the order depends on their values
    keyed = [(const(k.evaluate()) if isinstance(k, families.SymNodeVariable) else k, i) for k, i in keyed]
    if not all(k.is_python_constant() for k, _ in keyed):
        raise Unsupported("non_constant_value", what="sorting values that are not constants")
    try:
        keyed.sort(key=lambda p: p[0].as_python_constant(), reverse=reverse)
    except TypeError as e:     # keys that do not compare ('<' between str and int)
        if in_place:
            # CPython leaves the list as its sort left it when the comparison failed: this sort ran the
            # same algorithm over the same constant keys, so `keyed` is in that very order
            raise _SortFailed([i for _, i in keyed], e) from None
        raise user_error(e) from None
    return [i for _, i in keyed]


families.register(TupleVariable, ListVariable, python_index)
