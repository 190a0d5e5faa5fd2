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
import warnings

import _warnings
import torch

from ...guards.guard import Guard
from ...guards.source import AttrSource, ModuleGlobalSource
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
from .warning import issue_ignored_warning

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
        dirty: list = []        # positions of the arguments the forward marks dirty (ctx.mark_dirty)
        why = _call_impurity(tx, cls, args, dirty)
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
        if dirty:
            _check_dirty_result(tx, self.describe(), args, dirty, result)
            return result
        inputs = {id(a.example) for a in args if isinstance(a, TensorVariable)}
        items = result.items if isinstance(result, TupleVariable) else (result,)
        if any(isinstance(r, TensorVariable) and id(r.example) in inputs for r in items):
            raise Unsupported("unsupported_call", fn=self.describe(), detail=" (its forward returns an input)")
        return result


def _check_dirty_result(tx, what, args, dirty, result):
    """A forward that changed an input in place and marked it dirty: eager's apply returns that very
    input (its autograd history moved onto the Function's node), as the node's result here is when the
    forward returns just it. An input of the graph whose autograd record that changes (it requires grad,
    or the result does) cannot be put back if the graph raises: that call runs as Python."""
    if len(dirty) != 1 or result is not args[dirty[0]]:
        raise Unsupported("unsupported_call", fn=what, detail=" (its forward marks dirty an input it does not "
                          "return alone)")
    tensor = result.example
    if tx.output._input_sharing_storage(tensor) is not None and tensor.requires_grad:
        raise Unsupported("attribute_write", what=f"the autograd history of a graph input, which {what} "
                          "changes in place (ctx.mark_dirty)")


_FUNCTION_NEW = torch._C._FunctionBase.__dict__["__new__"]
_FUNCTION_INIT = torch.autograd.Function.__dict__["__init__"]
_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"]
_TYPE_TEXT = {"__repr__": type.__dict__["__repr__"], "__str__": object.__dict__["__str__"],
              "__format__": object.__dict__["__format__"]}


def new_function_object(tx, cls, args, kwargs):
    """`MyFunction()`: torch's `Function.__init__` issues a DeprecationWarning naming the class (at the
    caller's line, `stacklevel=2`) and the object is of no use but to reach the class's methods
    (`MyFunction().apply(x)` is `MyFunction.apply(x)`). Traced when the filters ignore that warning
    (variables/warning.py); the object cannot leave the trace."""
    what = f"class {cls.__qualname__}"
    new, init = class_lookup(tx, cls, "__new__")[0], class_lookup(tx, cls, "__init__")[0]   # (guarded)
    if new is not _FUNCTION_NEW or init is not _FUNCTION_INIT or args or kwargs:
        raise Unsupported("unsupported_call", fn=what, detail=" (a Function object made by code of its own, or "
                          "with arguments)")
    if class_lookup(tx, cls, "__class__")[0] is not object.__dict__["__class__"] or \
            any(class_lookup(tx, type(cls), name)[0] is not slot for name, slot in _TYPE_TEXT.items()):
        raise Unsupported("unsupported_call", fn=what, detail=" (its class's text is computed by code of its own)")
    # `Function.__init__` reads the `warnings` global of torch.autograd.function, then its `warn`
    module_source = ModuleGlobalSource("torch.autograd.function", "warnings")
    tx.output.guards.add(Guard.id_match(module_source, warnings))
    tx.output.guards.add(Guard.id_match(AttrSource(module_source, "warn"), _warnings.warn))
    message = (f"{cls} should not be instantiated. Methods on autograd functions are all static, so you should "
               "invoke them on the class itself. Instantiating an autograd function will raise an error in a "
               "future version of PyTorch.")
    issue_ignored_warning(tx, message, DeprecationWarning, what)
    return AutogradFunctionObjectVariable(fn_cls=cls)


@dataclasses.dataclass(frozen=True, eq=False)
class AutogradFunctionObjectVariable(VariableTracker):
    """An object of a Function subclass made while tracing: its `apply` is the class's."""
    fn_cls: type = None

    def python_type(self):
        return self.fn_cls

    def describe(self):
        return f"{self.fn_cls.__qualname__} object"

    def var_getattr(self, tx, name):
        if name == "apply" and class_lookup(tx, self.fn_cls, "apply")[0] is _FUNCTION_APPLY and \
                class_lookup(tx, self.fn_cls, "__getattribute__")[0] is object.__dict__["__getattribute__"]:
            return AutogradFunctionApplyVariable(fn_cls=self.fn_cls)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def reconstruct(self, codegen):
        raise Unsupported("unrebuildable", what=f"a {self.describe()} made while tracing")


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


def _call_impurity(tx, cls, args, dirty: list):
    """Why `cls.apply(*args)` cannot be a graph node (None: it can): its forward, or (when the backend
    will trace it into the graph's backward) its backward, is not pure. The forward may change in place
    the inputs it marks dirty (their positions are put in `dirty`). Traces them; the caller rolls back."""
    out = tx.output
    traces_backward = needs_proof(out, args)
    may_write: set = set()

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
        marked = _dirty_positions(tx, ctx, args)
        if marked is None:
            return "its forward marks dirty something that is not one of its tensor arguments"
        dirty.extend(marked)
        may_write.update(args[i].proxy.node for i in marked)
        if not traces_backward:
            return None
        why = _backward_impurity(tx, cls, args, ctx, result)
        return None if why is None else f"its backward {why}"
    why = impurity(tx, run, may_write)
    return why if why is None or why.startswith("its ") else f"its forward {why}"


def _dirty_positions(tx, ctx, args):
    """The positions among `args` of the tensors given to `ctx.mark_dirty` (None: something else was)."""
    marked = tx.output.side_effects.get(ctx).get("dirty_tensors")
    if marked is None:
        return []
    if not isinstance(marked, TupleVariable):
        return None
    positions = []
    for t in marked.items:
        found = [i for i, a in enumerate(args) if isinstance(a, TensorVariable) and isinstance(t, TensorVariable)
                 and a.proxy.node is t.proxy.node]
        if not found:
            return None
        positions.append(found[0])
    return sorted(set(positions))


def _backward_impurity(tx, cls, args, ctx, result):
    backward, vjp = (class_lookup(tx, cls, name)[0] for name in ("backward", "vjp"))   # (guarded)
    if vjp is not _BASE_VJP:
        return "is defined as vjp"
    backward = _static_function(backward)
    if backward is None:
        return "is not a Python function"
    return backward_impurity(tx, cls, once_differentiable_inner(backward) or backward, args, ctx, result)


def impurity(tx, run, may_write=frozenset()):
    """Why the code `run()` traces does more than tensor work on its own values (None: it does not):
    it cannot be traced or raises, changes Python state outside itself (globals, outside objects,
    cells), or changes in place a tensor it did not create (other than the nodes in `may_write`, which
    `run` may fill). `run` returns a reason of its own or None."""
    out = tx.output
    effects = out.side_effects

    def outside_state():
        return (dict(effects.mutated), dict(effects.globals), set(effects.deleted_globals),
                {c: v for c, v in effects.cells.items() if c.source is not None}, effects.calls)
    before = outside_state()
    known_nodes = set(out.graph.nodes)
    out.speculative_depth += 1
    draws = len(out.random_draws)
    try:
        why = run()
    except Unsupported as e:
        return f"cannot be traced: {e.reason}"
    except UserException:
        return "raises"
    finally:
        out.speculative_depth -= 1
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
                node.args[0] in known_nodes and node.args[0] not in may_write:
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


families.register(AutogradFunctionApplyVariable, new_function_object)
