"""Constants: None, bools, numbers, strings and other immutable values known at trace time."""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch

from ..graph_break import Unsupported
from .base import VariableTracker

# Types whose values are plain immutable constants (compared by ==, rebuilt with LOAD_CONST).
CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented),
                  torch.dtype, torch.device, torch.layout, torch.memory_format, range, slice)


def is_constant_value(value) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(is_constant_value(v) for v in value)
    return type(value) in CONSTANT_TYPES or (isinstance(value, (int, float, str)) and not isinstance(value, bool)
                                             and type(value).__module__ == "builtins")


@dataclasses.dataclass(frozen=True, eq=False)
class ConstantVariable(VariableTracker):
    value: Any

    def python_type(self):
        return type(self.value)

    def as_python_constant(self):
        return self.value

    def describe(self):
        return f"constant {self.value!r}"[:80]

    def var_getattr(self, tx, name):
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            raise  # same error as eager, surfaced by the translator
        if callable(attr) and not is_constant_value(attr):
            from .functions import BoundConstantMethod
            return BoundConstantMethod(self, name)
        return ConstantVariable(attr)

    def call_method(self, tx, name, args, kwargs):
        if all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in kwargs.values()):
            method = getattr(self.value, name)
            result = method(*[a.as_python_constant() for a in args],
                            **{k: v.as_python_constant() for k, v in kwargs.items()})
            from ..builder import wrap_constant_result
            return wrap_constant_result(tx, result)
        return super().call_method(tx, name, args, kwargs)

    def unpack(self, tx):
        if isinstance(self.value, (str, bytes, tuple, range, frozenset)):
            return [ConstantVariable(v) for v in self.value]
        raise Unsupported("unsupported_op", what=f"iterating over {self.describe()}")

    def reconstruct(self, codegen):
        codegen.load_const(self.value)


def const(value) -> ConstantVariable:
    return ConstantVariable(value)


NONE = ConstantVariable(None)
TRUE = ConstantVariable(True)
FALSE = ConstantVariable(False)

# operator functions that are safe to fold on constants
FOLDABLE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
            operator.pow, operator.lshift, operator.rshift, operator.and_, operator.or_, operator.xor,
            operator.matmul, operator.neg, operator.pos, operator.invert, operator.not_, operator.lt,
            operator.le, operator.eq, operator.ne, operator.gt, operator.ge, operator.getitem,
            operator.contains, operator.is_, operator.is_not, operator.truth, operator.abs, operator.index}
