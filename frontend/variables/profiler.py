"""`torch.profiler.record_function(name)` blocks (and decorators) while nothing observes them.

Compile time only. Entering one opens a profiler range: a profiler (or an NVTX/ITT emitter, which run
as one) records it, and the experimental CUPTI monitor takes it as a user annotation. When neither is
active, the range is seen by no one and the block only runs its body, so the trace treats it as a
block with no effect: whether they are inactive is guarded (a call made while profiling compiles
again and breaks at the block, which then runs as Python and is recorded as in eager)."""
from __future__ import annotations

import dataclasses

import torch

from ...guards.guard import Guard
from ...guards.source import ConstSource, ReaderSource
from ..graph_break import Unsupported
from .base import VariableTracker
from .constant import const
from .functions import context_as_decorator

record_function = torch.autograd.profiler.record_function


def range_observers() -> tuple:
    """(a profiler is enabled, a CUPTI monitor takes annotations): who would see a profiler range."""
    monitor = torch.autograd.profiler._maybe_cupti_monitor()
    return (bool(torch._C._autograd._profiler_enabled()),
            monitor is not None and getattr(monitor, "_monitor_singleton", None) is not None)


def _unobserved(tx) -> bool:
    observers = range_observers()
    tx.output.guards.add(Guard.constant(ReaderSource(ConstSource(range_observers)), observers))
    return observers == (False, False)


@dataclasses.dataclass(frozen=True, eq=False)
class RecordFunctionVariable(VariableTracker):
    """`record_function(name, args)`, made while nothing observes profiler ranges. `with` on it is
    a block with no effect (its `__enter__` gives the manager itself, which stays in the trace)."""
    name: str = ""
    args: object = None

    def python_type(self):
        return record_function

    def describe(self):
        return f"record_function({self.name!r})"

    def enter(self, tx):
        return self, self

    def exit(self, tx):
        return const(None)

    def call_function(self, tx, args, kwargs):
        return context_as_decorator(self, args, kwargs)

    def var_getattr(self, tx, name):
        # (`name`, `args`, the `record` handle, `__enter__`...: the trace holds no real manager)
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())


def _make_record_function(tx, args, kwargs):
    values = dict(zip(("name", "args"), args)) | kwargs
    if len(args) + len(kwargs) != len(values) or set(values) - {"name", "args"} or "name" not in values or \
            not all(v.is_python_constant() for v in values.values()):
        raise Unsupported("unsupported_call", fn="torch.profiler.record_function", detail=" with these arguments")
    name, range_args = values["name"].as_python_constant(), values.get("args", const(None)).as_python_constant()
    if type(name) is not str or range_args is not None and type(range_args) is not str:
        raise Unsupported("unsupported_call", fn="torch.profiler.record_function", detail=" with these arguments")
    if not _unobserved(tx):
        raise Unsupported("unsupported_call", fn="torch.profiler.record_function",
                          detail=" (a profiler or monitor records its range)")
    return RecordFunctionVariable(name=name, args=range_args)


FACTORIES = {record_function: _make_record_function}
