"""CPU speed of `backend="inductor"`: eager vs `torch.compile(backend="inductor")` vs
`bytegraph.compile(backend="inductor")` (its C++/OpenMP kernels), with 1 and 2 threads.

Workloads: a pointwise chain on 16M floats (GB/s against `.clone()` of the same tensor, the copy
bandwidth of the machine), softmax and layer norm on (4096, 1024), a transformer MLP block at a CPU
inference size (8 x 128 tokens, hidden 768: Linear 768->3072, GELU, Linear 3072->768, residual,
LayerNorm), a HuggingFace BERT encoder (hidden 768, 12 heads, 2 layers, batch 8, sequence 128; random
weights), a ResNet-18-shaped CNN (half width, batch 8, 3x112x112), and transformers' ResNet-50 and
MobileNetV2 at their default configs (batch 4, 3x128x128). Inference only (no_grad).

Steady state: the machine is shared and noisy (other processes only ever add time), so the
implementations are timed interleaved, round after round, and each reports its best round (the mean
of `calls` calls), in wall time and in process CPU time (which other processes do not inflate).
Compile time is the first call (both compilers start from empty on-disk caches: a fresh temporary
directory; each compiler first compiles a throwaway function, so its once-per-process start-up is not
charged to the first workload). Kernels: generated kernels per call (bytegraph's `metrics.kernel_count`;
torch inductor's `generated_kernel_count`, which counts distinct kernels).

`run(quick, only, threads) -> rows` and `to_markdown(rows)` are the interface `benchmarks/run.py` uses; run alone with
`python benchmarks/inductor_cpu.py [--quick] [--only softmax,bert] [--threads 1,2]`.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
import warnings

import bytegraph
import torch
import torch.nn.functional as F
from torch._inductor import metrics as torch_metrics
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


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(torch.nn.Module):
    """ResNet-18's shape (stem, four stages of two basic blocks, pooling, classifier) at `width`."""

    def __init__(self, width=32, classes=1000):
        super().__init__()
        w = [width, 2 * width, 4 * width, 8 * width]
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, w[0], 7, 2, 3, bias=False), torch.nn.BatchNorm2d(w[0]),
                                        torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], w[0]
        for i, c in enumerate(w):
            blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
            cin = c
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class Bert(torch.nn.Module):
    """transformers' BertModel (random weights); returns the last hidden state."""

    def __init__(self, layers=2):
        super().__init__()
        import transformers
        transformers.logging.set_verbosity_error()
        self.bert = transformers.BertModel(transformers.BertConfig(
            hidden_size=768, num_hidden_layers=layers, num_attention_heads=12, intermediate_size=3072))

    def forward(self, ids):
        return self.bert(input_ids=ids).last_hidden_state


class HFVision(torch.nn.Module):
    """A transformers vision backbone from its default config (random weights, batch-norm statistics
    randomized so activations are not all zero); returns the last hidden state."""

    def __init__(self, model_type):
        super().__init__()
        import transformers
        from transformers.models.auto import modeling_auto
        transformers.logging.set_verbosity_error()
        cls = getattr(transformers, modeling_auto.MODEL_MAPPING_NAMES[model_type])
        self.model = cls(transformers.AutoConfig.for_model(model_type))
        for m in self.model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.normal_(), m.running_var.uniform_(0.5, 2), m.weight.data.normal_(1, 0.2)

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).last_hidden_state


def workloads(quick):
    torch.manual_seed(0)
    n = (1 << 22) if quick else (1 << 24)
    batch = 2 if quick else 8
    out = [
        ("pointwise chain", pointwise_chain, (torch.randn(n),), 2 * 4 * n),
        ("softmax 4096x1024", softmax, (torch.randn(4096, 1024),), 2 * 4 * 4096 * 1024),
        ("layer norm 4096x1024", LayerNorm(1024), (torch.randn(4096, 1024),), 2 * 4 * 4096 * 1024),
        ("MLP 8x128x768", MLPBlock(), (torch.randn(8, 128, 768),), None),
        (f"ResNet-18/2 {batch}x3x112x112", ResNet().eval(), (torch.randn(batch, 3, 112, 112),), None),
    ]
    try:
        out.append((f"BERT 2 layers {batch}x128", Bert().eval(), (torch.randint(0, 30000, (batch, 128)),), None))
        image = torch.randn(batch // 2, 3, 128, 128)
        out.append((f"HF ResNet-50 {batch // 2}x3x128x128", HFVision("resnet").eval(), (image,), None))
        out.append((f"HF MobileNetV2 {batch // 2}x3x128x128", HFVision("mobilenet_v2").eval(), (image,), None))
    except ImportError:  # transformers not installed
        pass
    return out


def _first_call(fn, args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _timed(fn, args, calls):
    """(wall ms, process CPU ms) per call."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t0) / calls * 1e3, (time.process_time() - c0) / calls * 1e3


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
        torch_metrics.reset()
        tc = torch.compile(fn, backend="inductor")
        row["torch_compile_s"] = _first_call(tc, args)
        row["torch_kernels"] = torch_metrics.generated_kernel_count
        impls["torch"] = tc
        if nbytes is not None:
            x = args[0]
            impls["copy"] = lambda *a: x.clone()
        expected = fn(*args)
        row["max_abs_diff"] = float((bg(*args) - expected).abs().max())
        row["torch_max_abs_diff"] = float((tc(*args) - expected).abs().max())
        times = {k: [] for k in impls}
        for k, f in impls.items():  # warm up
            _timed(f, args, 2)
        for _ in range(rounds):
            for k, f in impls.items():
                times[k].append(_timed(f, args, calls))
    for k, ts in times.items():
        row[f"{k}_ms"] = min(w for w, _ in ts)
        row[f"{k}_median_ms"] = statistics.median(w for w, _ in ts)
        row[f"{k}_cpu_ms"] = min(c for _, c in ts)
    for k in ("bytegraph", "torch"):
        row[f"{k}_speedup"] = row["eager_ms"] / row[f"{k}_ms"]
        row[f"{k}_cpu_speedup"] = row["eager_cpu_ms"] / row[f"{k}_cpu_ms"]
    if nbytes is not None:
        for k in ("eager", "bytegraph", "torch", "copy"):
            row[f"{k}_GBs"] = nbytes / (row[f"{k}_ms"] * 1e-3) / 1e9
        row["bytegraph_vs_copy"] = row["bytegraph_GBs"] / row["copy_GBs"]
    torch._dynamo.reset()
    bytegraph.reset()
    return row


def _warm_up_compilers():
    """Pay each compiler's once-per-process costs (imports, precompiled headers) outside the figures."""
    x = torch.randn(8)
    with torch.no_grad():
        bytegraph.compile(_warm_up_fn, backend="inductor")(x)
        torch.compile(_warm_up_fn, backend="inductor")(x)
    bytegraph.reset()
    torch._dynamo.reset()


def _warm_up_fn(x):
    return (x + 3).cos()


def run(quick=False, only=None, threads=(1, 2)):
    old_tmp, old_threads = tempfile.tempdir, torch.get_num_threads()
    old_torch_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    # cold on-disk caches for both compilers (torch fixes its cache directory in the environment the first
    # time it is asked for it, which importing it already did)
    tempfile.tempdir = tempfile.mkdtemp(prefix="bg_bench_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.tempdir, "torchinductor")
    rows = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _warm_up_compilers()
            for n_threads in threads:
                for name, fn, args, nbytes in workloads(quick):
                    if only and not any(o.lower() in name.lower() for o in only):
                        continue
                    rows.append(measure(name, fn, args, nbytes, n_threads, rounds=3 if quick else 5,
                                        calls=2 if quick else 3))
    finally:
        tempfile.tempdir = old_tmp
        torch.set_num_threads(old_threads)
        if old_torch_cache is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_torch_cache
    return rows


def to_markdown(rows) -> str:
    cols = ["workload", "threads", "eager_ms", "torch_ms", "bytegraph_ms", "torch_speedup", "bytegraph_speedup",
            "torch_cpu_speedup", "bytegraph_cpu_speedup", "torch_compile_s", "bytegraph_compile_s", "torch_kernels",
            "kernels", "bytegraph_GBs", "copy_GBs", "bytegraph_vs_copy"]

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3g}"
        return "-" if v is None else str(v)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    geo = []
    for k in ("torch_speedup", "bytegraph_speedup", "torch_cpu_speedup", "bytegraph_cpu_speedup"):
        vals = [r[k] for r in rows]
        geo.append(f"{math.exp(sum(math.log(v) for v in vals) / len(vals)):.3g}" if vals else "-")
    lines.append("| geomean | | | | | " + " | ".join(geo) + " |" + " |" * (len(cols) - 9))
    lines += ["", "ms: per-call wall time of the best of interleaved rounds; speedup: eager_ms / compiled ms; "
              "cpu_speedup: the same from process CPU time (robust to a loaded machine; with 2 threads it "
              "also counts work the threads duplicate or spin); "
              "compile_s: first call, from empty on-disk caches for the first thread count (later thread counts "
              "find both compilers' caches warm), after each compiler's once-per-process start-up was paid on "
              "another function; kernels: generated kernels (torch: distinct kernels, "
              "bytegraph: launches per call); GB/s: bytes read + written per call / time (copy: `.clone()` of "
              "the input)."]
    return "\n".join(lines)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="", help="comma-separated substrings of workload names")
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    rows = run(quick=a.quick, only=[o for o in a.only.split(",") if o],
               threads=[int(t) for t in a.threads.split(",")])
    print(to_markdown(rows))
