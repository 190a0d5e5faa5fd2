"""Lifetimes of context managers, generators and exceptions are CPython's: `__enter__`/`__exit__`
effects happen once each, at the same point as in eager; a generator closed when it dies runs its
`finally`; exceptions keep their attributes across a graph break; `raise` inside a `with` block
after a break raises the user's exception. Every test compares with eager and asserts what was
captured."""
import contextlib
import gc

import bytegraph
import pytest
import torch
from bytegraph.testing import CompileCounter


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception is the result being compared
        return ("raise", type(e), str(e))


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "raise":
        assert a[1:] == b[1:]
    elif isinstance(a[1], torch.Tensor):
        torch.testing.assert_close(a[1], b[1])
    else:
        assert a[1] == b[1]


# -- raise inside a `with` block after a graph break ----------------------------------------------
class _PlainCM:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def raise_in_no_grad_after_break(x):
    with torch.no_grad():
        y = x * 2
        print(end="")
        raise ValueError("user error")
    return y


def raise_in_user_cm_after_break(x):
    with _PlainCM():
        y = x * 2
        print(end="")
        if x.shape[0] == 2:
            raise ValueError("user error")
    return y


@pytest.mark.parametrize("fn", [raise_in_no_grad_after_break, raise_in_user_cm_after_break])
def test_raise_inside_with_after_break_raises_the_users_exception(fn):
    cnt = CompileCounter()
    x = torch.ones(2)
    _same(_outcome(bytegraph.compile(fn, backend=cnt), x), _outcome(fn, x))
    assert cnt.frame_count == 1     # `x * 2` before the break
    assert torch.is_grad_enabled()


def test_long_loop_body_with_break_resumes():
    body = "\n".join(f"        acc = acc + {i}" for i in range(300))
    src = f"def f(x):\n    acc = 0\n    for i in range(3):\n        print(end='')\n{body}\n    return x + acc\n"
    ns = {}
    exec(compile(src, "long_loop_gen.py", "exec"), ns)
    f = ns["f"]
    cnt = CompileCounter()
    x = torch.ones(2)
    torch.testing.assert_close(bytegraph.compile(f, backend=cnt)(x), f(x))
    assert cnt.frame_count >= 1


# -- the context manager protocol ---------------------------------------------------------------
class _LacksExit:
    def __enter__(self):
        return self


class _LacksEnter:
    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("cls", [_LacksExit, _LacksEnter])
def test_with_on_an_object_missing_a_method_raises_type_error(cls):
    def f(x):
        y = x + 1
        print(end="")
        with cls():
            y = y * 2
        return y
    cnt = CompileCounter()
    x = torch.ones(2)
    expected = _outcome(f, x)
    assert expected[:2] == ("raise", TypeError)
    _same(_outcome(bytegraph.compile(f, backend=cnt), x), expected)
    assert cnt.frame_count == 1
