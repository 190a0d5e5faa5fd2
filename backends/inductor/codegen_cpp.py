"""C++/OpenMP code generation for fused groups on CPU tensors, and its Python wrapper (compile time).

The same fused groups the Triton printer renders (scheduler.py) become one `extern "C"` C++ function
each; loop bodies are called with `CppOps`, so every IR value becomes a typed C++ temporary (common
subexpressions shared). The library is built and loaded by `cpp_build`.

Pointwise kernel: the `xnumel` outputs are split evenly among OpenMP threads; each thread walks its
range as rows of `inner` elements (`x0` the row, `x1` the position in it, the inner loop the compiler
vectorizes). `inner` is the product of the most trailing dimensions every node shares such that no
index divides `x1` (merged dimensions of a contiguous tensor fold back into `x1`, see `ir.fold_index`),
else the last dimension; the outer dimensions' division/modulo arithmetic (on `x0`) is hoisted out of
the inner loop. Groups whose nodes share no trailing dimension use one flat index (`inner = xnumel`,
`xindex` unflattened per node: correct, slower). A kernel writes an output in place of an input that
dies with it where that is element-by-element (`CppWrapperCodegen._alloc_outputs`).

Reduction kernel: OpenMP over the `xnumel` rows; per row, the body runs as *phases*, each x-only lines,
a loop over the reduced row (r-dependent lines, accumulator updates) and lines after it. A line that
reads a reduction result of the current loop starts a new phase (softmax: max, then sum of exp, then
the normalized store). Accumulators are `LANES` wide (lane `l` takes elements `r0 + l`): the lane
loop vectorizes without reassociating anything, for every reduction kind (sum/prod/max/min with NaN
propagation, argmax/argmin with first-index ties, any/all, Welford for var/mean, whose per-lane count
is the same scalar for every lane of a full chunk); the lanes are merged after the loop. Pointwise
values stored in an earlier phase are recomputed where a later phase reads them (like Triton's looped
kernels), except expensive ones (libm calls) of static rows, kept in a row buffer. A row-invariant
divisor (softmax's sum) becomes one reciprocal per row.

Index expressions come from the IR as sympy (floor semantics); `cexpr` prints them with C's `/` and `%`
where both operands are known non-negative (where C and Python agree), else with `bg_floordiv`/`bg_mod`.
Symbolic sizes are `int64_t` arguments, so one library serves every size. Errors eager raises inside an
op (integer division by zero, an out-of-range gather index) set a flag the kernel returns; the wrapper raises.
"""
from __future__ import annotations

import math
import re

import sympy
import torch
from torch.utils._sympy.functions import (
    FloatTrueDiv, FloorDiv, IntTrueDiv, Max, Min, Mod, ModularIndexing, PythonMod, ToFloat,
)

from .codegen_triton import HEADER_PY, FusionIllegal, WrapperCodegen, _NewPhase
from .kernel_errors import index_error_code
from .ir import ComputedBuffer, Reduction, index_var, prod, texpr, tile_index, tile_splits, unflatten_index

LANES = 16  # one AVX-512 vector of floats: more lanes spill the accumulators to the stack
PARALLEL_MIN = 32768  # elements below which a kernel runs on one thread (fork/join costs more)
ROW_CACHE_MAX = 8192  # longest static reduced row whose expensive values a later loop reads from a buffer
ROW_SPLIT_MAX = 4096  # rows up to this long are dealt to threads whole (longer ones split by elements)
HOIST_BYTES = 32768  # per-thread arrays of row-invariant values (`CppKernel._hoist`) up to this size
_DEF = re.compile(r"const ([\w:]+) ((?:tmp|idx)\d+) = (.*);$")
_TOKEN = re.compile(r"[A-Za-z_]\w*")
_COSTLY = re.compile(r"std::\w+\(| / ")  # a libm call or a division: worth computing once per row position
_CSIZE = {"bool": 1, "uint8_t": 1, "int8_t": 1, "int16_t": 2, "int32_t": 4, "float": 4}
_EXPENSIVE = re.compile(r"std::(exp|expm1|exp2|log|log1p|log2|log10|tanh|sinh|cosh|sin|cos|tan|erf|pow)\(")
_NAME = re.compile(r"\b(?:tmp|idx)\d+\b")


class CppUnsupported(NotImplementedError):
    """The C++ printer cannot express this graph (the backend uses Triton instead)."""


STORAGE_TYPES = {
    torch.float32: "float", torch.float64: "double", torch.float16: "uint16_t", torch.bfloat16: "uint16_t",
    torch.int64: "int64_t", torch.int32: "int32_t", torch.int16: "int16_t", torch.int8: "int8_t",
    torch.uint8: "uint8_t", torch.bool: "bool",
}


def ctype(dtype) -> str:
    """The C++ type a value of `dtype` is computed in (half types in float)."""
    if dtype in (torch.float16, torch.bfloat16):
        return "float"
    try:
        return STORAGE_TYPES[dtype]
    except KeyError:
        raise CppUnsupported(f"dtype {dtype}") from None


def _f(dt):
    return dt.is_floating_point


def _by_kind(float_t, int_t, bool_t=None):
    def pick(dtypes):
        dt = dtypes[0]
        if dt == torch.bool and bool_t is not None:
            return bool_t
        return float_t if _f(dt) else int_t
    return pick


# per-element C++ for `ops.call(name, ...)`: {0}, {1}.. the operands, {T} the result's C++ type
TEMPLATES = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}", "neg": "-{0}",
    "abs": _by_kind("std::abs({0})", "({0} < 0 ? -{0} : {0})", "{0}"),
    "exp": "std::exp({0})", "exp2": "std::exp2({0})", "expm1": "std::expm1({0})",
    "log": "std::log({0})", "log2": "std::log2({0})", "log10": "std::log10({0})", "log1p": "std::log1p({0})",
    "sqrt": "std::sqrt({0})", "rsqrt": "({T}(1) / std::sqrt({0}))", "reciprocal": "({T}(1) / {0})",
    "sin": "std::sin({0})", "cos": "std::cos({0})", "tan": "std::tan({0})", "tanh": "std::tanh({0})",
    "sinh": "std::sinh({0})", "cosh": "std::cosh({0})",
    "sigmoid": "({T}(1) / ({T}(1) + std::exp(-{0})))", "erf": "std::erf({0})",
    "floor": _by_kind("std::floor({0})", "{0}"), "ceil": _by_kind("std::ceil({0})", "{0}"),
    "trunc": _by_kind("std::trunc({0})", "{0}"), "round": _by_kind("std::nearbyint({0})", "{0}"),
    "sign": _by_kind("{T}(({0} > 0) - ({0} < 0))", "{T}(({0} > 0) - ({0} < 0))", "{0}"),
    "relu": _by_kind("({0} < 0 ? {T}(0) : {0})", "({0} < 0 ? {T}(0) : {0})", "{0}"),
    "bitwise_not": _by_kind("~{0}", "~{0}", "!{0}"),
    "bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}", "bitwise_xor": "{0} ^ {1}",
    "fmod": _by_kind("std::fmod({0}, {1})", "bg_ifmod({0}, {1})"),
    "remainder": _by_kind("bg_remainder({0}, {1})", "bg_imod({0}, {1})"),
    "floor_divide": _by_kind("bg_floordiv_f({0}, {1})", "bg_ifloordiv({0}, {1})"),
    "int_truncdiv": "bg_itruncdiv({0}, {1})",
    "maximum": _by_kind("bg_max({0}, {1})", "std::max<{T}>({0}, {1})", "({0} || {1})"),
    "minimum": _by_kind("bg_min({0}, {1})", "std::min<{T}>({0}, {1})", "({0} && {1})"),
    "where": "({0} ? {1} : {2})",
    "eq": "({0} == {1})", "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})",
    "gt": "({0} > {1})", "ge": "({0} >= {1})",
    "logical_and": "(({0} != 0) & ({1} != 0))", "logical_or": "(({0} != 0) | ({1} != 0))",
    "logical_xor": "(({0} != 0) != ({1} != 0))", "logical_not": "({0} == 0)",
    "isnan": _by_kind("std::isnan({0})", "false"), "isinf": _by_kind("std::isinf({0})", "false"),
    "gelu": "({0} * {T}(0.5) * ({T}(1) + std::erf({0} * {T}(0.7071067811865476))))",
    "gelu_tanh": "({T}(0.5) * {0} * ({T}(1) + std::tanh({T}(0.7978845608028654) * "
                 "({0} + {T}(0.044715) * {0} * {0} * {0}))))",
    "pow_float": "std::pow({0}, {1})",
}
_BOOL_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
             "isnan", "isinf"}
_ERROR_HELPERS = ("bg_ifmod", "bg_imod", "bg_ifloordiv", "bg_itruncdiv", "bg_index")

HEADER = r"""// Generated by bytegraph's inductor backend (C++/OpenMP for CPU tensors).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <omp.h>
#include <type_traits>

// glibc's vector math library (libmvec, at most 4 ulp): lets loops calling these functions vectorize
#ifdef BG_LIBMVEC
#define BG_SIMD __attribute__((simd("notinbranch")))
extern "C" {
BG_SIMD float expf(float) noexcept; BG_SIMD double exp(double) noexcept;
BG_SIMD float exp2f(float) noexcept; BG_SIMD double exp2(double) noexcept;
BG_SIMD float expm1f(float) noexcept; BG_SIMD double expm1(double) noexcept;
BG_SIMD float logf(float) noexcept; BG_SIMD double log(double) noexcept;
BG_SIMD float log2f(float) noexcept; BG_SIMD double log2(double) noexcept;
BG_SIMD float log10f(float) noexcept; BG_SIMD double log10(double) noexcept;
BG_SIMD float log1pf(float) noexcept; BG_SIMD double log1p(double) noexcept;
BG_SIMD float sinf(float) noexcept; BG_SIMD double sin(double) noexcept;
BG_SIMD float cosf(float) noexcept; BG_SIMD double cos(double) noexcept;
BG_SIMD float tanf(float) noexcept; BG_SIMD double tan(double) noexcept;
BG_SIMD float tanhf(float) noexcept; BG_SIMD double tanh(double) noexcept;
BG_SIMD float sinhf(float) noexcept; BG_SIMD double sinh(double) noexcept;
BG_SIMD float coshf(float) noexcept; BG_SIMD double cosh(double) noexcept;
BG_SIMD float erff(float) noexcept; BG_SIMD double erf(double) noexcept;
BG_SIMD float powf(float, float) noexcept; BG_SIMD double pow(double, double) noexcept;
}
#endif

// error flag: 1 integer division by zero, 2 index out of range (the wrapper raises)
static int bg_err = 0;
static inline void bg_fail(int code) { __atomic_store_n(&bg_err, code, __ATOMIC_RELAXED); }

static inline float bg_h2f(uint16_t h) { _Float16 f; std::memcpy(&f, &h, 2); return (float)f; }
static inline uint16_t bg_f2h(float x) { _Float16 f = (_Float16)x; uint16_t h; std::memcpy(&h, &f, 2); return h; }
static inline float bg_bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; std::memcpy(&f, &u, 4); return f; }
static inline uint16_t bg_f2bf(float x) {
    uint32_t u; std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return (uint16_t)(u >> 16);
}

// index arithmetic with Python's floor semantics (used where an operand may be negative)
static inline int64_t bg_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t bg_mod(int64_t a, int64_t b) {
    int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <typename T> static inline T bg_ifloordiv(T a, T b) {
    if (b == 0) { bg_fail(1); return 0; }
    T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> static inline T bg_imod(T a, T b) {
    if (b == 0) { bg_fail(1); return 0; }
    T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> static inline T bg_ifmod(T a, T b) { if (b == 0) { bg_fail(1); return 0; } return a % b; }
template <typename T> static inline T bg_itruncdiv(T a, T b) { if (b == 0) { bg_fail(1); return 0; } return a / b; }
static inline int64_t bg_index(int64_t i, int64_t n, int code) {
    if (i < 0) i += n;
    if (i < 0 || i >= n) { bg_fail(code); return 0; }
    return i;
}

// floating floor division and remainder as eager computes them
template <typename T> static inline T bg_floordiv_f(T a, T b) {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
}
template <typename T> static inline T bg_remainder(T a, T b) {
    T mod = std::fmod(a, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
}

// `c ? a : b` for a condition that is the same along a row (a pad's mask of the row): as bit operations,
// which vectorize; g++ does not vectorize a select on a loop-invariant scalar condition
template <typename T> static inline T bg_sel(bool c, T a, T b) {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t,
              std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;
    const U m = U(0) - U(c);
    return __builtin_bit_cast(T, U((__builtin_bit_cast(U, a) & m) | (__builtin_bit_cast(U, b) & ~m)));
}

// max/min propagating NaN (a NaN operand wins), as eager's maximum/minimum and max/min reductions:
// std::max(a, b) keeps `a` when either is NaN and g++ compiles it to one vmaxps; a NaN `b` takes one
// select, which folds away for a constant bound (clamp, relu6). Other spellings g++ turns into
// several mask operations per vector (2-3x slower) or branches on the data.
template <typename T> static inline T bg_max(T a, T b) { return b != b ? b : std::max(a, b); }
template <typename T> static inline T bg_min(T a, T b) { return b != b ? b : std::min(a, b); }

// argmax/argmin: keep (v1, i1) or take (v2, i2); first index on ties, the first NaN wins
template <bool MAX, typename T> static inline void bg_arg(T& v1, int64_t& i1, T v2, int64_t i2) {
    bool better = MAX ? (v2 > v1) : (v2 < v1);
    bool pick2 = better || (v2 == v1 && i2 < i1) || (v2 != v2 && (v1 == v1 || i2 < i1));
    if (v1 != v1 && v2 == v2) pick2 = false;
    v1 = pick2 ? v2 : v1; i1 = pick2 ? i2 : i1;
}

// Welford: one element (the n-th of its lane: every lane of a full chunk has seen the same count,
// so 1/n is one scalar the compiler hoists out of the lane loop), and the merge of two partial
// (mean, m2, weight) triples (Chan et al.)
template <typename T> static inline void bg_welford(T& mean, T& m2, T x, int64_t n) {
    T d = x - mean; mean += d * (T(1) / T(n)); m2 += d * (x - mean);
}
template <typename T> static inline void bg_welford_merge(T& mean, T& m2, T& w, T mean2, T m22, T w2) {
    T nw = w + w2;
    T f = w2 > 0 ? w2 / nw : T(0);  // branch-free (an empty part changes nothing): vectorizes
    T d = mean2 - mean;
    mean += d * f; m2 += m22 + (w2 > 0 ? d * d * w * f : T(0)); w = nw;
}
"""


# --------------------------------------------------------------------------- index expressions
def _nonneg(e) -> bool:
    """`e` is known to be >= 0: iteration variables and checked indices are (`ir.index_var`), sizes
    are (size symbols are positive; unbacked `u*` sizes are non-negative)."""
    if e.is_nonnegative:
        return True
    if isinstance(e, sympy.Symbol):
        return bool(re.fullmatch(r"u\d+", e.name))
    if isinstance(e, (sympy.Add, sympy.Mul, FloorDiv, ModularIndexing, sympy.Min, Min)):
        return all(_nonneg(a) for a in e.args)
    if isinstance(e, (sympy.Max, Max)):
        return any(_nonneg(a) for a in e.args)
    if isinstance(e, sympy.Pow):
        return _nonneg(e.base)
    return False


_REL = {sympy.Lt: "<", sympy.Le: "<=", sympy.Gt: ">", sympy.Ge: ">=", sympy.Eq: "==", sympy.Ne: "!="}


def _c(e, div_names) -> str:
    """C++ source of a sympy index expression (IR semantics: Python's floor division and modulus).
    C's `/` and `%` truncate toward zero: they equal Python's `//` and `%` when both operands are
    non-negative, which is when they are used; otherwise `bg_floordiv`/`bg_mod`."""
    def c(x):
        return _c(x, div_names)

    def divides(base):
        div_names.update(s.name for s in base.free_symbols)
    if isinstance(e, sympy.Integer):
        v = int(e)
        return f"INT64_C({v})" if abs(v) > 2**31 - 1 else str(v)
    if isinstance(e, sympy.Float):
        return _float_literal(float(e), torch.float64)
    if isinstance(e, sympy.Symbol):
        return e.name
    if e is sympy.true or e is sympy.false:
        return "true" if e is sympy.true else "false"
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=lambda a: a.is_number)  # constants last: `(x0 + 5)`
        pos = [a for a in terms if not a.could_extract_minus_sign()]
        neg = [-a for a in terms if a.could_extract_minus_sign()]
        code = " + ".join(c(a) for a in pos) if pos else "0"
        return "(" + code + "".join(f" - {c(a)}" for a in neg) + ")"
    if isinstance(e, sympy.Mul):
        if e.could_extract_minus_sign():
            return f"(-{c(-e)})"
        return "(" + " * ".join(c(a) for a in e.args) + ")"
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and 0 < int(e.exp) <= 8:
        return "(" + " * ".join([c(e.base)] * int(e.exp)) + ")"
    if isinstance(e, FloorDiv):
        a, b = e.args
        divides(a)
        return f"({c(a)} / {c(b)})" if _nonneg(a) and _nonneg(b) else f"bg_floordiv({c(a)}, {c(b)})"
    if isinstance(e, ModularIndexing):
        a, d, m = e.args
        divides(a)
        q = FloorDiv(a, d, evaluate=False) if d != 1 else a
        return f"({c(q)} % {c(m)})" if _nonneg(a) and _nonneg(d) and _nonneg(m) else f"bg_mod({c(q)}, {c(m)})"
    if isinstance(e, (sympy.Mod, PythonMod, Mod)):   # (torch's Mod: of nonnegative operands)
        a, m = e.args
        divides(a)
        return f"({c(a)} % {c(m)})" if _nonneg(a) and _nonneg(m) else f"bg_mod({c(a)}, {c(m)})"
    if isinstance(e, (sympy.Max, sympy.Min, Max, Min)):
        fn = "max" if isinstance(e, (sympy.Max, Max)) else "min"
        code = c(e.args[0])
        for a in e.args[1:]:
            code = f"std::{fn}<int64_t>({code}, {c(a)})"
        return code
    if isinstance(e, (IntTrueDiv, FloatTrueDiv)):  # `x.shape[1] / 2`: Python's true division, in doubles
        return f"(static_cast<double>({c(e.args[0])}) / static_cast<double>({c(e.args[1])}))"
    if isinstance(e, ToFloat):
        return f"static_cast<double>({c(e.args[0])})"
    if type(e) in _REL:
        return f"({c(e.lhs)} {_REL[type(e)]} {c(e.rhs)})"
    if isinstance(e, (sympy.And, sympy.Or)):
        # `&`/`|`, not `&&`/`||`: the operands have no side effects, and short-circuit branches keep
        # g++ from vectorizing the loop (a padded window's bounds checks)
        return "(" + (" & " if isinstance(e, sympy.And) else " | ").join(c(a) for a in e.args) + ")"
    if isinstance(e, sympy.Not):
        return f"(!{c(e.args[0])})"
    raise CppUnsupported(f"index {e}")


def cexpr(e, div_names: set | None = None) -> str:
    """C++ source of an index expression (an int or a sympy expression). `div_names` collects the
    variables that appear under a division or modulo."""
    if isinstance(e, bool):
        return "true" if e else "false"
    if isinstance(e, str):
        raise TypeError(f"index expressions are sympy, not source: {e!r}")
    names: set = set()
    code = _c(sympy.sympify(e), names)
    if div_names is not None:
        div_names |= names
    return code


def _float_literal(v, dtype) -> str:
    T = ctype(dtype)
    if math.isnan(v):
        return f"std::numeric_limits<{T}>::quiet_NaN()"
    if math.isinf(v):
        return f"{'-' if v < 0 else ''}std::numeric_limits<{T}>::infinity()"
    s = repr(float(v))
    return f"{s}f" if T == "float" else s


def _const(value, dtype) -> str:
    if dtype == torch.bool:
        return "true" if value else "false"
    if _f(dtype):
        return _float_literal(float(value), dtype)
    v = int(value)
    if v == -(2**63):
        return "(-INT64_C(9223372036854775807) - 1)"
    return f"{ctype(dtype)}(INT64_C({v}))" if abs(v) > 2**31 - 1 else f"{ctype(dtype)}({v})"


def _lane_identity(kind, dtype) -> str:
    if kind in ("sum", "any", "welford"):
        return _const(0, dtype)
    if kind in ("prod", "all"):
        return _const(1, dtype)
    is_max = kind in ("max", "argmax")
    if _f(dtype):
        return _const(float("-inf") if is_max else float("inf"), dtype)
    if dtype == torch.bool:
        return _const(not is_max, dtype)
    info = torch.iinfo(dtype)
    return _const(info.min if is_max else info.max, dtype)


# lanes merged pairwise, halving the count each step: each step is one vectorizable loop (merging
# them one after another would be LANES dependent operations per row)
_TREE = "for (int s = {L} / 2; s > 0; s >>= 1) {{ for (int l = 0; l < s; l++) {comb}; }}"


# --------------------------------------------------------------------------- kernels
class CppVar:
    __slots__ = ("dtype", "name", "rdep")

    def __init__(self, name, dtype, rdep):
        self.name, self.dtype, self.rdep = name, dtype, rdep

    def __str__(self):
        return self.name

    __repr__ = __str__


class CppKernel:
    """Renders one fused group into one C++ function. A pointwise kernel walks rows of `inner`
    elements (the product of trailing dimensions every node shares, see `render_group`); without
    `inner` (or with `flat`) nodes are indexed from one flat `xindex`."""

    def __init__(self, group, store_names=None, symbols=(), inner=None, flat=False, order=None, extents=None):
        self.group = group
        self.extents = extents or {}  # buffer name -> elements its layout addresses (static layouts)
        self.order = order  # pointwise: the dimensions from outermost to innermost in memory
        self.xnumel, self.rnumel, self.reduction = group.xnumel, group.rnumel, group.reduction
        self.symbols = set(symbols)
        self.store_names = store_names
        inner = None if flat else inner
        self.flat = inner is None and not self.reduction
        self.inner = self.xnumel if inner is None else inner
        self.div_names: set[str] = set()   # index variables used under a division or modulo
        self.phase = 0
        self.tainted: set = set()
        self.red_cache: dict = {}
        self.nacc = 0
        self.recompute: dict = {}
        self.lines: list[tuple] = []
        self.cse: dict = {}
        self.rdep_names = {"rindex"}
        self.x1_names: set[str] = set()  # temporaries that vary along a row (pointwise kernels)
        self.in_args: dict[str, str] = {}
        self.out_args: dict[str, str] = {}
        self.arg_types: dict[str, torch.dtype] = {}
        self.store_cache: dict = {}
        self.stored: dict[str, set] = {}
        self.loaded: dict[str, set] = {}
        self.mask_stack: list[str] = []
        self.ntmp = 0
        self.can_fail = False
        # row buffers (static rows up to ROW_CACHE_MAX): values of an earlier phase's loop reused later
        self.row_cache_ok = self.reduction and isinstance(self.rnumel, int) and self.rnumel <= ROW_CACHE_MAX
        self.canon: dict[str, str] = {}
        self.canon_key: dict[str, tuple] = {}
        self.prev_rdep: dict[tuple, tuple] = {}
        self.row_cached: set = set()
        self.ops = CppOps(self)

    # ---- emission (phases as in TritonKernel's looped mode)
    def newvar(self, expr: str, dtype, rdep=None, prefix="tmp") -> CppVar:
        key = (expr, dtype)
        if key in self.cse:
            return self.cse[key]
        if rdep is None:
            rdep = self.expr_rdep(expr)
        name = f"{prefix}{self.ntmp}"
        self.ntmp += 1
        if any(h in expr for h in _ERROR_HELPERS):
            self.can_fail = True
        # the same value computed in an earlier phase's loop (names mapped back to that phase's)
        canon = (_NAME.sub(lambda m: self.canon.get(m.group(0), m.group(0)), expr), dtype)
        old = self.prev_rdep.get(canon) if rdep else None
        if old is not None and self.row_cache_ok and _EXPENSIVE.search(expr):
            # expensive (a libm call): kept in a row buffer by the earlier loop instead of recomputed
            var, phase = old
            buf = f"row_{var.name}"
            if var.name not in self.row_cached:
                self.row_cached.add(var.name)
                self.lines.append(((phase, 0), f"{ctype(dtype)} {buf}[{self.rnumel}];"))
                self.lines.append(((phase, 1), f"{buf}[rindex] = {var.name};"))
            self.emit(f"const {ctype(dtype)} {name} = {buf}[rindex];", True, name)
        else:
            self.emit(f"const {ctype(dtype)} {name} = {expr};", rdep, name)
        if old is not None:
            self.canon[name] = old[0].name
        self.canon_key[name] = canon
        v = CppVar(name, dtype, rdep)
        if rdep:
            self.rdep_names.add(name)
        if not self.reduction and set(_TOKEN.findall(expr)) & (self.x1_names | {"x1", "xindex"}):
            self.x1_names.add(name)
        self.cse[key] = v
        return v

    def emit(self, line, rdep, name=None, section=None):
        if not self.reduction:
            self.lines.append(((0, 1), line))
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
        for v in self.cse.values():
            if v.rdep and v.name in self.canon_key:
                self.prev_rdep.setdefault(self.canon_key[v.name], (v, self.phase))
        self.phase += 1
        self.tainted = set()
        self.cse = {k: v for k, v in self.cse.items() if not v.rdep}
        self.store_cache = {k: v for k, v in self.store_cache.items() if not v.rdep}
        self.red_cache = {}

    def expr_rdep(self, expr) -> bool:
        return any(tok in self.rdep_names for tok in re.findall(r"[A-Za-z_]\w*", str(expr)))

    def ptr(self, name, table, prefix, dtype):
        if name not in table:
            table[name] = f"{prefix}{len(table)}"
            self.arg_types[table[name]] = dtype
        return table[name]

    # ---- memory
    def load(self, name, index, dtype):
        index = sympy.sympify(index)
        key = (name, index)
        if key in self.store_cache:
            return self.store_cache[key]
        if key in self.recompute:
            data, idx, dt = self.recompute[key]
            v = self.ops.to_dtype(data.inner_fn(self.ops, idx), dt)
            self.store_cache[key] = v
            return v
        if name in self.stored:
            raise FusionIllegal(f"{name} is read at {index} but written at {self.stored[name]} in one kernel")
        self.loaded.setdefault(name, set()).add(index)
        ptr = self.ptr(name, self.in_args, "in_ptr", dtype)
        val = self.load_code(ptr, index, dtype)
        rdep = self.expr_rdep(index) or any(m in self.rdep_names for m in self.mask_stack)
        split = self._row_split(name, index) if self.mask_stack else None
        # (a read in bounds in every row, a per-channel parameter under a pad's mask, needs no mask)
        if self.mask_stack and (split is None or not split[1].is_Integer):
            mask = " && ".join(self.mask_stack)
            if split is not None and all(self.row_invariant(m) for m in self.mask_stack):
                # a mask that holds for whole rows: read this row, or the first one when masked off (a
                # contiguous load, where a conditional one does not vectorize), then select
                safe = f"{cexpr(split[0], self.div_names)} + (({mask}) ? {cexpr(split[1], self.div_names)} : 0)"
                val = self.newvar(self.load_code(ptr, safe, dtype), dtype, rdep=rdep).name
                val = f"bg_sel<{ctype(dtype)}>({mask}, {val}, {_const(0, dtype)})"
            else:
                val = f"({mask}) ? {val} : {_const(0, dtype)}"
        return self.newvar(val, dtype, rdep=rdep)

    def _row_split(self, name, index):
        """(a * x1, rest) of a load's index `a * x1 + rest` (rest free of `x1`) when the row part stays
        inside the buffer for every row position and, if `rest` is a number, the whole index does
        (masked-off lanes may then read: their values are discarded); else None."""
        if self.flat or self.reduction or not isinstance(self.inner, int) or name not in self.extents:
            return None
        x1 = index_var("x1")
        a = sympy.expand(index).coeff(x1)
        rest = sympy.expand(index - a * x1)
        if not a.is_Integer or a < 0 or x1 in rest.free_symbols:
            return None
        last = a * (self.inner - 1) + (rest if rest.is_Integer else 0)
        if (rest.is_Integer and rest < 0) or last >= self.extents[name]:
            return None
        return a * x1, rest

    def row_invariant(self, var) -> bool:
        """Is `var` the same for every position of a row (a pointwise kernel's `x0`-only value)?"""
        return not (self.flat or self.reduction) and str(var) not in self.x1_names

    def store(self, name, index, value: CppVar, dtype, mutation=False):
        index = sympy.sympify(index)
        if mutation and any(i != index for i in self.loaded.get(name, ())):
            raise FusionIllegal(f"{name} is mutated at {index} but read elsewhere in the kernel")
        self.store_cache[(name, index)] = value
        self.stored.setdefault(name, set()).add(index)
        if self.store_names is not None and name not in self.store_names:
            return
        ptr = self.ptr(name, self.out_args, "out_ptr", dtype)
        self.emit(self.store_code(ptr, index, value.name, dtype), value.rdep or self.expr_rdep(index))

    # element access (the Metal printer subclasses these: its half types are native)
    def load_code(self, ptr, index, dtype) -> str:
        val = f"{ptr}[{index if isinstance(index, str) else cexpr(index, self.div_names)}]"
        if dtype == torch.float16:
            return f"bg_h2f({val})"
        if dtype == torch.bfloat16:
            return f"bg_bf2f({val})"
        return val

    def store_code(self, ptr, index, val, dtype) -> str:
        if dtype == torch.float16:
            val = f"bg_f2h({val})"
        elif dtype == torch.bfloat16:
            val = f"bg_f2bf({val})"
        return f"{ptr}[{cexpr(index, self.div_names)}] = {val};"

    # ---- nodes
    def pointwise_index(self, ranges):
        order = self.order if self.order is not None and len(self.order) == len(ranges) else range(len(ranges))
        loop = [ranges[d] for d in order]
        if self.flat:
            idx = unflatten_index("xindex", loop)
        else:
            k = _suffixes(loop)[self.inner]
            idx = unflatten_index("x0", loop[:k]) + unflatten_index("x1", loop[k:])
        out = [None] * len(ranges)
        for d, i in zip(order, idx):
            out[d] = i
        return out

    def _snapshot(self):
        return (len(self.lines), dict(self.cse), set(self.rdep_names), dict(self.in_args), dict(self.out_args),
                dict(self.arg_types), dict(self.store_cache), {k: set(v) for k, v in self.stored.items()},
                {k: set(v) for k, v in self.loaded.items()}, self.ntmp, self.phase, set(self.tainted),
                dict(self.red_cache), self.nacc, dict(self.recompute), self.can_fail, list(self.lines),
                dict(self.canon), dict(self.canon_key), dict(self.prev_rdep), set(self.row_cached))

    def _restore(self, snap):
        (_, self.cse, self.rdep_names, self.in_args, self.out_args, self.arg_types, self.store_cache,
         self.stored, self.loaded, self.ntmp, self.phase, self.tainted, self.red_cache, self.nacc,
         self.recompute, self.can_fail, self.lines, self.canon, self.canon_key, self.prev_rdep,
         self.row_cached) = snap

    def render(self, node: ComputedBuffer):
        if not self.reduction:
            return self._render(node)
        snap = self._snapshot()
        try:
            return self._render(node)
        except _NewPhase:
            self._restore(snap)
            self.new_phase()
            return self._render(node)

    def _render(self, node: ComputedBuffer):
        data = node.data
        target = node.mutates or node.name
        mutation = node.mutates is not None
        odt = node.get_dtype()
        if isinstance(data, Reduction):
            if not self.reduction or prod(data.ranges) != self.xnumel or prod(data.reduction_ranges) != self.rnumel:
                raise FusionIllegal("reduction tile mismatch")
            idx = unflatten_index("xindex", list(data.ranges))
            ridx = unflatten_index("rindex", list(data.reduction_ranges))
            value = data.inner_fn(self.ops, idx, ridx)
            self.store(target, node.layout.index(idx), self.reduce(data, value), odt, mutation=mutation)
            return
        if not self.reduction:
            if prod(data.ranges) != self.xnumel:
                raise FusionIllegal("numel mismatch")
            idx = self.pointwise_index(data.ranges)
            result = self.ops.to_dtype(data.inner_fn(self.ops, idx), odt)
            self.store(target, node.layout.index(idx), result, odt, mutation=mutation)
            return
        split = self.group.splits.get(node.name)
        if split is None:
            splits = tile_splits(data.ranges, self.xnumel, self.rnumel)
            if not splits:
                raise FusionIllegal("ranges do not fit the tile")
            split = splits[0]
        idx = tile_index(data.ranges, split)
        result = self.ops.to_dtype(data.inner_fn(self.ops, idx), odt)
        self.store(target, node.layout.index(idx), result, odt, mutation=mutation)
        if not mutation and result.rdep:
            self.recompute[(target, node.layout.index(idx))] = (data, idx, odt)

    # ---- reductions: LANES-wide accumulators per phase
    def reduce(self, data: Reduction, value: CppVar) -> CppVar:
        rt, odt, src = data.reduction_type, data.dtype, value.dtype
        if rt in ("sum", "prod", "mean", "var_unnormalized", "welford_mean"):
            acc = torch.float32 if odt in (torch.float16, torch.bfloat16) else odt
        elif rt in ("max", "min", "argmax", "argmin"):
            acc = torch.float32 if src in (torch.float16, torch.bfloat16) else src
        else:
            acc = torch.bool
        kind = {"mean": "sum", "var_unnormalized": "welford", "welford_mean": "welford"}.get(rt, rt)
        v = self.ops.to_dtype(value, acc)
        if v.name in self.tainted:
            raise _NewPhase()
        key = (kind, v.name)
        if key not in self.red_cache:
            self.red_cache[key] = self._accumulate(kind, acc, v)
        res = self.red_cache[key]
        if kind == "welford":
            name, dt = f"{res}_{'m2' if rt == 'var_unnormalized' else 'mean'}", acc
        elif kind in ("argmax", "argmin"):
            name, dt = f"{res}_idx", torch.int64
        else:
            name, dt = res, acc
        return self.ops.to_dtype(CppVar(name, dt, False), odt)

    def _accumulate(self, kind, acc, v) -> str:
        a = f"acc{self.nacc}"
        self.nacc += 1
        T = ctype(acc)
        L = LANES

        def pre(ln):
            self.emit(ln, False, section=0)

        def loop(ln):
            self.emit(ln, True, section=1)

        def post(ln):
            self.emit(ln, False, section=2)

        res = f"red{self.ntmp}"
        self.ntmp += 1
        ident = _lane_identity(kind, acc)
        if kind == "welford":
            for part in ("mean", "m2"):
                pre(f"{T} {a}_{part}[{L}]; for (int l = 0; l < {L}; l++) {a}_{part}[l] = {T}(0);")
            loop(f"bg_welford({a}_mean[l], {a}_m2[l], {v}, r0 / {L} + 1);")
            # lane l took rnumel / L elements, plus one of the tail if l < rnumel % L
            post(f"{T} {a}_w[{L}]; for (int l = 0; l < {L}; l++) {a}_w[l] = {T}(rnumel / {L} + (l < rnumel % {L}));")
            post(_TREE.format(L=L, comb=f"bg_welford_merge({a}_mean[l], {a}_m2[l], {a}_w[l], {a}_mean[l + s], "
                                       f"{a}_m2[l + s], {a}_w[l + s])"))
            post(f"const {T} {res}_mean = {a}_mean[0], {res}_m2 = {a}_m2[0];")
            self.tainted.update({f"{res}_mean", f"{res}_m2"})
        elif kind in ("argmax", "argmin"):
            m = "true" if kind == "argmax" else "false"
            pre(f"{T} {a}[{L}]; int64_t {a}_idx[{L}]; for (int l = 0; l < {L}; l++) "
                f"{{ {a}[l] = {ident}; {a}_idx[l] = INT64_MAX; }}")
            loop(f"bg_arg<{m}>({a}[l], {a}_idx[l], {v}, rindex);")
            post(_TREE.format(L=L, comb=f"bg_arg<{m}>({a}[l], {a}_idx[l], {a}[l + s], {a}_idx[l + s])"))
            post(f"const {T} {res} = {a}[0]; const int64_t {res}_idx = {a}_idx[0];")
            self.tainted.update({res, f"{res}_idx"})
        elif kind in ("max", "min") and _f(acc):
            # a NaN is kept apart (in a lane array of the same type), so the lane loop is a plain
            # max/min and vectorizes
            cmp = ">" if kind == "max" else "<"
            pre(f"{T} {a}[{L}], {a}_nan[{L}]; for (int l = 0; l < {L}; l++) {{ {a}[l] = {ident}; "
                f"{a}_nan[l] = {T}(0); }}")
            loop(f"{a}[l] = {v} {cmp} {a}[l] ? {v} : {a}[l]; {a}_nan[l] = {v} != {v} ? {v} : {a}_nan[l];")
            post(_TREE.format(L=L, comb=f"{{ {a}[l] = {a}[l + s] {cmp} {a}[l] ? {a}[l + s] : {a}[l]; "
                                       f"{a}_nan[l] = {a}_nan[l + s] != {a}_nan[l + s] ? {a}_nan[l + s] : "
                                       f"{a}_nan[l]; }}"))
            post(f"const {T} {res} = {a}_nan[0] != {a}_nan[0] ? {a}_nan[0] : {a}[0];")
            self.tainted.add(res)
        else:
            comb = {"sum": "{0} + {1}", "prod": "{0} * {1}", "any": "{0} || {1}", "all": "{0} && {1}",
                    "max": "bg_max({0}, {1})" if _f(acc) else "std::max<{T}>({0}, {1})",
                    "min": "bg_min({0}, {1})" if _f(acc) else "std::min<{T}>({0}, {1})"}[kind]
            if acc == torch.bool and kind in ("max", "min"):
                comb = "{0} || {1}" if kind == "max" else "{0} && {1}"
            comb = comb.replace("{T}", T)
            pre(f"{T} {a}[{L}]; for (int l = 0; l < {L}; l++) {a}[l] = {ident};")
            loop(f"{a}[l] = {comb.format(f'{a}[l]', v)};")
            post(_TREE.format(L=L, comb=f"{a}[l] = {comb.format(f'{a}[l]', f'{a}[l + s]')}"))
            post(f"const {T} {res} = {a}[0];")
            self.tainted.add(res)
        return res

    # ---- source
    def used_symbols(self) -> list[str]:
        if not self.symbols:
            return []
        tokens = set()
        for _, ln in self.lines:
            tokens.update(re.findall(r"[A-Za-z_]\w*", ln))
        for e in (self.xnumel, self.rnumel, self.inner):
            tokens.update(re.findall(r"[A-Za-z_]\w*", texpr(e)))
        return sorted(tokens & self.symbols, key=lambda s: (len(s), s))

    def signature(self):
        params = [f"const {STORAGE_TYPES[self.arg_types[p]]}* {p}" for p in self.in_args.values()]
        params += [f"{STORAGE_TYPES[self.arg_types[p]]}* {p}" for p in self.out_args.values()]
        params += [f"int64_t {s}" for s in self.used_symbols()]
        return ", ".join(params)

    def source(self, name) -> str:
        body = self._reduction_body() if self.reduction else self._pointwise_body()
        err = ["bg_err = 0;"] if self.can_fail else []
        ret = "return bg_err;" if self.can_fail else "return 0;"
        lines = [f'extern "C" int {name}({self.signature()}) {{', *("    " + ln for ln in err + body),
                 f"    {ret}", "}"]
        return "\n".join(lines) + "\n"

    def _pointwise_body(self):
        prologue, body = self._hoist([ln for _, ln in self.lines])
        # values the same along a row (a pad's mask of the row, per-row loads) are computed once per row,
        # outside the loop the compiler vectorizes
        per_row = [] if self.flat else [ln for ln in body if (m := _DEF.match(ln)) and m.group(2) not in self.x1_names]
        rows = set(per_row)
        body = [ln for ln in body if ln not in rows]
        static = not self.flat and isinstance(self.inner, int)
        out = [f"const int64_t xnumel = {cexpr(self.xnumel)};",
               "if (xnumel <= 0) return 0;",
               f"const int64_t inner = {'xnumel' if self.flat else cexpr(self.inner)};",
               f"#pragma omp parallel if (xnumel >= {PARALLEL_MIN})",
               "{"]
        out += ["    " + ln for ln in prologue]
        if static and self.inner <= ROW_SPLIT_MAX:
            # whole rows per thread: the inner loop's trip count is a constant the compiler unrolls
            out += ["    #pragma omp for schedule(static)",
                    "    for (int64_t x0 = 0; x0 < xnumel / inner; x0++) {",
                    *("        " + ln for ln in per_row),
                    "        #pragma omp simd",
                    "        for (int64_t x1 = 0; x1 < inner; x1++) {"]
        else:
            iv = "xindex" if self.flat else "x1"
            out += ["    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();",
                    "    const int64_t chunk = (((xnumel + nt - 1) / nt) + 63) & ~INT64_C(63);",
                    "    const int64_t lo = std::min(tid * chunk, xnumel), hi = std::min(lo + chunk, xnumel);",
                    "    for (int64_t x0 = lo / inner; x0 * inner < hi; x0++) {",
                    "        const int64_t x1lo = std::max<int64_t>(lo - x0 * inner, 0);",
                    "        const int64_t x1hi = std::min<int64_t>(hi - x0 * inner, inner);",
                    *("        " + ln for ln in per_row),
                    "        #pragma omp simd",
                    f"        for (int64_t {iv} = x1lo; {iv} < x1hi; {iv}++) {{"]
        out += ["            " + ln for ln in body]
        out += ["        }", "    }", "}"]
        return out

    def _hoist(self, lines):
        """(prologue, body): values that depend on the row position `x1` but not on the row `x0` (batch
        norm's `1 / sqrt(var + eps)` per channel), when one is expensive, are computed once per thread
        into arrays of `inner` elements before the rows loop; the body reads them back. Lines that read
        what the kernel writes, or may raise, stay in the body."""
        if self.flat or self.reduction or not isinstance(self.inner, int) or self.xnumel == self.inner:
            return [], lines
        written = set(self.out_args.values()) | {self.in_args[n] for n in self.stored if n in self.in_args}
        stay, hoisted, defs = {"x0"} | written, set(), {}
        for ln in lines:
            m = _DEF.match(ln)
            if m is None:
                continue
            ctype_, name, expr = m.groups()
            defs[name] = (ctype_, ln, set(_TOKEN.findall(expr)))
            toks = defs[name][2]
            if toks & stay or any(h in expr for h in _ERROR_HELPERS):
                stay.add(name)
            elif toks & ({"x1"} | hoisted):
                hoisted.add(name)
        if not any(_COSTLY.search(defs[n][1].split("=", 1)[1]) for n in hoisted):
            return [], lines
        body = [ln for ln in lines if (m := _DEF.match(ln)) is None or m.group(2) not in hoisted]
        used = set(_TOKEN.findall(" ".join(body)))
        arrays = [n for n in defs if n in hoisted and n in used]
        if self.inner * sum(_CSIZE.get(defs[n][0], 8) for n in arrays) > HOIST_BYTES:
            return [], lines
        needed = set(hoisted)  # and the constants they read, in the lines' order
        for n in reversed(list(defs)):
            if n in needed:
                needed |= defs[n][2] & defs.keys()
        prologue = [f"{defs[n][0]} h_{n}[{self.inner}];" for n in arrays]
        prologue += ["#pragma omp simd", "for (int64_t x1 = 0; x1 < inner; x1++) {"]
        prologue += ["    " + defs[n][1] for n in defs if n in needed]
        prologue += [f"    h_{n}[x1] = {n};" for n in arrays] + ["}"]
        body = [f"const {defs[n][0]} {n} = h_{n}[x1];" for n in arrays] + body
        return prologue, body

    def _reduction_body(self):
        out = [f"const int64_t xnumel = {cexpr(self.xnumel)};",
               f"const int64_t rnumel = {cexpr(self.rnumel)};",
               "if (xnumel <= 0) return 0;",
               f"#pragma omp parallel for if (xnumel * rnumel >= {PARALLEL_MIN}) schedule(static)",
               "for (int64_t xindex = 0; xindex < xnumel; xindex++) {"]
        by_phase: dict = {}
        for (phase, sec), ln in self.lines:
            by_phase.setdefault(phase, {0: [], 1: [], 2: []})[sec].append(ln)
        for phase in sorted(by_phase):
            secs = by_phase[phase]
            out += ["    " + ln for ln in secs[0]]
            if secs[1]:
                body = ["const int64_t rindex = r0 + l;", *secs[1]]
                out += ["    {", "        int64_t r0 = 0;",
                        f"        for (; r0 + {LANES} <= rnumel; r0 += {LANES}) {{",
                        "            #pragma omp simd",
                        f"            for (int l = 0; l < {LANES}; l++) {{",
                        *("                " + ln for ln in body), "            }", "        }",
                        "        for (int l = 0; r0 + l < rnumel; l++) {",
                        *("            " + ln for ln in body), "        }", "    }"]
            out += ["    " + ln for ln in secs[2]]
        out.append("}")
        return out


def _suffixes(ranges) -> dict:
    """{product of ranges[k:]: k} for the trailing dimensions of an iteration space (k >= 0)."""
    out = {}
    for k in range(len(ranges) - 1, -1, -1):
        out.setdefault(prod(ranges[k:]), k)
    return out


def loop_order(group):
    """The dimensions of a pointwise group's iteration space from outermost to innermost in the memory
    of the first output that is a permuted dense layout (channels-last: N, H, W, C), so its kernel
    writes contiguously; None (the logical order) when there is none or the nodes' spaces differ."""
    ranges = list(group.nodes[0].data.ranges)
    if any(list(n.data.ranges) != ranges for n in group.nodes):
        return None
    for n in group.nodes:
        size, stride = n.layout.size, n.layout.stride
        if len(size) != len(ranges) or not all(isinstance(v, int) for v in (*size, *stride)):
            continue
        order = sorted(range(len(size)), key=lambda d: (-stride[d], d))
        if order != sorted(order) and all(size[d] == 1 or stride[d] == prod([size[e] for e in order[i + 1:]])
                                          for i, d in enumerate(order)):
            return order
    return None


SHORT_ROW = 16  # rows shorter than this (one vector) vectorize poorly: another loop order may do better


def _extent(layout) -> int | None:
    """Elements from the start of storage a static layout addresses (None: symbolic or empty)."""
    dims = (*layout.size, *layout.stride, layout.offset)
    if not all(isinstance(v, int) for v in dims) or 0 in layout.size:
        return None
    return layout.offset + sum((n - 1) * st for n, st in zip(layout.size, layout.stride)) + 1


def render_group(group, store_names, symbols, extents=None) -> CppKernel:
    """A rendered kernel for `group`. A pointwise group iterates in the memory order of its output
    (`loop_order`), unless that gives rows shorter than a vector and the logical order longer ones (a
    3-channel image converted to channels-last: rows of 3 written, or of a whole image row read);
    its rows (`inner`) are the most trailing dimensions of that order every node shares whose indices
    need no division by the row position `x1` (merged dimensions of contiguous tensors fold back into
    `x1`); failing that, the last dimension; failing that (a fused read spelled differently from its
    write), one flat index."""
    if group.reduction:
        return _render_in(group, store_names, symbols, None)
    order = loop_order(group)
    k = _render_in(group, store_names, symbols, order, extents)
    if order is not None and not k.flat and isinstance(k.inner, int) and k.inner < SHORT_ROW:
        logical = _render_in(group, store_names, symbols, None, extents)
        if not logical.flat and isinstance(logical.inner, int) and logical.inner > k.inner:
            return logical
    if order is None and len(group.nodes[0].data.ranges) == 4 and all(
            list(n.data.ranges) == list(group.nodes[0].data.ranges) for n in group.nodes):
        # a contiguous result of channels-last reads (pooling's windows, then the graph's output): rows
        # of channels when that makes more of the kernel's accesses contiguous than rows of width
        cl = _render_in(group, store_names, symbols, [0, 2, 3, 1], extents)
        if not cl.flat and _contiguous_accesses(cl) > _contiguous_accesses(k):
            return cl
    return k


def _contiguous_accesses(k) -> int:
    """How many of a pointwise kernel's distinct loads and stores that move from row to row (not a
    per-channel vector's) step by one element along a row."""
    x0, x1 = index_var("x0"), index_var("x1")
    return sum(x0 in i.free_symbols and sympy.expand(i).coeff(x1) == 1
               for idx in (*k.loaded.values(), *k.stored.values()) for i in idx)


def _render_in(group, store_names, symbols, order, extents=None) -> CppKernel:
    """`group` rendered iterating its dimensions in `order` (None: the logical order)."""
    def render(inner):
        k = CppKernel(group, store_names, symbols, inner, order=order, extents=extents)
        for node in group.nodes:
            k.render(node)
        return k

    def render_flat():
        try:
            return render(None)
        except FusionIllegal as e:  # the scheduler decided from the IR: a disagreement is a printer defect
            raise CppUnsupported(f"group {group.describe()}: {e}") from None
    if group.reduction:
        return render_flat()

    def loop(ranges):
        return [ranges[d] for d in order] if order is not None else list(ranges)
    common = None
    for n in group.nodes:
        sfx = [p for p in _suffixes(loop(n.data.ranges)) if p != 1]
        common = sfx if common is None else [p for p in common if p in sfx]
    fallback = None
    for inner in sorted(common or [], key=lambda p: _suffixes(loop(group.nodes[0].data.ranges))[p]):
        try:
            k = render(inner)
        except FusionIllegal:
            continue
        if "x1" not in k.div_names:
            return k
        fallback = k
    return fallback if fallback is not None else render_flat()


class CppOps:
    """The `ops` handler loop bodies call while a C++ kernel is rendered."""

    templates = TEMPLATES  # per-op source (the Metal printer's table is derived from this one)

    def __init__(self, kernel: CppKernel):
        self.k = kernel

    def load(self, name, index, dtype):
        return self.k.load(name, index, dtype)

    def constant(self, value, dtype):
        return self.k.newvar(_const(value, dtype), dtype, rdep=False)

    def index_expr(self, expr, dtype):
        expr = sympy.sympify(expr)
        if expr.is_number or expr in (sympy.true, sympy.false):
            return self.constant(bool(expr) if dtype == torch.bool else expr, dtype)
        return self.k.newvar(f"static_cast<{ctype(dtype)}>({cexpr(expr, self.k.div_names)})", dtype)

    def indirect_indexing(self, var: CppVar, size, runtime_error=False):
        # named idxN: the index translator knows it is non-negative
        code = index_error_code(runtime_error)
        return index_var(self.k.newvar(f"bg_index(static_cast<int64_t>({var}), {cexpr(size)}, {code})", torch.int64,
                                       rdep=var.rdep, prefix="idx").name)

    def to_dtype(self, var: CppVar, dtype):
        if var.dtype == dtype:
            return var
        T = ctype(dtype)
        if dtype == torch.bool:
            return self.k.newvar(f"({var} != 0)", dtype, rdep=var.rdep)
        if dtype == torch.float16:
            return self.k.newvar(f"bg_h2f(bg_f2h(static_cast<float>({var})))", dtype, rdep=var.rdep)
        if dtype == torch.bfloat16:
            return self.k.newvar(f"bg_bf2f(bg_f2bf(static_cast<float>({var})))", dtype, rdep=var.rdep)
        if var.dtype in (torch.float16, torch.bfloat16) and dtype == torch.float32:
            return CppVar(var.name, dtype, var.rdep)  # already held as float
        return self.k.newvar(f"static_cast<{T}>({var})", dtype, rdep=var.rdep)

    def call(self, name, *args):
        tmpl = self.templates.get(name)
        if tmpl is None:
            raise CppUnsupported(f"op {name}")
        if name == "truediv" and _f(args[0].dtype) and args[0].rdep and not args[1].rdep and self.k.reduction:
            # a row-invariant divisor (softmax's sum): one reciprocal per row, a multiply per element
            # (within an ulp of the division, as eager's own softmax computes it)
            return self.call("mul", args[0], self.call("reciprocal", args[1]))
        dtypes = [a.dtype for a in args]
        if callable(tmpl):
            tmpl = tmpl(dtypes if name != "where" else dtypes[1:])
        if name in _BOOL_OPS:
            dtype = torch.bool
        elif name == "where":
            dtype = args[1].dtype
            if self.k.row_invariant(args[0]) and self.templates is TEMPLATES:
                tmpl = "bg_sel<{T}>({0}, {1}, {2})"
        else:
            dtype = args[0].dtype
        expr = tmpl.replace("{T}", ctype(dtype)).format(*[a.name for a in args])
        return self.k.newvar(expr, dtype, rdep=any(a.rdep for a in args))

    def masked(self, cond: CppVar, body, other):
        self.k.mask_stack.append(cond.name)
        try:
            v = body()
        finally:
            self.k.mask_stack.pop()
        o = self.constant(other, v.dtype)
        if self.k.row_invariant(cond) and self.templates is TEMPLATES:
            return self.k.newvar(f"bg_sel<{ctype(v.dtype)}>({cond}, {v}, {o})", v.dtype, rdep=v.rdep or cond.rdep)
        return self.k.newvar(f"({cond} ? {v} : {o})", v.dtype, rdep=v.rdep or cond.rdep)


# --------------------------------------------------------------------------- wrapper
# extern ops whose result is always new storage (never a view of an argument): a kernel may write in place of it
_FRESH = {torch.ops.aten.addmm, torch.ops.aten.mm, torch.ops.aten.bmm, torch.ops.aten.baddbmm,
          torch.ops.aten.convolution}


class CppWrapperCodegen(WrapperCodegen):
    """The Python wrapper of the C++ kernels: allocation, extern calls and buffer reuse as for Triton;
    each kernel launch is one ctypes call with data pointers and size arguments."""

    codegen = "cpp"

    def __init__(self, graph, groups, store_names):
        super().__init__(graph, groups, store_names)
        self.cpp_defs: list[str] = []
        self.signatures: dict[str, tuple[int, int]] = {}
        self.buffers = {b.name: b for b in graph.buffers}
        self.extents = {b.name: _extent(b.layout) for b in [*graph.buffers, *filter(None, graph.inputs)]
                        if b.layout is not None and _extent(b.layout) is not None}
        self._rendered = None  # the kernel `_alloc_outputs` rendered for the group `_kernel` launches next

    def header(self, kernels: str = "") -> str:
        cpp = HEADER + "\n" + "\n".join(self.cpp_defs)
        loads = [f"{k} = cpp_build.kernel(_lib, {k!r}, {p}, {i})" for k, (p, i) in self.signatures.items()]
        return (HEADER_PY + "from bytegraph.backends.inductor import cpp_build\n\n"
                + f"CPP_SOURCE = r'''\n{cpp}'''\n_lib = cpp_build.load(CPP_SOURCE)\n" + "\n".join(loads) + "\n\n")

    def _alloc_outputs(self, gi, group, free, last_use, output_names):
        """A pointwise kernel writes an output in place of an input that dies with it when the two have
        one layout and the input is read only at the index the output is written (element by element,
        so no iteration reads what another wrote)."""
        k = self._rendered = render_group(group, self.store_names, self.symbols, self.extents)
        taken = set()
        for node in group.nodes:
            if node.mutates or node.name not in self.store_names:
                continue
            donor = None if group.reduction else self._inplace_donor(k, node, gi, last_use, output_names, taken)
            if donor is None:
                self._alloc(node, free)
                continue
            taken.add(donor)
            self.allocated.discard(donor)  # its storage now belongs to `node`
            self.allocated.add(node.name)
            self.lines.append(f"    {node.name} = {donor}  # in place")

    def _inplace_donor(self, k, node, gi, last_use, output_names, taken):
        written = {cexpr(i) for i in k.stored.get(node.name, ())}
        if len(written) != 1:
            return None
        # every read of the donor must come before the first write of the output
        lines = [ln for _, ln in k.lines]
        first_write = min(i for i, ln in enumerate(lines) if ln.startswith(f"{k.out_args[node.name]}["))
        for name, read_at in k.loaded.items():
            lu = last_use.get(name)
            if name in taken or name in output_names or lu is None or lu[0] != gi or \
                    {cexpr(i) for i in read_at} != written:
                continue
            if any(f"{k.in_args[name]}[" in ln for ln in lines[first_write:]):
                continue
            buf = self.buffers.get(name)
            fresh = name in self.allocated or getattr(getattr(buf, "op", None), "overloadpacket", None) in _FRESH
            if fresh and buf.layout is not None and self._alloc_key(buf) == self._alloc_key(node):
                return name
        return None

    def _kernel(self, group):
        k = self._rendered
        if k is None or k.group is not group:
            k = render_group(group, self.store_names, self.symbols, self.extents)
        self._rendered = None
        body = k.source("KERNEL")
        if body not in self.kernels:
            kname = f"kernel{len(self.kernels)}"
            self.kernels[body] = kname
            self.cpp_defs.append(body.replace("int KERNEL(", f"int {kname}("))
            self.signatures[kname] = (len(k.in_args) + len(k.out_args), len(k.used_symbols()))
        kname = self.kernels[body]
        args = [f"{n}.data_ptr()" for n in list(k.in_args) + list(k.out_args)] + k.used_symbols()
        self.kernel_launches += 1
        comment = ", ".join(n.name for n in group.nodes)
        launch = f"{kname}({', '.join(args)})"
        if k.can_fail:
            self.lines.append(f"    _err = {launch}  # {comment}")
            self.lines.append("    if _err:")
            self.lines.append("        _raise_kernel_error(_err)")
        else:
            self.lines.append(f"    {launch}  # {comment}")


__all__ = ["CppKernel", "CppOps", "CppUnsupported", "CppWrapperCodegen", "cexpr", "render_group"]
