"""`MyFunction.apply(*args)` of a `torch.autograd.Function` subclass: one graph node that calls
`MyFunction.apply` itself, so forward, ctx and backward behave exactly as in eager.

Compile time only. Before the node is made, the forward is traced speculatively (with a stand-in
ctx, under no_grad as autograd runs it) and the trace is then rolled back: it only proves that the
forward does nothing besides tensor work on its own values -- no Python side effects (globals,
outside objects, cells), no in-place change of a tensor it did not create, nothing that breaks the
graph. Only then is it safe to run the forward on fake tensors to learn the node's result (which
runs the forward at compile time once more). Anything else graph-breaks at the call, with the reason.
The guards the speculative trace needed are kept. The backward runs when autograd runs it (eager
backend), or is traced by AOTAutograd like any backward.
"""
from __future__ import annotations

import dataclasses
import types

import torch

from ..graph_break import Unsupported
from ..reads import class_lookup
from ..signals import UserException
from .base import VariableTracker, families
from .constant import const
from .functions import UserFunctionVariable
from .lists import TupleVariable
from .tensor import TensorVariable
from .user_defined import UserDefinedObjectVariable

_BASE_SETUP_CONTEXT = torch.autograd.Function.setup_context
_appliers: dict = {}   # Function subclass -> its applier (kept for the process, like a class cache)


def applier(cls):
    """A plain function calling `cls.apply` (fx names a bound classmethod of a torch class as if it
    were importable from torch; a function of ours is kept as a graph global instead)."""
    fn = _appliers.get(cls)
    if fn is None:
        def fn(*args):
            return cls.apply(*args)
        fn.__name__ = fn.__qualname__ = f"{cls.__name__}_apply"
        _appliers[cls] = fn
    return fn


@dataclasses.dataclass(frozen=True, eq=False)
class AutogradFunctionApplyVariable(VariableTracker):
    fn_cls: type = None

    def describe(self):
        return f"{self.fn_cls.__qualname__}.apply"

    def call_function(self, tx, args, kwargs):
        cls = self.fn_cls
        if kwargs:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" with keyword arguments")
        if cls.setup_context is not _BASE_SETUP_CONTEXT:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (forward with a setup_context)")
        out = tx.output
        state = out.checkpoint()
        why = _forward_impurity(tx, cls, args)
        guards = set(out.guards)
        out.restore(state)
        if why is not None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=f" (its forward {why})")
        out.guards |= guards    # what the forward was proved pure under
        result = out.call_function(applier(cls), list(args), {})
        inputs = {id(a.example) for a in args if isinstance(a, TensorVariable)}
        items = result.items if isinstance(result, TupleVariable) else (result,)
        if any(isinstance(r, TensorVariable) and id(r.example) in inputs for r in items):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its forward returns an input)")
        return result


def _forward_impurity(tx, cls, args):
    """Why the forward of `cls` cannot be a graph node (None: it can). Traces it; the caller rolls back."""
    out = tx.output
    effects = out.side_effects

    def outside_state():
        return (dict(effects.mutated), dict(effects.globals), set(effects.deleted_globals),
                {c: v for c, v in effects.cells.items() if c.source is not None})
    before = outside_state()
    known_nodes = set(out.graph.nodes)
    ctx = UserDefinedObjectVariable.create_new(tx, torch.autograd.function.FunctionCtx)
    needs = tuple(const(isinstance(a, TensorVariable) and a.example.requires_grad) for a in args)
    effects.store(ctx, {"needs_input_grad": TupleVariable(needs)})
    out.set_grad_enabled(False)    # autograd runs the forward under no_grad
    forward, _ = class_lookup(tx, cls, "forward")    # guarded: a forward reassigned later recompiles
    forward = forward.__func__ if isinstance(forward, staticmethod) else forward
    if not isinstance(forward, types.FunctionType):
        return "is not a Python function"
    try:
        UserFunctionVariable(fn=forward).call_function(tx, [ctx] + list(args), {})
    except Unsupported as e:
        return f"cannot be traced: {e.reason}"
    except UserException:
        return "raises"
    if outside_state() != before:
        return "changes Python state outside the function"
    for node in out.graph.nodes:
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        if node not in known_nodes and name.endswith("_") and not name.endswith("__") and node.args and \
                node.args[0] in known_nodes:
            return f"changes a tensor it did not create ({name})"
    return None


families.register(AutogradFunctionApplyVariable)
