"""Partitioners: split AOTAutograd's joint forward+backward graph into a forward graph (which returns
the user outputs followed by the values saved for backward) and a backward graph (which takes the
saved values and the output gradients, and returns the input gradients).

- `default`: torch's own `default_partition` -- the forward graph is exactly the ops of the user's
  forward, and every forward value the backward reads is saved.
- `min_cut`: bytegraph's rematerializing partitioner. Choosing what to save is a minimum s-t cut
  (networkx max-flow) in a graph whose cuttable edges are "save this value, at the cost of its
  size in bytes". Cheap ops (pointwise, views, reductions) may be recomputed in the backward
  instead of saved; expensive or impure ops (matmul, convolution, random, mutation) may not.

Both follow AOTAutograd's calling convention: forward outputs are
`(*user_outputs, *saved_tensors, *saved_symints)` and backward inputs are
`(*saved_symints, *saved_tensors, *tangents)`.

Compile time only.
"""
from __future__ import annotations

import operator
from collections.abc import Callable

import torch
from torch import fx
from torch._functorch._aot_autograd.descriptors import SavedForBackwardsAOTOutput
from torch.fx.experimental.symbolic_shapes import find_symbol_binding_fx_nodes, free_symbols

from ..logs import log

aten = torch.ops.aten

# OpOverloadPackets that are cheap to recompute besides pointwise ops, views and reductions
_CHEAP_PACKETS = {aten._to_copy, aten.full, aten.full_like, aten.zeros, aten.zeros_like, aten.ones,
                  aten.ones_like, aten.scalar_tensor, aten.arange, aten.cat, aten.lift_fresh_copy}
_DEFAULT_UNKNOWN_NUMEL = 4096   # size estimate for a tensor whose numel has no hint


# -- node classification ------------------------------------------------------
def _is_primal(node: fx.Node) -> bool:
    return node.op == "placeholder" and node.name.startswith("primals")


def _is_tangent(node: fx.Node) -> bool:
    return node.op == "placeholder" and node.name.startswith("tangents")


def _is_sym(node: fx.Node) -> bool:
    return isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))


def _is_random(node: fx.Node) -> bool:
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in target.tags


def _is_mutating(node: fx.Node) -> bool:
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable


def _is_recomputable(node: fx.Node) -> bool:
    """May this forward node be computed again in the backward instead of being saved?"""
    if node.op != "call_function":
        return node.op == "get_attr"
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        # getitem of a multi-output op and Python arithmetic on SymInts
        return target is operator.getitem or _is_sym(node)
    if _is_random(node) or _is_mutating(node):
        return False
    tags = target.tags
    return (torch.Tag.pointwise in tags or torch.Tag.reduction in tags or target.is_view
            or target.overloadpacket in _CHEAP_PACKETS)


def _written_memory(joint: fx.Graph) -> set:
    """Nodes whose memory some op of the graph writes (the in-graph `copy_` into a mutated input,
    after functionalization), with every view of them and the mutating nodes themselves. Saving one
    of these, or recomputing from it in the backward, would read the value after the write."""
    written: set = set()
    for node in joint.nodes:
        if not _is_mutating(node):
            continue
        written.add(node)
        for arg, schema_arg in zip(node.args, node.target._schema.arguments):
            if isinstance(arg, fx.Node) and schema_arg.alias_info is not None and schema_arg.alias_info.is_write:
                written.add(arg)
        for name, arg in node.kwargs.items():
            schema_arg = next((a for a in node.target._schema.arguments if a.name == name), None)
            if isinstance(arg, fx.Node) and schema_arg is not None and schema_arg.alias_info is not None \
                    and schema_arg.alias_info.is_write:
                written.add(arg)

    def is_view(node):
        return isinstance(node.target, torch._ops.OpOverload) and node.target.is_view and node.args \
            and isinstance(node.args[0], fx.Node)
    # the bases the written views were taken of, then every view of anything written
    stack = list(written)
    while stack:
        node = stack.pop()
        if is_view(node) and node.args[0] not in written:
            written.add(node.args[0])
            stack.append(node.args[0])
    for node in joint.nodes:
        if is_view(node) and node.args[0] in written:
            written.add(node)
    return written


def _nbytes(node: fx.Node) -> int | None:
    """What saving this node costs; None when it cannot be saved at all (tuples, None, ...)."""
    val = node.meta.get("val")
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return 1
    if not isinstance(val, torch.Tensor):
        return None
    numel = val.numel()
    if isinstance(numel, torch.SymInt):
        hint = numel.node.hint
        numel = int(hint) if hint is not None else _DEFAULT_UNKNOWN_NUMEL
    return max(1, numel * val.element_size())


# -- extracting a subgraph ------------------------------------------------------
def _extract(joint: fx.Graph, inputs: list, outputs: list, *, backward: bool, tangent_dependent: set,
             output_descs=None) -> fx.Graph:
    """A new graph computing `outputs` from `inputs` (nodes of `joint`, which become placeholders),
    copying every joint node whose arguments are available; dead code is removed afterwards.
    Forward-only nodes (random ops and mutations that do not depend on tangents) are never
    copied into the backward graph: they must run once, in the forward."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node in inputs:
        placeholder = graph.placeholder(node.name)
        placeholder.meta = node.meta
        env[node] = placeholder
    for node in joint.nodes:
        if node in env or node.op in ("placeholder", "output"):
            continue
        if backward and node not in tangent_dependent and (_is_random(node) or _is_mutating(node)):
            continue
        if all(arg in env for arg in node.all_input_nodes):
            env[node] = graph.node_copy(node, env.__getitem__)
    values = []
    for out in outputs:
        if isinstance(out, fx.Node):
            if out not in env:
                raise AssertionError(f"min_cut partitioner: {out.name} is not computable in the "
                                     f"{'backward' if backward else 'forward'} graph")
            values.append(env[out])
        else:
            values.append(out)
    output = graph.output(tuple(values))
    if output_descs is not None:
        output.meta["desc"] = output_descs
    graph.eliminate_dead_code()
    graph.lint()
    return graph


def _symbol_bindings(joint: fx.Graph, saved_syms: list, needed: list) -> list:
    """Sym nodes (not yet in `saved_syms`) that bind every free symbol of the values in `needed`, so
    the backward graph has a value for each symbol its inputs mention (dynamic shapes)."""
    bindings = find_symbol_binding_fx_nodes(joint)
    have = set()
    for node in saved_syms:
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) and val.node.expr in bindings:
            have.add(val.node.expr)
    extra = []
    for node in needed:
        if "val" not in node.meta:
            continue
        for symbol in sorted(free_symbols(node.meta["val"]) - have, key=lambda s: s.name):
            have.add(symbol)
            if symbol in bindings and bindings[symbol] not in saved_syms:
                extra.append(bindings[symbol])
    return extra


# -- the min-cut partitioner -----------------------------------------------------
class _Unsupported(Exception):
    pass


def _solve_min_cut(joint: fx.Graph, bwd_outputs: list, tangent_dependent: set, static_inputs: set) -> list:
    """The forward values to save, in graph order.

    Each node n becomes an edge n_in -> n_out whose capacity is what saving n costs; every use
    becomes an infinite edge n_out -> user_in. The source feeds the primal inputs and every node
    that must run in the forward (not recomputable); backward nodes drain into the sink. A minimum
    cut separates what the forward computes from what the backward computes, and the cut edges
    n_in -> n_out are exactly the values that cross: the ones to save."""
    needed_by_bw: set = set()
    stack = [n for n in bwd_outputs if isinstance(n, fx.Node)]
    while stack:
        node = stack.pop()
        if node not in needed_by_bw:
            needed_by_bw.add(node)
            stack.extend(node.all_input_nodes)

    grad_outputs = {n for n in bwd_outputs if isinstance(n, fx.Node)}
    written = _written_memory(joint)
    import networkx as nx   # imported where used: every full gc walks its objects
    flow = nx.DiGraph()
    for node in joint.nodes:
        if node.op == "output":
            continue
        if node in tangent_dependent:
            if node in needed_by_bw:
                flow.add_edge(node.name + "_in", "sink")      # capacity missing = infinite
            continue
        if _is_primal(node) or not _is_recomputable(node):
            flow.add_edge("source", node.name + "_in")
        cost = None if node in written else _nbytes(node)
        if cost is not None and node in static_inputs:
            cost = 0      # alive for the whole step anyway (parameters)
        if cost is None:
            flow.add_edge(node.name + "_in", node.name + "_out")
        else:
            flow.add_edge(node.name + "_in", node.name + "_out", capacity=cost)
        for user in node.users:
            if user.op != "output":
                flow.add_edge(node.name + "_out", user.name + "_in")
        if node in grad_outputs:      # a gradient that does not depend on the tangents
            flow.add_edge(node.name + "_out", "sink")
    if "sink" not in flow or "source" not in flow:
        return []
    try:
        _, (reachable, _) = nx.minimum_cut(flow, "source", "sink")
    except nx.NetworkXUnbounded as e:
        raise _Unsupported("a backward value can only be obtained through an unsaveable node") from e
    return [node for node in joint.nodes
            if node.op != "output" and node.name + "_in" in reachable
            and node.name + "_out" in flow and node.name + "_out" not in reachable]


def min_cut_partition(joint_module: fx.GraphModule, joint_inputs, *, num_fwd_outputs: int,
                      static_lifetime_input_indices=None, **kwargs):
    """Partition `joint_module` saving as few bytes for backward as a minimum cut allows,
    recomputing cheap ops in the backward. Graphs this partitioner does not handle (activation
    checkpointing tags, functionalized RNG state, effect tokens, backward state) go to the
    default partitioner."""
    try:
        return _min_cut_partition(joint_module, num_fwd_outputs, static_lifetime_input_indices or [])
    except _Unsupported as e:
        log("backend", f"min_cut partitioner: {e}; using the default partitioner for this graph")
        return default_partition(joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs,
                                 static_lifetime_input_indices=static_lifetime_input_indices, **kwargs)


def _min_cut_partition(joint_module, num_fwd_outputs, static_lifetime_input_indices):
    joint = joint_module.graph
    placeholders = list(joint.find_nodes(op="placeholder"))
    others = [p.name for p in placeholders if not (_is_primal(p) or _is_tangent(p))]
    if others:
        raise _Unsupported(f"inputs other than primals and tangents ({', '.join(others)})")
    if any("recompute" in n.meta for n in joint.nodes):
        raise _Unsupported("activation checkpointing tags")
    primals = [p for p in placeholders if _is_primal(p)]
    tangents = [p for p in placeholders if _is_tangent(p)]
    static_inputs = {primals[i] for i in static_lifetime_input_indices if i < len(primals)}

    output_node = joint.find_nodes(op="output")[0]
    outputs = list(output_node.args[0])
    fwd_outputs, bwd_outputs = outputs[:num_fwd_outputs], outputs[num_fwd_outputs:]
    descs = output_node.meta.get("desc")
    fwd_descs, bwd_descs = (descs[:num_fwd_outputs], descs[num_fwd_outputs:]) if descs else (None, None)

    tangent_dependent: set = set()
    for node in joint.nodes:
        if _is_tangent(node) or any(arg in tangent_dependent for arg in node.all_input_nodes):
            tangent_dependent.add(node)

    saved = _solve_min_cut(joint, bwd_outputs, tangent_dependent, static_inputs)
    saved_syms = [n for n in saved if _is_sym(n)]
    saved_tensors = [n for n in saved if not _is_sym(n)]

    def extract_backward():
        return _extract(joint, saved_syms + saved_tensors + tangents, bwd_outputs, backward=True,
                        tangent_dependent=tangent_dependent, output_descs=bwd_descs)

    # drop saved values the backward does not read, then make sure every symbol in the shapes of
    # the backward's inputs is bound by a saved SymInt
    used = {p.name for p in extract_backward().find_nodes(op="placeholder") if p.users}
    saved_tensors = [n for n in saved_tensors if n.name in used]
    saved_syms = [n for n in saved_syms if n.name in used]
    saved_syms = _symbol_bindings(joint, saved_syms, saved_syms + saved_tensors + tangents) + saved_syms

    if fwd_descs is not None:
        fwd_descs = list(fwd_descs) + [SavedForBackwardsAOTOutput(i)
                                       for i in range(len(saved_tensors) + len(saved_syms))]
    fw_graph = _extract(joint, primals, fwd_outputs + saved_tensors + saved_syms, backward=False,
                        tangent_dependent=tangent_dependent, output_descs=fwd_descs)
    bw_graph = extract_backward()
    log("backend", f"min_cut partitioner saves {len(saved_tensors)} tensors "
                   f"({sum(_nbytes(n) or 0 for n in saved_tensors)} bytes) and {len(saved_syms)} SymInts")
    return fx.GraphModule(joint_module, fw_graph), fx.GraphModule(joint_module, bw_graph)


def _read_dead_random_tuples(joint: fx.Graph) -> None:
    """Give each random op with several outputs that nothing reads (`native_dropout` of a value the
    program drops; kept in the joint graph because it draws from the generator) a `getitem` of its
    first output. torch's default partitioner expects such an op to be read only through getitems
    and rejects one read by nothing; the getitem is dead code again in the extracted forward, where
    the random op itself stays (eager draws those numbers too)."""
    for node in list(joint.nodes):
        val = node.meta.get("val")
        if node.op == "call_function" and not node.users and _is_random(node) and isinstance(val, (tuple, list)):
            with joint.inserting_after(node):
                first = joint.call_function(operator.getitem, (node, 0))
            first.meta["val"] = val[0]


def _drop_forward_random_copies(forward: fx.GraphModule, backward: fx.GraphModule) -> None:
    """Remove from `backward` the copies of the forward's random ops that nothing there reads. torch's
    default partitioner copies into the backward every joint node it can compute from the backward's
    inputs, and a random op of the forward that reads no input (`torch.randn(3)`, `normal_` of a new
    tensor) is one; dead code elimination keeps it (it draws from the generator), so each backward
    call drew those numbers again, which eager's backward never does (the next numbers differ)."""
    in_forward = {node.name for node in forward.graph.nodes if _is_random(node)}
    dropped = False
    for node in reversed(list(backward.graph.nodes)):
        if node.op == "call_function" and _is_random(node) and node.name in in_forward and not node.users:
            backward.graph.erase_node(node)
            dropped = True
    if dropped:
        backward.graph.eliminate_dead_code()
        backward.recompile()


def default_partition(joint_module: fx.GraphModule, joint_inputs, **kwargs):
    """torch's default partitioner (imported on first use: it pulls in torch's compiler stack)."""
    from torch._functorch.partitioners import default_partition as torch_default_partition
    _read_dead_random_tuples(joint_module.graph)
    forward, backward = torch_default_partition(joint_module, joint_inputs, **kwargs)
    _drop_forward_random_copies(forward, backward)
    return forward, backward


PARTITIONERS: dict[str, Callable] = {"default": default_partition, "min_cut": min_cut_partition}


def get_partitioner(partitioner) -> Callable:
    """A partitioner by name ("default", "min_cut") or a callable with the same signature."""
    if callable(partitioner):
        return partitioner
    if partitioner not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {partitioner!r}; choose one of {sorted(PARTITIONERS)} "
                         "or pass a callable(joint_module, joint_inputs, *, num_fwd_outputs, ...)")
    return PARTITIONERS[partitioner]
