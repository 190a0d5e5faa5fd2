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

import dataclasses
import re
import sys

import _warnings

from ...guards.guard import Guard
from ...guards.source import ConstSource, ReaderSource
from ..graph_break import Unsupported
from .base import VariableTracker
from .constant import const


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
    refuse_in_catch_warnings(tx, why)
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


# -- `with warnings.catch_warnings():` -------------------------------------------------------------
#
# Entering and leaving the block with nothing warned, read or changed in the `warnings` module
# between leaves the filters, `showwarning` and `_showwarnmsg_impl` as they were (the very objects)
# and moves the filters' version twice (`_filters_mutated`: registries of warnings already shown
# are reset at their next use). So the trace holds the block as a block with no effect and has the
# real one entered and left after the graph, where its effects are eager's. Inside the block, any
# use of the `warnings` module (its attributes, its Python functions, a warning issued) is a graph
# break, as is a manager made with arguments (a filter set on entry, records kept: `record=True`).
# The graph's own ops warn (if they do) under the same filters as inside the block.

_OPEN = ("catch_warnings", "open")     # side-effects key: how many modelled blocks are open


def _warnings_module():
    return sys.modules.get("warnings")


def catch_warnings_open(tx) -> bool:
    return bool(tx.output.side_effects.contents.get(_OPEN))


def refuse_in_catch_warnings(tx, what: str) -> None:
    """Break at `what` (a use of the warnings machinery) inside a modelled catch_warnings block."""
    if catch_warnings_open(tx):
        raise Unsupported("unsupported_call", fn=what, detail=" (inside a `with warnings.catch_warnings()` block)")


def is_warnings_state(value) -> bool:
    """The `warnings` module or its namespace (the globals of its Python functions)."""
    module = _warnings_module()
    return module is not None and (value is module or value is getattr(module, "__dict__", None))


def _replay_block(module):
    """Eager's enter and exit of `catch_warnings()` (made with no arguments), with nothing in between."""
    with module.catch_warnings():
        pass


def _enter_real_block(module):
    """A real `catch_warnings()` entered now (a break inside a traced block): its bound `__exit__`,
    which the rest of the frame calls where eager leaves the block."""
    manager = module.catch_warnings()
    manager.__enter__()
    return manager.__exit__


@dataclasses.dataclass(frozen=True, eq=False)
class CatchWarningsVariable(VariableTracker):
    """`warnings.catch_warnings()` with no arguments, not entered yet (see above)."""
    module: object = None       # sys.modules['warnings'] when made (guarded)

    def python_type(self):
        return self.module.catch_warnings

    def describe(self):
        return "warnings.catch_warnings()"

    def var_getattr(self, tx, name):
        raise Unsupported("unsupported_attr", name=name, obj=self.describe())

    def enter(self, tx):
        """`with` on the manager: (exit tracker, the value `as` binds: None)."""
        effects = tx.output.side_effects
        if effects.contents.get(("catch_warnings", self)) is not None or _pending_filter_change(tx, self.module):
            # entered twice (eager raises RuntimeError), or a change to the filters is held back
            raise Unsupported("context_manager", what=f"`with` on {self.describe()} here")
        effects.track(("catch_warnings", self), "entered")
        effects.track(_OPEN, effects.contents.get(_OPEN, 0) + 1)
        return CatchWarningsExitVariable(manager=self), const(None)


@dataclasses.dataclass(frozen=True, eq=False)
class CatchWarningsExitVariable(VariableTracker):
    """The bound `__exit__` of an entered CatchWarningsVariable."""
    manager: CatchWarningsVariable = None
    enters_when_rebuilt = True      # (see break_codegen.store_values)

    def describe(self):
        return "warnings.catch_warnings().__exit__"

    def call_function(self, tx, args, kwargs):
        effects = tx.output.side_effects
        if effects.contents.get(("catch_warnings", self.manager)) != "entered" or \
                _pending_filter_change(tx, self.manager.module):
            raise Unsupported("context_manager", what=f"leaving {self.manager.describe()} here")
        effects.track(("catch_warnings", self.manager), "exited")
        effects.track(_OPEN, effects.contents[_OPEN] - 1)
        module = self.manager.module
        effects.call_after(lambda: _replay_block(module))
        return const(None)      # (an exception leaving the block goes on)

    def reconstruct(self, codegen):
        # a break inside the block: the real block is entered there, before the replay of what the
        # trace holds back (refused if that holds calls to the warnings machinery, run then in the block)
        effects = codegen.tx.output.side_effects
        if effects.calls or _pending_filter_change(codegen.tx, self.manager.module):
            raise Unsupported("unrebuildable", what=f"entering {self.manager.describe()} at a graph break")
        codegen.load_callable(_enter_real_block)
        codegen.load_const(self.manager.module)
        codegen.call(1)


def make_catch_warnings(tx, args, kwargs):
    """`warnings.catch_warnings(...)`: a CatchWarningsVariable for a call with no arguments (or ones
    saying so: record=False, module=None, action=None); None for any other call (traced as Python)."""
    module = _warnings_module()
    if module is None or args or set(kwargs) - {"record", "module", "action"}:
        return None
    if any(not v.is_python_constant() for v in kwargs.values()):
        return None
    values = {k: v.as_python_constant() for k, v in kwargs.items()}
    if values.get("record", False) is not False or values.get("module") is not None or \
            values.get("action") is not None:
        return None
    # eager's __init__ reads sys.modules['warnings'] now
    tx.output.guards.add(Guard.id_match(ReaderSource(ConstSource(_warnings_module)), module))
    return CatchWarningsVariable(module=module)
