"""`torch.tensor(data)` (and `torch.as_tensor(data)`) of nested lists and tuples whose scalars include
tensors or symbolic numbers: built in the graph from its scalars as torch's constructor stores them.

Compile time only. The constructor walks the data in C: the sizes come from the first item at each
depth, the dtype is the promotion of every scalar's (a tensor's own dtype, `int` int64, `float` the
default dtype, `bool` bool), and each scalar is stored by converting it to a Python number -- a
tensor through `__index__` (integer targets) or `__float__` (floating targets), a float through a
double. The graph does the same conversion per scalar (a floating target goes through float64, as
the double does), stacks the 0-d results and reshapes them. Whatever the constructor would refuse
or treat otherwise (ragged data, a float tensor stored as an integer, a value that may overflow, a
tensor of more than one element or requiring grad, a numpy array or scalar among the data, complex
numbers) is not built here: the call goes on as before (a graph break when it reads tensor data).
"""
from __future__ import annotations

import torch

from .constant import ConstantVariable, const
from .lists import ListVariable, SizeVariable, TupleVariable
from .tensor import SymNodeVariable, TensorVariable

_FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_INTEGRAL = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _is_sequence(var) -> bool:
    return type(var) in (ListVariable, TupleVariable, SizeVariable) and var.python_type() in (list, tuple, torch.Size)


def _sizes(tx, data) -> list:
    """The constructor's sizes: the length at each depth, following the first item."""
    sizes, var = [], data
    while _is_sequence(var):
        items = var.get_items(tx)
        sizes.append(len(items))
        if not items:
            break
        var = items[0]
    return sizes


def _scalars(tx, var, sizes, depth, out) -> bool:
    """The scalars of `var` in storing order into `out`; False when the data is ragged or holds a
    sequence where a scalar is stored (the constructor raises)."""
    if depth == len(sizes):
        if _is_sequence(var):
            return False
        out.append(var)
        return True
    if not _is_sequence(var):
        return False
    items = var.get_items(tx)
    return len(items) == sizes[depth] and all(_scalars(tx, item, sizes, depth + 1, out) for item in items)


def _scalar_dtype(tx, var):
    """The dtype the constructor infers for one scalar; None for one not built here."""
    if isinstance(var, TensorVariable):
        e = var.example
        if var.cls is not torch.Tensor or e.dtype not in _FLOATING + _INTEGRAL or e.device.type != "cpu" or \
                e.requires_grad or e.numel() != 1:
            # (a tensor requiring grad makes `__float__` warn; one of more elements raises)
            return None
        return e.dtype
    if isinstance(var, SymNodeVariable):
        kind = var.python_type()
        return torch.int64 if kind is int else tx.output.default_dtype if kind is float else None
    if isinstance(var, ConstantVariable):
        kind = type(var.value)     # (exact types: a numpy scalar infers numpy's dtype)
        return {bool: torch.bool, int: torch.int64, float: tx.output.default_dtype}.get(kind)
    return None


def _fits(source, target) -> bool:
    """Every value of integer dtype `source` converts to `target` without the overflow check failing."""
    if source is torch.bool:
        return True
    if target is torch.bool:
        return False
    small, large = torch.iinfo(source), torch.iinfo(target)
    return large.min <= small.min and small.max <= large.max


def _storable(var, target) -> bool:
    """Whether `_stored` models the constructor's conversion of scalar `var` to `target`."""
    if isinstance(var, ConstantVariable) or target in _FLOATING:
        return True
    if isinstance(var, SymNodeVariable):
        return var.python_type() is int and target is torch.int64   # (a smaller dtype may overflow)
    # `__index__`: integer tensors only, then the overflow check
    return var.example.dtype in _INTEGRAL and _fits(var.example.dtype, target)


def _stored(tx, var, target):
    """A 0-d tensor of dtype `target` holding what the constructor stores for scalar `var`."""
    if isinstance(var, ConstantVariable):
        # the constructor itself on the one number: the very conversion it does inside a list
        return tx.output.call_function(torch.tensor, [var], {"dtype": const(target)})
    if isinstance(var, SymNodeVariable):
        kind = torch.float64 if target in _FLOATING else torch.int64
        number = tx.output.call_function(torch.scalar_tensor, [var], {"dtype": const(kind)})
    else:
        number = tx.output.call_method(var, "reshape", [const(())], {})
    dtype = number.example.dtype
    if dtype is target:
        return number     # (a floating tensor through `__float__` and back: the same value)
    if target in _FLOATING and dtype is not torch.float64:
        number = tx.output.call_method(number, "to", [const(torch.float64)], {})    # the double
    return number if number.example.dtype is target else tx.output.call_method(number, "to", [const(target)], {})


def _options(kwargs):
    """The constant keyword arguments, or None for one not constant."""
    if not all(v.is_python_constant() for v in kwargs.values()):
        return None
    return {k: v.as_python_constant() for k, v in kwargs.items()}


# the keywords each constructor takes (the other arguments are keyword-only, or passed as the data)
_KEYWORDS = {torch.tensor: {"dtype", "device", "requires_grad", "pin_memory"}, torch.as_tensor: {"dtype", "device"}}


def tensor_from_data(tx, fn, args, kwargs):
    """`torch.tensor(data, dtype=..., device="cpu")` (`fn`, or `torch.as_tensor`) built from its scalars,
    or None when the data holds no tensor or symbolic number, or is not modelled here."""
    options = _options(kwargs)
    if len(args) != 1 or options is None or set(options) - _KEYWORDS[fn] or \
            options.get("requires_grad") or options.get("pin_memory") or \
            options.get("device") not in (None, "cpu", torch.device("cpu")):
        return None
    data = args[0]
    if isinstance(data, SymNodeVariable):    # `torch.tensor(n)`: a 0-d tensor of the one number
        sizes, scalars = [], [data]
    else:
        if not _is_sequence(data):
            return None
        sizes = _sizes(tx, data)
        scalars = []
        if not _scalars(tx, data, sizes, 0, scalars) or \
                not any(isinstance(s, (TensorVariable, SymNodeVariable)) for s in scalars):
            return None
    dtypes = [_scalar_dtype(tx, s) for s in scalars]
    if None in dtypes:
        return None
    target = options.get("dtype")
    if target is None:
        target = dtypes[0]
        for d in dtypes[1:]:
            target = torch.promote_types(target, d)
    if target not in _FLOATING + _INTEGRAL or not all(_storable(s, target) for s in scalars):
        return None
    stored = [_stored(tx, s, target) for s in scalars]
    if not sizes:
        return stored[0]
    result = tx.output.call_function(torch.stack, [ListVariable.create(tx, stored)], {})
    if len(sizes) > 1:
        result = tx.output.call_method(result, "reshape", [TupleVariable(tuple(const(n) for n in sizes))], {})
    return result
