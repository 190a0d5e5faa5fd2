"""torch.distributions is Python over torch ops: traced as such (not called as one opaque op, which its
objects as arguments could not be). Compared with eager, with argument validation on (its data-dependent
checks break the graph) and off."""
import bytegraph
import pytest
import torch

from bytegraph.testing import CompileCounter
from helpers import assert_same

D = torch.distributions


def _independent_normal(x):
    n = D.Normal(x, torch.tensor(1.0))
    return D.Independent(n, 1).log_prob(x)


def _normal_attributes(x):
    n = D.Normal(x, x.abs() + 1)
    return n.mean, n.stddev, n.entropy(), n.rsample(), n.sample((2,))


def _multivariate(x):
    m = D.MultivariateNormal(torch.zeros(2), torch.eye(2))
    return m.log_prob(x[:, :2])


def _returns_the_distribution(x):
    return D.Normal(x, 1.0)


@pytest.fixture
def validate(request):
    before = D.Distribution._validate_args
    D.Distribution.set_default_validate_args(request.param)
    yield request.param
    D.Distribution.set_default_validate_args(before)


def _compare(fn, x):
    torch.manual_seed(0)
    want = fn(x)
    cnt = CompileCounter()
    torch.manual_seed(0)
    got = bytegraph.compile(fn, backend=cnt)(x)
    return got, want, cnt


@pytest.mark.parametrize("validate", [False], indirect=True)
@pytest.mark.parametrize("fn", [_independent_normal, _normal_attributes, _multivariate])
def test_one_graph_without_validation(fn, validate):
    got, want, cnt = _compare(fn, torch.randn(3, 4))
    assert_same(got, want)
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records
    bytegraph.reset()
    bytegraph.compile(fn, backend="eager", fullgraph=True)(torch.randn(3, 4))


@pytest.mark.parametrize("validate", [True], indirect=True)
@pytest.mark.parametrize("fn", [_independent_normal, _normal_attributes, _multivariate])
def test_validation_checks_values_eagerly(fn, validate):
    got, want, cnt = _compare(fn, torch.randn(3, 4))
    assert_same(got, want)
    assert bytegraph.stats.break_records
    assert all("tensor value" in b.reason for b in bytegraph.stats.break_records)


@pytest.mark.parametrize("validate", [False], indirect=True)
def test_a_distribution_made_in_the_frame_is_returned(validate):
    x = torch.randn(3)
    got, want, cnt = _compare(_returns_the_distribution, x)
    assert type(got) is D.Normal and got is not want
    assert_same((got.loc, got.scale, got.batch_shape), (want.loc, want.scale, want.batch_shape))
    assert cnt.frame_count == 1
