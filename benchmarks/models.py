"""Real models side by side: bytegraph against torch.compile(backend="eager").

Tiny HuggingFace `transformers` models (GPT-2, BERT, LLaMA, T5; 2 layers, hidden 64, random
weights from a config, nothing downloaded) run through both compilers in one process, interleaved
so the ratios survive a noisy machine. For each model and compiler:

- graphs and graph breaks (with reasons: `bytegraph.stats.break_records`, `torch._dynamo.explain`),
- correctness: max abs difference of every output tensor against eager,
- compile time: the first call after a reset (median over rounds, the two compilers alternating),
- steady-state time per call (best of interleaved rounds of eager / bytegraph / torch.compile; the
  median is in the JSON),
- recompiles over three sequence lengths with `dynamic=None` (graphs compiled after the first length).

Output: a markdown table on stdout, `bench_results/models.json` and `bench_results/models.png` (the
bytegraph/torch.compile ratios). Run alone (`python benchmarks/models.py --models gpt2,bert`) or
through `benchmarks/run.py` (`make bench`). `--quick` is a one-minute subset.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import statistics
import sys
import time
import warnings

import bytegraph
import torch
from bytegraph.backends.registry import lookup_backend

MODELS = ("gpt2", "bert", "llama", "t5")
QUICK_MODELS = ("gpt2", "bert")
VOCAB = 1000


# -- models -------------------------------------------------------------------------------------
def build_model(name: str):
    """A tiny model with random weights (seeded), in eval mode, and a function making its inputs for
    a sequence length. The KV cache is off: the benchmark measures one forward pass."""
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    common = {"vocab_size": VOCAB, "use_cache": False, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
    if name == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config(
            n_layer=2, n_embd=64, n_head=4, n_positions=128, **common))
    elif name == "bert":
        model = transformers.BertModel(transformers.BertConfig(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=128, **common))
    elif name == "llama":
        model = transformers.LlamaModel(transformers.LlamaConfig(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=128, **common))
    elif name == "t5":
        model = transformers.T5Model(transformers.T5Config(
            num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128, num_heads=4, d_kv=16,
            decoder_start_token_id=0, **common))
    else:
        raise SystemExit(f"unknown model {name!r} (have: {', '.join(MODELS)})")
    model.eval()

    def make_inputs(seq_len: int, batch: int = 2) -> dict:
        g = torch.Generator().manual_seed(seq_len)
        ids = torch.randint(3, VOCAB, (batch, seq_len), generator=g)
        kwargs = {"input_ids": ids, "attention_mask": torch.ones(batch, seq_len, dtype=torch.long)}
        if name == "t5":
            kwargs["decoder_input_ids"] = torch.randint(3, VOCAB, (batch, seq_len), generator=g)
        return kwargs

    return model, make_inputs


def output_tensors(out) -> list:
    """Every tensor in a model output (a ModelOutput, tuple, dict...), in order."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in output_tensors(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in output_tensors(v)]
    return []


def max_abs_diff(out, ref) -> float:
    got, want = output_tensors(out), output_tensors(ref)
    if len(got) != len(want) or any(a.shape != b.shape for a, b in zip(got, want)):
        return float("inf")
    return max((float((a - b).abs().max()) for a, b in zip(got, want) if a.numel()), default=0.0)


# -- the two compilers ------------------------------------------------------------------------------
class Counting:
    """A backend wrapper counting the graphs it is given, then compiling them with `inner`."""

    def __init__(self, inner):
        self.inner = inner
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return self.inner(gm, example_inputs)


def _torch_eager_backend(gm, example_inputs):
    return gm.forward   # what torch.compile(backend="eager") does


class Impl:
    """One compiler: how to reset it, compile a model with a counting backend, and report breaks."""
    name = ""

    def reset(self):
        raise NotImplementedError

    def compile(self, model):
        raise NotImplementedError

    def breaks(self, model, inputs) -> tuple[int, list[str]]:
        raise NotImplementedError


class BytegraphImpl(Impl):
    name = "bytegraph"

    def reset(self):
        bytegraph.reset()

    def compile(self, model):
        self.counter = Counting(lookup_backend("eager"))
        return bytegraph.compile(model, backend=self.counter)

    def breaks(self, model, inputs):
        records = bytegraph.stats.break_records
        return len(records), sorted({_short(str(r.reason), r.user_stack) for r in records})


class TorchImpl(Impl):
    name = "torch.compile"

    def reset(self):
        import torch._dynamo
        torch._dynamo.reset()

    def compile(self, model):
        self.counter = Counting(_torch_eager_backend)
        return torch.compile(model, backend=self.counter)

    def breaks(self, model, inputs):
        import torch._dynamo
        self.reset()
        with _quiet():
            explanation = torch._dynamo.explain(model)(**inputs)
        self.reset()
        reasons = sorted({_short(str(getattr(b, "reason", b)), getattr(b, "user_stack", None) or [])
                          for b in explanation.break_reasons})
        return explanation.graph_break_count, reasons


def _short(reason: str, stack) -> str:
    where = ""
    if stack:
        frame = stack[-1]
        where = f" ({os.path.basename(frame.filename)}:{frame.lineno})"
    return " ".join(reason.split())[:160] + where


@contextlib.contextmanager
def _quiet():
    """Silence library warnings and logs while compiling (they would garble the progress bar)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                yield
        finally:
            logging.disable(previous)


def _timed_first_call(impl, model, inputs):
    impl.reset()
    compiled = impl.compile(model)
    with _quiet():
        start = time.perf_counter()
        out = compiled(**inputs)
        seconds = time.perf_counter() - start
    return compiled, out, seconds


def _per_call_ms(fn, inputs, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(**inputs)
    return (time.perf_counter() - start) / calls * 1e3


# -- one model ------------------------------------------------------------------------------------
def bench_model(name: str, quick: bool, progress=None) -> dict:
    impls = [BytegraphImpl(), TorchImpl()]
    compile_rounds = 1 if quick else 3
    steady_rounds, calls = (5, 5) if quick else (15, 10)
    seq_lens = (16, 24, 32)

    model, make_inputs = build_model(name)
    inputs = make_inputs(seq_lens[0])
    result = {"model": name, "params": sum(p.numel() for p in model.parameters()), "seq_lens": list(seq_lens)}
    with torch.no_grad():
        reference = model(**inputs)   # also warms up lazy initialisation in the library
        per_impl = {impl.name: {"compile_s": []} for impl in impls}
        compiled = {}

        # compile time of a fresh first call, the compilers alternating (and alternating who goes first)
        for rnd in range(compile_rounds):
            order = impls if rnd % 2 == 0 else impls[::-1]
            for impl in order:
                fn, out, seconds = _timed_first_call(impl, model, inputs)
                r = per_impl[impl.name]
                r["compile_s"].append(seconds)
                if rnd == 0 or "graphs" not in r:
                    r["graphs"] = impl.counter.graphs
                    r["max_abs_diff"] = max_abs_diff(out, reference)
                    if isinstance(impl, BytegraphImpl):
                        r["graph_breaks"], r["break_reasons"] = impl.breaks(model, inputs)
                compiled[impl.name] = fn
                if progress is not None:
                    progress.set_postfix_str(f"{name}: compile {impl.name}")

        # steady state, interleaved with eager: the last compiled callables stay valid (each compiler's
        # cache was reset only before its own first call)
        runners = {"eager": model, **compiled}
        for fn in runners.values():
            with _quiet():
                for _ in range(3):
                    fn(**inputs)
        samples = {k: [] for k in runners}
        for _ in range(steady_rounds):
            for k, fn in runners.items():
                samples[k].append(_per_call_ms(fn, inputs, calls))
            if progress is not None:
                progress.set_postfix_str(f"{name}: steady state")
        # the best round: on a shared machine other processes only ever add time (the median is kept too)
        result["eager_ms"] = min(samples["eager"])
        result["eager_median_ms"] = statistics.median(samples["eager"])
        for impl in impls:
            per_impl[impl.name]["steady_ms"] = min(samples[impl.name])
            per_impl[impl.name]["steady_median_ms"] = statistics.median(samples[impl.name])

        # recompiles over three sequence lengths (dynamic=None), and correctness at each length
        for impl in impls:
            impl.reset()
            fn = impl.compile(model)
            diffs = []
            first_graphs = None
            with _quiet():
                for n in seq_lens:
                    x = make_inputs(n)
                    diffs.append(max_abs_diff(fn(**x), model(**x)))
                    if first_graphs is None:
                        first_graphs = impl.counter.graphs
            r = per_impl[impl.name]
            r["recompiles"] = impl.counter.graphs - first_graphs
            r["max_abs_diff_all_lengths"] = max(diffs)
            if progress is not None:
                progress.set_postfix_str(f"{name}: recompiles {impl.name}")

        # torch.compile's graph breaks, from its own explain()
        torch_impl = impls[1]
        per_impl[torch_impl.name]["graph_breaks"], per_impl[torch_impl.name]["break_reasons"] = \
            torch_impl.breaks(model, inputs)
        for impl in impls:
            impl.reset()

    for k, r in per_impl.items():
        r["compile_s"] = statistics.median(r["compile_s"])
    result.update(per_impl)
    bg, tc = per_impl["bytegraph"], per_impl["torch.compile"]
    result["compile_ratio"] = bg["compile_s"] / tc["compile_s"]
    result["steady_ratio"] = bg["steady_ms"] / tc["steady_ms"]
    return result


def run(models=MODELS, quick=False) -> list:
    from tqdm import tqdm
    rows = []
    with tqdm(models, desc="models", unit="model", file=sys.stderr) as bar:
        for name in bar:
            bar.set_postfix_str(name)
            rows.append(bench_model(name, quick, bar))
    return rows


# -- reporting ------------------------------------------------------------------------------------
def to_markdown(rows) -> str:
    lines = ["| model | params | graphs (bg / tc) | breaks (bg / tc) | max abs diff vs eager (bg / tc) | "
             "compile s (bg / tc, ratio) | steady ms, best round (eager / bg / tc, ratio) | "
             "recompiles over 3 lengths (bg / tc) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bg, tc = r["bytegraph"], r["torch.compile"]
        lines.append(
            f"| {r['model']} | {r['params'] / 1e3:.0f}k | {bg['graphs']} / {tc['graphs']} | "
            f"{bg['graph_breaks']} / {tc['graph_breaks']} | "
            f"{max(bg['max_abs_diff'], bg['max_abs_diff_all_lengths']):.1e} / "
            f"{max(tc['max_abs_diff'], tc['max_abs_diff_all_lengths']):.1e} | "
            f"{bg['compile_s']:.2f} / {tc['compile_s']:.2f} ({r['compile_ratio']:.2f}) | "
            f"{r['eager_ms']:.2f} / {bg['steady_ms']:.2f} / {tc['steady_ms']:.2f} ({r['steady_ratio']:.2f}) | "
            f"{bg['recompiles']} / {tc['recompiles']} |")
    reasons = [(r["model"], impl, reason) for r in rows for impl in ("bytegraph", "torch.compile")
               for reason in r[impl]["break_reasons"]]
    if reasons:
        lines.append("\nGraph-break reasons:\n")
        lines.extend(f"- {model}, {impl}: {reason}" for model, impl, reason in reasons)
    return "\n".join(lines)


def write_chart(rows, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["model"] for r in rows]
    xs = range(len(rows))
    width = 0.38
    fig, ax = plt.subplots(figsize=(1.6 * len(rows) + 3, 4))
    ax.bar([x - width / 2 for x in xs], [r["compile_ratio"] for r in rows], width, label="compile time")
    ax.bar([x + width / 2 for x in xs], [r["steady_ratio"] for r in rows], width, label="steady-state call")
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names)
    ax.set_ylabel("bytegraph / torch.compile (lower is better)")
    ax.set_title('bytegraph vs torch.compile(backend="eager"), tiny HF models')
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(rows, out_dir) -> list:
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "models.json")
    png_path = os.path.join(out_dir, "models.png")
    with open(json_path, "w") as f:
        json.dump(rows, f, indent=2)
    write_chart(rows, png_path)
    return [json_path, png_path]


def add_arguments(parser) -> None:
    parser.add_argument("--models", default=None,
                        help=(f"comma-separated subset of {','.join(MODELS)} (default: all; --quick: "
                              f"{','.join(QUICK_MODELS)})"))


def selected_models(args) -> tuple:
    if args.models:
        return tuple(m.strip() for m in args.models.split(",") if m.strip())
    return QUICK_MODELS if args.quick else MODELS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a one-minute subset (two models, fewer rounds)")
    parser.add_argument("--out", default="bench_results")
    add_arguments(parser)
    args = parser.parse_args()
    rows = run(selected_models(args), quick=args.quick)
    print('## Real models: bytegraph vs torch.compile(backend="eager")\n')
    print(to_markdown(rows))
    for path in write_outputs(rows, args.out):
        print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
