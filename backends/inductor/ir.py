"""The loop-level IR of the inductor backend (compile time only).

A lowered graph is a set of *buffers* (named storage with a `Layout`: sizes, strides, offset, dtype)
and *loop bodies* that compute them:

- `Pointwise`: `inner_fn(ops, index) -> value`, a function of an output index;
- `Reduction`: `inner_fn(ops, index, rindex) -> value` reduced over `reduction_ranges`;
- `ExternKernel`: a call to an aten op the backend has no lowering for (matmul, conv, sort, ...).

Loop bodies are not code: they are Python closures that call an `ops` handler (see
`codegen_triton.TritonOps`). Calling them with a code-generating handler writes Triton; calling them
with another handler could write anything else (the Metal backend reuses this IR that way).

Views (permute, slice, expand, reshape, ...) are index arithmetic: `ReinterpretView` when the base is
a realized buffer and the view is strided, otherwise a `Pointwise` that re-indexes its base.

Index expressions are Python ints (constants) or strings (Triton expressions); `ix_*` helpers fold
the trivial cases so the generated code stays readable. Sizes and strides are ints or, for graphs
traced with symbolic shapes, sympy expressions over the ShapeEnv's size symbols (`s0`, `s1`, ...):
a symbol is a kernel argument and a variable of the wrapper, bound from the real inputs at call
time. `sym(v)` turns a SymInt into that form; `texpr(e)` prints an expression as Python/Triton.
Size symbols are never 0 or 1 (the frontend specializes those), so a symbolic size compares
unequal to 1 structurally, which is all the folding here needs.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable

import sympy
import torch
from torch.utils._sympy.printers import PythonPrinter

_ATOM = re.compile(r"^[\w.]+$")
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
    """Python/Triton source for an int, an index string or a sympy expression."""
    if isinstance(e, sympy.Basic):
        return _PRINTER.doprint(e)
    return str(e)


def free_symbols(*values) -> set:
    out = set()
    for v in _flatten(values):
        if isinstance(v, sympy.Basic):
            out |= v.free_symbols
    return out


# --------------------------------------------------------------------------- index arithmetic
def _p(e) -> str:
    """Parenthesize `e` unless it is atomic."""
    s = texpr(e)
    return s if _ATOM.match(s) else f"({s})"


def ix_add(*terms):
    const = 0
    parts = []
    for t in terms:
        if isinstance(t, int):
            const += t
        else:
            parts.append(texpr(t))
    if const:
        parts.append(str(const))
    if not parts:
        return 0
    return " + ".join(parts) if len(parts) > 1 else parts[0]


def ix_mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return f"{_p(a)}*{_p(b)}"


_DIV = re.compile(r"^(\w+) // (\d+)$")                 # base // d
_MOD = re.compile(r"^(\w+) % (\d+)$")                  # base % m
_DIVMOD = re.compile(r"^\((\w+) // (\d+)\) % (\d+)$")  # (base // d) % m


def _parse(a):
    """(base, d, m) for the forms above (m None: no modulus), else None."""
    s = str(a)
    if _ATOM.match(s) and not s.isdigit():
        return s, 1, None
    for rx, f in ((_DIV, lambda g: (g[0], int(g[1]), None)), (_MOD, lambda g: (g[0], 1, int(g[1]))),
                  (_DIVMOD, lambda g: (g[0], int(g[1]), int(g[2])))):
        mt = rx.match(s)
        if mt:
            return f(mt.groups())
    return None


def _unparse(base, d, m):
    e = base if d == 1 else f"{base} // {d}"
    return e if m is None else f"{_p(e)} % {m}"


def ix_floordiv(a, b):
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    p = _parse(a) if isinstance(b, int) else None
    if p is not None:
        base, d, m = p
        if m is None:
            return _unparse(base, d * b, None)   # (x // d) // b == x // (d*b)
        if m % b == 0:
            return _unparse(base, d * b, m // b)  # ((x // d) % m) // b == (x // (d*b)) % (m/b)
    return f"{_p(a)} // {_p(b)}"


def ix_mod(a, b):
    if b == 1:
        return 0
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    p = _parse(a) if isinstance(b, int) else None
    if p is not None:
        base, d, m = p
        if m is not None and m % b == 0:
            return _unparse(base, d, b)           # ((x // d) % m) % b == (x // d) % b  when b | m
    return f"{_p(a)} % {_p(b)}"


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
    return ix_add(*[ix_mul(i, st) for i, st, s in zip(index, contiguous_strides(size), size) if s != 1])


def _may_exceed_one(n) -> bool:
    return n > 1 if isinstance(n, int) else True


def unflatten_index(flat, size):
    """Inverse of `flatten_index`."""
    out, strides = [], contiguous_strides(size)
    for k, (s, st) in enumerate(zip(size, strides)):
        if s == 1:
            out.append(0)
            continue
        v = ix_floordiv(flat, st)
        if k > 0 and _may_exceed_one(prod(size[:k])):
            v = ix_mod(v, s)
        out.append(v)
    return out


# --------------------------------------------------------------------------- layouts and nodes
@dataclasses.dataclass
class Layout:
    size: tuple
    stride: tuple
    dtype: torch.dtype
    device: torch.device
    offset: int = 0

    def index(self, idx) -> int | str:
        assert len(idx) == len(self.size), (idx, self.size)
        return ix_add(self.offset, *[ix_mul(i, st) for i, st, s in zip(idx, self.stride, self.size) if s != 1])

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


class ReadRecorder:
    """An `ops` handler that only records which buffers a loop body loads."""

    class V:
        dtype = None
        rdep = False
        name = "v"

        def __init__(self, dtype=None):
            self.dtype = dtype

    def __init__(self):
        self.reads: list[str] = []

    def load(self, name, index, dtype):
        if name not in self.reads:
            self.reads.append(name)
        return self.V(dtype)

    def constant(self, value, dtype):
        return self.V(dtype)

    def index_expr(self, expr, dtype):
        return self.V(dtype)

    def indirect_indexing(self, var, size):
        return "i"

    def to_dtype(self, var, dtype):
        return self.V(dtype)

    def call(self, name, *args):
        return self.V(args[0].dtype if args else None)

    def masked(self, cond, body, other):
        return body()


def loop_reads(data: Loops) -> list[str]:
    """Names of the buffers a loop body reads (running it once with a `ReadRecorder`)."""
    rec = ReadRecorder()
    idx = [f"i{k}" for k in range(len(data.ranges))]
    if isinstance(data, Reduction):
        data.inner_fn(rec, idx, [f"r{k}" for k in range(len(data.reduction_ranges))])
    else:
        data.inner_fn(rec, idx)
    return rec.reads


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
