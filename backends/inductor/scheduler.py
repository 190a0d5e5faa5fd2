"""The fusion scheduler (compile time only).

Input: the buffers of a `GraphLowering` in program order. Output: a list of `FusedGroup`s, each one
kernel (or one extern call), in an order that respects every dependency. The decisions are made from
the IR alone (what each loop body loads, at which index, and where it stores); no code generator is
involved, and every printer renders the same groups.

- Dependencies are a networkx DiGraph over buffer names (reads recorded by running each loop body
  with `AccessRecorder`); an input mutation also depends on every earlier reader of that input.
- Dead buffers (no readers, not an output) are dropped: loop bodies, unread tuple elements of
  extern calls, and extern calls that only allocate.
- Fusion, in topological order: a node may join a group placed after all of its producers whose tile
  fits (same numel; a reduction and its pointwise prologue/epilogue share an `xnumel x rnumel` tile)
  and where it is legal (`_Access.add`): every in-kernel read of a buffer written in the same kernel
  is at the index it was written (a register, not memory), and a mutated input is read only at the
  index it is written. Indices are compared as sympy expressions over the tile's variables. Among the
  groups it may join, the node joins the one that saves the most memory traffic (bytes it would
  otherwise load: buffers the group writes, or inputs the group already loads); on a tie, the earliest.
  A node that saves nothing joins only the latest group: joining an earlier one would compute it
  early and keep its buffer alive across everything in between (memory the allocator then takes
  from the OS, page by page, on every call).
- A buffer is stored only if something outside its group reads it, it is a graph output, or it is a
  mutated input.
"""
from __future__ import annotations

import dataclasses

import sympy

from .ir import (
    AccessRecorder,
    ComputedBuffer,
    ExternKernel,
    MultiOutput,
    Reduction,
    loop_reads,
    prod,
    tile_index,
    tile_splits,
    unflatten_index,
)


def compute_reads(node: ComputedBuffer) -> list[str]:
    return loop_reads(node.data)


@dataclasses.dataclass
class FusedGroup:
    kind: str                      # "kernel" or "extern"
    nodes: list
    xnumel: int = 1
    rnumel: int = 1
    reduction: bool = False
    # pointwise nodes of a reduction kernel: how each one's dims map onto the tile (`ir.tile_splits`)
    splits: dict = dataclasses.field(default_factory=dict)

    def describe(self):
        tile = f"[{self.xnumel} x {self.rnumel}]" if self.reduction else f"[{self.xnumel}]"
        return f"{self.kind} {tile if self.kind == 'kernel' else ''}: " + ", ".join(n.name for n in self.nodes)


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


class _Access:
    """What the nodes of one candidate group load and store, over the tile's index variables; `add`
    answers whether a node may join (see the module docstring)."""

    def __init__(self, tile, sched: Scheduler):
        self.xnumel, self.rnumel, self.reduction = tile
        self.sched = sched                    # its `record` and `nbytes`
        self.stored: dict[str, set] = {}      # buffer -> indices written in the group
        self.loaded: dict[str, set] = {}      # buffer -> indices read from memory
        self.splits: dict[str, list] = {}

    def add(self, node):
        """Bytes of memory traffic `node` saves by joining (see `_try`), or None if it may not."""
        d = node.data
        if isinstance(d, Reduction):
            if not self.reduction or (prod(d.ranges), prod(d.reduction_ranges)) != (self.xnumel, self.rnumel):
                return None
            return self._try(node, None)
        for split in tile_splits(d.ranges, self.xnumel, self.rnumel if self.reduction else 1):
            saved = self._try(node, split)
            if saved is not None:
                if self.reduction:
                    self.splits[node.name] = split
                return saved
        return None

    def _try(self, node, split):
        loads, store_at = self.sched.record(node, split)
        loaded = {}
        for name, index in loads:
            if name in self.stored:
                if index not in self.stored[name]:
                    return None  # written in this kernel at another index: not in a register
            else:
                loaded.setdefault(name, set()).add(index)
        target = node.mutates or node.name
        if node.mutates and any(i != store_at for i in self.loaded.get(target, set()) | loaded.get(target, set())):
            return None  # an input mutated at one index and read at another
        # traffic saved: each buffer read that this group writes (a register) or already reads
        shared = {name for name, _ in loads if name in self.stored or name in self.loaded}
        saved = sum(self.sched.nbytes(name) for name in shared)
        for name, idx in loaded.items():
            self.loaded.setdefault(name, set()).update(idx)
        self.stored.setdefault(target, set()).add(store_at)
        return saved

    def copy(self):
        new = _Access((self.xnumel, self.rnumel, self.reduction), self.sched)
        new.stored = {k: set(v) for k, v in self.stored.items()}
        new.loaded = {k: set(v) for k, v in self.loaded.items()}
        new.splits = dict(self.splits)
        return new


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


def _mutates(n) -> bool:
    """Whether `n` writes a tensor the program can see (an input mutated in place)."""
    if isinstance(n, ComputedBuffer):
        return n.mutates is not None
    return isinstance(n, ExternKernel) and getattr(getattr(n.op, "_schema", None), "is_mutable", False)


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
        self.access: list[_Access | None] = []   # per group: what its nodes load and store
        self.group_of: dict[str, int] = {}
        self.recordings: dict = {}   # (node name, split) -> (loads, store index), see `record`
        self.indirect: dict = {}     # indices loaded from memory -> their symbols (`AccessRecorder`)
        self.buffers = {b.get_name(): b for b in [*graph.buffers, *graph.inputs, *(c for c, _ in graph.constants)]
                        if b is not None}

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
        import networkx as nx   # imported where used: every full gc walks its objects
        dag = nx.DiGraph()
        producers = {}
        for i, n in enumerate(self.nodes):
            dag.add_node(n.name, order=i, node=n)
            producers[n.name] = n
        readers_of: dict[str, list[str]] = {}
        externs: list[str] = []
        for n in self.nodes:
            if _mutates(n):
                # an extern call may raise on the values it gets (a singular matrix, an index out of
                # range): a write to the program's tensors placed after one must not happen before it
                for e in externs:
                    dag.add_edge(e, n.name)
            if isinstance(n, ExternKernel):
                externs.append(n.name)
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
        import networkx as nx   # imported where used: every full gc walks its objects
        order = nx.lexicographical_topological_sort(self.dag, key=lambda name: self.dag.nodes[name]["order"])
        for name in order:
            node = self.dag.nodes[name]["node"]
            preds = [self.group_of[p] for p in self.dag.predecessors(name)]
            lo = max(preds, default=-1)
            if isinstance(node, (ExternKernel, MultiOutput)):
                self._new_group(FusedGroup("extern", [node]), node, None)
                continue
            best = None  # (bytes saved, group index, access state with the node)
            for gi in range(max(lo, 0), len(self.groups)):
                group = self.groups[gi]
                tile = _tile_with(group, node) if group.kind == "kernel" else None
                if tile is None:
                    continue
                access = self._access_with(gi, tile)
                saved = access.add(node) if access is not None else None
                if saved == 0 and gi != len(self.groups) - 1:
                    continue  # sharing nothing, it joins only the latest group: never computed early
                if saved is not None and (best is None or saved > best[0]):
                    best = (saved, gi, access)
            if best is not None:
                _, gi, access = best
                group = self.groups[gi]
                group.nodes.append(node)
                group.xnumel, group.rnumel, group.reduction = access.xnumel, access.rnumel, access.reduction
                group.splits = access.splits
                self.access[gi] = access
                self.group_of[node.name] = gi
                continue
            d = node.data
            if isinstance(d, Reduction):
                g = FusedGroup("kernel", [node], prod(d.ranges), prod(d.reduction_ranges), True)
            else:
                g = FusedGroup("kernel", [node], prod(d.ranges), 1, False)
            access = _Access((g.xnumel, g.rnumel, g.reduction), self)
            if access.add(node) is None:
                access = None  # not even legal alone: the printers decide, and nothing joins it
            g.splits = access.splits if access is not None else {}
            self._new_group(g, node, access)
        return self.groups

    def _access_with(self, gi, tile):
        """The access state of group `gi` under `tile` (a copy), or None if its nodes do not all fit."""
        access = self.access[gi]
        if access is None:
            return None
        if (access.xnumel, access.rnumel, access.reduction) == tile:
            return access.copy()
        access = _Access(tile, self)
        if all(access.add(n) is not None for n in self.groups[gi].nodes):
            return access
        return None

    def record(self, node, split):
        """(loads, store index) of `node` over a tile's variables: `split` maps a pointwise node onto
        the tile (`ir.tile_splits`); None for a reduction, whose rows are the tile's rows."""
        key = (node.name, tuple(split) if split is not None else None)
        if key not in self.recordings:
            d = node.data
            rec = AccessRecorder(self.indirect)
            if split is None:
                idx = unflatten_index("xindex", list(d.ranges))
                d.inner_fn(rec, idx, unflatten_index("rindex", list(d.reduction_ranges)))
            else:
                idx = tile_index(d.ranges, split)
                d.inner_fn(rec, idx)
            self.recordings[key] = (rec.loads, node.layout.index(idx))
        return self.recordings[key]

    def nbytes(self, name) -> int:
        """Size of buffer `name` in bytes (symbolic sizes at a nominal 64 per symbol)."""
        buf = self.buffers.get(name)
        layout = getattr(buf, "layout", None)
        if layout is None:
            return 0
        n = prod(layout.size)
        if isinstance(n, sympy.Expr):
            n = sympy.sympify(n.xreplace({s: 64 for s in n.free_symbols}))
            n = int(n) if n.is_number else 0
        return n * layout.dtype.itemsize

    def _new_group(self, group, node, access):
        self.groups.append(group)
        self.access.append(access)
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
