"""Probes restating behaviours torch's dynamo autograd.Function tests rely on: custom forward/backward pairs
called through `apply` (saved tensors, non-tensor arguments, several outputs, mark_dirty,
mark_non_differentiable, set_materialize_grads, needs_input_grad, ctx attributes), under grad and no_grad,
with their gradients checked by a backward the probe runs itself."""
import torch

from . import probe


def _leaf():
    return (torch.tensor([1.0, -2.0, 3.0], requires_grad=True),)


def _grads(*ts):
    out = [t.grad for t in ts]
    for t in ts:
        t.grad = None
    return out


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


@probe(_leaf)
def apply_forward_value(x):
    return Square.apply(x)


@probe(_leaf)
def apply_then_backward(x):
    Square.apply(x).sum().backward()
    return _grads(x)


@probe(_leaf)
def apply_inside_no_grad(x):
    with torch.no_grad():
        y = Square.apply(x)
    return y, y.requires_grad


@probe(lambda: (torch.tensor([1.0, 2.0]),))
def apply_on_tensor_without_grad(x):
    y = Square.apply(x)
    return y, y.requires_grad, y.grad_fn is None


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k, flag=True):
        ctx.k = k
        ctx.flag = flag
        return x * k if flag else x

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.k if ctx.flag else g), None, None


@probe(_leaf)
def nontensor_args_stored_on_ctx(x):
    y = Scale.apply(x, 3.0) + Scale.apply(x, 2, False)
    y.sum().backward()
    return y, _grads(x)


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True), 4), calls=2)
def nontensor_arg_from_frame(x, k):
    y = Scale.apply(x, k)
    y.sum().backward()
    return y, _grads(x)


class TwoOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x + y, x * y

    @staticmethod
    def backward(ctx, ga, gb):
        x, y = ctx.saved_tensors
        return ga + gb * y, ga + gb * x


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)))
def two_outputs_two_grads(x, y):
    a, b = TwoOut.apply(x, y)
    (a * 2 + b).sum().backward()
    return a, b, _grads(x, y)


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0])))
def one_input_requires_grad(x, y):
    a, b = TwoOut.apply(x, y)
    (a + b).sum().backward()
    return _grads(x), y.grad is None, a.requires_grad


class NeedsGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0])))
def setup_context_and_needs_input_grad(x, y):
    NeedsGrad.apply(x, y).sum().backward()
    return _grads(x, y)


class InplaceDirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True),))
def mark_dirty_inplace(x):
    y = x.clone()
    z = InplaceDirty.apply(y)
    z.sum().backward()
    return z is y, y, _grads(x)


class NonDiff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = x.argmax()
        ctx.mark_non_differentiable(idx)
        return x * 2, idx

    @staticmethod
    def backward(ctx, g, gidx):
        return g * 2


@probe(_leaf)
def mark_non_differentiable_output(x):
    v, i = NonDiff.apply(x)
    v.sum().backward()
    return v, i, i.requires_grad, _grads(x)


class NoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()

    @staticmethod
    def backward(ctx, g1, g2):
        out = torch.zeros_like(g1) if g1 is not None else None
        if g1 is not None:
            out = out + g1
        if g2 is not None:
            out = out + g2 * 10 if out is not None else g2 * 10
        return out


@probe(_leaf)
def set_materialize_grads_false(x):
    a, b = NoMaterialize.apply(x)
    a.sum().backward()
    return _grads(x)


class ReturnsTuple1(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return (x + 1,)

    @staticmethod
    def backward(ctx, g):
        return g


@probe(_leaf)
def forward_returns_one_tuple(x):
    out = ReturnsTuple1.apply(x)
    return type(out).__name__, out[0]


class WithStaticHelper(torch.autograd.Function):
    @staticmethod
    def helper(t):
        return t.sin()

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return WithStaticHelper.helper(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


@probe(_leaf)
def forward_calls_static_helper(x):
    y = WithStaticHelper.apply(x)
    y.sum().backward()
    return y, _grads(x)


class SaveIntermediate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = x.exp()
        ctx.save_for_backward(e)
        return e

    @staticmethod
    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        return g * e


@probe(_leaf)
def save_intermediate_for_backward(x):
    SaveIntermediate.apply(x).sum().backward()
    return _grads(x)


class ClampGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.clamp(ctx.lo, ctx.hi), None, None


@probe(_leaf)
def kwargs_like_positional_nontensors(x):
    y = ClampGrad.apply(x * 10, -1.0, 1.0)
    (y * 5).sum().backward()
    return y, _grads(x)


@probe(_leaf)
def apply_twice_chained(x):
    y = Square.apply(Square.apply(x))
    y.sum().backward()
    return y, _grads(x)


@probe(_leaf)
def apply_result_used_in_python_branch(x):
    y = Square.apply(x)
    if y.sum() > 5:
        return y * 2
    return y


class OnceDiff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 3

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        return g * 3


@probe(_leaf)
def once_differentiable_backward(x):
    OnceDiff.apply(x).sum().backward()
    return _grads(x)


class NoneGradForFloat(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(t)
        return x * t

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * t, None


@probe(lambda: (torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([2.0, 5.0], requires_grad=True)))
def none_grad_for_tensor_input(x, t):
    NoneGradForFloat.apply(x, t).sum().backward()
    return _grads(x, t)


class ViewOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.view(2, 2) * 2


@probe(lambda: (torch.ones(2, 2, requires_grad=True),))
def forward_returns_view_of_input(x):
    y = ViewOut.apply(x)
    y.sum().backward()
    return y.shape, _grads(x)


@probe(_leaf)
def function_class_attrs_read(x):
    return x * len(Square.__name__), issubclass(Square, torch.autograd.Function)


class CtxAttrRead(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        ctx.n = x.numel()
        return x.sum()

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape) / ctx.n


@probe(lambda: (torch.randn(2, 3, requires_grad=True),))
def ctx_stores_shape(x):
    CtxAttrRead.apply(x).backward()
    return _grads(x)


class DtypeCast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.dtype = x.dtype
        return x.double()

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype)


@probe(_leaf)
def forward_changes_dtype(x):
    y = DtypeCast.apply(x)
    (y * 2).sum().backward()
    return y.dtype, _grads(x)


class FwdRaises(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.sum() > 0:
            raise ValueError("positive")
        return x

    @staticmethod
    def backward(ctx, g):
        return g


@probe(lambda: (torch.ones(2, requires_grad=True),))
def forward_raises_user_error(x):
    try:
        FwdRaises.apply(x)
    except ValueError as e:
        return str(e), x * 2
    return None


G_SCALE = 3.0


class ReadsGlobal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * G_SCALE

    @staticmethod
    def backward(ctx, g):
        return g * G_SCALE


def _set_gscale(x):
    global G_SCALE
    G_SCALE += 1


def _reset_gscale():
    global G_SCALE
    G_SCALE = 3.0
    return _leaf()


@probe(_reset_gscale, calls=3, between=_set_gscale)
def forward_reads_global_changed_between(x):
    y = ReadsGlobal.apply(x)
    y.sum().backward()
    return y, _grads(x)


@probe(_leaf)
def autograd_grad_through_function(x):
    y = Square.apply(x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=False)
    return g


class MutatesCtxList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, log):
        log.append("fwd")
        return x + 1

    @staticmethod
    def backward(ctx, g):
        return g, None


@probe(_leaf)
def forward_mutates_python_list(x):
    log = []
    y = MutatesCtxList.apply(x, log)
    return y, log


class JvpFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2

    @staticmethod
    def jvp(ctx, t):
        return t * 2


@probe(_leaf)
def function_with_jvp_defined_backward(x):
    JvpFn.apply(x).sum().backward()
    return _grads(x)


class DoubleBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


@probe(_leaf)
def create_graph_double_backward(x):
    y = DoubleBackward.apply(x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    return g.detach(), gg


@probe(lambda: (torch.randn(3, requires_grad=True),))
def function_output_detached(x):
    y = Square.apply(x).detach()
    return y.requires_grad, y


@probe(lambda: (torch.randn(3, requires_grad=True), torch.randn(3)))
def mixed_requires_grad_outputs(x, t):
    a = Square.apply(x)
    b = Square.apply(t)
    return a.requires_grad, b.requires_grad, a + b
