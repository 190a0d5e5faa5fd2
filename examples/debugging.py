"""Debugging a compile: explain, logs, the debug dir and the minifier, in one short walk.

    python examples/debugging.py

Everything written goes to a temporary folder (its path is printed). The same tools are switched on
from the environment in real use: BYTEGRAPH_LOGS, BYTEGRAPH_COMPILE_DEBUG=1 / BYTEGRAPH_DEBUG_DIR,
BYTEGRAPH_REPRO_AFTER=dynamo / BYTEGRAPH_REPRO_LEVEL, BYTEGRAPH_DEBUG_FUNCTION.
"""
import os
import subprocess
import sys
import tempfile

import torch

import bytegraph


def model_step(x, w):
    h = torch.relu(x @ w)
    print("  (user code) logging a value in the middle of the model")   # a graph break
    return (h * 2).softmax(dim=-1)


def buggy_backend(gm, example_inputs):
    """A backend with a bug: it has no lowering for relu (module level, so repro.py can import it)."""
    for node in gm.graph.nodes:
        if node.target in (torch.relu, "relu"):
            raise NotImplementedError("buggy_backend: no lowering for relu")
    return gm.forward


def read(path):
    with open(path) as f:
        return f.read()


def section(title):
    print(f"\n{'=' * 8} {title} {'=' * (70 - len(title))}")


def main():
    torch.manual_seed(0)
    x, w = torch.randn(4, 8), torch.randn(8, 16)
    out_dir = tempfile.mkdtemp(prefix="bytegraph_debugging_")

    section("1. explain: how many graphs, and why they break")
    explanation = bytegraph.explain(model_step)(x, w)
    print(explanation)
    print(f"\nas data: graph_count={explanation.graph_count}, graph_break_count={explanation.graph_break_count}, "
          f"first break at {explanation.break_reasons[0].frames[-1]}")

    section("2. logs: BYTEGRAPH_LOGS=graph_breaks,recompiles (here via config.patch)")
    with bytegraph.config.patch(logs="graph_breaks,recompiles"):
        opt = bytegraph.compile(model_step)
        opt(x, w)
        opt(torch.randn(6, 8), w)        # a new batch size: a recompile, and its reason is logged
    bytegraph.reset()

    section("3. the debug dir: BYTEGRAPH_COMPILE_DEBUG=1")
    with bytegraph.config.patch(compile_debug=True, debug_dir=out_dir):
        bytegraph.compile(model_step)(x, w)
    run = next(os.path.join(out_dir, d) for d in os.listdir(out_dir) if d.startswith("run_"))
    for frame in sorted(os.listdir(run)):
        print(f"{frame}/: {', '.join(sorted(os.listdir(os.path.join(run, frame))))}")
    first = os.path.join(run, min(os.listdir(run)))
    print("\nfx_graph_readable.py:\n" + read(os.path.join(first, "fx_graph_readable.py")))
    print("transformed_code.py:\n" + read(os.path.join(first, "transformed_code.py")))
    result = subprocess.run([sys.executable, os.path.join(first, "fx_graph_runnable.py")], capture_output=True,
                            text=True, check=False)
    print(f"python fx_graph_runnable.py -> {result.stdout.strip() or result.stderr.strip()}")
    bytegraph.reset()

    section("4. the minifier: BYTEGRAPH_REPRO_AFTER=dynamo")
    with bytegraph.config.patch(repro_after="dynamo", debug_dir=out_dir, strict=True):   # raise, not fall back
        try:
            bytegraph.compile(model_step, backend=buggy_backend)(x, w)
        except Exception as e:  # noqa: BLE001 - the backend failure, reported with the repro's path
            repro = e.__cause__.repro_path
            print(f"compile failed: {str(e).splitlines()[0][:160]}...")
    source = read(repro)
    print(f"\n{repro} (the graph part):\n" + source[source.index("class Repro"):source.index("def rand_strided")])
    result = subprocess.run([sys.executable, repro], capture_output=True, text=True, check=False)
    print(f"python repro.py -> exit code {result.returncode}: {result.stderr.strip().splitlines()[-1]}")
    bytegraph.reset()

    section("5. compile times and stats")
    opt = bytegraph.compile(model_step)
    opt(x, w)
    opt(x, w)
    print(bytegraph.compile_times())
    print(bytegraph.stats())
    print(f"\nfiles written under {out_dir}")


if __name__ == "__main__":
    main()
