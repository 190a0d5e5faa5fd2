"""CPU speed of `backend="inductor"`: eager vs `torch.compile(backend="inductor")` vs
`bytegraph.compile(backend="inductor")` (its C++/OpenMP kernels), with 1 and 2 threads.

Workloads: a pointwise chain on 16M floats (GB/s against `.clone()` of the same tensor, the copy
bandwidth of the machine), softmax and layer norm on (4096, 1024), and a transformer MLP block at a
CPU inference size (8 x 128 tokens, hidden 768: Linear 768->3072, GELU, Linear 3072->768, residual,
LayerNorm). Inference only (no_grad).

Steady state: the machine is shared and noisy, so the implementations are timed interleaved, round
after round, and each reports the median per-call time over rounds. Compile time is the first call
(both compilers start from empty on-disk caches: a fresh temporary directory). Kernels: bytegraph's
generated kernel launches per call (`metrics.kernel_count`).

`run(quick) -> rows` and `to_markdown(rows)` are the interface `benchmarks/run.py` uses; run alone with
`python benchmarks/inductor_cpu.py [--quick]`.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings

import bytegraph
import torch
import torch.nn.functional as F
from bytegraph.backends import inductor


def pointwise_chain(x):
    return torch.sigmoid((x * 1.5 + 0.25).relu() * x - 1.0) * 2.0


def softmax(x):
    return torch.softmax(x, -1)


class LayerNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x)


class MLPBlock(torch.nn.Module):
    def __init__(self, d=768, h=3072):
        super().__init__()
        self.fc1, self.fc2, self.norm = torch.nn.Linear(d, h), torch.nn.Linear(h, d), torch.nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


def workloads(quick):
    torch.manual_seed(0)
    n = (1 << 22) if quick else (1 << 24)
    return [
        ("pointwise chain", pointwise_chain, (torch.randn(n),), 2 * 4 * n),
        ("softmax 4096x1024", softmax, (torch.randn(4096, 1024),), 2 * 4 * 4096 * 1024),
        ("layer norm 4096x1024", LayerNorm(1024), (torch.randn(4096, 1024),), 2 * 4 * 4096 * 1024),
        ("MLP 8x128x768", MLPBlock(), (torch.randn(8, 128, 768),), None),
    ]


def _first_call(fn, args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _timed(fn, args, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t0) / calls * 1e3


def measure(name, fn, args, nbytes, threads, rounds, calls):
    torch.set_num_threads(threads)
    row = {"workload": name, "threads": threads}
    impls = {"eager": fn}
    with torch.no_grad():
        bytegraph.reset()
        inductor.metrics.reset()
        bg = bytegraph.compile(fn, backend="inductor")
        row["bytegraph_compile_s"] = _first_call(bg, args)
        row["kernels"] = inductor.metrics.kernel_count
        row["codegen"] = inductor.metrics.codegen
        impls["bytegraph"] = bg
        torch._dynamo.reset()
        tc = torch.compile(fn, backend="inductor")
        row["torch_compile_s"] = _first_call(tc, args)
        impls["torch"] = tc
        if nbytes is not None:
            x = args[0]
            impls["copy"] = lambda *a: x.clone()
        expected = fn(*args)
        row["max_abs_diff"] = float((bg(*args) - expected).abs().max())
        times = {k: [] for k in impls}
        for k, f in impls.items():  # warm up
            _timed(f, args, 2)
        for _ in range(rounds):
            for k, f in impls.items():
                times[k].append(_timed(f, args, calls))
    for k, ts in times.items():
        row[f"{k}_ms"] = statistics.median(ts)
    row["bytegraph_speedup"] = row["eager_ms"] / row["bytegraph_ms"]
    row["torch_speedup"] = row["eager_ms"] / row["torch_ms"]
    if nbytes is not None:
        for k in ("eager", "bytegraph", "torch", "copy"):
            row[f"{k}_GBs"] = nbytes / (row[f"{k}_ms"] * 1e-3) / 1e9
        row["bytegraph_vs_copy"] = row["bytegraph_GBs"] / row["copy_GBs"]
    torch._dynamo.reset()
    bytegraph.reset()
    return row


def run(quick=False):
    old_tmp, old_threads = tempfile.tempdir, torch.get_num_threads()
    tempfile.tempdir = tempfile.mkdtemp(prefix="bg_bench_")  # cold on-disk caches for both compilers
    rows = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for threads in (1, 2):
                for name, fn, args, nbytes in workloads(quick):
                    rows.append(measure(name, fn, args, nbytes, threads, rounds=3 if quick else 5,
                                        calls=2 if quick else 3))
    finally:
        tempfile.tempdir = old_tmp
        torch.set_num_threads(old_threads)
    return rows


def to_markdown(rows) -> str:
    cols = ["workload", "threads", "eager_ms", "torch_ms", "bytegraph_ms", "torch_speedup", "bytegraph_speedup",
            "torch_compile_s", "bytegraph_compile_s", "kernels", "bytegraph_GBs", "copy_GBs", "bytegraph_vs_copy"]

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3g}"
        return "-" if v is None else str(v)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    lines += ["", "ms: median per-call time over interleaved rounds; speedup: eager_ms / compiled ms; "
              "compile_s: first call from empty caches; kernels: bytegraph's generated kernels per call; "
              "GB/s: bytes read + written per call / time (copy: `.clone()` of the input)."]
    return "\n".join(lines)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    print(to_markdown(run(quick=a.quick)))
