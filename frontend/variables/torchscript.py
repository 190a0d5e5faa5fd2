"""A TorchScript function (`torch.jit.script(f)`, `torch.jit.trace(f, ...)`) called from traced code:
one graph node calling the ScriptFunction itself, so the TorchScript interpreter runs it exactly as
eager does (its typed arguments, its own numerics). Compile time only.

Only a function whose TorchScript graph does tensor work on its own values is a node: aten ops that
change nothing in place and read no tensor data into Python, and the interpreter's plumbing (constants,
lists, tuples, control flow on its arguments). A print, a raise, a warning, a call back into Python, an
in-place op, a grad-mode change or an op of another namespace keeps the call a graph break (it runs
natively). The node's result comes from running the function on fake tensors with the executor's
optimization off: such a run does not count as one of the profiling runs after which TorchScript
optimizes the function, so eager's calls are still the ones that decide when it does.

A backend that retraces the graph (aot_eager, inductor) runs the function's ATen ops itself, outside the
interpreter, whose errors are its own (a RuntimeError naming the TorchScript operation, where the op
alone raises IndexError or `_LinAlgError`). So the function is a node only when none of the ATen ops its
fake run records may raise for some values (value_raises.py): then only the trace's checks, on sizes,
dtypes and devices, decide whether it raises.
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from ..graph_break import Unsupported
from ..value_raises import AtenCallRecorder, aten_call_raises_by_value
from .base import VariableTracker
from .lazy_module import fresh_fake
from .lists import BaseSequence
from .tensor import SymNodeVariable, TensorVariable

# the interpreter's plumbing: values, containers, control flow and metadata reads
_PRIM_KINDS = {
    "prim::Constant", "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct", "prim::TupleUnpack",
    "prim::TupleIndex", "prim::TupleSlice", "prim::DictConstruct", "prim::If", "prim::Loop", "prim::NumToTensor",
    "prim::dtype", "prim::device", "prim::layout", "prim::requires_grad", "prim::is_cuda", "prim::unchecked_cast",
    "prim::isinstance", "prim::Uninitialized", "prim::min", "prim::max", "prim::abs", "prim::shape",
}
# aten ops that read tensor data into the interpreter, change process state, or talk to the world
_ATEN_REFUSED = {
    "aten::warn", "aten::set_grad_enabled", "aten::item", "aten::Int", "aten::Float", "aten::Bool",
    "aten::Complex", "aten::IntImplicit", "aten::FloatImplicit", "aten::ComplexImplicit", "aten::ScalarImplicit",
    "aten::tolist", "aten::is_nonzero", "aten::equal", "aten::allclose", "aten::nonzero", "aten::manual_seed",
    "aten::seed", "aten::save", "aten::wait", "aten::_assert_async", "aten::backward", "aten::grad",
    "aten::_set_item", "aten::__setitem__",
}
_CALLERS: dict = {}    # ScriptFunction -> the plain function the graph node calls (kept for the process)


def script_refusal(fn) -> str | None:
    """Why calls of the ScriptFunction `fn` cannot be graph nodes (None: they can)."""
    returns = [str(r.type) for r in fn.schema.returns]
    if returns != ["Tensor"] and not (len(returns) == 1 and returns[0].startswith("Tuple[") and
                                      set(returns[0][6:-1].split(", ")) == {"Tensor"}):
        return f"it returns {', '.join(returns)}, not tensors"
    nodes = list(fn.graph.nodes())
    while nodes:
        node = nodes.pop()
        kind = node.kind()
        if kind.startswith("aten::"):
            if kind in _ATEN_REFUSED or kind.endswith("_") and not kind.endswith("__"):
                return f"its graph calls {kind}"
        elif kind not in _PRIM_KINDS:
            return f"its graph calls {kind}"
        for block in node.blocks():
            nodes.extend(block.nodes())
    return None


def script_caller(fn):
    """A plain function calling `fn` (a graph global fx can name). While tracing (a fake or functional
    tensor dispatch mode is active: our fake run, a backend retracing the graph) the executor's
    optimization is off, so compiling leaves TorchScript's profiling state as eager finds it."""
    caller = _CALLERS.get(fn)
    if caller is None:
        def caller(*args, **kwargs):
            tracing = _get_current_dispatch_mode() is not None
            with torch.jit.optimized_execution(False) if tracing else contextlib.nullcontext():
                return fn(*args, **kwargs)
        caller.__name__ = caller.__qualname__ = f"script_{fn.name}"
        _CALLERS[fn] = caller
    return caller


def _argument_refusal(args) -> str | None:
    for arg in args:
        if isinstance(arg, TensorVariable):
            if arg.cls not in (torch.Tensor, torch.nn.Parameter):
                # TorchScript never asks a subclass's __torch_function__ and returns plain tensors
                return f"an argument is a tensor of {arg.cls.__name__}"
        elif isinstance(arg, SymNodeVariable):
            return "an argument is a symbolic number"
        elif isinstance(arg, BaseSequence):
            return "an argument is a sequence"
        elif not arg.is_python_constant():
            return f"an argument is {arg.describe()}"
    return None


def _may_raise_by_value(tx, fn, args, kwargs) -> bool:
    """Whether an ATen op of `fn`, run on fakes of the arguments, may raise for some values of them
    (False also when that run raises: the call itself then raises and runs natively)."""
    out = tx.output

    def fake(value):
        return fresh_fake(value.example) if isinstance(value, TensorVariable) else value.as_python_constant()
    recorder = AtenCallRecorder()
    with out.tracing_state(), out.fake_mode:
        try:
            fake_args, fake_kwargs = [fake(a) for a in args], {k: fake(v) for k, v in kwargs.items()}
        except TypeError:       # (a tensor that is not a plain fake: nothing to tell)
            return True
        try:
            with recorder:
                script_caller(fn)(*fake_args, **fake_kwargs)
        except Exception:       # noqa: BLE001 - the call raises whatever the values: it runs natively
            return False
    return any(aten_call_raises_by_value(*call) for call in recorder.calls)


@dataclasses.dataclass(frozen=True, eq=False)
class TorchScriptFunctionVariable(VariableTracker):
    fn: object = None

    def describe(self):
        return f"TorchScript function {self.fn.name}"

    def as_python_constant(self):
        return self.fn

    def reconstruct(self, codegen):
        codegen.load_const(self.fn)

    def call_function(self, tx, args, kwargs):
        why = script_refusal(self.fn) or _argument_refusal(list(args) + list(kwargs.values()))
        if why is None and _may_raise_by_value(tx, self.fn, args, kwargs):
            why = "an op of it may raise for some values, with an error of its own there"
        if why is not None:
            raise Unsupported("unsupported_call", fn=self.describe(), detail=f" ({why})")
        return tx.output.call_function(script_caller(self.fn), list(args), dict(kwargs))

