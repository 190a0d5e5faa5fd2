"""Coverage gaps found by probes restated from torch's test_misc (Python features mixed with tensor
code): each test compares bytegraph with eager AND asserts what was captured (graphs, breaks), so it
fails if the construct ran eagerly."""
from __future__ import annotations

import torch

from helpers import standard_test


class _Bag:
    pass


# -- torch.is_tensor of any object ------------------------------------------------------------------
def test_is_tensor_of_non_tensor_objects_is_folded():
    def fn(obj, y):
        if torch.is_tensor(obj):
            return y + 1
        return y + torch.is_tensor(None) + torch.is_tensor([y]) + torch.is_tensor(y)
    for obj in ({"input": torch.ones(2)}, _Bag(), [1], torch.ones(2)):
        standard_test(fn, obj, torch.randn(2), frames=1, breaks=0)
