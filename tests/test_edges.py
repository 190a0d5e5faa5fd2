"""Edges that must stay graceful: backends that break their contract, bad arguments, frames past the
cache size limit, compiled functions that die, storage-changing ops."""
import gc
import logging

import pytest
import torch

import bytegraph
from bytegraph import _C
from bytegraph.backends.registry import BackendContractError, _BACKENDS
from bytegraph.convert_frame import FrameCompiler
from bytegraph.testing import CompileCounter, CompileCounterWithBackend


def add_sin(x):
    return x.sin() + 1


@pytest.mark.parametrize("returned, message", [
    (None, "returned NoneType None"), (5, "returned int 5"), ("text", "returned str 'text'"),
    (lambda: 0, "cannot take the graph's 1 positional inputs"),
])
def test_backend_returning_no_usable_callable_is_named_at_compile_time(returned, message):
    def my_backend(gm, example_inputs):
        return returned
    with pytest.raises(BackendContractError, match=f"backend 'my_backend' {message}" if "returned" in message
                       else message):
        bytegraph.compile(add_sin, backend=my_backend)(torch.ones(2))


@pytest.mark.parametrize("result, message", [
    ([1, 2], "returned list of length 2; the graph has 1 output"), (3, "returned int; the graph has 1 output"),
    (["a"], "returned str as output 0, where the graph returns a tensor"),
])
def test_backend_whose_function_returns_garbage_fails_on_first_call(result, message):
    def garbage(gm, example_inputs):
        return lambda *args: result
    with pytest.raises(BackendContractError, match=f"backend 'garbage' {message}"):
        bytegraph.compile(add_sin, backend=garbage)(torch.ones(2))


def test_registered_backend_is_named_by_its_registered_name():
    bytegraph.register_backend("returns_none_backend", lambda gm, example_inputs: None)
    try:
        with pytest.raises(BackendContractError, match="backend 'returns_none_backend' returned NoneType"):
            bytegraph.compile(add_sin, backend="returns_none_backend")(torch.ones(2))
    finally:
        del _BACKENDS["returns_none_backend"]


def test_a_correct_backend_still_compiles_and_runs():
    cnt = CompileCounter()
    x = torch.randn(3)
    torch.testing.assert_close(bytegraph.compile(add_sin, backend=cnt)(x), add_sin(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(dynamic="yes"), r"dynamic=...\) takes None \(automatic\), True or False; got 'yes'"),
    (dict(fullgraph=1), r"fullgraph=...\) takes True or False; got 1"),
    (dict(backend=5), r"backend=...\) takes a backend name \(.*eager.*\) or a callable"),
    (dict(options=[1]), r"options=...\) takes a dict"),
])
def test_compile_rejects_bad_arguments(kwargs, message):
    with pytest.raises(TypeError, match=message):
        bytegraph.compile(add_sin, **kwargs)
    with pytest.raises(TypeError, match=message):   # the decorator form checks at once too
        bytegraph.compile(**kwargs)


def test_register_backend_rejects_what_is_not_a_backend():
    with pytest.raises(TypeError, match=r"register_backend\('x'\) needs a callable"):
        bytegraph.register_backend("x")(5)
    with pytest.raises(TypeError, match="register_backend\\(name\\) takes a str"):
        bytegraph.register_backend(3, add_sin)
    assert "x" not in bytegraph.list_backends()


def _fresh_object():
    class Fresh:
        pass
    return Fresh()


def test_past_the_cache_limit_a_miss_runs_eagerly_without_calling_back(monkeypatch, caplog):
    calls = []
    original = FrameCompiler.__call__

    def counting(self, code, *rest):
        calls.append(code.co_name)
        return original(self, code, *rest)
    monkeypatch.setattr(FrameCompiler, "__call__", counting)

    def takes_object(x, obj):
        obj.seen = True        # read: guarded on its class, new on every call
        return x * 2 + 1
    cnt = CompileCounter()
    opt = bytegraph.compile(takes_object, backend=cnt)
    x = torch.ones(2)
    with bytegraph.config.patch(cache_size_limit=3), caplog.at_level(logging.WARNING, logger="bytegraph"):
        for _ in range(20):
            torch.testing.assert_close(opt(x, _fresh_object()), takes_object(x, _fresh_object()))
    assert cnt.frame_count == 3                     # one graph per entry, up to the limit
    assert calls.count("takes_object") == 4         # 3 compiles + the miss that reached the limit
    assert sum("hit config.cache_size_limit" in r.message for r in caplog.records) == 1


def _closure(i):
    w = torch.full((3,), float(i))

    def scaled(x):
        return x * w + i
    return scaled


def test_entries_die_with_the_compiled_function():
    cnt = CompileCounter()
    x = torch.ones(3)
    for i in range(5):
        fn = _closure(i)
        torch.testing.assert_close(bytegraph.compile(fn, backend=cnt)(x), fn(x))
    assert cnt.frame_count == 5
    gc.collect()
    assert not _C.peek_cache(_closure(0).__code__)          # no graph outlives its compiled function
    keep = bytegraph.compile(_closure(7), backend=cnt)
    keep(x)
    gc.collect()
    assert len(_C.peek_cache(_closure(0).__code__)) == 1    # a live one keeps its entry


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_resize_of_an_input_runs_as_python(backend):
    def grow(x):
        y = x * 2
        x.resize_(8)
        return x.fill_(1) + y.sum()
    cnt = CompileCounterWithBackend(backend)
    a, b = torch.ones(4), torch.ones(4)
    expected = grow(a)
    explained = bytegraph.explain(grow)(torch.ones(4))
    torch.testing.assert_close(bytegraph.compile(grow, backend=cnt)(b), expected)
    assert b.shape == a.shape == (8,)
    assert cnt.frame_count == 2 and explained.graph_break_count == 1
    assert "resize_" in str(explained.break_reasons[0])


def test_a_long_list_of_constants_is_rebuilt_as_one_constant():
    def make_list(x, n):
        return x + 1, [0] * n, tuple(range(n))
    cnt = CompileCounter()
    x = torch.ones(2)
    opt = bytegraph.compile(make_list, backend=cnt)
    got, want = opt(x, 5000), make_list(x, 5000)
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:] and type(got[1]) is list and type(got[2]) is tuple
    assert (cnt.frame_count, cnt.op_count) == (1, 1)
    (entry,) = _C.peek_cache(make_list.__code__)
    assert len(list(entry.code.co_code)) < 200       # not one instruction per item


@torch.library.custom_op("bytegraph_test::split_sum", mutates_args=())
def _split_sum(x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    start, parts = 0, []
    for end in offs.tolist():       # a break if this Python implementation were compiled on its own
        parts.append(x[start:end].sum(0))
        start = end
    return torch.stack(parts)


@_split_sum.register_fake
def _(x, offs):
    return x.new_empty(offs.shape[0], *x.shape[1:])


def test_what_a_graph_calls_is_never_compiled_on_its_own():
    def routed(x, offs):
        return torch.ops.bytegraph_test.split_sum(x.relu(), offs) * 2
    cnt = CompileCounter()
    x, offs = torch.randn(6, 3), torch.tensor([2, 5, 6])
    torch.testing.assert_close(bytegraph.compile(routed, backend=cnt)(x, offs), routed(x, offs))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)
    assert bytegraph.stats.frames_compiled == 1 and not bytegraph.stats.break_records


def test_code_generated_by_skipped_libraries_is_skipped():
    """`exec`-made code has the file name "<string>": namedtuple constructors and the dataclass
    methods of a skipped library's classes are skipped (FSDP's hooks make both every step), a user
    dataclass's methods are not."""
    import collections
    import dataclasses

    from bytegraph.skipfiles import is_skipped_code

    point = collections.namedtuple("Point", "x y")
    assert is_skipped_code(point.__new__.__code__, point.__new__)

    @dataclasses.dataclass
    class UserRecord:
        a: int = 0
    assert UserRecord.__init__.__code__.co_filename == "<string>"
    assert not is_skipped_code(UserRecord.__init__.__code__, UserRecord.__init__)

    from torch.utils.benchmark.utils.common import TaskSpec   # a dataclass of torch
    assert TaskSpec.__init__.__code__.co_filename == "<string>"
    assert is_skipped_code(TaskSpec.__init__.__code__, TaskSpec.__init__)
