"""Exceptions the interpreter uses as control flow between handlers, trackers and translators.

Compile time only. None of them is an error: each carries a traced value to where it is handled.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .variables.misc import ExceptionVariable

class UserException(Exception):
    """An exception raised by the traced program, as a tracker."""

    def __init__(self, exc_var: ExceptionVariable):
        super().__init__(exc_var.cls.__name__)
        self.exc_var = exc_var


class ReturnValue(Exception):
    """A frame returned `value` (an InliningTranslator's result, the root frame's end)."""

    def __init__(self, value):
        self.value = value


class GeneratorYield(ReturnValue):
    """A traced generator body reached `yield` (its translator pauses; see GeneratorVariable)."""


def raised_by_user(exc, exc_type) -> bool:
    """Whether `exc`, caught while tracing, is the program's own exception of `exc_type`: a real
    one raised by a tracker (`obj.missing`), or one raised by traced user code (`raise
    AttributeError(name)` in a `__getattr__`), which the translator carries as a UserException."""
    if isinstance(exc, UserException):
        return issubclass(exc.exc_var.cls, exc_type)
    return isinstance(exc, exc_type)
