"""`Tensor.type` with a legacy tensor class (`x.type(torch.FloatTensor)`): traced as the class's name,
which `Tensor.type` takes for the same type, in one graph."""
import torch

from helpers import standard_test


def test_type_with_a_legacy_class_is_one_graph():
    def f(x):
        y = x.type(torch.FloatTensor)
        return y + 1, y.dtype, x.type(torch.LongTensor) * 2, x.type(dtype=torch.DoubleTensor).type()
    got = standard_test(f, torch.arange(3.0).double(), frames=1, breaks=0)
    assert got[1] is torch.float32 and got[2].dtype is torch.int64 and got[3] == "torch.DoubleTensor"


def test_type_of_the_same_class_returns_the_tensor_itself():
    def f(x):
        y = x.type(torch.FloatTensor)
        y.add_(1)      # eager: the very tensor, so x changes too
        return x, y is x
    got = standard_test(f, torch.arange(3.0), frames=1, breaks=0)
    assert got[1] is True


def test_type_string_result_is_a_constant():
    def f(x):
        return x * 2, x.type(), x.int().type()
    assert standard_test(f, torch.arange(3.0), frames=1, breaks=0)[1:] == ("torch.FloatTensor", "torch.IntTensor")
