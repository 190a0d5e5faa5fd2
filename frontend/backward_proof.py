"""The proof that a `torch.autograd.Function`'s backward may be traced into a graph's backward.

A backend that differentiates the graph with AOTAutograd (aot_eager, inductor) does not run a captured
Function's backward when autograd reaches it: it traces it once, while compiling, into the graph's
backward. That gives eager's results only for a backward that is a pure function of what eager gives
it -- the saved tensors, the values of the gradients, the ctx attributes the forward set -- which is
proved here by tracing the backward after the forward (in the same speculative trace, rolled back by
the caller), with gradients of unknown layout. The trace must show that the backward:

- changes no Python state that outlives the call (the ctx, objects the forward made, globals...);
- reads no Python state from outside (globals, closure cells, class attributes, objects reached
  through the ctx that existed before the frame), which eager reads when the backward runs, maybe
  changed since; functions, classes and modules are read as code, torch's and math's constants too;
  nor a tensor kept on the ctx as an attribute that the program also holds (an input, a result, a
  view of one): eager reads it unchecked when the backward runs, a compiled backward saved it and
  raises at the version check once the program wrote into it;
- reads nothing of a gradient that AOTAutograd does not reproduce: strides, contiguity, storage,
  version, autograd state (a compiled backward gets contiguous gradients where eager gets the expanded
  one of `.sum()`), and makes no view whose success depends on the layout (`view`, `as_strided`);
- writes into no gradient and no tensor the forward saved or was given;
- reads no tensor value into Python, does not break the graph, raises nothing;
- returns gradients eager accepts (as many as the forward's inputs, None for non-tensor ones,
  shapes that sum to the inputs').

Anything else is a reason to break the graph at the call: the Function then runs eagerly, and its
backward as eager runs it. A backend that runs the graph's ops as recorded (`eager_autograd`) runs
the real backward anyway and needs no proof. Compile time only.
"""
from __future__ import annotations

import dataclasses
import enum
import types

import torch

from .graph_break import Unsupported
from .signals import UserException
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable, const
from .variables.functions import UserFunctionVariable
from .variables.lists import ListVariable, TupleVariable
from .variables.tensor import SymNodeVariable, TensorVariable

# what a tensor tells of its layout, memory or identity: a compiled backward's gradients differ there
LAYOUT_READS = {"stride", "is_contiguous", "storage_offset", "data_ptr", "untyped_storage", "storage",
                "_is_view", "is_set_to", "is_non_overlapping_and_dense", "_base", "_version", "is_conj",
                "is_neg", "is_shared", "is_pinned", "_cdata", "dim_order"}
# a tensor's autograd state in a backward: eager's depends on create_graph and on what was saved
AUTOGRAD_READS = {"requires_grad", "is_leaf", "grad_fn", "grad", "output_nr", "retains_grad", "_version"}
# views that fail or read other elements depending on the strides
LAYOUT_DEPENDENT_VIEWS = {"view", "view_as", "unflatten", "as_strided", "view_as_complex", "_unsafe_view"}
# results that may alias their input in eager (already in that memory format) and not in the trace
_FORMAT_CONVERSIONS = {"contiguous", "to"}
# ops that write into tensors they are given without moving a version counter (see output_graph.py)
_WRITES_ALL_OPERANDS = {"batch_norm", "instance_norm", "native_batch_norm", "_native_batch_norm_legit",
                        "_batch_norm_with_update", "_batch_norm_impl_index"}
_IN_PLACE_OPERATORS = {"setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand",
                       "ior", "ixor", "ilshift", "irshift", "imatmul"}
_CODE_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
               types.BuiltinMethodType, types.MethodDescriptorType, types.WrapperDescriptorType,
               types.MethodWrapperType, types.ClassMethodDescriptorType, staticmethod, classmethod, property,
               torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch.dtype, torch.device, torch.layout,
               torch.memory_format, torch.finfo, torch.iinfo, enum.Enum, type(None), type(Ellipsis))
_ONCE_DIFFERENTIABLE_CODE = torch.autograd.function.once_differentiable(lambda ctx: None).__code__


def is_code(value) -> bool:
    """Whether a value read from outside is code or an immutable library constant (a module, class,
    function, torch dtype, enum member): read at compile time as eager reads it at backward time."""
    return isinstance(value, _CODE_TYPES)


class BackwardProof:
    """What the checks made while the backward is traced need (`OutputGraph.backward_proof`): the
    gradients' graph nodes, and the tensors that existed before the backward (what it must not write)."""

    def __init__(self, out, gradients: list):
        self.out = out
        self.before = set(out.graph.nodes)
        self.gradient_nodes = {g.proxy.node for g in gradients}
        self.foreign = [n.meta["example_value"] for n in self.before
                        if isinstance(n.meta.get("example_value"), torch.Tensor)]
        self.versions = [(t, t._version) for t in self.foreign]
        self.storages = {_storage_of(t) for t in self.foreign} - {None}
        self._layout_unknown: dict = {}

    # -- reads ------------------------------------------------------------------------------------
    def layout_unknown(self, var) -> bool:
        """Whether the layout of `var` (a TensorVariable) may differ between eager and the compiled
        backward: a gradient, or any tensor computed from one."""
        return self._node_layout_unknown(var.proxy.node)

    def _node_layout_unknown(self, node) -> bool:
        known = self._layout_unknown.get(node)
        if known is None:
            known = node in self.gradient_nodes or node not in self.before and not _made_contiguous(node) and any(
                isinstance(n.meta.get("example_value"), torch.Tensor) and self._node_layout_unknown(n)
                for n in node.all_input_nodes)
            self._layout_unknown[node] = known
        return known

    def check_tensor_read(self, var, name: str) -> None:
        """`var.name` or `var.name()` read by the backward."""
        if name in AUTOGRAD_READS:
            raise _impure(f"reads Tensor.{name} (a tensor's autograd state in a backward depends on "
                          "create_graph and on how it was saved)")
        if name in LAYOUT_READS and self.layout_unknown(var):
            raise _impure(f"reads Tensor.{name} of a gradient (eager may pass an expanded or strided "
                          "gradient, a compiled backward a contiguous one)")

    def check_outside_read(self, value, source) -> None:
        """A value the backward reads through `source` (a global, a cell, an attribute of an object or a
        class from before the frame)."""
        if not is_code(value):
            raise _impure(f"reads {source.name()} (Python state eager reads when the backward runs)")

    # -- ops --------------------------------------------------------------------------------------
    def check_op(self, op_name, args, kwargs) -> None:
        """Before the graph node of `op_name` (args and kwargs as trackers) is made."""
        first = args[0] if args else None
        if op_name in LAYOUT_DEPENDENT_VIEWS and isinstance(first, TensorVariable) and self.layout_unknown(first):
            raise _impure(f"takes Tensor.{op_name} of a gradient (in eager it may fail or read other "
                          "elements, the gradient's strides being others)")
        written = []
        if op_name in _WRITES_ALL_OPERANDS:
            written = list(args) + list(kwargs.values())
        elif op_name and (op_name.endswith("_") and not op_name.endswith("__") or op_name in _IN_PLACE_OPERATORS):
            written = [first]
        if "out" in kwargs:
            written.append(kwargs["out"])
        for var in _tensors(self.out, written):
            if _storage_of(var.example) in self.storages or var.proxy.node.meta.get("may_alias_gradient"):
                raise _impure(f"writes in place ({op_name}) into a gradient or a tensor of the forward")

    def made(self, op_name, args, kwargs, result) -> None:
        """After the graph node of `op_name` made `result`."""
        first = args[0] if args else None
        if op_name in _FORMAT_CONVERSIONS and isinstance(first, TensorVariable) and isinstance(result, TensorVariable) \
                and (op_name == "contiguous" or "memory_format" in kwargs) and \
                (_storage_of(first.example) in self.storages or first.proxy.node.meta.get("may_alias_gradient")):
            # eager returns the input itself when it is already in that format
            result.proxy.node.meta["may_alias_gradient"] = True

    def written_before(self) -> bool:
        """Whether a tensor from before the backward was written (its version moved), through any view."""
        return any(t._version != v for t, v in self.versions)


def _made_contiguous(node) -> bool:
    """Whether the node is `x.contiguous()` (its layout is known whatever `x`'s: a contiguous one)."""
    return node.op == "call_method" and node.target == "contiguous" and len(node.args) == 1 and \
        node.kwargs.get("memory_format", torch.contiguous_format) is torch.contiguous_format


def _gradient_like(out, output):
    """A stand-in for the gradient eager passes for `output`: zeros expanded to its shape, as `.sum()`'s
    gradient is (strides 0), so that `contiguous()` of it is a new tensor, as of a gradient of unknown
    layout (its values are never read: the trace is only a proof)."""
    example = output.example
    zero = out.call_function(torch.zeros, [TupleVariable(())], {"dtype": const(example.dtype),
                                                                  "device": const(example.device)})
    return out.call_method(zero, "expand_as", [output], {})


def _storage_of(t):
    try:
        return t.untyped_storage()._cdata if isinstance(t, torch.Tensor) else None
    except NotImplementedError:
        return None


def _tensors(out, vars_):
    """The tensors among `vars_` and in the tuples and lists among them (`_foreach_` operands)."""
    for var in vars_:
        if isinstance(var, TensorVariable):
            yield var
        elif isinstance(var, (TupleVariable, ListVariable)):
            yield from _tensors(out, var.get_items(out._tx_for_items()))


def _impure(why: str) -> Unsupported:
    return Unsupported("impure_backward", what=why)


@dataclasses.dataclass(frozen=True, eq=False)
class OutsideStateVariable(VariableTracker):
    """A ctx attribute holding an object from before the frame (a config dict, a module), while the
    backward is proved: eager reads its state when the backward runs, so any use of it is refused."""
    what: str = ""
    why: str = "an object from before the frame"

    def describe(self):
        return self.what

    def _refuse(self, *_, **__):
        raise _impure(f"reads {self.what}, {self.why} (eager reads its state when the backward runs)")

    python_type = var_getattr = call_function = call_method = unpack = get_items = truth = iterate = _refuse


def _reaches_outside(tx, var, seen) -> bool:
    """Whether `var` is, or holds, a mutable object from before the frame."""
    if id(var) in seen or isinstance(var, (TensorVariable, SymNodeVariable, ConstantVariable)):
        return False
    seen.add(id(var))
    if var.source is not None:
        real = _real_object(tx.output, var)
        if real is None or not is_code(real) and not (isinstance(var, TupleVariable) and var.is_python_constant()):
            return True
    return any(_reaches_outside(tx, part, seen) for part in var.parts(tx))


def _storages_the_program_holds(out, vars_) -> set:
    """The memory of the graph's inputs and of the Function's arguments and results (`vars_`): the
    program holds these tensors, and may write into them between the forward and the backward."""
    held = [n.meta.get("example_value") for n in out.graph.nodes if n.op in ("placeholder", "get_attr")]
    held += [t.example for t in _tensors(out, vars_)]
    return {_storage_of(t) for t in held if isinstance(t, torch.Tensor)} - {None}


def _tensors_in(tx, var, seen):
    """The tensors `var` is or holds, at any depth."""
    if id(var) in seen:
        return
    seen.add(id(var))
    if isinstance(var, TensorVariable):
        yield var
        return
    for part in var.parts(tx):
        yield from _tensors_in(tx, part, seen)


def _real_object(out, var):
    for real, tracker in out.wrapped_objects.values():
        if tracker is var:
            return real
    return None


def needs_proof(out, args) -> bool:
    """Whether the call's backward will be traced by the backend: it differentiates the graph itself,
    grad mode is on, and a tensor argument requires grad."""
    return not out.eager_autograd and out.grad_enabled and not out.inference_mode and \
        any(isinstance(a, TensorVariable) and a.example.requires_grad for a in args)


def backward_impurity(tx, cls, backward, args, ctx, result):
    """Why the backward of `cls` (the function `backward`) cannot be traced into the graph's backward,
    after its forward (or setup_context) made `result` with `ctx`; None: it can. Leaves its trace
    for the caller to roll back."""
    out = tx.output
    effects = out.side_effects
    attrs = dict(effects.get(ctx))
    if attrs.get("materialize_grads", const(True)).as_python_constant_or_none() is not True:
        return "turns off materialized gradients (eager passes None for an unused output, a compiled backward zeros)"
    items = saved_tensors(tx, ctx)
    shared = _storages_the_program_holds(out, list(args) + [result])
    for name, value in attrs.items():
        if name in ("to_save", "needs_input_grad"):
            continue
        if _reaches_outside(tx, value, set()):
            attrs[name] = OutsideStateVariable(what=f"ctx.{name}")
        elif any(_storage_of(t.example) in shared for t in _tensors_in(tx, value, set())):
            # unlike a saved tensor, eager reads it as it is when the backward runs, unchecked: the
            # program may write into it before then, where a compiled backward would raise
            attrs[name] = OutsideStateVariable(what=f"ctx.{name}", why="a tensor the program can write "
                                               "into before the backward, not saved for backward")
    attrs["saved_tensors"] = TupleVariable(tuple(items))
    effects.store(ctx, attrs)

    if not isinstance(result, (TupleVariable, TensorVariable)):
        return f"returns {result.describe()}, neither a tensor nor a tuple"
    outputs = result.items if isinstance(result, TupleVariable) else (result,)
    gradients = [_gradient_like(out, o) if isinstance(o, TensorVariable) else const(None) for o in outputs]
    contents = dict(effects.contents)
    outside = _outside_state(effects)
    proof = BackwardProof(out, [g for g in gradients if isinstance(g, TensorVariable)])
    outer, out.backward_proof = out.backward_proof, proof
    try:
        grads = UserFunctionVariable(fn=backward).call_function(tx, [ctx] + gradients, {})
    except Unsupported as e:
        return e.context["what"] if e.kind.name == "impure_backward" else f"cannot be traced: {e.reason}"
    except UserException:
        return "raises"
    finally:
        out.backward_proof = outer
    if _outside_state(effects) != outside:
        return "changes Python state outside the function (globals, objects from before the frame, cells)"
    if any(effects.contents.get(var) is not old for var, old in contents.items()):
        return "changes Python state that outlives it (the ctx, or an object the forward made)"
    if proof.written_before():
        return "writes in place into a gradient or a tensor of the forward"
    return _refused_gradients(grads, args)


def saved_tensors(tx, ctx):
    """What `ctx.save_for_backward` was given (tensors and None), or None when eager's refuses it."""
    saved = tx.output.side_effects.get(ctx).get("to_save", TupleVariable(()))
    if not isinstance(saved, TupleVariable) or not all(
            isinstance(t, TensorVariable) or t.is_python_constant() and t.as_python_constant() is None
            for t in saved.items):
        return None
    return saved.items


def _outside_state(effects):
    snap = effects.snapshot()
    return snap.mutated, snap.globals, snap.cells, snap.deleted_globals, snap.calls


def _refused_gradients(grads, args):
    """What eager's autograd raises about the gradients a backward returned (None: nothing)."""
    grads = list(grads.items) if isinstance(grads, TupleVariable) else [grads]
    if len(grads) > len(args) and all(_is_none(g) for g in grads[len(args):]):
        grads = grads[:len(args)]     # more results are allowed when they are None
    if len(grads) != len(args):
        return f"returns {len(grads)} gradients for {len(args)} inputs (eager raises)"
    for i, (grad, arg) in enumerate(zip(grads, args)):
        if _is_none(grad):
            continue
        if not isinstance(grad, TensorVariable):
            return f"returns {grad.describe()} as gradient {i} (eager raises)"
        if not isinstance(arg, TensorVariable):
            return f"returns a gradient for the non-tensor input {i} (eager raises)"
        if not arg.example.requires_grad:
            continue      # eager drops it unchecked
        want, got = arg.example, grad.example
        if got.device != want.device or not _sums_to(got.shape, want.shape):
            return f"returns a gradient of shape {tuple(got.shape)} for input {i} of shape {tuple(want.shape)} " \
                   "(eager raises)"
    return None


def _is_none(var) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def _sums_to(shape, target) -> bool:
    """Whether a gradient of `shape` reduces to `target` as eager reduces it (`target` expands to it)."""
    if len(target) > len(shape):
        return False
    return all(t == s or t == 1 for t, s in zip(reversed(target), reversed(shape)))


def once_differentiable_inner(fn):
    """The backward `torch.autograd.function.once_differentiable` wraps (it runs it under no_grad and,
    with create_graph=True, marks the results not differentiable again), or None."""
    if isinstance(fn, types.FunctionType) and fn.__code__ is _ONCE_DIFFERENTIABLE_CODE:
        return fn.__closure__[fn.__code__.co_freevars.index("fn")].cell_contents
    return None
