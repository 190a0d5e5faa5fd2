"""Compiling under DistributedDataParallel: split each graph at DDP's gradient-bucket boundaries.

DDP all-reduces gradients bucket by bucket, from hooks the autograd engine fires as each parameter's
gradient becomes ready. A graph compiled through AOTAutograd runs its backward as one autograd node,
so every gradient of the graph would become ready at once, at the very end of its backward, and no
all-reduce could overlap the backward. `DDPGraphSplitter` wraps the user's backend: it walks the
captured graph backwards (the order gradients become ready), adds up the bytes of the DDP parameters
each node is the first forward user of, cuts when a bucket reaches DDP's cap (`bucket_cap_mb`; the
first bucket may be smaller, as DDP's is), and compiles each piece with the user's backend. The
pieces run one after another from an fx GraphModule; in backward, each piece is its own autograd
node, so a bucket's all-reduce starts as soon as the pieces after it (in forward order) are done.

When: `convert_frame` wraps the backend while DDP's forward is running its module
(`DistributedDataParallel._get_active_ddp_module()`), unless `config.optimize_ddp` is off. DDP's
forward itself, its reducer and hooks are torch's code and run eagerly (frontend/variables/
distributed.py). Graphs with symbolic sizes or nested graphs are compiled whole.

Compile time only; the returned GraphModule calls the compiled pieces.
"""
from __future__ import annotations

import dataclasses
import sys

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.fx.passes.split_module import split_module

from ..logs import log
from .registry import graph_runner


@dataclasses.dataclass
class Bucket:
    """One piece of a split graph: the DDP parameters whose gradients it produces."""
    params: list = dataclasses.field(default_factory=list)   # parameter names, as DDP's module names them
    nbytes: int = 0
    nodes: list = dataclasses.field(default_factory=list)    # fx nodes, in reverse graph order


@dataclasses.dataclass
class GraphSplit:
    """What the splitter did with one graph: its buckets in forward order, and why it did not split."""
    buckets: list
    not_split: str = ""

    def describe(self) -> str:
        if self.not_split:
            return f"not split: {self.not_split}"
        rows = [f"piece {i}: {b.nbytes} bytes, {len(b.nodes)} nodes, params {', '.join(b.params) or '-'}"
                for i, b in enumerate(self.buckets)]
        return f"{len(self.buckets)} pieces\n" + "\n".join(rows)


def active_ddp_module():
    """The DistributedDataParallel whose forward is running its module now, if any."""
    ddp = sys.modules.get("torch.nn.parallel.distributed")   # never imported just to ask
    return ddp.DistributedDataParallel._get_active_ddp_module() if ddp is not None else None


class DDPGraphSplitter:
    """A backend: `DDPGraphSplitter(backend, ddp)(gm, example_inputs)` compiles `gm` in pieces, one
    per gradient bucket of `ddp`, each with `backend`. `splits` records every graph it was given."""

    def __init__(self, backend, ddp):
        self.backend = backend
        self.specialize_float = getattr(backend, "specialize_float", False)
        self.eager_autograd = getattr(backend, "eager_autograd", False)
        self.bucket_bytes_cap = ddp.bucket_bytes_cap
        first = getattr(getattr(ddp, "_bucket_config", None), "first_bucket_bytes_cap", None)
        self.first_bucket_bytes_cap = min(first or self.bucket_bytes_cap, self.bucket_bytes_cap)
        ignored = getattr(ddp, "parameters_to_ignore", set())
        # the parameters DDP all-reduces, by identity; names for the record
        self.param_names = {id(p): name for name, p in ddp.module.named_parameters()
                            if p.requires_grad and name not in ignored and not getattr(p, "_ddp_ignored", False)}
        self.splits: list[GraphSplit] = []

    def __call__(self, gm, example_inputs):
        why = _cannot_split(gm, example_inputs)
        buckets = [] if why else self._buckets(gm, example_inputs)
        if not why and len(buckets) < 2:
            why = "one bucket"
        if not why:
            split_gm = split_module(
                gm, None, _partition_of(buckets).__getitem__, keep_original_order=True, tuple_return=True)
            pieces = [n.target for n in split_gm.graph.nodes if n.op == "call_module"]
            if pieces != [f"submod_{i}" for i in range(len(buckets))]:
                # split_module orders pieces by data dependence; effects must keep graph order
                why = f"the pieces would run in another order ({', '.join(pieces)})"
        self.splits.append(GraphSplit(buckets, why))
        log("ddp", f"DDP graph split: {self.splits[-1].describe()}")
        if why:
            return self.backend(gm, example_inputs)
        _compile_pieces(split_gm, gm, example_inputs, self.backend)
        return split_gm.forward

    def _buckets(self, gm, example_inputs) -> list[Bucket]:
        placeholders = gm.graph.find_nodes(op="placeholder")
        params = {node: self.param_names[id(value)] for node, value in zip(placeholders, example_inputs)
                  if isinstance(value, torch.nn.Parameter) and id(value) in self.param_names}
        sizes = {node: value.untyped_storage().nbytes() for node, value in zip(placeholders, example_inputs)
                 if node in params}
        # a gradient is ready once the backward of the parameter's first forward user is done
        first_user: dict = {}
        for node in gm.graph.nodes:
            for arg in node.all_input_nodes:
                if arg in params:
                    first_user.setdefault(arg, node)
        params_used_first_by: dict = {}
        for param, user in first_user.items():
            params_used_first_by.setdefault(user, []).append(param)

        buckets = [Bucket()]
        for node in reversed(gm.graph.nodes):
            if node.op in ("placeholder", "output"):
                continue
            current = buckets[0]
            cap = self.first_bucket_bytes_cap if len(buckets) == 1 else self.bucket_bytes_cap
            # a piece must hand something on: cut only once the bucket has a value used after it
            if current.nbytes >= cap and _has_outside_user(current):
                current = Bucket()
                buckets.insert(0, current)
            for param in params_used_first_by.get(node, ()):
                current.params.append(params[param])
                current.nbytes += sizes[param]
            current.nodes.append(node)
        if len(buckets) > 1 and not buckets[0].params:
            # the forward's first nodes use no parameter: they join the next piece
            buckets[1].nodes.extend(buckets.pop(0).nodes)
        return buckets


def _has_outside_user(bucket: Bucket) -> bool:
    inside = set(bucket.nodes)
    return any(user not in inside for node in bucket.nodes for user in node.users)


def _partition_of(buckets) -> dict:
    return {node: index for index, bucket in enumerate(buckets) for node in bucket.nodes}


def _cannot_split(gm, example_inputs) -> str:
    """Why `gm` is compiled whole ("" when it can be split)."""
    if any(n.op == "get_attr" and isinstance(getattr(gm, n.target, None), torch.fx.GraphModule)
           for n in gm.graph.nodes):
        return "the graph calls nested graphs"
    values = [*example_inputs, *(n.meta.get("example_value") for n in gm.graph.nodes)]
    if any(_is_symbolic(v) for v in pytree.tree_leaves(values)):
        return "symbolic sizes"
    return ""


def _is_symbolic(value) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    return isinstance(value, torch.Tensor) and any(not isinstance(s, int) for s in (*value.shape, *value.stride()))


def _stand_in(value):
    """A real tensor with an intermediate value's metadata (backends read only metadata; nothing
    runs at compile time)."""
    if not isinstance(value, torch.Tensor):
        return value
    out = torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device=value.device)
    return out.requires_grad_(value.requires_grad)


def _compile_pieces(split_gm, gm, example_inputs, backend) -> None:
    """Replace each piece of `split_gm` by the backend's compilation of it. A piece's example
    inputs are the frame's real inputs where it takes a graph input, else stand-ins made from the
    frontend's fake value of the intermediate it takes."""
    real = {node.name: value for node, value in zip(gm.graph.find_nodes(op="placeholder"), example_inputs)}
    fakes = {node.name: node.meta.get("example_value") for node in gm.graph.nodes}
    for node in list(split_gm.graph.nodes):
        if node.op != "call_module":
            continue
        piece = getattr(split_gm, node.target)
        inputs = [real[p.target] if p.target in real else pytree.tree_map(_stand_in, fakes[p.target])
                  for p in piece.graph.find_nodes(op="placeholder")]
        compiled = graph_runner(backend, backend(piece, inputs), piece, inputs)
        setattr(split_gm, node.target, _CompiledPiece(compiled))


class _CompiledPiece(torch.nn.Module):
    def __init__(self, compiled):
        super().__init__()
        self.compiled = compiled

    def forward(self, *args):
        return self.compiled(*args)
