"""Guards: a compiled graph is reused only while everything it assumed still holds.

Soundness suite: change one dependency between two calls; the result must equal eager and the
recompile count must be exactly what the change requires. Also: readable failure reasons, weak
references to modules, and the cache size limit."""
import gc
import weakref

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from helpers import check, compiled, same

FACTOR = 2
FLAG = True


def last_reason():
    return bytegraph.stats.recompile_reasons[-1][1]


def test_global_value_change_recompiles_once():
    global FACTOR

    def f(x):
        return x * FACTOR

    opt, cnt = compiled(f)
    x = torch.randn(3)
    check(opt, f, x)
    check(opt, f, x)
    FACTOR = 3
    try:
        check(opt, f, x)
        check(opt, f, x)
    finally:
        FACTOR = 2
    assert cnt.frame_count == 2
    assert "G['FACTOR'] changed: expected 2, got 3" in bytegraph.stats.recompile_reasons[0][1]


def test_closure_cell_change():
    scale = 1.5

    def f(x):
        return x * scale

    opt, cnt = compiled(f)
    x = torch.randn(3)
    check(opt, f, x)
    scale = 4.0  # noqa: F841 - rebinds the cell f closes over
    check(opt, f, x)
    assert cnt.frame_count == 2
    assert "F['scale'] changed" in last_reason()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()
        self.scale = 2.0

    def forward(self, x):
        y = self.act(self.lin(x)) * self.scale
        if self.training:
            y = y + 1
        return y


def test_module_attribute_submodule_and_training_flag():
    net = Net()
    cnt = CompileCounter()
    opt = bytegraph.compile(net, backend=cnt)
    x = torch.randn(2, 4)
    torch.testing.assert_close(opt(x), net(x))
    torch.testing.assert_close(opt(x), net(x))
    assert cnt.frame_count == 1
    net.scale = 3.0
    torch.testing.assert_close(opt(x), net(x))
    assert cnt.frame_count == 2
    net.act = torch.nn.Tanh()
    torch.testing.assert_close(opt(x), net(x))
    assert cnt.frame_count == 3
    net.eval()
    torch.testing.assert_close(opt(x), net(x))
    assert cnt.frame_count == 4
    assert "training changed: expected True, got False" in last_reason()
    net.train()
    torch.testing.assert_close(opt(x), net(x))  # the first training-mode entry fits again
    assert cnt.frame_count == 4


def test_weights_updated_in_place_are_not_baked_in():
    net = Net()
    cnt = CompileCounter()
    opt = bytegraph.compile(net, backend=cnt)
    x = torch.randn(2, 4)
    opt(x)
    with torch.no_grad():
        net.lin.weight.add_(1.0)
    torch.testing.assert_close(opt(x), net(x))
    assert cnt.frame_count == 1


def three(x):
    return (x + 1).sin() * 2


@pytest.mark.parametrize("change, reason", [
    (lambda x: x.double(), "L['x'].dtype changed: expected torch.float32, got torch.float64"),
    (lambda x: torch.randn(5, 3), "L['x'].size(0) changed: expected 4, got 5"),
    (lambda x: x.t().contiguous().t(), "L['x'].stride() changed: expected"),
    (lambda x: x.clone().requires_grad_(), "L['x'].requires_grad changed: expected False, got True"),
    (lambda x: torch.randn(4, 3, 1), "L['x'].dim() changed: expected 2, got 3"),
])
def test_tensor_metadata_changes_recompile_with_a_reason(change, reason):
    opt, cnt = compiled(three)
    x = torch.randn(4, 3)
    check(opt, three, x)
    check(opt, three, torch.randn(4, 3))
    assert cnt.frame_count == 1
    y = change(x)
    torch.testing.assert_close(opt(y), three(y))
    assert cnt.frame_count == 2
    assert reason in last_reason()


def test_list_length_and_dict_keys():
    def f(xs, cfg):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        return out * cfg["scale"]

    opt, cnt = compiled(f)
    a, b, c = torch.randn(2), torch.randn(2), torch.randn(2)
    check(opt, f, [a, b], {"scale": 2.0})
    check(opt, f, [b, a], {"scale": 2.0})
    assert cnt.frame_count == 1
    check(opt, f, [a, b, c], {"scale": 2.0})
    assert cnt.frame_count == 2
    assert "len(L['xs']) changed: expected 2, got 3" in last_reason()
    check(opt, f, [a, b], {"scale": 2.0, "extra": 1})    # a key the code never looks up
    assert cnt.frame_count == 2
    check(opt, f, [a, b], {"factor": 2.0, "scale": 3.0})
    assert cnt.frame_count == 3
    assert "L['cfg']['scale'] changed: expected 2.0, got 3.0" in last_reason()

    def g(xs, cfg):
        return xs[0] * len(list(cfg))     # (depends on every key)
    opt, cnt = compiled(g)
    check(opt, g, [a], {"scale": 2.0})
    check(opt, g, [a], {"other": 2.0})
    assert cnt.frame_count == 2
    assert "keys changed" in last_reason()


def test_constant_argument():
    def f(x, n):
        return x * n

    opt, cnt = compiled(f)
    x = torch.randn(2)
    check(opt, f, x, 2)
    check(opt, f, x, 2)
    check(opt, f, x, 3)
    assert cnt.frame_count == 2
    assert "L['n'] changed: expected 2, got 3" in last_reason()


def test_grad_mode_and_default_dtype():
    def f(x):
        return torch.ones(2) + x

    opt, cnt = compiled(f)
    x = torch.randn(2, requires_grad=True)
    check(opt, f, x)
    with torch.no_grad():
        out = opt(x)
        assert not out.requires_grad
    assert cnt.frame_count == 2
    assert "grad_enabled changed: expected True, got False" in last_reason()
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        xd = torch.randn(2, dtype=torch.float64)
        out = opt(xd)
        assert out.dtype == torch.float64
    finally:
        torch.set_default_dtype(old)
    assert cnt.frame_count == 3


def test_compiled_module_is_not_kept_alive():
    net = Net()
    ref = weakref.ref(net)
    opt = bytegraph.compile(net, backend=CompileCounter())
    opt(torch.randn(2, 4))
    del net, opt
    gc.collect()
    assert ref() is None


def test_cache_size_limit_runs_eagerly_after_the_limit():
    cnt = CompileCounter()
    opt = bytegraph.compile(three, backend=cnt, dynamic=False)  # every size is a new entry
    with bytegraph.config.patch(cache_size_limit=3, automatic_dynamic_shapes=False):  # one entry per size
        for n in range(1, 7):
            x = torch.randn(n, 2)
            check(opt, three, x)
    assert cnt.frame_count == 3
    assert bytegraph.stats.recompiles_by_function["three"] == 2


def test_cache_size_limit_counts_entries_per_module_instance():
    """One code run by many module instances whose identity it depends on (here a table keyed by
    module) has an entry per instance: only the entries for the same modules count toward the
    limit; `accumulated_cache_size_limit` bounds them all."""
    blocks = [torch.nn.Linear(2, 2) for _ in range(5)]
    scales = {block: float(i) for i, block in enumerate(blocks)}

    def run_block(block, x):
        return block(x).relu() * scales[block]

    cnt = CompileCounter()
    opt = bytegraph.compile(run_block, backend=cnt, dynamic=False)
    with bytegraph.config.patch(cache_size_limit=2, automatic_dynamic_shapes=False):
        for block in blocks + blocks:
            check(opt, run_block, block, torch.randn(3, 2))
        assert cnt.frame_count == 5                      # one per block, then cached
        for n in (4, 5, 6):                              # one block, new sizes: its own limit applies
            check(opt, run_block, blocks[0], torch.randn(n, 2))
        assert cnt.frame_count == 6
    cnt.clear()
    bytegraph.reset()
    with bytegraph.config.patch(accumulated_cache_size_limit=3):
        for block in blocks:
            check(opt, run_block, block, torch.randn(3, 2))
    assert cnt.frame_count == 3


def test_cache_size_limit_counts_entries_per_module_instance_guarded_by_type():
    """Layers that differ in a constant the code reads (a layer index) each get an entry: a miss for
    other module objects than an entry was compiled for does not count toward the limit."""
    blocks = [torch.nn.Linear(2, 2) for _ in range(5)]
    for i, block in enumerate(blocks):
        block.index = i

    def run_block(block, x):
        return block(x).relu() * block.index

    cnt = CompileCounter()
    opt = bytegraph.compile(run_block, backend=cnt, dynamic=False)
    with bytegraph.config.patch(cache_size_limit=2, automatic_dynamic_shapes=False):
        for block in blocks + blocks:
            check(opt, run_block, block, torch.randn(3, 2))
    assert cnt.frame_count == 5


def test_guard_source_is_readable():
    from bytegraph.cache import CacheEntry, CacheEntryInfo
    opt, _ = compiled(three)
    opt(torch.randn(2))
    entries = bytegraph._C.peek_cache(three.__code__)
    assert type(entries[0]) is CacheEntry and type(entries[0].info) is CacheEntryInfo
    source = entries[0].info.check.source
    assert source.startswith("def guard_three(__func, L_x):")
    assert "L_x" in source


def test_inputs_distinct_when_traced_must_stay_distinct():
    def f(x, y):
        x.add_(1)
        return x + y

    opt, cnt = compiled(f)
    a, b = torch.zeros(2), torch.zeros(2)
    torch.testing.assert_close(opt(a, b), torch.ones(2))
    t = torch.zeros(2)
    torch.testing.assert_close(opt(t, t), torch.full((2,), 2.0))
    assert cnt.frame_count == 2


def test_closure_made_per_call_is_guarded_by_code_and_cells():
    def apply(fn, x):
        return fn(x) + 1

    cnt = CompileCounter()
    opt = bytegraph.compile(apply, backend=cnt)
    x = torch.randn(3)
    for k in (2.0, 2.0, 2.0):
        torch.testing.assert_close(opt(lambda t: t * k, x), x * k + 1)
    assert cnt.frame_count == 1  # a new lambda object each call, same code and cell value
    k = 5.0
    torch.testing.assert_close(opt(lambda t: t * k, x), x * 5 + 1)
    assert cnt.frame_count == 2  # the cell's value changed
    torch.testing.assert_close(opt(lambda t: t - k, x), x - 5 + 1)
    assert cnt.frame_count == 3  # different code


class _AliasConfig:
    """Like a HuggingFace config: a Python __getattribute__ that maps alias names."""
    attribute_map = {"factor": "scale"}
    bias = 0.5            # a class attribute, shadowed by the instance's in some tests

    def __init__(self, scale, bias=None):
        self.scale = scale
        if bias is not None:
            self.bias = bias

    def __getattribute__(self, key):
        if key != "attribute_map" and key in object.__getattribute__(self, "attribute_map"):
            key = object.__getattribute__(self, "attribute_map")[key]
        return object.__getattribute__(self, key)


def _getattribute_calls(fn, *args):
    """(fn(*args), how many times _AliasConfig.__getattribute__ ran during the call). The probe
    watches calls with a profile hook (replacing the method on the class would recompile: guards
    check the class's methods)."""
    import sys
    code = _AliasConfig.__dict__["__getattribute__"].__code__
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append(frame.f_locals.get("key"))

    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, len(calls)


def test_attribute_of_object_with_python_getattribute_recompiles_when_it_changes():
    def f(x, cfg):
        return x * cfg.factor + cfg.bias

    opt, cnt = compiled(f)
    x = torch.randn(3)
    cfg = _AliasConfig(2.0, bias=1.0)
    check(opt, f, x, cfg)
    assert cnt.frame_count == 1
    # a cache hit reads the instance dict directly: the class's __getattribute__ does not run
    result, calls = _getattribute_calls(opt, x, cfg)
    torch.testing.assert_close(result, f(x, cfg))
    assert calls == 0
    assert cnt.frame_count == 1
    assert "L['cfg'].__dict__['scale'] == 2.0" in [g.describe() for g in bytegraph.explain(f)(x, cfg).out_guards]

    cfg.scale = 3.0                       # the value changes
    check(opt, f, x, cfg)
    assert cnt.frame_count == 2
    assert "L['cfg'].__dict__['scale']" in last_reason()

    del cfg.bias                          # the attribute leaves the instance dict: the class's 0.5 now
    check(opt, f, x, cfg)
    assert cnt.frame_count == 3
    torch.testing.assert_close(opt(x, cfg), x * 3.0 + 0.5)

    cfg.bias = 1.0                        # back in the instance dict: the first entries apply again
    check(opt, f, x, cfg)
    check(opt, f, x, _AliasConfig(2.0, bias=1.0))
    assert cnt.frame_count == 3


def test_instance_dict_of_object_with_python_getattribute_is_guarded():
    def f(x, cfg):
        return x + len(cfg.__dict__) + cfg.__dict__.get("extra", 0)

    opt, cnt = compiled(f)
    x = torch.randn(3)
    cfg = _AliasConfig(2.0)
    check(opt, f, x, cfg)
    cfg.extra = 10
    check(opt, f, x, cfg)
    assert cnt.frame_count == 2
    check(opt, f, x, _AliasConfig(7.0))
    assert cnt.frame_count == 2


def test_float_constants_are_guarded_bit_exactly():
    import math

    def f(x, s):
        return x * math.copysign(1.0, s)

    opt, cnt = compiled(f)
    x = torch.ones(2)
    with bytegraph.config.patch(specialize_float=True):
        check(opt, f, x, 0.0)
        check(opt, f, x, -0.0)   # == 0.0, but another sign
        assert cnt.frame_count == 2
        check(opt, f, x, float("nan"))
        check(opt, f, x, float("nan"))  # nan matches nan: no recompile storm
        assert cnt.frame_count == 3


def test_hooks_and_container_changes_after_compiling_recompile():
    layers = torch.nn.ModuleList([torch.nn.Linear(3, 3)])
    net = torch.nn.Sequential(torch.nn.Linear(3, 3))

    def f(x):
        for layer in layers:
            x = layer(x)
        return net(x)

    opt, cnt = compiled(f)
    x = torch.randn(2, 3)
    check(opt, f, x)
    layers.append(torch.nn.Linear(3, 3))
    check(opt, f, x)
    assert cnt.frame_count == 2
    assert "keys changed" in last_reason()
    calls = []
    handle = net[0].register_forward_hook(lambda m, i, o: calls.append(1))
    check(opt, f, x)
    assert cnt.frame_count == 3 and calls  # the new hook runs
    handle.remove()
    n = len(calls)
    check(opt, f, x)
    assert len(calls) == n  # neither the compiled nor the eager call ran the removed hook
    assert cnt.frame_count == 3  # back to the hook-less entry


class Knob:
    scale = 2.0

    def method(self, x):
        return x + 1


def test_class_attributes_and_methods_are_guarded():
    def f(k, x):
        return k.method(x) * k.scale

    opt, cnt = compiled(f)
    k, x = Knob(), torch.randn(3)
    check(opt, f, k, x)
    Knob.scale = 9.0
    try:
        check(opt, f, k, x)
        assert cnt.frame_count == 2
        Knob.method = lambda self, x: x - 1
        check(opt, f, k, x)
        assert cnt.frame_count == 3
        k.scale = 10.0  # the instance now shadows the class attribute
        check(opt, f, k, x)
        assert cnt.frame_count == 4
    finally:
        Knob.scale = 2.0
        Knob.method = lambda self, x: x + 1


def test_every_guard_kind_carries_all_its_facts():
    from bytegraph.guards.guard import KINDS, GuardKind
    assert len({k.name for k in KINDS}) == len(KINDS) >= 12
    for kind in KINDS:
        cls = type(kind)
        renders = cls.render_all if kind.fast_path else cls.render
        assert renders is not getattr(GuardKind, renders.__name__), kind
        assert cls.describe is not GuardKind.describe and cls.explain is not GuardKind.explain, kind
        assert isinstance(kind.order, int) and kind.name.isupper()
    # a kind is asked, never switched on: its facts reach the check function and the failure reason
    opt, cnt = compiled(three)
    opt(torch.randn(2))
    opt(torch.randn(2).double())
    assert cnt.frame_count == 2
    assert "L['x'].dtype changed: expected torch.float32, got torch.float64" in last_reason()


def test_an_argument_the_frame_never_reads_adds_no_guard():
    # like a library's `name=` or `return_dict=` argument: changing it recompiles nothing, and a
    # tensor never read is no graph input
    def fn(x, name, unused, y):
        return x * 2 + y

    opt, cnt = compiled(fn)
    for name, unused in (("a", torch.ones(1)), ("b", torch.ones(3, 3)), ("c", None), (5, [1])):
        assert same(opt(torch.ones(2), name, unused, 1.0), fn(torch.ones(2), name, unused, 1.0))
    assert cnt.frame_count == 1
    assert [n.name for n in cnt.graphs[0].graph.nodes if n.op == "placeholder"] == ["l__x"]


def test_an_argument_first_read_after_a_graph_break_is_guarded_there():
    def fn(x, k):
        x = x + 1
        print("break")
        return x * k

    opt, cnt = compiled(fn)
    for k in (2, 2, 3):
        assert same(opt(torch.ones(2), k), fn(torch.ones(2), k))
    assert cnt.frame_count == 3     # the graph before the break once; after it, one per k


def test_a_module_configuration_tuple_is_one_identity_guard():
    # a convolution's stride/padding/dilation: one guard each (the tuple itself, held by the guard),
    # and rebinding one to other values recompiles
    conv = torch.nn.Conv2d(2, 2, 3)

    def fn(x):
        return conv(x)

    x = torch.randn(1, 2, 8, 8)
    opt, cnt = compiled(fn)
    assert same(opt(x), fn(x))
    guards = [g.describe() for g in bytegraph.explain(fn)(x).out_guards]
    stride_guards = [g for g in guards if ".stride" in g]
    assert len(stride_guards) == 1, stride_guards
    conv.stride = (2, 2)
    assert same(opt(x), fn(x))
    conv.stride = tuple([2, 2])      # an equal tuple, another object: compiled again, still equal
    assert same(opt(x), fn(x))
    assert cnt.frame_count == 3


def test_classes_made_at_run_time_are_not_kept_alive_by_the_cache():
    # guards held the classes whose methods they looked up (and the type of `self` in their methods'
    # own entries, a cycle through co_extra the collector cannot see): each class lived for good,
    # with everything it reaches (CPython's test_module.test_clear_dict_in_ref_cycle)
    refs, finalized = [], []

    def make():
        class A:
            def __init__(self, t):
                self.t = t * 2

            def scaled(self):
                return self.t + 1
        weakref.finalize(A, finalized.append, 1)
        return A

    def f(x, cls):
        return cls(x).scaled()

    opt, cnt = compiled(f)
    for _ in range(3):
        cls = make()
        refs.append(weakref.ref(cls))
        assert torch.equal(opt(torch.ones(1), cls), f(torch.ones(1), cls))
        del cls
    gc.collect()
    assert [r() for r in refs] == [None] * 3 and finalized == [1] * 3
    assert cnt.frame_count == 3       # a new class each call: its guards fail, a recompile per class
