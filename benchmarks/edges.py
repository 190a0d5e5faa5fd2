"""Edges where a compiler can turn a working program slow or leaky: per-call time of a frame past
`cache_size_limit` (its guards miss on every call), against plain Python and torch.compile; and
memory kept after 1,000 closures, each compiled on its own, have died.
"""
from __future__ import annotations

import gc
import logging
import os

import torch

import bytegraph


def _new_class_instance():
    class Fresh:    # a new class per object: every call misses the cache's type guards
        pass
    return Fresh()


def _add_one(x, obj):
    return x + 1


def _per_call_us(fn, calls) -> float:
    import time
    x = torch.ones(1)
    objs = [_new_class_instance() for _ in range(calls)]
    start = time.perf_counter()
    for obj in objs:
        fn(x, obj)
    return (time.perf_counter() - start) / calls * 1e6


def past_cache_limit(calls=2000) -> dict:
    import torch._dynamo  # the reference only
    logging.disable(logging.WARNING)   # the one "hit cache_size_limit" warning of each compiler
    try:
        torch._dynamo.reset()
        bytegraph.reset()
        impls = {"eager": _add_one, "bytegraph": bytegraph.compile(_add_one, backend="eager"),
                 "torch.compile": torch.compile(_add_one, backend="eager")}
        for impl in impls.values():   # compile up to the limit and past it
            _per_call_us(impl, 50)
        us = {k: _per_call_us(impl, calls) for k, impl in impls.items()}
    finally:
        logging.disable(logging.NOTSET)
    return {"case": "frame past cache_size_limit (a guard miss every call)", "eager_us": us["eager"],
            "bytegraph_us": us["bytegraph"], "torch_compile_us": us["torch.compile"],
            "bytegraph_ratio": us["bytegraph"] / us["eager"], "torch_compile_ratio": us["torch.compile"] / us["eager"]}


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _closure(i):
    w = torch.randn(64, 64)

    def g(x):
        return (x @ w).relu() + i
    return g


def dead_closures(n=1000) -> dict:
    bytegraph.reset()
    x = torch.randn(4, 64)
    bytegraph.compile(_closure(0))(x)   # warm up: imports, first-compile caches
    gc.collect()
    before = _rss_mb()
    for i in range(n):
        bytegraph.compile(_closure(i))(x)
    gc.collect()
    live = sum(1 for o in gc.get_objects() if isinstance(o, torch.fx.GraphModule))
    return {"case": f"{n} closures compiled one by one, then dead", "rss_growth_mb": _rss_mb() - before,
            "live_graph_modules": live}


def run(quick=False) -> list:
    return [past_cache_limit(500 if quick else 2000), dead_closures(200 if quick else 1000)]


def to_markdown(rows) -> str:
    speed, memory = rows
    return "\n".join([
        "| case | eager µs | bytegraph µs | torch.compile µs | bytegraph / eager | torch.compile / eager |",
        "|---|---|---|---|---|---|",
        f"| {speed['case']} | {speed['eager_us']:.1f} | {speed['bytegraph_us']:.1f} | {speed['torch_compile_us']:.1f} "
        f"| {speed['bytegraph_ratio']:.2f} | {speed['torch_compile_ratio']:.2f} |",
        "",
        "| case | RSS growth MB | live graph modules |",
        "|---|---|---|",
        f"| {memory['case']} | {memory['rss_growth_mb']:.0f} | {memory['live_graph_modules']} |",
    ])
