"""Every HuggingFace architecture `transformers` can build offline, through bytegraph and torch.compile.

An oracle nobody here wrote: for each model type in `transformers`' auto mappings, a tiny model is
built from its default config with every size shrunk (2 layers, hidden 64, 4 heads, vocab 1000;
random weights, nothing downloaded; a config whose sizes then disagree keeps its default widths with 2
layers and vocab 1000) and its inputs are made from the model's own input names. Each
model then runs in a fresh subprocess (a crash or a hang costs one row) through:

- eager, twice (a model that is not deterministic in eval mode is reported, not compared);
- bytegraph and torch.compile, each with a backend that counts graphs: graphs, graph breaks,
  equality with eager on two calls (values, output type), recompiles over three sequence lengths
  (batch sizes for image and audio inputs) with `dynamic=None` (and whether torch.compile hit its
  recompile limit, past which it stops compiling);
- a training step through bytegraph against eager: loss and every parameter's gradient (with `aot_eager`,
  or with `--backend inductor` its generated forward and backward kernels).

A row is `wrong` when a compiler returned something other than eager without raising: that is the
worst bug a compiler can have (unless the model, run eagerly with the library's
`is_torchdynamo_compiling()` answering true, returns what the compiler did: the library's compile branch
computes something else, and the row says so). `python benchmarks/hf_sweep.py [--models gpt2,bert] [--limit N]
[--timeout S] [--backend inductor]` prints a table and writes `bench_results/hf_sweep.json`; `make
hf-sweep` runs it all.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import time
import warnings

VOCAB = 1000
HIDDEN = 64
HEADS = 4

_DEPTHS = ["num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers",
           "num_decoder_layers", "num_encoder_layers", "text_layers", "vision_layers"]
# config attribute -> tiny value (attributes a config does not have are left alone)
_SIZES = {
    **dict.fromkeys(_DEPTHS, 2),
    **dict.fromkeys(["hidden_size", "n_embd", "d_model", "embed_dim", "dim", "hidden_dim", "n_embed"], HIDDEN),
    **dict.fromkeys(["num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
                     "decoder_attention_heads"], HEADS),
    **dict.fromkeys(["num_key_value_heads", "num_kv_heads", "n_kv_heads"], 2),
    **dict.fromkeys(["intermediate_size", "n_inner", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff",
                     "hidden_dim_ffn", "moe_intermediate_size", "shared_expert_intermediate_size"], 128),
    "head_dim": HIDDEN // HEADS, "d_kv": HIDDEN // HEADS, "kv_channels": HIDDEN // HEADS,
    "vocab_size": VOCAB, "max_position_embeddings": 128, "n_positions": 128, "max_source_positions": 128,
    "max_target_positions": 128, "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "image_size": 32, "patch_size": 8, "num_mel_bins": 16,
    "mask_time_length": 2,   # audio encoders' SpecAugment spans fit the short training inputs
}
_TOKENS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "decoder_start_token_id": 0}


def model_types() -> list[str]:
    from transformers.models.auto import modeling_auto
    return sorted(modeling_auto.MODEL_MAPPING_NAMES)


# how far a config is shrunk: every size, else (a config whose sizes depend on each other in ways the
# table does not know) only its depth, vocabulary and image size (efficientnet's 600x600 images take
# minutes eagerly), else only its depth and vocabulary (a window or patch grid that needs the default
# image size), at the default widths
SHRINKS = ("tiny", "shallow, small images", "shallow")
_KEPT_SHRUNK = {"shallow, small images": (*_DEPTHS, "vocab_size", "image_size"), "shallow": (*_DEPTHS, "vocab_size")}
MAX_PARAMETERS = 200_000_000   # a shallow model larger than this is not built


def _shrink(config, shrink: str = "tiny") -> None:
    for name, value in _SIZES.items():
        if shrink != "tiny" and name not in _KEPT_SHRUNK[shrink]:
            continue
        if isinstance(getattr(config, name, None), int) and getattr(config, name) > value:
            setattr(config, name, value)
    for name, value in _TOKENS.items():
        if hasattr(config, name):
            setattr(config, name, value)
    for name in ("use_cache", "return_dict"):
        if hasattr(config, name):
            setattr(config, name, name == "return_dict")
    if hasattr(config, "attn_implementation"):
        config._attn_implementation = "eager"
    for sub in ("text_config", "vision_config", "audio_config", "encoder", "decoder", "speech_config"):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, "to_dict"):
            _shrink(inner, shrink)


def build(model_type: str, shrink: str = "tiny"):
    """A small model of this type in eval mode (`SHRINKS`), and `make_inputs(length, batch)`."""
    import torch
    import transformers
    from transformers.models.auto import modeling_auto
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(model_type)
    _shrink(config, shrink)
    torch.manual_seed(0)
    cls = getattr(transformers, modeling_auto.MODEL_MAPPING_NAMES[model_type])
    if shrink != "tiny":    # default widths: count the parameters before allocating them
        with torch.device("meta"):
            n = sum(p.numel() for p in cls(config).parameters())
        if n > MAX_PARAMETERS:
            raise ValueError(f"{n / 1e6:.0f}M parameters at its default widths")
    model = cls(config).eval()
    return model, _input_maker(model, config)


def _input_maker(model, config):
    import inspect

    import torch
    params = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    vocab = min(VOCAB, getattr(config, "vocab_size", None) or VOCAB)

    def make_inputs(length: int, batch: int = 2) -> dict:
        g = torch.Generator().manual_seed(length * 31 + batch)
        inputs = {}
        if main == "input_ids" or "input_ids" in params and main not in params:
            inputs["input_ids"] = torch.randint(3, vocab, (batch, length), generator=g)
            if "attention_mask" in params:
                inputs["attention_mask"] = torch.ones(batch, length, dtype=torch.long)
        elif main == "pixel_values":
            size = getattr(config, "image_size", 32)
            size = size[0] if isinstance(size, (list, tuple)) else size
            frames = (config.num_frames,) if isinstance(getattr(config, "num_frames", None), int) else ()  # video
            inputs["pixel_values"] = torch.randn(batch, *frames, getattr(config, "num_channels", 3), size, size,
                                                 generator=g)
        elif main == "input_values":
            inputs["input_values"] = torch.randn(batch, 400 * length, generator=g)
        elif main == "input_features":
            bins = getattr(config, "num_mel_bins", getattr(config, "feature_size", 16))
            frames = 2 * config.max_source_positions if hasattr(config, "max_source_positions") else 8 * length
            inputs["input_features"] = torch.randn(batch, bins, frames, generator=g)
        else:
            raise ValueError(f"no input maker for main input {main!r}")
        if "decoder_input_ids" in params and getattr(config, "is_encoder_decoder", False):
            inputs["decoder_input_ids"] = torch.randint(3, vocab, (batch, length), generator=g)
        return inputs
    return make_inputs


# -- one model, in a subprocess ------------------------------------------------------------------
def _tensors(out) -> list:
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _tensors(v)]
    return []


def _same(a, b) -> bool:
    import torch
    ta, tb = _tensors(a), _tensors(b)
    return type(a) is type(b) and len(ta) == len(tb) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True)
        for x, y in zip(ta, tb))


def _equal(out, ref, model, inputs, exact: bool) -> bool:
    """`out` equals eager's `ref`; or, where rounding may differ (`exact` off), `out` is no further from
    a float64 run of the model than twice eager's own float32 result is (plus a hair): a compiler that
    sums in another order is not wrong, one that computes something else is."""
    if _same(out, ref):
        return True
    if exact:
        return False
    import copy

    import torch
    with torch.no_grad():
        ref64 = copy.deepcopy(model).double()(**{k: v.double() if v.is_floating_point() else v
                                                 for k, v in inputs.items()})
    ta, te, t64 = _tensors(out), _tensors(ref), _tensors(ref64)
    if type(out) is not type(ref) or not len(ta) == len(te) == len(t64):
        return False
    for a, e, r in zip(ta, te, t64):
        if a.shape != e.shape or a.dtype != e.dtype:
            return False
        if a.is_floating_point():
            err_a, err_e = (a.double() - r).abs().max(), (e.double() - r).abs().max()
            if not err_a <= 2 * err_e + 1e-6 * max(1.0, float(r.abs().max())):
                return False
        elif not torch.equal(a, e):
            return False
    return True


class _Counting:
    def __init__(self, inner):
        self.inner, self.graphs = inner, 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return self.inner(gm, example_inputs)

    def __getattr__(self, name):      # what the backend declares (`specialize_float`...)
        return getattr(self.inner, name)


def _count_torch_limit_hits() -> list:
    """A list that grows by one each time torch.compile finds a frame past its recompile limit: from
    then on that frame, and every frame it calls, runs only what is cached (eagerly on a miss), so
    its later "recompiles" are not comparable with bytegraph's (switch_transformers: torch stops
    compiling `deprecate_kwarg`'s wrapper, shared by six forwards, and runs the model eagerly)."""
    import torch._dynamo.convert_frame as torch_convert_frame   # the reference
    hits, check = [], torch_convert_frame.exceeds_recompile_limit

    def counting(*args, **kwargs):
        exceeded, limit = check(*args, **kwargs)
        if exceeded:
            hits.append(limit)
        return exceeded, limit
    torch_convert_frame.exceeds_recompile_limit = counting
    return hits


def _compiler(name: str):
    """(reset, compile(model, backend_name) -> (callable, counter), graph breaks so far)."""
    import torch
    if name == "bytegraph":
        import bytegraph
        from bytegraph.backends.registry import lookup_backend
        bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run

        def compile_(model, backend):
            counter = _Counting(lookup_backend(backend))
            return bytegraph.compile(model, backend=counter), counter
        return bytegraph.reset, compile_, lambda: len(bytegraph.stats.break_records)
    import torch._dynamo   # the reference
    from torch._dynamo.backends.registry import lookup_backend as torch_lookup
    from torch._dynamo.utils import counters

    def compile_(model, backend):
        counter = _Counting(torch_lookup(backend))
        return torch.compile(model, backend=counter), counter
    return torch._dynamo.reset, compile_, lambda: sum(counters["graph_break"].values())


def _bytegraph_reasons() -> list[str]:
    """bytegraph's graph-break reasons (each with the user's line) and recompile reasons, for the JSON."""
    import bytegraph
    stats = bytegraph.stats
    where = [f" @ {r.user_stack[-1].filename.split('/')[-1]}:{r.user_stack[-1].lineno}" if r.user_stack else ""
             for r in stats.break_records]
    breaks = [f"break: {r.reason[:160]}{w}" for r, w in zip(stats.break_records, where)]
    return breaks[:8] + [f"recompile: {fn}: {why[:200]}" for fn, why in stats.recompile_reasons[:4]]


def check_model(model_type: str, backend: str = "eager") -> dict:
    import torch
    row = build_check(model_type)
    if row["status"] != "ok":
        return row
    model, make_inputs = build(model_type, row["shrink"])
    inputs = make_inputs(8)
    with torch.no_grad():
        ref = model(**inputs)
    torch_limit_hits = _count_torch_limit_hits()
    for name in ("bytegraph", "torch.compile"):
        reset, compile_, breaks = _compiler(name)
        result = row[name] = {}
        try:
            reset()
            # bytegraph with the backend under test; torch.compile stays the frontend's reference
            opt, counter = compile_(model, backend if name == "bytegraph" else "eager")
            with torch.no_grad():
                out1, out2 = opt(**inputs), opt(**inputs)
            result["graphs"], result["breaks"] = counter.graphs, breaks()
            # a code-generating backend reorders float sums: judged against float64 where the tolerance fails
            exact = name != "bytegraph" or backend in ("eager", "aot_eager")
            # (out, its inputs, eager's result) for two calls and three sequence lengths (for token
            # inputs; three batch sizes for the others)
            runs = [(out1, inputs, ref), (out2, inputs, ref)]
            for length, batch in ((12, 2), (16, 2)) if "input_ids" in inputs else ((8, 3), (8, 4)):
                more = make_inputs(length, batch)
                with torch.no_grad():
                    runs.append((opt(**more), more, model(**more)))
            result["equal"] = all(_equal(out, want, model, args, exact) for out, args, want in runs)
            if not result["equal"] and all(_equal(out, _eager_as_compiled(model, args), model, args, exact)
                                           for out, args, _ in runs):
                # the library takes another branch when compiling (`is_torchdynamo_compiling()`), and
                # that branch computes something else: the compiler ran what it was given
                result["equal"], result["library_branch"] = True, True
            result["recompiles"] = counter.graphs - result["graphs"]
            if name == "bytegraph":
                result["why"] = _bytegraph_reasons()
            elif torch_limit_hits:
                result["recompile_limit_hits"] = len(torch_limit_hits)
        except Exception as e:  # noqa: BLE001 - reported per compiler
            result["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    # the training step runs through the backend under test when it trains (aot_eager for "eager")
    row["training"] = _training_step(model, inputs, "aot_eager" if backend == "eager" else backend)
    return row


@contextlib.contextmanager
def _library_compiling():
    """The library's "is compiling" answers true (transformers' own `is_torchdynamo_compiling` copies,
    and torch's), as the model's code sees them under a compiler, while the model runs eagerly."""
    import sys

    import torch
    saved = [(torch.compiler, "is_compiling", torch.compiler.is_compiling)]
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("transformers") and \
                callable(getattr(module, "is_torchdynamo_compiling", None)):
            saved.append((module, "is_torchdynamo_compiling", module.is_torchdynamo_compiling))
    for module, name, _ in saved:
        setattr(module, name, lambda: True)
    try:
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


def _eager_as_compiled(model, inputs):
    import torch
    with _library_compiling(), torch.no_grad():
        return model(**inputs)


def _training_step(model, inputs, backend: str = "aot_eager") -> dict:
    """One forward/backward through bytegraph with `backend` against eager: loss and parameter gradients."""
    import copy

    import numpy as np
    import torch

    import bytegraph

    def step(fn, m=model, args=inputs):
        m.zero_grad(set_to_none=True)
        torch.manual_seed(0)
        np.random.seed(0)      # audio encoders draw their SpecAugment masks with numpy
        out = fn(**args)
        # (half-precision outputs summed in float32; the float64 reference's in float64)
        loss = sum(t.to(torch.promote_types(t.dtype, torch.float32)).sum()
                   for t in _tensors(out) if t.is_floating_point())
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}

    def close(got, want, exact, rtol):
        """Within tolerance, or (a sum that cancels amplifies rounding) no further from a float64 run
        than twice eager's own float32 result is."""
        if torch.allclose(got, want, rtol=rtol, atol=1e-4):
            return True
        err_got, err_want = ((t.double() - exact).abs().max() for t in (got, want))
        return bool(err_got <= 2 * err_want + 1e-6 * max(1.0, float(exact.abs().max())))
    try:
        model.train()
        want_loss, want_grads = step(model)
        bytegraph.reset()
        got_loss, got_grads = step(bytegraph.compile(model, backend=backend))
        equal = got_grads.keys() == want_grads.keys()
        if equal and not (torch.allclose(got_loss, want_loss, rtol=1e-4, atol=1e-4) and all(
                torch.allclose(got_grads[n], want_grads[n], rtol=1e-3, atol=1e-4) for n in want_grads)):
            model64 = copy.deepcopy(model).double()
            inputs64 = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
            loss64, grads64 = step(model64, model64, inputs64)
            equal = close(got_loss, want_loss, loss64, 1e-4) and \
                all(close(got_grads[n], want_grads[n], grads64[n], 1e-3) for n in want_grads)
        if not equal:
            with _library_compiling():
                want_loss, want_grads = step(model)
            if torch.allclose(got_loss, want_loss, rtol=1e-4, atol=1e-4) and got_grads.keys() == want_grads.keys() \
                    and all(torch.allclose(got_grads[n], want_grads[n], rtol=1e-3, atol=1e-4) for n in want_grads):
                return {"equal": True, "library_branch": True}
        return {"equal": bool(equal)}
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}
    finally:
        model.eval()


def _build_rows(types, timeout: float) -> list:
    cmd = [sys.executable, os.path.abspath(__file__), "--build-check", ",".join(types)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
        if len(types) > 1:                  # one model crashed or hung the batch: try them one by one
            return [row for t in types for row in _build_rows([t], timeout)]
        return [{"model": types[0], "status": "not built", "why": "crashed or timed out while building"}]


def _buildable(types, timeout: float, batch: int = 25) -> tuple[list, list]:
    """Split model types into those a tiny model can be built and run eagerly for, and the rows of
    the others, checked in batches per subprocess (no compiler involved: this is cheap)."""
    rows = [row for i in range(0, len(types), batch) for row in _build_rows(types[i:i + batch], timeout)]
    return [r["model"] for r in rows if r["status"] == "ok"], [r for r in rows if r["status"] != "ok"]


def build_check(model_type: str) -> dict:
    """Whether a small model of this type builds and runs eagerly, at the first of `SHRINKS` that does."""
    import torch
    why = None
    for shrink in SHRINKS:
        try:
            model, make_inputs = build(model_type, shrink)
            inputs = make_inputs(8)
            with torch.no_grad():
                ref, ref2 = model(**inputs), model(**inputs)
        except Exception as e:  # noqa: BLE001 - not the compilers' fault: the model cannot be built small
            why = (why + " / " if why else "") + f"{shrink}: {type(e).__name__}: {str(e)[:150]}"
            continue
        return {"model": model_type, "status": "ok" if _same(ref, ref2) else "not deterministic", "shrink": shrink}
    return {"model": model_type, "status": "not built", "why": why}


def _run_one(model_type: str, timeout: float, backend: str = "eager") -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", model_type, "--backend", backend]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": model_type, "status": "timeout"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"model": model_type, "status": "crashed", "why": done.stderr.strip().splitlines()[-1:]}


# -- report ----------------------------------------------------------------------------------------
def verdict(result: dict) -> str:
    if not result:
        return "-"
    if "error" in result:
        return "error"
    if not result.get("equal"):
        return "WRONG"
    if result.get("library_branch"):
        return "equal to the library's compile branch"
    return "1 graph" if result["graphs"] == 1 and not result["breaks"] else f"{result['graphs']} graphs"


def summarize(rows) -> dict:
    ran = [r for r in rows if r.get("status") == "ok"]
    out = {"model types": len(rows), "built and ran eagerly": len(ran)}
    for name in ("bytegraph", "torch.compile"):
        results = [r[name] for r in ran]
        out[f"{name}: one graph, equal"] = sum(verdict(x) == "1 graph" for x in results)
        out[f"{name}: wrong"] = sum(verdict(x) == "WRONG" for x in results)
        out[f"{name}: error"] = sum(verdict(x) == "error" for x in results)
        out[f"{name}: recompiled over 3 lengths"] = sum(x.get("recompiles", 0) > 0 for x in results)
    out["torch one graph, bytegraph not"] = sum(verdict(r["torch.compile"]) == "1 graph" and
                                                verdict(r["bytegraph"]) != "1 graph" for r in ran)
    out["training equal"] = sum(r["training"].get("equal", False) for r in ran)
    out["training wrong"] = sum(r["training"].get("equal") is False for r in ran)
    return out


def to_markdown(rows) -> str:
    lines = ["| model | bytegraph | torch.compile | recompiles bytegraph / torch | training |",
             "|---|---|---|---|---|"]
    for r in rows:
        if r.get("status") != "ok":
            continue
        b, t = r["bytegraph"], r["torch.compile"]
        train = r["training"]
        # torch past its recompile limit runs frames eagerly: its count is then a floor, not a figure
        limited = " (torch hit its recompile limit)" if t.get("recompile_limit_hits") else ""
        lines.append(f"| {r['model']} | {verdict(b)} | {verdict(t)} | {b.get('recompiles', '-')} / "
                     f"{t.get('recompiles', '-')}{limited} | "
                     f"{'equal' if train.get('equal') else 'WRONG' if 'equal' in train else 'error'} |")
    lines += ["", "| summary | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in summarize(rows).items()]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model types (default: all)")
    parser.add_argument("--limit", type=int, help="only the first N model types")
    parser.add_argument("--sample", type=int, help="N model types spread evenly over the alphabetical list; "
                        "each worker checks that its model builds (no separate build pass: faster to first rows)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per model")
    parser.add_argument("--out", default="bench_results")
    parser.add_argument("--backend", default="eager", help="bytegraph's backend (e.g. inductor: its kernels "
                        "against eager on every model)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--build-check", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_check:
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        with contextlib.redirect_stdout(io.StringIO()):
            rows = [build_check(t) for t in args.build_check.split(",")]
        print(json.dumps(rows))
        return
    if args.worker:
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        with contextlib.redirect_stdout(io.StringIO()):
            row = check_model(args.worker, args.backend)
        print(json.dumps(row))
        return
    types = args.models.split(",") if args.models else model_types()
    types = types[:args.limit] if args.limit else types
    if args.sample:
        types, rows = [types[i * len(types) // args.sample] for i in range(min(args.sample, len(types)))], []
    else:
        types, rows = _buildable(types, timeout=max(args.timeout, 600))
        print(f"{len(types)} model types build tiny and run eagerly; {len(rows)} do not", file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "hf_sweep.json" if args.backend == "eager" else f"hf_sweep_{args.backend}.json")
    start = time.time()
    for i, model_type in enumerate(types):
        row = _run_one(model_type, args.timeout, args.backend)
        rows.append(row)
        status = row.get("status")
        detail = f"bytegraph {verdict(row.get('bytegraph', {}))}, torch {verdict(row.get('torch.compile', {}))}" \
            if status == "ok" else status
        print(f"[{i + 1}/{len(types)} {time.time() - start:.0f}s] {model_type}: {detail}", file=sys.stderr, flush=True)
        with open(path, "w") as f:      # after every model: a run stopped part way still leaves its rows
            json.dump({"summary": summarize(rows), "rows": rows}, f, indent=1)
    print(to_markdown(rows))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
