"""A lazy module's first call (`nn.LazyLinear`...): its initializing pre-hook runs while tracing, at
the call, when that is exactly eager's (variables/lazy_module.py); otherwise the call breaks and the
hook runs natively. Compared with eager: results, the module's parameters and class afterwards, and
the random numbers drawn after the call (the hook draws the initial weights)."""
import bytegraph
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from bytegraph.testing import CompileCounter
from helpers import assert_same


class LazyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.LazyLinear(10)
        self.fc2 = nn.LazyLinear(1)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


def _run(fn, make, compiled):
    """Build the module and input from seed 0, call (seed 1), and return what eager can observe:
    the outcome, the module's state and child classes, and the next random numbers."""
    torch.manual_seed(0)
    module, x = make()
    torch.manual_seed(1)
    try:
        result = ("ok", compiled(module, x))
    except Exception as e:  # noqa: BLE001 - compared
        result = ("raise", type(e))
    state = {k: (type(v), v.detach().clone() if not isinstance(v, nn.parameter.UninitializedTensorMixin) else None)
             for k, v in module.state_dict(keep_vars=True).items()}
    return result, state, [type(m) for m in module.modules()], torch.randn(3)


def _compare(fn, make, frames, breaks=0, fullgraph=False):
    want = _run(fn, make, fn)
    bytegraph.reset()
    cnt = CompileCounter()
    got = _run(fn, make, bytegraph.compile(fn, backend=cnt, fullgraph=fullgraph))
    assert_same(got[0], want[0], exact=True)
    assert list(got[1]) == list(want[1])
    for k in want[1]:
        assert got[1][k][0] is want[1][k][0]
        assert_same(got[1][k][1], want[1][k][1], exact=True)
    assert got[2] == want[2]
    assert torch.equal(got[3], want[3])
    assert cnt.frame_count == frames, cnt.frame_count
    assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]


def _call(m, x):
    return m(x)


def test_lazy_mlp_is_one_graph_with_fullgraph():
    _compare(_call, lambda: (LazyMLP(), torch.randn(4, 10)), frames=1, fullgraph=True)


@pytest.mark.parametrize("make", [
    lambda: (nn.LazyConv2d(3, 2), torch.randn(1, 2, 5, 5)),
    lambda: (nn.LazyBatchNorm1d(), torch.randn(4, 3)),
    lambda: (nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2)), torch.randn(3, 5)),
], ids=["conv", "batchnorm", "sequential"])
def test_torch_lazy_modules_initialize_in_the_trace(make):
    _compare(_call, make, frames=1, fullgraph=True)


def test_second_call_of_the_initialized_module_reuses_the_entry():
    # the entry traced the module as the initialization left it (its class, its hooks): the next call
    # finds it so; a fresh lazy module (the class it had) recompiles
    torch.manual_seed(0)
    m, x = LazyMLP(), torch.randn(4, 10)
    cnt = CompileCounter()
    opt = bytegraph.compile(_call, backend=cnt)
    first = opt(m, x)
    assert type(m.fc1) is nn.Linear and cnt.frame_count == 1
    assert_same(opt(m, x), first, exact=True)
    assert cnt.frame_count == 1
    torch.manual_seed(5)
    want = _call(LazyMLP(), x)
    torch.manual_seed(5)
    fresh = LazyMLP()
    assert_same(opt(fresh, x), want, exact=True)
    assert cnt.frame_count == 2 and type(fresh.fc1) is nn.Linear
    assert_same(opt(fresh, x), want, exact=True)
    assert cnt.frame_count == 2


def _dropout_first(m, x):
    return m(F.dropout(x, 0.5))


def _randn_first(m, x):
    return m(x + torch.randn(x.shape))


def _attribute_written_first(m, x):
    m.out_features = 3
    return m(x)


def _attribute_read_first(m, x):
    n = m.in_features      # re-read from the module after the graph: must see it before initializing
    return m(x), n


def _index_out_of_range_first(m, x):
    # raises when the graph runs (index 12 of 4 rows): eager never reaches the call, the module stays lazy
    return m(torch.gather(x, 0, torch.full((1, 10), 12)))


def _inside_no_grad(m, x):
    with torch.no_grad():
        return m(x)


def _inside_autocast(m, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):     # (entering it raises for no value)
        return m(x)


@pytest.mark.parametrize("fn,frames,breaks", [
    (_dropout_first, 2, 1),              # the graph's random numbers come first in eager
    (_randn_first, 2, 1),
    (_attribute_written_first, 1, 1),    # a pending write the hook would read
    (_attribute_read_first, 1, 1),
    (_index_out_of_range_first, 1, 1),   # an op before the call that may raise when the graph runs
    (_inside_no_grad, 1, 0),
    (_inside_autocast, 1, 0),
])
def test_initializing_now_only_when_exactly_eager(fn, frames, breaks):
    _compare(fn, lambda: (nn.LazyLinear(3), torch.randn(4, 10)), frames=frames, breaks=breaks)


def _after_call(m, x):
    y = m(x)
    return y, m.in_features, type(m).__name__, isinstance(m, nn.modules.lazy.LazyModuleMixin), \
        hasattr(m, "cls_to_become")


def test_the_trace_sees_the_module_as_initialized_after_the_call():
    _compare(_after_call, lambda: (nn.LazyLinear(3), torch.randn(4, 10)), frames=1, fullgraph=True)


def test_an_input_the_hook_refuses_raises_as_eager():
    # LazyLinear reads the input's last size: a 0-d input raises IndexError in the hook
    _compare(_call, lambda: (nn.LazyLinear(3), torch.tensor(1.0)), frames=0, breaks=1)


# -- lazy module classes of the program: their initialize_parameters (user code) runs once, for real,
# with the real arguments, at compile time when nothing before the call is observable yet

LOG = []


class LazyOwn(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def initialize_parameters(self, xs):
        LOG.append(("init", len(xs)))
        with torch.no_grad():
            self.w = nn.Parameter(torch.empty(xs[0].shape).normal_())

    def forward(self, xs):
        acc = 0
        for x in xs:
            acc = acc + x * self.w
        return acc


class LazyParent(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def impl(self, x):
        return x.cos() + self.v


class LazyChild(LazyParent):
    def forward(self, x):
        return super().impl(x.sin())

    def initialize_parameters(self, x):
        self.v = nn.Parameter(torch.rand(x.shape[-1]))


class Becomes(nn.Module):
    def forward(self, x):
        return x * self.scale


class LazyBecomes(nn.modules.lazy.LazyModuleMixin, Becomes):
    cls_to_become = Becomes

    def initialize_parameters(self, x):
        self.scale = nn.Parameter(torch.full(x.shape[1:], 2.0))
        self.seen = x


class LazyChecks(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def initialize_parameters(self, x):
        LOG.append("checking")
        self.w = nn.Parameter(torch.ones(3))
        if x.dim() != 2:
            raise ValueError(f"expected 2 dims, got {x.dim()}")

    def forward(self, x):
        return x * self.w


class LazyFills(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def initialize_parameters(self, x):
        with torch.no_grad():
            x.fill_(1.5)      # (the input, changed where eager changes it)
        self.w = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return x + self.w


class LazyTurnsGradOff(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def initialize_parameters(self, x):
        self.w = nn.Parameter(torch.ones(()))
        torch.set_grad_enabled(False)

    def forward(self, x):
        return x * self.w


def _compare_logged(fn, make, frames, breaks=0, fullgraph=False):
    LOG.clear()
    want = _run(fn, make, fn)
    want_log = list(LOG)
    LOG.clear()
    bytegraph.reset()
    cnt = CompileCounter()
    got = _run(fn, make, bytegraph.compile(fn, backend=cnt, fullgraph=fullgraph))
    assert LOG == want_log
    assert_same(got[0], want[0], exact=True)
    assert list(got[1]) == list(want[1])
    for k in want[1]:
        assert got[1][k][0] is want[1][k][0]
        assert_same(got[1][k][1], want[1][k][1], exact=True)
    assert got[2] == want[2]
    assert torch.equal(got[3], want[3])
    assert cnt.frame_count == frames, cnt.frame_count
    assert len(bytegraph.stats.break_records) == breaks, [str(b) for b in bytegraph.stats.break_records]


def test_program_lazy_module_with_a_list_input_breaks():
    # (the trace holds the list's items as read before the hook ran: the hook may change them)
    _compare_logged(_call, lambda: (LazyOwn(), [torch.randn(2, 2)] * 3), frames=1, breaks=1)


def test_program_lazy_module_calling_super_is_one_graph():
    _compare_logged(_call, lambda: (LazyChild(), torch.randn(2, 4)), frames=1, fullgraph=True)


def _kept_input(m, x):
    return m(x), m.seen is x, type(m).__name__


def test_program_lazy_module_becomes_its_class_and_keeps_the_real_input():
    _compare_logged(_kept_input, lambda: (LazyBecomes(), torch.randn(2, 3)), frames=1, fullgraph=True)


def test_program_lazy_module_raising_raises_once_at_the_call():
    # the initialization ran (and logged) once, at compile time; the call's native run raises its error
    _compare_logged(_call, lambda: (LazyChecks(), torch.randn(3)), frames=0, breaks=1)
    # the next call runs the hook again, as in eager, and succeeds
    bytegraph.reset()
    m = LazyChecks()
    opt = bytegraph.compile(_call, backend="eager")
    LOG.clear()
    with pytest.raises(ValueError, match="expected 2 dims, got 1"):
        opt(m, torch.randn(3))
    assert LOG == ["checking"] and "_initialize_hook" in vars(m)
    x = torch.randn(2, 3)
    assert_same(opt(m, x), x * m.w, exact=True)
    assert LOG == ["checking", "checking"] and "_initialize_hook" not in vars(m)
    assert list(m._forward_pre_hooks) == []


def test_program_lazy_module_changing_its_input_in_place():
    _compare_logged(_call, lambda: (LazyFills(), torch.randn(2)), frames=1, fullgraph=True)


def _op_first(m, x):
    return m(x + 1)


def test_program_lazy_module_after_an_op_breaks():
    # the op is in the graph, which runs after compile time: the hook runs natively at the call
    _compare_logged(_op_first, lambda: (LazyChild(), torch.randn(2, 4)), frames=2, breaks=1)


def test_program_lazy_module_changing_grad_mode_breaks_after_it():
    # the forward runs natively after it, with grad mode off as in eager
    def run(fn):
        torch.set_grad_enabled(True)
        try:
            out = fn(LazyTurnsGradOff(), torch.ones(2))
            return out, torch.is_grad_enabled()
        finally:
            torch.set_grad_enabled(True)
    want = run(_call)
    bytegraph.reset()
    cnt = CompileCounter()
    got = run(bytegraph.compile(_call, backend=cnt))
    assert_same(got, want, exact=True)
    assert want[1] is False and not want[0].requires_grad
    assert len(bytegraph.stats.break_records) == 1 and "grad" not in str(bytegraph.stats.break_records[0]) or \
        "torch state" in str(bytegraph.stats.break_records[0])


class LazyScales(nn.modules.lazy.LazyModuleMixin, nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.parameter.UninitializedParameter()

    def initialize_parameters(self, x):
        with torch.no_grad():
            self.weight.materialize(x.shape[-1:])
            self.weight.fill_(2.0)

    def forward(self, x):
        return x * self.weight


def _times_ten(module, args):
    return (args[0] * 10,)


def _plus_hundred(module, args, out):
    return out + 100


class LazyAddsHooks(LazyScales):
    def initialize_parameters(self, x):
        super().initialize_parameters(x)
        self.register_forward_pre_hook(_times_ten)    # (eager's first call took its pre-hooks already)
        self.register_forward_hook(_plus_hundred)     # (read after forward: runs at the first call)


class LazyReplacesForward(LazyScales):
    def initialize_parameters(self, x):
        super().initialize_parameters(x)
        self.__class__ = LazyScalesBy3      # (eager's first call took `forward` already)


class LazyScalesBy3(LazyReplacesForward):
    def forward(self, x):
        return x * self.weight * 3


class LazyRemovesHook(LazyScales):
    def __init__(self):
        super().__init__()
        self.handle = self.register_forward_pre_hook(_times_ten)   # (after the initializing one)

    def initialize_parameters(self, x):
        super().initialize_parameters(x)
        self.handle.remove()         # (eager's first call still runs it)


class LazyReplacesOwnForward(LazyScales):
    def __init__(self):
        super().__init__()
        self.forward = self.scaled       # (the instance's own, which the hook replaces)

    def scaled(self, x):
        return x * self.weight * 5

    def initialize_parameters(self, x):
        super().initialize_parameters(x)
        self.forward = _times_hundred


def _times_hundred(x):
    return x * 100


@pytest.mark.parametrize("cls", [LazyAddsHooks, LazyReplacesForward, LazyRemovesHook, LazyReplacesOwnForward])
def test_program_init_changing_hooks_or_forward_counts_from_the_next_call(cls):
    """The first call runs the pre-hooks and `forward` eager's `_call_impl` took before the hook ran;
    that compiled code serves that call only: the next compiles again, with the module as it is."""
    def f(m, x):
        return m(x) + 1

    want_m, got_m = cls(), cls()
    want = [f(want_m, torch.ones(3)) for _ in range(3)]
    bytegraph.reset()
    cnt = CompileCounter()
    opt = bytegraph.compile(f, backend=cnt)
    got = [opt(got_m, torch.ones(3)) for _ in range(3)]
    assert_same(got, want, exact=True)
    assert cnt.frame_count == 2 and not bytegraph.stats.break_records


class LazyDrawsPython(LazyScales):
    def initialize_parameters(self, x):
        import random
        super().initialize_parameters(x)
        with torch.no_grad():
            self.weight.fill_(random.random())


def test_program_init_after_a_python_random_draw_of_the_frame_breaks():
    """The frame's `random.random()` is drawn at run time before the graph: a hook run at compile time
    would draw first."""
    import random

    def f(m, x):
        r = random.random()
        return m(x), r

    def run(fn):
        random.seed(0)
        return fn(LazyDrawsPython(), torch.ones(3)), random.random()
    want = run(f)
    bytegraph.reset()
    cnt = CompileCounter()
    got = run(bytegraph.compile(f, backend=cnt))
    assert_same(got, want, exact=True)
    assert any("uninitialized parameter" in str(b) for b in bytegraph.stats.break_records)


class Settings:
    pass


SETTINGS = Settings()
SEEN = []


class LazyChangesProgramState(LazyScales):
    def initialize_parameters(self, x):
        super().initialize_parameters(x)
        SETTINGS.n = 2
        SEEN.append("init")


@pytest.mark.parametrize("read", ["attribute", "list"])
def test_program_init_after_the_frame_read_program_state_breaks(read):
    """What the frame read before the call is what it was before the hook ran (eager runs the hook at
    the call): a hook run at compile time, before the frame's code, would change it first."""
    def f(m, x):
        before = SETTINGS.n if read == "attribute" else [s for s in SEEN]
        y = m(x)
        return y, before, SETTINGS.n, list(SEEN)

    def run(fn):
        SETTINGS.n = 1
        SEEN.clear()
        return fn(LazyChangesProgramState(), torch.ones(3))
    want = run(f)
    bytegraph.reset()
    cnt = CompileCounter()
    got = run(bytegraph.compile(f, backend=cnt))
    assert_same(got, want, exact=True)
    assert any("uninitialized parameter" in str(b) for b in bytegraph.stats.break_records)
