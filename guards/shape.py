"""Symbolic shapes: which input dims are dynamic, and the shape guards that protect a graph traced
with symbolic sizes.

Compile time only; the rendered guard expressions run inside the generated check function.

- `ShapePolicy` decides, per input tensor, which dims get a symbol: every dim (`dynamic=True` /
  `BYTEGRAPH_DYNAMIC_SHAPES=1`), none (`dynamic=False`), or the dims marked with
  `bytegraph.mark_dynamic` plus those that automatic dynamic saw change (`dynamic=None`).
  Parameters and buffers of nn.Modules stay static unless marked. Dims pinned with
  `bytegraph.mark_static` are static under every policy.
- `AutomaticDynamic` remembers, per code object and input source, the dims whose size changed
  between compiles, and the Python int/float inputs whose value changed (filled in by
  convert_frame when a miss is explained only by sizes and such values).
- Unspecialized scalars (`ShapePolicy.dynamic_scalar`), following torch.compile: a Python `int` or
  `float` (never `bool`) read from the frame is a constant guarded with CONSTANT_MATCH until a miss
  shows its value changing; then the recompile makes it a graph input -- an int a SymInt, a float a
  SymFloat, each a ShapeEnv symbol of its own (`DimDynamic.DYNAMIC`: no duck sizing, no 0/1
  specialization, any sign -- torch's `create_unspecified_symbol`). The transformed code passes the
  real number from its source, so the graph computes with exactly the value eager would, and the
  guards check only its type plus whatever tracing assumed about it (`L['n'] == 3` after a branch
  that needed the value, `L['lr'] > 0.1`...). With `dynamic=True` they are symbolic from the first
  compile, as torch's `assume_static_by_default=False` does; with `dynamic=False` never. As in
  torch, ints are only unspecialized when read from the frame's locals or closure cells (not from
  globals or nn.Module attributes); floats from any source; nan/inf stay constants.
- `shape_guards` turns what torch's `ShapeEnv` assumed while tracing (duck-sized equalities,
  the 0/1 specialization ranges, every guard on a symbolic value) into `SHAPE` guards: Python
  expressions over the input sources, printed through sympy, e.g.
  `L['x'].size(0) == L['y'].size(0)` and `2 <= L['x'].size(0)`.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import sympy
import torch
from torch._guards import GuardSource
from torch._guards import Source as TorchSource
from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
from torch.utils._sympy.printers import PythonPrinter

from ..code_keyed import CodeKeyed
from .guard import CONSTANT_MATCH, DynamicChange, Guard
from .source import ClosureSource, LocalSource, ModuleStateSource, Source, TensorPropertySource

DYNAMIC_DIMS_ATTR = "_bytegraph_dynamic_dims"
STATIC_DIMS_ATTR = "_bytegraph_static_dims"


# -- policy -----------------------------------------------------------------------------------
def tensor_dims(t: torch.Tensor, dim, api: str) -> frozenset:
    """`dim` (an int or a collection of ints) as non-negative dims of `t`."""
    dims = set()
    for d in (dim if isinstance(dim, (list, tuple, set, frozenset)) else (dim,)):
        if not isinstance(d, int) or not -t.dim() <= d < t.dim():
            raise IndexError(f"{api}: dim {d!r} out of range for a {t.dim()}-d tensor")
        dims.add(d % t.dim())
    return frozenset(dims)


def mark_dynamic(t: torch.Tensor, dim) -> None:
    """Compile `t`'s dimension(s) `dim` with a symbolic size (a size of 0 or 1 still specializes)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"mark_dynamic expects a tensor, got {type(t).__name__}")
    setattr(t, DYNAMIC_DIMS_ATTR, frozenset(getattr(t, DYNAMIC_DIMS_ATTR, ())) | tensor_dims(t, dim, "mark_dynamic"))


def marked_dims(t: torch.Tensor) -> frozenset:
    return getattr(t, DYNAMIC_DIMS_ATTR, frozenset())


def static_dims(t: torch.Tensor) -> frozenset:
    """Dims `bytegraph.mark_static` pinned: never symbolic, whatever the policy."""
    return getattr(t, STATIC_DIMS_ATTR, frozenset())


def _is_module_state(value, source: Source) -> bool:
    if isinstance(value, torch.nn.Parameter):
        return True
    s = source
    while s is not None:
        if isinstance(s, ModuleStateSource):
            return True
        s = getattr(s, "base", None)
    return False


def scalar_can_be_dynamic(value, source: Source, in_module: bool = False) -> bool:
    """Whether a Python number read through `source` may become a symbolic graph input (torch's
    rules: exact int/float, never bool; ints only from locals and closure cells, not through an
    nn.Module, and within int64 -- a SymInt's range; floats not nan/inf)."""
    if type(value) is float:
        return not (math.isnan(value) or math.isinf(value))
    if type(value) is int:
        return -2 ** 63 <= value < 2 ** 63 and not in_module and isinstance(source.root(), (LocalSource, ClosureSource))
    return False


@dataclasses.dataclass(frozen=True)
class ShapePolicy:
    """Which dims of an input tensor, and which Python numbers, are symbolic for one compile."""
    mode: bool | None = False                  # True: all dims; False: static; None: automatic
    automatic_dims: Mapping[str, frozenset] = dataclasses.field(default_factory=dict)
    automatic_scalars: frozenset = frozenset()  # source names of numbers that changed between calls
    specialize_float: bool = False              # floats always constants (config / backend)
    shaped_locals: frozenset = frozenset()      # locals whose tensors are all symbolic (resume.SHAPED_SLOT)

    def dynamic_scalar(self, value, source: Source, in_module: bool = False) -> bool:
        """Whether the int/float `value` read through `source` becomes a symbolic graph input."""
        if self.mode is False or not scalar_can_be_dynamic(value, source, in_module) or \
                (self.specialize_float and type(value) is float):
            return False
        return self.mode is True or source.name() in self.automatic_scalars

    def dynamic_dims(self, value: torch.Tensor, source: Source) -> dict:
        """{dim: DimDynamic} for the symbolic dims of `value` (empty: fully static)."""
        pinned = static_dims(value)
        marked = {d: DimDynamic.DYNAMIC for d in marked_dims(value) - pinned if d < value.dim()}
        if self.mode is False or _is_module_state(value, source):
            return marked
        root = source.root()
        if self.mode is True or isinstance(root, LocalSource) and root.local_name in self.shaped_locals:
            dims = range(value.dim())
        else:
            dims = [d for d in self.automatic_dims.get(source.name(), ()) if d < value.dim()]
        return {d: DimDynamic.DUCK for d in dims if d not in pinned} | marked

    @staticmethod
    def symbolic_context(value: torch.Tensor, dims: dict) -> StatelessSymbolicContext:
        return StatelessSymbolicContext(dynamic_sizes=[dims.get(i, DimDynamic.STATIC) for i in range(value.dim())])


class AutomaticDynamic:
    """Per code object: input source name -> dims whose size changed between calls, and the
    sources of Python numbers whose value changed."""

    def __init__(self):
        self._by_code = CodeKeyed()      # (by identity: equal code objects of two files are two frames)
        self._scalars = CodeKeyed()

    def dims_for(self, code) -> dict:
        return dict(self._by_code.get(code, {}))

    def scalars_for(self, code) -> frozenset:
        return frozenset(self._scalars.get(code, ()))

    def note_scalar(self, code, source_name: str) -> bool:
        """Record a number whose value changed; True if it was not dynamic yet."""
        names = self._scalars.setdefault(code, set())
        if source_name in names:
            return False
        names.add(source_name)
        return True

    def note(self, code, source_name: str, dims) -> bool:
        """Record changed dims; True if that made something newly dynamic."""
        table = self._by_code.setdefault(code, {})
        before = table.get(source_name, frozenset())
        table[source_name] = before | frozenset(dims)
        return table[source_name] != before

    def clear(self) -> None:
        self._by_code.clear()
        self._scalars.clear()


class _ScalarConstantMatch(type(CONSTANT_MATCH)):
    """CONSTANT_MATCH on a Python int/float that automatic dynamic may unspecialize: when only such
    guards (and sizes) fail, convert_frame recompiles with these sources symbolic. The same check
    as CONSTANT_MATCH (a guard of either kind on one source and value is one guard)."""

    def make(self, source: Source, value) -> Guard:
        return Guard(source, self, value)

    def dynamic_change(self, guard, value):
        """The value changed but is still a number of the same type (what automatic dynamic fixes), or
        it is a tensor now: both forms symbolic (see TENSOR_MATCH.dynamic_change)."""
        if type(value) is type(guard.expected) and value != guard.expected and \
                scalar_can_be_dynamic(value, guard.source):
            return DynamicChange(scalar=True)
        if type(value) is torch.Tensor and scalar_can_be_dynamic(guard.expected, guard.source):
            return DynamicChange(dims=frozenset(range(value.dim())), scalar=True)
        return None


SCALAR_CONSTANT_MATCH = _ScalarConstantMatch()
scalar_constant_guard = SCALAR_CONSTANT_MATCH.make


class ShapeEnvSource(TorchSource):
    """Our Source as torch's ShapeEnv wants it (a `torch._guards.Source` with a `name`), so its
    symbols record where they came from in its logs and errors."""

    def __init__(self, source: Source):
        self.source = source

    @property
    def name(self) -> str:
        return self.source.name()

    @property
    def guard_source(self):
        return GuardSource.LOCAL if self.source.is_local() else GuardSource.GLOBAL

    def __hash__(self):
        return hash(self.source)

    def __eq__(self, other):
        return isinstance(other, ShapeEnvSource) and other.source == self.source

    def __repr__(self):
        return f"ShapeEnvSource({self.source.name()})"


# -- shape guards -----------------------------------------------------------------------------
class ShapeGuardError(Exception):
    """A shape assumption that cannot be expressed over the frame's inputs."""


def sym_expr(value) -> sympy.Expr:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.expr
    return sympy.sympify(value)


def tensor_properties(source: Source, fake: torch.Tensor) -> list:
    """(TensorPropertySource, sympy expr) for every size, stride and the storage offset."""
    props = [(TensorPropertySource(source, "size", i), sym_expr(s)) for i, s in enumerate(fake.size())]
    props += [(TensorPropertySource(source, "stride", i), sym_expr(s)) for i, s in enumerate(fake.stride())]
    props.append((TensorPropertySource(source, "storage_offset"), sym_expr(fake.storage_offset())))
    return props


class _SourcePrinter(PythonPrinter):
    def __init__(self, names: dict):
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr):
        if expr not in self.names:
            raise ShapeGuardError(f"symbol {expr} does not come from an input")
        return self.names[expr]

    def _print_Float(self, expr):
        # sympy prints 15 significant digits; a guard on a float must compare with the exact double
        return repr(float(expr))


@dataclasses.dataclass(frozen=True)
class ShapeCheck:
    """One shape relation: readable (`L['x'].size(0)`) and fast (`L_x.size(0)`) Python text."""
    readable: str
    fast: str
    sources: tuple   # the TensorPropertySources it reads, to show their values when it fails

    def explain(self, env) -> str | None:
        try:
            if eval(self.fast, env):
                return None
        except Exception as e:  # noqa: BLE001
            return f"shape guard {self.readable} could not be evaluated: {type(e).__name__}: {e}"
        values = []
        for s in self.sources:
            try:
                values.append(f"{s.name()} = {eval(s.expr(), env)}")
            except Exception:  # noqa: BLE001
                values.append(f"{s.name()} unreadable")
        return f"shape guard failed: {self.readable} ({', '.join(values)})"


def _bound(b):
    """A finite ValueRanges bound as a Python int, or None."""
    try:
        if b.is_finite is False or b in (sympy.oo, -sympy.oo) or str(b) in ("int_oo", "-int_oo"):
            return None
        return int(b)
    except (TypeError, ValueError, AttributeError):
        return None


def shape_guards(shape_env, properties: list) -> list:
    """The SHAPE guards for a graph traced with `shape_env` over the inputs whose sizes, strides
    and offsets are `properties` ([(TensorPropertySource, sympy expr at input creation)], in
    input order; an unspecialized Python number is (its own source, its symbol)). The first place
    a symbol appears defines it; every other place, every specialization, every guard the
    ShapeEnv recorded and every symbol's range become checks."""
    definers: dict = {}
    for source, expr in properties:
        if isinstance(expr, sympy.Symbol) and expr not in definers:
            definers[expr] = source
    checks = _ShapeChecks(definers)
    for source, expr in _redefinitions(shape_env, properties, definers):
        checks.relation(expr, source)
    for expr in _assumptions(shape_env):
        checks.relation(expr)
    for check in _ranges(shape_env, definers):
        checks.add(check)
    return [Guard.shape(check) for check in checks.by_text.values()]


class _ShapeChecks:
    """The checks so far, one per fast text, printed over the sources that define the symbols."""

    def __init__(self, definers: dict):
        self.definers = definers
        self.readable = _SourcePrinter({s: src.name() for s, src in definers.items()})
        self.fast = _SourcePrinter({s: src.expr() for s, src in definers.items()})
        self.by_text: dict = {}

    def add(self, check: ShapeCheck) -> None:
        self.by_text.setdefault(check.fast, check)

    def relation(self, expr: sympy.Expr, lhs: TensorPropertySource | None = None) -> None:
        """`expr` holds (lhs None), or `lhs == expr`. Printing first: a symbol that no input
        defines is a ShapeGuardError."""
        readable, fast = self.readable.doprint(expr), self.fast.doprint(expr)
        used = tuple(self.definers[s] for s in sorted(expr.free_symbols, key=str))
        if lhs is None:
            self.add(ShapeCheck(readable, fast, tuple(dict.fromkeys(used))))
        else:
            self.add(ShapeCheck(f"{lhs.name()} == {readable}", f"{lhs.expr()} == {fast}",
                                tuple(dict.fromkeys((lhs,) + used))))


def _redefinitions(shape_env, properties: list, definers: dict):
    """Every symbolic size/stride/offset that is not the definition of its symbol, with the
    expression it must equal."""
    for source, expr in properties:
        if not expr.free_symbols:
            continue            # static: TENSOR_MATCH checks sizes and strides
        simplified = shape_env.simplify(expr)
        if definers.get(expr) == source and simplified == expr:
            continue
        yield source, simplified


def _assumptions(shape_env):
    """What tracing assumed about symbolic values."""
    for guard in shape_env.guards:
        expr = shape_env.simplify(guard.expr)
        if expr == sympy.true:
            continue
        if expr == sympy.false:
            raise ShapeGuardError(f"shape guard {guard.expr} is false after simplification")
        yield expr


def _ranges(shape_env, definers: dict):
    """The range of each integer symbol: the 0/1 specialization (sizes >= 2) and any bounds
    learned from guards."""
    for sym, source in definers.items():
        if shape_env.simplify(sym) != sym or not sym.is_integer:
            continue            # specialized or replaced: covered by the relations; floats: by the assumptions
        vr = shape_env.var_to_range.get(sym)
        if vr is None:
            continue
        lower, upper = _bound(vr.lower), _bound(vr.upper)
        if lower is not None:
            yield ShapeCheck(f"{lower} <= {source.name()}", f"{lower} <= {source.expr()}", (source,))
        if upper is not None:
            yield ShapeCheck(f"{source.name()} <= {upper}", f"{source.expr()} <= {upper}", (source,))
