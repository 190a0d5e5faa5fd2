"""TorchFunctionModes whose effect the trace models: `with Mode():` in traced code.

Compile time only. An active TorchFunctionMode sees every torch call and decides what it does.
The trace models a mode only when it knows exactly what that mode's `__torch_function__` does; a
mode it does not know keeps breaking the graph at `__enter__` (its `_push_mode`), and frames called
under a real active mode run eagerly (guards/guard.py `user_function_mode_active`).

Modelled today: torch's `TransformGetItemToIndex` (HF's masks enter it around `torch.vmap` of their
mask functions). Every call passes through it unchanged except `Tensor.__getitem__` whose index
leaves (pytree leaves of the index) are all tensors or ints: that becomes
`aten.index(tensor, [leaf as a tensor...])` (an int leaf made a 0-d int64 tensor on the tensor's
device), which is what its `ModIndex` computes (its backward, an accumulating scatter, is
aten.index's own). The graph then runs with no mode active, and holds exactly the ops the mode
would have passed on.

The modes open at a point of the trace are `OutputGraph.function_modes` (checkpointed). A graph
break while one is open is refused (`break_codegen.can_break_at`): the native code after a break
would run without the mode, so the frame runs eagerly instead.
"""
from __future__ import annotations

import dataclasses
import sys

import torch

from .. import reads
from ..graph_break import Unsupported
from .base import VariableTracker, families
from .constant import const
from .lists import ListVariable, TupleVariable
from .tensor import SymNodeVariable, TensorVariable

_GET_ITEM_TO_INDEX = ("torch._dynamo._trace_wrapped_higher_order_op", "TransformGetItemToIndex")
_MODE_BASE = torch.overrides.TorchFunctionMode


def _get_item_to_index_class():
    """The class, if the library that defines it was imported (by whoever uses it: bytegraph never
    imports torch._dynamo)."""
    module = sys.modules.get(_GET_ITEM_TO_INDEX[0])
    return getattr(module, _GET_ITEM_TO_INDEX[1], None) if module is not None else None


def modelled_mode(tx, obj) -> bool:
    """`obj` (a tracker) is an instance of a mode the trace models, made in this trace, whose
    `__enter__`/`__exit__`/`__torch_function__` are still the known ones (the lookups are guarded)."""
    cls = getattr(obj, "cls", None)
    known = _get_item_to_index_class()
    if known is None or cls is not known or not getattr(obj, "is_new", lambda: False)():
        return False
    enter, _ = reads.class_lookup(tx, cls, "__enter__")
    exit_, _ = reads.class_lookup(tx, cls, "__exit__")
    fn, _ = reads.class_lookup(tx, cls, "__torch_function__")
    code = getattr(fn, "__code__", None)
    return enter is _MODE_BASE.__dict__["__enter__"] and exit_ is _MODE_BASE.__dict__["__exit__"] and \
        code is not None and code.co_qualname == "TransformGetItemToIndex.__torch_function__"


@dataclasses.dataclass(frozen=True, eq=False)
class FunctionModeVariable(VariableTracker):
    """An entered modelled mode (what a `with` block's exit holds): exiting pops it."""
    mode: VariableTracker = None

    def python_type(self):
        return self.mode.python_type()

    def describe(self):
        return f"function mode {self.mode.describe()}"

    def parts(self, tx):
        return (self.mode,)

    def enter(self, tx):
        tx.output.function_modes = tx.output.function_modes + (self.mode,)
        return self, self.mode          # TorchFunctionMode.__enter__ returns the mode

    def exit(self, tx):
        modes = tx.output.function_modes
        if not modes or modes[-1] is not self.mode:
            raise Unsupported("context_manager", what="leaving a function mode that is not the innermost one")
        tx.output.function_modes = modes[:-1]
        return const(None)


def _index_leaves(tx, index):
    """The pytree leaves of a getitem index (tuples and lists flattened), as trackers; None when a
    leaf is something whose leafness or type the trace does not know exactly."""
    if isinstance(index, (TupleVariable, ListVariable)):
        if index.python_type() not in (tuple, list):
            return None                 # a namedtuple or a subclass: pytree's view of it is not modelled
        leaves = []
        for item in index.get_items(tx):
            sub = _index_leaves(tx, item)
            if sub is None:
                return None
            leaves.extend(sub)
        return leaves
    if isinstance(index, TensorVariable):
        return [index]
    if index.is_python_constant():
        leaves = _constant_leaves(index.as_python_constant())
        return None if leaves is None else [const(leaf) for leaf in leaves]
    return None


_CONSTANT_LEAVES = (int, bool, float, str, slice, type(None), type(Ellipsis))


def _constant_leaves(value):
    if type(value) in (tuple, list):
        leaves = []
        for item in value:
            sub = _constant_leaves(item)
            if sub is None:
                return None
            leaves.extend(sub)
        return leaves
    return [value] if type(value) in _CONSTANT_LEAVES else None


def tensor_getitem(tx, obj, index):
    """`obj[index]` for a tensor `obj` under the modes open in the trace, or None when no open mode
    changes it (the caller then does a plain getitem)."""
    if not tx.output.function_modes:
        return None
    leaves = _index_leaves(tx, index)
    if leaves is None or any(isinstance(leaf, SymNodeVariable) for leaf in leaves):
        raise Unsupported("python_protocol", what=f"indexing a tensor with {index.describe()} "
                          "under TransformGetItemToIndex")
    if not all(isinstance(leaf, TensorVariable) or type(leaf.as_python_constant()) in (int, bool)
               for leaf in leaves):
        return None     # the mode passes this getitem on unchanged
    device = obj.example.device
    indices = [leaf if isinstance(leaf, TensorVariable) else
               tx.output.call_function(torch.tensor, [const(int(leaf.as_python_constant()))],
                                       {"dtype": const(torch.int64), "device": const(device)})
               for leaf in leaves]
    return tx.output.call_function(torch.ops.aten.index.Tensor, [obj, ListVariable.create(tx, indices)], {})


families.register(tensor_getitem)
