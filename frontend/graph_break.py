"""Graph-break reasons as data: a registry of break kinds and the exception that carries one.

Compile time only. Code that cannot trace something raises `Unsupported(kind, **context)`; the
translator turns it into a graph break (or, with fullgraph=True, a `GraphBreakError` for the user).
"""
from __future__ import annotations

import dataclasses
import traceback


@dataclasses.dataclass(frozen=True)
class BreakKind:
    name: str
    explanation: str  # a format string over the context
    hint: str


_KINDS: dict[str, BreakKind] = {}


def register(name: str, explanation: str, hint: str) -> BreakKind:
    kind = BreakKind(name, explanation, hint)
    _KINDS[name] = kind
    return kind


def kinds() -> dict[str, BreakKind]:
    return dict(_KINDS)


register("unsupported_opcode", "no handler for opcode {opname}",
         "rewrite the construct, or move it into a function wrapped in `bytegraph.disable`")
register("unsupported_call", "call to {fn} is not traceable{detail}",
         "wrap the callee in `bytegraph.disable`, or move the call out of the compiled function")
register("data_dependent", "{what} depends on the value of a tensor",
         "set `bytegraph.config.capture_scalar_outputs = True` for `.item()`, or keep the value a tensor")
register("tensor_branch", "control flow depends on a tensor value ({what})",
         "use `torch.where` instead of `if` on tensor values, or accept the graph break")
register("io", "{fn} performs I/O",
         "remove the print/logging call from the compiled region, or accept the graph break")
register("unsupported_attr", "attribute {name!r} of {obj} cannot be traced",
         "access the attribute outside the compiled function")
register("unsupported_op", "{what} is not supported",
         "rewrite the construct, or move it into a function wrapped in `bytegraph.disable`")
register("skipped_function", "{fn} is marked to run eagerly (bytegraph.disable or a skipped file)",
         "this is expected; the graph continues after the call")
register("distributed", "{fn} belongs to torch.distributed and runs as its own code",
         "this is expected: collectives and DDP/FSDP wrappers run eagerly; the module a wrapper runs is "
         "compiled as its own frame, and the graph continues after the call")
register("user_exception", "exception {exc} raised in traced code is not handled there",
         "the exception is raised by running that part of the code eagerly")
register("inline_failed", "inlining {fn} failed: {detail}",
         "wrap the callee in `bytegraph.disable` or simplify it")
register("too_deep", "inlining depth exceeded at {fn}", "avoid deep recursion in compiled code")
register("generator", "generator {fn} cannot be consumed here",
         "consume the generator with a list comprehension, or accept the graph break")


class Unsupported(Exception):
    """Raised while tracing when an instruction cannot be captured; becomes a graph break."""

    def __init__(self, kind: str, **context):
        self.kind = _KINDS[kind]
        self.context = context
        self.user_stack: list[traceback.FrameSummary] = []
        super().__init__(self.message())

    def message(self) -> str:
        try:
            return self.kind.explanation.format(**self.context)
        except (KeyError, IndexError):
            return f"{self.kind.explanation} {self.context}"

    @property
    def reason(self) -> str:
        return self.message()


def user_error(exc: BaseException) -> BaseException:
    """Mark an exception raised on purpose while modelling Python semantics (a failed dict lookup,
    a bad call...): it is the traced program's own and may run the program's `except` blocks. Any
    other exception raised while tracing is never taken for the program's (see translator.run)."""
    exc.bytegraph_user_exception = True
    return exc


def fold(fn, *args, **kwargs):
    """Call `fn` on the program's own constant values (constant folding): whatever it raises is
    what the program itself would raise."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - re-raised, marked as the program's
        raise user_error(e) from None


class GraphBreakError(RuntimeError):
    """fullgraph=True and the code could not be captured in one graph."""


def format_user_stack(stack: list[traceback.FrameSummary]) -> str:
    return "".join(traceback.format_list(stack)).rstrip()
