"""Resume functions: the rest of a frame after a graph break, as an ordinary function.

Compile time, except `ResumeCall` (bytegraph._C), which transformed code returns at a break. When
a frame breaks at an instruction, the transformed code runs that instruction natively and then has a
resume function called (see below) whose arguments are the values left on the stack (minus NULLs,
which the prologue pushes back; the prologue moves the others onto the stack) followed by every
local bound at the break, read again or not (the resumed frame holds what the original frame held).
Its body is a copy of the original code — with the original exception table, so `try`/`with` blocks
that enclose the break point still protect the rest of the frame — behind a prologue that rebuilds
the stack and jumps to the instruction after the break. Only the code reachable from there (jumps,
loops, handlers) is copied: a frame that breaks N times then builds N shrinking tails, not N whole
bodies.

Stack slots (the `layout`, one entry per stack slot, bottom first):

- `NULL_SLOT`: a NULL under a callable; not passed, pushed back by the prologue.
- `VALUE_SLOT`: passed as is.
- `SHAPED_SLOT`: passed as is; the result of an instruction that made tensors whose shape depends on
  data (`x.nonzero()`, `torch.where(mask)`): an argument named `SHAPED_ARGUMENT_PREFIX`, whose tensors
  the resume function takes with symbolic sizes from its first compile (`shaped_arguments`), as their
  sizes will change from call to call.
- `ITER_SLOT`: a loop's iterator, passed as a fresh tuple iterator over its remaining items (an
  argument named `ITER_ARGUMENT_PREFIX`: the trace reads its items one at a time, as the loop takes
  them, so the resume function does not depend on how many are left; `ResumedIteratorVariable`).
- `TABLE_SLOT`: a loop's iterator over a ModuleList, Sequential or ModuleDict, passed as the real dict
  iterator over its `_modules` table (an argument named `TABLE_ARGUMENT_PREFIX`: read as
  `ResumedTableIterator`, its items one at a time, so the code between the graphs and the resumed loop
  find the live table, as eager's loop does).
- `("grad", mode)` / `("autocast", device, dtype, enabled, cache_enabled)` / `("inference", mode)`
  (and `("torch_function", all)`, `("saved_hooks_disabled", message)`, `("record_function", name, args)`):
  the `__exit__` that `BEFORE_WITH` left for an enclosing `with torch.no_grad()` /
  `torch.autocast(...)` / `torch.inference_mode(mode)` block. Nothing is passed: the prologue enters
  the context again (`torch.set_grad_enabled(mode)` / `torch.autocast(...)` /
  `torch.inference_mode(mode)`, then `BEFORE_WITH`), so the resumed body runs in the same mode, the
  block's normal and exceptional exits (copied from the original code) restore the mode that was
  current before the block, and the frame hook traces the re-entry like any other `with`.
  A user context manager's `__exit__` is an ordinary `VALUE_SLOT` (the bound method of the object,
  which is entered once and exited once, by the resumed body).

`grad_after` (optional) is the grad mode the prologue sets last: `GRAD_PASSED` when the enclosing
blocks are re-entered, which sets the mode they set on entry; the mode current after the
instruction ran natively (a `torch.set_grad_enabled(False)` call inside a `with torch.enable_grad()`
block, a user context manager's `__enter__` turning grad on) is then passed as the argument
`GRAD_ARGUMENT`, after the stack slots.

Zero-argument `super()` reads the frame's first local and its `__class__` cell; a resume function's
first local is a stack value, so its body calls `super(__class__, <first argument>)` instead
(`_explicit_super`); the first argument travels like every bound local.

The frame's own cell variables become free variables of the resume function (the transformed code
passes its cells in the closure), so closures made before the break and code after it share cells.
CPython raises NameError for an empty free variable but UnboundLocalError for an empty own cell, so
each read or deletion of one of them is preceded by a check that raises the latter
(`_unbound_cell_check`).

Transformed code does not call resume functions: at its break it *returns*
`ResumeCall(next_fn, args)`, and the C hook that ran the original frame runs the chain, handing each
resume function its arguments as its only references (see `ResumeCall` below). So the Python stack
does not grow with the number of breaks executed, and no temporary of the transformed code, tuple or
C call keeps the frame's values alive after the break.

Resume code objects are cached per (code, offset, layout, live locals, grad_after) on the original
code object. A break inside a resume function is mapped back to the original code's offsets, so
breaking again in a loop reuses the same resume code object instead of nesting new ones; the frame
hook compiles it like any other frame.
"""
from __future__ import annotations

import dis
import inspect
import types
import weakref
from typing import NamedTuple

import torch
from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd
from bytecode.instr import CellVar, FreeVar

from .. import _C
from .instructions import instructions_of
from ..code_keyed import CodeKeyed

# layout of one stack slot passed to a resume function
NULL_SLOT = "null"       # a NULL under a callable: not passed, pushed back by the prologue
VALUE_SLOT = "value"     # passed as is
SHAPED_SLOT = "shaped"   # passed as is: tensors whose shape depends on data, symbolic from the first compile
ITER_SLOT = "iter"       # a loop's iterator, passed as a fresh tuple iterator over its remaining items
TABLE_SLOT = "table"     # a loop's iterator over a module container's table: the real dict iterator
STACK_ARGUMENT_PREFIX = "__bytegraph_stack"   # the resume function's parameters that hold stack slots
ITER_ARGUMENT_PREFIX = "__bytegraph_iter"     # ... that hold an ITER_SLOT
SHAPED_ARGUMENT_PREFIX = "__bytegraph_shaped"  # ... that hold a SHAPED_SLOT
TABLE_ARGUMENT_PREFIX = "__bytegraph_table"    # ... that hold a TABLE_SLOT
_ARGUMENT_PREFIXES = {ITER_SLOT: ITER_ARGUMENT_PREFIX, SHAPED_SLOT: SHAPED_ARGUMENT_PREFIX,
                      TABLE_SLOT: TABLE_ARGUMENT_PREFIX}
_PASSED_SLOTS = (VALUE_SLOT, ITER_SLOT, SHAPED_SLOT, TABLE_SLOT)
GRAD_PASSED = "passed"                        # grad_after: the mode is an argument, read at run time
GRAD_ARGUMENT = "__bytegraph_grad_mode"


def stack_argument_name(i: int, kind) -> str:
    """The resume function's parameter that holds stack slot `i`."""
    return f"{_ARGUMENT_PREFIXES.get(kind, STACK_ARGUMENT_PREFIX)}{i}"


def shaped_arguments(code) -> frozenset:
    """The parameters of resume code `code` that hold SHAPED_SLOTs (empty for other code)."""
    if code not in _ORIGIN:
        return frozenset()
    return frozenset(n for n in code.co_varnames[:code.co_argcount] if n.startswith(SHAPED_ARGUMENT_PREFIX))


def grad_slot(mode: bool) -> tuple:
    """The exit of an enclosing grad-mode `with` block, re-entered by the prologue."""
    return ("grad", bool(mode))


def autocast_slot(device, dtype, enabled, cache_enabled) -> tuple:
    """The exit of an enclosing `torch.autocast` block, re-entered by the prologue."""
    return ("autocast", device, dtype, enabled, cache_enabled)


def inference_slot(mode: bool) -> tuple:
    """The exit of an enclosing `torch.inference_mode(mode)` block, re-entered by the prologue."""
    return ("inference", bool(mode))


def torch_function_slot(all_disabled: bool) -> tuple:
    """The exit of an enclosing `torch._C.DisableTorchFunction[Subclass]()` block, re-entered by the prologue."""
    return ("torch_function", bool(all_disabled))


def saved_hooks_slot(message: str) -> tuple:
    """The exit of an enclosing `torch.autograd.graph.disable_saved_tensors_hooks(message)` block,
    re-entered by the prologue."""
    return ("saved_hooks_disabled", message)


def record_function_slot(name: str, args) -> tuple:
    """The exit of an enclosing `torch.profiler.record_function(name, args)` block, re-entered by the
    prologue (a range nothing observes: see variables/profiler.py)."""
    return ("record_function", name, args)


def is_context_slot(kind) -> bool:
    return isinstance(kind, tuple)


_RESUME_CACHE = CodeKeyed()
# resume code -> (original code, {offset in the resume code: offset in the original})
_ORIGIN = CodeKeyed()

_NO_FALLTHROUGH = {"RETURN_VALUE", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
                   "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE"}
# instructions of the original body that a resume function (whose cells are all free) must not run
_CELL_SETUP = {"MAKE_CELL", "COPY_FREE_VARS"}


# code -> its instructions (EXTENDED_ARG dropped): a break asks for them several times (liveness, handlers,
# the resume body), and a frame breaking often is a new resume code each time. Made from the decoding
# the translator uses (instructions_of): each code is decoded once.
_INSTRUCTIONS_CACHE = CodeKeyed()


def _instructions(code) -> tuple:
    insts = _INSTRUCTIONS_CACHE.get(code)
    if insts is None:
        insts = _INSTRUCTIONS_CACHE[code] = tuple(i for i in instructions_of(code)[0] if i.opname != "EXTENDED_ARG")
    return insts


def _index_by_offset(code, insts) -> dict:
    """offset -> index in `insts` (EXTENDED_ARG dropped), an EXTENDED_ARG's offset included: a jump
    or handler may target the EXTENDED_ARG that prefixes its instruction."""
    index = {ins.offset: i for i, ins in enumerate(insts)}
    pending = []
    for ins in instructions_of(code)[0]:
        if ins.opname == "EXTENDED_ARG":
            pending.append(ins.offset)
        else:
            for off in pending:
                index[off] = index[ins.offset]
            pending = []
    return index


# -- analysis ------------------------------------------------------------------------------
def zero_arg_super_self(code):
    """The name of the local that a zero-argument `super()` in `code` binds (its first argument),
    or None when `code` cannot call zero-argument super (no `__class__` free variable). None for a
    resume code: its super() calls are explicit already (`_explicit_super`)."""
    if "__class__" not in code.co_freevars or code.co_argcount == 0 or code in _ORIGIN:
        return None
    return code.co_varnames[0]


def _is_super_load(ins) -> bool:
    return ins.opname == "LOAD_GLOBAL" and ins.argval == "super"


def _explicit_super(body: list, origins: list, self_name: str, self_is_cell: bool) -> None:
    """Rewrite each zero-argument `super()` call of a resume body (`LOAD_GLOBAL (NULL + super);
    PRECALL 0; CALL 0`) into `super(__class__, <first local>)`, in place. CPython's zero-argument
    super reads the frame's first local and its `__class__` cell, and the first local of a resume
    function is a stack value, not the method's `self`. `origins` (the original offset of each
    instruction of `body`, in order) gets None for the inserted loads."""
    instrs = [i for i, item in enumerate(body) if isinstance(item, Instr)]
    rank = {pos: n for n, pos in enumerate(instrs)}
    hits = []
    for n, pos in enumerate(instrs[:-2]):
        load, precall, call = body[pos], body[instrs[n + 1]], body[instrs[n + 2]]
        if load.name == "LOAD_GLOBAL" and load.arg[1] == "super" and load.arg[0] and \
                precall.name == "PRECALL" and precall.arg == 0 and call.name == "CALL" and call.arg == 0 and \
                instrs[n + 2] == pos + 2:      # contiguous: no label or try marker in between
            hits.append(pos)
    for pos in reversed(hits):
        load = body[pos]
        loc = load.location
        self_arg = FreeVar(self_name) if self_is_cell else self_name
        inserted = [Instr("LOAD_DEREF", FreeVar("__class__"), location=loc),
                    Instr("LOAD_DEREF" if self_is_cell else "LOAD_FAST", self_arg, location=loc)]
        body[pos + 1] = Instr("PRECALL", 2, location=body[pos + 1].location)
        body[pos + 2] = Instr("CALL", 2, location=body[pos + 2].location)
        body[pos + 1:pos + 1] = inserted
        k = rank[pos] + 1
        origins[k:k] = [None, None]


# code -> {offset: names of the locals that may be read from there on}
_LIVENESS_CACHE = CodeKeyed()


def live_locals_at(code, offset) -> set:
    """Names of fast locals that may be read before being written, starting at `offset`
    (exception handlers that cover an instruction count as its successors). Used only when a local
    no later code reads cannot be rebuilt at a break (break_codegen.compile_break)."""
    origin = original_location(code, offset)
    if origin is not None and origin[0] is not code:
        # a resume body is the original's code reachable from its target, cells and super() aside
        # (no fast local there): what may be read from an instruction is what the original may read
        code, offset = origin
    table = _LIVENESS_CACHE.get(code)
    if table is None:
        table = _compute_liveness(code)
        _LIVENESS_CACHE[code] = table
    return table.get(offset, set())


# code -> for each instruction (by index, EXTENDED_ARG dropped), the indices it may go to next
_SUCCESSORS_CACHE = CodeKeyed()


def _successors(code) -> tuple:
    """For each instruction of `code`: where control may go next (fall through, jump target, the
    handler of the exception-table entry covering it: entries do not overlap in 3.11)."""
    succs = _SUCCESSORS_CACHE.get(code)
    if succs is not None:
        return succs
    insts = _instructions(code)
    index = _index_by_offset(code, insts)
    handlers = dis._parse_exception_table(code)
    succs = []
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
        succs.append(tuple(s))
    succs = _SUCCESSORS_CACHE[code] = tuple(succs)
    return succs


def reachable_from(code, seeds) -> set:
    """Indices of the instructions of `code` that control may reach from the instructions `seeds`
    (themselves included). A copy of a frame's code entered only there needs no other: a frame
    that breaks often copies the rest of its body at each break, not all of it."""
    succs = _successors(code)
    seen = set()
    todo = list(seeds)
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        todo.extend(succs[i])
    return seen


def drop_empty_try_ranges(items: list) -> list:
    """`items` without the try ranges that cover no instruction (their code was dropped as unreached)."""
    empty = set()
    begin, covers = None, False
    for item in items:
        if isinstance(item, TryBegin):
            begin, covers = item, False
        elif isinstance(item, TryEnd):
            if item.entry is begin and not covers:
                empty.add(id(begin))
            begin = None
        elif isinstance(item, Instr):
            covers = True
    if not empty:
        return items
    return [item for item in items if not (isinstance(item, TryBegin) and id(item) in empty or
                                           isinstance(item, TryEnd) and id(item.entry) in empty)]


def _compute_liveness(code) -> dict:
    insts = _instructions(code)
    succs = _successors(code)
    super_self = zero_arg_super_self(code)
    if super_self is not None and super_self in code.co_cellvars:
        super_self = None                 # a cell: it reaches resume functions through the closure
    uses, defs = [], []
    for i, ins in enumerate(insts):
        if super_self is not None and _is_super_load(ins):
            uses.append({super_self})     # zero-argument super() reads the first local implicitly
            defs.append(set())
        elif ins.opname in ("LOAD_FAST", "DELETE_FAST"):
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


def exception_entry_at(code, offset):
    """The (innermost) exception-table entry covering `offset`, or None."""
    for e in dis._parse_exception_table(code):
        if e.start <= offset < e.end:
            return e
    return None


_HANDLER_CACHE = CodeKeyed()


def in_exception_handler(code, offset) -> bool:
    """Whether `offset` runs while an exception is being handled (from PUSH_EXC_INFO to its
    POP_EXCEPT: an `except`/`finally` body on the exception path, a `with` block's exit path)."""
    origin = original_location(code, offset)
    if origin is not None:
        code, offset = origin         # (a resume body runs the original's handlers as they are)
    offsets = _HANDLER_CACHE.get(code)
    if offsets is None:
        offsets = _HANDLER_CACHE[code] = _handler_offsets(code)
    return offset in offsets


def _handler_offsets(code) -> frozenset:
    insts = _instructions(code)
    index = _index_by_offset(code, insts)
    seen: set = set()
    todo = [index[e.target] for e in dis._parse_exception_table(code)
            if insts[index[e.target]].opname == "PUSH_EXC_INFO"]
    while todo:
        i = todo.pop()
        if i in seen or i >= len(insts):
            continue
        seen.add(i)
        ins = insts[i]
        if ins.opname == "POP_EXCEPT":
            continue            # the exception is handled: what follows is ordinary code
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            todo.append(index[ins.argval])
        if ins.opname not in _NO_FALLTHROUGH:
            todo.append(i + 1)
    return frozenset(insts[i].offset for i in seen)


def is_resume_code(code) -> bool:
    return code in _ORIGIN


def original_code(code):
    """The user's code object a (possibly resume) code object runs part of."""
    origin = _ORIGIN.get(code)
    return code if origin is None else origin[0]


def original_location(code, offset):
    """(original code, offset there) for an instruction of `code`, which may be a resume code.
    None when the instruction belongs to a resume prologue (it has no original)."""
    origin = _ORIGIN.get(code)
    if origin is None:
        return code, offset
    original, offsets = origin
    if offset not in offsets:
        return None
    return original, offsets[offset]


def closure_names(code) -> tuple:
    """The free variables of `code`'s resume functions, in closure order: its cells, then its own
    free variables."""
    return tuple(code.co_cellvars) + tuple(code.co_freevars)


# -- bytecode helpers shared with the transformed code ---------------------------------------
def body_items(code, labels: dict | None = None, replace: dict | None = None, keep: set | None = None) -> list:
    """`code` as `bytecode` items (instructions, labels, try markers), with `labels[i]` placed
    before the i-th instruction (EXTENDED_ARG not counted) and the i-th instruction replaced by
    the items `replace[i](instruction)` returns, if given; only the instructions whose index is in
    `keep`, if given (and the try ranges still covering one)."""
    labels = labels or {}
    replace = replace or {}
    insts = _instructions(code)
    out, n = [], 0
    for item in _decoded_body(code):
        if isinstance(item, Instr):
            if keep is not None and n not in keep:
                n += 1
                continue
            item = item.copy()          # the caller's to change (its line, its argument)
            assert item.name == insts[n].opname, (item.name, insts[n].opname)
            if n in labels:
                out.append(labels[n])
            if n in replace:
                out.extend(replace[n](item))
                n += 1
                continue
            n += 1
        out.append(item)
    return out if keep is None else drop_empty_try_ranges(out)


# The `bytecode` items of the last few codes decoded: each break of a frame makes a resume function
# from the same original code, and decoding it was most of a break's compile time. Few, and forgotten
# when their code dies (no compile state kept for the program's collector to walk); by identity (equal
# code objects may hold other constants). The items are shared: body_items hands out copies of the
# instructions, and labels and try markers are not changed by assembly.
_DECODED_BODIES: list = []      # [(weak reference to a code, its items)], most recent last
_DECODED_BODIES_KEPT = 4


def _decoded_body(code) -> tuple:
    for i, (ref, items) in enumerate(_DECODED_BODIES):
        if ref() is code:
            _DECODED_BODIES.append(_DECODED_BODIES.pop(i))
            return items
    items = tuple(Bytecode.from_code(code, conserve_exception_block_stackdepth=True))
    _DECODED_BODIES.append((weakref.ref(code, _forget_decoded_body), items))
    del _DECODED_BODIES[:-_DECODED_BODIES_KEPT]
    return items


def _remember_decoded_body(code, items: tuple) -> None:
    """`items`, which `code` was just assembled from, as its decoded body: a break in the resume
    function copies its body again, and decoding it back was a third of a break's compile time.
    Only when they match the assembled instructions one for one (the assembler added none)."""
    names = [item.name for item in items if isinstance(item, Instr)]
    if names == [ins.opname for ins in _instructions(code)]:
        _DECODED_BODIES.append((weakref.ref(code, _forget_decoded_body), items))
        del _DECODED_BODIES[:-_DECODED_BODIES_KEPT]


def _forget_decoded_body(ref) -> None:
    """A decoded code died: its items (its constants) go with it."""
    _DECODED_BODIES[:] = [entry for entry in _DECODED_BODIES if entry[0] is not ref]


_NOT_COPIED_FLAGS = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                     inspect.CO_ASYNC_GENERATOR)


def function_bytecode(template, argnames, cellvars, freevars, qualname=None) -> Bytecode:
    """An empty Bytecode for a plain function standing in for `template`'s code: its name, file and
    first line, positional arguments `argnames`, and its flags less varargs and generator-ness."""
    bc = Bytecode()
    bc.name = template.co_name
    bc.qualname = qualname or template.co_qualname
    bc.filename = template.co_filename
    bc.first_lineno = template.co_firstlineno
    bc.argcount = len(argnames)
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.argnames = list(argnames)
    bc.cellvars = list(cellvars)
    bc.freevars = list(freevars)
    bc.flags = (template.co_flags & ~_NOT_COPIED_FLAGS) | inspect.CO_NEWLOCALS | inspect.CO_OPTIMIZED
    return bc


class TemplateCopy(NamedTuple):
    """A copy of a template's code inside transformed code (break_codegen.emit_in_block): its items,
    as placed in the code's item list, and the labels outside it that code in it jumps to, with the
    stack depth there."""
    items: list
    exits: list          # [(label, depth)]


# how much deeper than the template's the stack of its copy goes: the check of the trace function after
# the native instruction (break_codegen.emit_in_block) pushes 2 values
_COPY_EXTRA_DEPTH = 2


def assemble(bc: Bytecode, template, copy: TemplateCopy) -> types.CodeType:
    """Assemble code that jumps into the middle of `template`'s body (maybe into a try range,
    past the start of the range): keep the original exception-table depths (the jump rebuilds the
    same stack). The stack size is the deeper of the template's (the copy is entered with the stack
    the template has there, so no path through it goes deeper) and of the code around the copy,
    walked alone (`items_stack_size`): analysing the whole assembled code, as long as the rest of
    the frame, was a large part of a break's compile time. (The `bytecode` library's depth analysis
    assumes a try range is entered at its start.)"""
    items = list(bc)
    first = copy.items[0] if copy.items else None
    at = next((i for i, item in enumerate(items) if item is first), len(items))
    outside = items[:at] + items[at + len(copy.items):]
    depth = max(template.co_stacksize + _COPY_EXTRA_DEPTH, items_stack_size(outside, copy.exits))
    return bc.to_code(stacksize=depth, compute_exception_stack_depths=False)


def items_stack_size(items: list, entries=()) -> int:
    """The deepest stack of `bytecode` items (instructions, labels, try markers) on every path from
    the first item (at depth 0) and from each (label, depth) of `entries`; a jump to a label that is
    not in `items` is not followed. An instruction in a try range also leads to its handler (with
    the range's depth, `lasti` and the exception)."""
    labels, covering, current = {}, [], None
    for i, item in enumerate(items):
        if isinstance(item, Label):
            labels[item] = i
        elif isinstance(item, TryBegin):
            current = item
        elif isinstance(item, TryEnd):
            current = None
        covering.append(current)
    depth_at: dict = {}
    todo = [(0, 0)] + [(labels[label], depth) for label, depth in entries if label in labels]
    deepest = max((depth for _, depth in todo), default=0)
    while todo:
        i, depth = todo.pop()
        while i < len(items) and depth_at.get(i, -1) < depth:
            depth_at[i] = depth
            item = items[i]
            i += 1
            if not isinstance(item, Instr):
                continue
            entry = covering[i - 1]
            if entry is not None and entry.target in labels:
                handler_depth = entry.stack_depth + entry.push_lasti + 1
                deepest = max(deepest, handler_depth)
                todo.append((labels[entry.target], handler_depth))
            if isinstance(item.arg, Label):
                taken = depth + item.stack_effect(jump=True)
                deepest = max(deepest, taken)
                if item.arg in labels:
                    todo.append((labels[item.arg], taken))
            if item.name in _NO_FALLTHROUGH:
                break
            depth += item.stack_effect(jump=False)
            deepest = max(deepest, depth)
    return deepest


def stack_size(code) -> int:
    """The deepest stack `code` can reach: every path from the entry, each instruction covered by an
    exception-table entry also leading to its handler (entered with the entry's depth, plus `lasti`,
    plus the exception). Decoded without the constants: transformed code holds the program's objects
    as constants, and `dis` would ask each for its repr (user code, that may raise)."""
    insts = _raw_instructions(code.co_code)
    index = {ins[0]: i for i, ins in enumerate(insts)}
    handlers = dis._parse_exception_table(code)
    depth_at: dict = {}
    todo = [(0, 0)]
    deepest = 0
    while todo:
        i, depth = todo.pop()
        while i < len(insts) and depth_at.get(i, -1) < depth:
            depth_at[i] = depth
            offset, op, arg, target = insts[i]
            for entry in handlers:
                if entry.start <= offset < entry.end:
                    todo.append((index[entry.target], entry.depth + entry.lasti + 1))
                    break
            if target is not None:
                taken = depth + dis.stack_effect(op, arg, jump=True)
                deepest = max(deepest, taken)
                todo.append((index[target], taken))
            if op in _NO_FALLTHROUGH_OPS:
                break
            depth += dis.stack_effect(op, arg, jump=False) if op >= dis.HAVE_ARGUMENT else dis.stack_effect(op)
            deepest = max(deepest, depth)
            i += 1
    return max(deepest, max((e.depth + e.lasti + 1 for e in handlers), default=0))


_NO_FALLTHROUGH_OPS = frozenset(dis.opmap[name] for name in _NO_FALLTHROUGH if name in dis.opmap)
_JUMP_OPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _raw_instructions(co_code: bytes) -> list:
    """(offset, opcode, argument, jump target offset or None) of each instruction (EXTENDED_ARG
    included, inline caches skipped): what stack_size needs, without `dis`'s descriptions."""
    out = []
    for offset, op, arg in dis._unpack_opargs(co_code):
        op = dis._deoptop(op)
        target = None
        if op in _JUMP_OPS:
            if op in dis.hasjabs:
                target = arg * 2
            else:
                target = offset + 2 + (-arg if "JUMP_BACKWARD" in dis.opname[op] else arg) * 2
        out.append((offset, op, arg, target))
    return out


def call_start_index(code, index: int) -> int:
    """The index of the first instruction of the call sequence ending with the CALL at `index`
    (KW_NAMES / PRECALL come first in 3.11)."""
    insts = _instructions(code)
    start = index
    if start > 0 and insts[start - 1].opname == "PRECALL":
        start -= 1
        if start > 0 and insts[start - 1].opname == "KW_NAMES":
            start -= 1
    return start


# code -> {offset: index in _instructions(code)}
_INDEX_CACHE = CodeKeyed()


def instruction_index(code, offset: int) -> int:
    index = _INDEX_CACHE.get(code)
    if index is None:
        index = _INDEX_CACHE[code] = {ins.offset: i for i, ins in enumerate(_instructions(code))}
    return index[offset]


def enter_context_instrs(kind, lineno) -> list:
    """Prologue instructions re-entering a context slot: push the manager, BEFORE_WITH, drop the
    value of `__enter__` (leaving the `__exit__` on the stack, where the body expects it)."""
    if kind[0] == "grad":
        out = [Instr("PUSH_NULL", lineno=lineno), Instr("LOAD_CONST", torch.set_grad_enabled, lineno=lineno),
               Instr("LOAD_CONST", kind[1], lineno=lineno), Instr("PRECALL", 1, lineno=lineno),
               Instr("CALL", 1, lineno=lineno)]
    elif kind[0] == "inference":
        out = [Instr("PUSH_NULL", lineno=lineno), Instr("LOAD_CONST", torch.inference_mode, lineno=lineno),
               Instr("LOAD_CONST", kind[1], lineno=lineno), Instr("PRECALL", 1, lineno=lineno),
               Instr("CALL", 1, lineno=lineno)]
    elif kind[0] == "torch_function":
        cls = torch._C.DisableTorchFunction if kind[1] else torch._C.DisableTorchFunctionSubclass
        out = [Instr("PUSH_NULL", lineno=lineno), Instr("LOAD_CONST", cls, lineno=lineno),
               Instr("PRECALL", 0, lineno=lineno), Instr("CALL", 0, lineno=lineno)]
    elif kind[0] == "record_function":
        out = [Instr("PUSH_NULL", lineno=lineno),
               Instr("LOAD_CONST", torch.autograd.profiler.record_function, lineno=lineno),
               Instr("LOAD_CONST", kind[1], lineno=lineno), Instr("LOAD_CONST", kind[2], lineno=lineno),
               Instr("PRECALL", 2, lineno=lineno), Instr("CALL", 2, lineno=lineno)]
    elif kind[0] == "saved_hooks_disabled":
        out = [Instr("PUSH_NULL", lineno=lineno),
               Instr("LOAD_CONST", torch.autograd.graph.disable_saved_tensors_hooks, lineno=lineno),
               Instr("LOAD_CONST", kind[1], lineno=lineno), Instr("PRECALL", 1, lineno=lineno),
               Instr("CALL", 1, lineno=lineno)]
    elif kind[0] == "autocast":
        out = [Instr("PUSH_NULL", lineno=lineno), Instr("LOAD_CONST", torch.autocast, lineno=lineno)]
        out += [Instr("LOAD_CONST", v, lineno=lineno) for v in kind[1:]]
        out += [Instr("PRECALL", 4, lineno=lineno), Instr("CALL", 4, lineno=lineno)]
    else:
        raise AssertionError(kind)
    return out + [Instr("BEFORE_WITH", lineno=lineno), Instr("POP_TOP", lineno=lineno)]


# -- run time: calling resume functions without nesting -------------------------------------
# What transformed code returns at a graph break: `ResumeCall(fn, args)`, "call fn(*args) next". The
# C hook that ran the original frame's transformed code runs the chain, so a break inside a loop that
# runs a thousand times costs a loop, not a thousand nested frames (and no RecursionError); and it
# hands each call's arguments to the resume function's frame, which then holds them alone, as the
# original frame held its locals (`x = None` after a break frees x, as in eager). Resume functions
# are only ever called by the chain, so a `ResumeCall` never reaches user code.
ResumeCall = _C.ResumeCall


# -- resume functions ----------------------------------------------------------------------
def resume_code(code, offset: int, layout: tuple, live: tuple, grad_after=None):
    """The cached resume code object for the original `code` continuing at `offset`. Its free
    variables are `closure_names(code)`: a frame with cells or a closure makes the function at run
    time (MAKE_FUNCTION with its cells)."""
    assert code not in _ORIGIN, "resume functions are made from the original code"
    per_code = _RESUME_CACHE.get(code)
    if per_code is None:
        per_code = _RESUME_CACHE[code] = {}
    key = ("code", offset, layout, live, grad_after)
    new = per_code.get(key)
    if new is None:
        new = per_code[key] = _make_resume_code(code, offset, layout, live, grad_after)
    return new


def resume_function(code, f_globals, offset: int, layout: tuple, live: tuple, grad_after=None):
    """The cached resume function (for a frame without cells or free variables)."""
    assert not closure_names(code)
    new = resume_code(code, offset, layout, live, grad_after)
    per_code = _RESUME_CACHE[code]
    key = ("fn", offset, layout, live, grad_after, id(f_globals))
    fn = per_code.get(key)
    if fn is None or fn.__globals__ is not f_globals:
        fn = per_code[key] = types.FunctionType(new, f_globals, new.co_name)
    return fn


def resume_codes_of(code) -> list:
    """The resume code objects made so far for `code` (for tests and debugging)."""
    return [v for k, v in _RESUME_CACHE.get(code, {}).items() if k[0] == "code"]


def _make_resume_code(code, offset: int, layout: tuple, live: tuple, grad_after):
    insts = _instructions(code)
    target_index = instruction_index(code, offset)
    target_line = insts[target_index].positions.lineno or code.co_firstlineno
    label = Label()
    body, kept = _resume_body(code, insts, target_index, label)
    freevars = closure_names(code)
    prologue = _resume_prologue(code, layout, grad_after, freevars, target_line, label)
    stack_names = [stack_argument_name(i, kind) for i, kind in enumerate(layout) if kind in _PASSED_SLOTS]
    if grad_after == GRAD_PASSED:
        stack_names.append(GRAD_ARGUMENT)
    # a traceback through the rest of the frame names the user's function
    bc = function_bytecode(code, stack_names + list(live), [], freevars,
                           qualname=f"{code.co_qualname}.<resume at line {target_line}>")
    if not freevars:
        bc.flags &= ~inspect.CO_NESTED
    bc.extend(prologue)
    bc.extend(body)
    new = bc.to_code(stacksize=_resume_stack_size(code, prologue), compute_exception_stack_depths=False)
    _record_origin(new, code, sum(isinstance(i, Instr) for i in prologue), kept)
    _remember_decoded_body(new, tuple(bc))
    return new


# how much deeper than the original's the stack of a resume body goes: an unbound-cell check pushes 3
# values before the read it guards, an explicit super() call 2 more than the zero-argument call
_RESUME_BODY_EXTRA_DEPTH = 3


def _resume_stack_size(code, prologue: list) -> int:
    """The stack size of a resume code: the deepest its prologue goes, or the original's (plus the
    checks inserted into the body). The body's instructions are the original's, entered with the
    stack the original has at the target, so no path through it goes deeper than the original's
    deepest (the exception table's depths are the original's too); analysing the assembled code,
    as long as the rest of the frame, was a large part of a break's compile time."""
    depth = deepest = 0
    for ins in prologue:
        if isinstance(ins, Instr):
            depth += ins.stack_effect(jump=False)
            deepest = max(deepest, depth)
    return max(deepest, code.co_stacksize + _RESUME_BODY_EXTRA_DEPTH)


def _resume_body(code, insts, target_index: int, label):
    """The original body, `label` at the instruction resumed at, cells turned into free variables
    (they come from the closure); and the original offset of each instruction kept. Only the
    instructions reached from the target are looked at: the others are not copied."""
    cells = set(code.co_cellvars)
    reached = reachable_from(code, [target_index])
    body = []
    kept = []      # original offsets of the body instructions, in order (None: inserted)
    n = -1
    for item in _decoded_body(code):
        if isinstance(item, Instr):
            n += 1
            if n not in reached:
                continue     # code the resumed frame never runs
            if n == target_index:
                body.append(label)
            if item.name in _CELL_SETUP:
                continue     # the cells come from the closure
            if isinstance(item.arg, CellVar) and item.arg.name in cells:
                item = Instr(item.name, FreeVar(item.arg.name), location=item.location)
                if item.name in _CELL_READS:
                    check = _unbound_cell_check(item)
                    body.extend(check)
                    kept.extend(None for i in check if isinstance(i, Instr))
            # (the decoded instructions are shared, not copied: nothing changes them, and
            # _explicit_super replaces the ones it rewrites)
            kept.append(insts[n].offset)
        body.append(item)
    body = drop_empty_try_ranges(body)
    super_self = zero_arg_super_self(code)
    if super_self is not None:
        _explicit_super(body, kept, super_self, super_self in cells)
    return body, kept


def cell_is_empty(cell) -> bool:
    """Run time (resume functions): whether a closure cell is empty."""
    try:
        cell.cell_contents
    except ValueError:
        return True
    return False


# instructions that raise when the cell they read is empty
_CELL_READS = {"LOAD_DEREF", "DELETE_DEREF"}

# callables that resume code loads with LOAD_CONST (the translator wraps them as what they are): the
# torch context-manager factories a prologue re-enters its blocks with, and the check of an own cell
RESUME_CALLABLES = (torch.set_grad_enabled, torch.autocast, torch.inference_mode, torch._C.DisableTorchFunction,
                    torch._C.DisableTorchFunctionSubclass, torch.autograd.graph.disable_saved_tensors_hooks,
                    torch.autograd.profiler.record_function, cell_is_empty, UnboundLocalError)


def _unbound_cell_check(ins) -> list:
    """What runs before `ins`, a read or deletion of one of the original frame's own cells: an empty
    cell raises UnboundLocalError, as CPython does for a frame's own cell (the resume function has
    it as a free variable, for which `ins` alone would raise NameError)."""
    name, loc = ins.arg.name, ins.location
    bound = Label()
    return [Instr("PUSH_NULL", location=loc), Instr("LOAD_CONST", cell_is_empty, location=loc),
            Instr("LOAD_CLOSURE", FreeVar(name), location=loc), Instr("PRECALL", 1, location=loc),
            Instr("CALL", 1, location=loc), Instr("POP_JUMP_FORWARD_IF_FALSE", bound, location=loc),
            Instr("PUSH_NULL", location=loc), Instr("LOAD_CONST", UnboundLocalError, location=loc),
            Instr("LOAD_CONST", f"cannot access local variable '{name}' where it is not associated with a value",
                  location=loc),
            Instr("PRECALL", 1, location=loc), Instr("CALL", 1, location=loc),
            Instr("RAISE_VARARGS", 1, location=loc), bound]


def _resume_prologue(code, layout: tuple, grad_after, freevars, target_line: int, label) -> list:
    """Rebuild the stack the original instruction expects (from the arguments, NULLs and re-entered
    contexts of `layout`), restore grad mode, then jump to `label`."""
    prologue = []
    if freevars:
        prologue.append(Instr("COPY_FREE_VARS", len(freevars), lineno=code.co_firstlineno))
    prologue.append(Instr("RESUME", 0, lineno=code.co_firstlineno))
    for i, kind in enumerate(layout):
        if kind == NULL_SLOT:
            prologue.append(Instr("PUSH_NULL", lineno=target_line))
        elif is_context_slot(kind):
            prologue.extend(enter_context_instrs(kind, target_line))
        else:
            # the stack holds the value alone, as in the original frame (not the argument too)
            prologue.append(Instr("LOAD_FAST", stack_argument_name(i, kind), lineno=target_line))
            prologue.append(Instr("DELETE_FAST", stack_argument_name(i, kind), lineno=target_line))
    if grad_after is not None:
        prologue += [Instr("PUSH_NULL", lineno=target_line),
                     Instr("LOAD_CONST", torch.set_grad_enabled, lineno=target_line),
                     Instr("LOAD_FAST", GRAD_ARGUMENT, lineno=target_line) if grad_after == GRAD_PASSED
                     else Instr("LOAD_CONST", bool(grad_after), lineno=target_line),
                     Instr("PRECALL", 1, lineno=target_line), Instr("CALL", 1, lineno=target_line),
                     Instr("POP_TOP", lineno=target_line)]
    prologue.append(Instr("JUMP_FORWARD", label, lineno=target_line))
    return prologue


def _record_origin(new, code, n_prologue: int, kept: list) -> None:
    """Map the body of resume code `new` back to the original offsets (breaks in the resume
    function resume the original)."""
    new_insts = _instructions(new)
    if len(new_insts) - len(kept) == n_prologue:
        _ORIGIN[new] = (code, {ins.offset: off for ins, off in zip(new_insts[n_prologue:], kept)
                               if off is not None})
    else:   # the assembler changed the instruction count: breaks in this resume function run eagerly
        _ORIGIN[new] = (code, {})
