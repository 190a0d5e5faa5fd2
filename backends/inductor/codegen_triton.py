"""Triton code generation for fused groups, and the Python wrapper that launches them (compile time).

One `TritonKernel` renders one fused group of IR nodes into one `@triton.jit` function. A kernel
iterates a tile of `xnumel` outputs (1-D, pointwise) or `xnumel x rnumel` (2-D reduction: persistent,
a whole reduced row in one `[XBLOCK, RBLOCK]` tile, or, for static rows longer than LOOP_THRESHOLD,
looped over RBLOCK-wide chunks with accumulators; see `TritonKernel.looped`). var/var_mean use a
Welford reduction (`_welford_combine` over (mean, m2, weight)). Loop bodies are called with a
`TritonOps` handler; every value becomes a named temporary (common subexpressions are shared), loads
and stores are masked, and a load of a buffer stored earlier in the same kernel at the same index
reuses the stored value (the scheduler only fuses when that holds).

`WrapperCodegen` writes the module: kernels, then `call(args, externs)` that allocates buffers
(reusing dead ones), launches kernels, calls extern aten ops and returns the outputs.

Symbolic shapes: sizes are sympy expressions over size symbols. The wrapper binds each symbol from
the real arguments (`s0 = arg0.size(0)`), allocates with expressions of them, and computes each
launch's `xnumel`/`rnumel`, block sizes and grid at call time; a kernel takes the symbols its
index arithmetic uses as extra (non-constexpr) arguments. One generated module serves every size.
"""
from __future__ import annotations

import math
import re

import torch

import sympy
from sympy.printing.precedence import PRECEDENCE
from torch.utils._sympy.printers import PythonPrinter

from .kernel_errors import index_error_code
from .ir import (
    Buffer,
    ComputedBuffer,
    ExternKernel,
    InputBuffer,
    MultiOutput,
    Reduction,
    ReinterpretView,
    index_var,
    is_symbolic,
    op_name,
    prod,
    texpr,
    tile_index,
    tile_splits,
    unflatten_index,
)

TRITON_DTYPES = {
    torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64", torch.int8: "tl.int8", torch.int16: "tl.int16", torch.int32: "tl.int32",
    torch.int64: "tl.int64", torch.uint8: "tl.uint8", torch.bool: "tl.int1",
}

_BOOL_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
             "isnan", "isinf"}

# accurate transcendental functions are `_name` helpers (see MATH_HELPERS): the naive
# formulas (`exp(x) - 1`, `log(1 + x)`, ...) lose every digit for small |x|


def _f(dt):
    return dt.is_floating_point


def _by_kind(float_t, int_t, bool_t=None):
    def pick(dtypes):
        dt = dtypes[0]
        if dt == torch.bool and bool_t is not None:
            return bool_t
        return float_t if _f(dt) else int_t
    return pick


TEMPLATES = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}", "neg": "-{0}",
    "abs": _by_kind("tl.abs({0})", "tl.abs({0})", "{0}"),
    "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "expm1": "_expm1({0})",
    "log": "tl.log({0})", "log2": "tl.log2({0})", "log10": "(tl.log({0}) * 0.4342944819032518)",
    "log1p": "_log1p({0})", "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})",
    "reciprocal": "(1.0 / {0})", "sin": "tl.sin({0})", "cos": "tl.cos({0})", "tan": "(tl.sin({0}) / tl.cos({0}))",
    "tanh": "_tanh({0})", "sinh": "_sinh({0})", "cosh": "_cosh({0})",
    "sigmoid": "(1.0 / (1.0 + tl.exp(-{0})))", "erf": "tl.erf({0})",
    "floor": _by_kind("tl.floor({0})", "{0}"), "ceil": _by_kind("tl.ceil({0})", "{0}"),
    "trunc": _by_kind("tl.where({0} < 0, tl.ceil({0}), tl.floor({0}))", "{0}"),
    "round": _by_kind("tl.where(({0} - tl.floor({0})) == 0.5, 2.0 * tl.floor(({0} + 0.5) * 0.5), "
                      "tl.floor({0} + 0.5))", "{0}"),
    "sign": _by_kind("(({0} > 0).to({T}) - ({0} < 0).to({T}))", "(({0} > 0).to({T}) - ({0} < 0).to({T}))", "{0}"),
    "relu": _by_kind("tl.where({0} < 0, 0.0, {0})", "tl.where({0} < 0, 0, {0})", "{0}"),
    "bitwise_not": _by_kind("~{0}", "~{0}", "({0} == 0)"),
    "bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}", "bitwise_xor": "{0} ^ {1}",
    "fmod": "{0} % {1}",
    "remainder": _by_kind("({0} - {1} * tl.floor({0} / {1}))",
                          "tl.where((({0} % {1}) != 0) & ((({0} % {1}) < 0) != ({1} < 0)), ({0} % {1}) + {1}, "
                          "{0} % {1})"),
    "floor_divide": _by_kind("tl.floor({0} / {1})",
                             "tl.where((({0} % {1}) != 0) & (({0} < 0) != ({1} < 0)), {0} // {1} - 1, {0} // {1})"),
    "int_truncdiv": "{0} // {1}",
    "maximum": _by_kind("tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})", "tl.maximum({0}, {1})", "{0} | {1}"),
    "minimum": _by_kind("tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})", "tl.minimum({0}, {1})", "{0} & {1}"),
    "where": "tl.where({0}, {1}, {2})",
    "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}",
    "ge": "{0} >= {1}",
    "logical_and": "({0} != 0) & ({1} != 0)", "logical_or": "({0} != 0) | ({1} != 0)",
    "logical_xor": "({0} != 0) ^ ({1} != 0)", "logical_not": "{0} == 0",
    "isnan": "{0} != {0}", "isinf": _by_kind("tl.abs({0}) == float('inf')", "{0} != {0}"),
    "gelu": "(0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476)))",
    "gelu_tanh": "(0.5 * {0} * (1.0 + _tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0}))))",
    # float32 (and half, computed in float32) in float64: exp2(y * log2(x)) loses |y * log2(x)| ulps
    "pow_float": lambda dtypes: "_pow({0}, {1})" if dtypes[0] == torch.float64 else (
        f"_pow({{0}}.to(tl.float64), {{1}}.to(tl.float64)).to({TRITON_DTYPES[dtypes[0]]})"),
}


class FusionIllegal(Exception):
    """A printer finds that these nodes cannot share one kernel (the scheduler decides fusion from the IR;
    this is the printers' defensive check)."""


class CSEVar:
    __slots__ = ("dtype", "name", "rdep")

    def __init__(self, name, dtype, rdep):
        self.name, self.dtype, self.rdep = name, dtype, rdep

    def __str__(self):
        return self.name

    __repr__ = __str__


def _const(value, dtype):
    if isinstance(value, bool) or dtype == torch.bool:
        return "1" if value else "0"
    if _f(dtype):
        v = float(value)
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    return str(int(value))


class TritonIndexPrinter(PythonPrinter):
    """Index expressions as Triton source: Python's operators, with `&`/`|` on (tensor) conditions.
    Triton's `//` and `%` truncate like C on a GPU (the interpreter floors like Python): the IR only
    divides indices that are non-negative where they are used (masked lanes may differ: never read)."""

    def _print_Add(self, expr, order=None):
        out = ""
        for t in sorted(expr.args, key=lambda a: a.is_number):  # constants last: `x + 1`
            neg = t.could_extract_minus_sign()
            term = self.parenthesize(-t if neg else t, PRECEDENCE["Add"])
            out = (f"{out} - {term}" if neg else f"{out} + {term}") if out else (f"-{term}" if neg else term)
        return out

    def _print_ModularIndexing(self, expr):
        x, div, mod = (self.parenthesize(a, PRECEDENCE["Atom"] - 0.5) for a in expr.args)
        return f"{x} % {mod}" if div == "1" else f"({x} // {div}) % {mod}"

    def _print_And(self, expr):
        return " & ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Or(self, expr):
        return " | ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Not(self, expr):
        return f"~({self._print(expr.args[0])})"

    def _print_BooleanTrue(self, expr):
        return "1"

    def _print_BooleanFalse(self, expr):
        return "0"


_INDEX_PRINTER = TritonIndexPrinter()


def iexpr(e) -> str:
    """Triton source of an index expression."""
    return _INDEX_PRINTER.doprint(sympy.sympify(e))


def _paren(e):
    s = iexpr(e)
    return s if re.match(r"^[\w.]+$", s) else f"({s})"


def next_pow2(n):
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


# rows longer than this (static sizes only) are reduced in a loop over RBLOCK-wide chunks
LOOP_THRESHOLD = 1024
LOOP_RBLOCK = 1024


def is_looped(rnumel, reduction) -> bool:
    return bool(reduction) and not is_symbolic(rnumel) and rnumel > LOOP_THRESHOLD


class _NewPhase(Exception):
    """A looped kernel's r-dependent line reads a reduction result of the current loop."""


class TritonKernel:
    """Renders one fused group. `xnumel`/`rnumel` fix the tile; `rnumel == 1` means pointwise."""

    def __init__(self, xnumel, rnumel, reduction: bool, store_names=None, symbols=()):
        self.xnumel, self.rnumel, self.reduction = xnumel, rnumel, reduction
        # looped reduction: the body runs as phases, each `pre` lines (x only), a loop over RBLOCK
        # chunks of the row (r-dependent lines, accumulator updates) and `post` lines (final
        # tl.reduce of the accumulators and whatever reads them). An r-dependent line that reads a
        # result of the current phase ("tainted") re-renders its node in a new phase (a new loop).
        self.looped = is_looped(rnumel, reduction)
        self.phase = 0
        self.tainted: set = set()
        self.red_cache: dict = {}
        self.nacc = 0
        self.recompute: dict = {}  # (name, index) -> (Pointwise, idx, dtype) rendered in this kernel
        self.symbols = set(symbols)     # names of size symbols: kernel arguments where used
        self.store_names = store_names  # None: store everything
        self.lines: list[tuple] = []   # ((phase, 0 pre | 1 loop | 2 post), source line)
        self.cse: dict[str, CSEVar] = {}
        self.rdep_names = {"rindex", "rmask"}
        self.in_args: dict[str, str] = {}
        self.out_args: dict[str, str] = {}
        self.store_cache: dict[tuple, CSEVar] = {}
        self.stored: dict[str, set] = {}
        self.loaded: dict[str, set] = {}
        self.mask_stack: list[str] = []
        self.can_fail = False    # an index read from memory is checked: err_ptr is set when out of range
        self.ntmp = 0
        self.ops = TritonOps(self)

    # ---- helpers
    def newvar(self, expr: str, dtype, rdep=None, prefix="tmp") -> CSEVar:
        key = expr
        if key in self.cse:
            return self.cse[key]
        if rdep is None:
            rdep = self.expr_rdep(expr)
        name = f"{prefix}{self.ntmp}"
        self.ntmp += 1
        self.emit(f"{name} = {expr}", rdep, name)
        v = CSEVar(name, dtype, rdep)
        if rdep:
            self.rdep_names.add(name)
        self.cse[key] = v
        return v

    def emit(self, line, rdep, name=None, section=None):
        """Append a line; in a looped kernel, to the section of the current phase it belongs to."""
        if not self.looped:
            self.lines.append(((0, 0), line))
            return
        if section is None:
            reads = set(re.findall(r"[A-Za-z_]\w*", line.split("=", 1)[1] if name else line))
            tainted = bool(reads & self.tainted)
            if rdep and tainted:
                raise _NewPhase()
            section = 1 if rdep else (2 if tainted else 0)
            if tainted and name:
                self.tainted.add(name)
        self.lines.append(((self.phase, section), line))

    def new_phase(self):
        self.phase += 1
        self.tainted = set()
        # values of the previous loop are not live in the next one
        self.cse = {k: v for k, v in self.cse.items() if not v.rdep}
        self.store_cache = {k: v for k, v in self.store_cache.items() if not v.rdep}
        self.red_cache = {}

    def expr_rdep(self, expr) -> bool:
        return any(tok in self.rdep_names for tok in re.findall(r"[A-Za-z_]\w*", str(expr)))

    def index_vars(self, ranges, prefix):
        """Per-dimension index expressions of `ranges` iterated in row-major order by xindex/rindex.
        Kept inline (not named) so that the same position is spelled the same way whichever node or
        view computes it: in-kernel reuse of stored values compares index expressions."""
        base = "xindex" if prefix == "x" else "rindex"
        return unflatten_index(base, list(ranges))

    def mask_for(self, index) -> str:
        parts = ["xmask"]
        if self.reduction and self.expr_rdep(index):
            parts.append("rmask")
        parts += self.mask_stack
        return " & ".join(parts)

    def ptr(self, name, table, prefix):
        if name not in table:
            table[name] = f"{prefix}{len(table)}"
        return table[name]

    def _index_str(self, index):
        if isinstance(index, (int, sympy.Integer)):
            return f"xindex * 0 + {index}" if index else "xindex * 0"
        s = iexpr(index)
        if not re.search(r"\b[xr]index\b", s):
            return f"xindex * 0 + ({s})"  # a scalar offset (symbolic): give it the tile's shape
        return s

    # ---- memory
    def load(self, name, index, dtype):
        index = sympy.sympify(index)
        key = (name, index)
        if key in self.store_cache:
            return self.store_cache[key]
        if key in self.recompute:
            # stored in an earlier loop of a looped reduction: recompute it here (it is not in memory)
            data, idx, dt = self.recompute[key]
            v = self.ops.to_dtype(data.inner_fn(self.ops, idx), dt)
            self.store_cache[key] = v
            return v
        if name in self.stored:
            raise FusionIllegal(f"{name} is read at {index} but written at {self.stored[name]} in one kernel")
        self.loaded.setdefault(name, set()).add(index)
        ptr = self.ptr(name, self.in_args, "in_ptr")
        idx = self._index_str(index)
        mask = self.mask_for(index)
        return self.newvar(f"tl.load({ptr} + ({idx}), {mask}, other=0)", dtype,
                           rdep=self.expr_rdep(index) or any(m in self.rdep_names for m in self.mask_stack))

    def store(self, name, index, value: CSEVar, mutation=False):
        index = sympy.sympify(index)
        if mutation and any(i != index for i in self.loaded.get(name, ())):
            raise FusionIllegal(f"{name} is mutated at {index} but read elsewhere in the kernel")
        self.store_cache[(name, index)] = value
        self.stored.setdefault(name, set()).add(index)
        if self.store_names is not None and name not in self.store_names:
            return
        ptr = self.ptr(name, self.out_args, "out_ptr")
        mask = self.mask_for(index)
        val = value.name
        if self.reduction and not self.expr_rdep(index):
            val = f"tl.broadcast_to({val}, [XBLOCK, 1])"
        self.emit(f"tl.store({ptr} + ({self._index_str(index)}), {val}, {mask})",
                  value.rdep or self.expr_rdep(index) or self.expr_rdep(mask))

    # ---- nodes
    def _snapshot(self):
        return (len(self.lines), dict(self.cse), set(self.rdep_names), dict(self.in_args), dict(self.out_args),
                dict(self.store_cache), {k: set(v) for k, v in self.stored.items()},
                {k: set(v) for k, v in self.loaded.items()}, self.ntmp, self.phase, set(self.tainted),
                dict(self.red_cache), self.nacc, dict(self.recompute))

    def _restore(self, snap):
        (n, self.cse, self.rdep_names, self.in_args, self.out_args, self.store_cache, self.stored,
         self.loaded, self.ntmp, self.phase, self.tainted, self.red_cache, self.nacc, self.recompute) = snap
        del self.lines[n:]

    def render(self, node: ComputedBuffer, split=None):
        """Render `node`; a pointwise node of a reduction kernel maps onto the tile by `split` (the
        scheduler's choice, `FusedGroup.splits`)."""
        if not self.looped:
            return self._render(node, split)
        snap = self._snapshot()
        try:
            return self._render(node, split)
        except _NewPhase:
            self._restore(snap)
            self.new_phase()
            return self._render(node, split)

    def _render(self, node: ComputedBuffer, split):
        data = node.data
        target = node.mutates or node.name
        mutation = node.mutates is not None
        if isinstance(data, Reduction):
            if not self.reduction or prod(data.ranges) != self.xnumel or prod(data.reduction_ranges) != self.rnumel:
                raise FusionIllegal("reduction tile mismatch")
            idx = self.index_vars(data.ranges, "x")
            ridx = self.index_vars(data.reduction_ranges, "r")
            value = data.inner_fn(self.ops, idx, ridx)
            self.store(target, node.layout.index(idx), self.reduce(data, value), mutation=mutation)
            return
        if split is None:
            splits = tile_splits(data.ranges, self.xnumel, self.rnumel if self.reduction else 1)
            if not splits:
                raise FusionIllegal("ranges do not fit the tile")
            split = splits[0]
        idx = tile_index(data.ranges, split)
        result = self.ops.to_dtype(data.inner_fn(self.ops, idx), node.get_dtype())
        self.store(target, node.layout.index(idx), result, mutation=mutation)
        if self.looped and not mutation and result.rdep:
            self.recompute[(target, node.layout.index(idx))] = (data, idx, node.get_dtype())

    def reduce(self, data: Reduction, value: CSEVar) -> CSEVar:
        rt, odt = data.reduction_type, data.dtype
        src = value.dtype
        ops = self.ops
        full = "xmask & rmask"
        if rt in ("sum", "prod", "mean"):
            acc = torch.float32 if odt in (torch.float16, torch.bfloat16) else odt
        elif rt in ("max", "min", "argmax", "argmin"):
            acc = torch.float32 if src in (torch.float16, torch.bfloat16) else (
                torch.int8 if src == torch.bool else src)
        elif rt in ("var_unnormalized", "welford_mean"):
            acc = torch.float32 if odt in (torch.float16, torch.bfloat16) else odt
        else:  # any / all
            acc = torch.bool
        v = ops.to_dtype(value, acc)
        b = self.newvar(f"tl.broadcast_to({v}, [XBLOCK, RBLOCK])", acc)
        if self.looped:
            return ops.to_dtype(self._reduce_looped(rt, acc, b), odt)
        # only builtins and combine functions from the module header: under the interpreter,
        # triton.language's own @jit helpers (tl.sum, tl.max, ...) are unusable when triton was imported
        # before TRITON_INTERPRET was set
        if rt in ("sum", "mean"):
            m = self.newvar(f"tl.where({full}, {b}, 0)", acc)
            r = self.newvar(f"tl.reduce({m}, 1, _sum_combine)[:, None]", acc, rdep=False)
        elif rt == "prod":
            m = self.newvar(f"tl.where({full}, {b}, 1)", acc)
            r = self.newvar(f"tl.reduce({m}, 1, _prod_combine)[:, None]", acc, rdep=False)
        elif rt in ("max", "argmax", "min", "argmin"):
            ident = _extremum_identity(acc, rt in ("max", "argmax"))
            m = self.newvar(f"tl.where({full}, {b}, {ident})", acc)
            if rt in ("max", "min"):
                r = self.newvar(f"tl.reduce({m}, 1, _{rt}_combine)[:, None]", acc, rdep=False)
            else:
                ri = self.newvar("tl.broadcast_to(rindex, [XBLOCK, RBLOCK])", torch.int32)
                r = self.newvar(f"tl.reduce(({m}, {ri}), 1, _{rt}_combine)[1][:, None].to(tl.int64)",
                                torch.int64, rdep=False)
        elif rt in ("any", "all"):
            fill = "0" if rt == "any" else "1"
            m = self.newvar(f"tl.where({full}, {b}, {fill}).to(tl.int8)", torch.int8)
            comb = "_max_combine" if rt == "any" else "_min_combine"
            r = self.newvar(f"tl.reduce({m}, 1, {comb})[:, None] != 0", torch.bool, rdep=False)
        elif rt in ("var_unnormalized", "welford_mean"):
            # Welford: per element (mean=x, m2=0, weight=1), masked lanes weight 0, merged pairwise
            # with the parallel (Chan et al.) formula; var_mean's mean shares the same tl.reduce (CSE)
            T = TRITON_DTYPES[acc]
            m = self.newvar(f"tl.where({full}, {b}, 0)", acc)
            w = self.newvar(f"tl.where({full}, 1, 0).to({T})", acc)
            z = self.newvar(f"tl.full([XBLOCK, RBLOCK], 0, {T})", acc, rdep=True)
            wf = self.newvar(f"tl.reduce(({m}, {z}, {w}), 1, _welford_combine)", acc, rdep=False)
            r = self.newvar(f"{wf}[{1 if rt == 'var_unnormalized' else 0}][:, None]", acc, rdep=False)
        else:
            raise NotImplementedError(rt)
        return ops.to_dtype(r, odt)

    def _reduce_looped(self, rt, acc, b) -> CSEVar:
        """Accumulate `b` over the chunks of the row in [XBLOCK, RBLOCK] accumulators, then reduce."""
        full = "xmask & rmask"
        T = TRITON_DTYPES[acc]
        if rt in ("sum", "mean", "prod"):
            kind, ident, comb = "sum" if rt != "prod" else "prod", "0" if rt != "prod" else "1", None
        elif rt in ("max", "min", "argmax", "argmin"):
            ident = _extremum_identity(acc, rt in ("max", "argmax"))
            kind = rt
        elif rt in ("any", "all"):
            kind, ident, T = rt, "0" if rt == "any" else "1", "tl.int8"
        elif rt in ("var_unnormalized", "welford_mean"):
            kind, ident = "welford", "0"
        else:
            raise NotImplementedError(rt)
        if b.name in self.tainted:  # an x-only value computed from this loop's results
            raise _NewPhase()
        key = (kind, b.name)
        if key not in self.red_cache:
            a = f"_acc{self.nacc}"
            self.nacc += 1
            pre = lambda ln: self.emit(ln, False, section=0)  # noqa: E731
            loop = lambda ln: self.emit(ln, True, section=1)  # noqa: E731
            zero = f"tl.full([XBLOCK, RBLOCK], {ident}, {T})"
            if kind == "welford":
                pre(f"{a}_mean = {zero}")
                pre(f"{a}_m2 = {zero}")
                pre(f"{a}_w = {zero}")
                loop(f"{a}_mean, {a}_m2, {a}_w = _welford_combine({a}_mean, {a}_m2, {a}_w, "
                     f"tl.where({full}, {b}, 0), {zero}, tl.where({full}, 1, 0).to({T}))")
                res = f"tl.reduce(({a}_mean, {a}_m2, {a}_w), 1, _welford_combine)"
            elif kind in ("argmax", "argmin"):
                pre(f"{a} = {zero}")
                pre(f"{a}_idx = tl.full([XBLOCK, RBLOCK], 2147483647, tl.int32)")
                loop(f"{a}, {a}_idx = _{kind}_combine({a}, {a}_idx, tl.where({full}, {b}, {ident}), "
                     f"tl.broadcast_to(rindex, [XBLOCK, RBLOCK]))")
                res = f"tl.reduce(({a}, {a}_idx), 1, _{kind}_combine)"
            else:
                comb = {"sum": "_sum_combine", "prod": "_prod_combine", "max": "_max_combine",
                        "min": "_min_combine", "any": "_max_combine", "all": "_min_combine"}[kind]
                pre(f"{a} = {zero}")
                val = f"tl.where({full}, {b}, {ident})" + (".to(tl.int8)" if kind in ("any", "all") else "")
                loop(f"{a} = {comb}({a}, {val})")
                res = f"tl.reduce({a}, 1, {comb})"
            name = f"tmp{self.ntmp}"
            self.ntmp += 1
            self.emit(f"{name} = {res}", False, section=2)
            self.tainted.add(name)
            self.red_cache[key] = name
        name = self.red_cache[key]
        if kind == "welford":
            expr, dt = f"{name}[{1 if rt == 'var_unnormalized' else 0}][:, None]", acc
        elif kind in ("argmax", "argmin"):
            expr, dt = f"{name}[1][:, None].to(tl.int64)", torch.int64
        elif kind in ("any", "all"):
            expr, dt = f"{name}[:, None] != 0", torch.bool
        else:
            expr, dt = f"{name}[:, None]", acc
        return self.newvar(expr, dt, rdep=False)

    # ---- source
    def used_symbols(self) -> list[str]:
        """Size symbols the kernel body reads (kernel arguments after the pointers)."""
        if not self.symbols:
            return []
        tokens = set()
        for _, ln in self.lines:
            tokens.update(re.findall(r"[A-Za-z_]\w*", ln))
        return sorted(tokens & self.symbols, key=lambda s: (len(s), s))

    def source(self, name) -> str:
        args = list(self.in_args.values()) + list(self.out_args.values()) + (["err_ptr"] if self.can_fail else []) \
            + self.used_symbols()
        sig = ", ".join(args + ["xnumel", "rnumel", "XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr"])
        head = ["xoffset = tl.program_id(0) * XBLOCK"]
        if self.looped:
            head += ["xindex = xoffset + tl.arange(0, XBLOCK)[:, None]", "xmask = xindex < xnumel",
                     "rbase = tl.arange(0, RBLOCK)[None, :]"]
            body_lines = list(head)
            for (phase, sec), ln in sorted(self.lines, key=lambda t: t[0]):  # stable: keeps emit order
                if sec == 1 and (phase, 1) != getattr(self, "_open", None):
                    self._open = (phase, 1)
                    body_lines += ["for roffset in range(0, rnumel, RBLOCK):", "    rindex = roffset + rbase",
                                   "    rmask = rindex < rnumel"]
                body_lines.append(("    " if sec == 1 else "") + ln)
            self._open = None
            body = "\n".join("    " + ln for ln in body_lines)
            return f"@triton.jit\ndef {name}({sig}):\n{body}\n"
        if self.reduction:
            head += ["xindex = xoffset + tl.arange(0, XBLOCK)[:, None]", "xmask = xindex < xnumel",
                     "rindex = tl.arange(0, RBLOCK)[None, :]", "rmask = rindex < rnumel"]
        else:
            head += ["xindex = xoffset + tl.arange(0, XBLOCK)", "xmask = xindex < xnumel"]
        body = "\n".join("    " + ln for _, ln in head_pairs(head) + self.lines)
        return f"@triton.jit\ndef {name}({sig}):\n{body}\n"

    def block_sizes(self):
        """(XBLOCK, RBLOCK); None when the tile is symbolic (the wrapper picks them at launch)."""
        if is_symbolic(self.xnumel) or is_symbolic(self.rnumel):
            return None
        return block_sizes(self.xnumel, self.rnumel, self.reduction)


def head_pairs(lines):
    return [(None, ln) for ln in lines]


def block_sizes(xnumel, rnumel, reduction):
    """Block sizes of a tile; also emitted into symbolic wrappers, which call it at launch."""
    if is_looped(rnumel, reduction):
        return max(1, min(next_pow2(xnumel), max(1, 4096 // LOOP_RBLOCK))), LOOP_RBLOCK
    if reduction:
        rb = next_pow2(rnumel)
        xb = max(1, min(next_pow2(xnumel), max(1, 4096 // rb)))
        return xb, rb
    return min(next_pow2(xnumel), 1024), 1


class TritonOps:
    """The `ops` handler loop bodies call while a kernel is rendered."""

    def __init__(self, kernel: TritonKernel):
        self.k = kernel

    def _rank_full(self):
        return "[1, 1]" if self.k.reduction else "[1]"

    def load(self, name, index, dtype):
        return self.k.load(name, index, dtype)

    def constant(self, value, dtype):
        return self.k.newvar(f"tl.full({self._rank_full()}, {_const(value, dtype)}, {TRITON_DTYPES[dtype]})",
                             dtype, rdep=False)

    def index_expr(self, expr, dtype):
        expr = sympy.sympify(expr)
        if expr.is_number or expr in (sympy.true, sympy.false):
            return self.constant(bool(expr) if dtype == torch.bool else expr, dtype)
        return self.k.newvar(f"({iexpr(expr)}).to({TRITON_DTYPES[dtype]})", dtype)

    def indirect_indexing(self, var: CSEVar, size, runtime_error=False):
        v = self.k.newvar(f"tl.where({var} < 0, {var} + {_paren(size)}, {var})", var.dtype, rdep=var.rdep)
        # out of range: flagged for the wrapper, which raises as eager does, and read at 0 meanwhile
        # (never outside the buffer)
        k = self.k
        k.can_fail = True
        bad = k.newvar(f"({v} < 0) | ({v} >= {_paren(size)})", torch.bool, rdep=var.rdep)
        lanes = " & ".join(["xmask"] + (["rmask"] if k.reduction and var.rdep else []) + k.mask_stack)
        k.emit(f"tl.store(err_ptr + 0 * {v}, {index_error_code(runtime_error)}, mask={bad} & ({lanes}))", var.rdep)
        safe = k.newvar(f"tl.where({bad}, 0, {v})", var.dtype, rdep=var.rdep)
        return index_var(safe.name)

    def to_dtype(self, var: CSEVar, dtype):
        if var.dtype == dtype:
            return var
        if dtype == torch.bool:
            return self.k.newvar(f"{var} != 0", dtype, rdep=var.rdep)
        if dtype == torch.bfloat16 and _f(var.dtype) and var.dtype != torch.float16:
            if var.dtype == torch.float64:
                var = self.to_dtype(var, torch.float32)
            # round to nearest even explicitly: Triton's interpreter truncates fp32 -> bf16
            return self.k.newvar(f"_f32_to_bf16({var})", dtype, rdep=var.rdep)
        return self.k.newvar(f"{var}.to({TRITON_DTYPES[dtype]})", dtype, rdep=var.rdep)

    def call(self, name, *args):
        tmpl = TEMPLATES[name]
        dtypes = [a.dtype for a in args]
        if callable(tmpl):
            tmpl = tmpl(dtypes if name != "where" else dtypes[1:])
        if name in _BOOL_OPS:
            dtype = torch.bool
        elif name == "where":
            dtype = args[1].dtype
        else:
            dtype = args[0].dtype
        expr = tmpl.replace("{T}", TRITON_DTYPES[dtype]).format(*[a.name for a in args])
        return self.k.newvar(expr, dtype, rdep=any(a.rdep for a in args))

    def masked(self, cond: CSEVar, body, other):
        self.k.mask_stack.append(cond.name)
        try:
            v = body()
        finally:
            self.k.mask_stack.pop()
        o = self.constant(other, v.dtype)
        return self.k.newvar(f"tl.where({cond}, {v}, {o})", v.dtype, rdep=v.rdep or cond.rdep)


# --------------------------------------------------------------------------- wrapper
HEADER = '''"""Generated by bytegraph's inductor backend."""
import math  # (symbolic scalars print as math.floor(...), math.sqrt(...))
import torch
import triton
import triton.language as tl


@triton.jit
def _sum_combine(a, b):
    return a + b


@triton.jit
def _prod_combine(a, b):
    return a * b


@triton.jit
def _max_combine(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _min_combine(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    pick1 = (v1 > v2) | ((v1 == v2) & (i1 < i2)) | ((v1 != v1) & ((v2 == v2) | (i1 < i2)))
    return tl.where(pick1, v1, v2), tl.where(pick1, i1, i2)


@triton.jit
def _argmin_combine(v1, i1, v2, i2):
    pick1 = (v1 < v2) | ((v1 == v2) & (i1 < i2)) | ((v1 != v1) & ((v2 == v2) | (i1 < i2)))
    return tl.where(pick1, v1, v2), tl.where(pick1, i1, i2)


@triton.jit
def _welford_combine(mean1, m2_1, w1, mean2, m2_2, w2):
    delta = mean2 - mean1
    new_w = w1 + w2
    w2_over_w = tl.where(new_w == 0, 0, w2 / tl.where(new_w == 0, 1, new_w))
    return mean1 + delta * w2_over_w, m2_1 + m2_2 + delta * delta * w1 * w2_over_w, new_w


@triton.jit
def _f32_to_bf16(x):
    b = x.to(tl.uint32, bitcast=True)
    b = b + 0x7FFF + ((b >> 16) & 1)
    return (b >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


'''

# wrapper helpers shared by every code generator (the C++ wrapper's header starts with them too)
HEADER_PY = '''"""Generated by bytegraph's inductor backend."""
import math  # (symbolic scalars print as math.floor(...), math.sqrt(...))
import torch
from bytegraph.backends.inductor.kernel_errors import raise_kernel_error as _raise_kernel_error


def _reinterpret(t, size, stride, offset):
    return t.as_strided(size, stride, t.storage_offset() + offset)


def _alias(t):
    """A new tensor over `t`'s memory, unlinked from it (`requires_grad_()` on one leaves the other
    alone): what eager's `detach()` returns, never that tensor object itself (None, an absent
    gradient, stays None)."""
    return None if t is None else t.detach()


def _with_strides(t, stride):
    """An extern op's result in the layout its meta function promised (which kernels and views of it
    assume): some aten kernels return another layout than their meta (e.g. CPU flash attention)."""
    have = t.stride()
    if have == stride or all(n <= 1 or a == b for n, a, b in zip(t.shape, have, stride)):
        return t
    out = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out

'''

# accurate math helpers, emitted into a module only when its kernels call them (each after the helpers
# it calls)
MATH_HELPERS = {
    "_expm1": '''@triton.jit
def _expm1(x):
    # Kahan: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u
    u = tl.exp(x)
    um1 = u - 1.0
    r = tl.where(u == 1.0, x, um1 * (x / tl.log(u)))
    r = tl.where(um1 == -1.0, -1.0, r)
    return tl.where(u == float('inf'), u, r)
''',
    "_log1p": '''@triton.jit
def _log1p(x):
    # Goldberg: log(u) * x / (u - 1) with u = 1 + x cancels the rounding error of u
    u = x + 1.0
    d = u - 1.0
    r = tl.where(d == 0.0, x, tl.log(u) * (x / d))
    return tl.where(u == float('inf'), u, r)
''',
    "_tanh": '''@triton.jit
def _tanh(x):
    # tanh|x| = -t / (t + 2), t = expm1(-2|x|) in (-1, 0]: no cancellation, no overflow
    t = _expm1(-2.0 * tl.abs(x))
    r = -t / (t + 2.0)
    return tl.where(x == 0, x, tl.where(x < 0, -r, r))
''',
    "_sinh": '''@triton.jit
def _sinh(x):
    # sinh|x| = (t + t / (t + 1)) / 2, t = expm1(|x|); for large |x|, exp(|x|/2)^2 / 2 (no early overflow)
    a = tl.abs(x)
    t = _expm1(a)
    h = tl.exp(0.5 * a)
    r = tl.where(a > 20.0, (0.5 * h) * h, 0.5 * (t + t / (t + 1.0)))
    return tl.where(x == 0, x, tl.where(x < 0, -r, r))
''',
    "_cosh": '''@triton.jit
def _cosh(x):
    a = tl.abs(x)
    e = tl.exp(a)
    h = tl.exp(0.5 * a)
    return tl.where(a > 20.0, (0.5 * h) * h, 0.5 * e + 0.5 / e)
''',
    "_pow": '''@triton.jit
def _pow(x, y):
    # x ** y as exp2(y * log2|x|), signed for a negative base and an odd integer exponent
    r = tl.exp2(y * tl.log2(tl.abs(x)))
    is_int = y == tl.floor(y)
    r = tl.where(x < 0, tl.where(is_int, tl.where((tl.abs(y) % 2.0) == 1.0, -r, r), float('nan')), r)
    return tl.where((y == 0) | (x == 1), 1.0, r)
''',
}


def _math_helpers(source: str) -> str:
    """Source of the `MATH_HELPERS` that `source` calls, directly or through another helper."""
    used, todo = [], [n for n in MATH_HELPERS if f"{n}(" in source]
    while todo:
        n = todo.pop()
        if n in used:
            continue
        used.append(n)
        todo += [m for m in MATH_HELPERS if m != n and f"{m}(" in MATH_HELPERS[n]]
    return "\n\n".join(MATH_HELPERS[n] for n in MATH_HELPERS if n in used)


# helpers of wrappers whose sizes are symbolic: block sizes and grids are picked at launch
SYMBOLIC_HEADER = '''
def _next_pow2(n):
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _block_sizes(xnumel, rnumel, reduction):
    if reduction:
        rb = _next_pow2(rnumel)
        return max(1, min(_next_pow2(xnumel), max(1, 4096 // rb))), rb
    return min(_next_pow2(xnumel), 1024), 1

'''


def _tuple(xs) -> str:
    """Source of a tuple of ints/sympy expressions (`repr` of a tuple of ints)."""
    items = [texpr(x) for x in xs]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class WrapperCodegen:
    """Writes the module source: kernels and `call(args, externs)`."""

    def __init__(self, graph, groups, store_names):
        self.graph, self.groups, self.store_names = graph, groups, store_names
        self.kernels: dict[str, str] = {}   # kernel body source -> kernel name
        self.kernel_defs: list[str] = []
        self.externs: list = []
        self.lines: list[str] = []
        self.kernel_launches = 0
        self.allocated: set[str] = set()

    def ref(self, ir) -> str:
        """Python expression for a realized IR value inside `call`."""
        if isinstance(ir, ReinterpretView):
            L = ir.layout
            return f"_reinterpret({ir.data.name}, {_tuple(L.size)}, {_tuple(L.stride)}, {texpr(L.offset)})"
        if isinstance(ir, Buffer):
            return ir.name
        raise TypeError(ir)

    def generate(self) -> str:
        g = self.graph
        names = [b.name if b is not None else f"_unused{i}" for i, b in enumerate(g.inputs)]
        self.lines.append("def call(args, externs, constants):")
        self.lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args"
                          if names else "    pass")
        consts = [b.name for b, _ in g.constants]
        if consts:
            self.lines.append(f"    {', '.join(consts)}{',' if len(consts) == 1 else ''} = constants")
        self.symbols = {str(s) for s in g.symbol_bindings}
        for s, src in sorted(g.symbol_bindings.items(), key=lambda kv: str(kv[1])):
            self.lines.append(f"    {s} = {src}")
        last_use = self._last_uses()
        free: dict[tuple, list[str]] = {}
        output_names = {o.get_name() for o in g.outputs if isinstance(o, (Buffer, ReinterpretView))}
        # per group: the layouts of the buffers later groups may allocate (what a dead buffer can serve)
        later_keys, keys = [], set()
        for group in reversed(self.groups):
            later_keys.append(set(keys))
            keys |= {self._alloc_key(n) for n in group.nodes if group.kind != "extern"
                     and isinstance(n, ComputedBuffer) and n.name in self.store_names}
        later_keys.reverse()
        bound, scanned = set(), 0  # names the wrapper has assigned so far (lines scanned)
        for gi, group in enumerate(self.groups):
            if group.kind == "extern":
                for node in group.nodes:
                    self._extern(node)
            else:
                self._alloc_outputs(gi, group, free, last_use, output_names)
                self._kernel(group)
            # buffers whose last reader is this group die here: their storage can be reused, or else
            # is released now (a smaller working set: the allocator hands the memory straight back
            # instead of the OS faulting in fresh pages for every call)
            for ln in self.lines[scanned:]:
                m = re.match(r"    (\w+) = ", ln)
                if m:
                    bound.add(m.group(1))
            scanned, dead = len(self.lines), []
            for name, (lg, buf) in last_use.items():
                if lg != gi or name in output_names:
                    continue
                if buf is not None and name in self.allocated and self._alloc_key(buf) in later_keys[gi]:
                    free.setdefault(self._alloc_key(buf), []).append(name)
                elif name in bound:
                    dead.append(name)
            if dead:
                self.lines.append(f"    del {', '.join(dead)}")
        outs = []
        for o in g.outputs:
            if isinstance(o, ReinterpretView):
                # a view of a buffer another output may be (`x[:, 1:]` and `x.detach()`): of its own
                # alias, so `requires_grad_()` on that output does not reach this one
                L = o.layout
                outs.append(f"_reinterpret(_alias({o.data.name}), {_tuple(L.size)}, {_tuple(L.stride)}, "
                            f"{texpr(L.offset)})")
            elif isinstance(o, Buffer):
                ref = self.ref(o)
                # an input, or a buffer already returned (`y` and `y.detach()`): eager's results are
                # distinct tensor objects over that memory
                outs.append(f"_alias({ref})" if isinstance(o, InputBuffer) or ref in outs else ref)
            else:
                outs.append(texpr(o) if is_symbolic(o) else repr(o))
        self.lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        kernels = "\n\n".join(self.kernel_defs)
        return self.header(kernels) + kernels + "\n\n" + "\n".join(self.lines) + "\n"

    def header(self, kernels: str = "") -> str:
        helpers = _math_helpers(kernels)
        return (HEADER + HEADER_PY.split("import torch\n", 1)[1] + (helpers + "\n\n" if helpers else "")
                + (SYMBOLIC_HEADER if self.symbols else ""))

    @staticmethod
    def _alloc_key(buf):
        L = buf.layout
        return (tuple(L.size), tuple(L.stride), L.dtype, str(L.device))

    def _last_uses(self):
        """name -> (index of the last group that reads it, buffer) for intermediate buffers."""
        by_name = {}
        for gi, group in enumerate(self.groups):
            for node in group.nodes:
                if isinstance(node, (ComputedBuffer, ExternKernel)) and node.layout is not None \
                        and not getattr(node, "mutates", None):
                    by_name.setdefault(node.name, [gi, node])
        for gi, group in enumerate(self.groups):
            for node in group.nodes:
                for r in node.get_reads():
                    if r in by_name:
                        by_name[r][0] = max(by_name[r][0], gi)
        # extern outputs (and buffers only ever read by a MultiOutput) are not reused to keep it simple
        return {k: (v[0], v[1] if isinstance(v[1], ComputedBuffer) else None) for k, v in by_name.items()}

    def _alloc_outputs(self, gi, group, free, last_use, output_names):
        """Storage for the buffers kernel group `gi` writes (fresh or reused from `free`)."""
        for node in group.nodes:
            if not node.mutates and node.name in self.store_names:
                self._alloc(node, free)

    def _alloc(self, node, free):
        L = node.layout
        self.allocated.add(node.name)
        key = self._alloc_key(node)
        if free.get(key):
            old = free[key].pop()
            self.lines.append(f"    {node.name} = {old}; del {old}  # reuse")
            return
        self.lines.append(f"    {node.name} = torch.empty_strided({_tuple(L.size)}, {_tuple(L.stride)}, "
                          f"dtype={L.dtype}, device='{L.device}')")

    def _extern(self, node):
        if isinstance(node, MultiOutput):
            value = f"{node.parent.name}" + "".join(f"[{i}]" for i in node.path)
            self.lines.append(f"    {node.name} = _with_strides({value}, {_tuple(node.layout.stride)})")
            return
        op = node.op
        call = self._direct_call(node)
        if call is None:
            call = self._templated_call(node)
        if node.layout is not None:
            call = f"_with_strides({call}, {_tuple(node.layout.stride)})"
        self.lines.append(f"    {node.name} = {call}  # {op_name(op)}")

    def _direct_call(self, node) -> str | None:
        """`externs[i](...)` with the op's arguments spelled in the source (buffers, size expressions,
        literal constants) and `externs[i]` the op's C++ entry point: no Python between the wrapper and
        the op. None where a constant has no literal spelling."""
        def src(a):
            if isinstance(a, (Buffer, ReinterpretView)):
                return self.ref(a)
            if is_symbolic(a):
                return texpr(a)
            if isinstance(a, (list, tuple)):
                items = [src(x) for x in a]
                if None in items:
                    return None
                body = ", ".join(items) + ("," if isinstance(a, tuple) and len(items) == 1 else "")
                return f"[{body}]" if isinstance(a, list) else f"({body})"
            if a is None or type(a) in (bool, int, str) or (type(a) is float and math.isfinite(a)):
                return repr(a)
            if isinstance(a, torch.dtype):
                return str(a)
            return None
        args = [src(a) for a in node.args] + [
            None if src(v) is None else f"{k}={src(v)}" for k, v in node.kwargs.items()]
        if None in args:
            return None
        op = node.op
        self.externs.append(op._op if isinstance(op, torch._ops.OpOverload) else op)
        return f"externs[{len(self.externs) - 1}]({', '.join(args)})"

    def _templated_call(self, node) -> str:
        """`externs[i](tensors, syms=...)`, `externs[i]` filling the tensors and size values into the
        op's arguments at their places."""
        tensors, syms = [], []

        def collect(a):
            if isinstance(a, (Buffer, ReinterpretView)):
                tensors.append(a)
                return _Slot(len(tensors) - 1)
            if is_symbolic(a):  # a size argument: its value is computed by the wrapper at call time
                syms.append(a)
                return _SymSlot(len(syms) - 1)
            if isinstance(a, (list, tuple)):
                return type(a)(collect(x) for x in a)
            return a
        args = collect(list(node.args))
        kwargs = {k: collect(v) for k, v in node.kwargs.items()}
        op = node.op

        def fill(a, ts, ss):
            if isinstance(a, _SymSlot):
                return ss[a.i]
            if isinstance(a, _Slot):
                return ts[a.i]
            if isinstance(a, (list, tuple)):
                return type(a)(fill(x, ts, ss) for x in a)
            return a

        def run(*ts, syms=(), op=op, args=args, kwargs=kwargs):
            return op(*fill(args, ts, syms), **{k: fill(v, ts, syms) for k, v in kwargs.items()})
        self.externs.append(run)
        refs = ", ".join(self.ref(t) for t in tensors)
        if syms:
            refs += f"{', ' if refs else ''}syms={_tuple(syms)}"
        return f"externs[{len(self.externs) - 1}]({refs})"

    def _kernel(self, group):
        k = TritonKernel(group.xnumel, group.rnumel, group.reduction, store_names=self.store_names,
                         symbols=self.symbols)
        for node in group.nodes:
            k.render(node, group.splits.get(node.name))
        body = k.source("KERNEL")
        if body not in self.kernels:
            kname = f"kernel{len(self.kernels)}"
            self.kernels[body] = kname
            self.kernel_defs.append(body.replace("def KERNEL(", f"def {kname}("))
        kname = self.kernels[body]
        args = [n for n in list(k.in_args) + list(k.out_args)] + (["_err"] if k.can_fail else []) + k.used_symbols()
        self.kernel_launches += 1
        comment = ", ".join(n.name for n in group.nodes)
        if k.can_fail:
            device = group.nodes[0].get_device()
            self.lines.append(f"    _err = torch.zeros(1, dtype=torch.int32, device='{device}')")
        self._launch(kname, k, group, args, comment)
        if k.can_fail:
            self.lines.append("    if _err.item():")
            self.lines.append("        _raise_kernel_error(int(_err.item()))")

    def _launch(self, kname, k, group, args, comment):
        blocks = k.block_sizes()
        if blocks is not None:
            xb, rb = blocks
            grid = -(-group.xnumel // xb)
            self.lines.append(f"    {kname}[({grid},)]({', '.join(args)}, {group.xnumel}, {group.rnumel}, "
                              f"XBLOCK={xb}, RBLOCK={rb})  # {comment}")
            return
        # symbolic tile: numels, block sizes and grid are computed from the bound symbols at launch
        xn, rn = texpr(group.xnumel), texpr(group.rnumel)
        self.lines.append(f"    xnumel, rnumel = {xn}, {rn}")
        self.lines.append(f"    xblock, rblock = _block_sizes(xnumel, rnumel, {group.reduction})")
        self.lines.append(f"    {kname}[(-(-xnumel // xblock),)]({', '.join(args)}, xnumel, rnumel, "
                          f"XBLOCK=xblock, RBLOCK=rblock)  # {comment}")


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _SymSlot(_Slot):
    """A symbolic size argument of an extern call."""


__all__ = ["TEMPLATES", "FusionIllegal", "TritonKernel", "TritonOps", "WrapperCodegen", "iexpr"]


def _extremum_identity(dtype, is_max: bool) -> str:
    """The neutral element of a max (or min) reduction in `dtype`, as Triton source."""
    if _f(dtype):
        return "float('-inf')" if is_max else "float('inf')"
    info = torch.iinfo(dtype)
    return str(info.min if is_max else info.max)
