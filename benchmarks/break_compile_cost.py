"""What a graph break costs to compile, against the number of breaks in a frame and its length.

A frame that breaks N times is compiled N+1 times (the frame, then each resume function as it is
reached), and each break builds a resume function and transformed code. Cases (functions generated
with N breaks, each followed by P lines of tensor work):

- `top level`: `x = opaque(x)` in the frame itself (a call to a function the compiler must not trace);
- `in a callee`: `x = helper(x)`, where the inlined `helper` calls `opaque` (the caller breaks at the
  call, as CPython's `test_future_stmt` test_annotations does 160 times);
- `in a try block`: the top-level case inside `try: ... finally:` (the break runs in a copy of the
  frame's own code, under its exception table).

Each row is the CPU time of the first call (tracing, code generation, backend) of a fresh function,
for bytegraph and torch.compile, both with backend="eager" (the function's own work is microseconds),
and the cost per break: (time at N breaks) / N. CPU time of the process, not wall time: a shared
machine's other work does not count. (torch.compile runs a frame that breaks inside a
`try` block eagerly from its first break on, so that row compares little.)
"""
from __future__ import annotations

import time

import torch

import bytegraph

CASES = ("top level", "in a callee", "in a try block")


def _source(case: str, n_breaks: int, pad: int) -> str:
    body = []
    for _ in range(n_breaks):
        body.append("x = helper(x)" if case == "in a callee" else "x = opaque(x)")
        body += [f"x = x + {j}" for j in range(pad)]
    if case == "in a try block":
        body = ["try:"] + ["    " + line for line in body] + ["finally:", "    done.append(1)"]
    return "\n".join(["def f(x):"] + ["    " + line for line in body] + ["    return x"])


def make(case: str, n_breaks: int, pad: int, impl: str):
    """A fresh function (a new code object: nothing cached) with `n_breaks` breaks."""
    if impl == "bytegraph":
        opaque = bytegraph.disable(lambda t: t * 1)
    else:
        import torch._dynamo as reference  # the reference only
        opaque = reference.disable(lambda t: t * 1)
    ns = {"opaque": opaque, "done": []}
    exec("def helper(x):\n    x = x + 1\n    x = opaque(x)\n    return x - 1\n", ns)
    exec(compile(_source(case, n_breaks, pad), f"<{case} {n_breaks}x{pad}>", "exec"), ns)
    return ns["f"]


def first_call_seconds(case: str, n_breaks: int, pad: int, impl: str) -> float:
    f = make(case, n_breaks, pad, impl)
    x = torch.ones(4)
    if impl == "bytegraph":
        bytegraph.reset()
        compiled = bytegraph.compile(f, backend="eager")
    else:
        import torch._dynamo as reference
        reference.reset()
        compiled = torch.compile(f, backend="eager")
    start = time.process_time()
    out = compiled(x)
    seconds = time.process_time() - start
    torch.testing.assert_close(out, f(x))
    return seconds


def run(quick=False, impls=("bytegraph", "torch.compile")):
    sizes = [(10, 1), (40, 1)] if quick else [(10, 1), (40, 1), (80, 1), (40, 8)]
    rows = []
    for impl in impls:
        first_call_seconds("top level", 2, 1, impl)      # warm up: lazy imports of a first compile
    for case in CASES:
        for n_breaks, pad in sizes:
            row = {"case": case, "breaks": n_breaks, "lines_per_break": pad}
            for impl in impls:
                row[impl] = first_call_seconds(case, n_breaks, pad, impl)
            rows.append(row)
    return rows


def to_markdown(rows) -> str:
    lines = ["| case | breaks | lines per break | bytegraph s | ms per break | torch.compile s | ms per break "
             "| bytegraph / torch.compile |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b, t = r["bytegraph"], r.get("torch.compile")
        tail = f"{t:.2f} | {t / r['breaks'] * 1e3:.1f} | {b / t:.2f}" if t else "- | - | -"
        lines.append(f"| {r['case']} | {r['breaks']} | {r['lines_per_break']} | {b:.2f} | "
                     f"{b / r['breaks'] * 1e3:.1f} | {tail} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bytegraph-only", action="store_true")
    args = parser.parse_args()
    print(to_markdown(run(quick=args.quick, impls=("bytegraph",) if args.bytegraph_only else
                          ("bytegraph", "torch.compile"))))
