"""Tensors and symbolic scalars in the graph: an fx Proxy plus a fake value with known metadata."""
from __future__ import annotations

import dataclasses
import operator
import types
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ...guards.guard import Guard
from ...guards.source import AttrSource, ItemSource, TensorPropertySource
from .. import reads
from ..graph_break import Unsupported, user_error
from .base import TensorMethod, VariableTracker, families, wrap_class
from .constant import ConstantVariable, const
from .lists import SizeVariable, TupleVariable

# Methods answered from the fake value's metadata at trace time (no graph node).
_STATIC_METHODS = {"dim", "ndimension", "is_contiguous", "is_floating_point", "is_complex", "element_size",
                   "get_device", "is_sparse", "nelement", "numel", "stride", "size", "type", "storage_offset"}
# Methods that act on the real autograd graph (not on values): they run outside the graph.
_AUTOGRAD_RUNTIME = {"backward", "retain_grad", "register_hook", "register_post_accumulate_grad_hook"}
_DATA_DEPENDENT = {"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "nonzero_static",
                   "data_ptr", "untyped_storage", "storage", "cpu_numpy"}
# Facts about a tensor's storage that a fake tensor does not carry
_STORAGE_QUERIES = {"is_shared", "is_pinned"}
_ATTR_CONSTANTS = {"dtype", "device", "layout", "ndim", "requires_grad", "is_leaf", "is_cuda", "is_sparse",
                   "is_quantized", "is_meta", "is_mps", "is_nested", "itemsize", "is_cpu"}


def _masked_write_with_grad(tx, target, args) -> bool:
    """`target[mask] = value` with a boolean tensor among the indices, and grad mode on with the
    target or the value requiring grad."""
    index, value = args[0], args[1]
    parts = index.items if isinstance(index, TupleVariable) else (index,)
    masked = any(isinstance(p, TensorVariable) and p.example.dtype in (torch.bool, torch.uint8) for p in parts)
    grads = target.example.requires_grad or isinstance(value, TensorVariable) and value.example.requires_grad
    return masked and grads and tx.output.grad_enabled


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
        if name in families.replaced_names(self.cls):
            return self._replaced_attr(tx, name)
        return self.tensor_attr(tx, name)

    def tensor_attr(self, tx, name):
        """torch.Tensor's attribute `name` of this tensor (`torch.Tensor.name.__get__(x)`), whatever its
        class defines."""
        if tx.output.backward_proof is not None:
            tx.output.backward_proof.check_tensor_read(self, name)
        if self.cls is not torch.Tensor:
            getter = families.getter(name)
            dispatched = families.dispatch(tx, getter, [self], {}) if getter is not None else None
            if dispatched is not None:
                return dispatched      # the class's __torch_function__ answered `x.name`
        example = self.example
        if name in _ATTR_CONSTANTS:
            value = getattr(example, name)
            if name == "is_leaf":
                self._guard_leafness(tx)
            if name == "device":    # eager makes a new device object at each read (`x.device is x.device`: False)
                value = torch.device(value.type, value.index)
            return ConstantVariable(value)
        if name == "shape":
            return tx.output.metadata(self, "size", (), example.shape)
        if name in ("T", "mT", "H", "mH", "real", "imag", "data"):
            if name == "data":
                return tx.output.data_alias(self)
            return tx.output.call_function(getattr, [self, ConstantVariable(name)], {})
        if name in ("grad", "_grad"):
            written = tensor_attrs(tx, self)
            if "grad" in written:    # (set while tracing: the very value, as eager gives it back)
                if not example.is_leaf:
                    raise Unsupported("unsupported_attr", name=name, obj="a non-leaf tensor (eager warns)")
                return written["grad"]
            if self.source is not None and example.grad is None and self.is_graph_input() and \
                    not families.own_hook(self.cls):   # (the guard reads `.grad`, which would run the hook)
                real = tx.output.real_value_of(self)
                if real is not None and real.grad is None:
                    tx.output.guards.add(Guard.grad_is_none(self.source))
                    return ConstantVariable(None)
            if self.source is not None and self.is_graph_input() and not families.own_hook(self.cls):
                # a leaf input's gradient (an optimizer's `p.grad`): an input of its own, read (and
                # guarded) through the tensor; a non-leaf's `.grad` warns at each read, the guard's too
                real = tx.output.real_value_of(self)
                if real is not None and real.is_leaf and type(real.grad) is torch.Tensor:
                    self._guard_leafness(tx)
                    return tx.wrap(real.grad, AttrSource(self.source, "grad"))
            raise Unsupported("unsupported_attr", name=name, obj="a tensor")
        if name == "grad_fn" and example.is_leaf:
            self._guard_leafness(tx)
            return ConstantVariable(None)    # a leaf has none (is_leaf: no grad needed, or no grad_fn)
        if name in ("__class__",):
            return wrap_class(tx, self.cls)
        attr = getattr(torch.Tensor, name, None)
        if callable(attr):
            return families.BoundMethodVariable(TensorMethod(name), self)
        own = tensor_attrs(tx, self)
        if name in own:
            return own[name]
        if not hasattr(self.cls, name):   # (the class is guarded with the tensor)
            # an attribute of this tensor object's own (`x.test = ...`; `hasattr(x, "test")`): read from
            # the real input, its presence or absence guarded
            real = tx.output.real_value_of(self) if self.is_graph_input() and self.source is not None else None
            if real is not None:
                dict_source = AttrSource(self.source, "__dict__")
                own = reads.instance_attr(tx, real, self.source, name, dict_source)
                if own is not reads.MISSING:
                    return tx.wrap(own, ItemSource(dict_source, name))
                raise user_error(AttributeError(f"'{type(real).__name__}' object has no attribute '{name}'"))
            if not self.is_graph_input():
                # made while tracing: it has no attributes of its own but those set while tracing
                raise user_error(AttributeError(f"'{type(example).__name__}' object has no attribute '{name}'"))
        elif self.cls is not torch.Tensor and not hasattr(torch.Tensor, name):
            return self._subclass_attr(tx, name)
        raise Unsupported("unsupported_attr", name=name, obj="a tensor")

    def _guard_leafness(self, tx):
        """An input's `is_leaf` is not part of its tensor guard (which checks requires_grad): a later call
        may pass a non-leaf (`x * 2`) where a leaf was, or the other way round. Guarded when read."""
        if self.source is not None:
            tx.output.guards.add(Guard.constant(AttrSource(self.source, "is_leaf"), self.example.is_leaf))

    def _replaced_attr(self, tx, name):
        """`x.name` where the tensor's class defines again a torch.Tensor attribute: the class's own (its
        method bound, its property run, its constant), as Python finds it before torch's (no
        `__torch_function__` runs). An attribute of the tensor object itself by that name is not modelled."""
        attr, src = reads.class_lookup(tx, self.cls, name)
        if self.is_graph_input() and self.source is not None:
            real = tx.output.real_value_of(self)
            if real is None or reads.instance_attr(tx, real, self.source, name,
                                                   AttrSource(self.source, "__dict__")) is not reads.MISSING:
                raise Unsupported("unsupported_attr", name=name, obj="a tensor (also set on the tensor object)")
        elif name in tensor_attrs(tx, self) or self.is_graph_input():
            raise Unsupported("unsupported_attr", name=name, obj="a tensor (also set on the tensor object)")
        return families.bind_descriptor(tx, self, None, attr, name, src)

    def _subclass_attr(self, tx, name):
        """An attribute a subclass adds (torch.Tensor has no such name): its method, property or
        class constant, as the class holds it (the lookup guarded)."""
        attr, _ = reads.class_lookup(tx, self.cls, name)
        if attr is reads.MISSING:
            raise Unsupported("unsupported_attr", name=name, obj="a tensor")
        return self._replaced_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name in families.replaced_names(self.cls):
            # what `x.name(...)` means is the class's own method (var_getattr); torch.Tensor's by name is
            # asked for explicitly (call_tensor_method)
            raise Unsupported("unsupported_call", fn=f"{self.cls.__name__}.{name}",
                              detail=" (the class replaces torch.Tensor's)")
        return self.call_tensor_method(tx, name, args, kwargs)

    def call_tensor_method(self, tx, name, args, kwargs):
        """torch.Tensor's method `name` on this tensor (`torch.Tensor.name(x, ...)`), whatever its class defines."""
        if tx.output.backward_proof is not None:
            tx.output.backward_proof.check_tensor_read(self, name)
        reads.tensor_class_entry(tx, name)    # (the graph calls the method by name: it must stay the same)
        dispatched = families.dispatch(tx, families.method_func(name), [self] + list(args), kwargs)
        if dispatched is not None:
            return dispatched      # the __torch_function__ of an argument's class answered
        if name == "as_subclass" and len(args) + len(kwargs) == 1 and (args or "cls" in kwargs):
            cls = (args[0] if args else kwargs["cls"]).as_python_constant_or_none()
            return families.as_subclass(tx, self, cls)
        example = self.example
        if name in _AUTOGRAD_RUNTIME:
            raise Unsupported("unsupported_call", fn=f"Tensor.{name}",
                              detail=" (it acts on the autograd graph at run time)")
        if name == "numpy" and not args and not kwargs:
            return families.tensor_as_ndarray(tx, self)
        if name in _KNOWN_VALUE_METHODS and not args and not kwargs:
            value = known_value(self)
            if value is not None:
                return ConstantVariable(_read_known(value, name))
        if name in _DATA_DEPENDENT:
            # (a backward being proved pure reads no value: AOTAutograd traces it with fake tensors)
            if name == "item" and tx.output.capture_scalar_outputs and tx.output.backward_proof is None:
                return tx.output.call_method(self, name, args, kwargs)
            raise Unsupported("data_dependent", what=f"Tensor.{name}()")
        if name == "type":
            args, kwargs = [_legacy_type_name(a) for a in args], {k: _legacy_type_name(v) for k, v in kwargs.items()}
        if name in _STATIC_METHODS and all(a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()):
            if name == "type" and (args or kwargs):
                return tx.output.call_method(self, name, args, kwargs)
            const_args = [a.as_python_constant() for a in args]
            const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
            value = getattr(example, name)(*const_args, **const_kwargs)
            if name == "storage_offset" and not isinstance(value, torch.SymInt):
                _guard_input_offsets(tx)
            return tx.output.metadata(self, name, tuple(const_args), value, const_kwargs)
        if name == "new" and len(args) == 1:
            if isinstance(args[0], SizeVariable):
                # `x.new(torch.Size)` is a shape, `x.new(tuple)` is data: the graph holds sizes as
                # plain tuples, so a Size goes in as separate ints (same meaning as in eager)
                return tx.output.call_method(self, name, list(args[0].items), kwargs)
        if name == "__len__":
            if not example.dim():
                raise user_error(TypeError("len() of a 0-d tensor"))
            if "shape" in families.replaced_names(self.cls):
                # torch.Tensor.__len__ answers `self.shape[0]`: the class's own `shape`
                shape = self._replaced_attr(tx, "shape")
                return shape.call_method(tx, "__getitem__", [const(0)], {})
            return tx.output.metadata(self, "size", (0,), example.shape[0])
        if name in ("__getitem__",):
            moded = families.tensor_getitem(tx, self, args[0]) if len(args) == 1 and not kwargs else None
            if moded is not None:
                return moded
            if len(args) == 1 and not kwargs:
                return self.getitem(tx, args[0])
            return tx.output.call_function(operator.getitem, [self] + args, kwargs)
        if name in ("__setitem__",):
            if _masked_write_with_grad(tx, self, args):
                # the graph is fine, but its backward reads `grad[mask]`, whose shape no fake tensor
                # knows: AOTAutograd could not differentiate it
                raise Unsupported("data_dependent", what="the backward of an assignment through a boolean mask")
            return tx.output.call_function(operator.setitem, [self] + args, kwargs)
        if name == "requires_grad_" and not self.example.requires_grad and _turns_on(args, kwargs) and \
                self.proxy.node.op == "placeholder":
            # an input made a leaf inside the graph: a backend that retraces the graph (AOTAutograd) does
            # not change the input's flag; one that runs it as recorded does, and a graph raising after
            # that would rerun its frame with the flag already on (graph_raise.py)
            raise Unsupported("attribute_write", what=f"{self.describe()}.requires_grad_() of a graph input")
        if name == "requires_grad_" and not self.example.requires_grad and _turns_on(args, kwargs) and \
                not tx.output.eager_autograd and tx.output.grad_enabled:
            # a new autograd leaf made inside the graph: a graph's outputs derive from its inputs, so
            # AOTAutograd would return them without the grad_fn linking them to the leaf (a backend
            # that runs the ops as recorded makes the leaf as eager does). Under no_grad nothing records
            # it: the graph keeps the call, and the leaf leaving the graph gets its flag back
            # (codegen); grad enabled later in the graph breaks there (OutputGraph.set_grad_enabled)
            raise Unsupported("attribute_write", what=f"{self.describe()}.requires_grad_() making a new leaf")
        if name == "requires_grad_" and self.example.requires_grad and not _turns_on(args, kwargs) and \
                self.proxy.node.op == "placeholder":
            # an input leaf (a parameter) frozen inside the graph: AOTAutograd's inputs are not leaves,
            # it cannot change their flag (an error there); it runs as Python
            raise Unsupported("attribute_write", what=f"{self.describe()}.requires_grad_(False) of a graph input")
        if name == "__contains__":
            return tx.output.call_function(operator.contains, [self] + args, kwargs)
        result = tx.output.call_method(self, name, args, kwargs)
        if isinstance(result, ConstantVariable) and result.value is not None:
            return self._query_answer(tx, name, args, kwargs, result)
        return result

    def _query_answer(self, tx, name, args, kwargs, result):
        """A query the fake value answered with a Python value (`x._is_view()`, `x.is_shared()`), which
        the tensor guard (dtype, sizes, strides, flags) does not cover: an input's answer is the real
        input's (a fake carries no storage facts), asked again by a guard; a storage fact of a tensor
        made in the graph (a view of a shared input is shared) is not known here."""
        method = reads.tensor_class_entry(tx, name)
        if isinstance(method, types.FunctionType) and not str(method.__module__).startswith("torch."):
            # a method a program put on torch.Tensor: what it answers may read anything of the real
            # tensor, and it is not run while compiling
            raise Unsupported("unsupported_call", fn=f"Tensor.{name}",
                              detail=" (a method added to torch.Tensor, answering a Python value)")
        if self.is_graph_input() and self.source is not None and self.cls is torch.Tensor and \
                not args and not kwargs:
            real = tx.output.real_value_of(self)
            if real is not None:
                value = getattr(real, name)()
                tx.output.guards.add(Guard.constant(TensorPropertySource(self.source, name), value))
                return const(value)
        if name in _STORAGE_QUERIES:
            raise Unsupported("unsupported_call", fn=f"Tensor.{name}",
                              detail=" (a storage fact of a tensor made in the graph)")
        return result

    def getitem(self, tx, index):
        """`self[index]` in the graph. A lone 0-d integer tensor index (not uint8 or bool, which are
        masks) makes eager `select` at its value; indexing reads that value as a constant, so the
        graph would be guarded on it and recompile for each index (each expert a MoE loop visits).
        When the index is a graph input the trace has not written, the graph says `torch.select(self,
        0, index)`: the same view, the value read at run time, only its bounds guarded."""
        if _is_select_index(self, index) or _is_symbolic_select_index(self, index):
            return tx.output.call_function(torch.select, [self, const(0), index], {})
        return tx.output.call_function(operator.getitem, [self, index], {})

    def unpack(self, tx):
        if families.needs_dispatch(tx, [self], {}):
            # Tensor.__iter__ through the class's __torch_function__: not modelled
            raise Unsupported("torch_value", what=f"iterating over a tensor of {self.cls.__name__}")
        n = self.example.shape[0] if self.example.dim() else None
        if n is None:
            raise Unsupported("python_protocol", what="iterating over a 0-d tensor")
        return [tx.output.call_function(operator.getitem, [self, const(i)], {}) for i in range(int(n))]

    def truth(self, tx):
        value = known_value(self)
        if value is not None:
            return _read_known(value, "__bool__")
        ambiguous = ambiguous_truth(self)
        if ambiguous is not None:     # (none or several elements: eager's bool() refuses whatever they are)
            raise user_error(ambiguous)
        raise Unsupported("tensor_branch", what="truth value of a tensor")

    def has_len(self, tx):
        return int(self.example.shape[0])


# Methods reading a tensor's value into a Python number: answered at trace time for a known value.
_KNOWN_VALUE_METHODS = {"item", "__bool__", "__int__", "__float__", "__index__"}


def _guard_input_offsets(tx):
    """A storage offset read while tracing: the tensor guard checks sizes and strides, not offsets, and
    a view's offset is its base's plus its own, so the (static) offset of every tensor input so far is
    guarded (a tensor read here can only alias inputs that already exist)."""
    for source, _, value in tx.output.graph_inputs:
        # (an input with symbolic sizes, strides or offset has its offset among the shape guards)
        if isinstance(value, torch.Tensor) and source is not None and type(value) is torch.Tensor and \
                source not in tx.output.input_properties:
            offset = value.storage_offset()
            tx.output.guards.add(Guard.constant(TensorPropertySource(source, "storage_offset"), offset))


def known_value(var):
    """The value of a tensor made while tracing from constants alone (`torch.as_tensor(3)`, `t + 1` of
    such a `t`), which every run computes alike: the fake tensor's constant, kept by fake propagation
    only while no op with a non-constant operand (or a random one) writes into it or its views, and
    dropped on a rollback (OutputGraph.forget_constants). None when not known (a plain tensor only:
    a subclass may answer `__index__` and friends itself)."""
    if not isinstance(var, TensorVariable) or var.cls is not torch.Tensor:
        return None
    example = var.example
    constant = getattr(example, "constant", None)
    if constant is None or example.requires_grad:   # (`float(t)` of a tensor requiring grad warns)
        return None
    return constant


def _read_known(value, name):
    """`value.name()` of a known tensor value, as eager reads it; what it raises (a tensor of many
    elements has no truth value, a float one no `__index__`) the real call raises: a graph break."""
    try:
        return getattr(value, name)()
    except (TypeError, ValueError, RuntimeError):
        raise Unsupported("data_dependent", what=f"Tensor.{name}() (which raises here)") from None


def _is_select_index(obj, index) -> bool:
    """`obj[index]` is eager's `obj.select(0, index.item())` and the index's value is known to the trace
    (an unwritten graph input of a plain tensor class)."""
    if not isinstance(index, TensorVariable) or index.cls is not torch.Tensor or \
            obj.cls not in (torch.Tensor, torch.nn.Parameter):
        return False
    fake, node = index.example, index.proxy.node
    dtype = fake.dtype
    return fake.dim() == 0 and obj.example.dim() > 0 and node.op == "placeholder" and \
        fake._version == node.meta.get("version") and dtype not in (torch.uint8, torch.bool) and \
        not dtype.is_floating_point and not dtype.is_complex


def _is_symbolic_select_index(obj, index) -> bool:
    """`obj[n]` with n a symbolic int inside obj's first size: eager's `obj.select(0, n)`, which keeps n
    symbolic (only its bounds guarded) where indexing reads its value (a guard on the value: a
    recompile for each). Out of bounds it is indexed, which raises eager's IndexError."""
    if not isinstance(index, SymNodeVariable) or index.python_type() is not int or \
            obj.cls not in (torch.Tensor, torch.nn.Parameter) or obj.example.dim() == 0:
        return False
    value, size = index.value.node.hint, obj.example.shape[0]
    size = size.node.hint if isinstance(size, torch.SymInt) else size
    return value is not None and size is not None and -size <= value < size


@dataclasses.dataclass(frozen=True, eq=False)
class SymNodeVariable(VariableTracker):
    """A symbolic int/float/bool: a size, or a value computed from sizes (or, with
    `config.capture_scalar_outputs`, from `.item()`). It stays symbolic through arithmetic and
    torch calls; whatever needs a concrete value (a branch, `range`, `str`) specializes it, which
    the ShapeEnv records as a shape guard."""
    proxy: torch.fx.Proxy
    value: Any  # torch.SymInt / SymFloat / SymBool

    def python_type(self):
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}.get(type(self.value), type(self.value))

    def describe(self):
        return f"symbolic {self.python_type().__name__} {self.value}"

    def call_method(self, tx, name, args, kwargs):
        if name in ("__bool__",):
            return ConstantVariable(self.truth(tx))
        if name in ("__int__", "__index__", "__trunc__", "__floor__", "__ceil__") and self.python_type() is int:
            return self
        if name in _SPECIALIZING_METHODS or not name.startswith("__") or \
                not all(_accepted_operand(self.python_type(), a) for a in args):
            # `n.__str__()`, `n.bit_length()`, `f.is_integer()`: on the specialized value
            value = self.evaluate()
            result = getattr(value, name)(*[concrete(a) for a in args], **{k: concrete(v) for k, v in kwargs.items()})
            return tx.wrap(result, None, trusted=True)
        fn = _DUNDER_FUNCTIONS.get(name)
        if fn is not None:
            if name in _REFLECTED:
                return tx.output.call_function(fn, list(args) + [self], kwargs)  # `3 - n`
            return tx.output.call_function(fn, [self] + list(args), kwargs)
        raise Unsupported("unsupported_call", fn=f"{self.describe()}.{name}", detail="")

    def guard_identity(self, tx):
        # the tracker holds a SymInt, not the number the frame will pass: which object it is (`n is m`)
        # depends on CPython's caching of small ints, and cannot be guarded
        raise Unsupported("python_protocol", what=f"the identity of {self.describe()}")

    def truth(self, tx):
        # `bool(n)` asks only whether n is nonzero (a guard `n != 0`); bool(int(n)) would
        # specialize n to its value (`all(x.shape)` recompiled for every new length)
        try:
            return bool(self.value)
        except GuardOnDataDependentSymNode:
            raise Unsupported("data_dependent", what=f"a decision on the data-dependent value {self.value}") from None

    def evaluate(self):
        """Specialize to a Python number (the ShapeEnv records a guard); data-dependent values
        (from `.item()`) cannot be specialized at trace time: a graph break."""
        try:
            return self.python_type()(self.value)
        except GuardOnDataDependentSymNode:
            raise Unsupported("data_dependent", what=f"a decision on the data-dependent value {self.value}") from None


def _accepted_operand(kind, var) -> bool:
    """Does `kind`'s own dunder (`int.__add__`) take var as an exact operand, the answer a symbolic
    operator gives? Otherwise it answers on specialized values (`int.__add__(3, 2.5)` is
    NotImplemented, a numpy scalar has its own type)."""
    operand = var.python_type() if isinstance(var, SymNodeVariable) else \
        type(var.as_python_constant()) if var.is_python_constant() else None
    return operand in {int: (int, bool), float: (float, int, bool), bool: (bool,)}.get(kind, ())


def concrete(var):
    """A symbolic number's value (specialized, with a guard), or a constant's."""
    return var.evaluate() if isinstance(var, SymNodeVariable) else var.as_python_constant()


_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__", "__rand__",
              "__ror__", "__rxor__"}
_SPECIALIZING_METHODS = {"__str__", "__repr__", "__format__", "__hash__", "__float__", "__complex__"}
_DUNDER_FUNCTIONS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow,
    "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor, "__lshift__": operator.lshift,
    "__rshift__": operator.rshift, "__radd__": operator.add, "__rsub__": operator.sub, "__rmul__": operator.mul,
    "__rtruediv__": operator.truediv, "__rfloordiv__": operator.floordiv, "__rmod__": operator.mod,
    "__rpow__": operator.pow, "__rand__": operator.and_, "__ror__": operator.or_, "__rxor__": operator.xor,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge, "__neg__": operator.neg, "__pos__": operator.pos,
    "__abs__": abs, "__invert__": operator.invert, "__round__": round,
    "__iadd__": operator.add, "__isub__": operator.sub, "__imul__": operator.mul, "__itruediv__": operator.truediv,
    "__ifloordiv__": operator.floordiv, "__imod__": operator.mod,
}


def _turns_on(args, kwargs) -> bool:
    """Do `requires_grad_`'s arguments ask for True (its default)?"""
    flag = args[0] if args else kwargs.get("requires_grad")
    return flag is None or not (flag.is_python_constant() and not flag.as_python_constant())


def tensor_attrs(tx, var) -> dict:
    """Attributes set (`y.note = 3`) on a tensor made while tracing: trace state kept in the side
    effects by graph node, so a checkpoint restores them."""
    return tx.output.side_effects.contents.get(("tensor attributes", var.proxy.node), {})


def set_tensor_attr(tx, var, name, value) -> None:
    """`y.note = value` on a tensor, for a name the tensor class does not define: state of the trace
    (reads see it); a tensor made while tracing gets it when it leaves the graph, a graph input
    after the graph (side_effects.codegen_replay)."""
    if name == "data" and tx.is_same(var, value):
        # `p.data = p.to(dtype)` when `.to` had nothing to do (nn.Module.to/_apply): the tensor takes
        # its own data, which changes nothing
        return
    if name in ("grad", "_grad") and var.cls is torch.Tensor:
        _check_grad_assignment(tx, var, value)
        name = "grad"       # (`_grad` is the same slot)
    elif hasattr(var.cls, name) or var.cls.__setattr__ is not object.__setattr__:
        raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {var.describe()}")
    if var.is_graph_input() and var.proxy.node.meta.get("source") is None:
        raise Unsupported("attribute_write", what=f"setting attribute {name!r} on {var.describe()}")
    attrs = dict(tensor_attrs(tx, var))
    attrs[name] = value
    tx.output.side_effects.track(("tensor attributes", var.proxy.node), attrs)


def _check_grad_assignment(tx, var, value) -> None:
    """`t.grad = value`: eager's checks (a tensor or None, of t's dtype, device and size), made on a
    fake of t's metadata; what they raise is the program's error."""
    if isinstance(value, ConstantVariable) and value.value is None:
        return
    if not isinstance(value, TensorVariable) or value.cls is not torch.Tensor or tx.is_same(var, value):
        raise Unsupported("attribute_write", what=f"setting the grad of {var.describe()} to {value.describe()}")
    example = var.example
    with tx.output.tracing_state(), tx.output.fake_mode:
        stand_in = torch.empty_strided(example.shape, example.stride(), dtype=example.dtype, device=example.device)
        try:
            stand_in.grad = value.example
        except RuntimeError as e:
            raise user_error(RuntimeError(*e.args)) from None


families.register(TensorVariable, SymNodeVariable, known_value, tensor_attrs)


_LEGACY_TENSOR_CLASS = type(torch.FloatTensor)     # (torch.tensortype, not a torch attribute)


def _legacy_type_name(var):
    """`x.type(torch.FloatTensor)`: a legacy tensor class becomes its name ("torch.FloatTensor"), which
    `Tensor.type` takes for the same type and the graph can hold (the class read is guarded)."""
    if var.is_python_constant():
        value = var.as_python_constant()
        if type(value) is _LEGACY_TENSOR_CLASS:
            return ConstantVariable(f"{value.__module__}.{value.__name__}")
    return var


def ambiguous_truth(var):
    """The RuntimeError `bool()` of a plain tensor raises for its size alone (no elements, or more than
    one), known without its values when the size is static; None otherwise."""
    if not isinstance(var, TensorVariable) or var.cls is not torch.Tensor:
        return None
    numel = var.example.numel()
    if type(numel) is not int or numel == 1:
        return None
    return RuntimeError(f"Boolean value of Tensor with {'no values' if numel == 0 else 'more than one value'} "
                        "is ambiguous")
