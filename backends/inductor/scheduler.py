"""The fusion scheduler (compile time only).

Input: the buffers of a `GraphLowering` in program order. Output: a list of `FusedGroup`s, each one
Triton kernel (or one extern call), in an order that respects every dependency.

- Dependencies are a networkx DiGraph over buffer names (reads recorded by running each loop body
  with `ReadRecorder`); an input mutation also depends on every earlier reader of that input.
- Dead buffers (no readers, not an output) are dropped: loop bodies, unread tuple elements of
  extern calls, and extern calls that only allocate.
- Greedy fusion in topological order: a node joins the first group placed after all of its
  producers whose tile fits (same numel; a reduction and its pointwise prologue/epilogue share an
  `xnumel x rnumel` tile) and where a trial render succeeds — i.e. every in-kernel read of a buffer
  written in the same kernel is at the index it was written (so it is a register, not memory).
- A buffer is stored only if something outside its group reads it, it is a graph output, or it is a
  mutated input.
"""
from __future__ import annotations

import dataclasses

import networkx as nx

from .codegen_triton import FusionIllegal, TritonKernel
from .ir import ComputedBuffer, ExternKernel, MultiOutput, Reduction, loop_reads, prod


def compute_reads(node: ComputedBuffer) -> list[str]:
    return loop_reads(node.data)


@dataclasses.dataclass
class FusedGroup:
    kind: str                      # "triton" or "extern"
    nodes: list
    xnumel: int = 1
    rnumel: int = 1
    reduction: bool = False

    def describe(self):
        tile = f"[{self.xnumel} x {self.rnumel}]" if self.reduction else f"[{self.xnumel}]"
        return f"{self.kind} {tile if self.kind == 'triton' else ''}: " + ", ".join(n.name for n in self.nodes)


def _tile_with(group: FusedGroup, node: ComputedBuffer):
    """The (xnumel, rnumel, reduction) tile of `group` after adding `node`, or None."""
    d = node.data
    if isinstance(d, Reduction):
        x, r = prod(d.ranges), prod(d.reduction_ranges)
        if group.reduction:
            return (x, r, True) if (group.xnumel, group.rnumel) == (x, r) else None
        # a pointwise group becomes the prologue of this reduction if all its nodes fit the new tile
        if group.xnumel not in (x, x * r):
            return None
        return x, r, True
    n = prod(d.ranges)
    if group.reduction:
        return (group.xnumel, group.rnumel, True) if n in (group.xnumel, group.xnumel * group.rnumel) else None
    return (n, 1, False) if n == group.xnumel else None


def trial_render(nodes, tile) -> bool:
    k = TritonKernel(tile[0], tile[1], tile[2])
    try:
        for n in nodes:
            k.render(n)
    except FusionIllegal:
        return False
    return True


# extern ops that only allocate (shapes were checked while tracing, so they cannot fail at run time):
# dropped when nothing reads them (batch norm's decomposition leaves unused statistics buffers)
_ALLOCATIONS = {"empty", "empty_strided", "empty_like", "full", "full_like", "zeros", "zeros_like", "ones",
                "ones_like", "scalar_tensor", "new_empty", "new_zeros", "new_ones", "new_full"}


def _removable(n) -> bool:
    if isinstance(n, ComputedBuffer):
        return n.mutates is None
    if isinstance(n, MultiOutput):
        return True
    if isinstance(n, ExternKernel):
        packet = getattr(n.op, "overloadpacket", None)
        return getattr(packet, "__name__", None) in _ALLOCATIONS and not n.op._schema.is_mutable
    return False


class Scheduler:
    def __init__(self, graph):
        self.graph = graph
        self.nodes = list(graph.buffers)
        for n in self.nodes:
            if isinstance(n, ComputedBuffer):
                n.reads = compute_reads(n)
        self.output_names = {o.get_name() for o in graph.outputs if hasattr(o, "get_name")}
        self.remove_dead()
        self.dag = self.build_graph()
        self.groups: list[FusedGroup] = []
        self.group_of: dict[str, int] = {}

    def remove_dead(self):
        alive = list(self.nodes)
        changed = True
        while changed:
            changed = False
            read = set(self.output_names)
            for n in alive:
                read.update(n.get_reads())
            keep = []
            for n in alive:
                if n.name not in read and _removable(n):
                    changed = True
                    continue
                keep.append(n)
            alive = keep
        self.nodes = alive

    def build_graph(self):
        dag = nx.DiGraph()
        producers = {}
        for i, n in enumerate(self.nodes):
            dag.add_node(n.name, order=i, node=n)
            producers[n.name] = n
        readers_of: dict[str, list[str]] = {}
        for n in self.nodes:
            for r in n.get_reads():
                if r in producers:
                    dag.add_edge(r, n.name)
                readers_of.setdefault(r, []).append(n.name)
            if isinstance(n, ComputedBuffer) and n.mutates:
                for reader in readers_of.get(n.mutates, []):
                    if reader != n.name:
                        dag.add_edge(reader, n.name)
        return dag

    def schedule(self) -> list[FusedGroup]:
        order = nx.lexicographical_topological_sort(self.dag, key=lambda name: self.dag.nodes[name]["order"])
        for name in order:
            node = self.dag.nodes[name]["node"]
            preds = [self.group_of[p] for p in self.dag.predecessors(name)]
            lo = max(preds, default=-1)
            if isinstance(node, (ExternKernel, MultiOutput)):
                self._new_group(FusedGroup("extern", [node]), node)
                continue
            placed = False
            for gi in range(max(lo, 0), len(self.groups)):
                group = self.groups[gi]
                if group.kind != "triton":
                    continue
                tile = _tile_with(group, node)
                if tile is None or not trial_render(group.nodes + [node], tile):
                    continue
                group.nodes.append(node)
                group.xnumel, group.rnumel, group.reduction = tile
                self.group_of[node.name] = gi
                placed = True
                break
            if not placed:
                d = node.data
                if isinstance(d, Reduction):
                    g = FusedGroup("triton", [node], prod(d.ranges), prod(d.reduction_ranges), True)
                else:
                    g = FusedGroup("triton", [node], prod(d.ranges), 1, False)
                self._new_group(g, node)
        return self.groups

    def _new_group(self, group, node):
        self.groups.append(group)
        self.group_of[node.name] = len(self.groups) - 1

    def store_names(self) -> set[str]:
        """Buffers that must be written to memory."""
        keep = set(self.output_names)
        for gi, g in enumerate(self.groups):
            for n in g.nodes:
                if isinstance(n, ComputedBuffer) and n.mutates:
                    keep.add(n.mutates)
                for r in n.get_reads():
                    if self.group_of.get(r) != gi:
                        keep.add(r)
        return keep
