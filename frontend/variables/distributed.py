"""torch.distributed seen from traced code: collectives, process-group queries and the wrappers
that communicate (DistributedDataParallel, FSDP's `fully_shard` modules) are never traced into and
never put in a graph; calling one is a graph break and it runs as torch.distributed's own code.

Why: a collective has effects on other processes that neither fake tensors nor AOTAutograd model
(an `all_reduce` recorded as a graph node is dropped by functionalization), and DDP's and FSDP's
hooks drive the reducer, all-gathers and reduce-scatters from eager code. The module those wrappers
run is compiled as its own frame: DDP's forward calls `self.module(...)` and FSDP's forward hooks
run around `forward`, so the frame hook sees the user's forward like any other call.
Compile time only.
"""
from __future__ import annotations

import dataclasses

import torch

from ...probe import static_getattr
from ..graph_break import Unsupported
from .functions import SkippedFunctionVariable

_DISTRIBUTED_MODULES = ("torch.distributed", "torch.nn.parallel", "torch._C._distributed")


def _from_distributed(obj) -> bool:
    module = static_getattr(obj, "__module__")   # reading it must run no user code
    return isinstance(module, str) and module.startswith(_DISTRIBUTED_MODULES)


def is_distributed_function(value) -> bool:
    """A function (or builtin) of torch.distributed: a collective, a process-group query, ...
    `is_available()` is not one: it answers how torch was built, and is folded (variables/torch.py)."""
    return callable(value) and not isinstance(value, type) and _from_distributed(value) and \
        value is not torch.distributed.is_available


def is_distributed_module(module: torch.nn.Module) -> bool:
    """DistributedDataParallel, FSDP, or a module `fully_shard` gave an FSDP class (FSDP2 swaps the
    instance's class for a subclass of FSDPModule and the user's class)."""
    return any(_from_distributed(cls) for cls in type(module).__mro__ if cls is not torch.nn.Module)


@dataclasses.dataclass(frozen=True, eq=False)
class DistributedFunctionVariable(SkippedFunctionVariable):
    def call_function(self, tx, args, kwargs):
        raise Unsupported("distributed", fn=self.describe())
