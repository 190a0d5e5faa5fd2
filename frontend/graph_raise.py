"""A graph that raises part way: the frame runs again as Python, from its start.

A graph op can raise for reasons only the values decide (an index out of range, a matrix that is
not positive definite). In eager, the Python effects made before that op have happened (a list
appended to, an attribute set), the program's own `except` / `finally` / `with` blocks around it run,
and grad mode is put back by the `with torch.no_grad()` being left. Compiled, those effects are
replayed after the graph, so a graph that raises loses them, and the exception skips those blocks.

So, where a raise would lose something, the transformed code calls the graph inside a try block. If
the graph raises an `Exception`, grad mode, the default dtype and the CPU random number generator are put
back as they were when the frame started, and the frame's own code runs as Python from its start with the same
arguments: eager's answer, value or exception. That is sound only when the graph changed nothing the
rerun could see: the input tensors it writes into are copied before the call and put back (when one of
its ops can raise by value: value_raises.py), those whose sizes or strides it changes in place
(`x.t_()`) get them back, and it is done only for graphs that hold only CPU tensors; other graphs
raise as before. What no copy puts back is kept out: a change of an input's autograd record
(`x.requires_grad_()`, `x.detach_()`, `x.t_()` of an input requiring grad) breaks the graph
(OutputGraph), and a frame whose graph, run as recorded, writes into an input requiring grad and may
then raise runs eagerly (FrameTranslator._rerun_plan). Process-state blocks a graph run as recorded
enters (autocast, inference mode, DisableTorchFunction) are left when it raises, rerun or not (see
the end of this module).
"""
from __future__ import annotations

import inspect
import random
import threading
import types

import torch
from bytecode import Instr, Label, TryBegin, TryEnd
from bytecode.instr import CellVar, FreeVar

from ..backends.registry import BackendContractError
from ..logs import log
from .. import _C
from .variables.torch import enter_torch_function_disabled, exit_torch_function_disabled


# per thread: the state blocks a graph left open (see the end of this module); an exception not to rerun on
_open = threading.local()


def loses_effects_on_raise(tx) -> bool:
    """Whether an exception from the graph would skip something eager does: Python effects replayed
    after the graph, a grad-mode change, or a block of the program around a graph op."""
    output = tx.output
    return output.ops_under_handler or output.side_effects.pending() or bool(output.random_draws) or \
        output.grad_enabled != tx.entry_grad or output.default_dtype != tx.entry_dtype or any(
            n.target in (torch._C._set_grad_enabled, torch.set_default_dtype) for n in output.graph.nodes)


def rerunnable(output) -> bool:
    """Whether the frame can run again after the graph raised: the graph ran on the CPU (whose random
    number generator is the one put back). The inputs it changes are put back (restoring_inputs)."""
    for node in output.graph.nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and value.device.type != "cpu":
            return False
    return True


# ops whose view can reach memory of the storage outside the tensor viewed (`x.as_strided((4,), (1,), 0)`
# of `x = base[1:3]`): a write through it is put back by saving the whole storage
ANY_STORAGE_VIEWS = {"as_strided", "as_strided_"}


def reaches_whole_storage(graph) -> bool:
    for node in graph.nodes:
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", None)
        if isinstance(name, str) and name.split(".")[0] in ANY_STORAGE_VIEWS:
            return True
    return False


def restoring_inputs(compiled, written: list, reshaped: list, copy: str | None):
    """`compiled`, putting back, if it raises, the inputs it changes: the sizes, strides and storage
    offset of those at positions `reshaped` (`x.t_()`), the values of those at `written`, copied before
    the call (`copy` "values"; "storages": their whole storages). The rerun would otherwise make the
    writes and the changes twice. A graph that raises by no value (value_raises.py) is not worth the
    copies (`copy` None): if it raises anyway after a write (out of memory), the frame is not rerun and
    the exception leaves it as it is."""
    watched = written if copy is None else []
    copied = written if copy else []

    def run(*args):
        shapes = [(args[i], args[i].size(), args[i].stride(), args[i].storage_offset()) for i in reshaped]
        versions = [args[i]._version for i in watched]
        if copy == "storages":
            storages = {args[i].untyped_storage().data_ptr(): args[i].untyped_storage() for i in copied}
            saved = [(storage, storage.clone()) for storage in storages.values()]
        else:
            saved = [(args[i], args[i].detach().clone()) for i in copied]
        try:
            return compiled(*args)
        except Exception as e:
            if any(args[i]._version != v for i, v in zip(watched, versions)):
                _open.not_rerun = e       # written, not put back: leaves the frame as it is
                raise
            with torch.no_grad():
                for t, size, stride, offset in shapes:      # first: a value is copied back into its shape
                    t.as_strided_(size, stride, offset)
                for place, value in saved:
                    place.copy_(value)
            raise
    run.__qualname__ = "compiled_graph"
    return run


def guard_graph_call(cg, tx, start: int, end: int) -> None:
    """Wrap the graph call `cg.instructions[start:end]` in a try block whose handler reruns the
    frame as Python (see the module docstring)."""
    code = tx.code
    rng_local, exc_local = cg.new_temp_name(), cg.new_temp_name()
    handler = Label()
    try_begin = TryBegin(handler, push_lasti=False, stack_depth=0)
    # (Python's generator too, when the frame draws from it before the graph: variables/python_random.py)
    save = _save_generators if tx.output.random_draws else torch.default_generator.get_state
    before = [Instr("PUSH_NULL"), Instr("LOAD_CONST", save),
              Instr("PRECALL", 0), Instr("CALL", 0), Instr("STORE_FAST", rng_local), try_begin]
    cg.instructions[end:end] = [TryEnd(try_begin)]
    cg.instructions[start:start] = before
    plan = RerunPlan(code, tx.entry_grad, tx.entry_dtype)
    cg.append(handler, Instr("STORE_FAST", exc_local))
    cg.push_null()
    cg.append(Instr("LOAD_CONST", rerun_as_python), Instr("LOAD_FAST", exc_local), Instr("LOAD_CONST", plan),
              Instr("LOAD_FAST", rng_local), Instr("PUSH_NULL"), Instr("LOAD_CONST", globals),
              Instr("PRECALL", 0), Instr("CALL", 0))
    if code.co_freevars:
        cg.append(*(Instr("LOAD_CLOSURE", FreeVar(name)) for name in code.co_freevars),
                  Instr("BUILD_TUPLE", len(code.co_freevars)))
    else:
        cg.append(Instr("LOAD_CONST", None))
    for name in tx.arg_names:
        cg.append(Instr("LOAD_DEREF", CellVar(name)) if name in code.co_cellvars else Instr("LOAD_FAST", name))
    cg.call(5 + len(tx.arg_names))
    cg.append(Instr("RETURN_VALUE"))


def _save_generators() -> tuple:
    """The states of torch's CPU generator and of Python's `random` module."""
    return torch.default_generator.get_state(), random.getstate()


class RerunPlan:
    """What the rerun needs besides the values: the frame's own code, its grad mode and default dtype
    at entry."""
    __slots__ = ("code", "grad_enabled", "default_dtype")

    def __init__(self, code, grad_enabled: bool, default_dtype):
        self.code = code
        self.grad_enabled = grad_enabled
        self.default_dtype = default_dtype

    def __repr__(self):
        return f"RerunPlan({self.code.co_name})"


def rerun_as_python(exc, plan: RerunPlan, rng_state, f_globals, closure, *args):
    """The graph raised `exc`: run the frame's code as Python with its arguments `args` (in
    `frame_arg_names` order), nothing compiled, and answer what it answers."""
    if getattr(_open, "not_rerun", None) is exc:
        _open.not_rerun = None
        raise exc       # the graph wrote into an input it had not copied (see restoring_inputs)
    if not isinstance(exc, Exception) or isinstance(exc, BackendContractError):
        raise exc       # KeyboardInterrupt, or a backend that broke its contract: not the program's
    torch._C._set_grad_enabled(plan.grad_enabled)
    if torch.get_default_dtype() != plan.default_dtype:
        torch.set_default_dtype(plan.default_dtype)
    if type(rng_state) is tuple:     # (see _save_generators)
        rng_state, python_state = rng_state
        random.setstate(python_state)
    torch.default_generator.set_state(rng_state)
    code = plan.code
    log("graph", f"a graph of {code.co_name} raised {type(exc).__name__}: running the frame as Python")
    fn = types.FunctionType(code, f_globals, code.co_name, None, closure)
    positional = list(args[:code.co_argcount])
    rest = iter(args[code.co_argcount:])
    keywords = {name: next(rest) for name in code.co_varnames[code.co_argcount:
                                                              code.co_argcount + code.co_kwonlyargcount]}
    if code.co_flags & inspect.CO_VARARGS:
        positional.extend(next(rest))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        keywords.update(next(rest))
    hook = _C.set_callback(None)
    try:
        return fn(*positional, **keywords)
    finally:
        _C.set_callback(hook)


# -- blocks of process state entered by a graph run as recorded ------------------------------------
# A graph the eager backend runs enters autocast, inference-mode and DisableTorchFunction blocks with
# nodes; one that raises inside such a block never reaches the exit node, and the state stayed changed
# after the exception (inference mode left on). Their nodes are retargeted to functions that keep the
# blocks open on a per-thread stack, and the graph's caller leaves them, innermost first, on a raise.
def _open_blocks() -> list:
    blocks = getattr(_open, "blocks", None)
    if blocks is None:
        blocks = _open.blocks = []
    return blocks


def _tracking(enter, leave) -> tuple:
    """Stand-ins for an enter / exit pair that keep the block on the stack while it is open."""
    def enter_block(*args):
        ctx = enter(*args)
        _open_blocks().append((leave, ctx))
        return ctx

    def exit_block(ctx):
        blocks = _open_blocks()
        for i in range(len(blocks) - 1, -1, -1):
            if blocks[i][1] is ctx:
                del blocks[i]
                break
        return leave(ctx)
    enter_block.__name__ = enter_block.__qualname__ = f"tracked{enter.__name__}"
    exit_block.__name__ = exit_block.__qualname__ = f"tracked{leave.__name__}"
    return enter_block, exit_block


_TRACKED = {}    # enter or exit function -> its stand-in
for _enter, _leave in ((torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast),
                       (torch.autograd.grad_mode._enter_inference_mode, torch.autograd.grad_mode._exit_inference_mode),
                       (enter_torch_function_disabled, exit_torch_function_disabled)):
    _TRACKED[_enter], _TRACKED[_leave] = _tracking(_enter, _leave)


def track_state_blocks(gm) -> bool:
    """Retarget the state-block nodes of `gm`, a graph about to be run as recorded (see above);
    whether it has any."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _TRACKED]
    for node in nodes:
        node.target = _TRACKED[node.target]
    if nodes:
        gm.recompile()
    return bool(nodes)


def leaving_blocks_on_raise(compiled):
    """`compiled` (a graph whose state blocks are tracked), leaving the blocks it left open when it
    raises, innermost first."""
    def run(*args):
        blocks = _open_blocks()
        depth = len(blocks)
        try:
            return compiled(*args)
        except BaseException:
            while len(blocks) > depth:
                leave, ctx = blocks.pop()
                leave(ctx)
            raise
    run.__qualname__ = "compiled_graph"
    return run
