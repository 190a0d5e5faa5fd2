"""Dynamic shapes: recompiles and compile time over 10 sequence lengths, static vs dynamic.

A small transformer block (pre-norm attention + MLP) is called once with each of 10 sequence
lengths, fresh compiler state per row, under `dynamic=False` (one graph per length), `dynamic=None`
(automatic dynamic: static first, one dynamic recompile) and `dynamic=True` (symbolic from the
first call), for bytegraph and torch.compile (both with an eager backend that counts graphs).
Reported per row: graphs compiled, total time of the 10 calls minus eager (≈ compile time), and
the max abs difference against eager.
"""
from __future__ import annotations

import math
import time

import bytegraph
import torch
from torch import nn

SEQ_LENS = (5, 7, 9, 12, 16, 20, 25, 31, 40, 48)


class Block(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class _Counter:
    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def _run(compiler: str, dynamic, model, inputs):
    counter = _Counter()
    if compiler == "bytegraph":
        bytegraph.reset()
        opt = bytegraph.compile(model, backend=counter, dynamic=dynamic)
    else:
        import torch._dynamo  # the reference only
        torch._dynamo.reset()
        opt = torch.compile(model, backend=counter, dynamic=dynamic)
    eager_time, total, diff = 0.0, 0.0, 0.0
    for x in inputs:
        start = time.perf_counter()
        expected = model(x)
        eager_time += time.perf_counter() - start
        start = time.perf_counter()
        got = opt(x)
        total += time.perf_counter() - start
        diff = max(diff, (got - expected).abs().max().item())
    return {"compiler": compiler, "dynamic": str(dynamic), "graphs": counter.graphs,
            "compile_ms": round((total - eager_time) * 1e3, 1), "max_abs_diff": diff}


def run(quick: bool = False) -> list:
    torch.manual_seed(0)
    model = Block().eval()
    inputs = [torch.randn(2, t, 64) for t in (SEQ_LENS[:4] if quick else SEQ_LENS)]
    rows = []
    with torch.no_grad():
        for dynamic in (False, None, True):
            for compiler in ("bytegraph", "torch.compile"):
                rows.append(_run(compiler, dynamic, model, inputs))
    return rows


def to_markdown(rows) -> str:
    lines = ["| compiler | dynamic | graphs compiled | compile time (ms) | max abs diff |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['compiler']} | {r['dynamic']} | {r['graphs']} | {r['compile_ms']} | "
                     f"{r['max_abs_diff']:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(to_markdown(run()))
