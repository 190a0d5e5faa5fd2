"""Per-call overhead of compiled code against eager and torch.compile(backend="eager").

Cases: (a) a 3-op function on 8-element tensors, (b) a module with 10 parameters, (c) a function of
20 tensor arguments. Timings are interleaved (eager, bytegraph, torch) over several rounds and the
median per-call time is reported, so the ratios survive a noisy machine.
"""
from __future__ import annotations

import statistics
import time

import torch

import bytegraph


def three_ops(x, y):
    return torch.sin(x + y).relu()


class TenParams(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(5))  # 10 parameters

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def twenty_args(*xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


def _twenty(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19):
    return twenty_args(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19)


def _per_call_us(fn, args, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def interleaved_medians(impls: dict, args, calls: int, rounds: int, warmup: int) -> dict:
    """Median microseconds per call of each implementation, timed in turns over `rounds` rounds
    (turns keep a slow phase of the machine from landing on one implementation only)."""
    for impl in impls.values():  # compile and warm up
        for _ in range(warmup):
            impl(*args)
    samples = {k: [] for k in impls}
    for _ in range(rounds):
        for k, impl in impls.items():
            samples[k].append(_per_call_us(impl, args, calls))
    return {k: statistics.median(v) for k, v in samples.items()}


def measure(name, fn, args, calls=2000, rounds=7):
    import torch._dynamo  # the reference only
    torch._dynamo.reset()
    bytegraph.reset()
    impls = {"eager": fn, "bytegraph": bytegraph.compile(fn, backend="eager"),
             "torch.compile": torch.compile(fn, backend="eager")}
    med = interleaved_medians(impls, args, calls, rounds, warmup=20)
    bg_over = med["bytegraph"] - med["eager"]
    tc_over = med["torch.compile"] - med["eager"]
    return {"case": name, "eager_us": med["eager"], "bytegraph_us": med["bytegraph"],
            "torch_compile_us": med["torch.compile"], "bytegraph_overhead_us": bg_over,
            "torch_compile_overhead_us": tc_over,
            "overhead_ratio": bg_over / tc_over if tc_over > 0 else float("nan")}


def run(quick=False):
    calls = 500 if quick else 2000
    x8 = (torch.randn(8), torch.randn(8))
    twenty = tuple(torch.randn(8) for _ in range(20))
    return [
        measure("3-op function, 8 elements", three_ops, x8, calls),
        measure("module with 10 parameters", TenParams(), (torch.randn(2, 8),), calls),
        measure("function of 20 tensor args", _twenty, twenty, calls),
    ]


def to_markdown(rows) -> str:
    lines = ["| case | eager µs | bytegraph µs | torch.compile µs | bytegraph overhead µs | "
             "torch.compile overhead µs | overhead ratio (bytegraph/torch) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['eager_us']:.1f} | {r['bytegraph_us']:.1f} | {r['torch_compile_us']:.1f} | "
                     f"{r['bytegraph_overhead_us']:.1f} | {r['torch_compile_overhead_us']:.1f} | "
                     f"{r['overhead_ratio']:.2f} |")
    return "\n".join(lines)
