"""Random ops traced so that a compiled graph draws the random numbers eager draws, in the same order.

Dropout: eager's CPU `aten.dropout` fills a float noise tensor with `bernoulli_` (nothing drawn for
p = 0 or 1). Traced with dynamic shapes, the Python dispatcher decomposes `aten.dropout` into
`native_dropout` instead (a bool mask: other random numbers, and draws for p = 1), and AOTAutograd's
decompositions do the same. So a graph's dropout calls are rewritten, before tracing, into eager's
computation (`eager_dropout`).
"""
from __future__ import annotations

import torch
import torch.fx


def _dropout_as_on_cpu(x, p=0.5, train=True, inplace=False):
    """Dropout as eager's CPU kernel computes it (other devices, and in-place dropout, unchanged)."""
    if inplace or x.device.type != "cpu":
        return torch.nn.functional.dropout(x, p, train, inplace)
    if not train or p == 0 or x.numel() == 0:
        return x
    if p == 1:
        return x * x.new_zeros(())
    noise = torch.empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise


_DROPOUT_PARAMS = {torch.nn.functional.dropout: ("input", "p", "training", "inplace"),
                   torch.dropout: ("input", "p", "train")}


def eager_dropout(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm`, or a copy whose dropout calls (with constant arguments) trace as eager draws its random
    numbers (`_dropout_as_on_cpu`)."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _DROPOUT_PARAMS]
    if not calls:
        return gm
    graph = torch.fx.Graph()
    env: dict = {}
    graph.output(graph.graph_copy(gm.graph, env))
    for old in calls:
        bound = dict(zip(_DROPOUT_PARAMS[old.target], old.args), **old.kwargs)
        params = (bound.get("p", 0.5), bound.get("training", bound.get("train", True)), bound.get("inplace", False))
        if not any(isinstance(v, torch.fx.Node) for v in params):
            new = env[old]
            new.target, new.args, new.kwargs = _dropout_as_on_cpu, (env[bound["input"]], *params), {}
    return torch.fx.GraphModule(gm, graph)
