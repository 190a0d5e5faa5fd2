"""`.item()` captured as an unbacked symbol (fullgraph=True, or config.capture_scalar_outputs) compiles
with every backend: the symbol is bound by its node, so AOTAutograd's own trace of the graph (sharing
the frontend's ShapeEnv) accepts it, and inductor runs what its kernels cannot take as ATen graphs."""
from __future__ import annotations

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend
from helpers import assert_same


def _scaled(x):
    v = x.sum().item()
    return x * v, torch.tensor([v, 1.0]) * 2


def _scaled_loss(x):
    v = x.sum().item()
    return (x * v).sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("how", ["fullgraph", "config"])
def test_captured_item_compiles_with_each_backend(backend, how):
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    with bytegraph.config.patch(strict=True, capture_scalar_outputs=how == "config"):
        opt = bytegraph.compile(_scaled, backend=cnt, fullgraph=how == "fullgraph")
        for n in (4, 5):
            x = torch.arange(float(n))
            assert_same(opt(x), _scaled(x))
    assert cnt.frame_count == 2 and len(bytegraph.stats.break_records) == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_captured_item_gradients(backend):
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    with bytegraph.config.patch(strict=True):
        opt = bytegraph.compile(_scaled_loss, backend=cnt, fullgraph=True)
        x1, x2 = torch.arange(4.).requires_grad_(), torch.arange(4.).requires_grad_()
        _scaled_loss(x1).backward()
        opt(x2).backward()
    assert torch.equal(x1.grad, x2.grad)
    assert cnt.frame_count == 1
