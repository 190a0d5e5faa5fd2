"""A warning that traced code issues (`warnings.warn(message, category, stacklevel)` of a frame the
trace holds), when the program's filters ignore it. Compile time only.

An ignored warning shows nothing and raises nothing: its one effect is on the warning registry of the
module whose line it names (`__warningregistry__`, made if absent and reset when the filters changed
since). The transformed code has the real machinery do exactly that, after the graph and before the
write-back (which may change the filters: a later `warnings.filters.insert(...)`), with the arguments
eager's call computes (`warnings.warn_explicit`, side_effects.SideEffects.calls). Which
action the filters give is decided while tracing, as CPython's `warnings` module decides it, and
guarded (the filters, the default action). A warning they do not ignore (shown, recorded, raised) is
a graph break: its place among the program's other output is eager's only when issued there.
"""
from __future__ import annotations

import re
import sys

import _warnings

from ...guards.guard import Guard
from ...guards.source import ConstSource, ReaderSource
from ..graph_break import Unsupported


def filters_state():
    """What decides a warning's action: the filters and the default action, as the `warnings` module
    holds them (the C machinery reads them from there)."""
    module = sys.modules.get("warnings")
    if module is None:
        return None
    return tuple(module.filters), module.defaultaction


def _action(message: str, category: type, module: str, lineno: int):
    """The action CPython's filter search gives (`_warnings.c` get_filter)."""
    filters, default = filters_state()
    for item in filters:
        if not isinstance(item, tuple) or len(item) != 5:
            return None
        action, text, cat, mod, ln = item
        if type(cat) is not type:
            return None     # (a metaclass may answer issubclass in code of its own)
        if _matches(text, message) and issubclass(category, cat) and \
                _matches(mod, module) and isinstance(ln, int) and (ln == 0 or ln == lineno):
            return action
    return default


def _matches(pattern, value) -> bool:
    if pattern is None:
        return True
    if type(pattern) is str:
        return pattern == value
    if type(pattern) is not re.Pattern:
        raise TypeError("a filter of the program's own kind")   # (its `match` is user code)
    return bool(pattern.match(value))


def issue_ignored_warning(tx, message: str, category: type, why: str) -> None:
    """`warnings.warn(message, category)` as issued by the frame `tx` runs (its line now): replayed
    after the graph when the filters ignore it, else a graph break (`why` names the call)."""
    out = tx.output
    module = tx.f_globals.get("__name__")
    lineno = tx.current.lineno if tx.current is not None else tx.code.co_firstlineno
    warnings_module = sys.modules.get("warnings")
    f_globals = tx.f_globals
    if warnings_module is None or type(module) is not str or not _registry_usable(f_globals) or \
            _pending_filter_change(tx, warnings_module):
        raise Unsupported("unsupported_call", fn=why, detail=" (it issues a warning)")
    try:
        action = _action(message, category, module, lineno)
    except Exception:   # noqa: BLE001 - a filter of the program's that matches in its own way
        action = None
    if action != "ignore":
        raise Unsupported("unsupported_call", fn=why, detail=f" (it issues a warning the filters do not ignore: "
                                                             f"{action})")
    out.guards.add(Guard.constant(ReaderSource(ConstSource(filters_state)), filters_state()))
    # (a registry of another kind makes eager's call raise TypeError)
    out.guards.add(Guard.constant(ReaderSource(ConstSource(lambda: _registry_usable(f_globals))), True))
    filename = tx.code.co_filename

    def registry_effect():
        # eager's call makes the registry when the module has none (one set to None stays: no registry)
        if "__warningregistry__" not in f_globals:
            f_globals["__warningregistry__"] = {}
        _warnings.warn_explicit(message, category, filename, lineno, module, f_globals["__warningregistry__"])
    out.side_effects.call_after(registry_effect)


def _registry_usable(f_globals) -> bool:
    """Whether the module's warning registry is absent, None or a dict (what `warnings.warn` accepts)."""
    registry = f_globals.get("__warningregistry__")
    return registry is None or type(registry) is dict


def _pending_filter_change(tx, warnings_module) -> bool:
    """Whether the trace holds back a change to the filters or the `warnings` module (which the filters
    read here would then not show), or to a module's warning registry (a global the replay, run before
    the write-back, would not see)."""
    out = tx.output
    effects = out.side_effects
    if "__warningregistry__" in effects.globals or "__warningregistry__" in effects.deleted_globals:
        return True
    real_of = {id(tracker): real for real, tracker in out.wrapped_objects.values()}
    return any(real_of.get(id(var)) is warnings_module.filters or real_of.get(id(var)) is warnings_module or
               getattr(var, "value", None) is warnings_module for var in out.side_effects.mutated)
