"""Which graphs may raise for reasons only the values decide.

A graph whose raise would lose something runs inside a try block and, when it writes into its
inputs, copies them before each call (graph_raise.py): a cost as large as the inputs. Most such
graphs (an optimizer step, a layer updating its buffers) cannot raise at all once tracing has checked
their operands' sizes, dtypes and devices: those need no copies.

A graph raises by no value here when every op is one of those listed below on the operands named
there; anything else (an index tensor, a linear-algebra op, integer arithmetic, a tensor subclass,
an op missing from the lists) is taken to raise by value. Out-of-memory is the one raise of a listed
op this does not model (graph_raise.py then does not rerun the frame if an input was written before).

The same lists decide whether a lazy module may initialize while tracing (variables/lazy_module.py: no op
before its call may raise) and whether a TorchScript function may be a graph node (variables/torchscript.py:
a backend retracing the graph runs its ATen ops outside the TorchScript interpreter, whose errors differ).
"""
from __future__ import annotations

import operator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ops whose only value-dependent outcome on floating-point (or complex) tensors is a value (inf, nan):
# arithmetic, elementwise functions, reductions, matrix products; their in-place forms too (not a norm:
# a nuclear norm's SVD fails to converge on non-finite values)
_FLOAT_OPS = {
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg", "negative", "abs",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "pow",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "sigmoid", "relu", "gelu",
    "silu", "elu", "leaky_relu", "hardtanh", "softplus", "mish", "erf", "sign", "floor", "ceil", "round",
    "trunc", "frac", "clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "lerp", "addcmul",
    "addcdiv", "where", "sum", "mean", "prod", "amax", "amin", "var", "std", "softmax",
    "log_softmax", "matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "dot", "linear", "outer",
    "layer_norm", "dropout", "zero", "fill", "masked_fill",
}
_FLOAT_OPS |= {name + "_" for name in _FLOAT_OPS}
# of those, the ones a number the graph takes as an input (a symbolic learning rate) cannot make raise
# either; the others are listed for constant numbers only (a dropout probability > 1 raises)
_ARITHMETIC = {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg", "negative",
               "pow", "lerp", "addcmul", "addcdiv", "clamp", "clip", "clamp_min", "clamp_max"}
_ARITHMETIC |= {name + "_" for name in _ARITHMETIC}
# views, copies and metadata, checked by the trace whatever the values, of tensors of any dtype
_ANY_DTYPE_OPS = {
    "view", "reshape", "t", "transpose", "permute", "unsqueeze", "squeeze", "expand", "expand_as", "flatten",
    "contiguous", "clone", "detach", "copy_", "narrow", "view_as", "reshape_as", "size", "stride", "dim",
    "numel", "t_", "transpose_", "unsqueeze_", "squeeze_", "swapdims", "swapaxes", "movedim",
    "to", "float", "double", "type_as",
}
_OPERATOR_FLOAT = {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pos,
                   operator.matmul, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                   operator.pow, operator.ipow, abs}
# on Python or symbolic numbers: the operations that raise for no value (not `/`, `//`, `%`, `**`)
_NUMBER_OPS = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos}
# the nodes entering and leaving the modes the trace models (their arguments are constants it checked)
_STATE_OPS = {torch._C._set_grad_enabled, torch.amp.autocast_mode._enter_autocast,
              torch.amp.autocast_mode._exit_autocast, torch.autograd.grad_mode._enter_inference_mode,
              torch.autograd.grad_mode._exit_inference_mode, torch.set_default_dtype}
_TORCH_NAMESPACES = (torch, torch.nn.functional, torch._C._nn, torch.special, torch.linalg)


def _function_name(target):
    """The op name of a torch function of one of the namespaces above, else None."""
    name = getattr(target, "__name__", None)
    if name and any(getattr(ns, name, None) is target for ns in _TORCH_NAMESPACES):
        return name
    return None


def _values(node):
    args = []
    torch.fx.node.map_arg((node.args, node.kwargs), lambda n: args.append(n.meta.get("example_value")))
    return args, node.meta.get("example_value")


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _plain_tensors(values, floating: bool, symbolic: bool = False) -> bool:
    """Whether `values` are plain (fake) tensors, of floating-point dtypes if `floating`, and numbers,
    symbolic ones only if `symbolic`."""
    for v in values:
        if isinstance(v, (tuple, list)):
            if not _plain_tensors(v, floating, symbolic):
                return False
        elif isinstance(v, torch.Tensor):
            if not isinstance(v, torch._subclasses.FakeTensor) or v.is_sparse or \
                    (floating and not (v.is_floating_point() or v.is_complex())):
                return False
        elif isinstance(v, _SYMBOLIC):
            if not symbolic:
                return False
        elif v is not None and not isinstance(v, (bool, int, float, str, torch.dtype, torch.Size, torch.device,
                                                  torch.memory_format, torch.layout)):
            return False
    return True


def _basic_index(index) -> bool:
    """An index of ints, slices, None and Ellipsis only (checked by the trace against the sizes)."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items)


def _raises_by_value(node) -> bool:
    args, result = _values(node)
    if node.op == "call_method":
        name = node.target
    elif node.target in _STATE_OPS:
        return False
    elif node.target in (operator.getitem, operator.setitem):
        return not (_basic_index(node.args[1]) and _plain_tensors(args + [result], floating=False))
    elif node.target in _OPERATOR_FLOAT:
        if not any(isinstance(v, torch.Tensor) for v in args):
            return node.target not in _NUMBER_OPS or not _plain_tensors(args + [result], False, symbolic=True)
        return not _plain_tensors(args + [result], floating=True, symbolic=True)
    else:
        name = _function_name(node.target)
    if isinstance(name, str) and name.startswith("_foreach_"):      # the op on each tensor of the lists
        name = name[len("_foreach_"):]
    if name in _ANY_DTYPE_OPS:
        return not _plain_tensors(args + [result], floating=False, symbolic=name in ("size", "stride", "numel"))
    if name in _FLOAT_OPS:
        return not _plain_tensors(args + [result], floating=True, symbolic=name in _ARITHMETIC)
    return True


# ATen's names for ops listed above under their torch names
_ATEN_NAMES = {"_softmax": "softmax", "_log_softmax": "log_softmax", "native_layer_norm": "layer_norm",
               "_to_copy": "to", "_unsafe_view": "view", "lift_fresh": "detach", "rsub": "sub"}


# reads of a tensor's metadata (made by a fake run of a function taking tensors)
_METADATA_READS = {torch.ops.prim.device.default, torch.ops.prim.layout.default}


def _is_view_op(op) -> bool:
    """An ATen op returning a view of its first operand and writing nothing (`aten.t`, `aten.select.int`):
    its checks read sizes and strides only, which the trace checked."""
    returns = op._schema.returns
    return not op._schema.is_mutable and len(returns) == 1 and returns[0].alias_info is not None


def aten_call_raises_by_value(op, args, kwargs, result) -> bool:
    """Whether a call of the ATen op `op` (an OpOverload) on these fake values may raise for some values
    of the tensors (as `graph_raises_by_value` decides for a node of a graph)."""
    values = list(args) + list(kwargs.values()) + [result]
    if not isinstance(op, torch._ops.OpOverload):
        return True
    if op in _METADATA_READS:
        return False
    if _is_view_op(op):
        return not _plain_tensors(values, floating=False, symbolic=True)
    name = op.overloadpacket.__name__
    name = _ATEN_NAMES.get(name, name)
    if name in _ANY_DTYPE_OPS:
        return not _plain_tensors(values, floating=False, symbolic=name in ("size", "stride", "numel"))
    if name in _FLOAT_OPS:
        return not _plain_tensors(values, floating=True, symbolic=name in _ARITHMETIC)
    return True


def graph_raises_by_value(graph) -> bool:
    """Whether an op of `graph` (an fx Graph) may raise for some values of its inputs (see the module
    docstring)."""
    for node in graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        if node.op != "call_function" and node.op != "call_method":
            return True
        if _raises_by_value(node):
            return True
    return False


class AtenCallRecorder(TorchDispatchMode):
    """The ATen calls made under it: (op, args, kwargs, result)."""
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.calls.append((func, args, kwargs, result))
        return result

    def draws_random(self) -> bool:
        return any(torch.Tag.nondeterministic_seeded in getattr(op, "tags", ()) for op, *_ in self.calls)
