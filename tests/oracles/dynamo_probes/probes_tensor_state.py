"""Probes restating behaviours torch's dynamo tests rely on about tensor state a program reads: leaf-ness
and grad_fn, conj/neg bits, inference tensors, storage offsets and memory formats, version
counters, `._base`, `.data` swaps, each also changed between calls (the argument list carries the
tensor so `between` can replace it)."""
import torch

from . import probe


def _box(make):
    return lambda: ([make()],)


def _set(make):
    def between(box):
        box[0] = make(box[0])
    return between


# ---- state changed between calls ---------------------------------------------------------------------

@probe(_box(lambda: torch.randn(3, requires_grad=True)), calls=3,
       between=_set(lambda t: t.detach().requires_grad_() if not t.is_leaf else t * 2))
def leafness_changes_between(box):
    t = box[0]
    return t.is_leaf, t.grad_fn is None, (t * 3).detach()


@probe(_box(lambda: torch.randn(3, dtype=torch.complex64)), calls=3,
       between=_set(lambda t: t.conj() if not t.is_conj() else t.resolve_conj()))
def conj_bit_changes_between(box):
    t = box[0]
    return t.is_conj(), t * 2, t.real


@probe(_box(lambda: torch.randn(3)), calls=3,
       between=_set(lambda t: torch.ones(3).clone() if t.is_inference() else _inference(t)))
def inference_tensor_between(box):
    t = box[0]
    return t.is_inference(), t + 1


def _inference(t):
    with torch.inference_mode():
        return t.clone()


@probe(_box(lambda: torch.arange(10.0)), calls=3,
       between=_set(lambda t: t[1:] if t.storage_offset() < 2 else t.clone()))
def storage_offset_changes_between(box):
    t = box[0]
    return t.storage_offset(), t[0], t._base is None, t.shape


@probe(_box(lambda: torch.randn(2, 3, 4, 4)), calls=3,
       between=_set(lambda t: t.contiguous(memory_format=torch.channels_last) if t.is_contiguous() else t.contiguous()))
def memory_format_changes_between(box):
    t = box[0]
    return t.is_contiguous(), t.stride(), t.view(2, -1).shape if t.is_contiguous() else t.reshape(2, -1).shape


@probe(_box(lambda: torch.zeros(3)), calls=3, between=_set(lambda t: t.add_(1)))
def version_counter_read(box):
    t = box[0]
    return t._version, t.clone()


@probe(_box(lambda: torch.randn(3)), calls=3, between=_set(lambda t: t.neg() if t._is_view() else t.view(3)))
def is_view_between(box):
    t = box[0]
    return t._is_view(), t._base is not None, t * 2


@probe(lambda: ([torch.zeros(3), torch.zeros(3)],), calls=3, between=lambda box: box.__setitem__(1, box[0][:]))
def alias_view_mutation_between(box):
    a, b = box
    a.add_(1)
    return a.clone(), b.clone()


@probe(_box(lambda: torch.randn(3)), calls=2, between=lambda box: setattr(box[0], "data", torch.randn(5)))
def data_swapped_between(box):
    t = box[0]
    return t.shape, t * 2


@probe(_box(lambda: torch.randn(3, requires_grad=True)), calls=3,
       between=lambda box: box[0].requires_grad_(not box[0].requires_grad))
def leaf_requires_grad_toggled_between(box):
    t = box[0]
    y = t.exp()
    return y.requires_grad, y.detach(), t.requires_grad


@probe(_box(lambda: torch.randn(4)), calls=3,
       between=_set(lambda t: t.to(torch.float64) if t.dtype == torch.float32 else t.to(torch.int64)))
def dtype_cycles_between(box):
    t = box[0]
    return t * 2, t.dtype.is_floating_point, t.element_size(), t.sum()


@probe(_box(lambda: torch.randn(3)), calls=3, between=_set(lambda t: torch.nn.Parameter(t.detach().clone())
                                                         if type(t) is torch.Tensor else t.detach().clone()))
def parameter_vs_tensor_between(box):
    t = box[0]
    return type(t).__name__, isinstance(t, torch.nn.Parameter), (t * 2).detach()


# ---- state read inside -------------------------------------------------------------------------------

@probe(lambda: (torch.randn(3, dtype=torch.complex64),))
def conj_view_ops(x):
    c = x.conj()
    return c.is_conj(), c.imag, (c * 1j).real, torch.view_as_real(c.resolve_conj())


@probe(lambda: (torch.randn(3),))
def neg_view_bit(x):
    n = torch._neg_view(x)
    return n.is_neg(), n + 1


@probe(lambda: (torch.zeros(3),))
def version_counter_after_inplace_inside(x):
    v0 = x._version
    x.add_(1)
    x.mul_(2)
    return x._version - v0, x


@probe(lambda: (torch.randn(4, 4),))
def view_base_identity(x):
    v = x[1:]
    return v._base is x, v.view(-1)._base is x, x._base is None


@probe(lambda: (torch.randn(3, requires_grad=True),))
def grad_fn_name_and_next(x):
    y = (x * 2).sum()
    return type(y.grad_fn).__name__, y.grad_fn.name(), len(y.grad_fn.next_functions)


@probe(lambda: (torch.randn(2, 3),))
def untyped_storage_size(x):
    return x.untyped_storage().nbytes(), x[0].untyped_storage().nbytes(), x.nbytes, x.itemsize


@probe(lambda: (torch.randn(2, 3),))
def data_ptr_equality_of_views(x):
    return x[0].data_ptr() == x.data_ptr(), x[1].data_ptr() - x.data_ptr()


@probe(lambda: (torch.randn(3),))
def requires_grad_set_by_attribute(x):
    y = x.clone()
    y.requires_grad = True
    z = y * 2
    return z.requires_grad, y.is_leaf


@probe(lambda: (torch.randn(3),))
def is_shared_pinned_flags(x):
    return x.is_shared(), x.is_pinned(), x.is_cpu, x.is_cuda, x.is_sparse, x.is_quantized, x.is_meta


@probe(lambda: (torch.randn(2, 3),))
def tensor_properties_misc(x):
    return x.H.shape, x.mH.shape, x.itemsize, x.nbytes, x.is_complex(), x.is_signed(), x.element_size()


@probe(lambda: (torch.randn(3),))
def detach_shares_storage_inplace(x):
    d = x.detach()
    d.add_(1)
    return x, d._version == x._version
