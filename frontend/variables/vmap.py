"""`torch.vmap(fn, in_dims, out_dims)(*args)`: the mapped function traced into the graph.

Compile time only. The graph does what torch.vmap does around a call: it enters a vmap level
(`_vmap_increment_nesting`), adds a batch dim to each mapped input (`_add_batch_dim`), runs `fn`'s
ops on those batched tensors, takes the batch dim out of each output (`_remove_batch_dim`) and
leaves the level (`_vmap_decrement_nesting`). While tracing, fake propagation runs the same calls,
so `fn` sees what it sees eagerly (per-example shapes, functorch's batching rules and errors), and
AOTAutograd turns the batched ops into plain ones. The trace's level is the one the graph gets at
run time: an entry is never run inside a functorch transform (guards/guard.py). Anything `fn`
cannot trace, or an output that is not a tensor (or a tuple/list of them), breaks the graph at the
call and vmap runs natively.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..graph_break import Unsupported
from ..signals import UserException
from .base import VariableTracker
from .constant import const
from .lists import ListVariable, TupleVariable
from .tensor import TensorVariable

_functorch = torch._C._functorch


def _unsupported(detail: str) -> Unsupported:
    return Unsupported("unsupported_call", fn="torch.vmap", detail=f" ({detail})")


def _sequence(tx, var):
    """The items of a plain tuple or list tracker, else None."""
    if isinstance(var, (TupleVariable, ListVariable)) and var.python_type() in (tuple, list):
        return list(var.get_items(tx))
    return None


def _rebuild(tx, like, items):
    return TupleVariable(tuple(items)) if like.python_type() is tuple else ListVariable.create(tx, items)


def _dims_for(tx, var, dim, items) -> list:
    """The dim of each item of a tuple/list: an int or None is broadcast; a tuple/list of dims must
    have the container's type and length (pytree prefix matching, as torch.vmap does)."""
    if dim is None or type(dim) is int:
        return [dim] * len(items)
    if type(dim) is not var.python_type() or len(dim) != len(items):
        raise _unsupported(f"dims {dim!r} that do not match {var.describe()}")
    return list(dim)


def _mapped(tx, arg, dim) -> list:
    """(tensor, dim) for each input of `arg` that `dim` maps, dims made non-negative; eager's
    errors (a dim out of range, a structure that does not match) break the graph."""
    if dim is None:
        return []
    if isinstance(arg, TensorVariable):
        ndim = arg.example.dim()
        if type(dim) is not int or not -ndim <= dim < ndim:
            raise _unsupported(f"in_dim {dim!r} for a tensor of {ndim} dims")
        return [(arg, dim % ndim)]
    items = _sequence(tx, arg)
    if items is None:
        raise _unsupported(f"a mapped input that is {arg.describe()}")
    return [pair for item, d in zip(items, _dims_for(tx, arg, dim, items)) for pair in _mapped(tx, item, d)]


def _add_batch_dims(tx, arg, dim, level):
    if dim is None:
        return arg
    if isinstance(arg, TensorVariable):
        return tx.output.call_function(_functorch._add_batch_dim, [arg, const(dim % arg.example.dim()), const(level)],
                                       {})
    items = _sequence(tx, arg)
    return _rebuild(tx, arg, [_add_batch_dims(tx, i, d, level) for i, d in zip(items, _dims_for(tx, arg, dim, items))])


def _remove_batch_dims(tx, out, dim, level, size):
    if isinstance(out, TensorVariable):
        if type(dim) is not int:
            raise _unsupported(f"out_dims {dim!r} for a tensor output")
        ndim = out.example.dim() + 1      # (the per-example output, plus the batch dim put back)
        if not -ndim <= dim < ndim:
            raise _unsupported(f"out_dim {dim} for an output of {ndim} dims")
        return tx.output.call_function(_functorch._remove_batch_dim, [out, const(level), size, const(dim % ndim)], {})
    items = _sequence(tx, out)
    if items is None:
        raise _unsupported(f"an output that is {out.describe()}")
    dims = _dims_for(tx, out, dim, items)
    return _rebuild(tx, out, [_remove_batch_dims(tx, i, d, level, size) for i, d in zip(items, dims)])


def _changes_outside(before, effects) -> bool:
    """Whether the side effects changed anything that existed before `before` was taken: an object,
    a global, a cell, or the attributes of a tensor (objects made since may change)."""
    old = before.contents
    return (effects.mutated, effects.globals, effects.cells, effects.deleted_globals, effects.calls) != \
        (before.mutated, before.globals, before.cells, before.deleted_globals, before.calls) or \
        any(effects.contents.get(k) is not v for k, v in old.items()) or \
        any(isinstance(k, tuple) and k[0] == "tensor attributes" for k in effects.contents.keys() - old.keys())


@dataclasses.dataclass(frozen=True, eq=False)
class VmapVariable(VariableTracker):
    """What `torch.vmap(fn, in_dims, out_dims, randomness)` returned (constant configuration)."""
    fn: VariableTracker = None
    in_dims: Any = 0
    out_dims: Any = 0
    randomness: str = "error"

    @staticmethod
    def create(args, kwargs):
        names = ("func", "in_dims", "out_dims", "randomness", "chunk_size")
        bound = dict(zip(names, args), **kwargs)
        config = {k: v for k, v in bound.items() if k != "func"}
        if "func" not in bound or set(bound) - set(names) or not all(v.is_python_constant() for v in config.values()):
            return None
        config = {k: v.as_python_constant() for k, v in config.items()}
        if config.pop("chunk_size", None) is not None or config.get("randomness", "error") not in (
                "error", "different", "same"):
            return None
        return VmapVariable(fn=bound["func"], **config)

    def python_type(self):
        return type(lambda: None)     # torch.vmap returns a Python function (a functools.wraps wrapper)

    def describe(self):
        return f"torch.vmap({self.fn.describe()})"

    def reconstruct(self, codegen):
        codegen.push_null()
        codegen.load_const(torch.vmap)
        codegen.reconstruct(self.fn)
        for value in (self.in_dims, self.out_dims, self.randomness):
            codegen.load_const(value)
        codegen.call(4, kw_names=("in_dims", "out_dims", "randomness"))

    def call_function(self, tx, args, kwargs):
        if type(self.in_dims) is not int and (type(self.in_dims) is not tuple or len(self.in_dims) != len(args)):
            raise _unsupported(f"in_dims {self.in_dims!r} for {len(args)} inputs")
        in_dims = self.in_dims if type(self.in_dims) is tuple else (self.in_dims,) * len(args)
        mapped = [pair for arg, dim in zip(args, in_dims) for pair in _mapped(tx, arg, dim)]
        if not mapped:
            raise _unsupported("no input is mapped")
        sizes = [t.example.size(d) for t, d in mapped]
        if any(s != sizes[0] for s in sizes):     # (symbolic sizes: the ShapeEnv guards the answer)
            raise _unsupported("inputs mapped over different sizes")
        tensor, dim = mapped[0]
        size = tx.output.metadata(tensor, "size", (dim,), sizes[0])
        level = tx.output.call_function(_functorch._vmap_increment_nesting, [size, const(self.randomness)], {})
        before = tx.output.side_effects.snapshot()
        try:
            batched = [_add_batch_dims(tx, a, d, level.as_python_constant()) for a, d in zip(args, in_dims)]
            out = self.fn.call_function(tx, batched, kwargs)
            out = _remove_batch_dims(tx, out, self.out_dims, level.as_python_constant(), size)
            if _changes_outside(before, tx.output.side_effects):
                # a batched tensor could be stored where only eager's leaked BatchedTensor belongs
                raise _unsupported("the mapped function changes objects outside it")
        except Exception as e:
            _functorch._vmap_decrement_nesting()     # leave the trace's level (its nodes are rolled back)
            if not (isinstance(e, UserException) or getattr(e, "bytegraph_user_exception", False)):
                raise
            # the program's own exception: breaking at the call lets vmap raise it natively
            raise _unsupported("the mapped function raises") from e
        tx.output.call_function(_functorch._vmap_decrement_nesting, [], {})
        return out
