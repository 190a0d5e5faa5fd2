"""Lifetimes of context managers, generators and exceptions are CPython's: `__enter__`/`__exit__`
effects happen once each, at the same point as in eager; a generator closed when it dies runs its
`finally`; exceptions keep their attributes across a graph break; `raise` inside a `with` block
after a break raises the user's exception. Every test compares with eager and asserts what was
captured."""
import contextlib
import gc
import sys
import traceback
import weakref

import bytegraph
import pytest
import torch
from bytegraph.testing import CompileCounter
from helpers import assert_same, outcome


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
    assert_same(outcome(bytegraph.compile(fn, backend=cnt), x), outcome(fn, x))
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
    expected = outcome(f, x)
    assert expected[:2] == ("raise", TypeError)
    assert_same(outcome(bytegraph.compile(f, backend=cnt), x), expected)
    assert cnt.frame_count == 1


# -- generators are closed when they die ---------------------------------------------------------
LOG = []


def _gen_finally(x):
    try:
        for i in range(10):
            yield x + i
    finally:
        LOG.append("finally")


def _gen_except_exit(x):
    try:
        yield x + 1
        yield x + 2
    except GeneratorExit:
        LOG.append("GeneratorExit")


@contextlib.contextmanager
def _logging_cm(name):
    LOG.append(f"enter {name}")
    try:
        yield
    finally:
        LOG.append(f"exit {name}")


class _LoggingCM:
    def __enter__(self):
        LOG.append("enter")

    def __exit__(self, typ, value, tb):
        LOG.append(("exit", typ))
        return False


def _gen_with(x):
    with _LoggingCM():
        yield x * 2
        yield x * 3


def _gen_with_contextmanager(x):
    with _logging_cm("g"):
        yield x * 2
        yield x * 3


def _gen_returns(x):
    try:
        yield x + 1
    finally:
        LOG.append("finally")
    return 5


def _outer(x):
    try:
        r = yield from _gen_finally(x)
        LOG.append(("returned", r))
    finally:
        LOG.append("outer finally")


def gen_partly_consumed(x):
    it = _gen_finally(x)
    return next(it) + next(it)


def gen_except_generator_exit(x):
    g = _gen_except_exit(x)
    return next(g) * 2


def gen_loop_break(x):
    total = x
    for v in _gen_finally(x):
        total = total + v
        if len(LOG) == 0:
            break
    LOG.append("after loop")
    return total


def gen_local_rebound(x):
    g = _gen_finally(x)
    a = next(g)
    g = _gen_finally(x * 2)     # the first generator dies here
    LOG.append("rebound")
    return a + next(g)


def gen_exhausted(x):
    g = _gen_returns(x)
    a = next(g)
    LOG.append("middle")
    b = list(g)
    return a, b


def gen_yield_from(x):
    g = _outer(x)
    return next(g) + 1


def _consume_one(x):
    g = _gen_finally(x)
    return next(g)


def gen_dies_in_callee(x):
    y = _consume_one(x)
    LOG.append("after callee")
    return y * 2


def gen_contextmanager_inside(x):
    g = _gen_with(x)
    return next(g) + 1


def gen_contextmanager_gen_inside(x):
    g = _gen_with_contextmanager(x)
    return next(g) + 1


def gen_dropped_inside_a_container(x):
    holder = [_gen_finally(x)]
    a = next(holder[0])
    holder = None               # dies with the list: its finally runs here
    LOG.append("after")
    return a


def gen_zipped_with_a_shorter_list(x):
    total = x
    for a, b in zip([1, 2], _gen_finally(x)):   # the list ends first: the loop drops the zip, and
        total = total + a * b                   # with it the paused generator
    LOG.append("after loop")
    return total


def gen_zipped_but_kept(x):
    g = _gen_finally(x)
    for a, b in zip([1], g):    # the zip dies, the generator lives on in `g` until the return
        LOG.append("body")
    LOG.append("after loop")
    return x + a * b


def gen_never_started(x):
    _gen_finally(x)
    g = _gen_finally(x)
    return x + 1, g is not None


def _run_logged(fn, x, collect=False):
    """Eager, then compiled: (eager outcome, LOG of the eager run, compiled outcome, LOG of the
    compiled run, counter). With `collect`, a gc runs after each run: before the eager LOG is read,
    after the compiled one is."""
    LOG.clear()
    expected = outcome(fn, x)
    if collect:
        gc.collect()
    eager_log = list(LOG)
    LOG.clear()
    cnt = CompileCounter()
    got = outcome(bytegraph.compile(fn, backend=cnt), x)
    compiled_log = list(LOG)
    if collect:
        gc.collect()
    return expected, eager_log, got, compiled_log, cnt


@pytest.mark.parametrize("fn", [gen_partly_consumed, gen_except_generator_exit, gen_loop_break, gen_local_rebound,
                                gen_exhausted, gen_yield_from, gen_dies_in_callee, gen_contextmanager_inside,
                                gen_contextmanager_gen_inside, gen_never_started, gen_dropped_inside_a_container,
                                gen_zipped_with_a_shorter_list, gen_zipped_but_kept])
def test_generator_closed_where_cpython_closes_it(fn):
    expected, eager_log, got, compiled_log, cnt = _run_logged(fn, torch.ones(2), collect=True)
    assert compiled_log == eager_log == list(LOG)   # already run when the frame returned, not by gc
    assert_same(got, expected)
    assert cnt.frame_count == 1


def _gen_yields_on_close(x):
    while True:
        try:
            yield x
        except GeneratorExit:
            LOG.append("ignored")


def gen_ignores_close(x):
    g = _gen_yields_on_close(x)
    return next(g) + 1


def two_gens_dropped_inside_one_container(x):
    holder = [_gen_finally(x), _gen_except_exit(x)]
    a = next(holder[0]) + next(holder[1])
    holder = None               # both die with the list, in the list's order: not modelled
    LOG.append("after")
    return a


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")   # eager's own report
@pytest.mark.parametrize("fn", [gen_ignores_close, two_gens_dropped_inside_one_container])
def test_generator_close_not_modelled_runs_natively(fn):
    expected, eager_log, got, _, cnt = _run_logged(fn, torch.ones(2), collect=True)
    assert LOG == eager_log
    assert_same(got, expected)
    assert cnt.frame_count == 0


# -- exceptions keep their attributes ----------------------------------------------------------
def exc_keywords_across_break(x):
    y = x + 1
    exc = ImportError("test", name="name", path="path")
    print(end="")               # exc is live across the break: rebuilt with its keywords
    return y, exc.name, exc.path, exc.args


def exc_keywords_read_in_graph(x):
    exc = ImportError("test", name="mod")
    err = OSError(2, "not found")
    stop = StopIteration(7)
    return x + 1, exc.name, exc.path, err.errno, err.strerror, stop.value


def exc_bad_keyword(x):
    y = x + 1
    print(end="")
    return y, KeyError("k", name="n")


class _LoggingError(Exception):
    def __init__(self, msg, code=0):
        LOG.append(("init", msg))
        super().__init__(msg)
        self.code = code


def exc_python_constructor(x):
    y = x + 1
    try:
        raise _LoggingError("boom", code=3)
    except _LoggingError as e:
        LOG.append(("caught", e.code))
    return y * 2


@pytest.mark.parametrize("fn, graphs", [(exc_keywords_across_break, 1), (exc_keywords_read_in_graph, 1),
                                        (exc_bad_keyword, 1), (exc_python_constructor, 1)])
def test_exception_objects_keep_their_attributes(fn, graphs):
    x = torch.ones(2)
    expected, eager_log, got, compiled_log, cnt = _run_logged(fn, x)
    assert_same(got, expected)
    assert compiled_log == eager_log
    assert cnt.frame_count == graphs


# -- user context managers: `__enter__`/`__exit__` effects happen, once each ----------------------
def _closure_cm(log, name="cm", swallow=False, noisy=False):
    class CM:
        def __enter__(self):
            if noisy:
                print(end="")         # a break inside __enter__: it runs natively
            log.append(f"enter {name}")
            return name

        def __exit__(self, typ, value, tb):
            log.append((f"exit {name}", typ, None if value is None else value.args))
            return swallow
    return CM


def _make_cm_program(kind):
    log = []
    CM = _closure_cm(log)
    if kind == "plain":
        def f(x):
            with CM():
                y = x + 1
            return y * 2
    elif kind == "break_inside":
        def f(x):
            with CM() as name:
                y = x + 1
                print(end="")
                y = y * 2
            return y, name
    elif kind == "raises":
        def f(x):
            with CM():
                y = x + 1
                raise ValueError("inside")
            return y
    elif kind == "swallows":
        Swallow = _closure_cm(log, "s", swallow=True)

        def f(x):
            y = x + 1
            with Swallow():
                y = y * 2
                raise ValueError("swallowed")
            return y
    elif kind == "two_managers":
        A, B = _closure_cm(log, "a"), _closure_cm(log, "b")

        def f(x):
            with A() as a, B() as b:
                y = x + 1
            return y, a, b
    elif kind == "inside_no_grad":
        Noisy = _closure_cm(log, "n", noisy=True)

        def f(x):
            with torch.no_grad():
                y = x + 1
                with Noisy():
                    y = y * 2
            return y, torch.is_grad_enabled()
    elif kind == "noisy_enter":
        Noisy = _closure_cm(log, "n", noisy=True)

        def f(x):
            y = x + 1
            with Noisy():
                y = y * 2
            return y
    elif kind == "passed_in":
        cm = CM()

        def f(x):
            with cm:
                y = x + 1
            return y
    return f, log


@pytest.mark.parametrize("kind, graphs", [("plain", 1), ("break_inside", 2), ("raises", 0), ("swallows", 1),
                                          ("two_managers", 1), ("inside_no_grad", 2), ("noisy_enter", 2),
                                          ("passed_in", 1)])
def test_user_context_manager_effects_happen_once_each(kind, graphs):
    x = torch.ones(2)
    f, eager_log = _make_cm_program(kind)
    expected = outcome(f, x)
    g, compiled_log = _make_cm_program(kind)
    cnt = CompileCounter()
    assert_same(outcome(bytegraph.compile(g, backend=cnt), x), expected)
    assert compiled_log == eager_log
    assert cnt.frame_count == graphs
    assert torch.is_grad_enabled()


def test_contextmanager_decorated_effects_happen_once_each():
    def f(x):
        with _logging_cm("a"):
            y = x + 1
        return y * 2
    x = torch.ones(2)
    expected, eager_log, got, compiled_log, cnt = _run_logged(f, x)
    assert_same(got, expected)
    assert compiled_log == eager_log
    assert cnt.frame_count >= 1


class _TracebackCM:
    def __init__(self, read_line):
        self.read_line = read_line

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        LOG.append((typ, tb is None, bool(tb)))
        if self.read_line:
            LOG.append(type(tb.tb_lineno))
        return True


@pytest.mark.parametrize("read_line, graphs", [(False, 1), (True, 0)])
def test_exit_gets_a_real_traceback(read_line, graphs):
    def f(x):
        y = x + 1
        with _TracebackCM(read_line):
            raise KeyError("k")
        return y
    x = torch.ones(2)
    expected, eager_log, got, compiled_log, cnt = _run_logged(f, x)
    assert_same(got, expected)
    assert compiled_log == eager_log
    assert cnt.frame_count == graphs


# -- an object made while tracing keeps its identity across a break ------------------------------
@bytegraph.disable
def _opaque(m):
    return m * 10


def append_after_break_in_loop(x, items):
    out = []
    for m in items:
        out.append(_opaque(m))       # `out.append` is on the stack at the break, `out` is a local
    return x + len(out), out


def test_new_list_and_its_bound_method_are_one_object_across_a_break():
    x = torch.ones(2)
    cnt = CompileCounter()
    assert_same(outcome(bytegraph.compile(append_after_break_in_loop, backend=cnt), x, [1, 2, 3]),
          outcome(append_after_break_in_loop, x, [1, 2, 3]))
    assert cnt.frame_count == 1      # `x + len(out)` after the loop


# -- objects across a graph break live exactly as long as in eager ---------------------------------
# The resumed frame holds what the original frame held and nothing else does (no local of the
# transformed code, argument tuple or C call): `x = None` after a break frees x at once (refcounting,
# no collection needed), a local never read again stays alive to the end of the frame, and a value
# on the stack dies when the stack drops it.
class _Plain:
    pass


@bytegraph.disable
def _alive(ref):
    return ref() is not None


def _register(refs):
    obj = _Plain()
    refs.append(weakref.ref(obj))
    return obj


def _ignore(*args):
    return None


def rebound_after_break(x):
    o = _Plain()
    r = weakref.ref(o)
    y = x + 1
    print(end="")
    o = None
    return y * 2, r() is None


def deleted_after_break(x):
    o = _Plain()
    r = weakref.ref(o)
    y = x + 1
    print(end="")
    del o
    return y * 2, r() is None


def rebound_before_a_second_break(x):
    o = _Plain()
    r = weakref.ref(o)
    y = x + 1
    print(end="")
    o = None
    seen = _alive(r)           # runs natively: the resume function's transformed frame holds no `o`
    return y * 2, seen


def dead_local_lives_to_the_end(x):
    o = _Plain()
    r = weakref.ref(o)
    y = x + 1
    print(end="")
    return y * 2, r() is None  # `o` is never read again, but the frame holds it


def stack_value_dies_when_popped(x):
    refs = []
    y = x + 1
    _ignore(_register(refs), print(end=""))   # the new object is on the stack at the break
    return y * 2, refs[0]() is None


@pytest.mark.parametrize("fn, freed", [(rebound_after_break, True), (deleted_after_break, True),
                                       (rebound_before_a_second_break, False),
                                       (dead_local_lives_to_the_end, False),
                                       (stack_value_dies_when_popped, True)])
def test_objects_live_across_a_break_as_in_eager(fn, freed):
    x = torch.ones(2)
    expected = fn(x)
    assert expected[1] is freed
    explained = bytegraph.explain(fn)(x)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=cnt)(x), expected)
    assert cnt.frame_count == 2            # `x + 1` before the break, `y * 2` after it
    assert explained.graph_count == 2
    assert explained.graph_break_count >= 1


def dead_graph_tensors(x):
    a = x.sin()
    b = a.cos()            # a and b are never read after the break
    c = b * 2
    print(end="")
    return c + 1


def one_graph_tensor_read_again(x):
    a = x.sin()
    b = a.cos()
    c = b * 2
    print(end="")
    return c + 1, a


@pytest.mark.parametrize("fn, outputs", [(dead_graph_tensors, 1), (one_graph_tensor_read_again, 2)])
def test_tensors_the_graph_made_and_nothing_reads_again_are_not_outputs(fn, outputs):
    # nothing can observe the end of a tensor the graph made (a weak reference to it breaks the graph
    # first): a dead one does not travel to the resume function, and is not a graph output to store
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm
    x = torch.randn(3)
    assert_same(bytegraph.compile(fn, backend=backend)(x), fn(x))
    assert len(graphs) == 2
    returned = next(n for n in graphs[0].graph.nodes if n.op == "output").args[0]
    assert len(returned) == outputs


def test_compiling_runs_no_gc_callback():
    """The compiler's own allocations trigger no collection: a gc callback (or a finalizer of
    garbage) never runs inside a compile, where eager never is."""
    def f(x):
        y = x + 1
        print(end="")
        return y * 2

    seen_compiling = []

    def callback(phase, info):
        frame = sys._getframe()
        while frame is not None and frame.f_code.co_name != "_compile":
            frame = frame.f_back
        seen_compiling.append(frame is not None)

    cnt = CompileCounter()
    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 0, 0)
    try:
        got = bytegraph.compile(f, backend=cnt)(torch.ones(2))
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert_same(got, f(torch.ones(2)))
    assert cnt.frame_count == 2
    assert seen_compiling and not any(seen_compiling)    # collections ran, none inside a compile


def raise_after_two_breaks(x):
    y = x + 1
    print(end="")
    z = y * 2
    print(end="")
    raise ValueError(z.shape)


def test_traceback_after_breaks_shows_the_frame_once():
    """The hook runs the resume functions after the transformed code returned: an exception raised
    after a break has one traceback entry for the function, at the user's line, as in eager (no
    transformed frame or chain helper in between)."""
    def entries(fn):
        try:
            fn(torch.ones(2))
        except ValueError as e:
            names = [(t.name, t.lineno) for t in traceback.extract_tb(e.__traceback__)]
            return names[[n for n, _ in names].index("raise_after_two_breaks"):]
        raise AssertionError("no exception")
    cnt = CompileCounter()
    assert entries(bytegraph.compile(raise_after_two_breaks, backend=cnt)) == entries(raise_after_two_breaks)
    assert cnt.frame_count == 2         # `x + 1` and `y * 2`


# -- weak proxies: every use reaches the referent, which may be gone --------------------------------
class _Target:
    value = 3


def proxy_outlives_its_referent(x):
    o = _Target()
    p = weakref.proxy(o)
    y = x + 1
    first = p.value
    o = None                     # the referent dies here (the proxy is read after it)
    try:
        again = p.value
    except ReferenceError:
        again = "gone"
    return y * 2, first, again


def dead_proxy_argument(x, p):
    y = x + 1
    return y * 2, isinstance(p, _Target)     # isinstance reads p.__class__: ReferenceError


def test_weak_proxy_uses_run_natively():
    x = torch.ones(2)
    cnt = CompileCounter()
    got = bytegraph.compile(proxy_outlives_its_referent, backend=cnt)(x)
    assert_same(got, proxy_outlives_its_referent(x))
    assert got[1:] == (3, "gone")
    assert cnt.frame_count == 1                # `x + 1` (the handler and the rest run natively)

    dead = weakref.proxy(_Target())
    cnt = CompileCounter()
    assert_same(outcome(bytegraph.compile(dead_proxy_argument, backend=cnt), x, dead),
                outcome(dead_proxy_argument, x, dead))
    assert cnt.frame_count == 1                # `x + 1`, then isinstance raises natively


def test_contextmanager_generator_stays_paused_through_the_with_body():
    # the manager object is held only by the `with` while its __enter__ runs; its generator looked
    # dead when __enter__'s frame returned and was closed there, running the `finally` before the body
    import contextlib
    log = []

    @contextlib.contextmanager
    def phase(name):
        log.append(f"start {name}")
        try:
            yield len(log)
        finally:
            log.append(f"end {name}")

    def f(x):
        with phase("a") as n:
            y = x * n + len(log)
        return y, list(log)

    x = torch.ones(2)
    expected = f(x)
    log.clear()
    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(x), expected)
    assert cnt.frame_count == 1


# -- deaths that run code: weak reference callbacks, finalizers -----------------------------------
def finalized_when_deleted(x, log):
    y = x * 3
    o = _Plain()
    fin = weakref.finalize(o, log.append, "finalized")     # making a weak reference breaks the graph
    del o                      # eager runs the callback right here: the rest must see it
    return y + 1, len(log), fin.alive, fin()


def test_dropping_an_object_with_a_weakref_callback_runs_as_python():
    # the resumed frame traced `del o` as nothing happening, then read `len(log)` and `fin.alive` (and
    # called `fin()`, which ran the callback a second time) as before the death (CPython's test_weakref)
    x = torch.ones(2)
    expected = finalized_when_deleted(x, [])
    assert expected[1:] == (1, False, None)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(finalized_when_deleted, backend=cnt)(x, []), expected)
    assert cnt.frame_count == 1                            # `x * 3`, before weakref.finalize
    explained = bytegraph.explain(finalized_when_deleted)(x, [])
    assert [b.kind for b in explained.break_reasons][-1] == "finalizer"


class _Resource:
    pass


def _keep_callers_frame(held):
    held.append(sys._getframe(1))


def frame_kept_then_local_dropped(x, held, log):
    y = x * 2
    o = _Resource()
    weakref.finalize(o, log.append, "finalized")
    _keep_callers_frame(held)      # a break: the program keeps the frame running this code
    del o                          # eager's frame lets go of o here, although it is kept
    log.append("after del")
    return y + 1


def test_a_kept_frame_does_not_keep_the_locals_handed_to_the_resume_function():
    # the transformed code returned its resume call with o still in its locals, which the kept frame
    # object then held: the finalizer ran after the function, not at `del o` (CPython's test_tempfile
    # test_warnings_on_cleanup: check_warnings keeps its caller's frame)
    log = []
    frame_kept_then_local_dropped(torch.ones(2), [], log)
    assert log == ["finalized", "after del"]
    cnt = CompileCounter()
    opt = bytegraph.compile(frame_kept_then_local_dropped, backend=cnt)
    for _ in range(2):
        log, held = [], []
        assert_same(opt(torch.ones(2), held, log), frame_kept_then_local_dropped(torch.ones(2), [], []))
        assert log == ["finalized", "after del"]
    assert cnt.frame_count == 1          # `x * 2`, before weakref.finalize breaks


def pop_and_drop(x, box, log):
    y = x + 1
    o = box.pop()              # the last reference to the popped object: dropped with `o`
    del o
    return y * 2, len(log)


def test_an_object_gaining_a_weakref_callback_recompiles():
    # the first call's object has no weak reference: the graph traces its death as silent, under a
    # guard that the next object, watched by weakref.finalize, fails
    x = torch.ones(2)
    cnt = CompileCounter()
    opt = bytegraph.compile(pop_and_drop, backend=cnt)
    assert_same(opt(x, [_Plain()], []), pop_and_drop(x, [_Plain()], []))
    assert cnt.frame_count == 1
    assert bytegraph.explain(pop_and_drop)(x, [_Plain()], []).graph_break_count == 0

    def watched_box(log):
        o = _Plain()
        weakref.finalize(o, log.append, "finalized")
        return [o]
    log = []
    expected = pop_and_drop(x, watched_box(log), log)
    assert expected[1] == 1
    log = []
    assert_same(opt(x, watched_box(log), log), expected)
    assert cnt.frame_count == 1       # the miss recompiled to no graph: a finalizer break runs the frame as is
    log = []
    breaks = bytegraph.explain(pop_and_drop)(x, watched_box(log), log).break_reasons
    assert [b.kind for b in breaks] == ["finalizer"]


def read_object_and_table(x, obj, table):
    return x + obj.v + sum(table.values())     # guards the class of obj and the keys of table


def _made_in_a_call():
    class Made:
        def __init__(self):
            self.v = 1

    def key():
        pass
    return Made(), {key: 2}


def test_cache_entries_hold_the_programs_objects_weakly():
    # the guards held the class they checked (type(obj) is Made) and the dict keys they compared, so
    # a class or key made and dropped by the program never died, its weak references' callbacks never
    # ran (CPython's test_weakref: a class made in a test method, WeakKeyDictionary entries)
    x = torch.ones(2)
    cnt = CompileCounter()
    opt = bytegraph.compile(read_object_and_table, backend=cnt)
    obj, table = _made_in_a_call()
    assert_same(opt(x, obj, table), read_object_and_table(x, obj, table))
    assert_same(opt(x, obj, table), read_object_and_table(x, obj, table))
    assert cnt.frame_count == 1
    class_ref, key_ref = weakref.ref(type(obj)), weakref.ref(next(iter(table)))
    del obj, table
    gc.collect()
    assert class_ref() is None and key_ref() is None
    obj, table = _made_in_a_call()              # a new class and key: a new entry
    assert_same(opt(x, obj, table), read_object_and_table(x, obj, table))
    assert cnt.frame_count == 2
