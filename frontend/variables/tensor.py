"""Tensors and symbolic scalars in the graph: an fx Proxy plus a fake value with known metadata."""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
import torch.fx

from ..graph_break import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable

# Methods answered from the fake value's metadata at trace time (no graph node).
_STATIC_METHODS = {"dim", "ndimension", "is_contiguous", "is_floating_point", "is_complex", "element_size",
                   "get_device", "is_sparse", "nelement", "numel", "stride", "size", "type", "storage_offset"}
_DATA_DEPENDENT = {"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "nonzero_static",
                   "data_ptr", "untyped_storage", "storage", "cpu_numpy"}
_ATTR_CONSTANTS = {"dtype", "device", "layout", "ndim", "requires_grad", "is_leaf", "is_cuda", "is_sparse",
                   "is_quantized", "is_meta", "is_mps", "is_nested", "itemsize", "is_cpu"}


@dataclasses.dataclass(frozen=True, eq=False)
class TensorVariable(VariableTracker):
    proxy: torch.fx.Proxy
    cls: type = torch.Tensor

    @property
    def example(self):
        return self.proxy.node.meta["example_value"]

    def python_type(self):
        return self.cls

    def describe(self):
        e = self.example
        return f"tensor {tuple(e.shape)} {e.dtype}"

    def is_graph_input(self) -> bool:
        return self.proxy.node.op == "placeholder"

    def var_getattr(self, tx, name):
        from .lists import SizeVariable
        example = self.example
        if name in _ATTR_CONSTANTS:
            return ConstantVariable(getattr(example, name))
        if name == "shape":
            return SizeVariable.from_sizes(tx, self, example.shape)
        if name in ("T", "mT", "H", "mH", "real", "imag", "data"):
            if name == "data":
                return tx.output.call_method(self, "detach", [], {})
            return tx.output.call_function(getattr, [self, ConstantVariable(name)], {})
        if name == "grad":
            if self.source is not None and example.grad is None and self.is_graph_input():
                real = tx.output.real_value_of(self)
                if real is not None and real.grad is None:
                    from ...guards.guard import Guard
                    tx.output.guards.add(Guard.grad_is_none(self.source))
                    return ConstantVariable(None)
            raise Unsupported("unsupported_attr", name=name, obj="a tensor")
        if name in ("__class__",):
            from .user_defined import wrap_class
            return wrap_class(tx, self.cls)
        attr = getattr(torch.Tensor, name, None)
        if callable(attr):
            from .functions import BoundMethodVariable
            return BoundMethodVariable(TensorMethod(name), self)
        raise Unsupported("unsupported_attr", name=name, obj="a tensor")

    def call_method(self, tx, name, args, kwargs):
        from .lists import SizeVariable
        example = self.example
        if name in _DATA_DEPENDENT:
            if name == "item" and tx.config.capture_scalar_outputs:
                return tx.output.call_method(self, name, args, kwargs)
            raise Unsupported("data_dependent", what=f"Tensor.{name}()")
        if name in _STATIC_METHODS and all(a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()):
            if name == "type" and (args or kwargs):
                return tx.output.call_method(self, name, args, kwargs)
            value = getattr(example, name)(*[a.as_python_constant() for a in args],
                                           **{k: v.as_python_constant() for k, v in kwargs.items()})
            if isinstance(value, torch.Size):
                return SizeVariable.from_sizes(tx, self, value)
            return tx.output.wrap_value(value)
        if name == "__len__":
            return tx.output.wrap_value(example.shape[0])
        if name in ("__getitem__",):
            return tx.output.call_function(operator.getitem, [self] + args, kwargs)
        if name in ("__setitem__",):
            return tx.output.call_function(operator.setitem, [self] + args, kwargs)
        if name in ("requires_grad_",) and not tx.output.grad_enabled:
            pass
        if name == "__contains__":
            return tx.output.call_function(operator.contains, [self] + args, kwargs)
        return tx.output.call_method(self, name, args, kwargs)

    def unpack(self, tx):
        n = self.example.shape[0] if self.example.dim() else None
        if n is None:
            raise Unsupported("unsupported_op", what="iterating over a 0-d tensor")
        from .constant import const
        return [tx.output.call_function(operator.getitem, [self, const(i)], {}) for i in range(int(n))]

    def truth(self, tx):
        raise Unsupported("tensor_branch", what="truth value of a tensor")

    def has_len(self, tx):
        return int(self.example.shape[0])


@dataclasses.dataclass(frozen=True, eq=False)
class TensorMethod:
    """A tensor method looked up but not called yet (`f = x.add; f(y)`)."""
    name: str

    def __call__(self, tx, self_var, args, kwargs):
        return self_var.call_method(tx, self.name, args, kwargs)


@dataclasses.dataclass(frozen=True, eq=False)
class SymNodeVariable(VariableTracker):
    """A symbolic int/float/bool (a size, or a value computed from sizes)."""
    proxy: torch.fx.Proxy
    value: Any  # torch.SymInt / SymFloat / SymBool

    def python_type(self):
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}.get(type(self.value), type(self.value))

    def describe(self):
        return f"symbolic {self.value}"

    def call_method(self, tx, name, args, kwargs):
        return tx.output.call_function(getattr(operator, name.strip("_"), None) or getattr(type(self.value), name),
                                       [self] + args, kwargs)

    def truth(self, tx):
        return bool(self.value)  # specializes, and the ShapeEnv records a guard

    def evaluate(self):
        """Specialize to a Python number (adds a shape guard)."""
        return self.python_type()(self.value)
