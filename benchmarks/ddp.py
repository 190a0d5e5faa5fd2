"""Step time of compiled against uncompiled DistributedDataParallel, 2 processes, gloo, CPU.

    python benchmarks/ddp.py [--backend inductor|aot_eager] [--rounds 5] [--steps 3]

Three DDP copies of one transformer (same initial weights) train on the same batches: uncompiled,
compiled in pieces at DDP's bucket boundaries (`config.optimize_ddp`, the default) and compiled
whole. Timings are interleaved (each round runs `--steps` steps of each copy) and the median step
time per copy is reported with its ratio to uncompiled DDP, so the ratios survive a noisy machine.
Also reported: graphs captured and pieces compiled per rank, the split points bytegraph chose, the
bucket sizes DDP itself uses, and the largest parameter difference between the copies at the end.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ddp import Transformer  # noqa: E402  (the example's model)

WORLD = 2


def _bucket_bytes(ddp) -> list:
    """The bytes of each gradient bucket DDP's reducer uses now (rebuilt after the first step in
    the order gradients became ready), last-used parameters first."""
    return [b.buffer().numel() * b.buffer().element_size() for b in ddp.reducer._get_zeros_like_grad_buckets()]


def _worker(rank, port, args, out):
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    models = [Transformer(vocab=512, dim=args.dim, heads=4, layers=args.layers) for _ in range(3)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    ddps = [DDP(m, bucket_cap_mb=args.bucket_cap_mb) for m in models]
    counters = [CompileCounterWithBackend(args.backend) for _ in range(2)]
    runs = {"eager": (ddps[0], None),
            "compiled, split at buckets": (bytegraph.compile(ddps[1], backend=counters[0]), True),
            "compiled, whole": (bytegraph.compile(ddps[2], backend=counters[1]), False)}
    opts = {name: torch.optim.SGD(net.parameters(), lr=0.01) for name, (net, _) in runs.items()}
    data = torch.Generator().manual_seed(rank)
    batches = [(torch.randint(0, 512, (8, 64), generator=data), torch.randint(0, 512, (8, 64), generator=data))
               for _ in range(4)]

    def step(name, i):
        net, split = runs[name]
        idx, target = batches[i % len(batches)]
        with bytegraph.config.patch(optimize_ddp=bool(split)):
            loss = nn.functional.cross_entropy(net(idx).flatten(0, 1), target.flatten())
            loss.backward()
        opts[name].step()
        opts[name].zero_grad(set_to_none=True)

    times = {name: [] for name in runs}
    t0 = time.perf_counter()
    for name in runs:          # first step: compiles
        step(name, 0)
    compile_seconds = time.perf_counter() - t0
    for r in range(args.rounds):
        for name in runs:
            dist.barrier()
            t = time.perf_counter()
            for i in range(args.steps):
                step(name, r * args.steps + i + 1)
            times[name].append((time.perf_counter() - t) / args.steps)
    diffs = {name: max((a - b).abs().max().item() for a, b in zip(models[0].parameters(), m.parameters()))
             for name, m in zip(list(runs)[1:], models[1:])}
    out.put(dict(rank=rank, times={k: statistics.median(v) for k, v in times.items()}, diffs=diffs,
                 graphs=bytegraph.stats.graphs, pieces=[c.frame_count for c in counters],
                 splits=[split.describe() for _, split in bytegraph.stats.ddp_splits],
                 ddp_buckets=_bucket_bytes(ddps[0]), compile_seconds=compile_seconds))
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--bucket-cap-mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(rank, port, args, out)) for rank in range(WORLD)]
    for p in procs:
        p.start()
    results = sorted((out.get() for _ in procs), key=lambda r: r["rank"])
    for p in procs:
        p.join()
    print(f"DDP, {WORLD} ranks (gloo, CPU), transformer dim {args.dim} x {args.layers} layers, batch 8 x 64, "
          f"bucket_cap_mb {args.bucket_cap_mb}, backend {args.backend}")
    for r in results:
        eager = r["times"]["eager"]
        print(f"rank {r['rank']}: {r['graphs']} graphs captured (one per compiled copy); pieces compiled: split "
              f"{r['pieces'][0]}, whole {r['pieces'][1]}; first steps (compile) {r['compile_seconds']:.1f} s; "
              f"uncompiled DDP's buckets (bytes, last used first) {r['ddp_buckets']}")
        for name, t in r["times"].items():
            print(f"  {name:28s} {t * 1e3:8.1f} ms/step  x{t / eager:.2f} of eager  "
                  f"(max param diff vs eager {r['diffs'].get(name, 0.0):.1e})")
    print("split points (rank 0):")
    for text in results[0]["splits"]:
        print("  " + text.replace("\n", "\n  "))


if __name__ == "__main__":
    main()
