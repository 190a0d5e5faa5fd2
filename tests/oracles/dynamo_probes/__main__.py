"""Run the probes: each file in a fresh process (a probe that wrecks the interpreter costs only its file),
then print the table. See the package docstring."""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).parent
FILE_TIMEOUT_S = 1800


def probe_files() -> list[str]:
    return sorted(p.stem for p in HERE.glob("probes_*.py"))


def run_file(name: str, only: set | None = None) -> list[dict]:
    """In this process: every probe of one file (or the named ones)."""
    from . import PROBES, run_probe
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    importlib.import_module(f"{__package__}.{name}")
    rows = []
    for p in PROBES:
        if p.file == name and (not only or p.name in only):
            try:
                rows.append(run_probe(p))
            except Exception as e:  # noqa: BLE001 - a harness failure is reported, not fatal
                rows.append({"file": name, "name": p.name, "harness_error": f"{type(e).__name__}: {e}"[:300]})
    return rows


def run_files(names: list[str]) -> list[dict]:
    rows = []
    for name in names:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, "-m", __package__, "--one", name, "--json", out.name]
            try:
                proc = subprocess.run(cmd, timeout=FILE_TIMEOUT_S, capture_output=True, text=True,
                                      cwd=HERE.parents[2])
            except subprocess.TimeoutExpired:
                rows.append({"file": name, "name": "*", "harness_error": "file timed out"})
                continue
            if proc.returncode or not os.path.getsize(out.name):
                rows.append({"file": name, "name": "*", "harness_error": proc.stderr[-600:]})
                continue
            rows.extend(json.load(open(out.name)))
        print(f"{name}: done", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict], verbose: bool) -> str:
    ok = [r for r in rows if "bg_equal" in r and not r.get("eager_error")]
    count = {
        "probes": len(rows),
        "ran": len(ok),
        "one graph, no break (bytegraph)": sum(r["bg_graphs"] == 1 and r["bg_breaks"] == 0 for r in ok),
        "fullgraph: bytegraph": sum(r["bg_full"] for r in ok),
        "fullgraph: torch.compile": sum(r["tc_full"] for r in ok),
        "torch fullgraph, bytegraph not": sum(r["tc_full"] and not r["bg_full"] for r in ok),
        "bytegraph fullgraph, torch not": sum(r["bg_full"] and not r["tc_full"] for r in ok),
        "WRONG: bytegraph differs from eager": sum(not r["bg_equal"] for r in ok),
        "torch.compile differs from eager": sum(not r["tc_equal"] for r in ok),
        "more compiles than torch (no break)": sum(r["bg_breaks"] == 0 and r["bg_graphs"] > r["tc_graphs"] for r in ok),
        "harness errors": sum("harness_error" in r or r.get("eager_error") is not None for r in rows),
    }
    lines = [f"{v:6d}  {k}" for k, v in count.items()]
    if verbose:
        def show(title, pick, detail):
            picked = [r for r in rows if pick(r)]
            if picked:
                lines.append(f"\n{title}:")
                lines.extend(f"  {r['file']}::{r['name']}  {detail(r)}" for r in picked)
        show("WRONG", lambda r: r in ok and not r["bg_equal"], lambda r: f"(torch equal: {r['tc_equal']})")
        show("torch fullgraph, bytegraph not", lambda r: r in ok and r["tc_full"] and not r["bg_full"],
             lambda r: (r["bg_full_error"] or "")[:160])
        show("more compiles than torch", lambda r: r in ok and r["bg_breaks"] == 0 and r["bg_graphs"] > r["tc_graphs"],
             lambda r: f"{r['bg_graphs']} vs {r['tc_graphs']}")
        show("harness errors", lambda r: "harness_error" in r or r.get("eager_error"),
             lambda r: (r.get("harness_error") or r.get("eager_error"))[:160])
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(prog="python -m tests.oracles.dynamo_probes")
    ap.add_argument("--files", nargs="*", default=None, help="probe files (default: all)")
    ap.add_argument("--names", nargs="*", default=None, help="only these probes (with --one)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.one:
        rows = run_file(a.one, set(a.names or ()))
    else:
        rows = run_files(a.files or probe_files())
        print(table(rows, a.verbose))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)


if __name__ == "__main__":
    main()
