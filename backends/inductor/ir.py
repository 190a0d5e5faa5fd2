"""The loop-level IR of the inductor backend (compile time only).

A lowered graph is a set of *buffers* (named storage with a `Layout`: sizes, strides, offset, dtype)
and *loop bodies* that compute them:

- `Pointwise`: `inner_fn(ops, index) -> value`, a function of an output index;
- `Reduction`: `inner_fn(ops, index, rindex) -> value` reduced over `reduction_ranges`;
- `ExternKernel`: a call to an aten op the backend has no lowering for (matmul, conv, sort, ...).

Loop bodies are not code: they are Python closures that call an `ops` handler. Calling them with a
printer's handler writes Triton, C++ or Metal; calling them with `AccessRecorder` records what they
load, which is how the scheduler decides fusion.

Views (permute, slice, expand, reshape, ...) are index arithmetic: `ReinterpretView` when the base is
a realized buffer and the view is strided, otherwise a `Pointwise` that re-indexes its base.

Index expressions are sympy: iteration variables are non-negative integer symbols (`index_var`),
division and modulus are torch's `FloorDiv` and `ModularIndexing` (Python's floor semantics), and
`fold_index` merges the terms that unflattening merged dimensions produces, so equal positions are
equal expressions (fusion compares them) and each printer prints them in its own language. Sizes
and strides are ints or, for graphs traced with symbolic shapes, sympy expressions over the
ShapeEnv's size symbols (`s0`, `s1`, ...): a symbol is a kernel argument and a variable of the
wrapper, bound from the real inputs at call time. `sym(v)` turns a SymInt into that form; `texpr(e)`
prints an expression as Python (the wrapper). Size symbols are never 0 or 1 (the frontend
specializes those), so a symbolic size compares unequal to 1 structurally.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing
from torch.utils._sympy.printers import PythonPrinter

_PRINTER = PythonPrinter()


# --------------------------------------------------------------------------- symbolic sizes
def sym(v):
    """An int for a concrete size, a sympy expression for a symbolic one (SymInt/SymFloat/sympy)."""
    if isinstance(v, (torch.SymInt, torch.SymFloat)):
        v = v.node.expr
    if isinstance(v, sympy.Basic):
        if v.is_number:
            return int(v) if v.is_integer else float(v)
        return v
    return v


def is_symbolic(v) -> bool:
    return isinstance(v, sympy.Basic) and not v.is_number


def texpr(e) -> str:
    """Python source (the wrapper's) for an int or a sympy expression."""
    if isinstance(e, sympy.Basic):
        return _PRINTER.doprint(e)
    return str(e)


def free_symbols(*values) -> set:
    out = set()
    for v in _flatten(values):
        if isinstance(v, sympy.Basic):
            out |= v.free_symbols
    return out


# --------------------------------------------------------------------------- index expressions
@functools.lru_cache(maxsize=None)
def index_var(name: str) -> sympy.Symbol:
    """An iteration variable of a kernel (`xindex`, `rindex`, `x0`, ...) or an index loaded from memory
    (checked against its range first): a non-negative integer, which lets printers use their native
    division on it."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def as_index(e) -> sympy.Expr:
    if isinstance(e, str):
        return index_var(e)
    return sympy.sympify(e)


def index_floordiv(a, b) -> sympy.Expr:
    """`a // b` with Python's floor semantics."""
    return FloorDiv(as_index(a), as_index(b))


def index_mod(a, b) -> sympy.Expr:
    """`a % b` with Python's floor semantics (0 <= result < b for b > 0)."""
    return ModularIndexing(as_index(a), 1, as_index(b))


def _term(t):
    """A summand as (coef, base, div, mod): coef * ((base // div) % mod), mod None for no modulus;
    base None for a summand of another form."""
    coef, rest = [], None
    for f in sympy.Mul.make_args(t):
        if rest is None and isinstance(f, (FloorDiv, ModularIndexing)):
            rest = f
        else:
            coef.append(f)
    coef = sympy.Mul(*coef)
    if isinstance(rest, ModularIndexing):
        return coef, rest.args[0], rest.args[1], rest.args[2]
    if isinstance(rest, FloorDiv):
        return coef, rest.args[0], rest.args[1], None
    return t, None, None, None


def _join(coef, base, div, mod):
    if base is None:
        return coef
    return coef * (FloorDiv(base, div) if mod is None else ModularIndexing(base, div, mod))


def _same(a, b) -> bool:
    return a == b or sympy.expand(a - b) == 0


def fold_index(e) -> sympy.Expr:
    """Undo the unflattening of merged dimensions in a sum of index terms:
    c*((x // d) % m) + c*m*((x // (d*m)) % n) == c*((x // d) % (m*n)) for positive d, m, n (floor
    semantics; without `% n` on the left, none on the right), so a contiguous access over merged
    dimensions indexes with the loop variable itself (`64*(x // 64) + x % 64` is `x`)."""
    e = as_index(e)
    if not isinstance(e, sympy.Add):
        return e
    terms = [_term(t) for t in e.args]
    if sum(t[1] is not None for t in terms) < 2:
        return e
    merged, changed = True, False
    while merged:
        merged = False
        for i, (c1, b1, d1, m1) in enumerate(terms):
            if b1 is None or m1 is None or not m1.is_positive:
                continue
            for j, (c2, b2, d2, m2) in enumerate(terms):
                if j != i and b2 is not None and b2 == b1 and _same(d2, d1 * m1) and _same(c2, c1 * m1):
                    terms[i] = (c1, b1, d1, None if m2 is None else m1 * m2)
                    del terms[j]
                    merged = changed = True
                    break
            if merged:
                break
    return sympy.Add(*[_join(*t) for t in terms]) if changed else e


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def contiguous_strides(size):
    strides, acc = [], 1
    for s in reversed(size):
        strides.append(acc)
        acc = acc * (max(s, 1) if isinstance(s, int) else s)
    return tuple(reversed(strides))


def flatten_index(index, size):
    """Row-major flat position of `index` in a tensor of `size`."""
    return fold_index(sum((as_index(i) * st for i, st, s in zip(index, contiguous_strides(size), size) if s != 1),
                          sympy.S.Zero))


def _may_exceed_one(n) -> bool:
    return n > 1 if isinstance(n, int) else True


def unflatten_index(flat, size):
    """Inverse of `flatten_index`."""
    flat = as_index(flat)
    out, strides = [], contiguous_strides(size)
    for k, (s, st) in enumerate(zip(size, strides)):
        if s == 1:
            out.append(sympy.S.Zero)
        elif k > 0 and _may_exceed_one(prod(size[:k])):
            out.append(ModularIndexing(flat, st, s))
        else:
            out.append(FloorDiv(flat, st))
    return out


# --------------------------------------------------------------------------- tiles
def tile_splits(ranges, xnumel, rnumel) -> list[list[tuple[int, str]]]:
    """Ways to map the iteration space `ranges` of a pointwise node onto a kernel's tile of `xnumel`
    rows by `rnumel` reduced elements (`rnumel` 1: pointwise): lists of (dim, "x" | "r"), best first.
    Contiguous splits first (rows reduced along the last dims), then any subset of dims as the reduced
    part (e.g. the epilogue of a reduction over dim 0). Empty: the node does not fit the tile."""
    n = len(ranges)
    if prod(ranges) == xnumel:
        return [[(d, "x") for d in range(n)]]
    if rnumel == 1 or prod(ranges) != xnumel * rnumel:
        return []
    out = []
    for k in range(n + 1):
        if prod(ranges[:k]) == xnumel:
            out.append([(d, "x" if d < k else "r") for d in range(n)])
    if n <= 8:
        for mask in range(1 << n):
            rdims = [d for d in range(n) if mask >> d & 1]
            if prod(ranges[d] for d in rdims) != rnumel:
                continue
            cand = [(d, "r" if d in rdims else "x") for d in range(n)]
            if cand not in out:
                out.append(cand)
    return out


def tile_index(ranges, split) -> list:
    """Per-dimension index of `ranges` under `split` (see `tile_splits`): the "x" dims unflattened from
    `xindex`, the "r" dims from `rindex`, each in row-major order."""
    xd = [d for d, p in split if p == "x"]
    rd = [d for d, p in split if p == "r"]
    idx = [None] * len(ranges)
    for d, v in zip(xd, unflatten_index("xindex", [ranges[d] for d in xd])):
        idx[d] = v
    for d, v in zip(rd, unflatten_index("rindex", [ranges[d] for d in rd])):
        idx[d] = v
    return idx


# --------------------------------------------------------------------------- layouts and nodes
@dataclasses.dataclass
class Layout:
    size: tuple
    stride: tuple
    dtype: torch.dtype
    device: torch.device
    offset: int = 0

    def index(self, idx) -> sympy.Expr:
        assert len(idx) == len(self.size), (idx, self.size)
        terms = [as_index(i) * st for i, st, s in zip(idx, self.stride, self.size) if s != 1]
        return fold_index(sum(terms, as_index(self.offset)))

    def is_contiguous(self) -> bool:
        return all(s == 1 or st == cst for s, st, cst in zip(self.size, self.stride, contiguous_strides(self.size)))

    def numel(self):
        return prod(self.size)

    def __str__(self):
        off = f", offset={self.offset}" if self.offset else ""
        return f"{str(self.dtype).replace('torch.', '')}{list(self.size)} stride={list(self.stride)}{off}"


class IRNode:
    def get_size(self):
        raise NotImplementedError

    def get_dtype(self):
        raise NotImplementedError

    def get_device(self):
        raise NotImplementedError

    def numel(self):
        return prod(self.get_size())


class Loops(IRNode):
    def __init__(self, device, dtype, ranges, inner_fn):
        self.device, self.dtype, self.ranges, self.inner_fn = device, dtype, tuple(ranges), inner_fn

    def get_size(self):
        return self.ranges

    def get_dtype(self):
        return self.dtype

    def get_device(self):
        return self.device


class Pointwise(Loops):
    """out[index] = inner_fn(ops, index)"""

    def __repr__(self):
        return f"Pointwise({str(self.dtype).replace('torch.', '')}{list(self.ranges)})"


class Reduction(Loops):
    """out[index] = reduce_{rindex in reduction_ranges} inner_fn(ops, index, rindex)"""

    # identity used for padding lanes that fall outside the reduced range
    TYPES = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "var_unnormalized", "welford_mean", "mean")

    def __init__(self, device, dtype, ranges, reduction_ranges, reduction_type, inner_fn, src_dtype):
        super().__init__(device, dtype, ranges, inner_fn)
        assert reduction_type in self.TYPES, reduction_type
        self.reduction_ranges = tuple(reduction_ranges)
        self.reduction_type = reduction_type
        self.src_dtype = src_dtype

    def __repr__(self):
        return (f"Reduction({self.reduction_type}, {str(self.dtype).replace('torch.', '')}{list(self.ranges)}"
                f" over {list(self.reduction_ranges)})")


class LaidOut(IRNode):
    """A node whose size, stride, dtype and device are those of its `layout`."""

    def get_size(self):
        return self.layout.size

    def get_stride(self):
        return self.layout.stride

    def get_dtype(self):
        return self.layout.dtype

    def get_device(self):
        return self.layout.device


class Buffer(LaidOut):
    """Named storage with a fixed layout."""

    def __init__(self, name: str, layout: Layout | None):
        self.name, self.layout = name, layout


    def load(self, ops, idx):
        return ops.load(self.name, self.layout.index(idx), self.layout.dtype)

    def get_reads(self) -> list[str]:
        return []

    def __repr__(self):
        return f"{type(self).__name__}({self.name}: {self.layout})"


class InputBuffer(Buffer):
    """A graph input (a tensor argument of the compiled callable)."""


class ComputedBuffer(Buffer):
    """A buffer computed by a loop body (`Pointwise` or `Reduction`). With `mutates` set, the result is
    written into that (input) buffer instead of fresh storage."""

    def __init__(self, name, layout, data: Loops, mutates: str | None = None):
        super().__init__(name, layout)
        self.data = data
        self.mutates = mutates
        self.reads: list[str] = []

    def get_reads(self):
        return self.reads

    def is_reduction(self):
        return isinstance(self.data, Reduction)

    def __repr__(self):
        m = f" -> mutates {self.mutates}" if self.mutates else ""
        return f"ComputedBuffer({self.name}: {self.layout} = {self.data!r}{m}; reads {self.reads})"


def op_name(op) -> str:
    """`aten.addmm.default` for an aten op, the qualified name of a Python function."""
    qualname = getattr(op, "__qualname__", None)
    if isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or not isinstance(qualname, str):
        return str(op)
    return f"{getattr(op, '__module__', None) or ''}.{qualname}".lstrip(".")


class ExternKernel(Buffer):
    """A call to an aten op without a lowering. `args`/`kwargs` hold IR buffers/views where the op takes
    tensors; the wrapper passes real tensors. Multi-output ops have `layout=None` and one
    `MultiOutput` per tensor result."""

    def __init__(self, name, layout, op, args, kwargs):
        super().__init__(name, layout)
        self.op, self.args, self.kwargs = op, args, kwargs

    def get_reads(self):
        names = []
        for a in _flatten((self.args, self.kwargs)):
            if isinstance(a, (Buffer, ReinterpretView)):
                names.append(a.get_name())
        return names

    def __repr__(self):
        return f"ExternKernel({self.name}: {self.layout} = {self.op}; reads {self.get_reads()})"


class MultiOutput(Buffer):
    def __init__(self, name, layout, parent: ExternKernel, path: tuple):
        super().__init__(name, layout)
        self.parent, self.path = parent, path

    def get_reads(self):
        return [self.parent.name]


class ReinterpretView(LaidOut):
    """A strided view of a realized buffer: same storage, another layout."""

    def __init__(self, data: Buffer, layout: Layout):
        self.data, self.layout = data, layout

    def get_name(self):
        return self.data.name


    def load(self, ops, idx):
        return ops.load(self.data.name, self.layout.index(idx), self.layout.dtype)

    def __repr__(self):
        return f"ReinterpretView({self.data.name}: {self.layout})"


def _get_name(self):
    return self.name


Buffer.get_name = _get_name


def _flatten(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _flatten(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _flatten(y)
    else:
        yield x


class AccessRecorder:
    """An `ops` handler that records what a loop body loads, (buffer, index) per load in order. Values
    are keys of the expression that computed them, so the same computation gives the same key and an
    index loaded from memory (`indirect_indexing`) is the same symbol wherever the same load computes
    it; `indirect` (shared by the recorders of one analysis) maps those keys to their symbols."""

    class V:
        __slots__ = ("dtype", "key")
        rdep = False

        def __init__(self, key, dtype):
            self.key, self.dtype = key, dtype

        @property
        def name(self):
            return "v"

    def __init__(self, indirect: dict | None = None):
        self.loads: list[tuple[str, sympy.Expr]] = []
        self.indirect = {} if indirect is None else indirect

    @property
    def reads(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.loads))

    def load(self, name, index, dtype):
        index = as_index(index)
        self.loads.append((name, index))
        return self.V(("load", name, index), dtype)

    def constant(self, value, dtype):
        return self.V(("constant", value, dtype), dtype)

    def index_expr(self, expr, dtype):
        return self.V(("index", as_index(expr), dtype), dtype)

    def indirect_indexing(self, var, size, runtime_error=False):
        key = (var.key, as_index(size))
        if key not in self.indirect:
            self.indirect[key] = index_var(f"indirect{len(self.indirect)}")
        return self.indirect[key]

    def to_dtype(self, var, dtype):
        return self.V(("to", var.key, dtype), dtype)

    def call(self, name, *args):
        return self.V((name, *(a.key for a in args)), args[0].dtype if args else None)

    def masked(self, cond, body, other):
        v = body()
        return self.V(("masked", cond.key, v.key, other), v.dtype)


def loop_reads(data: Loops) -> list[str]:
    """Names of the buffers a loop body reads (running it once with an `AccessRecorder`)."""
    rec = AccessRecorder()
    idx = [index_var(f"i{k}") for k in range(len(data.ranges))]
    if isinstance(data, Reduction):
        data.inner_fn(rec, idx, [index_var(f"r{k}") for k in range(len(data.reduction_ranges))])
    else:
        data.inner_fn(rec, idx)
    return rec.reads


# arithmetic a few cycles per element: an affine normalization and an activation are made of these
CHEAP_OPS = frozenset({"add", "sub", "mul", "div", "truediv", "neg", "abs", "sqrt", "rsqrt", "reciprocal",
                       "relu", "maximum", "minimum", "where", "eq", "ne", "lt", "le", "gt", "ge"})


class _OpRecorder(AccessRecorder):
    """An `AccessRecorder` that also lists the ops a loop body calls."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def call(self, name, *args):
        self.ops.append(name)
        return super().call(name, *args)


def cheap_to_recompute(data, max_ops=12) -> bool:
    """Is `data` a pointwise body of a few cheap ops over plain loads (batch norm and ReLU over a
    convolution's result)? A consumer that reads it several times per element then recomputes it per
    read, which costs less than storing it and loading it back."""
    if not isinstance(data, Pointwise):
        return False
    rec = _OpRecorder()
    data.inner_fn(rec, [index_var(f"i{k}") for k in range(len(data.ranges))])
    return not rec.indirect and len(rec.ops) <= max_ops and set(rec.ops) <= CHEAP_OPS


# --------------------------------------------------------------------------- TensorBox
class TensorBox:
    """The lowering-time value of an fx node: a mutable handle whose `data` is a loop body (not yet
    stored anywhere), a buffer, or a view of a buffer. `realize()` turns a loop body into a buffer."""

    def __init__(self, graph, data):
        self.graph, self.data = graph, data

    def get_size(self):
        return tuple(self.data.get_size())

    def get_dtype(self):
        return self.data.get_dtype()

    def get_device(self):
        return self.data.get_device()

    def numel(self):
        return prod(self.get_size())

    def is_realized(self):
        return isinstance(self.data, (Buffer, ReinterpretView))

    def realize(self):
        if isinstance(self.data, Loops):
            self.data = self.graph.register_computed(self.data)
        return self.data

    def load(self, ops, idx):
        """Value at `idx`; dispatches on the current state so a later realize() is honored."""
        d = self.data
        if isinstance(d, Pointwise):
            return d.inner_fn(ops, list(idx))
        if isinstance(d, Reduction):
            return self.realize().load(ops, idx)
        return d.load(ops, idx)

    def strided_layout(self) -> tuple[Buffer, Layout] | None:
        """(base buffer, layout) if this value is a realized strided tensor."""
        d = self.data
        if isinstance(d, Buffer):
            return d, d.layout
        if isinstance(d, ReinterpretView):
            return d.data, d.layout
        return None

    def __repr__(self):
        return f"TensorBox({self.data!r})"


_counter = itertools.count()


def pointwise(graph, device, dtype, ranges, fn: Callable) -> TensorBox:
    return TensorBox(graph, Pointwise(device, dtype, ranges, fn))
