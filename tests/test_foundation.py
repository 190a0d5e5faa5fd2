"""The foundation: compile(), the frame hook and its cache, guards on inputs and globals, the
module wrapper, disable, threads, and the backend registry. Every test checks what was captured."""
import threading
import time

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter

SCALE = 2.0


def three_ops(x, y):
    a = x + y
    b = torch.sin(a)
    return b.relu()


def test_three_op_function_is_one_frame_with_three_ops():
    cnt = CompileCounter()
    opt = bytegraph.compile(three_ops, backend=cnt)
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    torch.testing.assert_close(opt(x, y), three_ops(x, y))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    node_kinds = [(n.op, getattr(n.target, "__name__", n.target)) for n in cnt.graphs[0].graph.nodes
                  if n.op.startswith("call")]
    assert node_kinds == [("call_function", "add"), ("call_function", "sin"), ("call_method", "relu")]


def test_same_shapes_do_not_recompile_and_new_dtype_recompiles_once():
    cnt = CompileCounter()
    opt = bytegraph.compile(three_ops, backend=cnt)
    x, y = torch.randn(3), torch.randn(3)
    opt(x, y)
    opt(torch.randn(3), torch.randn(3))
    assert cnt.frame_count == 1
    xd, yd = x.double(), y.double()
    torch.testing.assert_close(opt(xd, yd), three_ops(xd, yd))
    assert cnt.frame_count == 2
    opt(xd, yd)
    opt(x, y)
    assert cnt.frame_count == 2


def test_decorator_forms():
    cnt = CompileCounter()

    @bytegraph.compile(backend=cnt)
    def f(x):
        return x * 3

    @bytegraph.compile
    def g(x):
        return x - 1

    x = torch.randn(2)
    torch.testing.assert_close(f(x), x * 3)
    torch.testing.assert_close(g(x), x - 1)
    assert cnt.frame_count == 1


def test_global_constant_is_guarded():
    global SCALE
    cnt = CompileCounter()

    def f(x):
        return x * SCALE

    opt = bytegraph.compile(f, backend=cnt)
    x = torch.ones(2)
    try:
        torch.testing.assert_close(opt(x), x * 2)
        SCALE = 5.0
        torch.testing.assert_close(opt(x), x * 5)
    finally:
        SCALE = 2.0
    assert cnt.frame_count == 2


def test_closure_over_tensor_and_constant():
    cnt = CompileCounter()
    w = torch.randn(3)
    k = 4

    def f(x):
        return (x + w) * k

    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), (x + w) * 4)
    assert (cnt.frame_count, cnt.op_count) == (1, 2)
    # the closure's tensor is a graph input read from the cell at every call
    w.add_(1)
    torch.testing.assert_close(opt(x), (x + w) * 4)
    assert cnt.frame_count == 1


def test_tensor_method_and_torch_function_granularity():
    cnt = CompileCounter()

    def f(x):
        return torch.relu(x).sum(dim=0).view(-1)

    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3, 4)
    torch.testing.assert_close(opt(x), f(x))
    ops = [n.op for n in cnt.graphs[0].graph.nodes if n.op.startswith("call")]
    assert ops == ["call_function", "call_method", "call_method"]


def test_disabled_function_runs_eagerly():
    cnt = CompileCounter()
    seen = []

    @bytegraph.disable
    def helper(t):
        seen.append(bytegraph._C.get_callback())
        return t * 2

    def f(x):
        return helper(x + 1) - 1

    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), f(x))
    assert seen[-1] is None  # the frame hook was off inside the disabled function
    assert cnt.frame_count >= 0  # whole frame or split around the call, never inside helper
    assert all("helper" not in str(g.graph) for g in cnt.graphs)


def test_torch_function_marked_not_to_compile_is_not_traced():
    cnt = CompileCounter()

    @torch._disable_dynamo
    def torch_marked(t):
        return t + 100

    def f(x):
        return torch_marked(x) * 2

    opt = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3)
    torch.testing.assert_close(opt(x), f(x))
    for g in cnt.graphs:
        assert not any(n.target is torch_marked for n in g.graph.nodes)


def test_two_threads_share_a_compiled_function():
    cnt = CompileCounter()
    opt = bytegraph.compile(three_ops, backend=cnt)
    x, y = torch.randn(8), torch.randn(8)
    expected = three_ops(x, y)
    errors = []

    def worker():
        try:
            for _ in range(50):
                torch.testing.assert_close(opt(x, y), expected)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 1 <= cnt.frame_count <= 2  # both threads may miss the empty cache at once



def test_threads_compiling_at_once_leave_the_collector_on():
    # each compile turns the collector off and back on: two threads compiling at once read "off" from
    # each other and one left it off for good; the trace's shared state raced too
    import gc

    def make(k):
        def fn(x):
            y = x * k
            print(end="")          # a break: two graphs per shape
            return y + k
        return fn

    graphs = []

    def slow_backend(gm, example_inputs):
        graphs.append(gm)
        time.sleep(0.01)          # lets the other threads run (and start compiling) meanwhile
        return gm.forward

    fns = [make(k) for k in range(4)]
    opts = [bytegraph.compile(f, backend=slow_backend, dynamic=False) for f in fns]
    errors = []

    def worker(i):
        try:
            for n in range(2, 8):
                x = torch.randn(n)
                torch.testing.assert_close(opts[i](x), fns[i](x))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    assert gc.isenabled()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and gc.isenabled()
    assert len(graphs) == 4 * 6 * 2

class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("offset", torch.ones(3))
        self.tag = "small"

    def forward(self, x):
        return torch.relu(self.lin(x)) + self.offset


def test_module_wrapper_forwards_state_and_attributes():
    cnt = CompileCounter()
    mod = Small()
    opt = bytegraph.compile(mod, backend=cnt)
    x = torch.randn(2, 4)
    torch.testing.assert_close(opt(x), mod(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    assert opt.tag == "small" and opt.lin is mod.lin
    assert opt.state_dict().keys() == mod.state_dict().keys()
    assert all(a is b for a, b in zip(opt.parameters(), mod.parameters()))
    opt.eval()
    assert not mod.training
    opt.train()
    assert mod.training


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown bytegraph backend 'nope'.*eager"):
        bytegraph.compile(three_ops, backend="nope")


def test_register_backend_and_list():
    calls = []

    @bytegraph.register_backend("recording_test_backend")
    def recording(gm, example_inputs):
        calls.append(len(example_inputs))
        return gm.forward

    assert "recording_test_backend" in bytegraph.list_backends()
    opt = bytegraph.compile(three_ops, backend="recording_test_backend")
    x, y = torch.randn(2), torch.randn(2)
    torch.testing.assert_close(opt(x, y), three_ops(x, y))
    assert calls == [2]


def test_run_only_mode_uses_cache_but_never_compiles():
    cnt = CompileCounter()
    opt = bytegraph.compile(three_ops, backend=cnt)
    x = torch.randn(3)
    opt(x, x)
    runner = bytegraph.run(three_ops)
    torch.testing.assert_close(runner(x, x), three_ops(x, x))
    runner(x.double(), x.double())  # a miss: runs eagerly, no compile
    assert cnt.frame_count == 1


def test_user_errors_keep_type_and_message():
    def f(x):
        return x.view(7, 7)

    opt = bytegraph.compile(f)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        opt(torch.randn(3))


def test_aliased_arguments_are_guarded():
    cnt = CompileCounter()

    def f(x, y):
        x.add_(1)
        return x + y

    opt = bytegraph.compile(f, backend=cnt)
    a = torch.zeros(2)
    torch.testing.assert_close(opt(a, a), torch.full((2,), 2.0))
    b, c = torch.zeros(2), torch.zeros(2)
    torch.testing.assert_close(opt(b, c), torch.ones(2))
    assert cnt.frame_count == 2


def test_each_compile_keeps_its_own_entries():
    """Compiling the same function twice (another backend, fullgraph) never reuses the other's graph."""
    first, second = CompileCounter(), CompileCounter()
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(bytegraph.compile(three_ops, backend=first)(x, y), three_ops(x, y))
    torch.testing.assert_close(bytegraph.compile(three_ops, backend=second)(x, y), three_ops(x, y))
    assert (first.frame_count, second.frame_count) == (1, 1)

    def breaks(t):
        print("")
        return t + 1

    bytegraph.compile(breaks)(x)
    with pytest.raises(bytegraph.GraphBreakError):
        bytegraph.compile(breaks, fullgraph=True)(x)


def test_module_wrapper_methods_act_on_the_original():
    mod = Small()
    opt = bytegraph.compile(mod, backend=CompileCounter())
    assert opt.double() is opt and mod.lin.weight.dtype == torch.float64
    opt.float()
    seen = []
    opt.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Small"]
    assert [n for n, _ in opt.named_modules()] == ["", "lin"]
    x = torch.randn(2, 4)
    torch.testing.assert_close(opt(x), mod(x))


def _call_with_callback(callback, fn, *args):
    prev = bytegraph._C.set_callback(callback)
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - the test looks at it
        return e
    finally:
        bytegraph._C.set_callback(prev)


def test_the_frame_hook_contract_is_typed():
    from bytegraph.cache import CacheEntry, FrameAction
    _C = bytegraph._C

    def plus_one(x):
        return x + 1

    def times_ten(x):
        return x * 10

    x = torch.ones(2)
    # the callback answers a FrameAction or a CacheEntry; anything else is an error, not a guess
    error = _call_with_callback(lambda code, func, args, n: None, plus_one, x)
    assert isinstance(error, TypeError) and "CacheEntry or a FrameAction" in str(error)
    assert torch.equal(_call_with_callback(lambda *a: FrameAction.RUN_AS_IS, plus_one, x), x + 1)
    assert not _C.is_skipped(plus_one.__code__)
    assert torch.equal(_call_with_callback(lambda *a: FrameAction.SKIP_CODE, plus_one, x), x + 1)
    assert _C.is_skipped(plus_one.__code__)
    _C.clear(plus_one.__code__)
    # an entry's fields are named and read-only; the hook runs its code when its guard accepts
    entry = CacheEntry(lambda func, x: True, times_ten.__code__, "info", None)
    assert (entry.code, entry.info, entry.owner) == (times_ten.__code__, "info", None)
    with pytest.raises(AttributeError):
        entry.code = plus_one.__code__
    with pytest.raises(TypeError):
        CacheEntry(lambda func, x: True, "not code")
    _C.get_cache(plus_one.__code__).append(entry)
    try:
        assert torch.equal(_call_with_callback(lambda *a: FrameAction.RUN_AS_IS, plus_one, x), x * 10)
    finally:
        _C.clear(plus_one.__code__)
    _C.get_cache(plus_one.__code__).append((entry.guard, entry.code))   # a cache holds CacheEntry objects only
    try:
        error = _call_with_callback(lambda *a: FrameAction.RUN_AS_IS, plus_one, x)
        assert isinstance(error, TypeError) and "not a CacheEntry" in str(error)
    finally:
        _C.clear(plus_one.__code__)


def test_reset_forgets_all_process_state(tmp_path):
    from bytegraph.runtime import runtime
    cnt = CompileCounter()
    opt = bytegraph.compile(three_ops, backend=cnt)
    with bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        opt(torch.randn(2), torch.randn(2))
        opt(torch.randn(3), torch.randn(3))      # only a size changed: automatic dynamic remembers it
    assert cnt.frame_count == 2 and bytegraph.stats.frames_compiled == 2
    assert runtime.automatic_dynamic.dims_for(three_ops.__code__)
    assert runtime.touched_codes() and runtime.run_dirs and runtime.frame_numbers and runtime.phases
    bytegraph.reset()
    assert not bytegraph._C.peek_cache(three_ops.__code__) and not runtime.touched_codes()
    assert not runtime.automatic_dynamic.dims_for(three_ops.__code__)
    assert not (runtime.run_dirs or runtime.frame_numbers or runtime.phases)
    assert bytegraph.stats.frames_compiled == 0 and not bytegraph.compile_times()
