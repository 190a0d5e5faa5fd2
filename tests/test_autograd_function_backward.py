"""The backward of a `torch.autograd.Function` captured in a graph, against eager: an AOTAutograd
backend (aot_eager, inductor) traces it once into the graph's backward, so it is captured only when
tracing proved it a pure function of the saved tensors, the gradients' values and constants of the
trace; otherwise the call breaks the graph and its backward runs as eager runs it. Side effects,
layout reads of gradients, errors, and repeated backwards (retain_graph, create_graph) compared."""
import bytegraph
import pytest
import torch

from bytegraph.testing import CompileCounterWithBackend

AOT_BACKENDS = ["aot_eager", "inductor"]
BACKENDS = ["eager"] + AOT_BACKENDS


class _Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * g * x ** 2


def _plain(x):
    return (x ** 3).sin()


def _through_function(x):
    return _Cube.apply(x).sin()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_plain, _through_function])
def test_second_backward_with_retain_graph_and_create_graph(fn, backend):
    # AOTAutograd's donated buffers made a compiled backward refuse both, which eager allows
    x = torch.randn(3, requires_grad=True)
    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(fn, backend=cnt)
    results = []
    for f in (fn, opt):
        y = f(x)
        first, = torch.autograd.grad(y.sum(), x, retain_graph=True)
        second, = torch.autograd.grad(y.sum(), x, create_graph=True)
        results.append((first, second.detach(), second.requires_grad))
    (a1, a2, a3), (b1, b2, b3) = results
    torch.testing.assert_close(b1, a1)
    torch.testing.assert_close(b2, a2)
    assert a3 == b3 is True
    assert cnt.frame_count == 1 and cnt.op_count >= 2
