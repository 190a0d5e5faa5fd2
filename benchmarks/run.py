"""`make bench`: run every benchmark, print markdown tables, and write bench_results/.

Sections: per-call overhead (`overhead.py`), real models side by side with torch.compile
(`models.py`) and recompiles/compile time over 10 sequence lengths, static vs dynamic
(`dynamic_shapes.py`), kernels per model under the inductor backend (`inductor_kernels.py`), CPU speed
of the inductor backend's C++ kernels against eager and torch.compile (`inductor_cpu.py`), and the
edges: a frame past the cache size limit, memory after compiled closures die (`edges.py`); what a graph
that may raise part way costs (`graph_raise_cost.py`); the compile time of a frame that breaks N times
(`break_compile_cost.py`).
Each prints a markdown table and writes JSON (the models section also a PNG chart)
into `--out`. `--only overhead|models|dynamic|inductor|inductor_cpu|edges|raise_cost|break_cost` runs one
section; `--quick` is a one-minute subset.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import break_compile_cost
import dynamic_shapes
import edges
import graph_raise_cost
import inductor_cpu
import inductor_kernels
import models
import overhead


def _table(title: str, markdown: str, rows, out: str, filename: str) -> None:
    print(f"## {title}\n")
    print(markdown)
    path = os.path.join(out, filename)
    with open(path, "w") as f:
        json.dump(rows, f, indent=2)
    print(f"\nwrote {path}\n")


def run_overhead(args) -> None:
    rows = overhead.run(quick=args.quick)
    _table("Per-call overhead (compiled minus eager), backend=eager", overhead.to_markdown(rows), rows,
           args.out, "overhead.json")


def run_models(args) -> None:
    rows = models.run(models.selected_models(args), quick=args.quick)
    print('## Real models: bytegraph vs torch.compile(backend="eager")\n')
    print(models.to_markdown(rows))
    for path in models.write_outputs(rows, args.out):
        print(f"\nwrote {path}")


def run_dynamic(args) -> None:
    rows = dynamic_shapes.run(quick=args.quick)
    _table(f"Dynamic shapes: a transformer block over {len(dynamic_shapes.SEQ_LENS)} sequence lengths",
           dynamic_shapes.to_markdown(rows), rows, args.out, "dynamic_shapes.json")


def run_inductor(args) -> None:
    rows = inductor_kernels.run(quick=args.quick)
    _table('Kernels per model, backend="inductor"', inductor_kernels.to_markdown(rows), rows, args.out,
           "inductor_kernels.json")


def run_inductor_cpu(args) -> None:
    rows = inductor_cpu.run(quick=args.quick)
    _table('CPU speed, backend="inductor": eager vs torch.compile vs bytegraph (C++ kernels), 1 and 2 threads',
           inductor_cpu.to_markdown(rows), rows, args.out, "inductor_cpu.json")


def run_edges(args) -> None:
    rows = edges.run(quick=args.quick)
    _table("Edges: past the cache size limit, dead compiled closures", edges.to_markdown(rows), rows, args.out,
           "edges.json")


def run_raise_cost(args) -> None:
    rows = graph_raise_cost.run(quick=args.quick)
    _table("A graph that may raise part way: the cost of putting its written inputs back",
           graph_raise_cost.to_markdown(rows), rows, args.out, "graph_raise_cost.json")


def run_break_cost(args) -> None:
    rows = break_compile_cost.run(quick=args.quick)
    _table('Compile time of a frame that breaks N times: bytegraph vs torch.compile(backend="eager")',
           break_compile_cost.to_markdown(rows), rows, args.out, "break_compile_cost.json")


SECTIONS = {"overhead": run_overhead, "models": run_models, "dynamic": run_dynamic, "inductor": run_inductor,
            "inductor_cpu": run_inductor_cpu, "edges": run_edges,
            "raise_cost": run_raise_cost, "break_cost": run_break_cost}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per measurement, fewer models")
    parser.add_argument("--out", default="bench_results")
    parser.add_argument("--only", choices=sorted(SECTIONS), help="run one section")
    models.add_arguments(parser)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, section in SECTIONS.items():
        if args.only in (None, name):
            section(args)


if __name__ == "__main__":
    main()
