"""Graph-break reasons as data: a registry of break kinds and the exception that carries one.

Compile time only. Code that cannot trace something raises `Unsupported(kind, **context)`; the
translator turns it into a graph break (or, with fullgraph=True, a `GraphBreakError` for the user).
"""
from __future__ import annotations

import dataclasses
import sys
import traceback
import types


@dataclasses.dataclass(frozen=True)
class BreakKind:
    name: str
    explanation: str  # a format string over the context
    hint: str
    resumable: bool = True   # False: the whole frame runs eagerly instead of breaking around the construct


_KINDS: dict[str, BreakKind] = {}


def register(name: str, explanation: str, hint: str, resumable: bool = True) -> BreakKind:
    kind = BreakKind(name, explanation, hint, resumable)
    _KINDS[name] = kind
    return kind


def kinds() -> dict[str, BreakKind]:
    return dict(_KINDS)


_REWRITE = "rewrite the construct, or move it into a function wrapped in `bytegraph.disable`"

# the bytecode interpreter
register("unsupported_opcode", "no handler for opcode {opname}", _REWRITE)
register("deliberate_opcode", "{opname} ({reason}) is not supported",
         "run this code outside the compiled function, e.g. in a function wrapped in `bytegraph.disable`")
register("unsupported_syntax", "{what} is not supported", _REWRITE)
register("instruction_budget", "{what} is not supported",
         "raise `bytegraph.config.max_instructions`, or move the long loop into a function wrapped in "
         "`bytegraph.disable`")
# (not resumable: a resume function would trace the same pure-Python work again)
register("no_tensor_work", "{what}",
         "the frame runs as written; raise `bytegraph.config.max_instructions_without_tensors` if it does "
         "reach tensor work later", resumable=False)
register("too_deep", "inlining depth exceeded at {fn}", "avoid deep recursion in compiled code")
register("break_in_resume_prologue", "{what} is not supported",
         "the rest of the frame runs eagerly; move the construct away from the start of a `with` block")
register("internal_error", "{what} is not supported",
         "bytegraph could not model this and runs the frame eagerly; please report it with the code")
# calls, attributes and Python's protocols
register("unsupported_call", "call to {fn} is not traceable{detail}",
         "wrap the callee in `bytegraph.disable`, or move the call out of the compiled function")
register("skipped_function", "{fn} is marked to run eagerly (bytegraph.disable or a skipped file)",
         "this is expected; the graph continues after the call")
register("distributed", "{fn} belongs to torch.distributed and runs as its own code",
         "this is expected: collectives and DDP/FSDP wrappers run eagerly; the module a wrapper runs is "
         "compiled as its own frame, and the graph continues after the call")
register("unsupported_builtin", "{what} is not supported", "call the builtin outside the compiled function")
register("unsupported_attr", "attribute {name!r} of {obj} cannot be traced",
         "access the attribute outside the compiled function")
register("python_protocol", "{what} is not supported",
         "this use of the object's class (a dunder, iteration, truth value) is not modelled; "
         "move it outside the compiled function")
register("context_manager", "{what} is not supported",
         "enter the context manager outside the compiled function, or wrap its body in a function")
register("non_constant_value", "{what} is not supported",
         "the value must be a constant here (keys, classes, sort keys); keep it a plain Python value")
register("endless_iterator", "{what} is not supported", "bound the iteration (e.g. with `zip` or `itertools.islice`)")
register("mutated_while_iterating", "{what} is not supported", "do not change a container while iterating it")
register("user_graph_break", "{fn}() was called{msg}",
         "this is a graph break the program asked for; remove the call to capture one graph")
register("generator", "generator {fn} cannot be consumed here",
         "consume the generator with a list comprehension, or accept the graph break")
register("generator_cleanup", "{what} is not supported",
         "exhaust or close the generator before the point shown, or avoid `finally` in it")
# (not resumable: transformed code and resume functions hold references a plain frame does not, so
# the object would die, and finalize, later than in CPython)
register("finalizer", "{what} is not supported",
         "this is expected: a frame where an object whose death runs code (its class's `__del__`, a "
         "weak reference's callback such as weakref.finalize's) is made or dropped runs eagerly, so the "
         "object dies (and that code runs) when CPython says", resumable=False)
# (not resumable: a resume function would hold the same graph)
register("unrestorable_raise", "{what} is not supported",
         "the frame runs eagerly; with backend \"aot_eager\" or \"inductor\" it compiles", resumable=False)
register("user_exception", "exception {exc} raised in traced code is not handled there",
         "the exception is raised by running that part of the code eagerly")
# side effects and values the transformed code must rebuild
register("attribute_write", "{what} is not supported", "set the attribute outside the compiled function")
register("untracked_mutation", "{what} is not supported",
         "change the value outside the compiled function, or pass it in as an argument")
register("unrebuildable", "{what} is not supported",
         "return or keep plain values (tensors, numbers, containers, existing objects) across the graph break")
# tensors, shapes, torch and numpy
register("impure_backward", "{what}",
         "the Function runs eagerly, so its backward runs as eager runs it; to capture it, make the backward "
         "a pure function of ctx.saved_tensors, the gradients' values and ctx attributes set by the forward "
         "(or use backend=\"eager\", which runs the real backward)")
register("data_dependent", "{what} depends on the value of a tensor",
         "set `bytegraph.config.capture_scalar_outputs = True` for `.item()`, or keep the value a tensor")
register("tensor_branch", "control flow depends on a tensor value ({what})",
         "use `torch.where` instead of `if` on tensor values, or accept the graph break")
register("torch_value", "{what} is not supported",
         "pass and return tensors, numbers and containers of them to and from torch functions")
register("unguardable_shape", "{what} is not supported", "mark the dimension static, or use `dynamic=False`")
register("lazy_module", "{what} is not supported", "run the lazy module once before compiling it")
register("non_strided_tensor", "{what} is not supported (sparse and other layouts run eagerly)",
         "convert it with `.to_dense()` outside the compiled function, or leave that code uncompiled")
register("module_hooks", "{what} is not supported", "remove the hook while compiling")
register("numpy", "{what} is not supported",
         "use torch operations, or move the numpy code into a function wrapped in `bytegraph.disable`")
register("io", "{fn} performs I/O",
         "remove the print/logging call from the compiled region, or accept the graph break")


class Unsupported(Exception):
    """Raised while tracing when an instruction cannot be captured; becomes a graph break."""

    def __init__(self, kind: str, **context):
        self.kind = _KINDS[kind]
        self.context = context
        self.user_stack: list[traceback.FrameSummary] = []
        self.guards: list = []
        super().__init__(self.message())

    def depending_on(self, guard) -> "Unsupported":
        """This break is decided by a fact that may change (`guard`, None for none): the graph that
        ends at the break keeps the guard, so a call where the fact changed compiles anew."""
        if guard is not None:
            self.guards.append(guard)
        return self

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
    what the program itself would raise. The trace rebuilds that exception from its class and
    arguments; one that carries more (a cause or context set inside the call, as `raise X` in an
    `except` block of Python code leaves, attributes, keyword state) runs as Python instead."""
    outer = sys.exc_info()[1]
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - re-raised, marked as the program's
        if not _rebuilt_from_arguments(e, outer):
            raise Unsupported("python_protocol", what=f"{type(e).__name__} raised with more than its "
                                                      "arguments (a context, attributes) by a folded call") from None
        raise user_error(e) from None


def _rebuilt_from_arguments(e: BaseException, outer) -> bool:
    """Whether `type(e)(*e.args)`, chained to the exception being handled (`outer`), is `e` again."""
    if e.__cause__ is not None or e.__context__ is not outer:
        return False
    for klass in type(e).__mro__:   # a Python constructor may do anything with the arguments
        if klass.__module__ == "builtins":
            break
        if any(isinstance(vars(klass).get(n), (types.FunctionType, staticmethod, classmethod))
               for n in ("__init__", "__new__")):
            return False
    try:
        again = type(e)(*e.args)
    except Exception:  # noqa: BLE001 - not rebuildable from its arguments
        return False
    return type(again) is type(e) and _state(again) == _state(e)


def _state(e: BaseException) -> tuple:
    """What pickling an exception keeps: its arguments, and its attributes (`__notes__`) and keyword
    state (ImportError's `name`) when it has any."""
    state = e.__reduce__()[1:]
    return state[:1] if len(state) > 1 and not state[1] else state


class GraphBreakError(RuntimeError):
    """fullgraph=True and the code could not be captured in one graph."""


def format_user_stack(stack: list[traceback.FrameSummary]) -> str:
    return "".join(traceback.format_list(stack)).rstrip()
