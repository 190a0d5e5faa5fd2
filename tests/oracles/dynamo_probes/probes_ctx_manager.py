"""Context managers: grad/autocast/inference modes, user classes with __enter__/__exit__, contextlib's
generator-based managers, ExitStack, suppress, redirect_stdout, nullcontext; graph breaks before, inside
and after a `with`, and the state (grad mode, default dtype, globals) seen after the block.

Each probe reads the grad mode at its start: a mode leaked by the first call shows in the second."""
import contextlib
import io
import sys

import torch

from . import probe

GB = torch._dynamo.graph_break
G_COUNT = 0
G_OTHER = 0


def _reset():
    global G_COUNT, G_OTHER
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    G_COUNT = 0
    G_OTHER = 0


def _t():
    _reset()
    return (torch.randn(3, requires_grad=True),)


def _t2():
    _reset()
    return (torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True))


def _m():
    _reset()
    return (torch.rand(4, 4),)


def _log():
    _reset()
    return (torch.randn(3), [])


# -- helpers (module level, traced when called) ---------------------------------------------------

class Held:
    """An argument compared by kind only (the object inside differs from run to run)."""
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Held


class GradSetter:
    """Sets the grad mode on entry, puts back the mode seen when it was built on exit."""
    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, et, ev, tb):
        torch._C._set_grad_enabled(self.prev)


class GradSetterBreaking(GradSetter):
    def __enter__(self):
        GB()
        super().__enter__()


@contextlib.contextmanager
def grad_setter(mode):
    prev = torch.is_grad_enabled()
    try:
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


@contextlib.contextmanager
def grad_setter_breaking(mode):
    prev = torch.is_grad_enabled()
    try:
        GB()
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


class Recorder:
    """Logs enter/exit and what __exit__ saw; `swallow` decides its return value."""
    def __init__(self, log, name, swallow=False):
        self.log, self.name, self.swallow = log, name, swallow

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self.name + "!"

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", self.name, et.__name__ if et else None,
                         ev.args if ev is not None else None, tb is not None))
        return self.swallow


class ExitRaises:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.log.append("exit")
        raise KeyError("from exit")


@contextlib.contextmanager
def logged(log, tag, value=None):
    log.append(("in", tag))
    try:
        yield value
    finally:
        log.append(("out", tag))


@contextlib.contextmanager
def set_dtype(dtype):
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
        yield
    finally:
        torch.set_default_dtype(old)


@contextlib.contextmanager
def bump_globals():
    global G_COUNT, G_OTHER
    G_COUNT += 1
    G_OTHER += 10
    yield G_COUNT


@contextlib.contextmanager
def to_value_error():
    try:
        yield
    except BaseException:
        raise ValueError("converted")


@contextlib.contextmanager
def swallowing(log):
    try:
        yield
    except ZeroDivisionError as e:
        log.append(("caught", e.args))


@contextlib.contextmanager
def chaining():
    try:
        yield
    except Exception as exc:
        raise RuntimeError("chained") from exc


@contextlib.contextmanager
def twice():
    yield 1
    yield 2


@contextlib.contextmanager
def never():
    if False:
        yield


@contextlib.contextmanager
def retry_yield():
    try:
        yield
    except Exception:
        yield


@contextlib.contextmanager
def kw_manager(self, func, args, kwds):
    yield (self, func, args, kwds)


# -- grad mode --------------------------------------------------------------------------------------

@probe(_t2)
def no_grad_block_between_ops(a, b):
    before = torch.is_grad_enabled()
    x = a + 1
    with torch.no_grad():
        x = x + b
        inside = torch.is_grad_enabled()
    x = x + 2
    return before, inside, x, x.requires_grad, torch.is_grad_enabled()


@probe(_t2)
def set_grad_enabled_false_block(a, b):
    before = torch.is_grad_enabled()
    x = a * 2
    with torch.set_grad_enabled(False):
        y = x + b
    return before, y, y.requires_grad, (x + b).requires_grad, torch.is_grad_enabled()


@probe(_t2)
def enable_grad_inside_no_grad(a, b):
    before = torch.is_grad_enabled()
    with torch.no_grad():
        x = a + 1
        with torch.enable_grad():
            y = a * b
        z = y + 1
    return before, x.requires_grad, y.requires_grad, z.requires_grad, torch.is_grad_enabled()


@probe(_t2)
def set_grad_enabled_true_reads_mode(a, b):
    before = torch.is_grad_enabled()
    x = a + 1
    with torch.set_grad_enabled(True):
        if torch.is_grad_enabled():
            x = x + b
    return before, x, x.requires_grad


@probe(_t2)
def grad_mode_set_by_call_across_break(a, b):
    before = torch.is_grad_enabled()
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    a = a + 1
    a.tolist()
    ret = a + b
    mid = torch.is_grad_enabled()
    torch.set_grad_enabled(prev)
    return before, mid, ret, ret.requires_grad, torch.is_grad_enabled()


@probe(_t)
def nested_grad_modes_with_breaks(x):
    before = torch.is_grad_enabled()
    seen = []
    with torch.set_grad_enabled(False):
        GB()
        seen.append(torch.is_grad_enabled())
        with torch.set_grad_enabled(True):
            x = torch.mul(x, 5)
            GB()
            x = torch.sqrt(x.abs())
            seen.append(torch.is_grad_enabled())
        seen.append(torch.is_grad_enabled())
    seen.append(torch.is_grad_enabled())
    return before, seen, x, x.requires_grad


@probe(_t)
def grad_mode_left_off_by_frame(x):
    before = torch.is_grad_enabled()
    y = x * 2
    torch.set_grad_enabled(False)
    z = x * 3
    return before, y.requires_grad, z.requires_grad


@probe(_t)
def grad_mode_left_off_after_break(x):
    before = torch.is_grad_enabled()
    torch.set_grad_enabled(not before)
    GB()
    z = x * 3
    return before, z.requires_grad, torch.is_grad_enabled()


@probe(_t)
def no_grad_exception_restores_mode(x):
    before = torch.is_grad_enabled()
    try:
        with torch.no_grad():
            y = x * 2
            raise ValueError("inside")
    except ValueError:
        mode = torch.is_grad_enabled()
    return before, mode, y.requires_grad, (x * 2).requires_grad


@probe(_t)
def no_grad_break_inside_then_outputs(x):
    before = torch.is_grad_enabled()
    with torch.no_grad():
        y = x * 2
        GB()
        z = y + x
    w = z + x
    return before, y.requires_grad, z.requires_grad, w.requires_grad, torch.is_grad_enabled()


def _inner_no_grad_break(z):
    with torch.no_grad():
        GB()
        return torch.sin(z)


@probe(_t2)
def inlined_no_grad_with_break(x, y):
    before = torch.is_grad_enabled()
    a = x * y
    z = _inner_no_grad_break(y)
    return before, a, a.requires_grad, z.requires_grad, torch.is_grad_enabled()


@probe(_t)
def return_inside_no_grad(x):
    before = torch.is_grad_enabled()
    with torch.no_grad():
        return before, x * 2, torch.is_grad_enabled()


@probe(_t)
def no_grad_decorator_made_in_frame(x):
    before = torch.is_grad_enabled()

    def inner(v):
        return v.sin()

    with torch.enable_grad():
        wrapped = torch.no_grad()(inner)
        mid = torch.is_grad_enabled()
    with torch.enable_grad():
        out = wrapped(x)
    return before, mid, out, out.requires_grad


@probe(_t)
def enable_grad_decorator_called_under_no_grad(x):
    before = torch.is_grad_enabled()
    with torch.no_grad():
        @torch.enable_grad()
        def inner(v):
            return v.cos()
        mid = torch.is_grad_enabled()
    with torch.no_grad():
        out = inner(x)
    return before, mid, out, out.requires_grad


@probe(_t)
def no_grad_bare_decorator(x):
    before = torch.is_grad_enabled()

    @torch.no_grad
    def inner(v):
        return v * 3, torch.is_grad_enabled()

    out, mode = inner(x)
    return before, out.requires_grad, mode, torch.is_grad_enabled()


@probe(_t)
def set_grad_enabled_as_decorator(x):
    before = torch.is_grad_enabled()
    with torch.set_grad_enabled(True):
        @torch.set_grad_enabled(False)
        def inner(v):
            return v.sin()
        mid = torch.is_grad_enabled()
    out = inner(x)
    return before, mid, out.requires_grad, torch.is_grad_enabled()


@probe(_t)
def set_grad_enabled_constructed_before_break(x):
    # building set_grad_enabled(False) turns grad off at once; the `with` later restores the
    # mode seen at construction
    before = torch.is_grad_enabled()
    x = x + 1
    ctx = torch.set_grad_enabled(False)
    after_build = torch.is_grad_enabled()
    GB()
    with ctx:
        y = x * 2
        inside = torch.is_grad_enabled()
    return before, after_build, inside, y.requires_grad, torch.is_grad_enabled()


@probe(_t)
def set_grad_enabled_true_built_then_break(x):
    before = torch.is_grad_enabled()
    x = x + 1
    ctx = torch.set_grad_enabled(True)
    GB()
    with ctx:
        x = x + 1
    return before, x, x.requires_grad


@probe(_t)
def nullcontext_built_before_break(x):
    before = torch.is_grad_enabled()
    x = x + 1
    ctx = contextlib.nullcontext()
    GB()
    with ctx as v:
        x = x + 1
    return before, x, v


def _breaks_returns_list():
    GB()
    return [0, 1, 2]


@probe(_t)
def nullcontext_then_inlined_break(x):
    before = torch.is_grad_enabled()
    x = x + 1
    ctx = contextlib.nullcontext()
    lst = _breaks_returns_list()
    with ctx:
        x = x + lst[1]
    return before, x


def _pass_through_break(ctx):
    GB()
    return ctx


@probe(_t)
def grad_ctx_through_breaking_call(x):
    before = torch.is_grad_enabled()
    x = x + 1
    ctx = _pass_through_break(torch.set_grad_enabled(False))
    with ctx:
        x = x + 1
    return before, x.requires_grad, torch.is_grad_enabled()


def _uses_ctx(x, ctx, y, z, dummy):
    with ctx:
        return x * y * z


@probe(_t)
def grad_ctx_as_argument_with_break_in_args(x):
    before = torch.is_grad_enabled()
    x = x + 1
    x = _uses_ctx(x, torch.set_grad_enabled(False), 2, 3, GB())
    return before, x.requires_grad, torch.is_grad_enabled()


@probe(_t)
def inference_mode_block(x):
    before = torch.is_grad_enabled()
    with torch.inference_mode():
        y = x * 2
        inside = torch.is_inference_mode_enabled()
    return before, inside, y.is_inference(), y.requires_grad, torch.is_inference_mode_enabled()


@probe(_t)
def inference_mode_with_break(x):
    before = torch.is_grad_enabled()
    with torch.inference_mode():
        y = x * 2
        GB()
        z = y + 1
    return before, y.is_inference(), z.is_inference(), torch.is_inference_mode_enabled()


@probe(_t)
def inference_mode_false_inside_no_grad(x):
    before = torch.is_grad_enabled()
    with torch.no_grad():
        with torch.inference_mode(False):
            y = x * 2
            mode = torch.is_grad_enabled()
    return before, mode, y.requires_grad, y.is_inference()


# -- autocast ------------------------------------------------------------------------------------------

@probe(_m)
def autocast_cpu_enabled_query(a):
    before = torch.is_grad_enabled()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        c = torch.mm(a, a)
        if torch.is_autocast_cpu_enabled():
            c = c + 1
    return before, c.dtype, c, torch.is_autocast_cpu_enabled()


@probe(_m)
def autocast_cpu_break_inside(a):
    before = torch.is_grad_enabled()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        x = torch.mm(a, a)
        GB()
        x = torch.relu(x)
        y = torch.mm(a, a)
    return before, x.dtype, y.dtype, x, torch.is_autocast_cpu_enabled()


@probe(_m)
def autocast_nested_disabled_with_breaks(a):
    before = torch.is_grad_enabled()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        GB()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False):
            GB()
            g = torch.mm(a, a)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                GB()
                f1 = _mm_breaks(a, a)
        f = _mm_breaks(a, a)
    return before, g.dtype, f1.dtype, f.dtype, torch.is_autocast_cpu_enabled()


def _mm_breaks(x, y):
    GB()
    return torch.mm(x, y)


def _autocast_gn(x, y):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        z = torch.mm(x, y)
        GB()
        return torch.sin(z)


@probe(_m)
def autocast_in_inlined_callee_with_break(a):
    before = torch.is_grad_enabled()
    z = torch.mm(a, a)
    w = z + _autocast_gn(a, a)
    return before, w.dtype, w


@probe(_m)
def autocast_disabled_argument_binding(a):
    before = torch.is_grad_enabled()
    with torch.autocast(device_type="cpu", enabled=False):
        y = torch.mm(a + 1, a)
    return before, y.dtype, y


@probe(_m)
def autocast_as_decorator(a):
    before = torch.is_grad_enabled()

    @torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    def mm(p, q):
        return torch.mm(p, q)

    r = mm(a, a)
    return before, r.dtype, torch.mm(a, a).dtype, torch.is_autocast_cpu_enabled()


@probe(_m)
def autocast_exception_restores_state(a):
    before = torch.is_grad_enabled()
    try:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            y = torch.mm(a, a)
            raise KeyError("k")
    except KeyError:
        pass
    return before, y.dtype, torch.mm(a, a).dtype, torch.is_autocast_cpu_enabled()


# -- user context manager classes ------------------------------------------------------------------------

@probe(_t)
def user_grad_ctx_breaking_enter(x):
    before = torch.is_grad_enabled()
    with GradSetterBreaking(False):
        if torch.is_grad_enabled():
            z = x + 1000
        else:
            y = x * 2
            z = y.sin() + 3
    return before, z, z.requires_grad, torch.is_grad_enabled()


@probe(_t)
def contextlib_grad_ctx_breaking_before_yield(x):
    before = torch.is_grad_enabled()
    with grad_setter_breaking(False):
        if torch.is_grad_enabled():
            z = x + 1000
        else:
            z = (x * 2).sin() + 3
    return before, z, z.requires_grad, torch.is_grad_enabled()


@probe(_t)
def user_ctx_object_state_after_with(x):
    before = torch.is_grad_enabled()
    cm = GradSetter(False)
    with cm:
        pass
    return before, cm.mode, cm.prev, x + 1


@probe(_t)
def user_ctx_object_state_after_break(x):
    before = torch.is_grad_enabled()
    cm = GradSetter(False)
    GB()
    with cm:
        y = x * 2
    return before, cm.mode, y.requires_grad, torch.is_grad_enabled()


@probe(_t)
def user_grad_ctx_branches_on_mode(x):
    before = torch.is_grad_enabled()
    with GradSetter(True):
        x = x + 1
        if torch.is_grad_enabled():
            x = x * 2
        x = torch.relu(x)
    return before, x - 1


@probe(_t)
def contextlib_grad_ctx_branches_on_mode(x):
    before = torch.is_grad_enabled()
    with grad_setter(False):
        x = x + 1
        if torch.is_grad_enabled():
            x = x * 2
        x = torch.relu(x)
    return before, x - 1, x.requires_grad, torch.is_grad_enabled()


@probe(_t)
def nested_user_grad_ctx(x):
    before = torch.is_grad_enabled()
    with GradSetter(True):
        x = x + 1
        if torch.is_grad_enabled():
            x = x * 2
        with GradSetter(False):
            if torch.is_grad_enabled():
                x = x - 3
            x = x * 1.5
        x = torch.relu(x)
    return before, x - 1, x.requires_grad


@probe(_t)
def nested_contextlib_grad_ctx_with_break(x):
    before = torch.is_grad_enabled()
    with grad_setter(True):
        x = x + 1
        with grad_setter(False):
            if torch.is_grad_enabled():
                x = x - 3
            GB()
            x = x * 1.5
        x = torch.relu(x)
    return before, x - 1, x.requires_grad, torch.is_grad_enabled()


@probe(_t)
def user_grad_ctx_break_in_body(x):
    before = torch.is_grad_enabled()
    with GradSetter(False):
        x = x + 1
        GB()
        x = torch.relu(x)
        mode = torch.is_grad_enabled()
    return before, mode, x.requires_grad, torch.is_grad_enabled()


@probe(_log)
def exit_sees_exception_and_swallows(x, log):
    with Recorder(log, "a", swallow=True) as name:
        log.append(name)
        raise ValueError("boom", 3)
    log.append("after")
    return x + 1


@probe(_log)
def exit_sees_exception_and_propagates(x, log):
    try:
        with Recorder(log, "a") as name:
            log.append(name)
            y = x * 2
            raise KeyError("k")
    except KeyError as e:
        log.append(("caught", e.args))
    return y


@probe(_log)
def exit_on_normal_path_gets_nones(x, log):
    with Recorder(log, "a"):
        y = x.sin()
    return y


@probe(_log)
def two_managers_one_statement_exit_order(x, log):
    with Recorder(log, "a"), Recorder(log, "b") as b:
        log.append(b)
        y = x + 1
    return y


@probe(_log)
def inner_swallows_outer_sees_nothing(x, log):
    with Recorder(log, "outer"):
        with Recorder(log, "inner", swallow=True):
            raise IndexError(7)
        log.append("between")
    return x * 3


@probe(_log)
def exit_raising_replaces_exception(x, log):
    try:
        with ExitRaises(log):
            raise ValueError("original")
    except KeyError as e:
        return x + 1, e.args, type(e.__context__).__name__, e.__context__.args
    return x


@probe(_log)
def with_in_loop_break_continue(x, log):
    for i in range(4):
        with Recorder(log, str(i)):
            if i == 1:
                continue
            if i == 2:
                break
            x = x + i
    return x


@probe(_log)
def return_from_with_runs_exit(x, log):
    with Recorder(log, "r"):
        return x * 5


@probe(_log)
def user_ctx_break_in_body_exit_once(x, log):
    with Recorder(log, "r"):
        y = x + 1
        GB()
        y = y * 2
    log.append("done")
    return y


@probe(_log)
def user_ctx_break_in_body_exception(x, log):
    try:
        with Recorder(log, "r"):
            GB()
            raise ValueError("after break")
    except ValueError:
        log.append("caught")
    return x


@probe(_log)
def swallowing_exit_then_break(x, log):
    with Recorder(log, "s", swallow=True):
        y = x * 2
        GB()
        raise RuntimeError("x")
    return y


# -- contextlib ---------------------------------------------------------------------------------------

@probe(lambda: (_reset(), torch.tensor([1.0]))[1:])
def contextmanager_default_dtype(x):
    with set_dtype(torch.float64):
        t = torch.tensor([3.0, 3.0 + 5.0j])
        u = torch.tensor([1.5])
    return t.dtype, u.dtype, torch.get_default_dtype(), t


@probe(_t)
def contextmanager_yields_tensor(x):
    @contextlib.contextmanager
    def compute_sin(v):
        try:
            yield v.sin()
        finally:
            pass

    with compute_sin(x) as y:
        return y.cos()


@probe(_t)
def contextmanager_changes_nonlocals(x):
    z = 0
    k = 0

    def create():
        @contextlib.contextmanager
        def ctx(v):
            nonlocal k
            try:
                k = 100
                yield v.sin()
            finally:
                pass
        return ctx

    def run(ctx, v):
        nonlocal z
        with ctx(v) as y:
            z = k
            return y.cos()

    out = run(create(), x)
    return out, z, k


@probe(_t)
def contextmanager_finally_reads_nonlocal(x):
    z = 1
    k = 2

    def create():
        @contextlib.contextmanager
        def ctx(v):
            nonlocal k
            try:
                yield v.sin()
            finally:
                k = z
        return ctx

    def run(ctx, v):
        nonlocal z
        z = 100
        with ctx(v) as y:
            return y.cos()

    out = run(create(), x)
    return out, z, k


@probe(_t)
def contextmanager_changes_globals(x):
    with bump_globals() as c:
        y = x * c
    with bump_globals() as c2:
        y = y + c2 + G_OTHER
    return y, G_COUNT, G_OTHER


@probe(_log)
def contextmanager_break_before_yield(x, log):
    @contextlib.contextmanager
    def whoo(v):
        y = v.tan()
        try:
            log.append("pre")
            GB()
            yield y
        finally:
            log.append("post")

    y = x.sin()
    with whoo(x) as z:
        y = y + z.neg()
    y = y + x.cos()
    return y


@contextlib.contextmanager
def _whoo_break(v):
    y = v.tan()
    try:
        GB()
        yield y
    finally:
        pass


def _bar_with_whoo(v):
    with _whoo_break(v) as z:
        return z.neg()


@probe(_t)
def contextmanager_break_in_inlined_user(x):
    return x.sin() + _bar_with_whoo(x) + x.cos()


@probe(_t)
def contextmanager_manual_enter_break_exit(x):
    @contextlib.contextmanager
    def whoo(v):
        try:
            yield v + 1
        finally:
            pass

    ctx = whoo(x)
    try:
        y = ctx.__enter__()
        GB()
    finally:
        ctx.__exit__(None, None, None)
    return y


@probe(_log)
def contextmanager_break_in_finally_manual(x, log):
    @contextlib.contextmanager
    def whoo(v):
        try:
            log.append("in")
            yield v.sin()
        finally:
            GB()
            log.append("out")

    ctx = whoo(x)
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return y


@probe(_t)
def contextmanager_break_between_build_and_enter(x):
    @contextlib.contextmanager
    def whoo(v):
        try:
            yield v + 1
        finally:
            pass

    ctx = whoo(x)
    try:
        GB()
        y = ctx.__enter__()
        GB()
    finally:
        ctx.__exit__(None, None, None)
    return y


def _fresh_cm():
    _reset()
    log = []

    @contextlib.contextmanager
    def whoo(v):
        try:
            log.append("enter")
            yield v.cos() + 1
        finally:
            log.append("exit")

    x = torch.tensor([1.0])
    return x, Held(whoo(x)), log


@probe(_fresh_cm)
def contextmanager_argument_enter_exit(x, held, log):
    # the second call enters a used manager: eager's AttributeError
    y = held.v.__enter__()
    held.v.__exit__(None, None, None)
    return x + y


@probe(_fresh_cm, calls=1)
def contextmanager_argument_only_enter(x, held, log):
    y = held.v.__enter__()
    return x + y


def _entered_cm():
    x, held, log = _fresh_cm()
    held.v.__enter__()
    return x, held, log


@probe(_entered_cm)
def contextmanager_argument_only_exit(x, held, log):
    r = held.v.__exit__(None, None, None)
    return x.sin(), r


@probe(_log)
def contextlib_suppress_matching(x, log):
    y = x.sin()
    with contextlib.suppress(ValueError):
        y = y + x.cos()
        log.append("before")
        raise ValueError("gone")
    log.append("after")
    return y.tan()


@probe(_log)
def contextlib_suppress_not_matching(x, log):
    with contextlib.suppress(KeyError, IndexError):
        log.append("before")
        raise ValueError("kept")
    return x


@probe(_log)
def contextlib_suppress_no_exception(x, log):
    with contextlib.suppress(ValueError) as s:
        y = x + 1
    return y, s is None


@probe(_t)
def contextlib_redirect_stdout(x):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("hello", 3)
        y = x + 1
    return buf.getvalue(), y, sys.stdout is buf


@probe(_t)
def contextlib_nullcontext_value(x):
    with contextlib.nullcontext(x * 2) as v:
        y = v + 1
    with contextlib.nullcontext():
        z = y.sin()
    return y, z


@probe(_log)
def exit_stack_order_and_callbacks(x, log):
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(logged(log, "a", 1))
        stack.callback(log.append, "cb")
        b = stack.enter_context(Recorder(log, "b"))
        log.append((a, b))
        y = x + a
    return y


@probe(_log)
def exit_stack_pop_all(x, log):
    with contextlib.ExitStack() as stack:
        stack.enter_context(logged(log, "a"))
        moved = stack.pop_all()
        log.append("inner end")
    log.append("after with")
    moved.close()
    return x * 2


@probe(_log)
def exit_stack_exception_suppressed(x, log):
    with contextlib.ExitStack() as stack:
        stack.enter_context(Recorder(log, "sw", swallow=True))
        stack.enter_context(logged(log, "l"))
        raise ValueError("v")
    return x + 1


@probe(_t)
def contextmanager_converts_exception(x):
    z = 0
    with contextlib.nullcontext():
        try:
            with to_value_error():
                raise IndexError
        except ValueError as e:
            z = 1
            msg = e.args
        except IndexError:
            z = 2
            msg = None
    return x + z, msg


@probe(_log)
def contextmanager_swallows_in_generator(x, log):
    with swallowing(log):
        log.append("body")
        y = x / 0
        raise ZeroDivisionError(42)
    return y


@probe(_t)
def contextmanager_chains_runtime_error(x):
    try:
        with chaining():
            raise ZeroDivisionError("z")
    except Exception as ex:
        return x, type(ex).__name__, ex.args, type(ex.__cause__).__name__, ex.__suppress_context__


@probe(_t)
def contextmanager_stop_iteration_unchained(x):
    try:
        with chaining():
            raise StopIteration("unchained")
    except Exception as ex:
        return x, type(ex).__name__, ex.args, ex.__cause__ is None


@probe(_t)
def contextmanager_second_yield_error(x):
    ctx = twice()
    v = ctx.__enter__()
    try:
        ctx.__exit__(None, None, None)
    except RuntimeError as e:
        return x + v, str(e)
    return x


@probe(_t)
def contextmanager_no_yield_error(x):
    try:
        with never():
            pass
    except RuntimeError as e:
        return x, str(e)
    return x


@probe(_t)
def contextmanager_yield_after_throw(x):
    ctx = retry_yield()
    ctx.__enter__()
    try:
        ctx.__exit__(TypeError, TypeError("foo"), None)
    except RuntimeError as e:
        return x, str(e)
    return x


@probe(_t)
def contextmanager_exit_no_reraise(x):
    @contextlib.contextmanager
    def whee():
        yield

    ctx = whee()
    ctx.__enter__()
    r = ctx.__exit__(TypeError, TypeError("foo"), None)
    return x.sum(), r


@probe(_t)
def contextmanager_keyword_names(x):
    with kw_manager(self=11, func=22, args=33, kwds=44) as target:
        return x + 1, target


@probe(lambda: (_reset(), torch.randn(2), [0, 0])[1:])
def contextmanager_as_recursive_decorator(x, state):
    @contextlib.contextmanager
    def woohoo():
        state[1] += 1
        before = state[0]
        state[0] += 1
        yield
        state[0] -= 1
        assert state[0] == before

    @woohoo()
    def recursive():
        if state[0] < 5:
            recursive()

    recursive()
    return x + state[1]


@probe(_t)
def contextmanager_finally_state_on_exception(x):
    state = []

    @contextlib.contextmanager
    def woohoo():
        state.append(1)
        try:
            yield 42
        finally:
            state.append(999)

    try:
        with woohoo() as v:
            state.append(v)
            raise ZeroDivisionError
    except ZeroDivisionError:
        pass
    return x + 1, state


@probe(_t)
def contextmanager_except_receives_args(x):
    state = []

    @contextlib.contextmanager
    def woohoo():
        state.append(1)
        try:
            yield 42
        except ZeroDivisionError as e:
            state.append(e.args[0])

    with woohoo() as v:
        state.append(v)
        raise ZeroDivisionError(999)
    return x, state


@probe(_t)
def disable_saved_tensors_hooks_decorator(z):
    @torch.autograd.graph.disable_saved_tensors_hooks("not supported here")
    def f(a, b):
        return a + b

    a, b = torch.ones(1), torch.zeros(1)
    return f(a, b) + z


@probe(_t)
def disable_saved_tensors_hooks_break(x):
    with torch.autograd.graph.disable_saved_tensors_hooks("not supported"):
        y = x + 1
        GB()
        return y * 2


@probe(_t)
def record_function_break_inside(x):
    y = x ** 2
    with torch.profiler.record_function("my_function"):
        z = y ** 3
        z.tolist()
        z = z + 1
    return z


@probe(_t)
def sdpa_kernel_state_inside_and_after(x):
    from torch.nn.attention import SDPBackend, sdpa_kernel, _cur_sdpa_kernel_backends
    before = list(_cur_sdpa_kernel_backends())
    with sdpa_kernel([SDPBackend.MATH]):
        inside = list(_cur_sdpa_kernel_backends())
        y = x + 1
    after = list(_cur_sdpa_kernel_backends())
    return y, inside, before == after
