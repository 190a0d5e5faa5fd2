"""Context managers in `with` blocks: torch grad-mode managers, the TorchFunctionModes the trace
models (function_mode.py) and user-defined ones (inlined `__enter__`/`__exit__`)."""
from __future__ import annotations

import dataclasses
import types

from .. import reads
from ..graph_break import Unsupported, user_error
from .base import VariableTracker
from .constant import const
from .functions import BoundMethodVariable, UserFunctionVariable
from .function_mode import FunctionModeVariable, modelled_mode
from .global_state import DisableSavedTensorsHooksVariable
from .profiler import RecordFunctionVariable
from .torch import AutocastVariable, DisableTorchFunctionVariable, GradModeVariable, InferenceModeVariable
from .user_defined import UserDefinedObjectVariable
from .warning import CatchWarningsVariable


@dataclasses.dataclass(frozen=True, eq=False)
class WithExitVariable(VariableTracker):
    """What BEFORE_WITH leaves on the stack: calling it exits the context. For a user context manager,
    `exit_method` is the `__exit__` BEFORE_WITH bound (found on the type, as CPython's special lookup)."""
    ctx: VariableTracker = None
    exit_method: VariableTracker = None

    def parts(self, tx):
        return (self.ctx,) if self.exit_method is None else (self.ctx, self.exit_method)

    def call_function(self, tx, args, kwargs):
        if isinstance(self.ctx, _TORCH_CONTEXTS):
            self.ctx.exit(tx)
            return const(False)
        return self.exit_method.call_function(tx, list(args), kwargs)


# enter(tx) -> (entered, value); exit(tx)
_TORCH_CONTEXTS = (GradModeVariable, AutocastVariable, InferenceModeVariable, DisableTorchFunctionVariable,
                   FunctionModeVariable, DisableSavedTensorsHooksVariable, RecordFunctionVariable)


def enter_context(tx, ctx):
    if isinstance(ctx, _TORCH_CONTEXTS):
        entered_ctx, value = ctx.enter(tx)
        return WithExitVariable(ctx=entered_ctx), value
    if isinstance(ctx, CatchWarningsVariable):
        exit_method, value = ctx.enter(tx)
        return WithExitVariable(ctx=ctx, exit_method=exit_method), value
    if isinstance(ctx, UserDefinedObjectVariable) and modelled_mode(tx, ctx):
        entered_ctx, value = FunctionModeVariable(mode=ctx).enter(tx)
        return WithExitVariable(ctx=entered_ctx), value
    if isinstance(ctx, UserDefinedObjectVariable):
        # BEFORE_WITH looks both methods up on the type before calling `__enter__`
        # (never through the instance's `__getattribute__`), binding each: a descriptor other than a
        # plain function (its `__get__` runs then) is not modelled
        name = ctx.cls.__name__
        enter, enter_source = reads.class_lookup(tx, ctx.cls, "__enter__", ctx.source)
        if enter is reads.MISSING:
            raise user_error(TypeError(f"'{name}' object does not support the context manager protocol"))
        exit_, exit_source = reads.class_lookup(tx, ctx.cls, "__exit__", ctx.source)
        if exit_ is reads.MISSING:
            raise user_error(TypeError(f"'{name}' object does not support the context manager protocol "
                                       "(missed __exit__ method)"))
        if not (type(enter) is types.FunctionType and type(exit_) is types.FunctionType):
            raise Unsupported("context_manager", what=f"`with` on {ctx.describe()} (its __enter__ or __exit__ "
                                                      "is not a plain function)")
        exit_method = BoundMethodVariable(fn=UserFunctionVariable(fn=exit_, source=exit_source), self_var=ctx)
        # the bound __exit__ BEFORE_WITH holds keeps the manager alive while __enter__ runs: a
        # generator it holds (@contextmanager) must not look dead when __enter__'s frame returns
        tx.stack.append(exit_method)
        try:
            value = UserFunctionVariable(fn=enter, source=enter_source).call_function(tx, [ctx], {})
        finally:
            tx.stack.pop()
        return WithExitVariable(ctx=ctx, exit_method=exit_method), value
    raise Unsupported("context_manager", what=f"`with` on {ctx.describe()}")
