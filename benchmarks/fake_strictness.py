"""Find the ops whose fake kernels accept arguments that eager refuses: a graph holding such an op
traces fine and raises at run time, part way through, after its earlier writes and before the Python
side effects replayed after it. The frontend must run those calls as Python (where they raise as in
eager), so this sweep is the oracle behind `output_graph`'s table of them.

    python benchmarks/fake_strictness.py [--ops layer_norm,...] [--samples 3] [--backend inductor]

For every OpInfo op and float32 sample, each floating tensor argument in turn is cast to float64 and
to bfloat16; the call runs eagerly and on fake tensors (under the Python dispatcher, as traced). A row
is printed for each (op, argument, dtype) where eager raises and the fake call returns. With
`--backend`, each call eager refuses is also compiled by bytegraph with that backend: it must raise
the same exception type (a compiled call returning a value where eager raises is a wrong result).
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings

from inductor_opinfo_sweep import op_database


def _variants(sample):
    """(description, args, kwargs) with one floating tensor argument cast to another dtype."""
    import torch
    import torch.utils._pytree as pytree
    leaves, spec = pytree.tree_flatten(((sample.input, *sample.args), sample.kwargs))
    for i, leaf in enumerate(leaves):
        if not (isinstance(leaf, torch.Tensor) and leaf.dtype == torch.float32):
            continue
        for dtype in (torch.float64, torch.bfloat16):
            changed = list(leaves)
            changed[i] = leaf.detach().to(dtype)
            args, kwargs = pytree.tree_unflatten(changed, spec)
            yield f"argument {i} as {str(dtype).removeprefix('torch.')}", args, kwargs


def _raises(fn, args, kwargs, fake: bool):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch._dispatch.python import enable_python_dispatcher
    try:
        if fake:
            mode = FakeTensorMode(allow_non_fake_inputs=False)
            import torch.utils._pytree as pytree
            args, kwargs = pytree.tree_map_only(torch.Tensor, mode.from_tensor, (args, kwargs))
            with mode, enable_python_dispatcher():
                fn(*args, **kwargs)
        else:
            fn(*args, **kwargs)
    except Exception as e:      # noqa: BLE001 -- any refusal counts
        return f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    return None


def _compiled_differs(fn, args, kwargs, backend: str, eager_error: str):
    import bytegraph
    compiled = bytegraph.compile(lambda *a, **kw: fn(*a, **kw), backend=backend)
    got = _raises(compiled, args, kwargs, fake=False)
    if got is None:
        return "returns a value"
    return None if got.split(":")[0] == eager_error.split(":")[0] else f"raises {got}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op names (default: all)")
    parser.add_argument("--samples", type=int, default=3, help="samples per op")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--backend", help="also compile each call eager refuses with this backend")
    args = parser.parse_args()
    import torch
    warnings.simplefilter("ignore")
    wanted = set(args.ops.split(",")) if args.ops else None
    rows, checked, wrong = [], 0, []
    for op in op_database():
        if wanted and op.name not in wanted:
            continue
        if torch.float32 not in op.supported_dtypes("cpu"):
            continue
        try:
            samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:args.samples]
        except Exception:      # noqa: BLE001 -- a sample generator needing what this machine lacks
            continue
        found = set()
        for sample in samples:
            for what, a, kw in _variants(sample):
                if what in found:
                    continue
                checked += 1
                eager = _raises(op.op, a, kw, fake=False)
                if eager and args.backend:
                    differs = _compiled_differs(op.op, a, kw, args.backend, eager)
                    if differs:
                        wrong.append({"op": op.name, "variant": what, "eager": eager, "compiled": differs})
                        print(f"WRONG {op.name}: {what}: eager raises {eager}; compiled {differs}", flush=True)
                if eager and not _raises(op.op, a, kw, fake=True):
                    found.add(what)
                    rows.append({"op": op.name, "variant": what, "eager": eager})
                    print(f"{op.name}: {what}: eager raises {eager}; the fake call returns", flush=True)
    print(f"\n{checked} variants checked; {len(rows)} where eager refuses and the fake kernel accepts "
          f"({len({r['op'] for r in rows})} ops)", file=sys.stderr)
    if args.backend:
        print(f"compiled with {args.backend}: {len(wrong)} calls eager refuses did not raise the same way",
              file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fake_accepts": rows, "compiled_differs": wrong}, f, indent=1)


if __name__ == "__main__":
    main()
