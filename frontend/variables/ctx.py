"""Context managers in `with` blocks: torch grad-mode managers, the TorchFunctionModes the trace
models (function_mode.py) and user-defined ones (inlined `__enter__`/`__exit__`)."""
from __future__ import annotations

import dataclasses

from .. import reads
from ..graph_break import Unsupported, user_error
from .base import VariableTracker
from .constant import const
from .function_mode import FunctionModeVariable, modelled_mode
from .torch import AutocastVariable, GradModeVariable
from .user_defined import UserDefinedObjectVariable


@dataclasses.dataclass(frozen=True, eq=False)
class WithExitVariable(VariableTracker):
    """What BEFORE_WITH leaves on the stack: calling it exits the context."""
    ctx: VariableTracker = None

    def parts(self, tx):
        return (self.ctx,)

    def call_function(self, tx, args, kwargs):
        if isinstance(self.ctx, _TORCH_CONTEXTS):
            self.ctx.exit(tx)
            return const(False)
        return self.ctx.call_method(tx, "__exit__", list(args), kwargs)


_TORCH_CONTEXTS = (GradModeVariable, AutocastVariable, FunctionModeVariable)   # enter(tx) -> (entered, value); exit(tx)


def enter_context(tx, ctx):
    if isinstance(ctx, _TORCH_CONTEXTS):
        entered_ctx, value = ctx.enter(tx)
        return WithExitVariable(ctx=entered_ctx), value
    if isinstance(ctx, UserDefinedObjectVariable) and modelled_mode(tx, ctx):
        entered_ctx, value = FunctionModeVariable(mode=ctx).enter(tx)
        return WithExitVariable(ctx=entered_ctx), value
    if isinstance(ctx, UserDefinedObjectVariable):
        # BEFORE_WITH looks both methods up on the type before calling `__enter__`
        name = ctx.cls.__name__
        if reads.class_lookup(tx, ctx.cls, "__enter__", ctx.source)[0] is reads.MISSING:
            raise user_error(TypeError(f"'{name}' object does not support the context manager protocol"))
        if reads.class_lookup(tx, ctx.cls, "__exit__", ctx.source)[0] is reads.MISSING:
            raise user_error(TypeError(f"'{name}' object does not support the context manager protocol "
                                       "(missed __exit__ method)"))
        value = ctx.call_method(tx, "__enter__", [], {})
        return WithExitVariable(ctx=ctx), value
    raise Unsupported("context_manager", what=f"`with` on {ctx.describe()}")
