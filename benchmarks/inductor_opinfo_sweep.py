"""Sweep torch's OpInfo database through `backend="inductor"` (or `--backend eager|aot_eager`): forward
(and, for float ops that support autograd, the input gradient) compared with eager, sample by sample.

    python benchmarks/inductor_opinfo_sweep.py [--ops add,expm1,...] [--start 0] [--count 40]
                                               [--samples 2] [--dtype float32] [-v]
                                               [--codegen cpp|triton|metal] [--backend aot_eager] [--dynamic]

Each sample is one of: pass, mismatch (compiled != eager), error (eager runs, compiled raises or
raises another exception type), skip (not captured), random (compiled != eager, but eager also
changes with the seed or returns uninitialized memory: nothing to compare; both runs start from the
same seed), fallback (equal to eager, but some graph was compiled by another printer than --codegen,
e.g. Metal has no float64). The summary prints the counts and every mismatch and error. `--codegen`
picks the CPU printer (`config.cpu_codegen`): "metal" runs the Metal printer's kernels through the
C++ emulation of metal_emu.h; with the C++ kernels the whole database takes ~15 minutes (idle
machine); Triton runs interpreted on CPU: keep slices small.
"""
from __future__ import annotations

import argparse
import sys
import time
import types
import unittest
import warnings


def _stub_expecttest():
    """torch.testing._internal imports `expecttest` (a test-only package); op_db does not need it."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        mod = types.ModuleType("expecttest")

        class TestCase(unittest.TestCase):
            def assertExpectedInline(self, *args, **kwargs):
                pass
        mod.TestCase = TestCase
        sys.modules["expecttest"] = mod


def op_database():
    _stub_expecttest()
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def _close(got, expected):
    import torch
    import torch.utils._pytree as pytree
    g, e = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    if len(g) != len(e):
        return f"{len(g)} outputs, eager {len(e)}"
    for a, b in zip(g, e):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                got = f"{type(a).__name__} {getattr(a, 'shape', '')} {getattr(a, 'dtype', '')}"
                return f"{got}, eager {b.shape} {b.dtype}"
            try:
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
            except AssertionError as ex:
                return str(ex).splitlines()[-1][:160]
        elif a != b and not (a != a and b != b):
            return f"{a!r}, eager {b!r}"
    return None


def run_sample(op, sample, grad: bool, backend: str = "inductor", dynamic=None):
    """'pass' | 'skip' | ('mismatch' | 'error', detail)."""
    import torch

    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run

    fn = op.op

    def call(inp, args, kwargs):
        out = fn(inp, *args, **kwargs)
        return out

    def go(f, s):
        inp = s.input
        if grad:
            inp = inp.detach().clone().requires_grad_(True)
            out = f(inp, s.args, s.kwargs)
            outs = [o for o in torch.utils._pytree.tree_leaves(out)
                    if isinstance(o, torch.Tensor) and o.requires_grad]
            if not outs:
                return out, None
            gs = torch.autograd.grad([o.sum() for o in outs], [inp], allow_unused=True)
            return torch.utils._pytree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, out), gs
        with torch.no_grad():
            return f(inp, s.args, s.kwargs), None

    def seeded(f, seed=0):
        torch.manual_seed(seed)
        return go(f, sample)

    def compare(got, expected):
        bad = _close(got[0], expected[0])
        if bad is None and grad:
            bad = _close(got[1], expected[1])
            bad = bad and f"grad: {bad}"
        return bad
    try:
        expected = seeded(call)
    except Exception:  # noqa: BLE001 - eager rejects the sample: nothing to compare
        return "skip"
    from bytegraph.backends import inductor
    bytegraph.reset()
    inductor.metrics.reset()
    cnt = CompileCounterWithBackend(backend)
    try:
        got = seeded(bytegraph.compile(call, backend=cnt, dynamic=dynamic))
    except Exception as ex:  # noqa: BLE001
        return ("error", f"{type(ex).__name__}: {str(ex).splitlines()[0][:200] if str(ex) else ''}")
    if cnt.frame_count == 0:
        return "skip"
    bad = compare(got, expected)
    if bad and (op.name in UNINITIALIZED or compare(seeded(call, 1), expected)):
        return "random"  # eager itself gives other values (another seed, uninitialized memory)
    if bad:
        return "mismatch", bad
    others = set(inductor.metrics.codegens) - {bytegraph.config.cpu_codegen} if backend == "inductor" else ()
    return ("fallback", f"compiled by {', '.join(sorted(others))}") if others else "pass"


# ops whose result is uninitialized memory: nothing to compare but shapes and dtypes
UNINITIALIZED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted"}


def sweep(ops, samples=2, dtype="float32", verbose=False, out=print, backend="inductor", dynamic=None):
    import torch
    dt = getattr(torch, dtype)
    counts = {"pass": 0, "mismatch": 0, "error": 0, "skip": 0, "random": 0, "fallback": 0}
    problems = []
    for op in ops:
        if dt not in op.supported_dtypes("cpu"):
            continue
        grad = dt.is_floating_point and op.supports_autograd
        try:
            sample_list = list(op.sample_inputs("cpu", dt, requires_grad=False))[:samples]
        except Exception:  # noqa: BLE001
            continue
        for i, s in enumerate(sample_list):
            t0 = time.perf_counter()
            r = run_sample(op, s, grad, backend, dynamic)
            kind = r if isinstance(r, str) else r[0]
            counts[kind] += 1
            if not isinstance(r, str):
                problems.append((op.name, op.variant_test_name, i, kind, r[1]))
            if verbose:
                out(f"{op.name}.{op.variant_test_name}[{i}] {kind} {'' if isinstance(r, str) else r[1]} "
                    f"({time.perf_counter() - t0:.1f}s)")
    return counts, problems


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--ops", default="")
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--count", type=int, default=40)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--codegen", default=None, choices=["cpp", "triton", "metal"])
    p.add_argument("--backend", default="inductor", choices=["inductor", "aot_eager", "eager"])
    p.add_argument("--dynamic", action="store_true", help="every size symbolic (dynamic=True)")
    p.add_argument("-v", action="store_true")
    p.add_argument("--json", help="write the counts and every mismatch and error here")
    a = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    if a.codegen:
        import bytegraph
        bytegraph.config.cpu_codegen = a.codegen
    db = op_database()
    if a.ops:
        names = set(a.ops.split(","))
        ops = [o for o in db if o.name in names]
    else:
        ops = db[a.start:a.start + a.count]
    counts, problems = sweep(ops, a.samples, a.dtype, a.v, backend=a.backend, dynamic=True if a.dynamic else None)
    print(f"{len(ops)} ops: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for name, variant, i, kind, detail in problems:
        print(f"  {kind:8s} {name}{'.' + variant if variant else ''}[{i}]: {detail}")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump({"backend": a.backend, "dynamic": a.dynamic, "ops": len(ops), "counts": counts,
                       "problems": [dict(zip(("op", "variant", "sample", "kind", "detail"), p)) for p in problems]},
                      f, indent=1)


if __name__ == "__main__":
    main()
