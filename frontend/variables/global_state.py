"""torch process state besides grad mode that the trace models as state of its own: whether saved-tensor
hooks are disabled (`torch.autograd.graph.disable_saved_tensors_hooks(message)`); and queries of
state it never changes, answered at compile time and guarded (the privateuse1 backend's name).

Compile time only. The state starts as the process's (read, and guarded, only when the trace needs it),
blocks of the program change it in the trace, and queries answer from it. No graph op reads it: it only
decides what traced code does (pushing saved-tensor hooks, as non-reentrant checkpointing does, raises
while they are disabled), so the graph needs no node for it. A graph break inside such a block
leaves it before the resume function and re-enters it there with the same message (break_codegen.py),
as for grad mode."""
from __future__ import annotations

import contextlib
import dataclasses

import torch

from ...guards.guard import Guard
from ...guards.source import ConstSource, ReaderSource
from ..graph_break import Unsupported
from .base import VariableTracker
from .constant import const
from .functions import context_as_decorator

_autograd = torch._C._autograd
_GET_MESSAGE = _autograd._saved_tensors_hooks_get_disabled_error_message
SAVED_HOOKS_AT_ENTRY = object()     # the trace has not changed the state: it is the process's at frame entry


def saved_hooks_message(tx):
    """The message saved-tensor hooks are disabled with at this point of the trace (None: enabled).
    The process's value at entry is guarded when first read."""
    out = tx.output
    if out.saved_hooks_message is SAVED_HOOKS_AT_ENTRY:
        message = _GET_MESSAGE()
        out.guards.add(Guard.constant(ReaderSource(ConstSource(_GET_MESSAGE)), message))
        return message
    return out.saved_hooks_message


@dataclasses.dataclass(frozen=True, eq=False)
class DisableSavedTensorsHooksVariable(VariableTracker):
    """`torch.autograd.graph.disable_saved_tensors_hooks(message)`: entering disables the hooks with
    `message`, leaving puts back the state found on entry (`previous`), as its generator does."""
    message: str = ""
    previous: object = SAVED_HOOKS_AT_ENTRY

    def python_type(self):
        return contextlib._GeneratorContextManager

    def describe(self):
        return f"disable_saved_tensors_hooks({self.message!r})"

    def enter(self, tx):
        entered = dataclasses.replace(self, previous=saved_hooks_message(tx))
        tx.output.saved_hooks_message = self.message
        return entered, const(None)

    def exit(self, tx):
        tx.output.saved_hooks_message = self.previous
        return const(None)

    def call_function(self, tx, args, kwargs):
        return context_as_decorator(self, args, kwargs)

    def var_getattr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            raise Unsupported("unsupported_builtin", what=f"{name} of {self.describe()} called directly")
        return super().var_getattr(tx, name)


def _disable_saved_tensors_hooks(tx, args, kwargs):
    message = args[0] if args else kwargs.get("error_message")
    if len(args) + len(kwargs) != 1 or message is None or not message.is_python_constant() or \
            type(message.as_python_constant()) is not str:
        raise Unsupported("unsupported_call", fn="torch.autograd.graph.disable_saved_tensors_hooks",
                          detail=" with these arguments")
    return DisableSavedTensorsHooksVariable(message=message.as_python_constant())


# what variables/torch.py adds to its tables: factories of the managers, queries answered from the
# trace, and changes it must not make in a graph
FACTORIES = {torch.autograd.graph.disable_saved_tensors_hooks: _disable_saved_tensors_hooks}
def _guarded_answer(fn):
    """A query of process state the trace never changes, answered now and guarded to stay so."""
    def answer(tx):
        value = fn()
        tx.output.guards.add(Guard.constant(ReaderSource(ConstSource(fn)), value))
        return const(value)
    return answer


QUERIES = {_GET_MESSAGE: lambda tx: const(saved_hooks_message(tx)),
           # (renamed once by `torch.utils.rename_privateuse1_backend`)
           torch._C._get_privateuse1_backend_name: _guarded_answer(torch._C._get_privateuse1_backend_name),
           _autograd._saved_tensors_hooks_is_enabled: lambda tx: const(saved_hooks_message(tx) is None)}
# changed directly, the process would need the change after the graph: not modelled
SETTERS = {_autograd._saved_tensors_hooks_disable, _autograd._saved_tensors_hooks_enable}
