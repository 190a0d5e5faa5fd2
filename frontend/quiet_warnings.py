"""Warnings of code the compiler runs for itself (a stand-in computation, a dry run), kept from the
program's warning state. Compile time only.

`warnings.catch_warnings()` and `simplefilter` bump the filters' version, which resets every module's
warning registry: a warning eager showed once (the "default" action) would show again after a compile.
`filters_set_to(action)` instead puts one catch-all filter in place for a while and puts the program's
list back, which changes no version: the C machinery reads `warnings.filters` at each warning.
"""
from __future__ import annotations

import contextlib
import warnings


@contextlib.contextmanager
def filters_set_to(action: str):
    """Every warning issued inside gets `action` ("ignore", or "error": raised as an exception)."""
    saved = warnings.filters
    warnings.filters = [(action, None, Warning, None, 0)]
    try:
        yield
    finally:
        warnings.filters = saved
