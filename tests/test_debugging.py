"""The debugging toolkit: explain, the debug dir, the minifiers, record/replay, the function filter,
compile times and stats. Scripts the tools write are run in a subprocess, as a user would."""
import glob
import importlib.util
import logging
import operator
import os
import re
import runpy
import subprocess
import sys

import pytest
import torch

import bytegraph
from bytegraph.debug_dir import write_artifact
from bytegraph.minifier import ddmin
from bytegraph.testing import CompileCounter


def run_script(path, timeout=120):
    return subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=timeout,
                          cwd=os.path.dirname(path), check=False)


def read(path):
    with open(path) as f:
        return f.read()


def load_script(path):
    spec = importlib.util.spec_from_file_location("generated_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call_nodes(gm):
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


# -- functions with known graph breaks -------------------------------------------------------------
def print_in_the_middle(x):
    a = x * 2
    b = a.sin()
    print("between the graphs")
    c = b + a
    return c.relu()


PRINT_LINE = print_in_the_middle.__code__.co_firstlineno + 3


@bytegraph.disable
def _eager_helper(t):
    return t - 1


def calls_disabled(x, y):
    a = (x + y).cos()
    b = _eager_helper(a)
    return b * y


def two_breaks(x, y):
    a = (x + y).cos()
    b = _eager_helper(a)
    c = b * y
    print("second break")
    return c.sum()


def no_break(x):
    return torch.tanh(x @ x.t()) + 1


def _inner_prints(t):
    t = t.exp()
    print("in the helper")
    return t.neg()


def break_in_callee(x):
    return _inner_prints(x + 1) * 2


# -- explain ---------------------------------------------------------------------------------------------
def test_explain_counts_graphs_breaks_and_reasons(capsys):
    x = torch.randn(5)
    out = bytegraph.explain(print_in_the_middle)(x)
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    assert len(out.graphs) == 2
    assert [len(ops) for ops in out.ops_per_graph] == [2, 2]
    assert out.ops_per_graph[0][0] is operator.mul and out.ops_per_graph[0][1] == "sin"
    (reason,) = out.break_reasons
    assert reason.reason == "print() performs I/O" and reason.kind == "io" and "print" in reason.hint
    assert reason.frames == [f"{__file__}:{PRINT_LINE}:print_in_the_middle"]
    assert reason.user_stack[-1].line == 'print("between the graphs")'
    assert any("L['x']" in g.describe() for g in out.out_guards)
    assert "tracing" in out.compile_times and "guards" in out.compile_times
    # the function really ran (once), so the output can be trusted
    assert capsys.readouterr().out == "between the graphs\n"


def test_explain_several_breaks_and_a_callee_stack():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    out = bytegraph.explain(calls_disabled)(x, y)
    assert (out.graph_count, out.graph_break_count) == (2, 1)   # add, cos | mul
    assert [r.kind for r in out.break_reasons] == ["skipped_function"]
    assert [len(ops) for ops in out.ops_per_graph] == [2, 1]

    out = bytegraph.explain(two_breaks)(x, y)
    assert (out.graph_count, out.graph_break_count) == (3, 2)   # add, cos | mul | sum
    assert [r.kind for r in out.break_reasons] == ["skipped_function", "io"]

    # the caller breaks at the call (the callee cannot be inlined), then the callee's own frame breaks
    out = bytegraph.explain(break_in_callee)(x)
    assert (out.graph_count, out.graph_break_count) == (4, 2)   # add | exp | neg | mul
    assert [r.kind for r in out.break_reasons] == ["io", "io"]
    assert [f.split(":")[-1] for f in out.break_reasons[0].frames] == ["break_in_callee", "_inner_prints"]
    assert [f.split(":")[-1] for f in out.break_reasons[1].frames] == ["_inner_prints"]

    out = bytegraph.explain(no_break)(x)
    assert (out.graph_count, out.graph_break_count, out.break_reasons) == (1, 0, [])
    assert [len(ops) for ops in out.ops_per_graph] == [4]


def test_explain_report_text():
    text = str(bytegraph.explain(print_in_the_middle)(torch.randn(5)))
    lines = text.splitlines()
    assert lines[0] == "bytegraph.explain(print_in_the_middle)"
    assert "graphs: 2" in lines[1] and "graph breaks: 1" in lines[1] and "ops: 4 (2 + 2)" in lines[1]
    assert "Graph breaks" in text
    assert "1. print() performs I/O  [io]" in text
    assert f"test_debugging.py:{PRINT_LINE} in print_in_the_middle" in text
    assert 'print("between the graphs")' in text
    assert "Graph 1 of 2: print_in_the_middle" in text and "ends at graph break 1" in text
    assert "Graph 2 of 2:" in text
    assert "ops: mul, .sin()" in text and "ops: add, .relu()" in text
    assert "mul = l__x * 2" in text and "# float32[5]" in text
    assert "Compile times:" in text
    assert text.index("Graph breaks") < text.index("Graph 1 of 2") < text.index("Graph 2 of 2")


def test_explain_does_not_disturb_the_callers_caches_or_stats():
    cnt = CompileCounter()
    opt = bytegraph.compile(print_in_the_middle, backend=cnt)
    x = torch.randn(5)
    opt(x)
    assert cnt.frame_count == 2
    stats_before = (bytegraph.stats.frames_compiled, bytegraph.stats.graphs, len(bytegraph.stats.break_records))

    out = bytegraph.explain(opt)(x)        # a compiled function is explained as its original
    assert out.graph_count == 2            # compiled afresh, not served by the caller's cache entries
    assert (bytegraph.stats.frames_compiled, bytegraph.stats.graphs,
            len(bytegraph.stats.break_records)) == stats_before

    torch.testing.assert_close(opt(x), print_in_the_middle(x))
    assert cnt.frame_count == 2            # the caller's entries are back and still hit

    # and what explain compiled is dropped: a new compile of another function starts from scratch
    bytegraph.explain(no_break)(x)
    cnt2 = CompileCounter()
    torch.testing.assert_close(bytegraph.compile(no_break, backend=cnt2)(x), no_break(x))
    assert cnt2.frame_count == 1


def test_explain_restores_caches_when_the_function_raises():
    cnt = CompileCounter()
    opt = bytegraph.compile(no_break, backend=cnt)
    x = torch.randn(3)
    opt(x)

    def fails(t):
        t = no_break(t)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        bytegraph.explain(fails)(x)
    opt(x)
    assert cnt.frame_count == 1


# -- debug dir ------------------------------------------------------------------------------------------------
def debug_dir_fn(x, w):
    h = torch.nn.functional.gelu(x @ w)
    print("break")
    return h.softmax(-1) * 2


class _CountedShape(torch.Tensor):
    """A `shape` property that records each read (a class may replace it: compiling reads size())."""
    reads = []

    @property
    def shape(self):
        _CountedShape.reads.append("shape")
        return self.size()


def _shape_subclass_fn(x):
    return x * 2    # (reads no shape: a read the trace made would be written back over the list)


def test_debug_dir_never_reads_a_class_own_shape(tmp_path):
    x = torch.randn(3, 2).as_subclass(_CountedShape)
    _CountedShape.reads.clear()
    want = _shape_subclass_fn(x)
    eager_reads = len(_CountedShape.reads)
    _CountedShape.reads.clear()
    cnt = CompileCounter()
    with bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        got = bytegraph.compile(_shape_subclass_fn, backend=cnt, fullgraph=True)(x)
    assert len(_CountedShape.reads) == eager_reads == 0      # the repro script's inputs asked size()
    torch.testing.assert_close(got, want)
    assert cnt.frame_count == 1 and glob.glob(str(tmp_path / "run_*-pid_*" / "*" / "fx_graph_runnable.py"))


def test_debug_dir_writes_a_folder_per_frame_and_a_runnable_graph(tmp_path):
    x, w = torch.randn(4, 8), torch.randn(16, 8).t()       # w is not contiguous
    cnt = CompileCounter()
    with bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        torch.testing.assert_close(bytegraph.compile(debug_dir_fn, backend=cnt)(x, w), debug_dir_fn(x, w))
    assert cnt.frame_count == 2
    (run,) = glob.glob(str(tmp_path / "run_*-pid_*"))
    frames = sorted(os.listdir(run))
    assert len(frames) == 2 and frames[0] == "0_debug_dir_fn" and frames[1].startswith("1_")
    first = os.path.join(run, frames[0])
    expected = {"original_bytecode.txt", "transformed_bytecode.txt", "transformed_code.py", "fx_graph_readable.py",
                "fx_graph_runnable.py", "guards.txt", "summary.txt"}
    assert expected <= set(os.listdir(first))
    assert "BINARY_OP" in read(os.path.join(first, "original_bytecode.txt"))
    assert "compiled_graph(x, w)" in read(os.path.join(first, "transformed_code.py"))
    readable = read(os.path.join(first, "fx_graph_readable.py"))
    assert "float32[8, 16] stride=(1, 8)" in readable and "# float32[4, 16]" in readable
    guards = read(os.path.join(first, "guards.txt"))
    assert "L['w']" in guards and "def guard_" in guards
    assert "graph break: print() performs I/O" in read(os.path.join(first, "summary.txt"))

    runnable = os.path.join(first, "fx_graph_runnable.py")
    assert "rand_strided((8, 16), (1, 8), torch.float32" in read(runnable)
    result = run_script(runnable)
    assert result.returncode == 0, result.stderr
    assert "output 0: torch.float32 (4, 16)" in result.stdout


def artifact_backend(gm, example_inputs):
    write_artifact("output_code.py", f"# {len(call_nodes(gm))} ops\n")
    return gm.forward


def test_backends_add_their_own_files_to_the_frame_folder(tmp_path):
    with bytegraph.config.patch(compile_debug=True, debug_dir=str(tmp_path)):
        bytegraph.compile(no_break, backend=artifact_backend)(torch.randn(3, 3))
    (path,) = glob.glob(str(tmp_path / "run_*" / "0_no_break" / "output_code.py"))
    assert read(path) == "# 4 ops\n"
    assert write_artifact("x.txt", "outside a compile") is None


# -- minifier ----------------------------------------------------------------------------------------------
def relu_hating_backend(gm, example_inputs):
    """A toy backend with a bug: it cannot compile relu."""
    for node in gm.graph.nodes:
        if node.target in (torch.relu, "relu", torch.nn.functional.relu):
            raise NotImplementedError("toy backend: no lowering for relu")
    return gm.forward


def many_ops(x, y):
    a = (x * 2).sin() + y
    b = torch.relu(a) * 3
    c = b.sum(0) - y.mean()
    return c.cos(), a.exp()


def test_minifier_shrinks_a_backend_failure_to_one_relu(tmp_path):
    x, y = torch.randn(4, 3), torch.randn(3)
    with bytegraph.config.patch(repro_after="dynamo", debug_dir=str(tmp_path)):
        opt = bytegraph.compile(many_ops, backend=relu_hating_backend)
        with pytest.raises(Exception, match="minified repro: .*repro.py") as info:
            opt(x, y)
    failure = info.value.__cause__
    assert isinstance(failure, bytegraph.debug.BackendCompilerFailed)
    assert isinstance(failure.__cause__, NotImplementedError)
    (repro,) = glob.glob(str(tmp_path / "run_*" / "*_many_ops" / "repro.py"))
    assert repro == failure.repro_path
    assert re.search(r"minified from \d+ to 1 op node\(s\)", read(repro))

    module = load_script(repro)             # the repro's graph is exactly one relu node
    (node,) = call_nodes(torch.fx.symbolic_trace(module.Repro()))
    assert node.target is torch.relu
    assert [tuple(i.shape) for i in module.make_inputs()] == [(4, 3)]

    result = run_script(repro)
    assert result.returncode != 0
    assert "NotImplementedError: toy backend: no lowering for relu" in result.stderr


def _corrupt_mul(a, b):
    return a * b + 0.5


def mul_corrupting_backend(gm, example_inputs):
    """A toy backend with a silent bug: every multiplication is off by 0.5."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (operator.mul, torch.mul):
            node.target = _corrupt_mul
    gm.recompile()
    return gm.forward


def accuracy_fn(x, y):
    a = (x + y).sin()
    b = a * y
    c = b.exp() - x
    return c.sum(1), a.cos()


def test_accuracy_minifier_finds_the_corrupted_mul(tmp_path):
    x, y = torch.randn(4, 3), torch.randn(3)
    with bytegraph.config.patch(repro_after="dynamo", repro_level=4, debug_dir=str(tmp_path)), \
            pytest.raises(Exception, match="differs from eager") as info:
        bytegraph.compile(accuracy_fn, backend=mul_corrupting_backend)(x, y)
    error = info.value.__cause__
    assert isinstance(error, bytegraph.debug.AccuracyError)
    module = load_script(error.repro_path)
    (node,) = call_nodes(torch.fx.symbolic_trace(module.Repro()))
    assert node.target is operator.mul
    with pytest.raises(SystemExit, match="accuracy mismatch in output 0"):   # its __main__, in process
        runpy.run_path(error.repro_path, run_name="__main__")

    # a correct backend passes the same check and the frame compiles
    cnt = CompileCounter()
    with bytegraph.config.patch(repro_after="dynamo", repro_level=4, debug_dir=str(tmp_path)):
        torch.testing.assert_close(bytegraph.compile(accuracy_fn, backend=cnt)(x, y), accuracy_fn(x, y))
    assert cnt.frame_count == 1


def fails_when_run(gm, example_inputs):
    """Compiles anything, but the compiled code of a graph with `cos` crashes when called."""
    has_cos = any(n.target in ("cos", torch.cos) for n in gm.graph.nodes)

    def run(*args):
        if has_cos:
            raise RuntimeError("toy kernel crashed on cos")
        return gm.forward(*args)
    return run


def test_repro_level_3_catches_run_time_failures(tmp_path):
    x, y = torch.randn(4, 3), torch.randn(3)
    with bytegraph.config.patch(repro_after="dynamo", repro_level=3, debug_dir=str(tmp_path),
                                strict=False):
        out = bytegraph.compile(many_ops, backend=fails_when_run)(x, y)
    torch.testing.assert_close(out, many_ops(x, y))     # the frame fell back to eager
    (repro,) = glob.glob(str(tmp_path / "run_*" / "*" / "repro.py"))
    (node,) = call_nodes(torch.fx.symbolic_trace(load_script(repro).Repro()))
    assert node.target == "cos"


def test_ddmin_finds_a_one_minimal_subset():
    calls = []

    def fails(items):
        calls.append(items)
        return 3 in items and 11 in items

    assert ddmin(list(range(16)), fails) == [3, 11]
    assert len(calls) < 60


def test_minify_by_hand():
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x.sin()).cos())
    assert bytegraph.debug.minify(gm, [torch.randn(3)], CompileCounter()) is None


# -- record / replay -------------------------------------------------------------------------------------------
SCALE = 3.0


def exploding_backend(gm, example_inputs):
    raise ValueError("backend exploded")


def replayed_fn(x, k=2):
    return torch.sin(x * SCALE) + k


def test_replay_of_a_recorded_failure(tmp_path):
    x = torch.randn(3)
    with bytegraph.config.patch(replay_record_enabled=True, strict=False, debug_dir=str(tmp_path)):
        torch.testing.assert_close(bytegraph.compile(replayed_fn, backend=exploding_backend)(x, 5), replayed_fn(x, 5))
    (path,) = glob.glob(str(tmp_path / "run_*" / "0_replayed_fn" / "replay.bgrec"))
    record = bytegraph.debug.load_record(path)
    assert record.error == "ValueError: backend exploded"
    assert record.location.endswith("in replayed_fn") and record.missing == []
    assert {"SCALE", "torch"} <= set(record.globals)

    with pytest.raises(bytegraph.convert_frame.InternalError, match="backend exploded"):
        bytegraph.debug.replay(path)         # the recorded backend fails the same way, in isolation
    cnt = CompileCounter()
    torch.testing.assert_close(bytegraph.debug.replay(path, backend=cnt), replayed_fn(x, 5))
    assert cnt.frame_count == 1 and cnt.op_count == 3


# -- function filter, logs, stats, compile times ------------------------------------------------------------
def filtered_inner(x):
    return x.sin() + 1


def filtered_outer(x):
    y = x * 3
    return filtered_inner(y).cos()


def test_debug_function_compiles_only_that_function():
    x = torch.randn(4)
    cnt = CompileCounter()
    with bytegraph.config.patch(debug_function="filtered_inner"):
        torch.testing.assert_close(bytegraph.compile(filtered_outer, backend=cnt)(x), filtered_outer(x))
    assert cnt.frame_count == 1 and cnt.op_count == 2     # sin, add: the outer mul and cos ran eagerly


def test_bytecode_and_graph_code_logs():
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append((record.name, record.getMessage()))

    handler = Collect()
    logging.getLogger("bytegraph").addHandler(handler)
    try:
        with bytegraph.config.patch(logs="bytecode,graph_code"):
            bytegraph.compile(no_break, backend=CompileCounter())(torch.randn(2, 2))
    finally:
        logging.getLogger("bytegraph").removeHandler(handler)
    text = dict(records)
    assert "original | transformed" in text["bytegraph.bytecode"] and " | " in text["bytegraph.bytecode"]
    assert "tanh" in text["bytegraph.graph_code"]


def test_compile_times_and_stats_summary():
    opt = bytegraph.compile(print_in_the_middle, backend=CompileCounter())
    opt(torch.randn(3))
    opt(torch.randn(4))                          # a recompile (static shapes)
    times = bytegraph.compile_times()
    assert {"tracing", "guards", "backend"} <= set(times)
    assert times["tracing"].calls >= 2 and times.total > 0
    table = str(times)
    assert table.splitlines()[0].split() == ["phase", "calls", "total", "(s)", "mean", "(ms)", "max", "(ms)"]

    report = bytegraph.stats()
    assert report.frames_compiled == bytegraph.stats.frames_compiled >= 3
    assert report.recompiles >= 1
    assert report.graph_breaks == {"print() performs I/O": 2}
    text = str(report)
    assert "frames compiled" in text and "recompiles" in text and "print() performs I/O" in text
    bytegraph.reset()
    assert len(bytegraph.compile_times()) == 0 and bytegraph.stats().frames_compiled == 0


def test_internal_error_names_the_construct_and_the_source_line():
    with pytest.raises(bytegraph.convert_frame.InternalError) as info:
        bytegraph.compile(replayed_fn, backend=exploding_backend)(torch.randn(2))
    message = str(info.value)
    assert f"replayed_fn ({__file__}:{replayed_fn.__code__.co_firstlineno})" in message
    assert "ValueError: backend exploded" in message and "while tracing RETURN_VALUE" in message
    assert "return torch.sin(x * SCALE) + k" in message
    assert "Traceback" not in message and "config.verbose" in message
    bytegraph.reset()
    with bytegraph.config.patch(verbose=True), pytest.raises(bytegraph.convert_frame.InternalError) as info:
        bytegraph.compile(replayed_fn, backend=exploding_backend)(torch.randn(2))
    assert "Traceback (most recent call last)" in str(info.value)


def relu_hating_aten_compiler(aten_gm, inputs):
    """A toy ATen-level compiler with a bug: it cannot handle aten.relu."""
    for node in aten_gm.graph.nodes:
        if node.target is torch.ops.aten.relu.default:
            raise NotImplementedError("toy aot compiler: no lowering for aten.relu")
    return aten_gm


def aot_relu_hating_backend(gm, example_inputs):
    from bytegraph.backends.aot_eager import aot_autograd
    return aot_autograd(gm, example_inputs, fw_compiler=relu_hating_aten_compiler)


def test_minifier_after_aot_shrinks_the_aten_graph(tmp_path):
    x, y = torch.randn(4, 3), torch.randn(3)
    with bytegraph.config.patch(repro_after="aot", debug_dir=str(tmp_path)):
        opt = bytegraph.compile(many_ops, backend=aot_relu_hating_backend)
        with pytest.raises(Exception, match="minified repro: .*repro.py"):
            opt(x, y)
    (repro,) = glob.glob(str(tmp_path / "run_*" / "*_many_ops" / "repro.py"))
    module = load_script(repro)
    (node,) = call_nodes(torch.fx.symbolic_trace(module.Repro()))
    assert node.target is torch.ops.aten.relu.default
    result = run_script(repro)
    assert result.returncode != 0
    assert "no lowering for aten.relu" in result.stderr
