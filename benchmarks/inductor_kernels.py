"""Kernels per model under bytegraph's `backend="inductor"` (and, with a GPU, its speed).

For each model (a small MLP, a tiny GPT-2 from `transformers` with random weights): graphs compiled,
fused Triton kernel launches and distinct kernel sources per forward, extern (aten) calls, compile
time and correctness (max abs difference against eager). With `dynamic=True` it also checks that
several batch sizes share one compile (`compiles_over_sizes`).

Speed: on CPU the kernels run under Triton's interpreter (`TRITON_INTERPRET=1`), which executes them
as Python/numpy, so timing them says nothing about the generated code: the table reports
"not measured". Where CUDA is present the models run on the GPU and the table gives ms per call for
eager, bytegraph inductor and `torch.compile(backend="inductor")` (the reference).

`run(quick) -> rows` and `to_markdown(rows)` are the interface `benchmarks/run.py` uses; run alone with
`python benchmarks/inductor_kernels.py [--quick]`.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import time
import warnings

import bytegraph
import torch
from bytegraph.backends import inductor
from bytegraph.testing import CompileCounterWithBackend

SPEED_NOTE = ("speed is not measured here on CPU (see the inductor_cpu section for the C++ kernels' speed); "
              "without a GPU the Triton kernels of this table would run under Triton's interpreter "
              "on CPU, whose timings say nothing about the generated code")


class MLP(torch.nn.Module):
    def __init__(self, d_in=32, d=64, d_out=16):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d_in, d), torch.nn.Linear(d, d)
        self.norm, self.fc3 = torch.nn.LayerNorm(d), torch.nn.Linear(d, d_out)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.fc1(x))
        x = self.norm(x + torch.relu(self.fc2(x)))
        return torch.log_softmax(self.fc3(x), -1)


def build(name, device):
    """(model, make_inputs(batch) -> tuple, output -> tensor)."""
    torch.manual_seed(0)
    if name == "mlp":
        model = MLP()
        return model.eval().to(device), (lambda b: (torch.randn(b, 32, device=device),)), (lambda o: o)
    if name == "gpt2":
        import transformers
        transformers.logging.set_verbosity_error()
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64,
                                      use_cache=False)
        model = transformers.GPT2LMHeadModel(cfg)
        return (model.eval().to(device), (lambda b: (torch.randint(0, 128, (b, 16), device=device),)),
                (lambda o: o.logits if hasattr(o, "logits") else o[0]))
    raise ValueError(name)


def _max_diff(a, b):
    return float((a.float() - b.float()).abs().max())


def _time(fn, args, calls):
    for _ in range(2):
        fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e3


def measure(name, *, quick=False, device=None):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model, make, out = build(name, device)
    args = make(2)
    row = {"model": name, "device": device}
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        expected = out(model(*args))
        # static shapes: kernels of one forward
        bytegraph.reset()
        inductor.metrics.reset()
        cnt = CompileCounterWithBackend("inductor")
        opt = bytegraph.compile(model, backend=cnt)
        t0 = time.perf_counter()
        got = out(opt(*args))
        m = inductor.metrics
        row.update(graphs=cnt.frame_count, kernels=m.total_kernel_count,
                   unique_kernels=m.unique_kernel_count if m.compiles == 1 else None,
                   externs=m.extern_count if m.compiles == 1 else None,
                   compile_s=round(time.perf_counter() - t0, 2), max_abs_diff=_max_diff(got, expected))
        # dynamic batch: one compile for every size
        bytegraph.reset()
        inductor.metrics.reset()
        cnt = CompileCounterWithBackend("inductor")
        dyn = bytegraph.compile(model, backend=cnt, dynamic=True)
        sizes = (2, 3) if quick else (2, 3, 5)
        diff = 0.0
        for b in sizes:
            a = make(b)
            diff = max(diff, _max_diff(out(dyn(*a)), out(model(*a))))
        row.update(dynamic_sizes=list(sizes), dynamic_frames=cnt.frame_count,
                   compiles_over_sizes=inductor.metrics.compiles, dynamic_max_abs_diff=diff)
        if device == "cuda":
            calls = 10 if quick else 50
            row["eager_ms"] = _time(model, args, calls)
            row["bytegraph_ms"] = _time(opt, args, calls)
            ref = torch.compile(model, backend="inductor")
            row["torch_compile_ms"] = _time(ref, args, calls)
        else:
            row["speed"] = "not measured (Triton interpreter on CPU)"
    bytegraph.reset()
    return row


def run(quick=False):
    return [measure(name, quick=quick) for name in ("mlp", "gpt2")]


def to_markdown(rows) -> str:
    gpu = any(r.get("device") == "cuda" for r in rows)
    cols = ["model", "graphs", "kernels", "unique_kernels", "externs", "compile_s", "max_abs_diff",
            "dynamic_sizes", "compiles_over_sizes"]
    cols += ["eager_ms", "bytegraph_ms", "torch_compile_ms"] if gpu else ["speed"]

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3g}"
        return "-" if v is None else str(v)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    notes = ["", "kernels: Triton kernel launches per forward (fused groups); externs: aten calls "
             "(matmuls, ...); compiles_over_sizes: backend compiles for all batch sizes with dynamic=True "
             "(1 = shape-generic kernels)."]
    if not gpu:
        notes.append(f"Note: {SPEED_NOTE}.")
    else:
        notes.append("Times: best of 3 rounds, ms per call; torch_compile = torch.compile(backend=\"inductor\").")
    return "\n".join(lines + notes)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    print(to_markdown(run(quick=a.quick)))
