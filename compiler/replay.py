"""Record/replay of a frame whose conversion failed.

Compile time only. With `config.replay_record_enabled` (`BYTEGRAPH_REPLAY_RECORD=1`), a conversion
failure (an internal error of bytegraph, or a backend failure) writes `replay.bgrec` into the frame's
debug folder: the code object (marshal), the frame's arguments, the closure cells and the globals the
code reads (each pickled on its own; modules by name; what cannot be pickled is listed as missing),
the backend (by reference, when it has one) and the error. `bytegraph.debug.replay(path)` rebuilds
the function from the record and compiles it again, in isolation from the program that failed.
"""
from __future__ import annotations

import builtins
import dataclasses
import logging
import marshal
import os
import pickle
import sys
import traceback
import types

from .debug_dir import FrameDir
from .scripts import backend_reference

RECORD_VERSION = 1


@dataclasses.dataclass
class FrameRecord:
    version: int
    python: str
    code: bytes                          # marshal.dumps(code)
    name: str
    qualname: str
    args: list                           # one _Value per frame argument, in co_varnames order
    closure: list                        # one _Value per free variable
    globals: dict                        # name -> _Value
    backend: dict | None                 # scripts.backend_reference(...)
    error: str
    traceback: str
    missing: list                        # what could not be recorded, and why

    @property
    def location(self) -> str:
        code = marshal.loads(self.code)
        return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


@dataclasses.dataclass
class _Value:
    kind: str          # "pickle", "module" or "missing"
    data: object


def _record_value(value, what: str, missing: list) -> _Value:
    if isinstance(value, types.ModuleType):
        return _Value("module", value.__name__)
    try:
        return _Value("pickle", pickle.dumps(value))
    except Exception as e:  # noqa: BLE001 - anything unpicklable is noted, not fatal
        missing.append(f"{what}: {type(value).__name__} cannot be pickled ({type(e).__name__}: {e})")
        return _Value("missing", repr(value)[:200])


def _restore_value(v: _Value, what: str):
    if v.kind == "module":
        __import__(v.data)
        return sys.modules[v.data]
    if v.kind == "pickle":
        return pickle.loads(v.data)
    raise LookupError(f"{what} was not recorded: {v.data}")


def global_names(code) -> set:
    """Names a code object (and the code nested in it) may read from its globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return names


def record_failure(code, func, args, error: BaseException, backend, frame_dir: FrameDir) -> str | None:
    """Write the record of a failed frame; returns its path (None if even that failed)."""
    missing: list = []
    try:
        arg_names = code.co_varnames[:len(args)]
        record = FrameRecord(
            version=RECORD_VERSION, python=sys.version.split()[0], code=marshal.dumps(code), name=code.co_name,
            qualname=getattr(func, "__qualname__", code.co_name),
            args=[_record_value(a, f"argument {n!r}", missing) for n, a in zip(arg_names, args)],
            closure=[_record_value(_cell_contents(c), f"free variable {n!r}", missing)
                     for n, c in zip(code.co_freevars, func.__closure__ or ())],
            globals={n: _record_value(func.__globals__[n], f"global {n!r}", missing)
                     for n in sorted(global_names(code)) if n in func.__globals__},
            backend=backend_reference(backend), error=f"{type(error).__name__}: {error}",
            traceback="".join(traceback.format_exception(error)), missing=missing)
        path = os.path.join(frame_dir.path, "replay.bgrec")
        with open(path, "wb") as f:
            pickle.dump(record, f)
    except Exception as e:  # noqa: BLE001 - recording must never hide the original failure
        logging.getLogger("bytegraph").warning("bytegraph could not record %s for replay: %s: %s",
                                               code.co_name, type(e).__name__, e)
        return None
    logging.getLogger("bytegraph").warning(
        "bytegraph recorded the failed frame %s for replay: %s (re-run with bytegraph.debug.replay(path))%s",
        code.co_name, path, f"; not recorded: {'; '.join(missing)}" if missing else "")
    return path


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return None


def load_record(path: str) -> FrameRecord:
    with open(path, "rb") as f:
        record = pickle.load(f)
    if not isinstance(record, FrameRecord) or record.version != RECORD_VERSION:
        raise ValueError(f"{path} is not a bytegraph replay record (version {RECORD_VERSION})")
    return record


def rebuild(record: FrameRecord):
    """The recorded function and its arguments: (function, positional args, keyword args)."""
    code = marshal.loads(record.code)
    namespace = {"__builtins__": builtins, "__name__": f"__bytegraph_replay_{record.name}__"}
    for name, value in record.globals.items():
        if value.kind != "missing":
            namespace[name] = _restore_value(value, f"global {name!r}")
    closure = tuple(types.CellType(_restore_value(v, "a free variable")) for v in record.closure) or None
    fn = types.FunctionType(code, namespace, code.co_name, None, closure)
    fn.__qualname__ = record.qualname
    values = [_restore_value(v, f"argument {i}") for i, v in enumerate(record.args)]
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    args = list(values[:n_pos])
    kwargs = dict(zip(code.co_varnames[n_pos:n_pos + n_kw], values[n_pos:n_pos + n_kw]))
    rest = values[n_pos + n_kw:]
    if code.co_flags & 0x04:     # CO_VARARGS
        args.extend(rest.pop(0))
    if code.co_flags & 0x08:     # CO_VARKEYWORDS
        kwargs.update(rest.pop(0))
    return fn, args, kwargs
