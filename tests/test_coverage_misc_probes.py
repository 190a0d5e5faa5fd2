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


# -- torch._check with a message function -----------------------------------------------------------
_CHECK_GLOBAL = 1


def test_torch_check_with_message_function_on_known_condition():
    def passes(x):
        torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
        torch._check_index(x.dim() == 1, lambda: f"{_CHECK_GLOBAL} dims")
        return x + 1
    standard_test(passes, torch.randn(4), frames=1, breaks=0)

    log = []

    def caught(x):
        def message():
            log.append(1)      # runs only on failure, as eager's
            return f"{x.shape[0]} is too small"
        try:
            torch._check_value(x.shape[0] > 3, message)
        except ValueError as e:
            return x + 2, str(e)
        return x
    assert standard_test(caught, torch.randn(3), frames=1, breaks=0)[1] == "3 is too small"
    assert log == [1, 1]
    assert standard_test(caught, torch.randn(5), frames=0, breaks=0) is not None
    assert log == [1, 1]
    # uncaught: the same error and message as eager
    assert standard_test(passes, torch.randn(3), frames=0) == "RuntimeError"
