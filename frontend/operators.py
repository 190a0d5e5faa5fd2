"""CPython's binary-operator and rich-comparison protocols over trackers.

Compile time only. `a OP b` tries `a.__op__(b)`, then `b.__rop__(a)` (the reflected one first when
b's type is a proper subclass of a's that overrides it); a `NotImplemented` answer moves on to the
next candidate; when none answers, `==`/`!=` fall back to identity and every other operator raises
TypeError. A candidate the tracker cannot model is a graph break, never a guess.
"""
from __future__ import annotations

import collections
import operator
import types

from .graph_break import Unsupported, fold, user_error
from .reads import MISSING, class_lookup
from .variables.base import NOT_IMPLEMENTED
from .variables.constant import const
from .variables.functions import UserFunctionVariable
from .variables.user_defined import UserDefinedObjectVariable

# The operand types a builtin type's comparison methods accept; anything else is NotImplemented.
_COMPARABLE = {list: (list,), tuple: (tuple,), dict: (dict,), set: (set, frozenset), frozenset: (set, frozenset),
               collections.deque: (collections.deque,), range: (range,), int: (int,), bool: (int,),
               float: (int, float), complex: (int, float, complex), str: (str,), bytes: (bytes,),
               type(None): ()}
_SYMBOLS = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__floordiv__": "//",
            "__mod__": "%", "__pow__": "** or pow()", "__and__": "&", "__or__": "|", "__xor__": "^",
            "__matmul__": "@", "__lshift__": "<<", "__rshift__": ">>", "__lt__": "<", "__le__": "<=",
            "__gt__": ">", "__ge__": ">="}
_EQUALITY_ONLY = (dict, range, complex, type(None))   # their ordering methods answer NotImplemented
_NUMBERS = (int, bool, float, complex)   # their arithmetic methods also take only these operands
_COMPARE_NAMES = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}


def _type_of(var):
    try:
        return var.python_type()
    except Unsupported:
        return None


def _is_not_implemented(result) -> bool:
    return result is NOT_IMPLEMENTED or (result.is_python_constant() and
                                         result.as_python_constant() is NotImplemented)


def _builtin_owner(cls, name, method):
    """The builtin type of _COMPARABLE whose `name` `method` is: `cls` itself, or the base a
    subclass inherits it from unchanged (torch.Size compares as tuple does); None for another method."""
    if cls in _COMPARABLE:
        return cls
    for base in _MRO_OF(cls):
        if base in _COMPARABLE and vars(base).get(name) is method:
            return base
    return None


def dunder(tx, x, name, y):
    """`type(x).name(x, y)` as CPython runs it: a tracker, or NOT_IMPLEMENTED."""
    cls = _type_of(x)
    if cls is None:
        raise Unsupported("python_protocol", what=f"{name} of {x.describe()}")
    method, source = class_lookup(tx, cls, name)
    if method is MISSING:
        return NOT_IMPLEMENTED
    if isinstance(method, types.FunctionType) and not isinstance(x, UserDefinedObjectVariable):
        # a method of the program's own on a subclass of a builtin the trace models (a NamedTuple
        # class's `__add__`): it runs, not the builtin's answer
        return UserFunctionVariable(fn=method, source=source).call_function(tx, [x, y], {})
    if method is getattr(object, name, None):
        if name == "__eq__":
            return const(True) if tx.is_same(x, y) else NOT_IMPLEMENTED
        if name == "__ne__":    # object.__ne__ inverts __eq__ unless that is NotImplemented
            equal = dunder(tx, x, "__eq__", y)
            return equal if _is_not_implemented(equal) else tx.unary_op(operator.not_, equal)
        return NOT_IMPLEMENTED
    base = _builtin_owner(cls, name, method)
    if base is not None and (name in _COMPARE_NAMES or base in _NUMBERS):
        other = _type_of(y)
        if other is None:
            raise Unsupported("python_protocol", what=f"{name} of {x.describe()} with {y.describe()}")
        if not issubclass(other, _COMPARABLE[base]) or \
                (base in _EQUALITY_ONLY and name in _COMPARE_NAMES and name not in ("__eq__", "__ne__")):
            return NOT_IMPLEMENTED
    if x.is_python_constant() and y.is_iterator:
        # a constant's method would read the iterator's items first (see python_value)
        raise Unsupported("python_protocol", what=f"{name} of {x.describe()} with {y.describe()}")
    if isinstance(x, UserDefinedObjectVariable) or not (x.is_python_constant() and y.is_python_constant()) or \
            ((x.is_sequence or y.is_sequence) and name in ("__add__", "__mul__", "__rmul__")):
        # (the sequence's own methods: a tuple times one, or plus an empty tuple, is itself)
        return x.call_method(tx, name, [y], {})
    return tx.wrap(fold(getattr(cls, name), x.as_python_constant(), y.as_python_constant()), None, trusted=True)


def _overrides(tx, sub, base, name) -> bool:
    return class_lookup(tx, sub, name)[0] is not class_lookup(tx, base, name)[0]


_MRO_OF = type.__dict__["__mro__"].__get__   # a class's real MRO, whatever its metaclass says


def _reflected_first(tx, a, b, reflected_name, compare) -> bool:
    """b's reflected method goes first when b's type is a proper subclass of a's (for binary
    operators, only if it overrides that method). A subclass by its MRO, as PyType_IsSubtype decides: a
    virtual subclass (ABCMeta.register, a metaclass __subclasscheck__) does not count."""
    ta, tb = _type_of(a), _type_of(b)
    if not (isinstance(ta, type) and isinstance(tb, type)) or tb is ta or ta not in _MRO_OF(tb):
        return False
    return compare or _overrides(tx, tb, ta, reflected_name)


# builtin sequences add and repeat through the sequence protocol, which CPython tries only after both
# operands' number protocol (`NT(1, 2) + x.shape` is torch.Size.__radd__'s answer)
_SEQUENCE_SLOTS = {"__add__": {list.__add__, tuple.__add__, str.__add__, bytes.__add__, bytearray.__add__},
                   "__mul__": {list.__mul__, tuple.__mul__, str.__mul__, bytes.__mul__, bytearray.__mul__}}


def _concatenates_last(tx, a, b, name) -> bool:
    """a's `name` is a builtin sequence's concatenation (or repetition) and b's type has the reflected
    number method: that goes first."""
    ta, tb = _type_of(a), _type_of(b)
    if name not in _SEQUENCE_SLOTS or not (isinstance(ta, type) and isinstance(tb, type)):
        return False
    reflected = "__r" + name[2:]
    return class_lookup(tx, ta, name)[0] in _SEQUENCE_SLOTS[name] and \
        class_lookup(tx, tb, reflected)[0] is not MISSING


def _first_implemented(tx, order):
    """The result of the first `x.method(y)` of `order` that does not answer NotImplemented (None:
    all of them do)."""
    for x, method, y in order:
        result = dunder(tx, x, method, y)
        if not _is_not_implemented(result):
            return result
    return None


def rich_compare(tx, name, reflected_name, a, b):
    """`a < b`, `a == b`...: the result tracker, by CPython's protocol."""
    order = [(a, name, b), (b, reflected_name, a)]
    if _reflected_first(tx, a, b, reflected_name, True):
        order.reverse()
    result = _first_implemented(tx, order)
    if result is not None:
        return result
    if name in ("__eq__", "__ne__"):
        same = tx.is_same(a, b)
        return const(same if name == "__eq__" else not same)
    raise user_error(TypeError(f"'{_SYMBOLS[name]}' not supported between instances of "
                               f"'{_type_of(a).__name__}' and '{_type_of(b).__name__}'"))


def binary(tx, name, reflected_name, inplace_name, a, b):
    """`a + b` (or `a += b` with inplace_name): the result tracker, by CPython's protocol."""
    if inplace_name is not None:
        result = dunder(tx, a, inplace_name, b)
        if not _is_not_implemented(result):
            return result
    order = [(a, name, b)]
    if reflected_name is not None and _type_of(b) is not _type_of(a):
        order.append((b, reflected_name, a))
        if _reflected_first(tx, a, b, reflected_name, False) or _concatenates_last(tx, a, b, name):
            order.reverse()
    result = _first_implemented(tx, order)
    if result is not None:
        return result
    symbol = _SYMBOLS[name] + ("=" if inplace_name is not None else "")
    raise user_error(TypeError(f"unsupported operand type(s) for {symbol}: "
                               f"'{_type_of(a).__name__}' and '{_type_of(b).__name__}'"))
