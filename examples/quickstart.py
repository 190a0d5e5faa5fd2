"""Quick start: compile a function and a module, check them against eager, and see what was captured."""
import torch

import bytegraph
from bytegraph.testing import CompileCounter


def gelu_mlp(x, w1, w2):
    h = torch.nn.functional.gelu(x @ w1)
    return (h @ w2).softmax(dim=-1)


class Block(torch.nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def main():
    torch.manual_seed(0)
    counter = CompileCounter()
    opt_fn = bytegraph.compile(gelu_mlp, backend=counter)
    x, w1, w2 = torch.randn(4, 8), torch.randn(8, 32), torch.randn(32, 8)
    same = torch.allclose(opt_fn(x, w1, w2), gelu_mlp(x, w1, w2))
    print(f"function: matches eager = {same}; graphs = {counter.frame_count}, ops = {counter.op_count}")
    print(counter.graphs[0].code.strip())

    counter.clear()
    block = Block()
    opt_block = bytegraph.compile(block, backend=counter)
    inp = torch.randn(2, 5, 16)
    same = torch.allclose(opt_block(inp), block(inp), atol=1e-6)
    print(f"\nmodule: matches eager = {same}; graphs = {counter.frame_count}, ops = {counter.op_count}")
    print(counter.graphs[0].code.strip())

    opt_block(torch.randn(2, 5, 16))
    print(f"\nsecond call with the same shapes: graphs = {counter.frame_count} (no recompile)")
    opt_block(torch.randn(3, 5, 16))
    print(f"a new batch size: graphs = {counter.frame_count} (one recompile, with the batch size symbolic)")
    opt_block(torch.randn(7, 5, 16))
    print(f"another batch size: graphs = {counter.frame_count} (no recompile: automatic dynamic shapes)")

    report = bytegraph.explain(gelu_mlp)(x, w1, w2)
    print(f"\nexplain: {report.graph_count} graph(s), {report.graph_break_count} graph break(s)")


if __name__ == "__main__":
    main()
