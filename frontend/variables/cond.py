"""`torch.cond(pred, true_fn, false_fn, operands)`: both branches traced, one graph node.

Compile time only. What eager does decides the form:

- a Python bool/int/float predicate: eager calls the chosen branch, `true_fn(*operands)`; so does
  the trace (the predicate is guarded like any constant);
- a one-element bool tensor: eager captures both branches with torch's compiler and runs the one the
  value picks. The trace does the same: each branch is traced on the operands into the main graph,
  its new nodes move into a subgraph of their own (the tensors they read from outside, closures and
  module parameters, become extra inputs of both subgraphs) and the graph gets one
  `torch.ops.higher_order.cond(pred, true_graph, false_graph, inputs)` node, whose fake run checks
  that both branches give tensors of the same metadata.

A branch that cannot be traced, raises, changes anything outside itself (Python state, a tensor it
did not make, grad or autocast mode), returns something else than a tensor or a tuple/list of
tensors, or returns a tensor sharing memory with one it was given breaks the graph at the call, and
`torch.cond` runs natively (raising there what eager raises).
"""
from __future__ import annotations

import dataclasses

import torch

from ..graph_break import Unsupported
from ..value_raises import AtenCallRecorder
from .autograd_function import impurity
from .constant import const
from .dicts import DictVariable
from .lists import ListVariable, TupleVariable
from .tensor import SymNodeVariable, TensorVariable
from .vmap import _changes_outside

_NAMES = ("pred", "true_fn", "false_fn", "operands")


def _unsupported(detail: str) -> Unsupported:
    return Unsupported("unsupported_call", fn="torch.cond", detail=f" ({detail})")


def call_cond(tx, args, kwargs):
    if len(args) > len(_NAMES) or set(kwargs) - set(_NAMES[len(args):]):
        raise _unsupported("arguments it does not take")
    bound = dict(zip(_NAMES, args), **kwargs)
    if set(_NAMES[:3]) - set(bound):
        raise _unsupported("missing arguments")
    pred, true_fn, false_fn = bound["pred"], bound["true_fn"], bound["false_fn"]
    operands = bound.get("operands", TupleVariable(()))
    if isinstance(pred, SymNodeVariable):
        pred = const(pred.evaluate())     # eager's predicate is a plain number (its value guarded)
    if pred.is_python_constant() and type(pred.as_python_constant()) in (bool, int, float):
        chosen = true_fn if pred.as_python_constant() else false_fn
        return tx.call(chosen, tx.unpack_iterable(operands), {})
    if not isinstance(pred, TensorVariable) or pred.example.dtype is not torch.bool or pred.example.numel() != 1:
        raise _unsupported(f"a predicate that is {pred.describe()}")
    if not isinstance(operands, (TupleVariable, ListVariable)) or operands.python_type() not in (tuple, list):
        raise _unsupported(f"operands that are {operands.describe()}")
    args = list(operands.get_items(tx))
    items = _tensor_leaves(tx, args)     # (operands are trees of tensors: eager passes them as they are)
    out = tx.output
    state = out.checkpoint()
    try:
        true_branch = _trace_branch(tx, true_fn, args, items)
        false_branch = _trace_branch(tx, false_fn, args, items)
    except Unsupported:
        out.restore(state)
        raise
    return _emit(tx, pred, items, true_branch, false_branch)


@dataclasses.dataclass
class _Branch:
    graph: torch.fx.Graph           # the branch's nodes, reading outer nodes through `reads`
    reads: dict                     # outer node -> its placeholder in `graph`
    outputs: list                   # the branch's output nodes in `graph`
    kind: type                      # what the branch returned: torch.Tensor, tuple or list


def _tensor_leaves(tx, values) -> list:
    """The tensors of operand trees (tuples, lists, plain dicts), each leaf a tensor."""
    leaves = []
    for value in values:
        if isinstance(value, TensorVariable):
            leaves.append(value)
        elif isinstance(value, (TupleVariable, ListVariable)) and value.python_type() in (tuple, list):
            leaves.extend(_tensor_leaves(tx, list(value.get_items(tx))))
        elif isinstance(value, DictVariable) and value.python_type() is dict:
            leaves.extend(_tensor_leaves(tx, [v for _, v in value.pairs(tx)]))
        else:
            raise _unsupported("operands that are not all tensors")
    return leaves


def _trace_branch(tx, fn, args, operands) -> _Branch:
    """`fn(*args)` traced; `operands`: the tensors of `args`."""
    out = tx.output
    before = list(out.graph.nodes)
    known = set(before)
    modes = (out.grad_enabled, out.autocast_stack, out.inference_mode, out.torch_function_state)
    effects = out.side_effects.snapshot()
    result = []

    def run():
        result.append(tx.call(fn, list(args), {}))
    why = impurity(tx, run)
    if why is not None:
        raise _unsupported(f"a branch {why}")
    if _changes_outside(effects, out.side_effects):
        # (an attribute set on a tensor, which the rollback below would drop)
        raise _unsupported("a branch changes objects outside it")
    if (out.grad_enabled, out.autocast_stack, out.inference_mode, out.torch_function_state) != modes:
        raise _unsupported("a branch changes grad, autocast or inference mode")
    value = result[0]
    if isinstance(value, TensorVariable):
        kind, values = torch.Tensor, [value]
    elif isinstance(value, (TupleVariable, ListVariable)) and value.python_type() in (tuple, list):
        kind, values = value.python_type(), list(value.get_items(tx))
    else:
        raise _unsupported(f"a branch returns {value.describe()}")
    if not values or not all(isinstance(v, TensorVariable) and type(v.example).__name__ == "FakeTensor" and
                             v.cls is torch.Tensor for v in values):
        raise _unsupported("a branch returns something else than plain tensors")
    # (a get_attr: a subgraph of a torch.cond inside this branch)
    new = [n for n in out.graph.nodes if n not in known and n.op in ("call_function", "call_method", "get_attr")]
    new_set = set(new)
    outer = [n for n in before if isinstance(n.meta.get("example_value"), torch.Tensor)]
    outer_storages = {n.meta["example_value"].untyped_storage()._cdata for n in outer} | \
        {t.example.untyped_storage()._cdata for t in operands}
    for v in values:
        if v.proxy.node not in new_set or v.example.untyped_storage()._cdata in outer_storages:
            raise _unsupported("a branch returns a tensor it was given, or a view of one")
    for node in new:
        written = _written_tensor(node)
        if isinstance(written, torch.Tensor) and written.untyped_storage()._cdata in outer_storages:
            # (`t[0].add_(1)`: in place on a view the branch made, of memory it was given)
            raise _unsupported("a branch changes in place a tensor it was given")
    # the branch's nodes, moved to a graph of their own
    graph, reads = torch.fx.Graph(), {}

    def read(node):
        if node in new_set:
            return env[node]
        if not isinstance(node.meta.get("example_value"), torch.Tensor):
            raise _unsupported(f"a branch reads {node.name}, which is not a tensor")
        if node not in reads:
            reads[node] = graph.placeholder(node.name)
            reads[node].meta.update(node.meta)
        return reads[node]
    env = {}
    for node in new:
        env[node] = graph.node_copy(node, read)
    outputs = [env[v.proxy.node] for v in values]
    for node in reversed(new):
        out.graph.erase_node(node)
    out.side_effects.restore(effects)
    return _Branch(graph, reads, outputs, kind)


def _written_tensor(node):
    """The fake tensor an in-place node writes (`x.add_(y)`, `x[i] = v`, `out=`), else None."""
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if isinstance(node.kwargs.get("out"), torch.fx.Node):
        return node.kwargs["out"].meta.get("example_value")
    if (name.endswith("_") and not name.endswith("__") or name == "setitem") and node.args and \
            isinstance(node.args[0], torch.fx.Node):
        return node.args[0].meta.get("example_value")
    return None


def _subgraph(out, branch: _Branch, inputs: list) -> torch.fx.GraphModule:
    """The branch as a module taking all of `inputs` (outer nodes) and returning a tuple."""
    root = torch.nn.Module()
    held = dict(out.constant_tensors)
    for node in branch.graph.nodes:
        if node.op == "get_attr":       # the subgraphs of a torch.cond inside the branch
            setattr(root, node.target, held[node.target])
    graph = torch.fx.Graph()
    env = {}
    for i, node in enumerate(inputs):
        placeholder = graph.placeholder(f"arg{i}")
        placeholder.meta.update(node.meta)
        if node in branch.reads and branch.reads[node] not in env:
            env[branch.reads[node]] = placeholder
    for node in branch.graph.nodes:
        if node.op != "placeholder":
            env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in branch.outputs))
    return torch.fx.GraphModule(root, graph)


class _SkippingNestedConds(torch.fx.Interpreter):
    """Runs a branch, answering each torch.cond inside it with its recorded value: that cond's
    branches were checked when it was traced."""

    def run_node(self, n):
        if n.op == "call_function" and n.target is torch.ops.higher_order.cond:
            return n.meta["example_value"]
        return super().run_node(n)


def _draws_random_numbers(out, gm, fakes) -> bool:
    """Whether the branch's ATen ops include a random one (its fake run, recorded)."""
    recorder = AtenCallRecorder()
    try:
        with out.tracing_state(), out.fake_mode, recorder:
            _SkippingNestedConds(gm).run(*fakes)
    except Exception:       # noqa: BLE001 - (cannot tell: as if it did)
        return True
    return recorder.draws_random()


def _emit(tx, pred, operands, true_branch: _Branch, false_branch: _Branch):
    out = tx.output
    if true_branch.kind is not false_branch.kind or len(true_branch.outputs) != len(false_branch.outputs):
        raise _unsupported("branches that return different structures")
    # only the tensors a branch reads: eager's capture passes no other, and whether the outputs
    # require grad follows whether any input does
    inputs = list(dict.fromkeys(list(true_branch.reads) + list(false_branch.reads)))
    graphs = [_subgraph(out, true_branch, inputs), _subgraph(out, false_branch, inputs)]
    fakes = [n.meta["example_value"] for n in inputs]
    for gm in graphs:
        if _draws_random_numbers(out, gm, fakes):
            # eager's capture of the branches and a backend's need not draw the same numbers
            raise _unsupported("a branch draws random numbers")
    try:
        with out.tracing_state(), out.fake_mode:
            example = torch.ops.higher_order.cond(pred.example, graphs[0], graphs[1], tuple(fakes))
    except Exception as e:      # (branches of different metadata: eager raises too)
        raise _unsupported(f"its branches do not agree: {type(e).__name__}") from None
    grad = out.grad_enabled and any(f.requires_grad for f in fakes)
    if any(e.requires_grad != grad for e in example):
        # eager's outputs require grad exactly when an input does (the op's autograd), and so must
        # the trace's, which later ops and the rebuilt outputs go by
        raise _unsupported("its outputs' requires_grad is not the inputs'")
    getters = [out.graph.get_attr(out.add_submodule(gm, f"cond_{which}"))
               for gm, which in zip(graphs, ("true", "false"))]
    node = out.graph.call_function(torch.ops.higher_order.cond,
                                   (pred.proxy.node, getters[0], getters[1], tuple(inputs)))
    node.meta["example_value"] = example
    result = out.wrap_result(torch.fx.Proxy(node, out.tracer), tuple(example))
    items = list(result.items)
    if true_branch.kind is torch.Tensor:
        return items[0]
    if true_branch.kind is list:
        return ListVariable.create(tx, items)
    return TupleVariable(tuple(items))
