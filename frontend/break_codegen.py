"""The code a frame's transformed version runs at a graph break (see frame_translator.py).

Compile time only. Given the checkpoint taken before the failing instruction, `compile_break`
rolls the translator back and emits: call the graph so far, rebuild the stack values and the
locals, replay side effects (this frame's own closure cells included), run the instruction natively
and call the resume function(s) for the rest of the frame. Each step below decides one thing:

- `plan_continuations`: where execution continues after the instruction, with which stack;
- `store_values`: rebuilding the values the continuations need into temps;
- `emit_linear` / `emit_in_block`: the native instruction on its own, or a jump into a copy of the
  frame's own code when the instruction is inside a `try`/`with` block;
- `_ResumeCalls.call`: handing over to one resume function (`ResumeCall`, run by the C hook).

Two shapes of transformed code (see `resume.py` for the resume functions):

- *linear* (the instruction is not inside a `try`/`with` block): the native instruction is emitted
  on its own — push its operands, run it, call the resume function with the result.
- *in a block* (the exception table covers the instruction, or a `with` exit is on the stack): the
  transformed code rebuilds the whole stack and the locals in their real slots, then jumps
  into a copy of the frame's own bytecode at the instruction, exception table included. If the
  instruction raises, the frame's own handlers run natively: `except`/`finally` bodies, a user
  context manager's `__exit__` (which may swallow the exception), grad mode/autocast restored by
  the block's exit. If it succeeds, control leaves the copy at once for a continuation (outside
  every exception range) that pops the stack, exits the torch contexts and calls the resume
  function, whose prologue re-enters them (`resume.py`).

Grad mode and autocast at a break. Grad mode is runtime state: the transformed code sets
`torch._C._set_grad_enabled(mode at the break)` right before the native instruction, so it runs as
in eager (grad disabled inside `with torch.no_grad()`), whatever the backend did with the graph's
own grad-mode nodes. On the stack, a grad-mode `__exit__` becomes a `RestoreGradMode(previous)`
object, a `torch.autocast` one the real entered context manager, a user context manager's the
bound `__exit__` of the rebuilt object. After the instruction the continuation reads the grad mode
the instruction left, calls the torch exits innermost first (grad mode back to its value outside the
blocks), and the resume function enters the blocks again and sets that grad mode, so grad mode is
right on both sides and each block is exited exactly once. An autocast or inference-mode block open
at the break is closed in the graph (`_exit_autocast`, `_exit_inference_mode`), so every graph is
self-contained; on the stack its `__exit__` is the real context manager's, entered again.

Not resumable (the frame runs eagerly, the reason is recorded): generators and coroutines, code that
may read its own frame's variables (`locals()`, `eval`, `sys._getframe()`), a break
while an exception is being handled (inside an `except` body or a `with` exit path: the caught
exception cannot be rebuilt), a break in a resume prologue, values that cannot be rebuilt.
"""
from __future__ import annotations

import inspect
import itertools
import operator
import sys
from typing import NamedTuple

import torch
from bytecode import Instr, Label
from bytecode.instr import BinaryOp, CellVar, Compare, FreeVar, InstrLocation

from ..guards.source import ItemSource
from . import lifetimes
from .codegen import RESTORE_GRAD
from .graph_break import Unsupported
from .opcodes import OPCODES, Checkpoint
from .resume import (
    ITER_SLOT,
    NULL_SLOT,
    SHAPED_SLOT,
    TABLE_SLOT,
    VALUE_SLOT,
    ResumeCall,
    TemplateCopy,
    autocast_slot,
    body_items,
    call_start_index,
    closure_names,
    exception_entry_at,
    GRAD_PASSED,
    grad_slot,
    inference_slot,
    record_function_slot,
    saved_hooks_slot,
    torch_function_slot,
    in_exception_handler,
    instruction_index,
    is_context_slot,
    live_locals_at,
    original_code,
    original_location,
    reachable_from,
    resume_code,
    resume_function,
)
from .variables.base import VariableTracker
from .variables.builtins import BuiltinVariable
from .variables.constant import ConstantVariable, LazyGuardedConstantVariable
from .variables.ctx import WithExitVariable
from .variables.global_state import DisableSavedTensorsHooksVariable
from .variables.profiler import RecordFunctionVariable, record_function
from .variables.iterators import ListIteratorVariable, ResumedIteratorVariable, ResumedLiveIterator
from .variables.misc import NULL, ExceptionVariable, NullVariable
from .variables.nn_module import ModuleTableIterator
from .variables.tensor import TensorVariable
from .variables.torch import (
    AutocastVariable,
    DisableTorchFunctionVariable,
    GradModeVariable,
    InferenceModeVariable,
)

RESULT = object()   # the result of the instruction run natively at a break
EXIT = object()     # the `__exit__` that a BEFORE_WITH run natively at a break leaves under its result


class FrameCheckpoint(NamedTuple):
    """The root translator's state before an instruction it may break at."""
    instruction: object
    stack: list
    symbolic_locals: dict
    kw_names: tuple
    graph: object            # OutputGraph.checkpoint()


class Continuation(NamedTuple):
    offset: int              # where the original code continues
    stack: list              # the stack there: trackers of the preserved prefix and RESULT/EXIT markers


class BreakPlan(NamedTuple):
    consumed: int            # stack values the native instruction takes
    prefix: list             # the stack below them
    paths: list              # Continuations: one, or two for a conditional jump (fall through, target)


def can_break_at(tx, cp: FrameCheckpoint | None) -> bool:
    """Breaking needs a checkpoint at the failing root instruction, in a plain function (not a
    generator), outside exception handlers (a caught exception cannot be rebuilt) and outside a
    modelled TorchFunctionMode's `with` block."""
    if not tx.allow_breaks or cp is None or cp.instruction is not tx.current:
        return False
    if cp.graph.function_modes:
        return False     # the native code after the break would run without the mode the trace modelled
    if tx.code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return False
    if in_exception_handler(tx.code, cp.instruction.offset):
        return False     # sys.exc_info() and a bare `raise` need the exception being handled
    if _is_zero_argument_super_call(cp):
        return False     # run natively it would read the frame's first local and `__class__` as they are
                         # in the transformed code, not as traced (a rebound or deleted `self`)
    return not any(isinstance(v, ExceptionVariable) for v in cp.stack)


def _is_zero_argument_super_call(cp) -> bool:
    ins = cp.instruction
    return ins.opname == "CALL" and ins.arg == 0 and isinstance(cp.stack[-1], BuiltinVariable) and \
        cp.stack[-1].fn is super


_CALLS = ("CALL", "CALL_FUNCTION_EX")


def _consumed(ins) -> int:
    """How many stack values a call or value instruction pops."""
    if ins.opname == "CALL":
        return ins.arg + 2                  # NULL or self, the callable, the arguments
    if ins.opname == "CALL_FUNCTION_EX":
        return 3 + (ins.arg & 1)            # NULL, the callable, the args tuple, the kwargs dict
    return OPCODES[ins.opname].operand_count(ins.arg)


def _pushed(ins) -> list:
    """What a call or value instruction leaves on the stack, as the continuation sees it."""
    if ins.opname == "LOAD_METHOD":
        return [NULL, RESULT]       # run natively as the attribute read the trace made
    if ins.opname == "UNPACK_SEQUENCE":
        return [RESULT] * ins.arg
    return [RESULT] * OPCODES[ins.opname].results


def plan_continuations(tx, ins, stack) -> BreakPlan:
    next_offset = tx.instructions[ins.index + 1].offset
    if ins.opname in _CALLS or OPCODES[ins.opname].checkpoint is Checkpoint.OPERANDS:
        consumed = _consumed(ins)
        prefix = stack[:-consumed]
        return BreakPlan(consumed, prefix, [Continuation(next_offset, prefix + _pushed(ins))])
    if ins.opname == "BEFORE_WITH":
        # a user context manager's `__enter__` runs natively; the block resumes with the
        # bound `__exit__` and the entered value on the stack
        prefix = stack[:-1]
        return BreakPlan(1, prefix, [Continuation(next_offset, prefix + [EXIT, RESULT])])
    prefix = stack[:-1]
    target_offset = tx.instructions[ins.target].offset
    if ins.opname == "FOR_ITER":
        # the next item is pushed above the iterator; once exhausted, the iterator is popped and the
        # loop left
        return BreakPlan(1, prefix, [Continuation(next_offset, stack + [RESULT]),
                                     Continuation(target_offset, list(prefix))])
    # a conditional jump
    jump_stack = stack if ins.opname.endswith("_OR_POP") else prefix
    return BreakPlan(1, prefix, [Continuation(next_offset, list(prefix)),
                                 Continuation(target_offset, list(jump_stack))])


def compile_break(tx, cp: FrameCheckpoint, every_local: bool = True, data_shaped_result: bool = False):
    """Roll back to the checkpoint, compile the graph so far, and emit: call graph, replay side
    effects, rebuild the stack and the locals, run the instruction natively, call the resume
    function(s) for the rest of the frame. `data_shaped_result`: the instruction makes tensors whose
    shape depends on data (resume.SHAPED_SLOT)."""
    ins, stack = cp.instruction, cp.stack
    tx.output.restore(cp.graph)
    tx.stack = list(stack)
    tx.symbolic_locals = dict(cp.symbolic_locals)
    lifetimes.check_none_pending(tx)
    grad_at_break = tx.output.grad_enabled
    code = tx.code
    plan = plan_continuations(tx, ins, stack)
    in_block = exception_entry_at(code, ins.offset) is not None or \
        any(isinstance(v, WithExitVariable) for v in stack)
    # every local bound at the break travels, read again or not: the resumed frame holds what the
    # original frame held, so an object lives exactly as long as in eager (`x = None` later frees
    # it, a weak reference to it stays alive meanwhile). Except a tensor this graph made that the
    # rest of the frame never reads: nothing can have observed it (a weak reference to it, a
    # finalizer, would have broken the graph first), and travelling would make it a graph output.
    # (`every_local` False, when a local never read again cannot be rebuilt, e.g. a generator made
    # in the frame: only the locals the rest of the frame may read travel, the others die here)
    original = original_code(code)
    cells = set(closure_names(original))     # cells travel in the closure (an argument's too)
    order = {n: i for i, n in enumerate(original.co_varnames) if n not in cells}
    read = set().union(*(live_locals_at(code, path.offset) for path in plan.paths))
    if in_block:
        read |= live_locals_at(code, ins.offset)
    if every_local:      # (a frame that reads its own locals, `locals()`, never breaks)
        order = {n: i for n, i in order.items() if n in read or not _made_by_graph(tx.symbolic_locals.get(n))}
    else:
        order = {n: i for n, i in order.items() if n in read}
    needed = sorted((n for n in tx.symbolic_locals if n in order), key=order.get)
    lives = [tuple(needed) for _ in plan.paths]
    live_vars = [tx.symbolic_locals[n] for n in needed]

    # an autocast or inference-mode block open at the break ends in this graph (the resume function
    # re-enters it)
    for v in reversed(stack):
        if isinstance(v, WithExitVariable) and isinstance(v.ctx, _CLOSED_AT_BREAK):
            v.ctx.exit(tx)

    values = [v for v in stack if not isinstance(v, NullVariable)] + live_vars
    iter_slots = _iterator_slots(tx, plan.prefix, values)
    cg = tx.codegen_graph_prefix(values)
    cg.at_break = True
    late = tx.output.side_effects.built_after_write_back(tx, values)
    store_values(tx, cg, [v for v in values if v not in late], iter_slots)
    tx.output.side_effects.codegen_replay(cg)
    store_values(tx, cg, late, iter_slots)
    resume = _ResumeCalls(tx, iter_slots, grad_at_break, data_shaped_result)
    if in_block or ins.opname in _CALLS:
        # (a call may set a trace function: the frame then goes on in the copy of its own code)
        return emit_in_block(tx, cg, ins, stack, plan, lives, needed, resume)
    return emit_linear(tx, cg, ins, stack, cp.kw_names, plan, lives, needed, resume)


def _made_by_graph(var) -> bool:
    """A plain tensor the graph computed (no source: no one outside the frame had it before)."""
    return isinstance(var, TensorVariable) and var.source is None and var.python_type() is torch.Tensor


def _iterator_slots(tx, prefix, values) -> set:
    """Stack slots below the instruction that are lone iterators over known items: they travel as
    fresh tuple iterators over their remaining items (resume.ITER_SLOT). (An iterator over a list
    travels as the real list iterator, rebuilt at its position: the resumed loop must see what the
    rest of the frame does to the list; one over a range as a range iterator: a long range's numbers
    are never listed; one the program also holds through a source as itself.)"""
    counts: dict = {}
    for v in values:
        counts[id(v)] = counts.get(id(v), 0) + 1
    lone = [v for v in prefix if (isinstance(v, ResumedIteratorVariable) or isinstance(v, ListIteratorVariable)
                                  and v.source is None and not v.over_numbers(tx) and v.walks_known_items)
            and counts[id(v)] == 1]
    return {id(v) for v in lone} - _held_elsewhere(tx, lone, values) if lone else set()


def _held_elsewhere(tx, candidates, values) -> set:
    """The ids of those `candidates` that some other value reaches: an item of a value that travels,
    or of what the write-back stores (a container, an object's attribute, a global, a cell). Such an
    iterator is the program's object: a fresh one in the resume function would leave the held one
    behind at the break (`HELD.append(iter(t)); for v in HELD[0]: ...`)."""
    effects = tx.output.side_effects
    roots = [(key, c) for key, c in effects.contents.items()] + [(None, v) for v in values] + \
        [(None, v) for v in effects.globals.values()] + [(None, v) for v in effects.cells.values()]
    wanted = {id(c) for c in candidates}
    seen, found = set(), set()

    def visit(obj, inside: bool):
        if isinstance(obj, (tuple, list)):
            for item in obj:
                visit(item, inside)
        elif isinstance(obj, dict):
            for key, item in obj.items():
                visit(key, inside)
                visit(item, inside)
        elif isinstance(obj, VariableTracker):
            if inside and id(obj) in wanted:
                found.add(id(obj))
            if id(obj) not in seen:
                seen.add(id(obj))
                for part in obj.parts(tx):
                    visit(part, True)
    for key, root in roots:
        # (a tracked container's contents, and a value's parts, hold their items; a candidate's own
        # contents and a travelling value itself do not count)
        if key is not None and id(key) not in wanted:
            visit(root, True)
        elif key is None:
            visit(root, False)
    return found


def _enters_when_rebuilt(v) -> bool:
    exit_method = v.exit_method if isinstance(v, WithExitVariable) else v
    return getattr(exit_method, "enters_when_rebuilt", False)


def store_values(tx, cg, values, iter_slots) -> None:
    """Each value into a temp; an iterator slot as the tuple of its remaining items (made an
    iterator again when the stack is rebuilt). A value whose rebuilding changes the program's state
    (`enters_when_rebuilt`: a real `catch_warnings()` block entered at the break) comes last: the
    others re-read their sources as the trace saw them."""
    for v in sorted(values, key=_enters_when_rebuilt):
        if v in cg.temps or _is_torch_context_exit(v):
            continue
        if id(v) in iter_slots:
            if isinstance(v, ResumedIteratorVariable):
                v.push_remaining_tuple(cg)     # the rest of the tuple this resume function was handed
            else:
                _push_items_tuple(cg, v.remaining_items(tx))
            name = cg.new_temp_name()
            cg.append(Instr("STORE_FAST", name))
            cg.temps[v] = name
        else:
            cg.reconstruct_to_temp(v)


def _push_items_tuple(cg, items) -> None:
    """Push the tuple of an iterator's remaining items. A loop over a long range or tuple breaking in
    its body passes thousands of items: built item by item, the code (and the compile) grows with the
    length. Plain constants travel as one constant tuple; numbers not yet read, as the run of the
    sequence they come from (each `base[i]` read again, as the per-item code would)."""
    if items and all(type(item) is ConstantVariable and item.source is None for item in items):
        cg.load_const(tuple(item.value for item in items))
        return
    run = _item_run(items)
    if run is not None:
        base, start = run
        cg.load_callable(tuple)
        cg.load_callable(map)
        cg.load_const(operator.getitem)
        cg.load_callable(itertools.repeat)
        base.reconstruct(cg)
        cg.load_const(len(items))
        cg.call(2)
        cg.load_const(range(start, start + len(items)))
        cg.call(3)
        cg.call(1)
        return
    for item in items:
        cg.reconstruct(item)
    cg.build_tuple(len(items))


def _item_run(items):
    """(base source, first index) when `items` are unread numbers `base[k], base[k+1], ...` (their
    value is not guarded, so each is fetched again at run time); else None."""
    if len(items) < 2 or any(type(item) is not LazyGuardedConstantVariable for item in items):
        return None
    first = items[0].source
    if not isinstance(first, ItemSource) or first.via is not None or type(first.key) is not int:
        return None
    for n, item in enumerate(items):
        src = item.source
        if not isinstance(src, ItemSource) or src.base != first.base or src.via is not None or \
                type(src.key) is not int or src.key != first.key + n:
            return None
    return first.base, first.key


def emit_linear(tx, cg, ins, stack, kw_names, plan, lives, needed, resume):
    """The instruction is not inside a block: rebuild the real stack and the locals in their own
    slots (what runs natively may look at the frame: a traceback's `tb_frame.f_locals` names the
    program's locals, as eager's), run the instruction, call the resume function with the stack it
    leaves (for a jump: one resume function per side)."""
    _rebuild_stack(cg, stack, resume.iter_slots)
    for name in needed:
        cg.append(Instr("LOAD_FAST", cg.temps[tx.symbolic_locals[name]]))
        cg.append(Instr("STORE_FAST", name))
    drop_frame_references(tx, cg, set(needed))
    emit_set_grad(cg, resume.grad_at_break)
    emit_default_dtype(cg, tx)
    paths = plan.paths
    conts = [Label() for _ in paths]
    native_start = len(cg.instructions)
    if ins.opname == "CALL":
        cg.call(ins.arg, kw_names)
    elif ins.opname in _CALLS or OPCODES[ins.opname].checkpoint is Checkpoint.OPERANDS:
        cg.append(*_native_instrs(ins))
    elif ins.opname == "BEFORE_WITH":
        cg.append(Instr("BEFORE_WITH"))
    else:   # a conditional jump or FOR_ITER: the fall-through path first
        cg.append(Instr(ins.opname.replace("BACKWARD", "FORWARD"), conts[1]))
    _at_original_position(cg.instructions[native_start:], ins)
    for label, path, live in zip(conts, paths, lives):
        cg.append(label)
        _leave_copy(cg, path, live, resume)
    return tx.finish_code(cg)


def _at_original_position(instrs, ins) -> None:
    """Give the native instruction the original's line and columns: what it runs sees the frame at
    that line (a traceback through it, `warnings.warn`'s caller, `traceback.extract_stack()`)."""
    p = ins.positions
    for i in instrs:
        if isinstance(i, Instr):
            i.location = InstrLocation(p.lineno, p.end_lineno, p.col_offset, p.end_col_offset)


def emit_in_block(tx, cg, ins, stack, plan, lives, needed, resume):
    """The break instruction is inside a try/with block: rebuild the real stack and locals, jump
    into a copy of this frame's code at the instruction (its handlers protect it), and leave the
    copy right after it for continuations that call the resume functions."""
    code = tx.code
    _rebuild_stack(cg, stack, resume.iter_slots)
    for name in needed:
        cg.append(Instr("LOAD_FAST", cg.temps[tx.symbolic_locals[name]]))
        cg.append(Instr("STORE_FAST", name))
    drop_frame_references(tx, cg, set(needed))
    emit_set_grad(cg, resume.grad_at_break)
    emit_default_dtype(cg, tx)
    index = instruction_index(code, ins.offset)
    start = call_start_index(code, index) if ins.opname == "CALL" else index
    paths = plan.paths
    enter, conts = Label(), [Label() for _ in paths]
    cg.append(Instr("JUMP_FORWARD", enter))

    def leave(run, native):
        item = run[-1]
        loc = item.location
        if len(paths) == 1:
            # a trace function the instruction set (sys.settrace, pdb.set_trace(), breakpoint()) sees
            # this frame go on as eager's would: natively, in the copy, not in resume functions
            return [*run, Instr("PUSH_NULL", location=loc), Instr("LOAD_CONST", sys.gettrace, location=loc),
                    Instr("PRECALL", 0, location=loc), Instr("CALL", 0, location=loc),
                    Instr("POP_JUMP_FORWARD_IF_NOT_NONE", native, location=loc),
                    Instr("JUMP_FORWARD", conts[0], location=loc)]
        name = item.name.replace("BACKWARD", "FORWARD")
        return [Instr(name, conts[1], location=loc), Instr("JUMP_FORWARD", conts[0], location=loc)]

    # The frame's own instruction (and the call sequence before it) stays as it is, and the entry from
    # the code above runs a second copy of it placed right after, in the same exception range, that
    # leaves for the continuations. Code reaching the instruction again natively -- a loop after a
    # handler ran, a `with` whose exit swallowed the exception -- built the stack its own way (an
    # instance method as the method and its self, where the trace had NULL and a bound method): it
    # goes on natively, never into a continuation that assumes the trace's stack.
    sequence = []

    def record(item):
        sequence.append(item)
        return [item]

    def edit(item):
        native = Label()
        copies = [i.copy() for i in sequence]
        run = [item.copy()]
        if ins.opname == "LOAD_METHOD":     # as the trace ran it, for the continuation's stack
            run = _native_instrs(ins)
            _at_original_position(run, ins)
        return [item, Instr("JUMP_FORWARD", native, location=item.location), enter, *copies,
                *leave(run, native), native]
    replace = {i: record for i in range(start, index)}
    replace[index] = edit
    # the copy is entered only at the instruction: code no path from there reaches is left out
    reached = reachable_from(code, range(start, index + 1))
    copy = body_items(code, replace=replace, keep=reached)
    cg.instructions.extend(copy)
    for label, path, live in zip(conts, paths, lives):
        cg.append(label)
        _leave_copy(cg, path, live, resume)
    # (the copy leaves for a continuation with the stack the native instruction left)
    exits = [(label, len(path.stack)) for label, path in zip(conts, paths)]
    return tx.finish_code(cg, copied=TemplateCopy(copy, exits))


def drop_frame_references(tx, cg, kept: set) -> None:
    """Before the native instruction, the transformed frame lets go of every local but `kept`: the
    arguments it was called with (a value the trace rebound or deleted is not held by eager's frame;
    the others are in temps or their real slots by now) and the temporaries that rebuilt values.
    What the instruction and the resume function need is on the stack or in `kept`, so the
    transformed frame holds the same objects as eager's frame does at that instruction."""
    cells = set(tx.code.co_cellvars)
    for name in tx.arg_names:
        if name not in kept and name not in cells:
            cg.append(Instr("DELETE_FAST", name))     # bound: transformed code never writes its arguments
    temps = dict.fromkeys(i.arg for i in cg.instructions if isinstance(i, Instr) and i.name == "STORE_FAST"
                          and isinstance(i.arg, str) and i.arg.startswith("__bytegraph_") and i.arg not in kept)
    for name in temps:     # unbound, not None: a look at the frame's locals sees only the program's
        cg.append(Instr("DELETE_FAST", name))   # (the code up to here has no branches: each is bound)


def _rebuild_stack(cg, stack, iter_slots) -> None:
    """Push the real stack the break instruction expects: NULLs, torch contexts entered again, the
    other values from their temps (an iterator slot as a fresh iterator)."""
    for v in stack:
        if isinstance(v, NullVariable):
            cg.push_null()
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, GradModeVariable):
            cg.load_const(RESTORE_GRAD[bool(v.ctx.previous)])
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, AutocastVariable):
            cg.load_callable(torch.autocast)   # enter the real context manager again
            for value in (v.ctx.device, v.ctx.dtype, v.ctx.enabled, v.ctx.cache_enabled):
                cg.load_const(value)
            cg.call(4)
            cg.append(Instr("BEFORE_WITH"))
            cg.pop_top()
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, DisableTorchFunctionVariable):
            cg.load_callable(v.ctx.python_type())   # enter the real context manager again
            cg.call(0)
            cg.append(Instr("BEFORE_WITH"))
            cg.pop_top()
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, InferenceModeVariable):
            cg.load_callable(torch.inference_mode)   # enter the real context manager again
            cg.load_const(v.ctx.mode)
            cg.call(1)
            cg.append(Instr("BEFORE_WITH"))
            cg.pop_top()
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, RecordFunctionVariable):
            cg.load_callable(record_function)   # a new range, entered again
            cg.load_const(v.ctx.name)
            cg.load_const(v.ctx.args)
            cg.call(2)
            cg.append(Instr("BEFORE_WITH"))
            cg.pop_top()
        elif isinstance(v, WithExitVariable) and isinstance(v.ctx, DisableSavedTensorsHooksVariable):
            cg.load_callable(torch.autograd.graph.disable_saved_tensors_hooks)   # entered again
            cg.load_const(v.ctx.message)
            cg.call(1)
            cg.append(Instr("BEFORE_WITH"))
            cg.pop_top()
        else:
            cg.append(Instr("LOAD_FAST", cg.temps[v]))
            if id(v) in iter_slots:
                cg.append(Instr("GET_ITER"))


def _leave_copy(cg, path, live, resume) -> None:
    """One continuation of the copied code after the break instruction: store the stack, leave the
    torch contexts on it (innermost first), then call the resume function of `path`."""
    after = path.stack
    for i in reversed(range(len(after))):
        cg.append(Instr("STORE_FAST", f"__bytegraph_cont{i}"))
    # the grad mode the instruction left (leaving and re-entering the blocks resets it)
    cg.load_callable(torch.is_grad_enabled)
    cg.call(0)
    cg.append(Instr("STORE_FAST", "__bytegraph_grad_now"))
    for i in reversed(range(len(after))):
        if _is_torch_context_exit(after[i]):
            cg.push_null()
            cg.append(Instr("LOAD_FAST", f"__bytegraph_cont{i}"))
            for _ in range(3):
                cg.load_const(None)
            cg.call(3)
            cg.pop_top()

    def load_slot(i, v, kind):
        # (an iterator slot: the fresh iterator `_rebuild_stack` made, which the instruction left alone)
        cg.append(Instr("LOAD_FAST", f"__bytegraph_cont{i}"))

    def load_local(name):
        cg.append(Instr("LOAD_FAST", name))

    def load_grad():
        cg.append(Instr("LOAD_FAST", "__bytegraph_grad_now"))
    resume.call(cg, path, live, load_slot, load_local, load_grad)


class _ResumeCalls:
    """Emits the calls of the resume functions of one break."""

    def __init__(self, tx, iter_slots, grad_at_break, data_shaped_result=False):
        self.tx = tx
        self.iter_slots = iter_slots
        self.grad_at_break = grad_at_break
        self.data_shaped_result = data_shaped_result

    def slot_kind(self, v):
        if isinstance(v, NullVariable):
            return NULL_SLOT
        if v is RESULT:
            return SHAPED_SLOT if self.data_shaped_result else VALUE_SLOT
        if v is EXIT:
            return VALUE_SLOT
        if isinstance(v, WithExitVariable):
            if isinstance(v.ctx, GradModeVariable):
                return grad_slot(v.ctx.target)
            if isinstance(v.ctx, AutocastVariable):
                return autocast_slot(v.ctx.device, v.ctx.dtype, v.ctx.enabled, v.ctx.cache_enabled)
            if isinstance(v.ctx, InferenceModeVariable):
                return inference_slot(v.ctx.mode)
            if isinstance(v.ctx, DisableTorchFunctionVariable):
                return torch_function_slot(v.ctx.all_disabled)
            if isinstance(v.ctx, DisableSavedTensorsHooksVariable):
                return saved_hooks_slot(v.ctx.message)
            if isinstance(v.ctx, RecordFunctionVariable):
                return record_function_slot(v.ctx.name, v.ctx.args)
            return VALUE_SLOT
        if isinstance(v, ResumedLiveIterator) and v.watches == "modules" or \
                isinstance(v, ModuleTableIterator) and v.kind != "reversed":
            return TABLE_SLOT
        return ITER_SLOT if id(v) in self.iter_slots else VALUE_SLOT

    def call(self, cg, path, live, load_slot, load_local, load_grad=None):
        tx = self.tx
        origin = original_location(tx.code, path.offset)
        if origin is None:
            raise Unsupported("break_in_resume_prologue", what="a graph break in a resume function's prologue")
        original, orig_offset = origin
        layout = tuple(self.slot_kind(v) for v in path.stack)
        # re-entering the blocks sets the mode the innermost grad-setting one sets: the mode the
        # instruction left is set after them (blocks are only on the stack in the copied code)
        grad_slots = [k for k in layout if is_context_slot(k) and k[0] in ("grad", "inference")]
        grad_after = GRAD_PASSED if grad_slots else None
        assert grad_after is None or load_grad is not None
        # the code returns "call this resume function next" and the C hook calls it, handing it the
        # arguments: no local of this code, tuple or call outlives the transfer (see resume.py)
        cg.load_callable(ResumeCall)
        names = closure_names(original)
        if names:
            cells = set(tx.code.co_cellvars)
            for name in names:
                cg.append(Instr("LOAD_CLOSURE", CellVar(name) if name in cells else FreeVar(name)))
            cg.build_tuple(len(names))
            cg.load_const(resume_code(original, orig_offset, layout, live, grad_after))
            cg.append(Instr("MAKE_FUNCTION", 0x08))
        else:
            cg.load_const(resume_function(original, tx.f_globals, orig_offset, layout, live, grad_after))
        n, start = 0, len(cg.instructions)
        for i, (v, kind) in enumerate(zip(path.stack, layout)):
            if kind == NULL_SLOT or is_context_slot(kind):
                continue
            load_slot(i, v, kind)
            n += 1
        if grad_after == GRAD_PASSED:
            load_grad()
            n += 1
        for name in live:
            load_local(name)
            n += 1
        cg.build_tuple(n)
        # the tuple now holds them: a frame object someone keeps (`sys._getframe()`, a traceback) keeps
        # its locals when the code returns, where eager's frame goes on and lets them go
        loaded = dict.fromkeys(i.arg for i in cg.instructions[start:]
                               if isinstance(i, Instr) and i.name == "LOAD_FAST" and isinstance(i.arg, str))
        for name in loaded:
            cg.append(Instr("DELETE_FAST", name))
        cg.call(2)
        cg.append(Instr("RETURN_VALUE"))


def _is_torch_context_exit(v) -> bool:
    """The `__exit__` of a grad-mode or autocast `with` block (not passed to resume functions: their
    prologue enters the block again)."""
    return isinstance(v, WithExitVariable) and isinstance(v.ctx, (GradModeVariable,) + _CLOSED_AT_BREAK)


# torch blocks whose state the graph enters itself: the graph leaves them at a break
# (saved-tensor hooks: the graph never changes the process's state, so at a break it is the block's outside)
_CLOSED_AT_BREAK = (AutocastVariable, InferenceModeVariable, DisableTorchFunctionVariable,
                    DisableSavedTensorsHooksVariable, RecordFunctionVariable)


def emit_set_grad(cg, mode: bool) -> None:
    cg.load_callable(torch._C._set_grad_enabled)
    cg.load_const(bool(mode))
    cg.call(1)
    cg.pop_top()


def emit_default_dtype(cg, tx) -> None:
    """After the graph: the default dtype the trace reached, when it changed it (the graph's nodes
    set it too, but a graph with no op does not run)."""
    if tx.output.default_dtype != tx.entry_dtype:
        cg.load_callable(torch.set_default_dtype)
        cg.load_const(tx.output.default_dtype)
        cg.call(1)
        cg.pop_top()


def _native_instrs(ins) -> list:
    """The `bytecode` Instrs that run a value instruction of the original code as the trace did."""
    if ins.opname == "BINARY_OP":
        return [Instr("BINARY_OP", BinaryOp(ins.arg))]
    if ins.opname == "COMPARE_OP":
        return [Instr("COMPARE_OP", Compare(ins.arg))]
    if ins.opname in ("LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR"):
        return [Instr(ins.opname, ins.argval)]
    if ins.opname == "LOAD_METHOD":
        # the trace read the attribute (a bound method) under a NULL: the continuation's stack
        return [Instr("LOAD_ATTR", ins.argval), Instr("PUSH_NULL"), Instr("SWAP", 2)]
    if ins.opname in ("CONTAINS_OP", "IS_OP", "CALL_FUNCTION_EX", "UNPACK_SEQUENCE", "BUILD_SET", "BUILD_MAP",
                      "FORMAT_VALUE", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE"):
        return [Instr(ins.opname, ins.arg)]
    return [Instr(ins.opname)]
