"""A lazy module's first call (`nn.LazyLinear`, `LazyConv2d`, `LazyBatchNorm1d`...): its forward pre-hook
`_infer_parameters` materializes the parameters from the input's sizes, initializes them (drawing random
numbers), removes itself and changes the module's class (`LazyLinear` becomes `Linear`). Compile time only.

That hook is torch's code and depends only on the input's sizes, the module and the random number
generator, so it is run for real while tracing, at the point of the call -- which is where eager runs
it -- when doing it then is exactly eager's: the graph traced so far draws no random numbers (its ops
run after compiling, so eager would draw theirs first) and cannot raise for some values (eager would then
never reach the call: value_raises.py), no change the trace holds back is pending on the
module, the sizes are known numbers, the trace is not speculative (a `torch.cond` branch eager may not
take, a backward eager runs later), and a dry run on a copy raises and warns nothing. The trace then
goes on with the module as it now is. Otherwise the call breaks the graph (the builder refuses the
uninitialized parameters) and the hook runs natively.
"""
from __future__ import annotations


import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.nn.parameter import is_lazy

from ...guards.guard import Guard
from ..quiet_warnings import filters_set_to
from ..value_raises import AtenCallRecorder, graph_raises_by_value
from .base import families
from .global_state import SAVED_HOOKS_AT_ENTRY
from .tensor import TensorVariable
from .torch import torch_function_state_now


def initializes_lazily(module) -> bool:
    """A lazy module whose initializing pre-hook has not run yet."""
    return isinstance(module, torch.nn.modules.lazy.LazyModuleMixin) and "_initialize_hook" in vars(module)


def initialize_now(tx, var, args, kwargs) -> bool:
    """Run the lazy module `var`'s initializing hook now, as eager runs it at this call, if that is
    exactly eager's (see the module docstring). False: it was not run."""
    module = var.module
    out = tx.output
    if _refusal(tx, var, args, kwargs) is not None:
        return False
    fakes = [a.example if isinstance(a, TensorVariable) else a.as_python_constant() for a in args]
    fake_kwargs = {k: v.example if isinstance(v, TensorVariable) else v.as_python_constant() for k, v in kwargs.items()}
    before = type(module)
    with out.tracing_state():
        if not _dry_run_is_clean(module, fakes, fake_kwargs):
            return False
        module._infer_parameters(module, fakes, fake_kwargs)
    if var.source is not None:
        # the entry traced the module as it is now: a fresh lazy module (the class it had) fails this;
        # the guard that it had that class (read before the call) no call could pass again
        out.guards.discard(Guard.type_match(var.source, before))
        out.guards.add(Guard.type_match(var.source, type(module)))
    return True


def _refusal(tx, var, args, kwargs):
    module = var.module
    out = tx.output
    if not type(module).__module__.startswith("torch.nn.modules."):
        return "a lazy module class of the program (its initialize_parameters is user code)"
    hooks = module._forward_pre_hooks
    if not hooks or next(iter(hooks)) != module._initialize_hook.id:
        return "a forward pre-hook that runs before the initializing one"
    if out.speculative_depth:
        return "a speculative trace (code eager may run later or not at all)"
    if torch._C._functorch.peek_interpreter_stack() is not None:
        return "inside a functorch transform"
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, TensorVariable):
            e = value.example
            if type(e) is not FakeTensor or e.device.type != "cpu" or \
                    not all(type(s) is int and s > 0 for s in e.shape):
                return "an input whose sizes are not known positive numbers"
        elif not value.is_python_constant():
            return f"an input that is {value.describe()}"
    for t in list(module.parameters(recurse=False)) + list(module.buffers(recurse=False)):
        if t.device.type != "cpu":
            return "parameters not on the CPU (their random numbers come from another generator)"
    if id(module) in out.modules_read:
        # a value read from it may be read again from its source after the graph, which would then
        # see the module as initialized where eager saw it before
        return "the module's attributes read earlier in the trace"
    if _pending_change(tx, var):
        return "a change to the module the trace has not made yet"
    if graph_draws_random_numbers(out):
        return "random numbers drawn earlier in the graph"
    if graph_raises_by_value(out.graph):
        # an op before the call may raise when the graph runs (an index out of range): eager then never
        # reaches the call, and the module stays lazy, with the random numbers undrawn
        return "an op earlier in the graph that may raise for some values"
    return None


def _pending_change(tx, var) -> bool:
    """Whether a change the trace holds back (replayed after the graph) is on the module or its tables."""
    module = var.module
    effects = tx.output.side_effects
    if effects.is_tracked(var) and effects.get(var):
        return True
    tables = {id(module), id(vars(module))} | {id(v) for v in vars(module).values() if isinstance(v, dict)}
    real_of = {id(tracker): real for real, tracker in tx.output.wrapped_objects.values()}
    return any(id(real_of.get(id(changed))) in tables or getattr(changed, "value", None) is module
               for changed in effects.mutated)


def _dry_run_is_clean(module, fakes, fake_kwargs) -> bool:
    """The hook's work (`initialize_parameters`) done on a stand-in of the module, with the random state
    put back: it raises nothing, warns nothing and leaves nothing uninitialized (which `_infer_parameters`
    raises for). The stand-in shares nothing the hook changes: its tables hold fresh uninitialized
    tensors and copies of the others."""
    twin = object.__new__(type(module))
    state = dict(vars(module))
    for table in ("_parameters", "_buffers"):
        state[table] = {name: _stand_in(t) for name, t in state[table].items()}
    object.__getattribute__(twin, "__dict__").update(state)
    # (a warning raises: eager issues it at the call, from its own line)
    with torch.random.fork_rng(devices=[]), filters_set_to("error"):
        try:
            twin.initialize_parameters(*fakes, **fake_kwargs)
            unfinished = twin.has_uninitialized_params()
        except Exception:   # noqa: BLE001 - eager raises or warns at the call: it runs there
            return False
    return not unfinished


def _stand_in(t):
    if t is None:
        return None
    if is_lazy(t):
        return type(t)(requires_grad=t.requires_grad, device=t.device, dtype=t.dtype)
    return t.detach().clone()


def _is_state_node(target) -> bool:
    """A node changing the trace's modelled state (grad mode, inference mode, autocast, default dtype,
    functorch levels): it draws nothing, and re-running it would change that state for real."""
    name = getattr(target, "__name__", "")
    return isinstance(name, str) and name.startswith(("_enter", "_exit", "_set_", "set_", "_vmap_"))


def graph_draws_random_numbers(out) -> bool:
    """Whether an op of the graph traced so far draws random numbers: each node run again on fresh fake
    tensors of its operands' metadata, its ATen ops recorded (anything that cannot be run so: as if it did)."""
    recorder = AtenCallRecorder()
    for node in out.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            if node.op not in ("placeholder", "output"):
                return True
            continue
        if node.op == "call_function" and _is_state_node(node.target):
            continue
        if not _run_again(out, node, recorder):
            return True
    return recorder.draws_random()


def _run_again(out, node, recorder) -> bool:
    """Run the graph node again on fresh fake tensors of its operands' metadata, quietly, its ATen ops
    recorded by `recorder`; False when it cannot be run so."""
    try:
        with out.tracing_state(), out.fake_mode, filters_set_to("ignore"):
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                                 lambda n: fresh_fake(n.meta["example_value"]))
            with recorder:
                if node.op == "call_function":
                    node.target(*args, **kwargs)
                else:
                    getattr(args[0], node.target)(*args[1:], **kwargs)
    except Exception:   # noqa: BLE001 - (cannot tell)
        return False
    return True


def fresh_fake(value):
    """A new fake tensor with `value`'s metadata (so running an op again changes no fake of the trace)."""
    if type(value) in (list, tuple):
        return type(value)(fresh_fake(v) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    if type(value) is not FakeTensor:
        raise TypeError("not a plain fake tensor")
    differentiable = value.is_floating_point() or value.is_complex()
    return torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device,
                               requires_grad=value.requires_grad and differentiable)


# -- what a generator replay (iterators.replayable) needs: facts about the trace, by the same fake runs
def torch_state_as_at_entry(out) -> bool:
    """Whether the torch state the trace models (grad and inference mode, autocast, default dtype,
    torch-function state and modes, saved-tensor hooks) is here what it was when the compiled code
    was entered, which is the process's now (compile time runs at the frame's start)."""
    return out.grad_enabled == torch.is_grad_enabled() and out.default_dtype == torch.get_default_dtype() and \
        not out.autocast_stack and not out.inference_stack and out.inference_mode == out.inference_at_entry and \
        not out.torch_function_stack and out.torch_function_state == torch_function_state_now() and \
        not out.function_modes and out.saved_hooks_message is SAVED_HOOKS_AT_ENTRY


def pure_graph_nodes(out, nodes) -> bool:
    """Whether the graph nodes `nodes` draw no random numbers, change no tensor in place and set no
    global state (grad mode, autocast...): each run again on fresh fake tensors of its operands' metadata,
    its ATen ops recorded (a node that cannot be run so counts as impure)."""
    recorder = AtenCallRecorder()
    for node in nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op not in ("call_function", "call_method") or \
                node.op == "call_function" and _is_state_node(node.target):
            return False
        if not _run_again(out, node, recorder):
            return False
    return not recorder.draws_random() and not any(op._schema.is_mutable for op, *_ in recorder.calls)


families.register(pure_graph_nodes, torch_state_as_at_entry)
