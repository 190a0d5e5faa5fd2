"""`t[i]` with `i` a 0-d integer tensor under AOTAutograd: its decomposition reads the index with `.item()`,
a data-dependent value its trace may be unable to use (a view at that index regenerated after its base is
written, an index computed in the graph). Such a graph runs as traced, never an internal error."""
from __future__ import annotations

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend
from helpers import assert_same


def _view_then_base_written(t, i):
    v = t[i]
    t.mul_(2)
    return v


def _index_written_first(t, i):
    i.add_(1)
    return t[i]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [_view_then_base_written, _index_written_first])
def test_tensor_index_with_aot_autograd(backend, fn):
    bytegraph.reset()
    cnt = CompileCounterWithBackend(backend)
    opt = bytegraph.compile(fn, backend=cnt)
    with bytegraph.config.patch(strict=True):
        for index in (1, 0, 2):
            t1, t2 = torch.arange(12.).reshape(4, 3), torch.arange(12.).reshape(4, 3)
            i1, i2 = torch.tensor(index), torch.tensor(index)
            assert_same(opt(t2, i2), fn(t1, i1))
            assert torch.equal(t1, t2) and torch.equal(i1, i2)
    # (an index the graph writes first is read as a number: a graph per value)
    assert cnt.frame_count == (3 if fn is _index_written_first else 1)
    assert len(bytegraph.stats.break_records) == 0
    with bytegraph.config.patch(strict=True):      # (a negative index: a graph of its own)
        t1, t2 = torch.arange(12.).reshape(4, 3), torch.arange(12.).reshape(4, 3)
        assert_same(opt(t2, torch.tensor(-1)), fn(t1, torch.tensor(-1)))
        assert torch.equal(t1, t2)
