"""Lowering: an fx graph -> core-aten graph (make_fx + decompositions) -> loop-level IR (compile time).

`GraphLowering.run()` walks the aten graph once. Each aten op with an entry in `LOWERINGS` becomes IR
(`Pointwise`, `Reduction`, a view); every other op becomes an `ExternKernel` that calls the aten op —
a missing lowering costs a kernel boundary, never an error. A value computed by a loop body is
*realized* (given a buffer) only when it has several users, is a graph output, feeds an extern call,
or is about to be overwritten by an input mutation.
"""
from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections.abc import Callable

import sympy
import torch
import torch.fx
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._higher_order_ops.effects import _EffectType
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from ..eager_random import eager_dropout
from . import gemm
from .ir import (
    Buffer,
    ComputedBuffer,
    ExternKernel,
    InputBuffer,
    Layout,
    Loops,
    MultiOutput,
    Pointwise,
    Reduction,
    ReinterpretView,
    TensorBox,
    contiguous_strides,
    flatten_index,
    _flatten as ir_flatten,
    cheap_to_recompute,
    free_symbols,
    is_symbolic,
    index_floordiv,
    index_mod,
    loop_reads,
    prod,
    sym,
    unflatten_index,
)

aten = torch.ops.aten
prims = torch.ops.prims


# --------------------------------------------------------------------------- tracing to core aten
@functools.lru_cache(None)
def decomposition_table():
    table = dict(core_aten_decompositions())
    table.update(get_decompositions([
        aten.native_layer_norm, aten._softmax, aten._log_softmax, aten.logsumexp, aten.std.correction,
        aten.native_group_norm, aten._native_batch_norm_legit_no_training,
        aten.native_batch_norm, aten._native_batch_norm_legit, aten._native_batch_norm_legit_functional,
        aten.linalg_vector_norm, aten.mse_loss, aten.hardswish, aten.hardsigmoid,
        aten.softplus, aten.elu, aten.mish, aten.lerp, aten.masked_fill, aten.addcmul, aten.addcdiv,
        aten.native_layer_norm_backward, aten._softmax_backward_data, aten._log_softmax_backward_data,
        aten.gelu_backward, aten.sigmoid_backward, aten.tanh_backward, aten.threshold_backward,
        aten.silu, aten.silu_backward, aten.nll_loss_forward, aten.nll_loss_backward,
    ]))
    # things we lower directly (better than their decomposition)
    # (addmm stays one extern call: BLAS adds the bias as it writes the product)
    for op in (aten.gelu.default, aten.gelu.out, aten.embedding.default, aten.var_mean.correction,
               aten.addmm.default, aten.linear.default):
        table.pop(op, None)
    # an extern call: this decomposition's output strides differ from the kernel's ([T, B, H, D] in
    # memory instead of [B, T, H, D]), which breaks a later `view` that eager allows
    table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table


def trace_to_aten(gm: torch.fx.GraphModule, example_inputs) -> torch.fx.GraphModule:
    """Functionalize (in-place ops on inputs become a final `copy_`) and decompose to core aten."""
    def run(*args):
        return gm(*args)

    # The Python functionalization mode, not `torch.func.functionalize`: the latter is a functorch
    # transform (an autograd.Function without `setup_context` refuses to run under it) and its C++
    # wrappers read sizes as ints (specializing every symbol). Symbolic example inputs (fake tensors
    # of the frontend's ShapeEnv, SymInts) are traced in that ShapeEnv so sizes stay expressions.
    shape_env = _shape_env(example_inputs)
    gm = eager_dropout(gm)
    context = contextlib.nullcontext()
    if shape_env is not None and not any(isinstance(x, torch.Tensor) for x in example_inputs):
        # numbers only (`torch.arange(n)`): make_fx would make a ShapeEnv of its own, knowing none of
        # their symbols; under a fake mode of theirs it uses their ShapeEnv
        context = FakeTensorMode(shape_env=shape_env)
    with context:
        traced = make_fx(_functionalize(run), decomposition_table=decomposition_table(),
                         tracing_mode="symbolic" if shape_env is not None else "fake")(*example_inputs)
    _unwrap_effects(traced)
    return traced


def _unwrap_effects(gm: torch.fx.GraphModule) -> None:
    """Functionalization threads a token through ops with side effects (`_linalg_check_errors`,
    `_print`): `with_effects(token, op, *args)` returns `(token, *results)`. The graph runs its extern
    calls in program order anyway, so each becomes a plain call of `op` and the tokens disappear."""
    g = gm.graph
    tokens = set()
    for node in list(g.nodes):
        if node.target is not torch.ops.higher_order.with_effects:
            continue
        token, op, *args = node.args
        tokens.add(token)
        with g.inserting_before(node):
            call = g.call_function(op, tuple(args), dict(node.kwargs))
        n_results = len(op._schema.returns)
        for user in list(node.users):   # getitem(node, k): k == 0 is the next token, k >= 1 a result
            k = user.args[1]
            if k > 0 and n_results > 1:
                user.args = (call, k - 1)
                continue
            if k == 0 or n_results == 1:   # (an op returning nothing gives a None nobody reads)
                user.replace_all_uses_with(call if k > 0 else token)
            g.erase_node(user)
        g.erase_node(node)
    for token in tokens:
        if not token.users:
            g.erase_node(token)
    gm.recompile()


def _functionalize(fn):
    """`functionalize(fn, remove="mutations")` through the Python `FunctionalTensorMode`: in-place ops
    become out-of-place ones; an input whose data was mutated gets one final `copy_`, one whose size or
    strides changed an `as_strided_` first."""

    def unwrap(t):
        torch._sync(t)
        return torch._from_functional_tensor(t.elem)

    def inner(*args):
        exclude = torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize))
        mutated = []
        mode = FunctionalTensorMode()
        mode._tokens[_EffectType.ORDERED] = torch.empty(0)  # see _unwrap_effects
        with exclude, mode:
            fargs = [FunctionalTensor.to_functional(a) if isinstance(a, torch.Tensor) else a for a in args]
            out = fn(*fargs)
            out = torch.utils._pytree.tree_map_only(FunctionalTensor, unwrap, out)
            for a, fa in zip(args, fargs):
                if isinstance(fa, FunctionalTensor):
                    torch._sync(fa)
                    data = torch._functionalize_has_data_mutation(fa.elem)
                    meta = torch._functionalize_has_metadata_mutation(fa.elem)
                    if data or meta:
                        mutated.append((a, unwrap(fa), data, meta))
        for a, new, data, meta in mutated:
            if meta:   # `x.t_()`, `x.unsqueeze_(0)`: the input takes the new size and strides
                a.as_strided_(new.size(), new.stride(), new.storage_offset())
            if data:
                a.copy_(new)
        return out
    return inner


# --------------------------------------------------------------------------- lowering registry
LOWERINGS: dict = {}


def register(*ops):
    def deco(fn):
        for op in ops:
            if isinstance(op, torch._ops.OpOverloadPacket):
                for name in op.overloads():
                    LOWERINGS[getattr(op, name)] = fn
            else:
                LOWERINGS[op] = fn
        return fn
    return deco


class Fallback(Exception):
    """Raised by a lowering that cannot handle this particular call: use an ExternKernel."""


class SymbolicUnsupported(NotImplementedError):
    """A symbolic-shape graph this backend cannot make shape-generic (e.g. a data-dependent size):
    the caller compiles one static version per size instead."""


def _half(dt):
    return torch.float32 if dt in (torch.float16, torch.bfloat16) else dt


def _meta(x):
    if isinstance(x, torch.fx.Node):
        return x.meta.get("val")
    return x


def _size(t) -> tuple:
    """Sizes of a (fake) tensor as ints and sympy expressions."""
    return tuple(sym(s) for s in t.shape)


def _stride(t) -> tuple:
    return tuple(sym(s) for s in t.stride())


def _scalar(ops, v, dtype):
    """A scalar operand of a loop body: a constant, or a symbolic size read from a kernel argument."""
    if is_symbolic(v):
        # an integer size expression, or a float one (`x.shape[1] / 2`, a SymFloat)
        kind = torch.int64 if v.is_integer else torch.float64
        return ops.to_dtype(ops.index_expr(v, kind), dtype)
    return ops.constant(v, dtype)


def broadcast_loader(x, out_size):
    """Loader of `x` broadcast (numpy rules) to `out_size`."""
    if not isinstance(x, TensorBox):
        return None
    in_size = x.get_size()
    lead = len(out_size) - len(in_size)

    def load(ops, idx):
        return x.load(ops, [0 if s == 1 else idx[lead + j] for j, s in enumerate(in_size)])
    return load


def make_pointwise(fn: Callable, *, compute: str = "out", out_dtype=None):
    """A lowering for an elementwise op. `compute` is "out" (compute in the result dtype),
    "promote" (in the promoted input dtype; comparisons and logical ops) or "float"."""

    def lowering(g, node, *args, **kwargs):
        val = node.meta["val"]
        odt = out_dtype or val.dtype
        size = _size(val)
        if compute == "promote":
            metas = [_meta(a) for a in node.args if isinstance(_meta(a), (torch.Tensor, int, float, bool))]
            cdt = torch.result_type(*metas) if len(metas) > 1 else (
                metas[0].dtype if isinstance(metas[0], torch.Tensor) else odt)
        else:
            cdt = odt
        cdt = _half(cdt)
        loaders = []
        for a in args:
            if isinstance(a, TensorBox):
                loaders.append(("t", broadcast_loader(a, size)))
            elif isinstance(a, (int, float, bool)) or is_symbolic(a):
                loaders.append(("c", a))
            else:
                raise Fallback(f"argument {a!r}")

        def inner(ops, idx):
            vals = []
            for kind, v in loaders:
                if kind == "t":
                    vals.append(ops.to_dtype(v(ops, idx), cdt))
                else:
                    vals.append(_scalar(ops, v, cdt))
            return ops.to_dtype(fn(ops, *vals, **kwargs), odt)
        return TensorBox(g, Pointwise(val.device, odt, size, inner))
    return lowering


def _is_float(dt):
    return dt.is_floating_point


def simple(name, compute="out", **kw):
    def fn(ops, *vals):
        return ops.call(name, *vals, **kw)
    return make_pointwise(fn, compute=compute)


# --------------------------------------------------------------------------- pointwise ops
for _op, _name in [
    (aten.neg, "neg"), (aten.abs, "abs"), (aten.exp, "exp"), (aten.exp2, "exp2"), (aten.expm1, "expm1"),
    (aten.log, "log"), (aten.log2, "log2"), (aten.log10, "log10"), (aten.log1p, "log1p"),
    (aten.sqrt, "sqrt"), (aten.rsqrt, "rsqrt"), (aten.reciprocal, "reciprocal"), (aten.sin, "sin"),
    (aten.cos, "cos"), (aten.tan, "tan"), (aten.tanh, "tanh"), (aten.sinh, "sinh"), (aten.cosh, "cosh"),
    (aten.sigmoid, "sigmoid"), (aten.erf, "erf"), (aten.floor, "floor"), (aten.ceil, "ceil"),
    (aten.round.default, "round"), (aten.trunc, "trunc"), (aten.sign, "sign"), (aten.relu, "relu"),
    (aten.bitwise_not, "bitwise_not"), (aten.mul, "mul"),
    (aten.bitwise_and, "bitwise_and"), (aten.bitwise_or, "bitwise_or"), (aten.bitwise_xor, "bitwise_xor"),
    (aten.fmod, "fmod"), (aten.remainder, "remainder"), (aten.floor_divide, "floor_divide"),
    (aten.maximum, "maximum"), (aten.minimum, "minimum"), (aten.where.self, "where"),
    (aten.where.ScalarSelf, "where"), (aten.where.ScalarOther, "where"), (aten.where.Scalar, "where"),
]:
    register(_op)(simple(_name))

for _op, _name in [(aten.eq, "eq"), (aten.ne, "ne"), (aten.lt, "lt"), (aten.le, "le"), (aten.gt, "gt"),
                   (aten.ge, "ge"), (aten.logical_and, "logical_and"), (aten.logical_or, "logical_or"),
                   (aten.logical_xor, "logical_xor"), (aten.logical_not, "logical_not"),
                   (aten.isnan, "isnan"), (aten.isinf, "isinf")]:
    register(_op)(simple(_name, compute="promote"))


def _where_fix(fn):
    # where(cond, a, b): the condition is loaded as bool, not converted to the compute dtype
    def lowering(g, node, cond, a, b):
        val = node.meta["val"]
        size, odt = _size(val), val.dtype
        cdt = _half(odt)
        lc = broadcast_loader(cond, size)
        la, lb = broadcast_loader(a, size), broadcast_loader(b, size)

        def inner(ops, idx):
            c = ops.to_dtype(lc(ops, idx), torch.bool)
            va = ops.to_dtype(la(ops, idx), cdt) if la else _scalar(ops, a, cdt)
            vb = ops.to_dtype(lb(ops, idx), cdt) if lb else _scalar(ops, b, cdt)
            return ops.to_dtype(ops.call("where", c, va, vb), odt)
        return TensorBox(g, Pointwise(val.device, odt, size, inner))
    return lowering


register(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)(_where_fix(None))


@register(aten.add, aten.sub)
def _add_sub(g, node, a, b, alpha=1):
    name = "add" if node.target in (aten.add.Tensor, aten.add.Scalar) else "sub"

    def fn(ops, x, y):
        if alpha != 1:
            y = ops.call("mul", y, _scalar(ops, alpha, y.dtype))
        return ops.call(name, x, y)
    return make_pointwise(fn)(g, node, a, b)


@register(aten.rsub)
def _rsub(g, node, a, b, alpha=1):
    def fn(ops, x, y):
        if alpha != 1:
            x = ops.call("mul", x, _scalar(ops, alpha, x.dtype))
        return ops.call("sub", y, x)
    return make_pointwise(fn)(g, node, a, b)


@register(aten.div)
def _div(g, node, a, b, rounding_mode=None):
    if rounding_mode is None:
        return simple("truediv")(g, node, a, b)
    odt = node.meta["val"].dtype
    if rounding_mode == "trunc":
        def fn(ops, x, y):
            if _is_float(x.dtype):
                return ops.call("trunc", ops.call("truediv", x, y))
            return ops.call("int_truncdiv", x, y)
    else:
        def fn(ops, x, y):
            return ops.call("floor_divide", x, y)
    del odt
    return make_pointwise(fn)(g, node, a, b)


@register(aten.pow.Tensor_Scalar)
def _pow_scalar(g, node, x, e):
    if not isinstance(e, (int, float)):
        raise Fallback("pow exponent")

    def fn(ops, v):
        if e == 0:
            return ops.constant(1, v.dtype)
        if float(e).is_integer() and abs(e) <= 8:
            r = v
            for _ in range(int(abs(e)) - 1):
                r = ops.call("mul", r, v)
            return ops.call("reciprocal", r) if e < 0 else r
        if e == 0.5:
            return ops.call("sqrt", v)
        if e == -0.5:
            return ops.call("rsqrt", v)
        if not _is_float(v.dtype):
            raise Fallback("integer pow")
        return ops.call("pow_float", v, ops.constant(float(e), v.dtype))
    if not _is_float(node.meta["val"].dtype) and not (float(e).is_integer() and 0 <= e <= 8):
        raise Fallback("integer pow")
    return make_pointwise(fn)(g, node, x)


@register(aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow_tensor(g, node, x, e):
    if not _is_float(node.meta["val"].dtype):
        raise Fallback("integer pow")
    # only well defined for a positive base without sign handling; handle sign for integer exponents
    return simple("pow_float")(g, node, x, e)


@register(aten.clamp, aten.clamp_min, aten.clamp_max, aten.hardtanh)
def _clamp(g, node, x, lo=None, hi=None):
    if node.target in (aten.clamp_max.default, aten.clamp_max.Tensor):
        lo, hi = None, lo
    if isinstance(lo, TensorBox) or isinstance(hi, TensorBox):
        raise Fallback("tensor clamp bounds")

    def fn(ops, v):
        if lo is not None:   # (a bound may be symbolic: `size - 1` in interpolation, `max=n` of a SymInt)
            v = ops.call("maximum", v, _scalar(ops, lo, v.dtype))
        if hi is not None:
            v = ops.call("minimum", v, _scalar(ops, hi, v.dtype))
        return v
    return make_pointwise(fn)(g, node, x)


@register(aten.gelu)
def _gelu(g, node, x, approximate="none"):
    return make_pointwise(lambda ops, v: ops.call("gelu_tanh" if approximate == "tanh" else "gelu", v))(g, node, x)


@register(aten.leaky_relu)
def _leaky_relu(g, node, x, slope=0.01):
    def fn(ops, v):
        return ops.call("where", ops.call("gt", v, ops.constant(0, v.dtype)), v,
                        ops.call("mul", v, _scalar(ops, slope, v.dtype)))
    return make_pointwise(fn)(g, node, x)


@register(aten.isfinite)
def _isfinite(g, node, x):
    def fn(ops, v):
        return ops.call("logical_not", ops.call("logical_or", ops.call("isnan", v), ops.call("isinf", v)))
    return make_pointwise(fn, compute="promote")(g, node, x)


@register(aten._to_copy, prims.convert_element_type)
def _to_copy(g, node, x, dtype=None, **kwargs):
    val = node.meta["val"]
    if val.device != x.get_device() or not isinstance(x, TensorBox):
        raise Fallback("device copy")
    odt = val.dtype

    def inner(ops, idx):
        return ops.to_dtype(x.load(ops, idx), odt)
    return TensorBox(g, Pointwise(val.device, odt, x.get_size(), inner))


@register(aten.clone, aten.lift_fresh_copy, aten.contiguous)
def _clone(g, node, x, **kwargs):
    return TensorBox(g, Pointwise(x.get_device(), x.get_dtype(), x.get_size(), x.load))


@register(aten.alias, aten.detach, aten.lift_fresh)
def _alias(g, node, x):
    return x


@register(aten.full, aten.scalar_tensor, aten.full_like, aten.zeros_like, aten.ones_like, aten.zeros,
          aten.ones, aten.new_full, aten.new_zeros, aten.new_ones)
def _full(g, node, *args, **kwargs):
    val = node.meta["val"]
    t = node.target
    if t in (aten.full.default, aten.full_like.default, aten.new_full.default):
        value = args[-1] if t is not aten.new_full.default else args[2]
    elif t is aten.scalar_tensor.default:
        value = args[0]
    elif t in (aten.zeros_like.default, aten.zeros.default, aten.new_zeros.default):
        value = 0
    elif t in (aten.ones_like.default, aten.ones.default, aten.new_ones.default):
        value = 1
    else:
        raise Fallback(str(t))
    if not isinstance(value, (int, float, bool)):
        raise Fallback("symbolic fill")
    return TensorBox(g, Pointwise(val.device, val.dtype, _size(val),
                                  lambda ops, idx: ops.constant(value, val.dtype)))


@register(aten.arange.start_step, aten.arange.default, aten.arange.start, prims.iota)
def _arange(g, node, *args, **kwargs):
    val = node.meta["val"]
    if node.target is prims.iota.default:
        start, step = kwargs["start"], kwargs["step"]
    elif node.target is aten.arange.default:
        start, step = 0, 1
    else:
        start = args[0]
        step = args[2] if len(args) > 2 else kwargs.get("step", 1)
    if not all(isinstance(v, (int, float)) for v in (start, step)):
        raise Fallback("symbolic arange")
    odt = val.dtype

    def inner(ops, idx):
        if isinstance(start, int) and isinstance(step, int):
            return ops.to_dtype(ops.index_expr(start + idx[0] * step, torch.int64), odt)
        i = ops.to_dtype(ops.index_expr(idx[0], torch.int64), torch.float64 if odt == torch.float64 else
                         torch.float32)
        v = ops.call("add", ops.constant(float(start), i.dtype),
                     ops.call("mul", i, ops.constant(float(step), i.dtype)))
        return ops.to_dtype(v, odt)
    return TensorBox(g, Pointwise(val.device, odt, _size(val), inner))


# --------------------------------------------------------------------------- views
def _view(g, x: TensorBox, new_size, reindex, strided=None):
    """A view: a ReinterpretView when `x` is realized and `strided(layout)` gives a layout, else a
    Pointwise that loads `x` at `reindex(index)`."""
    new_size = tuple(new_size)
    sl = x.strided_layout()
    if sl is not None and strided is not None:
        base, layout = sl
        new_layout = strided(layout)
        if new_layout is not None:
            return TensorBox(g, ReinterpretView(base, new_layout))
    return TensorBox(g, Pointwise(x.get_device(), x.get_dtype(), new_size,
                                  lambda ops, idx: x.load(ops, reindex(list(idx)))))


def _lay(layout, size, stride, offset=None):
    return Layout(tuple(size), tuple(stride), layout.dtype, layout.device,
                  layout.offset if offset is None else offset)


def _norm_dim(d, n):
    return d + n if d < 0 else d


@register(aten.permute)
def _permute(g, node, x, dims):
    n = len(x.get_size())
    dims = [_norm_dim(d, n) for d in dims]
    size = [x.get_size()[d] for d in dims]
    inv = [dims.index(i) for i in range(n)]
    return _view(g, x, size, lambda idx: [idx[inv[i]] for i in range(n)],
                 lambda L: _lay(L, size, [L.stride[d] for d in dims]))


@register(aten.expand)
def _expand(g, node, x, sizes, implicit=False):
    old = x.get_size()
    sizes = list(sizes)
    lead = len(sizes) - len(old)
    size = [old[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes)]

    def reindex(idx):
        return [0 if old[j] == 1 and size[j + lead] != 1 else idx[j + lead] for j in range(len(old))]

    def strided(L):
        st = [0] * lead + [0 if old[j] == 1 and size[j + lead] != 1 else L.stride[j] for j in range(len(old))]
        return _lay(L, size, st)
    return _view(g, x, size, reindex, strided)


@register(aten.unsqueeze)
def _unsqueeze(g, node, x, dim):
    n = len(x.get_size())
    dim = _norm_dim(dim, n + 1)
    size = list(x.get_size())
    size.insert(dim, 1)

    def strided(L):
        st = list(L.stride)
        st.insert(dim, 1)
        return _lay(L, size, st)
    return _view(g, x, size, lambda idx: idx[:dim] + idx[dim + 1:], strided)


@register(aten.squeeze)
def _squeeze(g, node, x, dim=None):
    old = x.get_size()
    n = len(old)
    if dim is None:
        dims = [i for i, s in enumerate(old) if s == 1]
    else:
        dims = [_norm_dim(d, n) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        dims = [d for d in dims if n and old[d] == 1]
    keep = [i for i in range(n) if i not in dims]
    size = [old[i] for i in keep]

    def reindex(idx):
        full = [0] * n
        for j, i in enumerate(keep):
            full[i] = idx[j]
        return full
    return _view(g, x, size, reindex, lambda L: _lay(L, size, [L.stride[i] for i in keep]))


@register(aten.view, aten._unsafe_view, aten.reshape, aten.view.dtype)
def _reshape(g, node, x, sizes):
    if not isinstance(sizes, (list, tuple)):
        raise Fallback("view(dtype)")
    size = _size(node.meta["val"])
    old = x.get_size()
    if [s for s in old if s != 1] == [s for s in size if s != 1]:
        # only size-1 dims move: no index arithmetic beyond dropping/adding zeros
        old_nz = [i for i, s in enumerate(old) if s != 1]
        new_nz = [i for i, s in enumerate(size) if s != 1]

        def reindex(idx):
            full = [0] * len(old)
            for o, nn in zip(old_nz, new_nz):
                full[o] = idx[nn]
            return full

        def strided(L):
            st = [1] * len(size)
            for o, nn in zip(old_nz, new_nz):
                st[nn] = L.stride[o]
            return _lay(L, size, st)
        return _view(g, x, size, reindex, strided)

    groups = _view_groups(list(old), list(size), g.lt)

    def reindex(idx):
        out = [0] * len(old)
        for og, ng in groups:
            if len(og) == 1 and len(ng) == 1:
                out[og[0]] = idx[ng[0]]
                continue
            flat = flatten_index([idx[j] for j in ng], [size[j] for j in ng])
            for i, v in zip(og, unflatten_index(flat, [old[i] for i in og])):
                out[i] = v
        return out

    def strided(L):
        return _lay(L, size, contiguous_strides(size)) if L.is_contiguous() else None
    return _view(g, x, size, reindex, strided)


def _view_groups(old, new, lt=lambda a, b: a < b):
    """Pair up runs of old and new dims with equal products (a reshape only regroups within them)."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        og, ng, po, pn = [], [], 1, 1
        if i < len(old):
            og.append(i)
            po *= old[i]
            i += 1
        if j < len(new):
            ng.append(j)
            pn *= new[j]
            j += 1
        while po != pn:
            if i < len(old) and lt(po, pn):
                og.append(i)
                po *= old[i]
                i += 1
            elif j < len(new):
                ng.append(j)
                pn *= new[j]
                j += 1
            else:
                break
        groups.append((og, ng))
    return groups


@register(aten.slice)
def _slice(g, node, x, dim=0, start=None, end=None, step=1):
    old = x.get_size()
    dim = _norm_dim(dim, len(old))
    n = old[dim]
    start = 0 if start is None else sym(start)
    end = n if end is None else sym(end)
    start = g.max(0, g.min(n, start + n if g.lt(start, 0) else start))
    end = g.max(start, g.min(n, end + n if g.lt(end, 0) else end))
    size = list(old)
    val = node.meta["val"]
    if isinstance(val, torch.Tensor) and node.target is aten.slice.Tensor:
        size[dim] = _size(val)[dim]
    else:
        size[dim] = end - start if step == 1 else (end - start + step - 1) // step

    def reindex(idx):
        idx = list(idx)
        idx[dim] = idx[dim] * step + start
        return idx

    def strided(L):
        st = list(L.stride)
        off = L.offset + start * st[dim]
        st[dim] *= step
        return _lay(L, size, st, off)
    return _view(g, x, size, reindex, strided)


@register(aten.select)
def _select(g, node, x, dim, index):
    old = x.get_size()
    dim = _norm_dim(dim, len(old))
    index = sym(index)
    index = index + old[dim] if g.lt(index, 0) else index
    size = old[:dim] + old[dim + 1:]

    def reindex(idx):
        return idx[:dim] + [index] + idx[dim:]

    def strided(L):
        return _lay(L, size, L.stride[:dim] + L.stride[dim + 1:], L.offset + index * L.stride[dim])
    return _view(g, x, size, reindex, strided)


@register(aten.split_with_sizes, aten.split)
def _split(g, node, x, sizes, dim=0):
    n = x.get_size()[_norm_dim(dim, len(x.get_size()))]
    if isinstance(sizes, int) and is_symbolic(n):
        raise Fallback("symbolic split into equal chunks")
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    out, start = [], 0
    for s in sizes:
        out.append(_slice(g, node, x, dim, start, start + s))
        start += s
    return out


@register(aten.unbind)
def _unbind(g, node, x, dim=0):
    n = x.get_size()[_norm_dim(dim, len(x.get_size()))]
    if is_symbolic(n):
        raise Fallback("symbolic unbind")
    return [_select(g, node, x, dim, i) for i in range(n)]


@register(aten.as_strided)
def _as_strided(g, node, x, size, stride, storage_offset=None):
    sl = x.strided_layout()
    if sl is None:
        x.realize()
        sl = x.strided_layout()
    base, L = sl
    if isinstance(base, InputBuffer) and storage_offset is not None:
        raise Fallback("as_strided with offset of an input")
    off = L.offset if storage_offset is None else storage_offset
    return TensorBox(g, ReinterpretView(base, _lay(L, size, stride, off)))


@register(aten.flip)
def _flip(g, node, x, dims):
    size = x.get_size()
    dims = [_norm_dim(d, len(size)) for d in dims]

    def reindex(idx):
        return [size[d] - 1 - i if d in dims else i for d, i in enumerate(idx)]

    # negative strides cannot be expressed by torch.as_strided: a flip is always index arithmetic
    return _view(g, x, size, reindex, None)


@register(aten.repeat)
def _repeat(g, node, x, repeats):
    size = _size(node.meta["val"])
    old = x.get_size()
    lead = len(size) - len(old)

    def reindex(idx):
        return [index_mod(idx[lead + j], s) if repeats[lead + j] != 1 else idx[lead + j] for j, s in enumerate(old)]
    return _view(g, x, size, reindex, None)


@register(aten.slice_scatter, aten.select_scatter)
def _slice_scatter(g, node, base, src, dim=0, *rest):
    size = base.get_size()
    dim = _norm_dim(dim, len(size))
    n = size[dim]
    if node.target is aten.select_scatter.default:
        index = sym(rest[0])
        index = index + n if g.lt(index, 0) else index
        start, end, step, select = index, index + 1, 1, True
    else:
        start, end, step = (list(rest) + [None, None, 1])[:3]
        start = 0 if start is None else sym(start)
        start = start + n if g.lt(start, 0) else start
        end = n if end is None else sym(end)
        end = g.min(n, end + n if g.lt(end, 0) else end)
        step, select = step or 1, False
    if is_symbolic(step):
        raise Fallback("symbolic slice_scatter step")
    odt = node.meta["val"].dtype

    def inner(ops, idx):
        i = idx[dim]
        cond = sympy.And(sympy.Ge(i, start), sympy.Lt(i, end))
        if step != 1:
            cond = sympy.And(cond, sympy.Eq(index_mod(i - start, step), 0))
        cond = ops.index_expr(cond, torch.bool)
        sub = list(idx)
        if select:
            del sub[dim]
        else:
            sub[dim] = index_floordiv(i - start, step) if step != 1 else i - start
        v = ops.masked(cond, lambda: ops.to_dtype(src.load(ops, sub), odt), 0)
        return ops.call("where", cond, v, ops.to_dtype(base.load(ops, idx), odt))
    return TensorBox(g, Pointwise(base.get_device(), odt, size, inner))


# --------------------------------------------------------------------------- cat / pad / indexing
@register(aten.cat)
def _cat(g, node, tensors, dim=0):
    val = node.meta["val"]
    size = _size(val)
    dim = _norm_dim(dim, len(size))
    parts, start = [], 0
    for t in tensors:
        if len(t.get_size()) != len(size):  # legacy empty tensors
            continue
        n = t.get_size()[dim]
        if n:
            parts.append((t, start, start + n))
        start += n
    odt = val.dtype

    def inner(ops, idx):
        result = None
        for t, lo, hi in reversed(parts):
            i = idx[dim]
            sub = list(idx)
            sub[dim] = i - lo
            if result is None:
                result = ops.to_dtype(t.load(ops, sub), odt)
                continue
            cond = ops.index_expr(sympy.And(sympy.Ge(i, lo), sympy.Lt(i, hi)), torch.bool)
            v = ops.masked(cond, lambda t=t, sub=sub: ops.to_dtype(t.load(ops, sub), odt), 0)
            result = ops.call("where", cond, v, result)
        return result
    return TensorBox(g, Pointwise(val.device, odt, size, inner))


@register(aten.constant_pad_nd)
def _pad(g, node, x, pad, value=0):
    val = node.meta["val"]
    size, old = _size(val), x.get_size()
    n = len(size)
    pads = {n - 1 - k // 2: (pad[k], pad[k + 1]) for k in range(0, len(pad), 2)}
    if any(is_symbolic(v) for p in pads.values() for v in p):
        raise Fallback("symbolic pad")
    if any(lo < 0 or hi < 0 for lo, hi in pads.values()):
        raise Fallback("negative pad")

    def inner(ops, idx):
        conds, src = [], list(idx)
        for d, (lo, hi) in pads.items():
            src[d] = idx[d] - lo
            # (a side padded by 0 needs no test: the index never leaves the input there)
            conds += [sympy.Ge(idx[d], lo)] if lo else []
            conds += [sympy.Lt(idx[d], lo + old[d])] if hi else []
        if not conds:
            return x.load(ops, src)
        cond = ops.index_expr(sympy.And(*conds), torch.bool)
        v = ops.masked(cond, lambda: x.load(ops, src), value)
        return ops.call("where", cond, v, _scalar(ops, value, val.dtype))
    return TensorBox(g, Pointwise(val.device, val.dtype, size, inner))


@register(aten.max_pool2d_with_indices.default)
def _max_pool2d(g, node, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """(max, argmax) of each window, as eager's CPU kernel scans it: row by row from the first
    position inside the input, a later element wins when it is greater or NaN (so the index of the
    last NaN); positions in the padding are skipped. The windows unroll (at most 25 loads)."""
    vals = node.meta["val"]
    size = _size(vals[0])
    if not x.get_dtype().is_floating_point or any(is_symbolic(s) for s in (*size, *x.get_size()[-2:])):
        raise Fallback("max_pool2d: integer or symbolic")

    def pair(v, default=None):
        v = list(v) if isinstance(v, (list, tuple)) else [v]
        v = v or default
        return v * 2 if len(v) == 1 else v
    k, d, p = pair(kernel_size), pair(dilation), pair(padding)
    s = pair(stride, k)
    if k[0] * k[1] > 25:
        raise Fallback("max_pool2d: large window")
    H, W = x.get_size()[-2:]
    # read up to 25 times per output: computed once, unless it is a few cheap ops only this reads
    if not (len(node.args[0].users) == 1 and cheap_to_recompute(x.data)):
        x.realize()
    dt, lead = x.get_dtype(), len(size) - 2

    def valid(i, kk, dim):
        pos = i * s[dim] - p[dim] + kk * d[dim]
        return pos, sympy.And(sympy.Ge(pos, 0), sympy.Lt(pos, (H, W)[dim]))

    def window(ops, idx, with_index):
        oh, ow = idx[lead], idx[lead + 1]
        best, arg = ops.constant(float("-inf"), dt), ops.constant(0, torch.int64)
        for kh in range(k[0]):
            h, vh = valid(oh, kh, 0)
            first_h = sympy.And(vh, *[sympy.Not(valid(oh, j, 0)[1]) for j in range(kh)])
            for kw in range(k[1]):
                w, vw = valid(ow, kw, 1)
                # read at the position clamped into the input (a plain load, which vectorizes where a
                # masked one does not), replaced by -inf in the padding: never taken
                ok = ops.index_expr(sympy.And(vh, vw), torch.bool)
                inside = [sympy.Max(0, sympy.Min(h, H - 1)), sympy.Max(0, sympy.Min(w, W - 1))]
                v = ops.call("where", ok, x.load(ops, [*idx[:lead], *inside]), ops.constant(float("-inf"), dt))
                if not with_index:
                    best = ops.call("maximum", best, v)
                    continue
                take = ops.call("logical_and", ok, ops.call(
                    "logical_or", ops.call("gt", v, best), ops.call("isnan", v)))
                first = sympy.And(first_h, vw, *[sympy.Not(valid(ow, j, 1)[1]) for j in range(kw)])
                if first is not sympy.false:
                    take = ops.call("logical_or", ops.index_expr(first, torch.bool), take)
                best = ops.call("where", take, v, best)
                arg = ops.call("where", take, ops.index_expr(h * W + w, torch.int64), arg)
        return arg if with_index else best
    return (TensorBox(g, Pointwise(vals[0].device, dt, size, lambda ops, idx: window(ops, idx, False))),
            TensorBox(g, Pointwise(vals[1].device, torch.int64, size, lambda ops, idx: window(ops, idx, True))))


CHANNELS_LAST_MIN_MACS = 1 << 20  # smaller convolutions keep eager's layout (conversions cost more)


def channels_last_strides(size) -> tuple:
    n, c, h, w = size
    return (h * w * c, 1, w * c, c)


def is_contiguous(layout) -> bool:
    return layout.is_contiguous()


def is_channels_last(layout) -> bool:
    """A 4-d layout with the channel dimension innermost (NHWC memory) that is not also contiguous."""
    return (len(layout.size) == 4 and not layout.is_contiguous() and
            all(s == 1 or a == b for s, a, b in zip(layout.size, layout.stride, channels_last_strides(layout.size))))


@register(aten.convolution.default)
def _convolution(g, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """A 2-d convolution of CPU tensors in the memory layout oneDNN runs it fastest in. Where the
    activation outweighs the weight (early layers), both go channels-last: oneDNN's channels-last
    kernels are faster there, and the pointwise ops that follow are computed in that layout
    (`GraphLowering.register_computed`), so an activation is converted once, where a chain starts (a
    weight on every call: a parameter may change between calls). Where the weight outweighs the
    activation (late layers: small images, many channels), both stay contiguous: converting the weight
    would cost more than the channels-last kernels save (oneDNN reorders the weight into its own
    blocked format either way)."""
    val = node.meta["val"]
    if (val.device.type != "cpu" or transposed or val.dim() != 4 or not val.dtype.is_floating_point
            or any(is_symbolic(s) for s in (*x.get_size(), *weight.get_size(), *val.shape))):
        raise Fallback("convolution: not a static 2-d CPU convolution")
    x.realize()  # (in the layout its producer chose, `register_computed`: the test below reads it)
    sl = x.strided_layout()
    if prod(val.shape) * prod(weight.get_size()[1:]) < CHANNELS_LAST_MIN_MACS and not (
            sl is not None and is_channels_last(sl[1])):
        # (an input already channels-last stays so: aten would return a channels-last result anyway)
        raise Fallback("convolution: too small to repay a layout conversion")
    args = [stride, padding, dilation, transposed, output_padding, groups]
    n, cin, h, w = x.get_size()
    if (tuple(weight.get_size()[2:]) == (1, 1) and list(stride) == [1, 1] and list(padding) == [0, 0]
            and list(dilation) == [1, 1] and groups == 1 and val.dtype == torch.float32
            and _dense_vector_or_none(bias, weight.get_size()[0])
            and gemm.use_onednn_linear(n * h * w * cin * weight.get_size()[0])):
        x.realize()
        x = _strided_copy(g, x, channels_last_strides(x.get_size()), is_channels_last)
        out = g.fallback(node, [x, weight, bias], {}, op=gemm.pointwise_convolution)
    elif prod(x.get_size()) < prod(weight.get_size()):
        x = _strided_copy(g, x, contiguous_strides(x.get_size()), is_contiguous)
        return g.fallback(node, [x, weight, bias, *args], {})
    else:
        x.realize()  # channels-last where it reads channels-last (`register_computed`)

        def channels_last(t):
            return _strided_copy(g, t, channels_last_strides(t.get_size()), is_channels_last)
        # both operands: oneDNN reorders a contiguous weight into a temporary on every call (page faults
        # for large weights); a contiguous input would be converted inside the call anyway
        out = g.fallback(node, [channels_last(x), channels_last(weight), bias, *args], {})
    size = out.data.layout.size
    out.data.layout = Layout(size, channels_last_strides(size), val.dtype, val.device)
    return out


def _strided_copy(g, t, stride, has_layout):
    """`t` realized with `stride`: itself if its layout already passes `has_layout`, a view with `stride`
    if its memory is already laid out so (strides differ only on size-1 dimensions), else a copy."""
    sl = t.strided_layout()
    if sl is not None and has_layout(sl[1]):
        return t
    if sl is not None and all(n == 1 or a == b for n, a, b in zip(sl[1].size, sl[1].stride, stride)):
        return TensorBox(g, ReinterpretView(sl[0], _lay(sl[1], sl[1].size, tuple(stride), sl[1].offset)))
    t = TensorBox(g, Pointwise(t.get_device(), t.get_dtype(), t.get_size(), t.load))
    g.realize_strided(t, stride)
    return t


def _dense_vector_or_none(bias, n) -> bool:
    """No bias, or a vector of `n` with unit stride (oneDNN's linear reads it as a plain array)."""
    if bias is None:
        return True
    bias.realize()
    b = bias.strided_layout()
    return b is not None and tuple(b[1].size) == (n,) and tuple(b[1].stride) == (1,)


@register(aten.addmm.default, aten.mm.default)
def _linear(g, node, *args, beta=1, alpha=1):
    """A float32 CPU linear layer (the input times a weight matrix, plus a bias vector) as oneDNN's
    linear where it beats BLAS on this machine (`gemm.py`); otherwise the aten op. oneDNN reads the
    weight in either orientation (`nn.Linear`'s transposed one, or `x @ w` of a contiguous `w`)."""
    bias, x, wt = args if len(args) == 3 else (None, *args)
    val = node.meta["val"]
    if val.device.type != "cpu" or val.dtype != torch.float32 or beta != 1 or alpha != 1:
        raise Fallback("linear: not a plain float32 CPU product")
    (m, k), n = x.get_size(), wt.get_size()[1]
    wt.realize()  # as the aten op would take it
    weight = wt.strided_layout()
    if is_symbolic(k) or is_symbolic(n) or weight is None or 1 not in tuple(weight[1].stride):
        raise Fallback("linear: the weight is not a dense matrix")
    if not _dense_vector_or_none(bias, n):
        raise Fallback("linear: the bias is not a vector")
    if not gemm.use_onednn_linear(None if is_symbolic(m) else m * k * n):
        raise Fallback("linear: BLAS is faster here")
    w = _permute(g, None, wt, [1, 0])
    return g.fallback(node, [x, w, bias, "none", [], ""], {}, op=gemm.onednn_linear().default)


@register(aten.embedding.default)
def _embedding(g, node, weight, indices, *args):
    val = node.meta["val"]
    isize = indices.get_size()
    V = weight.get_size()[0]

    def inner(ops, idx):
        i = ops.indirect_indexing(indices.load(ops, idx[:len(isize)]), V)
        return weight.load(ops, [i, idx[-1]])
    return TensorBox(g, Pointwise(val.device, val.dtype, _size(val), inner))


@register(aten.gather.default)
def _gather(g, node, x, dim, index, sparse_grad=False):
    val = node.meta["val"]
    dim = _norm_dim(dim, len(x.get_size()))

    def inner(ops, idx):
        i = ops.indirect_indexing(index.load(ops, idx), x.get_size()[dim], runtime_error=True)  # as eager raises
        full = list(idx)
        full[dim] = i
        return x.load(ops, full)
    return TensorBox(g, Pointwise(val.device, val.dtype, _size(val), inner))


@register(aten.index_select.default)
def _index_select(g, node, x, dim, index):
    val = node.meta["val"]
    dim = _norm_dim(dim, len(x.get_size()))

    def inner(ops, idx):
        full = list(idx)
        full[dim] = ops.indirect_indexing(index.load(ops, [idx[dim]] if index.get_size() else []),
                                          x.get_size()[dim])
        return x.load(ops, full)
    return TensorBox(g, Pointwise(val.device, val.dtype, _size(val), inner))


@register(aten.index.Tensor)
def _index(g, node, x, indices):
    val = node.meta["val"]
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos or pos != list(range(pos[0], pos[-1] + 1)):
        raise Fallback("non-adjacent advanced indices")
    if any(t.get_dtype() in (torch.bool, torch.uint8) for t in indices if t is not None):
        raise Fallback("boolean mask index")
    out = _size(val)
    xs = x.get_size()
    first = pos[0]
    bshape = out[first:len(out) - (len(xs) - pos[-1] - 1)]
    loaders = {p: broadcast_loader(indices[p], bshape) for p in pos}

    def inner(ops, idx):
        bidx = idx[first:first + len(bshape)]
        full = list(idx[:first])
        for p in pos:
            full.append(ops.indirect_indexing(loaders[p](ops, bidx), xs[p]))
        full += idx[first + len(bshape):]
        return x.load(ops, full)
    return TensorBox(g, Pointwise(val.device, val.dtype, out, inner))


# --------------------------------------------------------------------------- reductions
def _reduce_dims(x, dims):
    n = len(x.get_size())
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(n))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({_norm_dim(d, n) for d in dims}) if n else []


def make_reduction(g, x: TensorBox, dims, keepdim, rtype, out_dtype) -> TensorBox:
    size = x.get_size()
    n = len(size)
    dims = _reduce_dims(x, dims)
    kept = [i for i in range(n) if i not in dims]
    ranges = [size[i] for i in kept]
    rranges = [size[i] for i in dims]

    def inner(ops, idx, ridx):
        full = [None] * n
        for i, v in zip(kept, idx):
            full[i] = v
        for i, v in zip(dims, ridx):
            full[i] = v
        return x.load(ops, full)
    red = Reduction(x.get_device(), out_dtype, ranges, rranges, rtype, inner, x.get_dtype())
    box = TensorBox(g, red)
    box.realize()
    if keepdim:
        ksize = [1 if i in dims else size[i] for i in range(n)]
        box = _keepdim_view(g, box, ksize)
    return box


def _keepdim_view(g, box, ksize):
    # the reduction buffer is contiguous over the kept dims, so contiguous strides of the keepdim
    # size address the same elements (size-1 dims never contribute to an index)
    base, L = box.strided_layout()
    return TensorBox(g, ReinterpretView(base, _lay(L, ksize, contiguous_strides(ksize))))


def _red(rtype):
    def lowering(g, node, x, dims=None, keepdim=False, *, dtype=None, **kwargs):
        val = node.meta["val"]
        if isinstance(dims, bool):  # any.default(x) style signatures never pass bool dims, but be safe
            dims, keepdim = None, dims
        if rtype == "mean":
            n = prod(x.get_size()[d] for d in _reduce_dims(x, dims))
            s = make_reduction(g, x, dims, keepdim, "sum", _half(val.dtype))
            odt = val.dtype
            return TensorBox(g, Pointwise(val.device, odt, s.get_size(), lambda ops, idx: ops.to_dtype(
                ops.call("truediv", s.load(ops, idx), _scalar(ops, n if is_symbolic(n) else float(n), _half(odt))),
                odt)))
        return make_reduction(g, x, dims, keepdim, rtype, val.dtype)
    return lowering


register(aten.sum.dim_IntList, aten.sum.default)(_red("sum"))
register(aten.prod.dim_int, aten.prod.default)(_red("prod"))
register(aten.amax, aten.max.default)(_red("max"))
register(aten.amin, aten.min.default)(_red("min"))
register(aten.mean.dim, aten.mean.default)(_red("mean"))
register(aten.any.dim, aten.any.dims, aten.any.default)(_red("any"))
register(aten.all.dim, aten.all.dims, aten.all.default)(_red("all"))


@register(aten.argmax, aten.argmin)
def _argmax(g, node, x, dim=None, keepdim=False):
    rtype = "argmax" if node.target is aten.argmax.default else "argmin"
    if dim is None:
        if keepdim:
            raise Fallback("argmax keepdim without dim")
        flat = _view(g, x, (x.numel(),), lambda idx: unflatten_index(idx[0], x.get_size()))
        return make_reduction(g, flat, [0], False, rtype, torch.int64)
    return make_reduction(g, x, [dim], keepdim, rtype, torch.int64)


@register(aten.max.dim, aten.min.dim)
def _max_dim(g, node, x, dim, keepdim=False):
    is_max = node.target is aten.max.dim
    v = make_reduction(g, x, [dim], keepdim, "max" if is_max else "min", x.get_dtype())
    i = make_reduction(g, x, [dim], keepdim, "argmax" if is_max else "argmin", torch.int64)
    return (v, i)


def _var(g, x, dims, correction, keepdim, odt):
    dims_n = _reduce_dims(x, dims)
    n = prod(x.get_size()[d] for d in dims_n)
    m2 = make_reduction(g, x, dims, keepdim, "var_unnormalized", _half(odt))
    denom = n - (1 if correction is None else correction)
    denom = g.max(0, denom) if is_symbolic(denom) else float(max(0, denom))
    return TensorBox(g, Pointwise(x.get_device(), odt, m2.get_size(), lambda ops, idx: ops.to_dtype(
        ops.call("truediv", m2.load(ops, idx), _scalar(ops, denom, _half(odt))), odt)))


@register(aten.var.correction)
def _var_correction(g, node, x, dims=None, *, correction=None, keepdim=False):
    return _var(g, x, dims, correction, keepdim, node.meta["val"].dtype)


@register(aten.var_mean.correction)
def _var_mean(g, node, x, dims=None, *, correction=None, keepdim=False):
    odt = node.meta["val"][0].dtype
    var = _var(g, x, dims, correction, keepdim, odt)
    # the mean of the same Welford reduction (one tl.reduce in the fused kernel)
    mval = node.meta["val"][1]
    wm = make_reduction(g, x, dims, keepdim, "welford_mean", _half(mval.dtype))
    mean = wm if wm.get_dtype() == mval.dtype else TensorBox(g, Pointwise(
        mval.device, mval.dtype, wm.get_size(), lambda ops, idx: ops.to_dtype(wm.load(ops, idx), mval.dtype)))
    return (var, mean)


class node_with_val:
    def __init__(self, node, val):
        self.meta, self.target = {"val": val}, node.target


# --------------------------------------------------------------------------- the graph lowering
class GraphLowering:
    """`promised_strides`: per flat graph output, the strides the caller's graph metadata promises for
    it (None: the aten graph's own). Whoever consumes a compiled graph's outputs -- the user, or a
    backward graph compiled against the forward's metadata (saved activations) -- reads them with
    those strides, so every tensor output is stored in exactly that layout (`realize_output`)."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, promised_strides=None):
        self.gm = gm
        self.example_inputs = example_inputs
        self.promised_strides = promised_strides
        self.buffers: list[Buffer] = []          # ComputedBuffer / ExternKernel / MultiOutput, in order
        self.inputs: list = []                   # per placeholder: InputBuffer or None (non-tensor)
        self.outputs: list = []                  # IR per graph output: Buffer, ReinterpretView or constant
        self.mutations: list[ComputedBuffer] = []
        self.constants: list = []                # (InputBuffer, tensor) for tensors held by the graph
        self.extern_ops: list = []
        self._names = iter(f"buf{i}" for i in range(1 << 30))
        # symbolic shapes: the ShapeEnv of the fake example inputs, and how the wrapper computes each
        # size symbol from its arguments (`s0 -> "arg0.size(0)"`)
        self.shape_env = _shape_env(example_inputs)
        self.symbol_bindings: dict = {}

    # ---- decisions about (possibly symbolic) sizes. A decision sympy cannot make statically is
    # evaluated by the ShapeEnv at the example sizes, which records a guard: the frontend reads the
    # ShapeEnv's guards after the backend returns, so the compiled code is only reused where it holds.
    def lt(self, a, b) -> bool:
        a, b = sym(a), sym(b)
        if not (is_symbolic(a) or is_symbolic(b)):
            return a < b
        expr = sympy.Lt(a, b)
        if expr in (sympy.true, sympy.false):
            return bool(expr)
        if self.shape_env is None:
            raise SymbolicUnsupported(f"cannot decide {expr}")
        return bool(self.shape_env.evaluate_expr(expr))

    def min(self, a, b):
        return a if (a == b or self.lt(a, b)) else b

    def max(self, a, b):
        return a if (a == b or self.lt(b, a)) else b

    def bound_symbols(self) -> set:
        return set(self.symbol_bindings)

    def _bind_symbols(self, placeholders):
        """Wrapper expressions for every size symbol of the inputs: the first size, stride or SymInt
        argument that is exactly that symbol defines it."""
        later = []
        for i, (n, ex) in enumerate(zip(placeholders, self.example_inputs)):
            if isinstance(ex, torch.Tensor):
                name = self.inputs[i].name
                for d, s in enumerate(_size(ex)):
                    if isinstance(s, sympy.Symbol):
                        self.symbol_bindings.setdefault(s, f"{name}.size({d})")
                for d, s in enumerate(_stride(ex)):
                    if isinstance(s, sympy.Symbol):
                        later.append((s, f"{name}.stride({d})"))
            elif isinstance(sym(ex), sympy.Symbol):
                self.symbol_bindings.setdefault(sym(ex), f"_unused{i}")
        for s, src in later:
            self.symbol_bindings.setdefault(s, src)
        needed = set()
        for b in self.inputs:
            if b is not None:
                needed |= free_symbols(b.layout.size, b.layout.stride)
        missing = needed - set(self.symbol_bindings)
        if missing:
            raise SymbolicUnsupported(f"sizes of the inputs use symbols {sorted(map(str, missing))} "
                                      "that no input defines")

    def new_name(self):
        return next(self._names)

    def register_computed(self, data: Loops, layout=None, mutates=None) -> ComputedBuffer:
        size = tuple(data.get_size())
        if layout is None:
            stride = channels_last_strides(size) if self._reads_channels_last(data) else contiguous_strides(size)
            layout = Layout(size, stride, data.get_dtype(), data.get_device())
        buf = ComputedBuffer(self.new_name(), layout, data, mutates)
        self.buffers.append(buf)
        return buf

    def _reads_channels_last(self, data: Loops) -> bool:
        """Is `data` a 4-d CPU pointwise loop body that reads a channels-last buffer (a convolution's
        result, or what follows it: batch norm, relu, pooling)? It is then stored channels-last too,
        the order in which its kernel reads and writes contiguously."""
        size = tuple(data.get_size())
        if (not isinstance(data, Pointwise) or len(size) != 4 or data.get_device().type != "cpu"
                or any(is_symbolic(s) for s in size)):
            return False  # (a reduction's result is contiguous: `_keepdim_view` relies on it)
        reads = set(loop_reads(data))
        return any(b.name in reads and b.layout is not None and is_channels_last(b.layout) for b in self.buffers)

    def realize_input(self, x):
        """Make `x` something the wrapper can pass to an aten op (a buffer or a strided view)."""
        if isinstance(x, TensorBox):
            return x.realize()
        if isinstance(x, (list, tuple)):
            return type(x)(self.realize_input(y) for y in x)
        return x

    def fallback(self, node, args, kwargs, op=None):
        """`node`'s result as an extern call of its aten op (or of `op`, which computes the same)."""
        args, kwargs = self.realize_input(args), {k: self.realize_input(v) for k, v in kwargs.items()}
        val = node.meta.get("val")
        op = node.target if op is None else op
        self.extern_ops.append(op)

        def layout_of(t):
            return Layout(_size(t), _stride(t), t.dtype, t.device)
        if isinstance(val, torch.Tensor):
            k = ExternKernel(self.new_name(), layout_of(val), op, args, kwargs)
            self.buffers.append(k)
            return TensorBox(self, k)
        k = ExternKernel(self.new_name(), None, op, args, kwargs)
        self.buffers.append(k)

        def wrap(v, path):
            if isinstance(v, torch.Tensor):
                m = MultiOutput(self.new_name(), layout_of(v), k, path)
                self.buffers.append(m)
                return TensorBox(self, m)
            if isinstance(v, (list, tuple)):
                return type(v)(wrap(y, path + (i,)) for i, y in enumerate(v))
            return v
        return wrap(val, ())

    def call_op(self, node, args, kwargs):
        """The op's lowering, checked against the node's metadata; the aten op as an extern call
        whenever the lowering declines (`Fallback`), fails, or builds something else than the op
        computes (other sizes or dtypes, a loop body that cannot be rendered): a missing or partial
        lowering costs a kernel boundary, never an error."""
        fn = LOWERINGS.get(node.target)
        if fn is not None and not self._needs_fallback(node, args, kwargs):
            try:
                result = fn(self, node, *args, **kwargs)
                if _matches(result, node.meta.get("val")):
                    return result
            except SymbolicUnsupported:
                raise
            except Exception:  # noqa: BLE001 - Fallback, or a corner case the lowering mis-handles
                pass
        return self.fallback(node, args, kwargs)

    @staticmethod
    def _needs_fallback(node, args, kwargs):
        vals = [node.meta.get("val")]
        vals = vals[0] if isinstance(vals[0], (list, tuple)) else vals
        for v in vals:
            if isinstance(v, torch.Tensor) and (v.is_complex() or v.dtype in (
                    torch.float8_e4m3fn, torch.float8_e5m2) or any(s == 0 for s in _size(v))):
                return True
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, TensorBox) and (a.get_dtype().is_complex or a.numel() == 0):
                return True
        return False

    def copy_into_input(self, node, dst: TensorBox, src):
        base = dst.data
        if not isinstance(base, InputBuffer):
            return self.fallback(node, [dst, src], {})
        # everything still pending must read the old value: realize it now
        for v in list(self.env.values()):
            for t in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(t, TensorBox) and isinstance(t.data, Loops) and t is not src:
                    t.realize()
        size, odt = base.get_size(), base.get_dtype()
        load = broadcast_loader(src, size) if isinstance(src, TensorBox) else (
            lambda ops, idx: _scalar(ops, src, odt))
        buf = self.register_computed(
            Pointwise(base.get_device(), odt, size, lambda ops, idx: ops.to_dtype(load(ops, idx), odt)),
            layout=base.layout, mutates=base.name)
        self.mutations.append(buf)
        return dst

    def run(self):
        self.env = env = {}
        promised, promised_at = self._promised_layouts()
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, ex in zip(placeholders, self.example_inputs):
            if isinstance(ex, torch.Tensor):
                buf = InputBuffer(f"arg{len(self.inputs)}", Layout(_size(ex), _stride(ex), ex.dtype, ex.device))
                self.inputs.append(buf)
                env[n] = TensorBox(self, buf)
            else:
                self.inputs.append(None)
                env[n] = sym(ex)
        if self.shape_env is not None:
            self._bind_symbols(placeholders)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                t = getattr(self.gm, node.target)
                if not isinstance(t, torch.Tensor):  # a subgraph of a higher-order op
                    env[node] = t
                    continue
                buf = InputBuffer(f"const{len(self.constants)}", Layout(
                    tuple(t.shape), tuple(t.stride()), t.dtype, t.device))
                self.constants.append((buf, t))
                env[node] = TensorBox(self, buf)
                continue
            if node.op == "output":
                self.outputs = [self.realize_output(env[a], st) if isinstance(a, torch.fx.Node) else a
                                for a, st in zip(node.args[0], promised_at)]
                continue
            args = torch.fx.node.map_arg(node.args, lambda a: env[a])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda a: env[a])
            if node.op != "call_function":
                raise RuntimeError(f"unexpected node {node.format_node()}")
            if isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat)):
                result = sym(node.meta["val"])  # size arithmetic: its (simplified) expression
                if isinstance(result, sympy.Basic) and not result.free_symbols <= self.bound_symbols():
                    raise SymbolicUnsupported(f"unbound symbols in {node.format_node()}")
            elif isinstance(node.meta.get("val"), torch.SymBool):
                raise SymbolicUnsupported(f"symbolic bool {node.format_node()}")
            elif node.target is operator.getitem:
                result = args[0][args[1]]
            elif node.target is aten.copy_.default:
                result = self.copy_into_input(node, *args)
            elif not isinstance(node.target, torch._ops.OpOverload) and not _has_tensor((args, kwargs)):
                result = node.target(*args, **kwargs)  # python scalars (sym arithmetic)
            elif not isinstance(node.target, torch._ops.OpOverload):
                # a higher-order op (with_effects, ...) on tensors: called as it is, on real tensors
                result = self.fallback(node, args, kwargs)
            else:
                result = self.call_op(node, args, kwargs)
            if isinstance(result, TensorBox) and isinstance(result.data, Loops):
                if node in promised:
                    # a graph output is computed straight into its promised layout, so that views of
                    # it taken later in the graph see that layout too
                    self.realize_strided(result, promised[node])
                elif len(node.users) > 1:
                    result.realize()
            env[node] = result
        return self

    def _promised_layouts(self):
        """The promised strides of each output position (None: not a tensor), and of each output fx
        node (the first promise wins for a node that is output twice)."""
        out_node = next(n for n in self.gm.graph.nodes if n.op == "output")
        outs = list(out_node.args[0])
        given = list(self.promised_strides or [])
        given += [None] * (len(outs) - len(given))
        at, by_node = [], {}
        for a, st in zip(outs, given):
            val = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            if isinstance(val, torch.Tensor):
                st = tuple(sym(s) for s in st) if st is not None and len(st) == val.dim() else _stride(val)
                by_node.setdefault(a, st)
            else:
                st = None
            at.append(st)
        return by_node, at

    def realize_strided(self, x: TensorBox, stride) -> Buffer:
        d = x.data
        size = tuple(d.get_size())
        x.data = self.register_computed(d, layout=Layout(size, tuple(stride), d.get_dtype(), d.get_device()))
        return x.data

    def realize_output(self, x, stride=None):
        if not isinstance(x, TensorBox):
            return x
        d = x.data
        if isinstance(d, InputBuffer) and d.name.startswith("const"):
            x = _clone(self, None, x)  # never hand out the graph's own constant
        elif isinstance(d, InputBuffer) or (isinstance(d, ReinterpretView) and isinstance(d.data, InputBuffer)):
            # an input returned as is (or a view of one): aliasing is what eager does
            return d
        if stride is None:
            return x.realize()
        if isinstance(x.data, Loops):
            return self.realize_strided(x, stride)
        if _same_strides(x.get_size(), x.data.get_stride(), stride):
            return x.data
        # realized in another layout (an extern result, a view, a buffer with several users): copy
        return self.realize_strided(_clone(self, None, x), stride)


def _has_tensor(x) -> bool:
    return any(isinstance(a, TensorBox) for a in ir_flatten(x))


def _matches(result, val) -> bool:
    """Does a lowering's result have the sizes and dtypes of the op's fake result, and can its loop
    bodies run? (A lowering that mis-handles a corner case -- a 0-d input, an unexpected dtype --
    fails here, at lowering time, where the op can still be called as an extern instead.)"""
    if isinstance(val, (list, tuple)):
        return (isinstance(result, (list, tuple)) and len(result) == len(val)
                and all(_matches(r, v) for r, v in zip(result, val)))
    if isinstance(val, torch.Tensor):
        if not isinstance(result, TensorBox) or result.get_dtype() != val.dtype:
            return False
        size, want = result.get_size(), _size(val)
        if len(size) != len(want) or not all(a == b or (is_symbolic(a - b) and sympy.simplify(a - b) == 0)
                                             for a, b in zip(size, want)):
            return False
        if isinstance(result.data, Loops):
            loop_reads(result.data)
        return True
    return not isinstance(result, TensorBox)


def _same_strides(size, a, b) -> bool:
    """Same layout for every element: strides of dims of size 0 or 1 never matter."""
    return len(a) == len(b) and all(n in (0, 1) or sa == sb for n, sa, sb in zip(size, a, b))


def _shape_env(example_inputs):
    """The ShapeEnv of symbolic example inputs (None when every size is static)."""
    for x in example_inputs:
        if isinstance(x, (torch.SymInt, torch.SymFloat)):
            return x.node.shape_env
        if isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in (*x.shape, *x.stride())):
            return x.fake_mode.shape_env
    return None


def lower(gm, example_inputs, promised_strides=None) -> GraphLowering:
    return GraphLowering(gm, example_inputs, promised_strides).run()


__all__ = ["LOWERINGS", "GraphLowering", "decomposition_table", "lower", "math", "trace_to_aten"]
