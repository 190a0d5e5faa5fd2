"""`MyFunction.apply(*args)` of a `torch.autograd.Function` subclass: one graph node that calls
`MyFunction.apply` itself, so forward, ctx and backward behave exactly as in eager.

Compile time only. Before the node is made, the forward is traced speculatively (with a stand-in
ctx, under no_grad as autograd runs it; a Function with `setup_context` has its forward traced
without ctx and then `setup_context(ctx, inputs, output)`) and the trace is then rolled back: it only proves that the
forward does nothing besides tensor work on its own values -- no Python side effects (globals,
outside objects, cells), no in-place change of a tensor it did not create, nothing that breaks the
graph. Only then is it safe to run the forward on fake tensors to learn the node's result (which
runs the forward at compile time once more). Anything else graph-breaks at the call, with the reason.
The guards the speculative trace needed are kept. A backend that runs the graph's ops as recorded
(eager) runs the real backward when autograd reaches it; one through AOTAutograd traces it once into the
graph's backward, so then the backward is traced too, after the forward in the same speculative trace,
and must be proved pure as well (`frontend/backward_proof.py`).

`torch.utils.checkpoint.checkpoint(fn, ..., use_reentrant=False)` uses the same proof, and then
keeps the trace of `fn` (CheckpointVariable).
"""
from __future__ import annotations

import dataclasses
import types

import torch

from ...guards.guard import Guard
from ...probe import static_getattr
from ..backward_proof import backward_impurity, needs_proof, once_differentiable_inner, saved_tensors
from ..graph_break import Unsupported
from ..reads import class_lookup, type_lookup
from ..signals import UserException
from .base import VariableTracker, families
from .constant import const
from .functions import UserFunctionVariable
from .global_state import saved_hooks_message
from .lists import TupleVariable
from .tensor import TensorVariable
from .user_defined import UserDefinedObjectVariable

_BASE_SETUP_CONTEXT = torch.autograd.Function.setup_context
_BASE_VJP = type_lookup(torch.autograd.Function, "vjp")
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


def bound_applier(cls, n: int, fixed: dict):
    """`cls.apply` with the arguments at the positions of `fixed` bound to those real objects (a
    config dict the module holds): the graph node passes only the others."""
    def fn(*given):
        rest = iter(given)
        return cls.apply(*[fixed[i] if i in fixed else next(rest) for i in range(n)])
    fn.__name__ = fn.__qualname__ = f"{cls.__name__}_apply"
    return fn


def _fixed_objects(tx, what: str, args) -> dict:
    """Position -> real object, for each argument the graph cannot hold as a value (a dict, a list of
    non-constants, an object): an object that existed before the frame, reached through a source,
    with no change made by the trace pending on it or on anything in it, is passed as itself (its
    identity guarded), as eager passes it; the forward reads it live when the node runs."""
    out = tx.output
    fixed = {}
    for i, arg in enumerate(args):
        if isinstance(arg, TensorVariable):
            continue
        try:
            out.as_proxy(arg)
            continue
        except Unsupported:
            pass
        real = _real_object(out, arg)
        if real is None or arg.source is None or _has_pending_change(tx, arg):
            raise Unsupported("unsupported_call", fn=what, detail=f" (its argument {arg.describe()} is "
                              "neither a graph value nor an unchanged object from before the frame)")
        if _holds_tensors(real):
            # the node's result comes from running the forward on fake tensors: real ones inside an
            # object passed as itself (a module's parameters) cannot take part
            raise Unsupported("unsupported_call", fn=what, detail=f" (its argument {arg.describe()} holds "
                              "tensors: parameters, buffers or tensor attributes)")
        out.guards.add(Guard.id_match(arg.source, real))
        fixed[i] = real
    return fixed


def _holds_tensors(obj) -> bool:
    """Real tensors in an object passed as itself: a module's parameters, buffers and tensor attributes
    (its submodules' too), a container's items, an object's attributes."""
    if isinstance(obj, torch.nn.Module):
        return any(True for _ in obj.parameters()) or any(True for _ in obj.buffers()) or \
            any(isinstance(v, torch.Tensor) for m in obj.modules() for v in vars(m).values())
    if isinstance(obj, (list, tuple, set, dict)):
        values = obj.values() if isinstance(obj, dict) else obj
    else:
        values = (static_getattr(obj, "__dict__") or {}).values()
    return any(isinstance(v, torch.Tensor) for v in values)


def _real_object(out, var):
    for real, tracker in out.wrapped_objects.values():
        if tracker is var:
            return real
    return None


def _has_pending_change(tx, var, seen=None) -> bool:
    seen = set() if seen is None else seen
    if id(var) in seen:
        return False
    seen.add(id(var))
    effects = tx.output.side_effects
    if var in effects.mutated or var.source is None and not var.is_python_constant():
        return True
    return any(_has_pending_change(tx, part, seen) for part in var.parts(tx))


@dataclasses.dataclass(frozen=True, eq=False)
class AutogradFunctionApplyVariable(VariableTracker):
    fn_cls: type = None

    def describe(self):
        return f"{self.fn_cls.__qualname__}.apply"

    def reconstruct(self, codegen):
        codegen.load_const(self.fn_cls)      # `cls.apply` read again, as the frame reads it
        codegen.load_attr("apply")

    def call_function(self, tx, args, kwargs):
        cls = self.fn_cls
        if kwargs:
            args = _keywords_as_positions(tx, cls, list(args), kwargs)
            if args is None:
                raise Unsupported("unsupported_call", fn=self.describe(), detail=" with these keyword arguments")
        out = tx.output
        state = out.checkpoint()
        why = _call_impurity(tx, cls, args)
        guards = set(out.guards)
        out.restore(state)
        if why is not None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=f" ({why})")
        out.guards |= guards    # what the forward (and backward) were proved pure under
        fixed = _fixed_objects(tx, self.describe(), args)
        if fixed:
            given = [a for i, a in enumerate(args) if i not in fixed]
            result = out.call_function(bound_applier(cls, len(args), fixed), given, {})
        else:
            result = out.call_function(applier(cls), list(args), {})
        inputs = {id(a.example) for a in args if isinstance(a, TensorVariable)}
        items = result.items if isinstance(result, TupleVariable) else (result,)
        if any(isinstance(r, TensorVariable) and id(r.example) in inputs for r in items):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its forward returns an input)")
        return result


def _keywords_as_positions(tx, cls, args: list, kwargs: dict):
    """`cls.apply(x, k=y)` as the positional call eager's apply makes of it (None: not modelled).
    torch's C `apply` fills the forward's parameters after `ctx` from keywords and then calls it
    positionally: every keyword must name one of the parameters right after the positional
    arguments, with no gap (a gap, an unknown or keyword-only name raise TypeError there, even where
    the forward has a default). A Function with `setup_context` binds defaults in Python first: not
    modelled."""
    if cls.setup_context is not _BASE_SETUP_CONTEXT:
        return None
    forward = _static_function(class_lookup(tx, cls, "forward")[0])   # guarded: a new forward recompiles
    if forward is None:
        return None
    code = forward.__code__
    positional = code.co_varnames[1:code.co_argcount]       # after ctx; positional-only ones are never named
    names = positional[code.co_posonlyargcount - 1 if code.co_posonlyargcount else 0:]
    start = len(args)
    wanted = positional[start:start + len(kwargs)]
    if len(wanted) != len(kwargs) or set(wanted) != set(kwargs) or not set(wanted) <= set(names):
        return None
    return args + [kwargs[name] for name in wanted]


def _call_impurity(tx, cls, args):
    """Why `cls.apply(*args)` cannot be a graph node (None: it can): its forward, or (when the backend
    will trace it into the graph's backward) its backward, is not pure. Traces them; the caller rolls back."""
    out = tx.output
    traces_backward = needs_proof(out, args)

    def run():
        ctx = UserDefinedObjectVariable.create_new(tx, torch.autograd.function.FunctionCtx)
        needs = tuple(const(isinstance(a, TensorVariable) and a.example.requires_grad) for a in args)
        out.side_effects.store(ctx, {"needs_input_grad": TupleVariable(needs)})
        out.set_grad_enabled(False)    # autograd runs the forward (and setup_context) under no_grad
        # guarded lookups: a forward or setup_context reassigned later recompiles
        forward, setup = (_static_function(class_lookup(tx, cls, name)[0]) for name in ("forward", "setup_context"))
        if forward is None or setup is None and cls.setup_context is not _BASE_SETUP_CONTEXT:
            return "its forward is not a Python function"
        if cls.setup_context is _BASE_SETUP_CONTEXT:
            result = UserFunctionVariable(fn=forward).call_function(tx, [ctx] + list(args), {})
        else:   # the "functorch" style: forward(*args), then setup_context(ctx, inputs, output)
            result = UserFunctionVariable(fn=forward).call_function(tx, list(args), {})
            UserFunctionVariable(fn=setup).call_function(tx, [ctx, TupleVariable(tuple(args)), result], {})
        if saved_tensors(tx, ctx) is None:
            return "its forward saves for backward something that is not a tensor (eager raises)"
        if not traces_backward:
            return None
        why = _backward_impurity(tx, cls, args, ctx, result)
        return None if why is None else f"its backward {why}"
    why = impurity(tx, run)
    return why if why is None or why.startswith("its ") else f"its forward {why}"


def _backward_impurity(tx, cls, args, ctx, result):
    backward, vjp = (class_lookup(tx, cls, name)[0] for name in ("backward", "vjp"))   # (guarded)
    if vjp is not _BASE_VJP:
        return "is defined as vjp"
    backward = _static_function(backward)
    if backward is None:
        return "is not a Python function"
    return backward_impurity(tx, cls, once_differentiable_inner(backward) or backward, args, ctx, result)


def impurity(tx, run):
    """Why the code `run()` traces does more than tensor work on its own values (None: it does not):
    it cannot be traced or raises, changes Python state outside itself (globals, outside objects,
    cells), or changes in place a tensor it did not create. `run` returns a reason of its own or None."""
    out = tx.output
    effects = out.side_effects

    def outside_state():
        return (dict(effects.mutated), dict(effects.globals), set(effects.deleted_globals),
                {c: v for c, v in effects.cells.items() if c.source is not None})
    before = outside_state()
    known_nodes = set(out.graph.nodes)
    draws = len(out.random_draws)
    try:
        why = run()
    except Unsupported as e:
        return f"cannot be traced: {e.reason}"
    except UserException:
        return "raises"
    if why is not None:
        return why
    if outside_state() != before:
        return "changes Python state outside the function"
    if len(out.random_draws) != draws:
        return "draws numbers from Python's random module"     # (the frame draws them before its graph)
    if any(node not in known_nodes and node.target is torch.set_default_dtype for node in out.graph.nodes):
        return "changes the default dtype"    # (a process state its own run would change for real)
    for node in out.graph.nodes:
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        if node not in known_nodes and name.endswith("_") and not name.endswith("__") and node.args and \
                node.args[0] in known_nodes:
            return f"changes a tensor it did not create ({name})"
    return None


def _static_function(fn):
    """The plain function behind a staticmethod looked up on the class (None: not a Python function)."""
    fn = fn.__func__ if isinstance(fn, staticmethod) else fn
    return fn if isinstance(fn, types.FunctionType) else None


_CHECKPOINT_OPTIONS = {"use_reentrant", "preserve_rng_state", "determinism_check", "early_stop"}


@dataclasses.dataclass(frozen=True, eq=False)
class CheckpointVariable(VariableTracker):
    """`torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)`, traced as `fn(*args)`.
    Eager runs `fn` once more during backward to recompute what it did not save: that changes memory,
    not values (the RNG state is replayed), as long as `fn` only does tensor work on its own values --
    proved as for a Function's forward, else a graph break. The graph keeps its activations instead
    (no memory saving). Other forms (reentrant, `context_fn`, `debug`, keyword arguments for `fn`)
    break the graph."""
    fn: object = None

    def describe(self):
        return "torch.utils.checkpoint.checkpoint"

    def call_function(self, tx, args, kwargs):
        options = {k: v.as_python_constant() for k, v in kwargs.items() if v.is_python_constant()}
        # preserve_rng_state=False: eager's recompute draws new random numbers (other dropout masks
        # in backward), which one traced forward cannot reproduce
        if not args or options.get("use_reentrant") is not False or len(options) != len(kwargs) or \
                set(options) - _CHECKPOINT_OPTIONS or options.get("preserve_rng_state", True) is not True:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (traced only with "
                              "use_reentrant=False, the RNG state preserved, and no context_fn, debug or "
                              "keyword arguments for the function)")
        if saved_hooks_message(tx) is not None:
            # eager's checkpoint pushes saved-tensor hooks, which raises while they are disabled
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (saved-tensor hooks are disabled)")
        result = []

        def run():
            result.append(tx.call(args[0], list(args[1:]), {}))
        why = impurity(tx, run)
        if why is not None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=f" (its function {why})")
        return result[0]


families.register(AutogradFunctionApplyVariable)
