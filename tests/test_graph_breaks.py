"""Graph breaks that keep going: the root frame compiles the graph so far, runs the unsupported
instruction natively and continues in a resume function that is compiled in turn. Every test checks
the result against eager and the exact number of graphs."""
import logging
import time

import bytegraph
import pytest
import torch
from bytegraph.testing import CompileCounter
from helpers import assert_same


def straight_line_print(x):
    a = x * 2
    b = a.sin()
    print("between the graphs")
    c = b + a
    return c.relu()


def test_print_in_straight_line_code_makes_two_graphs(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(straight_line_print, backend=cnt)
    x = torch.randn(5)
    torch.testing.assert_close(opt(x), straight_line_print(x))
    assert cnt.frame_count == 2
    assert cnt.op_count == 4
    assert capsys.readouterr().out == "between the graphs\n" * 2
    opt(torch.randn(5))
    assert cnt.frame_count == 2          # both frames hit their caches
    (record,) = bytegraph.stats.break_records
    assert record.kind == "io"
    assert record.user_stack[-1].name == "straight_line_print"
    assert record.user_stack[-1].lineno == straight_line_print.__code__.co_firstlineno + 3


@bytegraph.disable
def _eager_scale(t, k=3):
    return t * k


def calls_disabled(x, y):
    a = x + y
    b = _eager_scale(a, k=2)
    return (b - y).cos()


def test_disabled_function_in_the_middle_makes_two_graphs():
    cnt = CompileCounter()
    opt = bytegraph.compile(calls_disabled, backend=cnt)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(opt(x, y), calls_disabled(x, y))
    assert cnt.frame_count == 2
    assert cnt.op_count == 3             # add | sub, cos: the disabled multiply is not captured
    assert [r.kind for r in bytegraph.stats.break_records] == ["skipped_function"]


def branch_on_tensor(x):
    y = x.cos()
    if x.sum() > 0:
        z = y + 1
    else:
        z = y - 1
    return z * 2


def test_if_on_tensor_value_is_correct_on_both_branches():
    cnt = CompileCounter()
    opt = bytegraph.compile(branch_on_tensor, backend=cnt)
    pos, neg = torch.rand(4) + 0.1, -torch.rand(4) - 0.1
    torch.testing.assert_close(opt(pos), branch_on_tensor(pos))
    assert cnt.frame_count == 2          # cos, sum, gt | add, mul
    torch.testing.assert_close(opt(neg), branch_on_tensor(neg))
    assert cnt.frame_count == 3          # sub, mul: the other resume function
    torch.testing.assert_close(opt(pos * 2), branch_on_tensor(pos * 2))
    torch.testing.assert_close(opt(neg * 2), branch_on_tensor(neg * 2))
    assert cnt.frame_count == 3
    assert [r.kind for r in bytegraph.stats.break_records] == ["tensor_branch"]


def break_in_loop(x):
    acc = x
    for i in range(3):
        acc = acc * 2
        print("iteration", i)
        acc = acc + i
    return acc.sum()


def test_break_inside_for_loop_reuses_cached_resume(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_loop, backend=cnt)
    x = torch.randn(4)
    torch.testing.assert_close(opt(x), break_in_loop(x))
    # the frame up to the first print, then one resume frame per remaining iteration count (the loop
    # iterator travels as the tuple of its remaining items)
    assert cnt.frame_count == 4
    first = cnt.frame_count
    torch.testing.assert_close(opt(x + 1), break_in_loop(x + 1))
    assert cnt.frame_count == first      # no new graphs, no new resume code objects
    out = capsys.readouterr().out
    assert out.count("iteration 2") == 4
    from bytegraph.frontend import resume
    codes = resume._RESUME_CACHE[break_in_loop.__code__]
    assert len([k for k in codes if k[0] == "code"]) == 1


def test_fullgraph_still_raises_with_location():
    opt = bytegraph.compile(straight_line_print, backend=CompileCounter(), fullgraph=True)
    with pytest.raises(bytegraph.GraphBreakError, match=r"test_graph_breaks.py:\d+ in straight_line_print"):
        opt(torch.randn(3))


def break_in_try(x):
    y = x + 1
    try:
        print("inside try")
        y = y.sin()
    finally:
        y = y * 2
    return y


def test_break_inside_try_finally_compiles_around_it(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_try, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), break_in_try(x))
    assert cnt.frame_count == 2          # add | sin, mul (the resume function keeps the try/finally)
    assert cnt.op_count == 3
    assert capsys.readouterr().out == "inside try\n" * 2


def break_inside_inlined(x):
    return _helper_that_prints(x * 2) + 1


def _helper_that_prints(t):
    t = t.sin()
    print("in helper")
    return t.cos()


def test_break_inside_inlined_callee_breaks_at_the_callers_call():
    cnt = CompileCounter()
    opt = bytegraph.compile(break_inside_inlined, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), break_inside_inlined(x))
    # caller: mul | helper (its own frame): sin | cos | caller's resume: add
    assert cnt.frame_count == 4
    record = bytegraph.stats.break_records[0]
    assert [f.name for f in record.user_stack] == ["break_inside_inlined", "_helper_that_prints"]


def test_stack_values_below_the_call_and_side_effects_survive_the_break():
    log = []

    def fn(x, items):
        items.append(x.sum())
        total = x.cos() + print_and_return(x * 3)
        log.append("after")
        return total, len(items)

    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(4)
    items_c, items_e = [], []
    out_c, out_e = opt(x, items_c), fn(x, items_e)
    torch.testing.assert_close(out_c, out_e)
    torch.testing.assert_close(items_c, items_e)
    assert log == ["after", "after"]
    assert cnt.frame_count == 2


@bytegraph.disable
def print_and_return(t):
    print("value", t.shape)
    return t


# -- breaks inside `with` blocks: grad mode is right on both sides ---------------------------------
@bytegraph.disable
def _report_grad_mode(t, log):
    log.append(torch.is_grad_enabled())
    return t + 1


def break_in_no_grad(x, log):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        z = _report_grad_mode(z, log)
        w = z * 3
        log.append(torch.is_grad_enabled())
    return w + y, w.requires_grad, torch.is_grad_enabled()


def test_break_inside_no_grad_runs_the_call_without_grad_and_resumes_inside_the_block():
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_no_grad, backend=cnt)
    x = torch.randn(4, requires_grad=True)
    log_e, log_c = [], []
    out_e, out_c = break_in_no_grad(x, log_e), opt(x, log_c)
    torch.testing.assert_close(out_c[0], out_e[0])
    assert out_c[1:] == out_e[1:] == (False, True)
    assert out_c[0].requires_grad and out_e[0].requires_grad
    assert log_c == log_e == [False, False]     # the native call and the rest of the block: grad off
    assert torch.is_grad_enabled()
    assert cnt.frame_count == 2
    opt(x, [])
    opt(torch.randn(4, requires_grad=True), [])
    assert cnt.frame_count == 2
    assert bytegraph.stats.recompiles == 0


def break_in_nested_grad_modes(x, log):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            b = _report_grad_mode(b, log)
            c = b + a
        d = c * 2
        log.append(torch.is_grad_enabled())
    return d, c.requires_grad, d.requires_grad


def break_in_set_grad_enabled(x, log):
    with torch.set_grad_enabled(False):
        y = x.exp()
        y = _report_grad_mode(y, log)
        w = y * 2
    return w, w.requires_grad, torch.is_grad_enabled()


@pytest.mark.parametrize("fn", [break_in_nested_grad_modes, break_in_set_grad_enabled])
def test_break_inside_nested_and_set_grad_enabled_blocks(fn):
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3, requires_grad=True)
    log_e, log_c = [], []
    out_e, out_c = fn(x, log_e), opt(x, log_c)
    torch.testing.assert_close(out_c[0], out_e[0])
    assert out_c[1:] == out_e[1:]
    assert out_c[0].requires_grad == out_e[0].requires_grad
    assert log_c == log_e
    assert torch.is_grad_enabled()
    assert cnt.frame_count == 2


@bytegraph.disable
def _raise_value_error(t):
    raise ValueError(f"bad value {t.shape}")


def exception_leaves_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        _raise_value_error(z)
    return z


def exception_caught_around_no_grad(x):
    y = x * 2
    try:
        with torch.no_grad():
            z = y + 1
            _raise_value_error(z)
            z = z * 100
    except ValueError:
        z = y - 1
    return z, torch.is_grad_enabled()


def test_exception_from_the_native_call_restores_grad_mode():
    cnt = CompileCounter()
    opt = bytegraph.compile(exception_leaves_no_grad, backend=cnt)
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="bad value"):
        opt(x)
    assert torch.is_grad_enabled()       # the block's own exit ran (natively) on the way out
    assert cnt.frame_count == 1

    opt = bytegraph.compile(exception_caught_around_no_grad, backend=cnt)
    out_e, out_c = exception_caught_around_no_grad(x), opt(x)
    torch.testing.assert_close(out_c[0], out_e[0])
    assert out_c[0].requires_grad and out_c[1] is True
    assert torch.is_grad_enabled()


class _Recorder:
    def __init__(self, swallow=False):
        self.events = []
        self.swallow = swallow

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, typ, value, tb):
        self.events.append("exit" if typ is None else f"exit {typ.__name__}")
        return self.swallow


def break_in_user_context_manager(x):
    rec = _Recorder()
    with rec as r:
        y = x * 2
        print("inside", r.events)
        z = y + 1
    return z, rec.events


def user_context_manager_swallows(x):
    rec = _Recorder(swallow=True)
    y = x * 2
    with rec:
        y = y + 1
        _raise_value_error(y)
        y = y * 100
    return y.cos(), rec.events


@pytest.mark.parametrize("fn, graphs", [(break_in_user_context_manager, 2), (user_context_manager_swallows, 1)])
def test_break_inside_user_context_manager(fn, graphs):
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3)
    out_e, out_c = fn(x), opt(x)
    torch.testing.assert_close(out_c[0], out_e[0])
    assert out_c[1] == out_e[1]          # entered once, exited once (swallowing the ValueError)
    assert cnt.frame_count == graphs


@pytest.mark.skipif(not hasattr(torch, "autocast"), reason="no torch.autocast")
def test_break_inside_autocast_block():
    def fn(a, b, log):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            c = a @ b
            log.append(torch.is_autocast_enabled("cpu"))
            _report_grad_mode(c, log)
            d = c @ b
        return c.dtype, d.dtype, (a @ b).dtype, d.float()

    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    log_e, log_c = [], []
    out_e, out_c = fn(a, b, log_e), opt(a, b, log_c)
    assert out_c[:3] == out_e[:3] == (torch.bfloat16, torch.bfloat16, torch.float32)
    torch.testing.assert_close(out_c[3], out_e[3])
    assert log_c == log_e
    assert not torch.is_autocast_enabled("cpu")
    assert cnt.frame_count == 2


# -- try/except -----------------------------------------------------------------------------------
_finally_runs = []


def native_call_raises_inside_try(x):
    y = x.sin()
    try:
        y = y * 2
        _raise_value_error(y)
        y = y * 100
    except ValueError as e:
        y = y - len(str(e))
    finally:
        _finally_runs.append(1)
    return y.cos()


def test_exception_from_the_native_call_goes_to_the_frames_handler():
    cnt = CompileCounter()
    opt = bytegraph.compile(native_call_raises_inside_try, backend=cnt)
    x = torch.randn(3)
    _finally_runs.clear()
    expected = native_call_raises_inside_try(x)
    torch.testing.assert_close(opt(x), expected)
    assert _finally_runs == [1, 1]       # the finally body ran once per call
    assert cnt.frame_count == 1          # sin, mul; the handler ran natively


def test_break_in_except_body_runs_the_frame_eagerly(capsys):
    def fn(x):
        y = x * 2
        try:
            raise KeyError("traced raise")
        except KeyError:
            print("handling")            # the caught exception is on the stack: not resumable
            y = y + 1
        return y

    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), fn(x))
    assert cnt.frame_count == 0
    assert [r.kind for r in bytegraph.stats.break_records] == ["io"]


@bytegraph.disable
def _raise_for_zero(i):
    if i == 0:
        raise ValueError(i)
    return i * 10


def loop_back_to_break_after_handler(x, items):
    y = x * 2
    out = []
    for i in items:
        try:
            out.append(_raise_for_zero(i))   # natively, `out.append` is the method and its self
        except ValueError:
            out.append(-1)
    return y + len(out), out


def test_loop_reaching_the_break_again_after_a_handler_runs_natively():
    # the call raises, the handler runs natively and the loop comes back to the break instruction: it
    # keeps running natively (the stack it built is not the one the trace's continuation expects; a
    # resume handed the list itself as `out.append`, and calling it raised TypeError)
    cnt = CompileCounter()
    opt = bytegraph.compile(loop_back_to_break_after_handler, backend=cnt)
    x = torch.ones(2)
    assert_same(opt(x, [0, 1, 2]), loop_back_to_break_after_handler(x, [0, 1, 2]))
    assert cnt.frame_count == 1                       # x * 2; the rest ran natively after the handler
    assert [r.kind for r in bytegraph.stats.break_records] == ["skipped_function"]
    assert_same(opt(x, [1, 2]), loop_back_to_break_after_handler(x, [1, 2]))
    assert cnt.frame_count == 3                       # without an exception: a resume function per item


@bytegraph.disable
def _native_raise():
    raise ValueError("from a native call")


def native_call_raising(x):
    y = x + 1
    _native_raise()
    return y


def native_call_reading_the_stack(x):
    y = x + 1
    import traceback
    here = traceback.extract_stack()[-1]
    return y, here.lineno, here.line


def test_native_instruction_at_a_break_runs_at_its_own_line():
    # what the native instruction runs sees the frame at the instruction's line (it saw the `def` line)
    import traceback
    cnt = CompileCounter()
    got = bytegraph.compile(native_call_reading_the_stack, backend=cnt)(torch.ones(1))
    assert_same(got, native_call_reading_the_stack(torch.ones(1)))
    assert got[2] == "here = traceback.extract_stack()[-1]"
    assert cnt.frame_count == 1
    lines = []
    for fn in (native_call_raising, bytegraph.compile(native_call_raising, backend=cnt)):
        with pytest.raises(ValueError) as info:
            fn(torch.ones(1))
        lines.append([(s.lineno, s.line) for s in traceback.extract_tb(info.value.__traceback__)
                      if s.name == "native_call_raising"])
    assert lines[0] == lines[1] == [(native_call_raising.__code__.co_firstlineno + 2, "_native_raise()")]
    assert cnt.frame_count == 2


def frames_of_a_raise(x):
    def outer(t):
        scale = 5
        y = [t * scale]    # noqa: F841 - unread: a list travels (an unread tensor the graph made does not)

        def inner():
            return 1 / 0
        return inner()     # a function made in the frame: called natively, it raises
    try:
        outer(x)
    except ZeroDivisionError as e:
        tb = e.__traceback__
    frames = []
    while tb:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    outer_frame = frames[1]
    return x + 1, outer_frame.f_lineno, sorted(outer_frame.f_locals)


def test_frame_at_a_break_holds_the_program_locals_by_name():
    # the frame running the native instruction holds the locals in their own slots and nothing else (a
    # traceback's frame showed the rebuilt values under temporary names, and not `inner` or `scale`)
    cnt = CompileCounter()
    got = bytegraph.compile(frames_of_a_raise, backend=cnt)(torch.ones(1))
    want = frames_of_a_raise(torch.ones(1))
    assert_same(got, want)
    assert want[2] == ["inner", "scale", "t", "y"]
    assert cnt.frame_count == 1           # outer's t * scale (the root goes on natively in its handler)


def test_trace_function_set_by_a_call_in_compiled_code_sees_eager_events():
    # sys.settrace (pdb.set_trace(), breakpoint(), a coverage tool started mid-run) called from compiled
    # code: the frame goes on natively, as eager's does; its resume functions ran instead, and the
    # tracer saw them (a `call` of the resumed function, its lines): CPython's test_sys_settrace
    import sys

    def helper():
        a = 1
        return a

    def start_tracing(events):
        def tracer(frame, event, arg):
            events.append((frame.f_code.co_name, event, frame.f_lineno - frame.f_code.co_firstlineno))
            return tracer
        sys.settrace(tracer)
        sys._getframe(1).f_trace = tracer       # as pdb does: this frame's next lines are traced too

    def f(x, events):
        y = x + 1
        start_tracing(events)
        helper()
        z = y * 2
        sys.settrace(None)
        return z

    want_events, got_events = [], []
    want = f(torch.ones(1), want_events)
    cnt = CompileCounter()
    got = bytegraph.compile(f, backend=cnt)(torch.ones(1), got_events)
    assert_same(got, want)
    assert got_events == want_events and ("f", "line", 3) in want_events and ("helper", "call", 0) in want_events
    assert cnt.frame_count == 1          # x + 1; the rest ran natively under the tracer


# -- frames with their own cells -------------------------------------------------------------------
def closure_rebound_after_break(x):
    scale = x.mean()

    def apply(t):
        return t * scale
    print("made a closure")
    scale = scale + 10                   # the closure sees the new value (same cell)
    return apply(x) + 1, apply


def test_frame_with_cells_breaks_and_shares_cells_with_its_closures(capsys):
    cnt = CompileCounter()
    opt = bytegraph.compile(closure_rebound_after_break, backend=cnt)
    x = torch.randn(4)
    out_e, out_c = closure_rebound_after_break(x), opt(x)
    torch.testing.assert_close(out_c[0], out_e[0])
    torch.testing.assert_close(out_c[1](x), out_e[1](x))     # the returned closure works too
    assert out_c[1].__code__.co_name == "apply"
    assert cnt.frame_count == 2
    for _ in range(3):
        opt(torch.randn(4))
    assert cnt.frame_count == 2          # no recompile: the closure is guarded by its code
    assert bytegraph.stats.recompiles == 0


# -- loops: resume functions do not nest, and are made once per break point ----------------------
def loop_on_tensor_condition(x):
    while x.sum() > 0:
        x = x - 1
    return x * 2


def test_long_data_dependent_loop_does_not_grow_the_python_stack():
    cnt = CompileCounter()
    opt = bytegraph.compile(loop_on_tensor_condition, backend=cnt)
    x = torch.tensor([3000.0])           # 3000 breaks, well past the recursion limit if they nested
    torch.testing.assert_close(opt(x), loop_on_tensor_condition(x))
    assert cnt.frame_count <= 3
    assert bytegraph.stats.recompiles == 0


def test_resume_functions_of_resume_functions_come_from_the_original_code():
    from bytegraph.frontend import resume
    cnt = CompileCounter()
    opt = bytegraph.compile(break_in_loop, backend=cnt)
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        opt(torch.randn(4))
    codes = resume.resume_codes_of(break_in_loop.__code__)
    assert len(codes) == 1
    assert all(resume.resume_codes_of(c) == [] for c in codes)   # no resume code made from a resume code


# -- errors and logs ------------------------------------------------------------------------------
class _InternalBoom(Exception):
    pass


def _boom(tx, ins):
    raise _InternalBoom("simulated bug in a handler")


def adds_things(x):
    y = x.sin()
    return y + 1


def test_internal_error_raises_with_the_users_location_by_default(monkeypatch):
    from bytegraph.convert_frame import InternalError
    from bytegraph.frontend import opcodes
    monkeypatch.setitem(opcodes.DISPATCH, "BINARY_OP", _boom)
    opt = bytegraph.compile(adds_things, backend=CompileCounter())
    with pytest.raises(InternalError) as info:
        opt(torch.randn(3))
    message = str(info.value)
    assert "adds_things" in message and "test_graph_breaks.py" in message
    assert f"test_graph_breaks.py:{adds_things.__code__.co_firstlineno + 2}" in message   # the `y + 1` line
    assert "strict" in message


def test_internal_error_outside_strict_mode_falls_back_to_eager_with_a_warning(monkeypatch, caplog):
    from bytegraph.frontend import opcodes
    monkeypatch.setitem(opcodes.DISPATCH, "BINARY_OP", _boom)
    cnt = CompileCounter()
    opt = bytegraph.compile(adds_things, backend=cnt)
    logger = logging.getLogger("bytegraph")
    logger.addHandler(caplog.handler)
    try:
        with bytegraph.config.patch(strict=False), caplog.at_level(logging.WARNING, logger="bytegraph"):
            x = torch.randn(3)
            torch.testing.assert_close(opt(x), adds_things(x))
    finally:
        logger.removeHandler(caplog.handler)
    assert cnt.frame_count == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("internal error" in r.getMessage() and "adds_things" in r.getMessage() and
               "_InternalBoom" in r.getMessage() for r in warnings)


def test_env_vars_set_strict_and_logs(monkeypatch):
    from bytegraph.config import Config
    monkeypatch.setenv("BYTEGRAPH_STRICT", "1")
    monkeypatch.setenv("BYTEGRAPH_LOGS", "graph_breaks")
    config = Config()
    assert config.strict is True and config.logs == "graph_breaks"
    monkeypatch.setenv("BYTEGRAPH_STRICT", "0")
    assert Config().strict is False


def test_graph_breaks_log_shows_reason_and_location(caplog, capsys):
    logger = logging.getLogger("bytegraph")
    logger.addHandler(caplog.handler)
    try:
        with bytegraph.config.patch(logs="graph_breaks"), caplog.at_level(logging.INFO, logger="bytegraph"):
            opt = bytegraph.compile(straight_line_print, backend=CompileCounter())
            opt(torch.randn(3))
    finally:
        logger.removeHandler(caplog.handler)
    records = [r for r in caplog.records if r.name == "bytegraph.graph_breaks"]
    assert len(records) == 1
    message = records[0].getMessage()
    line = straight_line_print.__code__.co_firstlineno + 3
    assert "print() performs I/O" in message
    assert f"test_graph_breaks.py:{line} in straight_line_print" in message


# -- Python floats that change on every call ---------------------------------------------------------
def fresh_float_each_call(x):
    start = time.perf_counter()          # a new Python float on every call crosses the break
    y = x * 2
    return y + 1, time.perf_counter() - start >= 0


def test_fresh_python_floats_across_a_break_do_not_recompile():
    # the first resume function only passes `start` along (no guard on it); the second computes with
    # it and recompiles once with it unspecialized (automatic dynamic), as torch.compile does
    cnt = CompileCounter()
    opt = bytegraph.compile(fresh_float_each_call, backend=cnt)
    for _ in range(6):
        x = torch.randn(3)
        y, ok = opt(x)
        torch.testing.assert_close(y, x * 2 + 1)
        assert ok is True
    assert bytegraph.stats.recompiles <= 1


def message_crossing_a_break(x, message):
    y = x * 2
    bytegraph.graph_break()
    return y + 1, message             # only handed on: never compared, so never guarded


def test_strings_only_handed_on_neither_recompile_nor_stay_referenced():
    import sys
    cnt = CompileCounter()
    opt = bytegraph.compile(message_crossing_a_break, backend=cnt)
    for i in range(4):
        message = "".join(["step ", str(i)])
        before = sys.getrefcount(message)
        y, got = opt(torch.ones(2), message)
        assert got is message and torch.equal(y, torch.ones(2) * 2 + 1)
        del got
        assert sys.getrefcount(message) == before      # the cache keeps no reference to it
    assert cnt.frame_count == 2 and bytegraph.stats.recompiles == 0


def test_a_guarded_string_is_held_by_the_cache_as_an_equal_copy():
    import sys

    def f(x, mode):
        return x + 1 if mode == "add" else x - 1
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    mode = "".join(["a", "dd"])
    before = sys.getrefcount(mode)
    assert torch.equal(opt(torch.ones(1), mode), f(torch.ones(1), mode))
    assert sys.getrefcount(mode) == before            # guarded by value, not by keeping the object
    assert torch.equal(opt(torch.ones(1), "".join(["s", "ub"])), torch.zeros(1))
    assert cnt.frame_count == 2


def test_debug_function_also_compiles_its_resume_functions(capsys):
    cnt = CompileCounter()
    with bytegraph.config.patch(debug_function="straight_line_print"):
        opt = bytegraph.compile(straight_line_print, backend=cnt)
        x = torch.randn(3)
        torch.testing.assert_close(opt(x), straight_line_print(x))
    assert cnt.frame_count == 2


# -- zero-argument super() after a break: resume functions bind it to the method's first argument
class _SuperSetattrConfig:
    def __setitem__(self, k, v):
        v = v * 2
        print(k)                          # break: the rest runs in a resume function
        super().__setattr__(k, v + 1)     # `self` is not otherwise read after the break


class _SuperDoubleDict(dict):
    def __setitem__(self, k, v):
        print(k)
        super().__setitem__(k, v.cos())


class _SuperBase:
    def scale(self, x):
        return x * self.factor


class _SuperChild(_SuperBase):
    factor = 3

    def scale(self, x):
        get = lambda: self.factor         # noqa: E731 -- makes `self` a cell variable
        y = x.sin()
        print("in scale")
        return super().scale(y) + get()

    def twice(self, x):
        for _ in range(2):
            x = x + 1
            print("loop")                 # a break in a loop: the resume function breaks again
            x = super().scale(x)
        return x


def test_zero_arg_super_setattr_after_a_break_in_setitem(capsys):
    def f(x, c):
        y = x.sin()
        c["a"] = y
        return y.cos()

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(4)
    c_opt, c_ref = _SuperSetattrConfig(), _SuperSetattrConfig()
    torch.testing.assert_close(opt(x, c_opt), f(x, c_ref))
    torch.testing.assert_close(c_opt.a, c_ref.a)
    # f breaks at the STORE_SUBSCR: sin | __setitem__ compiles mul | add | f resumes: cos
    assert cnt.frame_count == 4
    assert cnt.op_count == 4
    assert capsys.readouterr().out == "a\na\n"
    c2 = _SuperSetattrConfig()
    torch.testing.assert_close(opt(x, c2), f(x, _SuperSetattrConfig()))
    torch.testing.assert_close(c2.a, x.sin() * 2 + 1)
    assert cnt.frame_count == 4


def test_zero_arg_super_setitem_of_a_dict_subclass_after_a_break(capsys):
    def f(x, d):
        d["w"] = x + 1
        return x * 2

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    d_opt, d_ref = _SuperDoubleDict(), _SuperDoubleDict()
    torch.testing.assert_close(opt(x, d_opt), f(x, d_ref))
    assert list(d_opt) == ["w"]
    torch.testing.assert_close(d_opt["w"], d_ref["w"])
    # f's `x + 1` | __setitem__'s resume function: cos (dict.__setitem__ runs natively) | f's `x * 2`
    assert cnt.frame_count == 3
    assert capsys.readouterr().out == "w\nw\n"


def test_zero_arg_super_with_self_in_a_cell_and_in_a_loop(capsys):
    def f(obj, x):
        return obj.scale(x) + obj.twice(x)

    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(5)
    obj = _SuperChild()
    torch.testing.assert_close(opt(obj, x), f(obj, x))
    # f: sin | scale's resume: mul, add | twice: add | its resume: mul, add (loop again) | mul | f's resume: add
    assert cnt.frame_count == 6
    out = capsys.readouterr().out
    assert out == "in scale\nloop\nloop\n" * 2
    torch.testing.assert_close(opt(obj, x), f(obj, x))
    assert cnt.frame_count == 6


# -- numpy traced through torch._numpy (frontend/variables/numpy.py) -----------------------------

def _numpy_roundtrip(x):
    import numpy as np
    a = x.numpy()
    b = np.square(a) + 1
    return torch.from_numpy(b), float(np.sum(b)), b.shape


def _numpy_made_in_frame(x):
    import numpy as np
    return np.arange(4) * 2, np.ones((2, 2)) + x.shape[0], x


def _numpy_scalars(x):
    import numpy as np
    s = np.float64(1.5) * 2
    arr = np.array(2.5)           # a 0-d array, not a scalar
    v = np.arange(6).reshape(2, 3)
    return s, arr, -v, v[1, 2], v[1], v.sum(), np.maximum(v, 3).T, 2 ** v, x + 1


@pytest.mark.parametrize("fn", [_numpy_roundtrip, _numpy_made_in_frame, _numpy_scalars])
def test_numpy_calls_are_traced_and_equal_eager(fn):
    pytest.importorskip("numpy")
    x = torch.randn(3)
    expected = fn(x.clone())
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(x.clone())
    assert_same(got, expected, exact=True)
    assert cnt.frame_count >= 1 and cnt.op_count >= 2


def test_numpy_array_identity_and_memory_are_kept():
    np = pytest.importorskip("numpy")

    def fn(x):
        a = x.numpy()
        b = a * 2
        t = torch.from_numpy(b)
        return a, b, b, t

    x = torch.randn(3)
    cnt = CompileCounter()
    a, b, b2, t = bytegraph.compile(fn, backend=cnt)(x)
    assert cnt.frame_count == 1
    assert b is b2 and isinstance(a, np.ndarray) and a.dtype == np.float32
    a[0] = 100.0          # x.numpy() shares memory with x, as in eager
    assert x[0].item() == 100.0
    b[1] = 7.0            # torch.from_numpy(b) shares memory with b
    assert t[1].item() == 7.0 and t is not x


def test_untraced_numpy_uses_break_and_stay_correct():
    np = pytest.importorskip("numpy")

    def fn(x):
        y = x * 2
        a = np.arange(3.0)
        a.fill(2.0)             # not traced: runs at a break
        n = np.ones(3).item(0)  # reads a value: runs at a break
        return y + 1, a, n, np.squeeze(np.ones((1,)))   # a 0-d result of unknown kind: at a break

    x = torch.randn(3)
    expected = fn(x)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=cnt)(x), expected, exact=True)
    assert cnt.frame_count >= 1


def test_numpy_inplace_operator_updates_shared_memory():
    np = pytest.importorskip("numpy")

    def fn(x):
        a = x.numpy()
        a += 1            # updates x too, as in eager
        s = np.float64(2.0)
        t = s
        s += 1            # a numpy scalar is immutable: t keeps its value
        return a, s, t

    x = torch.zeros(3)
    ref = torch.zeros(3)
    expected = fn(ref)
    cnt = CompileCounter()
    got = bytegraph.compile(fn, backend=cnt)(x)
    assert_same(got, expected, exact=True)
    assert torch.equal(x, ref) and cnt.frame_count == 1


def test_numpy_result_differing_from_torch_numpy_breaks_and_item_assignment_is_traced():
    np = pytest.importorskip("numpy")

    def fn(x):
        v = np.arange(6, dtype=np.int32)
        w = v / 2          # numpy: float64; torch._numpy: float32 -> a graph break, eager numpy
        a = x.numpy()
        a[1] = 5.0         # writes through to x, as in eager
        return w, a * 2, x + 1

    x = torch.zeros(3)
    ref = torch.zeros(3)
    expected = fn(ref)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=cnt)(x), expected, exact=True)
    assert torch.equal(x, ref) and cnt.frame_count >= 1


def test_break_in_a_function_whose_jump_targets_carry_extended_arg():
    """A jump to an instruction with an EXTENDED_ARG prefix (the 256th constant) targets the prefix."""
    consts = "".join(f"    c{i} = {1000 + i}\n" for i in range(300))
    src = ("def f(x):\n" + consts + "    x = x * 2\n    note(x)\n    if c0 > 999:\n        x = x + 1\n"
           "    y = 5000\n    return x + y + c299\n")
    ns = {"note": bytegraph.disable(lambda v: None), "torch": torch}
    exec(compile(src, "<many_consts>", "exec"), ns)
    cnt = CompileCounter()
    x = torch.ones(2)
    torch.testing.assert_close(bytegraph.compile(ns["f"], backend=cnt)(x), ns["f"](x))
    assert cnt.frame_count == 2 and len(bytegraph.stats.break_records) == 1


def test_every_break_kind_is_registered_raised_and_has_a_hint():
    """Graph-break reasons are data: each raise site names a registered kind; each kind is raised."""
    import pathlib
    import re

    from bytegraph.frontend.graph_break import kinds
    root = pathlib.Path(bytegraph.__file__).resolve().parent.parent
    raised = set()
    for folder in ("compiler", "frontend", "guards", "backends"):
        for path in (root / folder).rglob("*.py"):
            raised |= set(re.findall(r'\bUnsupported\(\s*"(\w+)"', path.read_text()))
    assert raised == set(kinds())
    assert all(kind.explanation and kind.hint for kind in kinds().values())


class _Log(list):
    pass


def _append_after_break(x, log):
    y = x * 2
    log.append(print(end=""))         # `log.append` is on the stack at the break
    return y + len(log)


def _join_after_break(x):
    y = x * 2
    return ", ".join([str(print(end="")), "a"]), y + 1   # so is `", ".join`


@pytest.mark.parametrize("fn, make_args", [(_append_after_break, lambda: (torch.ones(2), [])),
                                           (_append_after_break, lambda: (torch.ones(2), _Log())),
                                           (_join_after_break, lambda: (torch.ones(2),))])
def test_a_builtin_method_on_the_stack_at_a_break_does_not_recompile_every_call(fn, make_args):
    # the resumed frame gets a new bound method object on every call: guarded as what it is (that
    # object's method of that name), not by identity
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    compiled = []
    for _ in range(4):
        args, ref = make_args(), make_args()
        assert_same(opt(*args), fn(*ref))
        assert args[1:] == ref[1:]
        compiled.append(bytegraph.stats.frames_compiled)
    assert cnt.frame_count == 2                  # before the break, after it
    assert bytegraph.stats.recompiles == 0 and compiled[0] == compiled[-1] >= 2


def test_a_method_needing_its_defining_class_bound_again_at_a_break():
    # `pat.search` on the stack at a break is rebuilt as `Pattern.search.__get__(pat, Pattern)`: without
    # the owner CPython 3.11 builds a method that crashes the process when called (CPython's
    # test_typing.RETests.test_basics segfaulted)
    import re

    def f(x):
        pat = re.compile("[a-z]+", re.I)
        y = x * 2
        found = pat.search(str(print(end="")) + "12ab")       # a break with `pat.search` on the stack
        return y + 1, found.group(0)

    cnt = CompileCounter()
    assert_same(bytegraph.compile(f, backend=cnt)(torch.ones(2)), f(torch.ones(2)))
    assert cnt.frame_count == 2


def test_fullgraph_lets_the_programs_own_exception_through():
    # with tensor work before the raise, fullgraph=True answered GraphBreakError instead of the
    # program's ValueError; a later call that does not raise compiles in one graph
    def f(x):
        y = x * 2
        if x.shape[0] == 5:
            raise ValueError(f"bad size {y.shape[0]}")
        return y + 1

    cnt = CompileCounter()
    g = bytegraph.compile(f, backend=cnt, fullgraph=True)
    with pytest.raises(ValueError, match="bad size 5"):
        g(torch.ones(5))
    assert cnt.frame_count == 0
    x = torch.ones(4)
    assert_same(g(x), f(x))
    assert cnt.frame_count == 1


# -- a break while loading a method (`obj.name(...)` where reading `name` cannot be traced) -------
class _Noted:
    """`scale` is a property whose getter does what the trace cannot model (a lock's state), and
    records each read: eager reads it once per call."""
    def __init__(self, fail=False):
        self.reads, self.fail = [], fail
        self.lock = __import__("threading").Lock()

    @property
    def scale(self):
        self.reads.append(self.lock.locked())
        if self.fail:
            raise RuntimeError("no scale")
        return lambda t: t * 3


def _method_load_break(obj, x):
    y = x + 1
    z = obj.scale(y.sin())
    return z * 2


def _method_load_break_in_try(obj, x):
    y = x + 1
    try:
        z = obj.scale(y.sin())
    except RuntimeError as e:
        z = y - len(str(e))
    return z * 2


@pytest.mark.parametrize("fn", [_method_load_break, _method_load_break_in_try])
@pytest.mark.parametrize("fail", [False, True])
def test_a_break_at_a_method_load_keeps_the_graph_before_and_resumes_after(fn, fail):
    """The graph before the method load is kept, the attribute is read natively once, and the call
    and the rest of the frame go on in a resume function (was: the whole frame ran eagerly)."""
    x = torch.randn(4)
    eager_obj, obj = _Noted(fail), _Noted(fail)
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    if fail and fn is _method_load_break:
        with pytest.raises(RuntimeError, match="no scale"):
            fn(eager_obj, x)
        with pytest.raises(RuntimeError, match="no scale"):
            opt(obj, x)
    else:
        assert_same(opt(obj, x), fn(eager_obj, x))
    assert obj.reads == eager_obj.reads == [False]
    # the frame's graph (x + 1) and the resume function's (sin, the call's multiply, the last one);
    # a getter that raises leaves the frame (or goes on natively in its handler) after the first graph
    graphs, ops = (1, 1) if fail else (2, 4)
    assert (cnt.frame_count, cnt.op_count) == (graphs, ops)


# -- a break at a store, a delete, an unpacking or `iter()` on an object the trace cannot model ----
def _store_attr(state, x):
    y = x + 1
    state.local.value = "second"
    return y * 2


def _delete_attr(state, x):
    y = x + 1
    del state.local.value
    return y * 2


def _store_item(state, x):
    y = x + 1
    state.numbers[1] = 5.0
    return y * state.numbers[1]


def _delete_item(state, x):
    y = x + 1
    del state.numbers[0]
    return y * len(state.numbers)


def _unpack(state, x):
    y = x + 1
    a, b = state.numbers
    return y * a + b


def _iterate(state, x):
    y = x + 1
    it = iter(state.numbers)
    return y * next(it)


def _store_item_out_of_range_in_try(state, x):
    y = x + 1
    try:
        state.numbers[7] = 5.0
    except IndexError:
        y = y - 1
    return y * 2


class _Opaque:
    """A thread-local (its attribute writes are not modelled) and a C array (nor are its items)."""
    def __init__(self):
        self.local = __import__("threading").local()
        self.local.value = "first"
        self.numbers = __import__("array").array("d", [3.0, 4.0])


@pytest.mark.parametrize("fn", [_store_attr, _delete_attr, _store_item, _delete_item, _unpack, _iterate,
                                _store_item_out_of_range_in_try])
def test_a_break_at_a_store_delete_unpack_or_iter_keeps_the_graph_before(fn):
    """These instructions used to break with no checkpoint, so the whole frame ran eagerly; now the
    graph before them is kept, they run natively and the frame goes on in a resume function."""
    x = torch.randn(4)
    eager_state, state = _Opaque(), _Opaque()
    cnt = CompileCounter()
    opt = bytegraph.compile(fn, backend=cnt)
    assert_same(opt(state, x), fn(eager_state, x))
    assert vars(state.local) == vars(eager_state.local)
    assert state.numbers == eager_state.numbers
    # `x + 1` before the instruction, the rest after it (a store that raises in a `try` goes on
    # natively in the frame's handler)
    assert cnt.frame_count == (1 if fn is _store_item_out_of_range_in_try else 2)


def _stores_in_blocks(x, state):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        state.local.value = 5
        state.numbers[0] = 9.0
        w = z * state.numbers[0]
        a, b = state.numbers
        del state.local.value
    try:
        q = w.sin()
        state.local.value = 7
    finally:
        q = q + 1
    return q, w.requires_grad, z.requires_grad, a, b


def test_breaks_at_stores_inside_no_grad_and_try_blocks():
    """Each store, delete, read and unpacking of the opaque objects breaks inside a `no_grad` block or
    a `try`: each runs natively under the block (grad mode as eager's, the `finally` run once)."""
    x = torch.randn(3, requires_grad=True)
    eager_state, state = _Opaque(), _Opaque()
    cnt = CompileCounter()
    assert_same(bytegraph.compile(_stores_in_blocks, backend=cnt)(x, state), _stores_in_blocks(x, eager_state))
    assert vars(state.local) == vars(eager_state.local) == {"value": 7}
    assert state.numbers == eager_state.numbers
    assert cnt.frame_count == 7      # six breaks: the two stores, the read, the unpacking, the delete, the store


# -- a break at FOR_ITER on an iterator the trace cannot step --------------------------------------
def _sum_over_array(x, numbers):
    y = x * 2
    total = 0.0
    for v in numbers:                       # an array's iterator: each step runs natively
        total += v
        y = y + v
    return y.sin(), total


def _first_over_array(x, numbers):
    y = x * 2
    it = iter(numbers)
    for v in it:
        if v > 3.5:
            break                           # leaves the iterator part-way, as eager does
    return y + v, list(it)


def _loop_in_blocks(x, numbers):
    y = x * 2
    with torch.no_grad():
        for v in numbers:
            y = y + v
    try:
        for v in numbers:
            y = y * v
    finally:
        y = y - 1
    return y, y.requires_grad


class _StopsBadly:
    """A C-level iterator (its steps are not modelled) that raises after its first item."""
    def __init__(self):
        self.it = __import__("itertools").starmap(lambda a: 1.0 / a, [(2.0,), (0.0,)])


def _loop_that_raises(x, src):
    y = x * 2
    try:
        for v in src.it:
            y = y + v
    except ZeroDivisionError:
        y = y - 100
    return y


# graphs: `x * 2`, one per step whose body did tensor work, and the rest after the loop (`_first_over_array`:
# `y + v` with `list(it)`, which breaks too)
@pytest.mark.parametrize("fn, graphs", [(_sum_over_array, 5), (_first_over_array, 2), (_loop_in_blocks, 9)])
def test_a_loop_over_an_iterator_the_trace_cannot_step_keeps_its_graphs(fn, graphs):
    """FOR_ITER on an opaque iterator used to break with no checkpoint, so the frame ran eagerly from
    there; now each step runs natively and the loop body goes on in a resume function."""
    x = torch.randn(3, requires_grad=True)
    numbers = __import__("array").array("d", [3.0, 4.0, 5.0])
    cnt = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=cnt)(x, numbers), fn(x, numbers))
    assert cnt.frame_count == graphs
    assert any("__next__" in str(b) for b in bytegraph.stats.break_records)


def test_an_iterator_raising_at_a_native_step_reaches_the_frames_handler():
    x = torch.randn(3)
    cnt = CompileCounter()
    assert_same(bytegraph.compile(_loop_that_raises, backend=cnt)(x, _StopsBadly()),
                _loop_that_raises(x, _StopsBadly()))
    # `x * 2`, and `y + 0.5` before the step that raises; the handler runs natively in the frame's copy
    assert cnt.frame_count == 2


# -- a break at building a container or a string from values the trace cannot use ------------------
class _OwnHash:
    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return self.n

    def __eq__(self, other):
        return isinstance(other, _OwnHash) and other.n == self.n


def _set_of_own_hash(x, numbers):
    y = x + 1
    s = {_OwnHash(1), _OwnHash(1), _OwnHash(2)}
    return y * len(s)


def _dict_of_own_hash(x, numbers):
    y = x + 1
    d = {_OwnHash(1): "a", _OwnHash(1): "b"}
    return y * len(d), [k.n for k in d], list(d.values())


def _format_array(x, numbers):
    y = x + 1
    text = f"{numbers}!"
    return y * len(text), text


def _star_list(x, numbers):
    y = x + 1
    items = [0.5, *numbers]
    return y * items[-1], items


def _star_set(x, numbers):
    y = x + 1
    return y * len({*numbers, 3.0})


def _star_call(x, numbers):
    y = x + 1
    return torch.tensor([*numbers]).sum() + y, max(*numbers)


# graphs: `x + 1`, and the rest after the native instruction; a set or dict of keys with their own hash
# cannot be passed into the resume function, which runs as Python
@pytest.mark.parametrize("fn, graphs", [(_set_of_own_hash, 1), (_dict_of_own_hash, 1), (_format_array, 2),
                                        (_star_list, 2), (_star_set, 2), (_star_call, 2)])
def test_a_break_at_building_a_container_or_string_keeps_the_graph_before(fn, graphs):
    """BUILD_SET, BUILD_MAP, FORMAT_VALUE, LIST_EXTEND and SET_UPDATE on values the trace cannot use
    (keys with their own hash, a C array) used to break with no checkpoint, so the whole frame ran
    eagerly: now the graph before them is kept and they run natively."""
    x = torch.randn(3)
    numbers = __import__("array").array("d", [3.0, 4.0])
    cnt = CompileCounter()
    assert_same(bytegraph.compile(fn, backend=cnt)(x, numbers), fn(x, numbers))
    assert cnt.frame_count == graphs


def _keywords(**kwargs):
    return sorted(kwargs.items())


def _merge_mapping(x, mapping):
    y = x + 1
    try:
        got = _keywords(a=1, **mapping)     # DICT_MERGE: a repeated keyword raises, natively
    except TypeError as e:
        got = str(e)
    return y * 2, got, {**mapping, "z": 1}


@pytest.mark.parametrize("keys, graphs", [({"b": 2}, 2), ({"a": 2}, 1)])
def test_a_break_at_merging_a_mapping_into_keywords_inside_try(keys, graphs):
    """`f(**m)` and `{**m}` on a mapping the trace cannot read (a mappingproxy) run natively; a repeated
    keyword raises there into the frame's own handler, which goes on natively (hence one graph)."""
    x = torch.randn(2)
    cnt = CompileCounter()
    mapping = __import__("types").MappingProxyType(keys)
    assert_same(bytegraph.compile(_merge_mapping, backend=cnt)(x, mapping), _merge_mapping(x, mapping))
    assert cnt.frame_count == graphs
