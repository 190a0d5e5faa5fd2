"""Compiled DistributedDataParallel training on one machine:

    torchrun --nproc-per-node 2 examples/ddp.py [--backend aot_eager|inductor] [--no-split]

Each process wraps a small transformer in DDP and compiles the DDP module with bytegraph. DDP's own
forward (its reducer and hooks) runs eagerly; the module it runs is captured in one graph, which
bytegraph compiles in pieces at DDP's gradient-bucket boundaries (`bucket_cap_mb`), so each bucket's
all-reduce can start while the backward of the pieces before it still runs. `--no-split` compiles
the graph whole (`bytegraph.config.optimize_ddp = False`). An uncompiled DDP twin trains on the same
data alongside, and every step checks that both have the same loss and the same parameters.
Uses gloo on CPU (nccl when every rank has a GPU).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import bytegraph
from bytegraph.testing import CompileCounterWithBackend


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    def __init__(self, vocab=64, dim=32, heads=4, layers=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.05)   # tiny model: several buckets
    parser.add_argument("--no-split", action="store_true")
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    bytegraph.config.optimize_ddp = not args.no_split

    torch.manual_seed(0)                     # same initial weights on every rank
    eager_model, model = Transformer().to(device), Transformer().to(device)
    model.load_state_dict(eager_model.state_dict())
    eager_ddp = DDP(eager_model, bucket_cap_mb=args.bucket_cap_mb)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    counter = CompileCounterWithBackend(args.backend)   # counts the graphs (pieces) the backend compiles
    compiled = bytegraph.compile(ddp, backend=counter)

    # SGD, so the parameter check compares like with like: Adam divides each gradient by its own size,
    # and the attention's key bias has a gradient of exactly zero in exact arithmetic (softmax ignores
    # a shift shared by all keys), ~1e-10 of rounding in float, which Adam turns into full-size steps
    # in directions that differ between any two kernels (inductor's and ATen's)
    opt_eager = torch.optim.SGD(eager_ddp.parameters(), lr=0.1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)   # every rank its own batch
    for step in range(args.steps):
        idx = torch.randint(0, 64, (4, 16), generator=data).to(device)
        target = torch.randint(0, 64, (4, 16), generator=data).to(device)
        losses = []
        for net, optimizer in ((eager_ddp, opt_eager), (compiled, opt)):
            loss = nn.functional.cross_entropy(net(idx).flatten(0, 1), target.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
        diff = max((a - b).abs().max().item() for a, b in zip(eager_model.parameters(), model.parameters()))
        print(f"rank {rank} step {step}: loss eager {losses[0]:.6f} compiled {losses[1]:.6f}, "
              f"largest parameter difference {diff:.2e}", flush=True)

    dist.barrier()
    print(f"rank {rank}: {bytegraph.stats.graphs} graph(s) captured, {counter.frame_count} piece(s) compiled "
          f"with {args.backend}", flush=True)
    if rank == 0:
        for name, split in bytegraph.stats.ddp_splits:
            print(f"graph of {name}: {split.describe()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
