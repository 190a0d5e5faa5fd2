"""Logging: `BYTEGRAPH_LOGS=graph,guards,bytecode,recompiles,graph_breaks,+frontend` chooses what is
shown, through stdlib logging under the `bytegraph.<component>` loggers. Under torch.distributed
every message says which rank wrote it (each process compiles on its own)."""
from __future__ import annotations

import logging
import reprlib
import sys

from .config import config


def short_repr(value) -> str:
    """A short repr for messages (an int longer than sys.get_int_max_str_digits() has none)."""
    try:
        return reprlib.repr(value)
    except ValueError:
        return f"<{type(value).__name__} of {value.bit_length()} bits>"


COMPONENTS = ("frontend", "graph", "graph_code", "guards", "bytecode", "recompiles", "graph_breaks", "backend",
              "aot_graphs", "ddp")
_configured = None


def _setup():
    global _configured
    if _configured == config.logs:
        return
    _configured = config.logs
    root = logging.getLogger("bytegraph")
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        root.addHandler(handler)
        root.propagate = False
    wanted = {c.strip() for c in config.logs.split(",") if c.strip()}
    for name in COMPONENTS:
        level = logging.WARNING
        if f"+{name}" in wanted:
            level = logging.DEBUG
        elif name in wanted:
            level = logging.INFO
        logging.getLogger(f"bytegraph.{name}").setLevel(level)


def rank_prefix() -> str:
    """"rank N: " in a process of an initialized torch.distributed job, else ""."""
    dist = sys.modules.get("torch.distributed")   # never imported just to ask
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return ""
    return f"rank {dist.get_rank()}: "


def log(component: str, msg: str, level: int = logging.INFO) -> None:
    _setup()
    logger = logging.getLogger(f"bytegraph.{component}")
    if logger.isEnabledFor(level):
        logger.log(level, rank_prefix() + msg)


def enabled(component: str, level: int = logging.INFO) -> bool:
    _setup()
    return logging.getLogger(f"bytegraph.{component}").isEnabledFor(level)
