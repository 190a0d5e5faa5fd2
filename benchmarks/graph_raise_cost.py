"""What a graph that might raise part way costs per call (frontend/graph_raise.py).

A graph whose raise would lose something eager keeps (here: a Python counter bumped after an
optimizer-like step) is called inside a try block, and the input tensors it writes into are copied
before the call, to be put back if it raises, when one of its ops can raise by value. Cases, on 4
parameters of 1M floats each: (a) an SGD step writing into the parameters, with the counter bump (a
try block, no copies: nothing in it raises by value); (b) the same step without the bump (nothing to
lose: no try block); (c) the step with the bump and a gather of the gradients by an index tensor (an
op that raises by value: the parameters are copied on each call). Timings are interleaved
(eager, bytegraph, torch.compile, same backend) over several rounds; medians per call.
"""
from __future__ import annotations

import torch

import bytegraph
from overhead import interleaved_medians

N_PARAMS, NUMEL = 4, 1 << 20


class Counter:
    steps = 0


def sgd_step_counted(params, grads, lr, counter):
    for p, g in zip(params, grads):
        p.add_(g, alpha=-lr)
    counter.steps += 1


def sgd_step(params, grads, lr, counter):
    for p, g in zip(params, grads):
        p.add_(g, alpha=-lr)


def sgd_step_indexed(params, grads, lr, counter):
    for p, g in zip(params, grads):
        p.add_(g[counter.index], alpha=-lr)       # an index tensor: raises if out of range
    counter.steps += 1


def measure(name, fn, backend, calls, rounds=5):
    import torch._dynamo  # the reference only
    torch._dynamo.reset()
    bytegraph.reset()
    params = [torch.zeros(NUMEL) for _ in range(N_PARAMS)]
    grads = [torch.full((NUMEL,), 1e-3) for _ in range(N_PARAMS)]
    counter = Counter()
    counter.index = torch.arange(NUMEL)
    args = (params, grads, 0.1, counter)
    impls = {"eager": fn, "bytegraph": bytegraph.compile(fn, backend=backend),
             "torch.compile": torch.compile(fn, backend=backend)}
    med = interleaved_medians(impls, args, calls, rounds, warmup=3)
    return {"case": name, "backend": backend, "eager_us": med["eager"], "bytegraph_us": med["bytegraph"],
            "torch_compile_us": med["torch.compile"]}


def run(quick=False, backends=("eager", "inductor")):
    calls = 10 if quick else 40
    rows = []
    for backend in backends:
        rows += [measure("SGD step + counter bump", sgd_step_counted, backend, calls),
                 measure("SGD step alone (no try block)", sgd_step, backend, calls),
                 measure("SGD step with an index op + counter bump", sgd_step_indexed, backend, calls)]
    return rows


def to_markdown(rows) -> str:
    lines = [f"{N_PARAMS} parameters of {NUMEL} floats, {torch.get_num_threads()} thread(s)", "",
             "| case | backend | eager µs | bytegraph µs | torch.compile µs | bytegraph / eager |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['backend']} | {r['eager_us']:.0f} | {r['bytegraph_us']:.0f} | "
                     f"{r['torch_compile_us']:.0f} | {r['bytegraph_us'] / r['eager_us']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", action="append", help="eager, aot_eager, inductor (default: eager and inductor)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(to_markdown(run(args.quick, tuple(args.backend or ("eager", "inductor")))))
