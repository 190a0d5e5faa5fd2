"""A quick slice of the oracles nobody here wrote (tests/oracles/): fuzzer programs, CPython test modules
and CPython's own answers for builtins and operators, compiled vs eager. The full runs are `make fuzz`,
`make cpython-tests` and `make python-model`."""
import glob
import os
import runpy

import pytest

import bytegraph
from tests.oracles import cpython_suite, fuzz, python_model

# seeds that pass today; failing ones found by the full run are listed in tests/oracles/found/
FUZZ_SEEDS = [1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_fuzz_program_matches_eager(seed):
    rec = fuzz.check(seed, narrow=True)     # (these seeds' programs: from the first generation of families)
    assert rec["status"] == "equal", rec["detail"]
    # something was captured: the comparison is of a compiled program, not of eager with itself
    assert rec["graphs"] >= 1


# seeds of today's generator (every family, some with --dynamic): programs with breaks in try/with blocks,
# computed keys, views written in place, metadata-driven control flow
WIDE_SEEDS = [(1, False), (3, False), (8, False), (13, False), (25, False), (26, True), (28, True), (30, True),
              (33, True), (37, True)]


@pytest.mark.parametrize("seed,dynamic", WIDE_SEEDS)
def test_fuzz_wide_program_matches_eager(seed, dynamic):
    rec = fuzz.check(seed, dynamic=dynamic, families="second")   # (from the second generation of families)
    assert rec["status"] == "equal", rec["detail"]
    assert rec["graphs"] >= 1
    assert not rec["internal"], rec["internal"]


# graph ops raising by value inside the program's try / finally / with blocks, or after effects (the
# "raises" family): each of these failed before a graph that raises reran its frame as Python
@pytest.mark.parametrize("seed,backend", [(70000, "eager"), (70004, "eager"), (70005, "aot_eager"),
                                          (70011, "eager")])
def test_fuzz_value_raises_program_matches_eager(seed, backend):
    rec = fuzz.check(seed, families="raises", backend=backend)
    assert rec["status"] == "equal", rec["detail"]
    assert rec["graphs"] >= 1
    assert not rec["internal"], rec["internal"]


# iterators and views held by eager code across compiled code changing their containers (the "held" family)
@pytest.mark.parametrize("seed,backend", [(90001, "eager"), (90003, "eager"), (90007, "aot_eager")])
def test_fuzz_held_iterator_program_matches_eager(seed, backend):
    rec = fuzz.check(seed, families="held", backend=backend)
    assert rec["status"] == "equal", rec["detail"]
    assert rec["graphs"] >= 1
    assert not rec["internal"], rec["internal"]


FOUND = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "oracles", "found", "fuzz_*.py")))


@pytest.mark.parametrize("path", FOUND, ids=lambda p: os.path.basename(p)[:-3])
def test_fuzz_found_program_matches_eager(path):
    # failing programs the fuzzer wrote out (write_failure), kept once their class was fixed: each holds
    # its program and the options it failed under
    kept = runpy.run_path(path)
    rec = fuzz.check(kept["SEED"], kept["SRC"], **kept["OPTIONS"])
    assert rec["status"] == "equal", rec["detail"]
    assert rec["graphs"] >= 1
    assert not rec["internal"], rec["internal"]


def test_fuzz_is_deterministic():
    assert fuzz.generate(123) == fuzz.generate(123)
    assert fuzz.generate(123) != fuzz.generate(124)


def test_fuzz_detects_a_wrong_result():
    # the comparison itself: a differing value, type or exception is reported
    import torch
    assert fuzz.same([1, (2, "a")], [1, (2, "a")]) is None
    assert fuzz.same([1, 2], [1]) is not None
    assert fuzz.same(1, 1.0) is not None
    assert fuzz.same(torch.ones(2), torch.ones(2, dtype=torch.float64)) is not None
    assert fuzz.same(ValueError("a", 1), ValueError("a", 2)) is not None


@pytest.mark.parametrize("module", ["test_augassign", "test_unary", "test_genericalias", "test_tomllib"])
def test_cpython_module_compiled_as_plain(module):
    def collect(mode):
        out = {}
        cpython_suite.run_tests(module, mode, 120.0, lambda r: out.__setitem__(r["test"], r))
        return out
    plain = collect("plain")
    before = bytegraph.stats.frames_compiled
    compiled = collect("compiled")
    assert bytegraph.stats.frames_compiled > before, "compiled mode compiled nothing"
    passed = {t for t, r in plain.items() if r["outcome"] == "pass"}
    assert passed, "the module ran no test"
    regressed = {t: compiled[t]["detail"][-300:] for t in passed if compiled[t]["outcome"] != "pass"}
    assert not regressed


@pytest.mark.parametrize("names", [("add", "sub", "eq"), ("contains", "type", "sum", "hasattr")])
def test_python_model_matches_cpython(names):
    # builtins and operators over a zoo of builtin types and subclasses, under a bare except, plainly and
    # compiled (a complex subclass minus a number raised in the trace: the sub slice); most calls are
    # answered by the trace itself
    total, broke, mismatches = python_model.run(set(names))
    assert mismatches == []
    assert total > 1000 and broke < total * 0.7


def test_dynamo_probe_harness_compares_and_counts():
    # the probe oracle's own sample file, run in this process: bytegraph and torch.compile side by side
    from tests.oracles.dynamo_probes.__main__ import run_file
    rows = {r["name"]: r for r in run_file("probes_sample")}
    assert all(r["bg_equal"] and r["tc_equal"] for r in rows.values()), rows
    assert (rows["tensor_arithmetic"]["bg_graphs"], rows["tensor_arithmetic"]["bg_full"]) == (1, True)
    assert (rows["print_breaks"]["bg_breaks"], rows["print_breaks"]["bg_full"]) == (1, False)
    assert rows["list_mutated"]["bg_graphs"] == rows["list_mutated"]["tc_graphs"] == 2   # (a guard on the length)
