"""gen.close() and gen.throw(GeneratorExit) as CPython runs them: a generator that yields when closed,
a `yield from` delegate closed first (its close's error thrown in instead), a delegate left paused
dying as the exception unwinds the delegating generator. Each is compared with eager, side effects
in order, and traced in one graph."""
import torch

import bytegraph
from helpers import assert_same, compiled


def _run(fn, *args):
    want_log, got_log = [], []
    want = fn(want_log, *args)
    bytegraph.reset()
    opt, cnt = compiled(fn, fullgraph=True)
    got = opt(got_log, *args)
    assert_same(got, want)
    assert got_log == want_log, (got_log, want_log)
    assert not bytegraph.stats.break_records
    return cnt


def test_close_of_a_generator_that_yields_in_its_handler():
    # close() raises RuntimeError and leaves it paused at the new `yield`; its death at the frame's
    # return closes it again, running its finally then
    def f(log, t):
        def g(v):
            try:
                yield v.sin()
            except GeneratorExit:
                log.append("exit")
                yield v.tan()
            finally:
                log.append("finally")

        gen = g(t)
        first = next(gen)
        try:
            gen.close()
        except RuntimeError as e:
            log.append(str(e))
        log.append("after")
        return first * 2

    cnt = _run(f, torch.randn(3))
    assert cnt.frame_count == 1


def test_close_into_a_delegate_that_ignores_exit():
    # the delegate's close raises RuntimeError, thrown into the delegating generator; the delegate,
    # paused again, dies as that exception pops it, before the delegating generator's finally runs
    def f(log, t):
        def sub():
            try:
                yield 1
            except GeneratorExit:
                log.append("ignored")
                yield 2
            finally:
                log.append("sub finally")

        def outer():
            try:
                yield from sub()
            finally:
                log.append("outer finally")

        g = outer()
        next(g)
        try:
            g.close()
        except RuntimeError as e:
            log.append(str(e))
        return t + 1

    cnt = _run(f, torch.randn(3))
    assert cnt.frame_count == 1


class _Closing:
    def __init__(self, log, fail):
        self.log, self.fail = log, fail

    def __iter__(self):
        return self

    def __next__(self):
        return 1

    def close(self):
        self.log.append("iter close")
        if self.fail:
            raise ValueError("close failed")


def test_throw_generator_exit_and_close_into_delegates():
    # throw(GeneratorExit) closes the delegate first (a generator, or an object's own close), then
    # raises at the `yield from`; an error of that close is raised there instead
    def f(log, t, fail):
        def sub():
            try:
                yield 1
            finally:
                log.append("sub finally")

        def outer(it):
            try:
                yield from it
            except GeneratorExit:
                log.append("outer exit")
                raise
            except ValueError as e:
                log.append(f"outer {e}")

        g = outer(sub())
        next(g)
        try:
            g.throw(GeneratorExit)
        except GeneratorExit:
            log.append("exit raised")
        h = outer(_Closing(log, fail))
        next(h)
        h.close()
        return t * 3

    for fail in (False, True):
        cnt = _run(f, torch.randn(3), fail)
        assert cnt.frame_count == 1
