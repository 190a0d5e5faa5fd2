"""What the tests share: run a function compiled and eagerly, compare the two outcomes, and count
what was captured. A test built on `standard_test` cannot pass by running everything eagerly: it
asserts the number of graphs (and, when given, of ops and graph breaks) as well as the result."""
from __future__ import annotations

import numpy as np
import torch

import bytegraph
from bytegraph.backends import inductor
from bytegraph.testing import CompileCounter, CompileCounterWithBackend


def outcome(fn, *args):
    """("ok", result) or ("raise", exception type, message): what a call did, to compare with eager."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception is the result being compared
        return ("raise", type(e), str(e))


def assert_same(got, expected, *, exact=False, atol=None, rtol=None, equal_nan=False):
    """`got` is `expected`: the same types at every level (tuples, lists, dicts, exceptions),
    tensors with the same dtype, shape and requires_grad and equal values (bit for bit when
    `exact`, else within `atol`/`rtol`, torch's per-dtype defaults when None and always for
    16-bit floats), numpy values bit for bit, everything else by ==."""
    assert type(got) is type(expected), (type(got), type(expected), got, expected)
    if isinstance(expected, torch.Tensor):
        assert (got.dtype, got.shape, got.requires_grad) == (expected.dtype, expected.shape, expected.requires_grad), \
            ((got.dtype, got.shape, got.requires_grad), (expected.dtype, expected.shape, expected.requires_grad))
        if exact:
            assert torch.equal(got, expected), (got, expected)
        else:
            if expected.dtype in (torch.float16, torch.bfloat16):
                atol = rtol = None   # one rounding step of slack
            torch.testing.assert_close(got, expected, atol=atol, rtol=rtol, equal_nan=equal_nan)
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert got.dtype == expected.dtype and np.shape(got) == np.shape(expected) and np.array_equal(got, expected)
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            assert_same(g, e, exact=exact, atol=atol, rtol=rtol, equal_nan=equal_nan)
    elif isinstance(expected, dict):
        assert list(got) == list(expected), (got, expected)
        for k in expected:
            assert_same(got[k], expected[k], exact=exact, atol=atol, rtol=rtol, equal_nan=equal_nan)
    elif isinstance(expected, BaseException):
        assert got.args == expected.args, (got, expected)
    else:
        assert got == expected, (got, expected)


def same(got, expected, *, exact=True) -> bool:
    """`assert_same` as a truth value (bit for bit by default)."""
    try:
        assert_same(got, expected, exact=exact)
    except AssertionError:
        return False
    return True


def compiled(fn, cnt=None, **compile_kwargs):
    """`fn` compiled with a counting backend: (compiled fn, counter)."""
    cnt = cnt or CompileCounter()
    return bytegraph.compile(fn, backend=cnt, **compile_kwargs), cnt


def check(opt, fn, *args):
    """Call the compiled `opt`, then `fn`, on `args`; assert the results are the same; return it."""
    got, expected = opt(*args), fn(*args)
    assert_same(got, expected)
    return got


def standard_test(fn, *args, frames=1, ops=None, breaks=None, exact=False, **compile_kwargs):
    """Run `fn(*args)` eagerly, then compiled from a clean slate; assert the same outcome (the
    value, or the exception's type and message), `frames` graphs captured and, when given, `ops`
    ops and `breaks` graph breaks. Returns the value, or the exception type's name."""
    want = outcome(fn, *args)
    bytegraph.reset()
    opt, cnt = compiled(fn, **compile_kwargs)
    got = outcome(opt, *args)
    assert_same(got, want, exact=exact)
    assert cnt.frame_count == frames, f"expected {frames} graph(s), got {cnt.frame_count}"
    if ops is not None:
        assert cnt.op_count == ops, f"expected {ops} op(s), got {cnt.op_count}"
    if breaks is not None:
        assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]
    return got[1].__name__ if got[0] == "raise" else got[1]


def cache_entries(fn) -> list:
    """The cache entries (bytegraph.cache.CacheEntry) of a function's or a module's forward code."""
    code = fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__
    return bytegraph._C.peek_cache(code) or []


def run_inductor(fn, args, *, frames=1, atol=1e-5, rtol=1e-5, dynamic=None):
    """`fn` compiled with the inductor backend from a clean slate, compared with eager on copies of
    `args` (NaN equal to NaN), with `frames` graphs captured: (compiled fn, counter)."""
    bytegraph.reset()
    inductor.metrics.reset()
    opt, cnt = compiled(fn, CompileCounterWithBackend("inductor"), dynamic=dynamic)
    expected = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    got = opt(*args)
    assert cnt.frame_count == frames, f"expected {frames} graph(s), got {cnt.frame_count}"
    assert_same(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    return opt, cnt
