"""Resume functions: the rest of a frame after a graph break, as an ordinary function.

Compile time only. When the root frame breaks at an instruction, the transformed code runs that
instruction natively and then calls a resume function whose arguments are the values left on the
stack (minus NULLs, which the prologue pushes back) followed by the live locals. Its body is the
original code with a prologue that rebuilds the stack and jumps to the instruction after the break.
The function is cached per (code, offset, stack layout, live locals), so a loop does not create a new
code object on every call; the frame hook compiles it like any other frame.
"""
from __future__ import annotations

import dis
import inspect
import types
import weakref

from bytecode import Bytecode, Instr, Label

# layout of one stack slot passed to a resume function
NULL_SLOT = "null"       # a NULL under a callable: not passed, pushed back by the prologue
VALUE_SLOT = "value"     # passed as is
ITER_SLOT = "iter"       # an iterator passed as a tuple of its remaining items; the prologue re-iterates it

_RESUME_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LIVENESS_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

_NO_FALLTHROUGH = {"RETURN_VALUE", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
                   "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE"}


def _instructions(code):
    return [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]


def live_locals_at(code, offset) -> set:
    """Names of fast locals that may be read before being written, starting at `offset`."""
    table = _LIVENESS_CACHE.get(code)
    if table is None:
        table = _compute_liveness(code)
        _LIVENESS_CACHE[code] = table
    return table.get(offset, set())


def _compute_liveness(code) -> dict:
    insts = _instructions(code)
    index = {ins.offset: i for i, ins in enumerate(insts)}
    handlers = dis._parse_exception_table(code)
    succs, uses, defs = [], [], []
    for i, ins in enumerate(insts):
        s = []
        if ins.opname not in _NO_FALLTHROUGH and i + 1 < len(insts):
            s.append(i + 1)
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            s.append(index[ins.argval])
        for entry in handlers:
            if entry.start <= ins.offset < entry.end:
                s.append(index[entry.target])
                break
        succs.append(s)
        if ins.opname in ("LOAD_FAST", "DELETE_FAST"):
            uses.append({ins.argval})
            defs.append(set() if ins.opname == "LOAD_FAST" else {ins.argval})
        elif ins.opname == "STORE_FAST":
            uses.append(set())
            defs.append({ins.argval})
        else:
            uses.append(set())
            defs.append(set())
    live_in = [set() for _ in insts]
    changed = True
    while changed:
        changed = False
        for i in range(len(insts) - 1, -1, -1):
            out = set()
            for s in succs[i]:
                out |= live_in[s]
            new = uses[i] | (out - defs[i])
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return {ins.offset: live_in[i] for i, ins in enumerate(insts)}


def in_exception_block(code, offset) -> bool:
    return any(e.start <= offset < e.end for e in dis._parse_exception_table(code))


def resume_code(code, offset: int, layout: tuple, live: tuple):
    """The cached resume code object for `code` continuing at `offset`. It has `code`'s free
    variables: a frame with a closure makes the function at run time (MAKE_FUNCTION with its cells)."""
    per_code = _RESUME_CACHE.get(code)
    if per_code is None:
        per_code = _RESUME_CACHE[code] = {}
    key = ("code", offset, layout, live)
    new = per_code.get(key)
    if new is None:
        new = per_code[key] = _make_resume_code(code, offset, layout, live)
    return new


def resume_function(code, f_globals, offset: int, layout: tuple, live: tuple):
    """The cached resume function (for a frame without free variables)."""
    assert not code.co_freevars
    new = resume_code(code, offset, layout, live)
    per_code = _RESUME_CACHE[code]
    key = ("fn", offset, layout, live, id(f_globals))
    fn = per_code.get(key)
    if fn is None or fn.__globals__ is not f_globals:
        fn = per_code[key] = types.FunctionType(new, f_globals, new.co_name)
    return fn


def _make_resume_code(code, offset: int, layout: tuple, live: tuple):
    original = Bytecode.from_code(code)
    insts = _instructions(code)
    target_index = next(i for i, ins in enumerate(insts) if ins.offset == offset)
    target_line = insts[target_index].positions.lineno or code.co_firstlineno
    label = Label()
    body, n = [], 0
    for item in original:
        if isinstance(item, Instr):
            assert item.name == insts[n].opname, (item.name, insts[n].opname)
            if n == target_index:
                body.append(label)
            n += 1
        body.append(item)

    stack_names = [f"__bytegraph_stack{i}" for i, kind in enumerate(layout) if kind != NULL_SLOT]
    prologue = []
    if code.co_freevars:
        prologue.append(Instr("COPY_FREE_VARS", len(code.co_freevars), lineno=code.co_firstlineno))
    prologue.append(Instr("RESUME", 0, lineno=code.co_firstlineno))
    for i, kind in enumerate(layout):
        if kind == NULL_SLOT:
            prologue.append(Instr("PUSH_NULL", lineno=target_line))
        else:
            prologue.append(Instr("LOAD_FAST", f"__bytegraph_stack{i}", lineno=target_line))
            if kind == ITER_SLOT:
                prologue.append(Instr("GET_ITER", lineno=target_line))
    prologue.append(Instr("JUMP_FORWARD", label, lineno=target_line))

    bc = Bytecode()
    bc.name = f"__bytegraph_resume_{code.co_name}_at_{offset}"
    bc.qualname = f"{code.co_qualname}.<resume at line {target_line}>"
    bc.filename = code.co_filename
    bc.first_lineno = code.co_firstlineno
    args = stack_names + list(live)
    bc.argcount = len(args)
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.argnames = args
    bc.cellvars = []
    bc.freevars = list(code.co_freevars)
    bc.flags = (code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR |
                                  inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR)) | inspect.CO_NEWLOCALS \
        | inspect.CO_OPTIMIZED
    bc.extend(prologue)
    bc.extend(body)
    return bc.to_code()
