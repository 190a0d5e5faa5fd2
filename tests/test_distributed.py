"""Compiled training under torch.distributed: DDP and FSDP2 (`fully_shard`), 2 processes, gloo, CPU.

Two processes are started once for the whole file; each trains a tiny transformer compiled and
uncompiled, side by side, step by step, in every scenario below and saves what it saw (losses,
parameters, graph counts, split records, recompile reasons). The tests then compare the ranks'
records: compiled equals uncompiled, the graphs captured are the expected ones, and both ranks
compiled the same graphs.
"""
from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

WORLD = 2
STEPS = 3
VOCAB, DIM, BLOCKS = 16, 8, 2
BUCKET_CAP_MB = 2500 / 2**20    # ~2.5 KB: the tiny model's parameters fill several DDP buckets


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        y = self.ln(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(x)


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        x = self.emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _twin_models():
    torch.manual_seed(0)
    eager, compiled = TinyTransformer(), TinyTransformer()
    compiled.load_state_dict(eager.state_dict())
    return eager, compiled


def _train_side_by_side(eager, compiled_call, eager_params, compiled_params, rank, seq=6):
    """Losses of both per step, and the largest parameter difference after each step."""
    opt_e = torch.optim.SGD(eager_params, lr=0.5)
    opt_c = torch.optim.SGD(compiled_params, lr=0.5)
    gen = torch.Generator().manual_seed(rank)      # each rank its own data: gradients must be averaged
    losses, diffs = [], []
    for _ in range(STEPS):
        idx = torch.randint(0, VOCAB, (2, seq), generator=gen)
        target = torch.randint(0, VOCAB, (2, seq), generator=gen)
        step = []
        for model, opt in ((eager, opt_e), (compiled_call, opt_c)):
            loss = nn.functional.cross_entropy(model(idx).flatten(0, 1), target.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad()
            step.append(loss.item())
        losses.append(step)
        diffs.append(max((_full(a) - _full(b)).abs().max().item() for a, b in zip(eager_params, compiled_params)))
    return losses, diffs


def _full(param):
    """The whole parameter (FSDP holds a shard per rank: gathered from all ranks)."""
    param = param.detach()
    return param.full_tensor() if hasattr(param, "full_tensor") else param


def _ddp(rank, backend, optimize_ddp):
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    from torch.nn.parallel import DistributedDataParallel as DDP
    bytegraph.reset()
    eager, inner = _twin_models()
    ddp_eager, ddp = DDP(eager, bucket_cap_mb=BUCKET_CAP_MB), DDP(inner, bucket_cap_mb=BUCKET_CAP_MB)
    counter = CompileCounterWithBackend(backend)
    with bytegraph.config.patch(optimize_ddp=optimize_ddp):
        losses, diffs = _train_side_by_side(ddp_eager, bytegraph.compile(ddp, backend=counter),
                                            list(ddp_eager.parameters()), list(ddp.parameters()), rank)
    splits = [(name, split.not_split, [b.params for b in split.buckets]) for name, split in bytegraph.stats.ddp_splits]
    return dict(losses=losses, diffs=diffs, frontend_graphs=bytegraph.stats.graphs, pieces=counter.frame_count,
                piece_code=[gm.code for gm in counter.graphs], splits=splits,
                params=[name for name, _ in inner.named_parameters()],
                breaks=dict(bytegraph.stats.graph_breaks), recompiles=bytegraph.stats.recompiles)


def _fsdp(rank, backend):
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    from torch.distributed.fsdp import fully_shard
    bytegraph.reset()
    eager, compiled = _twin_models()
    for model in (eager, compiled):
        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
    counter = CompileCounterWithBackend(backend)
    losses, diffs = _train_side_by_side(eager, bytegraph.compile(compiled, backend=counter),
                                        list(eager.parameters()), list(compiled.parameters()), rank)
    return dict(losses=losses, diffs=diffs, graphs=counter.frame_count, graph_ops=[len(gm.graph.nodes) for gm in
                                                                                  counter.graphs],
                breaks=dict(bytegraph.stats.graph_breaks), recompile_reasons=bytegraph.stats.recompile_reasons,
                shard_numel=sum(p.to_local().numel() for p in compiled.parameters()),
                full_numel=sum(p.numel() for p in compiled.parameters()))


def _ddp_buffers_across_pieces(rank):
    """BatchNorm running statistics (buffers mutated in the graph) updated piece after piece."""
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    from torch.nn.parallel import DistributedDataParallel as DDP
    bytegraph.reset()
    torch.manual_seed(0)
    eager, inner = [nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU()) for _ in range(3)))
                    for _ in range(2)]
    inner.load_state_dict(eager.state_dict())
    ddp_eager, ddp = DDP(eager, bucket_cap_mb=1e-4), DDP(inner, bucket_cap_mb=1e-4)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(ddp, backend=counter)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(STEPS):
        x = torch.randn(4, 8, generator=gen)
        for net in (ddp_eager, compiled):
            net(x).pow(2).mean().backward()
    compiled_state = inner.state_dict()
    return dict(pieces=counter.frame_count, state=[(k, v, compiled_state[k]) for k, v in eager.state_dict().items()],
                grads=[(a.grad, b.grad) for a, b in zip(eager.parameters(), inner.parameters())])


def _recompile_on_new_length(rank):
    """Same shapes on every rank, then a new sequence length: every rank recompiles, for the same
    reason; the recompiled (symbolic) graph is compiled whole."""
    import bytegraph
    from bytegraph.testing import CompileCounter
    from torch.nn.parallel import DistributedDataParallel as DDP
    bytegraph.reset()
    eager, inner = _twin_models()
    ddp_eager, ddp = DDP(eager, bucket_cap_mb=BUCKET_CAP_MB), DDP(inner, bucket_cap_mb=BUCKET_CAP_MB)
    counter = CompileCounter()
    compiled = bytegraph.compile(ddp, backend=counter)
    losses = []
    for seq in (6, 6, 9, 7):
        losses.append(_train_side_by_side(ddp_eager, compiled, list(ddp_eager.parameters()),
                                          list(ddp.parameters()), rank, seq=seq)[0])
    return dict(losses=losses, recompile_reasons=bytegraph.stats.recompile_reasons,
                splits=[split.not_split for _, split in bytegraph.stats.ddp_splits], pieces=counter.frame_count)


def _collective_in_compiled_code(rank):
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend
    from torch.nn.parallel import DistributedDataParallel as DDP
    bytegraph.reset()

    def fn(x):
        y = x * 2
        dist.all_reduce(y)
        return y + 1

    counter = CompileCounterWithBackend("aot_eager")
    x = torch.full((3,), float(rank + 1))
    collective = dict(compiled=bytegraph.compile(fn, backend=counter)(x.clone()), eager=fn(x.clone()),
                      graphs=counter.frame_count, breaks=dict(bytegraph.stats.graph_breaks))

    bytegraph.reset()
    torch.manual_seed(0)
    ddp = DDP(nn.Linear(3, 3))

    def train_step(x):            # calls the DDP module: DDP's forward runs as torch's code
        return ddp(x * 2).sum()

    counter = CompileCounterWithBackend("aot_eager")
    loss = bytegraph.compile(train_step, backend=counter)(x)
    loss.backward()
    compiled_grad = ddp.module.weight.grad.clone()
    ddp.zero_grad()
    train_step(x).backward()
    wrapper = dict(loss=loss.item(), eager_loss=train_step(x).item(), grad=compiled_grad,
                   eager_grad=ddp.module.weight.grad, graphs=counter.frame_count,
                   breaks=dict(bytegraph.stats.graph_breaks),
                   splits=[split.not_split for _, split in bytegraph.stats.ddp_splits])
    return dict(collective=collective, wrapper=wrapper)


SCENARIOS = {
    "ddp_aot_eager": lambda rank: _ddp(rank, "aot_eager", optimize_ddp=True),
    "ddp_aot_eager_unsplit": lambda rank: _ddp(rank, "aot_eager", optimize_ddp=False),
    "ddp_inductor": lambda rank: _ddp(rank, "inductor", optimize_ddp=True),
    "fsdp_aot_eager": lambda rank: _fsdp(rank, "aot_eager"),
    "fsdp_inductor": lambda rank: _fsdp(rank, "inductor"),
    "ddp_buffers": _ddp_buffers_across_pieces,
    "recompile": _recompile_on_new_length,
    "collective": _collective_in_compiled_code,
}


def _worker(rank, port, out_dir):
    import warnings

    import bytegraph
    bytegraph.config.strict = True      # as in the parent's tests: an internal error fails, never hides
    warnings.filterwarnings("ignore", message=".*FSDP2-wrapped module.*returned a view")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        results = {name: scenario(rank) for name, scenario in SCENARIOS.items()}
    finally:
        dist.destroy_process_group()
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    import torch.multiprocessing as mp
    out_dir = str(tmp_path_factory.mktemp("distributed"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_worker, args=(port, out_dir), nprocs=WORLD, join=True)
    return [torch.load(os.path.join(out_dir, f"rank{r}.pt"), weights_only=False) for r in range(WORLD)]


def _assert_trains_like_eager(result, exact):
    tol = dict(rtol=0, atol=0) if exact else dict(rtol=1e-5, atol=1e-5)
    for eager_loss, compiled_loss in result["losses"]:
        torch.testing.assert_close(compiled_loss, eager_loss, **tol)
    assert max(result["diffs"]) <= tol["atol"], result["diffs"]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_ddp_trains_like_ddp_in_bucket_pieces(ranks, backend):
    for rank in ranks:
        result = rank[f"ddp_{backend}"]
        _assert_trains_like_eager(result, exact=backend == "aot_eager")
        assert result["frontend_graphs"] == 1 and result["breaks"] == {} and result["recompiles"] == 0
        [(name, not_split, buckets)] = result["splits"]
        assert name == "forward" and not_split == ""
        assert result["pieces"] == len(buckets) >= 3             # one compiled piece per bucket
        # every parameter DDP all-reduces is in exactly one bucket; the last ones used come first
        assert sorted(p for b in buckets for p in b) == sorted(result["params"])
        assert "head.weight" in buckets[-1] and "emb.weight" in buckets[0]
    # every rank split the same graph at the same places
    assert ranks[0][f"ddp_{backend}"]["splits"] == ranks[1][f"ddp_{backend}"]["splits"]
    assert ranks[0][f"ddp_{backend}"]["piece_code"] == ranks[1][f"ddp_{backend}"]["piece_code"]
    # the ranks saw different data, and DDP averaged their gradients: same parameters, other losses
    assert ranks[0][f"ddp_{backend}"]["losses"] != ranks[1][f"ddp_{backend}"]["losses"]


def test_ddp_split_can_be_turned_off(ranks):
    for rank in ranks:
        result = rank["ddp_aot_eager_unsplit"]
        _assert_trains_like_eager(result, exact=True)
        assert result["frontend_graphs"] == 1 and result["pieces"] == 1 and result["splits"] == []
    assert ranks[0]["ddp_aot_eager_unsplit"]["piece_code"] == ranks[1]["ddp_aot_eager_unsplit"]["piece_code"]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_fsdp2_trains_like_fsdp2(ranks, backend):
    for rank in ranks:
        result = rank[f"fsdp_{backend}"]
        _assert_trains_like_eager(result, exact=backend == "aot_eager")
        # parameters stay sharded by FSDP (each rank holds its half)
        assert result["shard_numel"] * WORLD >= result["full_numel"] > result["shard_numel"]
        # the root's forward breaks at each sharded block (FSDP's hooks run eagerly); each block's
        # forward is its own graph: embedding, block, block, head
        assert result["graphs"] == 2 + BLOCKS
        assert result["graph_ops"][1] == result["graph_ops"][2] > result["graph_ops"][0]
        assert result["breaks"] == {"module FSDPBlock belongs to torch.distributed and runs as its own code": BLOCKS}
    assert ranks[0][f"fsdp_{backend}"]["graph_ops"] == ranks[1][f"fsdp_{backend}"]["graph_ops"]
    assert ranks[0][f"fsdp_{backend}"]["recompile_reasons"] == ranks[1][f"fsdp_{backend}"]["recompile_reasons"]


def test_ddp_pieces_update_buffers_in_order(ranks):
    for rank in ranks:
        result = rank["ddp_buffers"]
        assert result["pieces"] == 3
        assert any(name.endswith("running_mean") for name, _, _ in result["state"])
        for name, eager_value, compiled_value in result["state"]:
            torch.testing.assert_close(compiled_value, eager_value, rtol=0, atol=0, msg=name)
        for eager_grad, compiled_grad in result["grads"]:
            torch.testing.assert_close(compiled_grad, eager_grad, rtol=0, atol=0)


def test_every_rank_recompiles_alike(ranks):
    for rank in ranks:
        result = rank["recompile"]
        for steps in result["losses"]:
            for eager_loss, compiled_loss in steps:
                assert compiled_loss == eager_loss
        # length 6, then 9 (automatic dynamic: compiled whole, symbolic sizes), then 7 reuses it
        assert result["splits"] == ["", "symbolic sizes"]
        assert len(result["recompile_reasons"]) == 1
    assert ranks[0]["recompile"]["recompile_reasons"] == ranks[1]["recompile"]["recompile_reasons"]
    assert "now symbolic" in ranks[0]["recompile"]["recompile_reasons"][0][1]


def test_collective_in_compiled_code_runs_as_torch_distributed(ranks):
    for rank in ranks:
        result = rank["collective"]["collective"]
        torch.testing.assert_close(result["compiled"], result["eager"], rtol=0, atol=0)
        torch.testing.assert_close(result["compiled"], torch.full((3,), 7.0))   # 2*1 + 2*2, + 1
        assert result["graphs"] == 2       # before and after the all_reduce
        assert result["breaks"] == {"function all_reduce belongs to torch.distributed and runs as its own code": 1}


def test_ddp_module_called_from_compiled_code(ranks):
    for rank in ranks:
        result = rank["collective"]["wrapper"]
        assert result["loss"] == result["eager_loss"]
        torch.testing.assert_close(result["grad"], result["eager_grad"], rtol=0, atol=0)
        # x * 2 | DDP's forward (eager) -> the Linear's forward, its own frame | .sum()
        assert result["graphs"] == 3 and result["splits"] == ["one bucket"]
        assert result["breaks"] == {
            "module DistributedDataParallel belongs to torch.distributed and runs as its own code": 1}
