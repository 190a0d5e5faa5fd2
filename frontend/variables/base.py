"""The VariableTracker base: an immutable symbolic value seen while tracing.

Compile time only. A tracker says what a value is; its `source` (if any) says where it came from
in the frame, from which guards and reconstruction bytecode are derived. Trackers are frozen
dataclasses; mutable Python objects keep their changing state in `SideEffects`, keyed by the
tracker's identity, so a checkpoint is a few saved references.
"""
from __future__ import annotations

import collections
import dataclasses
import operator
from typing import Any, Optional

from ...guards.guard import Guard
from ...guards.source import Source
from ...probe import class_dict_lookup
from ..graph_break import Unsupported, user_error


class NotConstant(Exception):
    pass


class _Families:
    """The few names a family module needs from a module listed after it in variables/__init__.py
    (one that imports it): a method read builds a BoundMethodVariable, a constant's tuple method a
    TupleVariable... The defining module registers them when imported (`families.register(...)`) and
    they are looked up when a tracker runs, so imports point one way (builder -> families -> base)."""

    def register(self, *objects) -> None:
        for obj in objects:
            setattr(self, obj.__name__, obj)


families = _Families()


class _NotImplementedType:
    """The answer of a dunder that does not handle its operand (kept apart from trackers)."""


NOT_IMPLEMENTED = _NotImplementedType()


def wrap_class(tx, cls):
    return tx.wrap(cls, None)


@dataclasses.dataclass(frozen=True, eq=False)
class TensorMethod:
    """A tensor method looked up but not called yet (`f = x.add; f(y)`)."""
    name: str

    def __call__(self, tx, self_var, args, kwargs):
        return self_var.call_method(tx, self.name, args, kwargs)


@dataclasses.dataclass(frozen=True, eq=False)
class VariableTracker:
    """The protocol every tracker answers. A family overrides what it models; the defaults break
    the graph (or say "not modelled"), so callers ask the tracker instead of probing it."""
    source: Optional[Source] = dataclasses.field(default=None, kw_only=True)

    # which optional parts of the protocol the family models (class attributes, not fields)
    is_iterator = False        # next_item() gives its items one at a time (iterators, generators)
    is_sequence = False        # get_items() gives all its items (list, tuple, range, deque)
    owns_operators = False     # every operator goes to its own dunders, no fallback (a traced ndarray)
    has_inplace_operators = False   # with owns_operators: `a += b` is `a.__iadd__(b)`, not `a = a + b`

    # -- what it is ---------------------------------------------------------
    def python_type(self) -> type:
        raise Unsupported("python_protocol", what=f"type() of {self.describe()}")

    def is_python_constant(self) -> bool:
        try:
            self.as_python_constant()
            return True
        except NotConstant:
            return False

    def as_python_constant(self) -> Any:
        raise NotConstant(self.describe())

    def as_python_constant_or_none(self) -> Any:
        return self.as_python_constant() if self.is_python_constant() else None

    def describe(self) -> str:
        return type(self).__name__

    # -- what can be done with it ------------------------------------------
    def var_getattr(self, tx, name: str) -> "VariableTracker":
        # a method of the value's type (`lst.append`): bound, dispatched to call_method when called
        try:
            cls = self.python_type()
        except Unsupported:
            cls = None
        # (looked up in the MRO's dicts: `getattr(list, "__call__")` is the metaclass's, not a method of lists)
        if cls is not None and callable(class_dict_lookup(cls, name)):
            return families.BoundMethodVariable(fn=TensorMethod(name), self_var=self)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def call_function(self, tx, args: list, kwargs: dict) -> "VariableTracker":
        raise Unsupported("unsupported_call", fn=self.describe(), detail="")

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> "VariableTracker":
        if name == "__getattribute__" and len(args) == 1 and args[0].is_python_constant():
            return self.var_getattr(tx, args[0].as_python_constant())
        raise Unsupported("unsupported_call", fn=f"{self.describe()}.{name}", detail="")

    def unpack(self, tx) -> list:
        """The items when iterated (for unpacking, `for`, `list(x)`...)."""
        raise Unsupported("python_protocol", what=f"iterating over {self.describe()}")

    def get_items(self, tx) -> tuple:
        """All the items of a sequence (is_sequence)."""
        raise Unsupported("python_protocol", what=f"the items of {self.describe()}")

    def next_item(self, tx):
        """The next item of an iterator (is_iterator); StopIterationSignal when it is exhausted."""
        raise Unsupported("python_protocol", what=f"next() of {self.describe()}")

    def build_python_value(self, tx, memo):
        """The real Python value of a container of constants, its items converted by python_value;
        a container records itself in `memo` before its items, so one that holds itself becomes a
        real self-reference. NotConstant otherwise."""
        raise NotConstant(self.describe())

    def iterate(self, tx):
        """The iterator `iter(self)` gives, when the family models one (a live iterator over a
        mutable container, a class's own `__iter__`); None: iterate over a snapshot of unpack()."""
        return None

    def parts(self, tx) -> tuple:
        """The trackers this one holds (items, attributes written while tracing, a bound method's
        self, a traced ndarray's tensor...): the graph outputs the tensors among them, at any depth,
        so that the transformed code can rebuild this tracker."""
        return ()

    def truth(self, tx) -> bool:
        if self.is_python_constant():
            return bool(self.as_python_constant())
        raise Unsupported("python_protocol", what=f"truth value of {self.describe()}")

    def has_len(self, tx) -> int:
        return len(self.unpack(tx))

    # -- getting the value back at run time ---------------------------------
    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        raise Unsupported("unrebuildable", what=f"rebuilding {self.describe()} after the graph")

    def with_source(self, source):
        return dataclasses.replace(self, source=source)

    def guard_identity(self, tx) -> None:
        """The trace is about to depend on which object this is (`is`, `id()`, a dict key): a
        tracker whose object is guarded by less than its identity guards it now."""
        value = getattr(self, "value", None)
        if getattr(self, "source", None) is not None and value is not None:
            tx.output.guards.add(Guard.id_match(self.source, value))


def check_modelled_arguments(owner: str, name: str, args, kwargs, positional: dict, keywords: dict = None,
                             minimum: dict = None, cls: type = None):
    """A container method's model takes at most `positional[name]` positional arguments (and, with
    `minimum` given, at least `minimum[name]`) and the keywords in `keywords[name]` ("*": any); another
    call is never modelled loosely. When the container is one of the builtins, their own check decides:
    CPython checks the count and the keywords before it reads any value, so the same call on an empty
    stand-in with placeholder values raises the program's TypeError with eager's message. Otherwise (or
    when the stand-in accepts it) the graph breaks, and the real method, run eagerly, uses or rejects them."""
    allowed = (keywords or {}).get(name, ())
    too_many = name in positional and (len(args) > positional[name] or
                                       ("*" not in allowed and bool(set(kwargs) - set(allowed))))
    too_few = minimum is not None and len(args) < minimum.get(name, 0)
    if too_many or too_few:
        stand_in = next((k for k in _STAND_INS if cls is not None and issubclass(cls, k)), None)
        if stand_in is not None:
            try:
                getattr(stand_in(), name)(*[None] * len(args), **dict.fromkeys(kwargs))
            except TypeError as e:
                raise user_error(TypeError(*e.args)) from None
            except Exception:  # noqa: BLE001 - not an argument-count error: the real call decides
                pass
        raise Unsupported("unsupported_call", fn=f"{owner}.{name}", detail=" with these arguments")


# builtin containers whose empty instance stands in for a check of a method's argument count (a
# subclass before its base)
_STAND_INS = (collections.deque, collections.OrderedDict, collections.defaultdict, list, tuple, dict, set,
              frozenset)


def compare_equal(tx, a, b) -> bool:
    """Python equality of two items of a container as containers test it (`in`, `index`, `==` of
    lists): identity first, then `==` and its truth value (a tensor's truth value breaks the graph).
    Where one side is a symbolic int the identity test is left out: an int equals itself, so it
    cannot change the answer, and the number's real object is not known to guard it
    (`x.size() == (bs, n)` with a symbolic `n`)."""
    if not (_is_symbolic_int(a) or _is_symbolic_int(b)) and tx.is_same(a, b):
        return True
    return tx.compare(operator.eq, a, b).truth(tx)


def _is_symbolic_int(var) -> bool:
    return isinstance(var, families.SymNodeVariable) and var.python_type() in (int, bool)


def python_value(tx, var, memo=None):
    """The real Python value of a tracker made only of constants: a constant, or a list, tuple, dict
    or set of them (`"-".join(parts)` with `parts` a list built while tracing), or the items of an
    iterator or generator (consumed, as the real call would). NotConstant otherwise. A container
    met twice is the same real object both times (a list holding itself reprs as `[[...]]`)."""
    if var.is_python_constant():
        return var.as_python_constant()
    memo = {} if memo is None else memo
    if id(var) in memo:
        return memo[id(var)]
    if var.is_iterator:  # an iterator or generator: its items are computed now
        return [python_value(tx, i, memo) for i in tx.unpack_iterable(var)]
    return var.build_python_value(tx, memo)
