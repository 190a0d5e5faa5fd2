"""Generators driven by send/throw/close and the state of raised exceptions (`__context__`,
`__cause__`, `sys.exc_info()`), traced in one graph and compared with eager."""
from __future__ import annotations

import contextlib
import inspect
import itertools
import sys

import pytest
import torch

import bytegraph

from helpers import assert_same, outcome, standard_test


class Boom(Exception):
    pass


# -- a generator's own exception state ---------------------------------------------------------
def _reraises_own():
    try:
        raise KeyError("own")
    except KeyError:
        yield 1
        raise          # the generator's KeyError, not the consumer's ValueError


def bare_raise_in_generator_after_resume(x):
    it = _reraises_own()
    next(it)
    try:
        raise ValueError("consumer")
    except ValueError:
        try:
            next(it)
        except Exception as e:  # noqa: BLE001
            return x + 1, type(e).__name__


def _raises_after_yield():
    yield 1
    raise KeyError("k")


def generator_finished_by_its_exception(x):
    it = _raises_after_yield()
    next(it)
    try:
        next(it)
    except KeyError:
        pass
    return x + next(it, 7)


def _returns_five():
    yield 1
    return 5


def stop_iteration_carries_return_value(x):
    it = _returns_five()
    next(it)
    try:
        it.send(None)
    except StopIteration as e:
        return x + 1, e.value, e.args


def _leaks_stop_iteration():
    yield 1
    next(iter([]))


def stop_iteration_in_generator_becomes_runtime_error(x):
    it = _leaks_stop_iteration()
    next(it)
    try:
        next(it)
    except RuntimeError as e:
        return x + 1, str(e), type(e.__cause__).__name__, e.__suppress_context__


# -- throw ----------------------------------------------------------------------------------------
def _catches_value_error():
    try:
        yield 1
    except ValueError:
        yield 2
    yield 3


def throw_handled(x):
    it = _catches_value_error()
    next(it)
    return x + it.throw(ValueError("x")), next(it)


def throw_class_unhandled_finishes(x):
    it = _catches_value_error()
    next(it)
    try:
        it.throw(KeyError)
    except KeyError as e:
        return x + 1, e.args, next(it, "done")


def throw_unstarted_and_finished(x):
    it = _catches_value_error()
    try:
        it.throw(ValueError("early"))
    except ValueError as e:
        first = e.args
    return x + 1, first, next(it, "done")


def _delegates():
    r = yield from _catches_value_error()
    yield ("after", r)


def _inner_returns_on_throw():
    try:
        yield 1
    except ValueError:
        return 10


def _outer_of_returning():
    r = yield from _inner_returns_on_throw()
    yield r + 1


def _outer_catches():
    try:
        yield from _returns_five()
    except KeyError:
        yield "outer caught"


def throw_through_yield_from(x):
    a = _delegates()
    next(a)
    b = _outer_of_returning()
    next(b)
    c = _outer_catches()
    next(c)
    return x + a.throw(ValueError()), list(a), b.throw(ValueError()), c.throw(KeyError()), list(c)


@contextlib.contextmanager
def _to_value_error():
    try:
        yield
    except BaseException:
        raise ValueError


@contextlib.contextmanager
def _passthrough():
    try:
        yield
    finally:
        pass


def contextmanager_converts_exception(x):
    z = 0
    with _passthrough():
        try:
            with _to_value_error():
                raise IndexError
        except ValueError:
            z = 1
        except IndexError:
            z = 2
    return x + z


def contextmanager_lets_exception_through(x):
    try:
        with _passthrough():
            raise KeyError("through")
    except KeyError as e:
        return x + 1, e.args


# -- close ----------------------------------------------------------------------------------------
def close_runs_finally(x, log):
    def g():
        try:
            yield 1
            yield 2
        finally:
            log.append("closed")
    it = g()
    v = next(it)
    it.close()
    unstarted = g()
    unstarted.close()
    return x + v, list(log), next(it, "done"), next(unstarted, "done")


# -- __context__ / __cause__ / sys.exc_info ----------------------------------------------------------
def cause_and_context(x):
    try:
        try:
            raise KeyError("k")
        except KeyError as e:
            raise ValueError("v") from e
    except ValueError as v:
        return x + 1, type(v.__cause__).__name__, type(v.__context__).__name__, v.__suppress_context__


def implicit_context_and_from_none(x):
    try:
        try:
            raise KeyError("k")
        except KeyError:
            {}["missing"]
    except KeyError as inner:
        implicit = (inner.args, inner.__context__.args, inner.__cause__, inner.__suppress_context__)
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise Boom("b") from None
    except Boom as b:
        hidden = (b.__cause__, b.__suppress_context__, type(b.__context__).__name__)
    return x + 1, implicit, hidden


def context_cycle_is_cut(x):
    try:
        try:
            raise KeyError("a")
        except KeyError as a:
            try:
                raise ValueError("b")
            except ValueError as b:
                saved_b = b
                raise a
    except KeyError as e:
        return x + 1, e.__context__ is saved_b, saved_b.__context__


def context_attributes_written(x):
    e = ValueError("e")
    e.__cause__ = KeyError("c")
    before = e.__suppress_context__
    e.__suppress_context__ = False
    e.__context__ = None
    return x + 1, type(e.__cause__).__name__, before, e.__suppress_context__, e.__context__


def exc_info_inside_except(x):
    try:
        raise Boom("z")
    except Boom:
        t, v, tb = sys.exc_info()
        current = sys.exception()
        return x * 2, t.__name__, v.args, tb is not None, current is v


@pytest.mark.parametrize("fn", [
    bare_raise_in_generator_after_resume, generator_finished_by_its_exception, stop_iteration_carries_return_value,
    stop_iteration_in_generator_becomes_runtime_error, throw_handled, throw_class_unhandled_finishes,
    throw_unstarted_and_finished, throw_through_yield_from, contextmanager_converts_exception,
    contextmanager_lets_exception_through, cause_and_context, implicit_context_and_from_none,
    context_cycle_is_cut, context_attributes_written, exc_info_inside_except,
])
def test_one_graph_like_eager(fn):
    standard_test(fn, torch.randn(3), frames=1, breaks=0)


def test_close_runs_finally_in_the_graph():
    want = close_runs_finally(torch.ones(2), [])
    bytegraph.reset()
    cnt = bytegraph.testing.CompileCounter()
    log = []
    got = bytegraph.compile(close_runs_finally, backend=cnt)(torch.ones(2), log)
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:] and log == ["closed"]
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


def context_of_exception_raised_outside_any_handler(x):
    try:
        raise KeyError("k")
    except KeyError as e:
        return x + 1, e.__context__     # the compiled frame's caller's exception, if it handles one


def exc_info_outside_except(x):
    return x + 1, sys.exc_info()[0]


@pytest.mark.parametrize("fn", [context_of_exception_raised_outside_any_handler, exc_info_outside_except])
def test_callers_exception_is_not_assumed(fn):
    """What depends on the exception the compiled frame's caller handles is not traced: called from
    an except block, the compiled function sees that exception as eager does."""
    x = torch.randn(3)
    opt = bytegraph.compile(fn, backend="eager")
    for _ in range(2):
        try:
            raise Boom("caller")
        except Boom:
            got, want = opt(x), fn(x)
        assert torch.equal(got[0], want[0]) and type(got[1]) is type(want[1]) and got[1] is not None
    try:
        raise Boom("caller")
    except Boom:
        assert bytegraph.explain(fn)(x).graph_break_count == 1
    # compiled while the caller handles nothing: traced (and that guarded)
    assert bytegraph.explain(fn)(x).graph_break_count == 0


def exception_with_a_cause_returned(x):
    e = ValueError("e")
    e.__cause__ = KeyError("c")
    return x + 1, e


def test_changed_exception_is_not_rebuilt_without_its_state():
    """An exception given a cause in the graph cannot be rebuilt by calling its class again: the
    instruction runs as Python, and the returned exception has its cause."""
    x = torch.randn(3)
    got = bytegraph.compile(exception_with_a_cause_returned, backend="eager")(x)
    assert type(got[1].__cause__) is KeyError and got[1].__suppress_context__
    assert bytegraph.explain(exception_with_a_cause_returned)(x).graph_break_count == 1


# -- generators that outlive the graph ----------------------------------------------------------
def _counting_from(t, k=1, *rest, kw=2, **more):
    i = 0
    while True:
        yield t + i + k + kw + len(rest) + len(more)
        i += 1


def _two(t):
    yield t + 1
    yield t + 2


def unstarted_generators_returned(x):
    items = [x]
    g = _counting_from(x * 2, 3, 4, 5, kw=6, z=7)
    h = (v * 2 for v in items)      # a generator expression over a list changed after it was made
    items.append(x + 1)
    return g and h, g, zip(range(2), _two(x)), items


def finished_generator_returned(x):
    g = _two(x)
    total = sum(g)
    return g, total, next(g, 5)


def unstarted_generator_across_a_break(x):
    g = _two(x * 3)
    bytegraph.graph_break()
    return next(g) + next(g)


def _drain(value):
    """What eager and compiled results hold, generators run to their end."""
    if isinstance(value, (tuple, list)):
        return type(value)(_drain(v) for v in value)
    if isinstance(value, (type(_two(None)), zip)):
        return ("iterator", type(value), list(itertools.islice(value, 4)))
    return value


@pytest.mark.parametrize("fn, frames, breaks", [
    (unstarted_generators_returned, 1, 0), (finished_generator_returned, 1, 0),
    # (after the break the generator is a real one: next() on it runs natively, twice)
    (unstarted_generator_across_a_break, 2, 3)])
def test_unstarted_and_finished_generators_are_rebuilt(fn, frames, breaks):
    """A generator that has not started is its function called again with the same argument
    objects; a finished one is such a call closed at once: the same code, state and items as eager."""
    x = torch.randn(3)
    want = fn(x)
    bytegraph.reset()
    counter = bytegraph.testing.CompileCounter()
    got = bytegraph.compile(fn, backend=counter)(x)
    gens = [(g, w) for g, w in zip(got, want) if inspect.isgenerator(w)] if isinstance(want, tuple) else []
    for g, w in gens:
        assert inspect.getgeneratorstate(g) == inspect.getgeneratorstate(w)
        assert g.gi_code is w.gi_code and g.__qualname__ == w.__qualname__
    assert_same(_drain(got), _drain(want))
    assert counter.frame_count == frames and len(bytegraph.stats.break_records) == breaks


def started_generator_returned(x):
    g = _two(x)
    next(g)
    return g, x.sin()


def _keeps(t):
    u = t * 2
    yield u
    yield u


def started_generator_keeping_a_value_returned(x):
    g = _keeps(x)
    first = next(g)
    return g, first, x.sin()


def test_started_generator_is_replayed_or_not_rebuilt():
    """A generator paused at a `yield` holds a frame no call can make again. When its steps did
    nothing but pure graph work and its paused frame holds only its arguments and constants, the
    function is called again after the graph and its steps replayed natively; one holding a value
    it made (which the program also got) breaks the graph, and the returned generator is eager's."""
    x = torch.randn(3)
    explained = bytegraph.explain(started_generator_returned)(x)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    got = bytegraph.compile(started_generator_returned, backend="eager")(x)
    assert inspect.getgeneratorstate(got[0]) == "GEN_SUSPENDED" and torch.equal(next(got[0]), x + 2)
    explained = bytegraph.explain(started_generator_keeping_a_value_returned)(x)
    assert explained.graph_break_count == 1 and "started generator" in str(explained.break_reasons[0])
    got = bytegraph.compile(started_generator_keeping_a_value_returned, backend="eager")(x)
    assert next(got[0]) is got[1]


def test_context_chain_cycle_made_by_the_program():
    # `ex.__context__ = ex` and a new raise in its handler: cutting the new exception out of the
    # handled one's chain looped forever while tracing (CPython's test_exceptions)
    def f(x):
        def cycle():
            try:
                raise ValueError(1)
            except ValueError as ex:
                ex.__context__ = ex
                raise TypeError(2)
        try:
            cycle()
        except Exception as e:
            exc = e
        return x + 1, type(exc).__name__, type(exc.__context__).__name__, exc.__context__.__context__ is exc.__context__
    standard_test(f, torch.ones(1), frames=1)


# -- a container filled from a lazy iterable is filled item by item ------------------------------
def _extend_reads_list(x):
    y = [1]
    y.extend(y[-1] + z for z in range(3))
    y += (y[-1] * 2 for _ in range(2))
    return x + 1, y


def _extendleft_reads_deque(x):
    import collections
    d = collections.deque([1], maxlen=4)
    d.extendleft(d[0] + z for z in range(3))
    d.extend(d[-1] * 2 for _ in range(2))
    return x + 1, list(d)


def _set_update_reads_set(x):
    s = {1}
    s.update(len(s) + i for i in range(3))
    return x + 1, sorted(s)


def _dict_update_reads_dict(x):
    d = {0: 0}
    d.update((len(d), i) for i in range(3))
    return x + 1, d


def _extend_keeps_items_before_raise(x):
    y = [1]

    def gen():
        for z in range(3):
            yield y[-1] + z
            if z == 1:
                raise Boom

    try:
        y.extend(gen())
    except Boom:
        pass
    return x + 1, y


def _dict_update_bad_pair(x):
    try:
        {}.update([(1, 2), (1, 2, 3)])
    except ValueError as e:
        return x + 1, str(e)


@pytest.mark.parametrize("fn", [_extend_reads_list, _extendleft_reads_deque, _set_update_reads_set,
                                _dict_update_reads_dict, _extend_keeps_items_before_raise,
                                _dict_update_bad_pair])
def test_container_filled_from_generator_item_by_item(fn):
    # eager's extend/update asks for the next item only after adding the previous one: a generator
    # reading the container sees it grow (the whole generator consumed first gave [1, 1, 2, 3])
    standard_test(fn, torch.ones(2), frames=1, breaks=0)


# -- the caller's handled exception: known to be none, and guarded so ----------------------------
def _exc_info_after_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        inside = sys.exc_info()[0].__name__
    return x + 1, inside, sys.exc_info(), sys.exception()


def _context_of_raise_outside_handlers(x):
    try:
        try:
            te = TypeError(1)
            raise te
        finally:
            ve = ValueError(2)
            raise ve
    except Exception as e:
        exc = e
    return x + 1, exc is ve, exc.__context__ is te, te.__context__


def _context_kept_when_raised_again(x):
    e = ValueError("v")
    try:
        try:
            raise KeyError
        except KeyError:
            raise e
    except ValueError:
        pass
    try:
        raise e          # handling nothing: CPython keeps the context it had
    except ValueError as g:
        return x + 1, type(g.__context__).__name__


def _bare_raise_without_handler(x):
    try:
        raise
    except RuntimeError as e:
        return x + 1, str(e)


@pytest.mark.parametrize("fn", [_exc_info_after_handler, _context_of_raise_outside_handlers,
                                _context_kept_when_raised_again, _bare_raise_without_handler])
def test_callers_handled_exception_known_none_and_guarded(fn):
    # called while nothing is handled: one graph; called again from an except block, the guard on
    # the caller's exception fails and the recompiled frame gives eager's answer (the caller's one)
    standard_test(fn, torch.ones(1), frames=1, breaks=0)
    opt = bytegraph.compile(fn, backend="eager")
    assert_same(opt(torch.ones(1)), fn(torch.ones(1)))
    try:
        raise IndexError("outer")
    except IndexError:
        want = outcome(fn, torch.ones(1))
        got = outcome(opt, torch.ones(1))
    assert_same(got, want)


# -- contextlib.ExitStack: managers bound with types.MethodType ------------------------------------
class _Logged:
    def __init__(self, log, name, swallow=False):
        self.log, self.name, self.swallow = log, name, swallow

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self.name

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", self.name, et.__name__ if et else None))
        return self.swallow


@contextlib.contextmanager
def _gen_logged(log, tag):
    log.append(("in", tag))
    try:
        yield tag
    finally:
        log.append(("out", tag))


def _exit_stack_order(x, log):
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(_gen_logged(log, "a"))
        b = stack.enter_context(_Logged(log, "b"))
        log.append((a, b))
        y = x + 1
    return y


def _exit_stack_pop_all(x, log):
    with contextlib.ExitStack() as stack:
        stack.enter_context(_gen_logged(log, "a"))
        moved = stack.pop_all()
        log.append("inner end")
    log.append("after with")
    moved.close()
    return x * 2


def _exit_stack_swallowed(x, log):
    with contextlib.ExitStack() as stack:
        stack.enter_context(_Logged(log, "sw", swallow=True))
        stack.enter_context(_gen_logged(log, "l"))
        raise ValueError("v")
    return x + 1


@pytest.mark.parametrize("fn", [_exit_stack_order, _exit_stack_pop_all, _exit_stack_swallowed])
def test_exit_stack_in_one_graph(fn):
    want_log, got_log = [], []
    want = outcome(fn, torch.ones(2), want_log)
    bytegraph.reset()
    cnt = bytegraph.testing.CompileCounter()
    got = outcome(bytegraph.compile(fn, backend=cnt), torch.ones(2), got_log)
    assert_same(got, want)
    assert got_log == want_log
    assert cnt.frame_count == 1 and not bytegraph.stats.break_records


# -- raising what is not an exception -----------------------------------------------------------------
class _NotAnException:
    pass


def _raise_non_exceptions(x):
    out = []
    for bad in (5, _NotAnException, int, "s"):
        try:
            raise bad
        except TypeError as e:
            out.append(str(e))
    try:
        raise ValueError("v") from 5
    except TypeError as e:
        out.append((str(e), e.__context__))
    return x + 1, out


def test_raising_a_non_exception_is_eagers_type_error():
    standard_test(_raise_non_exceptions, torch.ones(1), frames=1, breaks=0)


def _fresh_exception_traceback(x):
    e = TypeError("t")
    f = ValueError()
    f.__context__ = e
    return x + 1, e.__traceback__, f.__traceback__, f.__context__ is e


def test_exception_never_raised_has_no_traceback():
    standard_test(_fresh_exception_traceback, torch.ones(1), frames=1, breaks=0)


# -- gen.close() called by the program raises what the generator raises -------------------------------
def _close_raises_from_handler(t):
    log = []

    def whoo(v):
        try:
            yield v.sin()
            yield v.cos()
        except GeneratorExit as e:
            log.append("exit")
            raise AttributeError("attr") from e
        finally:
            log.append("finally")

    gen = whoo(t)
    i = next(gen)
    try:
        gen.close()
    except AttributeError as e:
        log.append((e.args, type(e.__cause__).__name__, type(e.__context__).__name__))
    log.append(next(gen, "finished"))
    return i, log


def test_explicit_close_raises_the_generators_exception():
    standard_test(_close_raises_from_handler, torch.ones(2), frames=1, breaks=0)


def _throw_non_exceptions(t):
    def f():
        while True:
            try:
                yield
            except ValueError:
                pass

    g = f()
    next(g)
    out = []
    for bad in ("abc", 0, list):
        try:
            g.throw(bad)
        except TypeError as e:
            out.append(str(e))
    out.append(g.send(None))       # still paused where it was
    return t + 1, out


def test_throw_of_a_non_exception_is_eagers_type_error():
    standard_test(_throw_non_exceptions, torch.ones(2), frames=1, breaks=0)
