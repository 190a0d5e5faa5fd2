"""A few probes of the harness itself: a plain graph, a graph break, an exception, a recompile check."""
import torch

from . import probe


def _t():
    return (torch.randn(3),)


@probe(_t)
def tensor_arithmetic(x):
    return x * 2 + 1


@probe(_t)
def print_breaks(x):
    print(end="")
    return x.sin()


@probe(_t)
def raises_value_error(x):
    raise ValueError("no", x.shape)


@probe(lambda: ([1, 2], torch.ones(2)))
def list_mutated(lst, x):
    lst.append(len(lst))
    return x + len(lst)
