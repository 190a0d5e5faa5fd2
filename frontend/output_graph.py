"""OutputGraph: the fx graph being built for one frame, its fake values, inputs, guards and side
effects, and the final step that compiles the graph with the backend. Compile time only.

Symbolic shapes: input tensors are fakeified with the dims the frame's `ShapePolicy` makes dynamic;
each new size symbol becomes a SymInt placeholder (fed `L['x'].size(0)` at run time), sizes read
in Python code are SymNodeVariables, and `final_guards()` adds the ShapeEnv's assumptions as
SHAPE guards (guards/shape.py). Unspecialized Python ints/floats (`add_scalar_input`) are SymInt /
SymFloat placeholders of their own symbols, fed the real number from their source.

Grad mode and autocast are state of the trace (`grad_enabled`, `autocast_stack`), checkpointed
with the rest; fake propagation runs under them (`tracing_state`), the process's state is never
changed while tracing."""
from __future__ import annotations

import contextlib
import keyword
import math
import operator
import re
import sys
import weakref
from typing import Any, NamedTuple

import sympy
import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
)
from torch.fx.experimental.symbolic_shapes import (DimDynamic, GuardOnDataDependentSymNode,
                                                    PendingUnbackedSymbolNotFound, ShapeEnv,
                                                    compute_unbacked_bindings, constrain_range,
                                                    statically_known_true)
from torch.utils._sympy.numbers import int_oo

from ..guards.guard import Guard, TensorMeta, global_state_guards, memory_sharing
from ..probe import class_dict_lookup, source_lines_kept_apart, stack_lines_unread
from ..guards.source import InstanceDictSource, RandomDrawSource, TensorPropertySource
from ..guards.shape import ShapeEnvSource, ShapeGuardError, ShapePolicy, shape_guards, tensor_properties
from .builder import instance_dict, wrap
from .eager_check import eager_refusal
from .graph_break import Unsupported, fold, user_error
from .graph_raise import ANY_STORAGE_VIEWS, leaving_blocks_on_raise, track_state_blocks
from .side_effects import SideEffects, SideEffectsState
from .variables.constant import ConstantVariable, is_constant_value
from .variables.lists import (
    BaseSequence,
    ListVariable,
    NamedTupleVariable,
    SizeVariable,
    SliceVariable,
    TupleVariable,
    is_named_tuple_class,
)
from .variables.base import VariableTracker
from .variables.nn_module import NNModuleVariable
from .variables.tensor import SymNodeVariable, TensorVariable
from .variables.global_state import SAVED_HOOKS_AT_ENTRY
from .variables.torch import (
    TF_ALL_DISABLED,
    TF_ENABLED,
    TF_SUBCLASS_DISABLED,
    enter_torch_function_disabled,
    exit_torch_function_disabled,
    torch_function_state_now,
)
from .variables.torch_function import replaced_names
from .variables.user_defined import UserDefinedObjectVariable

# torch.Tensor's own __torch_function__: a subclass keeping it converts every torch result to itself
_DEFAULT_TORCH_FUNCTION = torch.Tensor.__dict__["__torch_function__"]

# the in-place operators (`x += y`) and the in-place methods that write no element (a change of metadata,
# of autograd flags or names): see _written_tensors
_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
                       operator.irshift, operator.imatmul, operator.setitem}
_WRITING_NO_ELEMENT = {"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_", "swapdims_", "swapaxes_",
                       "requires_grad_", "detach_", "retain_grad", "share_memory_", "rename_", "refine_names_",
                       "resize_", "resize_as_", "set_"}


def _written_tensors(target, op_name, fake_args, fake_kwargs) -> list:
    """The tensors whose elements a call writes: the first operand of an in-place method or operator
    (`x.add_(1)`, `x += 1`, `x[i] = v`), and `out=`."""
    written = []
    if fake_args and (target in _IN_PLACE_OPERATORS or isinstance(op_name, str) and op_name.endswith("_") and
                      not op_name.endswith("__") and op_name not in _WRITING_NO_ELEMENT):
        written.append(fake_args[0])
    out = fake_kwargs.get("out")
    written.extend(out if isinstance(out, (tuple, list)) else [out])
    return [t for t in written if isinstance(t, torch.Tensor)]


def _has_internal_overlap(t) -> bool:
    """Whether elements of `t` share memory for sure (a dim of stride 0 and size > 1, as `expand` makes):
    what ATen's `has_internal_overlap` answers Yes for. (A symbolic stride is a product of sizes, none 0; a
    symbolic size is at least 2: sizes 0 and 1 are specialized. Neither is compared, which would guard it.)"""
    return any(type(st) is int and st == 0 and (type(sz) is not int or sz > 1) for sz, st in zip(t.size(), t.stride()))


# what autograd raises for an in-place write into a leaf requiring grad, or into a view of one
_LEAF_WRITE_ERRORS = ("a leaf Variable that requires grad is being used in an in-place operation",
                      "a leaf Variable that requires grad has been used in an in-place operation",
                      "a view of a leaf Variable that requires grad is being used in an in-place operation")
# in-place ops that change a tensor's metadata (shape/stride), which checkpoints must undo (and a graph
# that raises, for its inputs: see graph_raise.py); as methods or aten ops (`aten.t_`, `t_.default`)
_METADATA_MUTATIONS = {"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_", "swapdims_", "swapaxes_"}
# in-place ops that replace or grow a tensor's storage: functionalizing backends (aot_eager, inductor)
# cannot express them on a graph input, so they run as Python (a graph break)
_STORAGE_MUTATIONS = {"resize_", "resize_as_", "set_", "_resize_output_", "sparse_resize_",
                      "sparse_resize_and_clear_", "resize_as_sparse_"}
# constructors that infer a dtype from their data: a numpy scalar there gives numpy's dtype
# (`torch.tensor([n, np.float32(2)])` is float32 whatever the default dtype), not a Python number's
_DTYPE_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray, "new_tensor"}


# ops that write into tensors they are given, not only the first, without moving their version counter:
# batch norm's running statistics (in training) are updated so
_UNVERSIONED_WRITES = {"batch_norm", "instance_norm", "native_batch_norm", "_native_batch_norm_legit",
                       "_batch_norm_with_update", "_batch_norm_impl_index", "fused_moving_avg_obs_fake_quant",
                       "_fused_moving_avg_obs_fq_helper"}
# of those, the norms whose statistics are written only when a flag says so (batch norm in training,
# instance norm on its input's statistics): function -> (its parameters up to the flag, the flag). Their
# weight, bias and input are never written (an eval-mode batch norm writes nothing: the weight it reads
# is no input written into, which a graph that may raise would have to put back)
_F = torch.nn.functional
_STATISTICS_WRITES = {
    _F.batch_norm: (("input", "running_mean", "running_var", "weight", "bias", "training"), "training"),
    _F.instance_norm: (("input", "running_mean", "running_var", "weight", "bias", "use_input_stats"),
                       "use_input_stats"),
    torch.batch_norm: (("input", "weight", "bias", "running_mean", "running_var", "training"), "training"),
    torch.instance_norm: (("input", "weight", "bias", "running_mean", "running_var", "use_input_stats"),
                          "use_input_stats"),
}


def _unversioned_written_operands(node):
    """The operands of a node of `_UNVERSIONED_WRITES` that it may write into: a norm's running statistics
    unless its flag is the constant False (the arguments after the flag are numbers); every operand of
    the others (or of a call not bound here)."""
    spec = _STATISTICS_WRITES.get(node.target) if node.op == "call_function" else None
    if spec is None:
        return node.args, node.kwargs
    params, flag = spec
    bound = dict(zip(params, node.args))
    if any(k in bound for k in node.kwargs):
        return node.args, node.kwargs
    bound.update(node.kwargs)
    if flag in bound and bound[flag] is False:
        return ()
    return bound.get("running_mean"), bound.get("running_var")


def _refuse_foreach_reading_what_it_wrote(name, args, kwargs) -> None:
    """`torch._foreach_add_([x, y], [y, x])` on the CPU writes `x`, then reads the new `x` for `y`; a
    backend that functionalizes the graph reads every operand before writing any (`y` got the old `x`).
    An in-place foreach op whose operands at one position view the storage of a tensor it writes at
    another, or that writes one storage twice, runs as Python."""
    written = args[0] if args and isinstance(args[0], (list, tuple)) else ()
    storages = [_storage_of(t) for t in written]
    if len(set(storages)) < len(storages):       # (`_foreach_add_([x, x], 1)` adds twice)
        raise Unsupported("unsupported_call", fn=f"torch.{name}", detail=" (it writes one storage twice)")
    for operand in list(args[1:]) + list(kwargs.values()):
        if not isinstance(operand, (list, tuple)):
            continue
        for i, t in enumerate(operand):
            storage = _storage_of(t)
            if storage is not None and any(s == storage for j, s in enumerate(storages) if j != i):
                raise Unsupported("unsupported_call", fn=f"torch.{name}",
                                  detail=" (an operand views a tensor the op writes at another position)")


def _storage_of(t):
    """An id of `t`'s storage; None for a value that is no tensor or has none to reach (a tensor batched
    by vmap, which is no graph input: the inputs are the tensors it wraps)."""
    if not isinstance(t, torch.Tensor):
        return None
    try:
        return t.untyped_storage()._cdata
    except NotImplementedError:
        return None


def _within_contiguous(t: torch.Tensor, size, stride, offset) -> bool:
    """Whether every element `t` views is one of a contiguous tensor of `size`, `stride`, `offset` in the
    same storage (False when that is not known for every size)."""
    if statically_known_true(t.numel() == 0):
        return True
    expected = 1
    for n, s in reversed(list(zip(size, stride))):
        if not (statically_known_true(n == 1) or statically_known_true(s == expected)):
            return False
        expected = expected * n
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return statically_known_true(t.storage_offset() >= offset) and statically_known_true(last < offset + expected)


def _scalar_like(t: torch.Tensor) -> bool:
    # (a Python int or float holds any value of these dtypes exactly)
    return t.dim() == 0 and type(t) is torch.Tensor and t.device.type == "cpu" and \
        t.dtype in (torch.int64, torch.float64, torch.float32, torch.int32)


def _is_pure_function(fn) -> bool:
    """Whether a call can be dropped when its result is unused: Python operators that do not
    mutate, and torch ops whose schema says they do not mutate. Anything else is kept."""
    if getattr(fn, "__module__", None) in ("_operator", "operator", "math"):
        name = getattr(fn, "__name__", "")
        in_place = name.startswith("i") and hasattr(operator, name[1:])  # iadd, imul, ...
        return fn not in (operator.setitem, operator.delitem) and not in_place
    if isinstance(fn, torch._ops.OpOverload):
        return not fn._schema.is_mutable
    return False


def _prints_as_graph_constant(value) -> bool:
    """Whether fx's generated code spells `value` as an argument it can evaluate: plain immutable
    constants (tuples of them too) and the type-information objects, which fx knows."""
    return is_constant_value(value) or isinstance(value, (torch.finfo, torch.iinfo))


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
_DIVISIONS = {operator.floordiv, operator.mod, operator.truediv, divmod}


def _raise_on_zero_divisor(fn, dividend, divisor):
    """`a // b`, `a % b`, `a / b`, `divmod(a, b)` with a symbolic operand: whether `b` is zero is
    decided here (a guard when `b` is symbolic); zero raises the program's ZeroDivisionError, with
    the message CPython gives for those operand types."""
    if isinstance(divisor, SymNodeVariable):
        zero = SymNodeVariable(proxy=None, value=divisor.value == 0).evaluate()
    else:
        zero = divisor.as_python_constant() == 0
    if zero:
        fold(fn, dividend.python_type()(1), divisor.python_type()(0))


# Python functions that would specialize a symbolic number, and their symbolic equivalents
_SYMBOLIC_EQUIVALENTS = {float: torch.sym_float, math.sqrt: torch._sym_sqrt}
# functions whose symbolic result is computed without specializing (the rest get concrete args)
_SYMBOLIC_AWARE = {abs, round, math.floor, math.ceil, math.trunc, bool, torch.sym_float, torch.sym_int,
                   torch._sym_sqrt, torch.sym_max, torch.sym_min, torch.sym_not}
# metadata-only graph nodes: dropped when their result is unused
_PURE_METHODS = {"size", "stride", "storage_offset", "numel", "dim", "nelement"}


_INT64 = range(-2 ** 63, 2 ** 63)
_INFINITIES = (int_oo, -int_oo, sympy.oo, -sympy.oo, sympy.zoo, sympy.nan)


def _hint(var):
    """The value a symbolic number stands for in this trace (None: unbacked), or a constant's."""
    if isinstance(var, SymNodeVariable):
        node = getattr(var.value, "node", None)
        return node.hint if node is not None and node.has_hint() else None
    return var.as_python_constant() if var.is_python_constant() else None


def _hints_fit_int64(fn, args, kwargs) -> bool:
    """Whether a Python number operation on symbolic operands stays in the 64-bit range torch's symbolic
    ints model, for the operands and the result this trace sees (Python's ints are unbounded)."""
    hints = [_hint(a) for a in args]
    if any(type(h) is int and h not in _INT64 for h in hints):
        return False
    if kwargs or any(h is None for h in hints):
        return True
    try:
        result = fn(*hints)
    except Exception:  # noqa: BLE001 - the symbolic call raises it as it did (a zero divisor is handled before)
        return True
    return all(type(r) is not int or r in _INT64 for r in (result if type(result) is tuple else (result,)))


def _has_infinity(var) -> bool:
    """Whether a symbolic result (or an item of a tuple of them: divmod) has an infinity in its expression."""
    if isinstance(var, TupleVariable):
        return any(_has_infinity(item) for item in var.items)
    node = getattr(getattr(var, "value", None), "node", None) if isinstance(var, SymNodeVariable) else None
    expr = getattr(node, "_expr", None)
    return isinstance(expr, sympy.Basic) and expr.has(*_INFINITIES)


def _is_python_function(fn) -> bool:
    """A builtin, `math` or `operator` function (not a torch op, which takes SymInts as they are)."""
    return getattr(fn, "__module__", None) in ("builtins", "math", "_operator", "operator") or \
        fn in (int, float, bool, str, complex)


def _is_symbolic(value) -> bool:
    return isinstance(value, _SYMBOLIC) and bool(value.node.expr.free_symbols)


class GraphState(NamedTuple):
    """What `OutputGraph.checkpoint()` saves: enough to undo everything traced since."""
    last_node: Any               # the graph's last node then (None: empty)
    n_graph_inputs: int
    input_by_source: dict
    guards: set
    side_effects: SideEffectsState
    wrapped_objects: dict
    grad_enabled: bool
    n_metadata_log: int          # fake tensors mutated in place since are restored from the log
    n_constant_tensors: int
    input_properties: dict
    symbol_inputs: dict
    autocast_stack: Any
    function_modes: tuple
    inference_mode: bool
    inference_stack: tuple
    torch_function_state: int
    torch_function_stack: tuple
    saved_hooks_message: Any
    default_dtype: Any
    n_random_draws: int


def backend_declares(backend, attribute: str) -> bool:
    """Whether the backend (or the one it wraps: `functools.partial` options, the debugging wrapper) sets
    `attribute` true:
    `specialize_float` (it cannot take SymFloat inputs), `eager_autograd` (it runs the graph's ops as
    recorded, with torch's own autograd, not through AOTAutograd)."""
    while backend is not None:
        if getattr(backend, attribute, False):
            return True
        backend = getattr(backend, "func", None)
    return False


# Python frames a compile may need below the frame it compiles (inlined calls nest the translator)
_COMPILE_STACK_ROOM = 250


def _stack_depth() -> int:
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


class OutputGraph:
    def __init__(self, code, config, backend, shape_policy: ShapePolicy | None = None, fullgraph: bool = False):
        self.code = code
        self.config = config
        # `.item()` is an unbacked symbol of the graph (not a break): asked for by the config, and
        # implied by fullgraph=True, where the break would be an error (as torch.compile does)
        self.capture_scalar_outputs = config.capture_scalar_outputs or fullgraph
        self.backend = backend
        self.eager_autograd = backend_declares(backend, "eager_autograd")
        self.graph = torch.fx.Graph()
        self.tracer = torch.fx.proxy.GraphAppendingTracer(self.graph)
        self.shape_policy = shape_policy if shape_policy is not None else ShapePolicy(mode=False)
        self._fake_mode = None              # (made when a tensor or symbol first needs it: `fake_mode`)
        self.graph_inputs: list = []        # (source, proxy, real value; a SymInt for a size input)
        # instructions traced for this frame, inlined calls included (never rolled back: work done)
        self.instructions_traced = 0
        # the compile began with little room left on the Python stack (a program recursing near its
        # limit): a RecursionError while tracing is then the program's depth, not a loop of the
        # compiler's own, and the call runs as is (translator.py, convert_frame.py)
        self.started_deep = sys.getrecursionlimit() - _stack_depth() < _COMPILE_STACK_ROOM
        # whether a trace that meets no tensor gives up (see config.max_instructions_without_tensors)
        self.gives_up_without_tensors = True
        # the frame's caller handled no exception when the compile began (made while the frame is
        # about to run, before any handler of the compiler's): exception_state.caller_handles_nothing
        self.caller_handled_none = sys.exception() is None
        self.input_by_source: dict = {}
        self.input_properties: dict = {}    # tensor source -> its sizes/strides/offset at input creation
        self.symbol_inputs: dict = {}       # size symbol -> SymNodeVariable of its placeholder
        self.guards: set = set(global_state_guards())
        self.side_effects = SideEffects()
        self.side_effects.add_guard = lambda guard: self.guards.add(guard)
        # exceptions raised while tracing: their traceback and context are run-time state, so they
        # are never rebuilt (id -> tracker; an entry left by a rolled-back trace only costs a break)
        self.raised_exceptions: dict = {}
        self.wrapped_objects: dict = {}     # id(real) -> (real, tracker): one tracker per real object
        # id(fake) -> the TensorVariable of that fake (`_tracked`; entries of rolled-back nodes are erased)
        self.tensor_by_example: dict = {}
        self.grad_enabled = torch.is_grad_enabled()
        # the default dtype here: the process's at entry (a global-state guard), changed by
        # `torch.set_default_dtype` nodes of a graph run as recorded (set_default_dtype)
        self.default_dtype = torch.get_default_dtype()
        # autocast blocks open at this point of the trace, outermost first: (enter node, the
        # (device, dtype, enabled, cache_enabled) entered). Like grad mode, this is state of the
        # trace, not of the process: fake propagation runs under it (`tracing_state`), the graph
        # enters/exits it with `_enter_autocast`/`_exit_autocast` nodes
        self.autocast_stack: tuple = ()
        # inference mode here, and the `with torch.inference_mode(m)` blocks open at this point of the
        # trace, outermost first: (enter node, inference mode and grad mode before it), which the
        # block's exit restores (eager's exit restores the whole autograd state)
        self.inference_at_entry = torch.is_inference_mode_enabled()
        self.inference_mode = self.inference_at_entry
        self.inference_stack: tuple = ()
        # torch-function dispatch state here (variables/torch.py TF_*), and the Disable* blocks open:
        # (enter node or None, state before it)
        self.torch_function_state = torch_function_state_now()
        self.torch_function_stack: tuple = ()
        # TorchFunctionModes the trace models that are open here, outermost first (their trackers;
        # variables/function_mode.py): state of the trace only, the graph runs with no mode
        self.function_modes: tuple = ()
        # whether saved-tensor hooks are disabled here, and with which message (variables/global_state.py;
        # its _ENTRY: as in the process when the frame started, read and guarded when asked)
        self.saved_hooks_message = SAVED_HOOKS_AT_ENTRY
        self.metadata_log: list = []        # (fake tensor, size, stride, offset) before a metadata mutation
        # id(fake) -> fake of each `t.data` read (kept alive so its id is never reused): see data_alias
        self.data_aliases: dict = {}
        # while an autograd.Function's backward is traced to prove it pure: its checks (backward_proof.py)
        self.backward_proof = None
        # how many speculative traces (rolled back, of code eager may run later or not at all: an
        # autograd.Function's forward and backward proofs, torch.cond branches) are open here
        self.speculative_depth = 0
        # ids of the modules whose attributes the trace read (a value read may be re-read from its
        # source after the graph: a lazy module's state must not change under it, variables/lazy_module.py)
        self.modules_read: set = set()
        # nodes of `as_strided` views of a graph input's storage (see _refuse_writes_beyond_inputs)
        self.strided_input_views: list = []
        self.constant_tensors: list = []
        # classes made while tracing (`collections.namedtuple(...)`): eager makes a new one on every
        # call, so the transformed code never loads the trace's one: it makes its own by the same
        # call, once per class (codegen.load_const). class -> (f_globals, args, kwargs)
        self.trace_local_classes: dict = {}
        # nn.Modules read from the frame, guarded by type (their int attributes stay constants):
        # source -> module
        self.module_sources: dict = {}
        self._names: set = set()
        # how many times a prune erased nodes: a prune is not undone by restore(), so a checkpoint taken
        # before it cannot be restored exactly (see FrameTranslator.break_at_checkpoint)
        self.prunes = 0
        # a graph op was traced inside a try / with block of the program (see graph_raise.py)
        self.ops_under_handler = False
        # numbers drawn from Python's `random` module, in trace order: (function, args, kwargs), each
        # made by the transformed code before the graph and fed to it (variables/python_random.py)
        self.random_draws: list = []

    # -- checkpoints ------------------------------------------------------------
    @property
    def fake_mode(self) -> FakeTensorMode:
        """The fake-tensor mode of the trace and its ShapeEnv, made when first needed: a frame that
        meets no tensor or symbolic number (pure Python, which a frame breaking often is around its
        tensor work) never pays for them."""
        if self._fake_mode is None:
            shape_env = ShapeEnv(allow_scalar_outputs=self.capture_scalar_outputs,
                                 allow_dynamic_output_shape_ops=False)
            with stack_lines_unread(), source_lines_kept_apart():   # (it records the stack it is made on)
                self._fake_mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=False)
        return self._fake_mode

    @property
    def shape_env(self) -> ShapeEnv:
        return self.fake_mode.shape_env

    def checkpoint(self) -> GraphState:
        # (the last node read from the end of fx's linked list: a checkpoint comes before most instructions)
        return GraphState(next(iter(reversed(self.graph.nodes)), None), len(self.graph_inputs),
                          dict(self.input_by_source), set(self.guards), self.side_effects.snapshot(),
                          dict(self.wrapped_objects), self.grad_enabled, len(self.metadata_log),
                          len(self.constant_tensors), dict(self.input_properties), dict(self.symbol_inputs),
                          self.autocast_stack, self.function_modes, self.inference_mode, self.inference_stack,
                          self.torch_function_state, self.torch_function_stack, self.saved_hooks_message,
                          self.default_dtype, len(self.random_draws))

    def restore(self, state: GraphState) -> None:
        nodes = list(self.graph.nodes)
        keep = 0 if state.last_node is None else nodes.index(state.last_node) + 1
        for node in reversed(nodes[keep:]):
            self.graph.erase_node(node)
        # placeholders go before the other nodes, so inputs added since may sit before `last_node`
        for _, proxy, _ in reversed(self.graph_inputs[state.n_graph_inputs:]):
            if proxy.node.graph is self.graph and proxy.node in self.graph.nodes and not proxy.node.users:
                self.graph.erase_node(proxy.node)
        del self.graph_inputs[state.n_graph_inputs:]
        self.input_properties = state.input_properties
        self.symbol_inputs = state.symbol_inputs
        self.input_by_source = state.input_by_source
        self.guards = state.guards
        self.side_effects.restore(state.side_effects)
        self.wrapped_objects = state.wrapped_objects
        self.grad_enabled = state.grad_enabled
        self.autocast_stack = state.autocast_stack
        self.function_modes = state.function_modes
        self.inference_mode = state.inference_mode
        self.inference_stack = state.inference_stack
        self.torch_function_state = state.torch_function_state
        self.torch_function_stack = state.torch_function_stack
        self.saved_hooks_message = state.saved_hooks_message
        self.default_dtype = state.default_dtype
        if len(self.metadata_log) > state.n_metadata_log:
            with self.fake_mode:
                for fake, size, stride, offset in reversed(self.metadata_log[state.n_metadata_log:]):
                    fake.as_strided_(size, stride, offset)
        del self.metadata_log[state.n_metadata_log:]
        del self.constant_tensors[state.n_constant_tensors:]
        del self.random_draws[state.n_random_draws:]
        self.forget_constants()

    def forget_constants(self) -> None:
        """Drop the values fake propagation keeps for tensors made from constants (`known_value`): an op
        undone by a rollback, or refused after its fake run, may have written into one."""
        if self._fake_mode is None:
            return          # (no fake tensor made yet)
        converter = self._fake_mode.fake_tensor_converter
        for refs in converter.constant_storage_mapping.values():
            for ref in refs:
                fake = ref()
                if fake is not None:
                    fake.constant = None
        converter.constant_storage_mapping.clear()

    # -- inputs -----------------------------------------------------------------
    def _unique_name(self, base: str) -> str:
        base = re.sub(r"[^0-9a-zA-Z_]+", "_", base).strip("_") or "x"
        if base[0].isdigit():
            base = "_" + base
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    def _placeholder(self, name: str):
        # placeholders go before every other node
        first_non_input = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        if first_non_input is not None:
            with self.graph.inserting_before(first_non_input):
                return self.graph.placeholder(name)
        return self.graph.placeholder(name)

    def add_graph_input(self, value: torch.Tensor, source) -> TensorVariable:
        if source in self.input_by_source:
            return self.input_by_source[source]
        name = self._unique_name(source.name().replace("L[", "L_").replace("G[", "G_"))
        node = self._placeholder(name)
        dims = self.shape_policy.dynamic_dims(value, source) if value.dim() else {}
        if dims:
            fake = self.fake_mode.from_tensor(value, source=ShapeEnvSource(source),
                                              symbolic_context=ShapePolicy.symbolic_context(value, dims))
        else:
            fake = self.fake_mode.from_tensor(value, static_shapes=True)
        node.meta["example_value"] = fake
        node.meta["source"] = source
        node.meta["version"] = fake._version   # a later in-place op on it (or a view) bumps it
        proxy = torch.fx.Proxy(node, self.tracer)
        var = self._tracked(TensorVariable(proxy=proxy, cls=type(value), source=source))
        self.graph_inputs.append((source, proxy, value))
        self.input_by_source[source] = var
        # guards come from the metadata as it is now: later in-place metadata ops (`x.t_()`)
        # change the fake tensor, not what the input must look like
        dynamic_sizes = {i for i, s in enumerate(fake.size()) if _is_symbolic(s)}
        dynamic_strides = {i for i, s in enumerate(fake.stride()) if _is_symbolic(s)}
        self.guards.add(Guard.tensor(source, value, TensorMeta.of(value, dynamic_sizes, dynamic_strides)))
        if dynamic_sizes or dynamic_strides or _is_symbolic(fake.storage_offset()):
            props = tensor_properties(source, fake)
            self.input_properties[source] = props
            values = list(fake.size()) + list(fake.stride()) + [fake.storage_offset()]
            for (prop_source, expr), sym in zip(props, values):
                if isinstance(expr, sympy.Symbol) and expr not in self.symbol_inputs:
                    self._add_size_input(prop_source, sym)
        return var

    def _read_inputs_as_numbers(self, args) -> bool:
        """A torch call read a tensor's value as a Python number (`torch.arange(n)`, `torch.zeros(n)`):
        as torch.compile does, each 0-d int64/float64/int32/float32 CPU graph input among `args` gets a symbol of
        its own, with its real value as hint and defined by `L['n'].item()`, so fake propagation gives
        sizes in that symbol instead of a data-dependent break. The graph still computes from the
        tensor at run time; whatever tracing assumed about the value is guarded. (Only these dtypes:
        for them a Python number says exactly what the tensor holds.) True if any input got one."""
        found = False
        for var in args:
            real = self.real_value_of(var) if isinstance(var, TensorVariable) else None
            fake = var.example if real is not None else None
            if real is None or not _scalar_like(real) or fake.item_memo is not None:
                continue
            number = real.item()
            if isinstance(number, float) and not math.isfinite(number):
                continue
            item_source = TensorPropertySource(var.source, "item")
            env_source = ShapeEnvSource(item_source)
            sym = self.shape_env.create_unspecified_symbol(number, env_source, dynamic_dim=DimDynamic.DYNAMIC)
            make = self.shape_env.create_symintnode if isinstance(number, int) else self.shape_env.create_symfloatnode
            fake.item_memo = make(sym, hint=number, source=env_source)     # dropped by any in-place change
            self.input_properties[var.source] = [(item_source, sym)]
            found = True
        return found

    def add_scalar_input(self, value, source) -> SymNodeVariable:
        """An unspecialized Python int/float (see guards/shape.py): a SymInt/SymFloat placeholder
        of its own symbol, fed the real number from `source`. Guards: its type, and whatever
        tracing assumes about the symbol (printed over `source` like a size)."""
        known = self.input_by_source.get(source)
        if known is not None:
            return known
        env_source = ShapeEnvSource(source)
        sym = self.shape_env.create_unspecified_symbol(value, env_source, dynamic_dim=DimDynamic.DYNAMIC)
        if type(value) is int:
            symbolic = self.shape_env.create_symintnode(sym, hint=value, source=env_source)
        else:
            symbolic = self.shape_env.create_symfloatnode(sym, hint=value, source=env_source)
        node = self._placeholder(self._unique_name(source.name().replace("L[", "L_").replace("G[", "G_")))
        node.meta["example_value"] = symbolic
        node.meta["source"] = source
        proxy = torch.fx.Proxy(node, self.tracer)
        var = SymNodeVariable(proxy=proxy, value=symbolic, source=source)
        self.graph_inputs.append((source, proxy, symbolic))
        self.input_by_source[source] = var
        self.symbol_inputs[sym] = var
        self.input_properties[source] = [(source, sym)]
        self.guards.add(Guard.type_match(source, type(value)))
        return var

    def add_random_draw(self, fn, args: tuple, kwargs: dict, kind: type, bounds) -> SymNodeVariable:
        """A number `fn(*args, **kwargs)` draws from Python's `random` module when the transformed code
        runs: a graph input of an unbacked symbol (an int within `bounds`), so the trace never decides
        anything on its value."""
        source = RandomDrawSource(len(self.random_draws))
        self.random_draws.append((fn, args, kwargs))
        with self.shape_env.ignore_fresh_unbacked_symbols():   # (bound by the placeholder, not by an op)
            if kind is int:
                symbolic = self.shape_env.create_unbacked_symint()
                constrain_range(symbolic, min=bounds[0], max=bounds[1])
            else:
                symbolic = self.shape_env.create_unbacked_symfloat()
        node = self._placeholder(self._unique_name(f"random_draw{source.index}"))
        node.meta["example_value"] = symbolic
        node.meta["source"] = source
        proxy = torch.fx.Proxy(node, self.tracer)
        var = SymNodeVariable(proxy=proxy, value=symbolic)
        self.graph_inputs.append((source, proxy, symbolic))
        self.symbol_inputs[symbolic.node.expr] = var      # (sizes made of it read back as this value)
        return var

    def _add_size_input(self, source, sym: torch.SymInt) -> None:
        """A SymInt placeholder for a new size symbol, fed `source` (e.g. `L['x'].size(0)`)."""
        node = self._placeholder(self._unique_name(str(sym.node.expr)))
        node.meta["example_value"] = sym
        node.meta["source"] = source
        proxy = torch.fx.Proxy(node, self.tracer)
        self.graph_inputs.append((source, proxy, sym))
        # the sourced tracker passes the value in; the one user code sees comes back out of the
        # graph (re-reading `L['x'].size(0)` after the graph could see a `t_()` applied since)
        self.input_by_source[source] = SymNodeVariable(proxy=proxy, value=sym, source=source)
        self.symbol_inputs[sym.node.expr] = SymNodeVariable(proxy=proxy, value=sym)

    def add_constant_tensor(self, value: torch.Tensor) -> TensorVariable:
        """A tensor with no source (made at trace time from constants): a graph attribute."""
        name = self._unique_name(f"_tensor_constant{len(self.constant_tensors)}")
        self.constant_tensors.append((name, value))
        node = self.graph.get_attr(name)
        node.meta["example_value"] = self.fake_mode.from_tensor(value, static_shapes=True)
        return self._tracked(TensorVariable(proxy=torch.fx.Proxy(node, self.tracer), cls=type(value)))

    def add_submodule(self, module: torch.nn.Module, base: str) -> str:
        """A module the graph calls through a `get_attr` node (a `torch.cond` branch): its name."""
        name = self._unique_name(base)
        self.constant_tensors.append((name, module))
        return name

    def real_value_of(self, var):
        for source, proxy, value in self.graph_inputs:
            if proxy.node is var.proxy.node:
                return value
        return None

    # -- ops --------------------------------------------------------------------
    def set_grad_enabled(self, mode: bool) -> None:
        if mode and self.inference_mode and not self.eager_autograd:
            # the backend's graph models inference mode as grad mode off (see inference_regions_for_backend):
            # grad turned on inside it would record autograd that inference mode never records
            raise Unsupported("attribute_write", what="enabling grad inside torch.inference_mode")
        if mode and not self.grad_enabled and not self.eager_autograd and self._made_leaves():
            # a leaf made in the graph under no_grad would now be recorded by autograd, which
            # AOTAutograd cannot link to it (see TensorVariable's requires_grad_)
            raise Unsupported("attribute_write", what="enabling grad after a leaf was made in the graph")
        if mode != self.grad_enabled:
            self.graph.call_function(torch._C._set_grad_enabled, (mode,))
            self.grad_enabled = mode

    def set_default_dtype(self, dtype) -> None:
        """`torch.set_default_dtype(dtype)`: a node of the graph (the ops after it make and promote
        to that dtype when the graph runs), and the trace's default dtype from here on. Only a graph
        run as recorded keeps the node: a backend that retraces the graph would run it while
        compiling and leave ops whose dtype depends on it unfixed."""
        if not self.eager_autograd:
            raise Unsupported("unsupported_call", fn="torch.set_default_dtype",
                              detail=" (the backend retraces the graph)")
        if dtype != self.default_dtype:
            self.graph.call_function(torch.set_default_dtype, (dtype,))
            self.default_dtype = dtype

    def _made_leaves(self) -> bool:
        """Whether the graph made a new leaf requiring grad (not an input handed back: `p.to(p.dtype)`)."""
        inputs = {id(n.meta.get("example_value")) for n in self.graph.find_nodes(op="placeholder")}
        return any(n.op != "placeholder" and id(n.meta.get("example_value")) not in inputs and
                   _is_leaf_requiring_grad(n.meta.get("example_value")) for n in self.graph.nodes)

    def enter_autocast(self, values: tuple):
        """Enter an autocast block: an `_enter_autocast(*values)` node, whose result `exit_autocast`
        takes."""
        node = self.graph.call_function(torch.amp.autocast_mode._enter_autocast, tuple(values))
        self.autocast_stack = self.autocast_stack + ((node, tuple(values)),)
        return node

    def exit_autocast(self, node) -> None:
        self.graph.call_function(torch.amp.autocast_mode._exit_autocast, (node,))
        self.autocast_stack = tuple(entry for entry in self.autocast_stack if entry[0] is not node)

    def enter_inference_mode(self, mode: bool):
        """Enter a `torch.inference_mode(mode)` block: an `_enter_inference_mode(mode)` node, whose result
        `exit_inference_mode` takes. Entering sets grad mode to `not mode`, as eager's does."""
        if self.inference_at_entry and not self.eager_autograd:
            # the backend's graph would model the block as grad mode, which inference mode around the
            # whole frame overrides
            raise Unsupported("unsupported_call", fn="torch.inference_mode", detail=" (inside inference mode)")
        node = self.graph.call_function(torch.autograd.grad_mode._enter_inference_mode, (mode,))
        node.meta["grad_inside"] = not mode
        self.inference_stack = self.inference_stack + ((node, self.inference_mode, self.grad_enabled),)
        self.inference_mode, self.grad_enabled = mode, not mode
        return node

    def exit_inference_mode(self, node) -> None:
        entry = next(e for e in self.inference_stack if e[0] is node)
        exit_node = self.graph.call_function(torch.autograd.grad_mode._exit_inference_mode, (node,))
        exit_node.meta["grad_after"] = entry[2]
        self.inference_mode, self.grad_enabled = entry[1], entry[2]
        self.inference_stack = tuple(e for e in self.inference_stack if e is not entry)

    def enter_torch_function_disabled(self, all_disabled: bool):
        """Enter a `DisableTorchFunction[Subclass]()` block: the state never lowers; a graph run as
        recorded gets an enter node (whose result `exit_torch_function_disabled` takes)."""
        node = None
        if self.eager_autograd:
            node = self.graph.call_function(enter_torch_function_disabled, (all_disabled,))
        self.torch_function_stack = self.torch_function_stack + ((node, self.torch_function_state),)
        entered = TF_ALL_DISABLED if all_disabled else TF_SUBCLASS_DISABLED
        self.torch_function_state = max(self.torch_function_state, entered)
        return node

    def exit_torch_function_disabled(self, node) -> None:
        entry = next(e for e in reversed(self.torch_function_stack) if e[0] is node)
        if node is not None:
            self.graph.call_function(exit_torch_function_disabled, (node,))
        self.torch_function_state = entry[1]
        self.torch_function_stack = tuple(e for e in self.torch_function_stack if e is not entry)

    @contextlib.contextmanager
    def tracing_state(self):
        """The inference mode, grad mode, default dtype and autocast state of the trace at this point, for running
        something on fake values (or a function that reads that state, like `torch.is_autocast_enabled`)."""
        entered = []
        inference = torch.inference_mode(self.inference_mode) \
            if self.inference_mode != torch.is_inference_mode_enabled() else contextlib.nullcontext()
        dtype = torch.get_default_dtype()
        try:
            if self.default_dtype != dtype:
                torch.set_default_dtype(self.default_dtype)
            with inference, torch.set_grad_enabled(self.grad_enabled):
                for _, values in self.autocast_stack:
                    entered.append(torch.amp.autocast_mode._enter_autocast(*values))
                yield
        finally:
            for mode in reversed(entered):
                torch.amp.autocast_mode._exit_autocast(mode)
            if torch.get_default_dtype() != dtype:
                torch.set_default_dtype(dtype)

    def call_function(self, fn, args, kwargs):
        if any(isinstance(a, SymNodeVariable) for a in args) and _is_python_function(fn) and \
                not any(isinstance(a, TensorVariable) for a in list(args) + list(kwargs.values())):
            return self._call_on_symbolic(fn, args, kwargs)
        return self._create_checked("call_function", fn, args, kwargs)

    def _call_on_symbolic(self, fn, args, kwargs):
        """A Python function applied to symbolic numbers: traced when the result stays symbolic
        (`operator.*`, `math.floor`, `float(n)` as `torch.sym_float`), otherwise computed on the
        specialized values (`str(n)`, `math.log(n)`), which guards them."""
        if fn is int and len(args) == 1 and not kwargs:
            if args[0].python_type() is int:
                return args[0]
            fn = torch.sym_int
        if fn in (min, max) and len(args) == 2 and not kwargs and args[0].python_type() is args[1].python_type():
            fn = torch.sym_min if fn is min else torch.sym_max
        fn = _SYMBOLIC_EQUIVALENTS.get(fn, fn)
        module = getattr(fn, "__module__", None)
        if fn in _DIVISIONS and len(args) == 2 and not kwargs:
            _raise_on_zero_divisor(fn, *args)
        if (fn in _SYMBOLIC_AWARE or module in ("_operator", "operator") or
                (module == "torch" and getattr(fn, "__name__", "").startswith("sym_"))) and \
                _hints_fit_int64(fn, args, kwargs):
            before = list(self.graph.nodes)
            result = self._create("call_function", fn, args, kwargs)
            if not _has_infinity(result):
                return result
            # torch's symbolic ints are 64-bit: a power or shift past that range is `int_oo` in the
            # expression (`n << 100` with n = 0), and guards and values derived from it would be wrong
            # for Python's unbounded ints; computed on the specialized values instead
            for node in reversed([n for n in self.graph.nodes if n not in set(before)]):
                self.graph.erase_node(node)
        concrete = [a.evaluate() if isinstance(a, SymNodeVariable) else a.as_python_constant() for a in args]
        kw = {k: v.evaluate() if isinstance(v, SymNodeVariable) else v.as_python_constant() for k, v in kwargs.items()}
        # what it raises on the program's own (specialized) values is the program's error
        return self._tx_for_items().wrap(fold(fn, *concrete, **kw), None, trusted=True)

    def call_method(self, self_var, name, args, kwargs):
        return self._create_checked("call_method", name, [self_var] + list(args), kwargs)

    def _create_checked(self, kind, target, args, kwargs):
        """`_create`, checked by the proof of a backward being traced (backward_proof.py)."""
        proof = self.backward_proof
        if proof is None:
            return self._create(kind, target, args, kwargs)
        name = target if kind == "call_method" else getattr(target, "__name__", None)
        op_name = name.split(".")[0] if isinstance(name, str) else None
        proof.check_op(op_name, args, kwargs)
        result = self._create(kind, target, args, kwargs)
        proof.made(op_name, args, kwargs, result)
        return result

    def _bind_unbacked_symbols(self, node, example) -> None:
        """The unbacked symbols the op's fake run made (`.item()` captured) are defined by its node. Left
        pending in the ShapeEnv, the backend's own trace of the graph (AOTAutograd, sharing the ShapeEnv)
        would find them among the values of its first op and refuse the graph."""
        pending = self.shape_env.pending_fresh_unbacked_symbols
        if not pending:
            return
        try:
            bindings = compute_unbacked_bindings(self.shape_env, example)
        except PendingUnbackedSymbolNotFound:   # (made and used inside the op only)
            bindings = None
        pending.clear()
        if bindings:
            node.meta["unbacked_bindings"] = bindings

    def _create(self, kind, target, args, kwargs):
        try:
            return self._create_node(kind, target, args, kwargs)
        except BaseException:
            self.forget_constants()    # its fake run may have written into a known value, then been refused
            raise

    def _create_node(self, kind, target, args, kwargs):
        kind, target = self._explicit_tensor_method(kind, target, args)
        name = target if kind == "call_method" else getattr(target, "__name__", None)
        op_name = name.split(".")[0] if isinstance(name, str) else None    # (an aten overload: `t_.default`)
        if op_name in _STORAGE_MUTATIONS:
            raise Unsupported("unsupported_call", fn=f"Tensor.{name}", detail=" (it replaces the tensor's storage)")
        if op_name in _METADATA_MUTATIONS or op_name == "detach_":
            self._refuse_autograd_metadata_change(op_name, args)
        unspellable = [k for k in kwargs if keyword.iskeyword(k) or not k.isidentifier()]
        if unspellable:
            # (`t.random_(**{"from": 0})`): fx's generated code would spell `random_(from = 0)`
            raise Unsupported("torch_value", what=f"a keyword argument named {unspellable[0]!r} in a graph call")
        numpy_numbers = target not in _DTYPE_FROM_DATA
        proxy_args = tuple(self.as_proxy(a, numpy_numbers) for a in args)
        proxy_kwargs = {k: self.as_proxy(v, numpy_numbers) for k, v in kwargs.items()}
        fake_args = torch.fx.node.map_arg(proxy_args, lambda n: n.meta["example_value"])
        fake_kwargs = torch.fx.node.map_arg(proxy_kwargs, lambda n: n.meta["example_value"])
        strided_after_a_view = None       # (see _refuse_writes_beyond_inputs)
        if op_name in ANY_STORAGE_VIEWS and not self.eager_autograd and fake_args and \
                self._input_sharing_storage(fake_args[0]) is not None:
            # of a view, or of an input whose sizes changed in place: the end of a chain of views
            strided_after_a_view = not (isinstance(args[0], TensorVariable) and args[0].proxy.node.op == "placeholder"
                                        and not any(logged is fake_args[0] for logged, *_ in self.metadata_log))
        if op_name in _METADATA_MUTATIONS and fake_args and isinstance(fake_args[0], torch.Tensor):
            t = fake_args[0]
            self.metadata_log.append((t, tuple(t.shape), tuple(t.stride()), t.storage_offset()))
        if any(_has_internal_overlap(t) for t in _written_tensors(target, op_name, fake_args, fake_kwargs)):
            # eager checks such a write or not depending on the op (`add_` raises, `fill_` does not); a
            # backend that functionalizes the graph writes a fresh tensor back and never raises
            raise Unsupported("unsupported_call", fn=name or str(target), detail=" (it writes into a tensor "
                              "whose elements share memory, an expanded one: whether eager raises depends on the op)")
        if not self.eager_autograd and self.data_aliases and any(
                self.is_data_alias(t) for t in _written_tensors(target, op_name, fake_args, fake_kwargs)):
            # eager's write through `t.data` leaves t's version counter alone and goes unseen by autograd
            # (a tensor saved for backward sees the new values); a functionalizing backend writes a copy
            # back, which bumps the counter, and its backward keeps the old values
            raise Unsupported("unsupported_call", fn=name or str(target), detail=" (it writes through `.data`, "
                              "which autograd does not see)")
        watched = self._watch_writes_beyond_inputs()
        try:
            # under the Python dispatcher composite ops (F.pad, interpolate...) decompose in Python
            # and keep symbolic sizes symbolic, instead of reading them as ints in C++
            with self.tracing_state(), self.fake_mode, enable_python_dispatcher():
                if kind == "call_function":
                    example = target(*fake_args, **fake_kwargs)
                else:
                    example = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            if isinstance(e, DataDependentOutputException) and \
                    self._read_inputs_as_numbers(list(args) + list(kwargs.values())):
                return self._create(kind, target, args, kwargs)
            # (an output shape that depends on data: a break's result that will change size from call to call)
            raise Unsupported("data_dependent", what=f"{getattr(target, '__name__', target)} ({type(e).__name__})",
                              data_shaped=isinstance(e, DynamicOutputShapeException))
        except GuardOnDataDependentSymNode as e:
            raise Unsupported("data_dependent", what=str(e).splitlines()[0])
        except NotImplementedError as e:
            raise Unsupported("unsupported_call", fn=getattr(target, "__name__", str(target)),
                              detail=f" on fake tensors ({e})")
        except (RuntimeError, TypeError, ValueError, IndexError) as e:
            if type(e) is RuntimeError and str(e).startswith(_LEAF_WRITE_ERRORS):
                # autograd's check of an in-place write into a leaf requiring grad (or a view of one)
                # reads only what the fake tensors model exactly: the call raises eagerly too, before
                # writing anything, which is the program's own exception (its `except` may catch it;
                # uncaught, fullgraph runs the frame eagerly), not a limit of the trace
                raise user_error(RuntimeError(*e.args)) from None
            # the real call fails the same way: run it eagerly so the user gets torch's own error
            raise Unsupported("unsupported_call", fn=getattr(target, "__name__", str(target)),
                              detail=f" (raises {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        with self.tracing_state():
            refusal = eager_refusal(kind, target, fake_args, fake_kwargs)
        if refusal:
            raise Unsupported("unsupported_call", fn=getattr(target, "__name__", str(target)),
                              detail=f" (operands of different dtypes: eager raises {refusal})")
        if self._makes_leaf(example, args, kwargs) and self.grad_enabled and not self.eager_autograd:
            # `torch.ones(2, requires_grad=True)`, `nn.Parameter(t)` under grad: a new autograd leaf.
            # A graph's outputs derive from its inputs, so AOTAutograd returns it as a non-leaf and
            # gradients never reach it (a backend running the ops as recorded makes it as eager does)
            raise Unsupported("unsupported_call", fn=getattr(target, "__name__", str(target)),
                              detail=" (it makes a new autograd leaf inside the graph)")
        subclass = self._result_subclass(args, kwargs)
        if subclass is not None and isinstance(example, torch.Tensor) and args and \
                isinstance(args[0], TensorVariable) and example is args[0].example and \
                not issubclass(args[0].cls, subclass):
            # eager returns a new object of the subclass viewing the same tensor
            raise Unsupported("torch_value", what=f"an in-place result converted to {subclass.__name__}")
        if watched:
            self._refuse_writes_beyond_inputs(watched, name, (fake_args, fake_kwargs))
        if op_name and op_name.startswith("_foreach_") and op_name.endswith("_") and not self.eager_autograd:
            _refuse_foreach_reading_what_it_wrote(op_name, fake_args, fake_kwargs)
        node = self.graph.create_node(kind, target, proxy_args, proxy_kwargs)
        node.meta["example_value"] = example
        self._bind_unbacked_symbols(node, example)
        if strided_after_a_view is not None:
            node.meta["strided_after_a_view"] = strided_after_a_view
            self.strided_input_views.append(node)
        if name and name.startswith("_foreach_") and name.endswith("_") and args and \
                isinstance(args[0], ListVariable):
            return args[0]      # an in-place foreach op returns the very list it was given
        if isinstance(example, torch.Tensor):
            if args and isinstance(args[0], TensorVariable) and example is args[0].example:
                return args[0]  # `x.add_(1)`, `x += y`, `x.contiguous()`...: the very same tensor, as in eager
            known = self.tensor_by_example.get(id(example))
            if known is not None and known.example is example and not known.proxy.node._erased:
                return known  # an earlier tensor itself (vmap's result unwrapped back to its input)
        return self.wrap_result(torch.fx.Proxy(node, self.tracer), example, subclass)

    def data_alias(self, tensor_var):
        """`t.data`: a graph value sharing t's storage, with its own version counter."""
        result = self.call_function(torch._C._autograd._get_data_attr, [tensor_var], {})
        self.data_aliases[id(result.example)] = result.example
        return result

    def is_data_alias(self, fake) -> bool:
        """Whether `fake` is a `.data` alias, or a view of one."""
        return any(alias is fake or alias is fake._base for alias in self.data_aliases.values())

    @staticmethod
    def _makes_leaf(example, args, kwargs) -> bool:
        """Is `example` a new leaf tensor requiring grad (not one of the call's own tensors)?"""
        if not (isinstance(example, torch.Tensor) and example.requires_grad and example.is_leaf):
            return False
        return not any(isinstance(a, TensorVariable) and a.example is example
                       for a in list(args) + list(kwargs.values()))

    def _explicit_tensor_method(self, kind, target, args):
        """A graph node applying torch.Tensor's method `target` to a tensor whose class defines that name
        again calls `torch.Tensor.target(x, ...)` (by name it would run the class's own at run time).
        An operator or attribute read the class replaces is not modelled (builder refuses classes that
        replace special methods)."""
        if kind == "call_method" and args and isinstance(args[0], TensorVariable) and \
                target in replaced_names(args[0].cls):
            return "call_function", getattr(torch.Tensor, target)
        if kind == "call_function" and target is getattr and len(args) == 2 and isinstance(args[0], TensorVariable) \
                and args[1].is_python_constant() and args[1].as_python_constant() in replaced_names(args[0].cls):
            raise Unsupported("torch_value", what=f"torch.Tensor.{args[1].as_python_constant()} of a tensor of "
                              f"{args[0].cls.__name__}, whose class replaces it")
        return kind, target

    def _result_subclass(self, args, kwargs):
        """The class eager gives the tensors a torch function returns, when a tensor argument (also
        one inside a list) is of a plain subclass (one keeping torch.Tensor's own __torch_function__,
        which converts results to its class): the one such class that subclasses all the others.
        None: plain tensors. Unrelated subclasses make eager raise TypeError: that call breaks."""
        classes = []
        if self.torch_function_state != TF_ENABLED:
            return None      # no __torch_function__ runs: torch's ops give plain tensors

        def visit(var):
            if isinstance(var, TensorVariable):
                cls = var.cls
                hook = class_dict_lookup(cls, "__torch_function__")
                if cls is not torch.Tensor and hook is not _DEFAULT_TORCH_FUNCTION and \
                        hook is not torch._C._disabled_torch_function_impl:
                    # its own __torch_function__ must have answered this call (variables/torch_function.py);
                    # a path that did not ask it would skip user code eager runs
                    raise Unsupported("torch_value", what=f"a torch call on a tensor of {cls.__name__} that would "
                                      "skip its __torch_function__")
                if cls is not torch.Tensor and cls not in classes and hook is _DEFAULT_TORCH_FUNCTION:
                    classes.append(cls)
            elif isinstance(var, BaseSequence):
                for item in var.get_items(self._tx_for_items()):
                    visit(item)
        for var in list(args) + list(kwargs.values()):
            visit(var)
        if not classes:
            return None
        for cls in classes:
            if all(issubclass(cls, other) for other in classes):
                return cls
        raise Unsupported("torch_value", what="tensors of unrelated subclasses in one call (eager raises TypeError)")

    def _tracked(self, var: TensorVariable) -> TensorVariable:
        """`var`, findable by its fake tensor: an op whose fake result is that very fake returns `var`."""
        self.tensor_by_example.setdefault(id(var.example), var)
        return var

    def as_proxy(self, var, numpy_numbers: bool = True):
        if isinstance(var, SymNodeVariable):
            known = self._specialized(var.value)
            return var.proxy.node if known is None else known
        if isinstance(var, TensorVariable):
            return var.proxy.node
        if isinstance(var, ConstantVariable):
            if type(var.value).__module__ == "numpy":
                # a numpy int or float is the Python number it holds to torch's operators and Scalar
                # arguments (measured against every dtype pair); np.bool_ and complex scalars are not
                dtype = getattr(var.value, "dtype", None)
                if not numpy_numbers or dtype is None or dtype.kind not in "iuf" or dtype.itemsize > 8 or \
                        (dtype.kind == "u" and dtype.itemsize == 8):
                    raise Unsupported("torch_value", what=f"passing {var.describe()} to a torch function")
                return var.value.item()
            if not _prints_as_graph_constant(var.value):
                # (a typing form, a class, a function...): the graph's generated code would name it
                # without importing it, or not at all
                raise Unsupported("torch_value", what=f"passing {var.describe()} to a torch function")
            return var.value
        if isinstance(var, SliceVariable):
            return slice(*(self.as_proxy(v, numpy_numbers) for v in (var.start, var.stop, var.step)))
        if isinstance(var, BaseSequence):
            items = [self.as_proxy(v, numpy_numbers) for v in var.get_items(self._tx_for_items())]
            return list(items) if var.python_type() is list else tuple(items)
        if var.is_python_constant():
            value = var.as_python_constant()
            if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout, type(None), int,
                                  float, bool, str, complex, type(Ellipsis))):
                return value
            if isinstance(value, (torch.finfo, torch.iinfo)):
                return value
        raise Unsupported("torch_value", what=f"passing {var.describe()} to a torch function")

    def _tx_for_items(self):
        # a stand-in translator: reading a sequence's contents, or wrapping a constant result, needs
        # only `tx.output` (and `tx.wrap`)
        class _Tx:
            output = self

            @staticmethod
            def wrap(value, source, trusted=False):
                return wrap(_Tx, value, source, trusted)
        return _Tx

    def wrap_result(self, proxy, example, subclass=None):
        """`subclass`: the plain tensor subclass eager converts the tensors of this result to."""
        if isinstance(example, torch.Tensor):
            if subclass is not None:
                return self._tracked(TensorVariable(proxy=proxy, cls=subclass))
            return self._tracked(TensorVariable(proxy=proxy, cls=torch.Tensor if type(example).__name__ == "FakeTensor"
                                                else type(example)))
        if isinstance(example, (tuple, list)) and not isinstance(example, torch.Size):
            items = []
            for i, e in enumerate(example):
                node = self.graph.call_function(operator.getitem, (proxy.node, i))
                node.meta["example_value"] = e
                items.append(self.wrap_result(torch.fx.Proxy(node, self.tracer), e, subclass))
            # the op's own result type: `torch.return_types.topk` and friends stay what they are
            if is_named_tuple_class(type(example)):
                return NamedTupleVariable(tuple(items), cls=type(example))
            if type(example) is list:
                return ListVariable.create(self._tx_for_items(), items)
            if type(example) is tuple:
                return TupleVariable(tuple(items))
            raise Unsupported("torch_value", what=f"a torch result of type {type(example).__name__}")
        if isinstance(example, torch.Size):
            items = []
            for i, e in enumerate(example):
                if _is_symbolic(e):
                    node = self.graph.call_function(operator.getitem, (proxy.node, i))
                    node.meta["example_value"] = e
                    items.append(SymNodeVariable(proxy=torch.fx.Proxy(node, self.tracer), value=e))
                else:
                    items.append(ConstantVariable(int(e)))
            return SizeVariable(tuple(items))
        if isinstance(example, _SYMBOLIC):
            if not _is_symbolic(example):
                self._drop_if_pure(proxy.node)
                return ConstantVariable(example.node.pytype(example))
            return SymNodeVariable(proxy=proxy, value=example)
        if example is None or isinstance(example, (int, float, bool)):
            self._drop_if_pure(proxy.node)
            return ConstantVariable(example)
        node = proxy.node
        names_type = isinstance(example, str) and (node.target is torch.typename or (
            node.op == "call_method" and node.target == "type" and len(node.args) == 1 and not node.kwargs))
        if names_type or (isinstance(example, (torch.dtype, torch.device, torch.layout, torch.memory_format)) and
                          node.op == "call_function" and not node.users):
            # metadata computed from metadata (`torch.promote_types`, `torch.result_type`, `x.type()`):
            # a constant of the trace (the inputs' dtypes and devices are guarded), nothing to run
            self.graph.erase_node(node)
            return ConstantVariable(example)
        raise Unsupported("torch_value", what=f"a torch result of type {type(example).__name__}")

    def _drop_if_pure(self, node) -> None:
        """Erase an unused node whose result became a constant, unless running it may have an effect
        (`x[i] = v`, `y.retain_grad()`, `torch.manual_seed(0)`...): method calls are always kept."""
        if not node.users and node.op == "call_function" and _is_pure_function(node.target):
            self.graph.erase_node(node)

    def wrap_value(self, value):
        """A Python number or symbolic number produced by metadata queries."""
        if isinstance(value, _SYMBOLIC):
            if not _is_symbolic(value):
                return ConstantVariable(value.node.pytype(value))
            known = self.symbol_inputs.get(value.node.expr)
            if known is not None:
                return known
            raise Unsupported("internal_error", what=f"a symbolic value ({value}) with no graph node")
        return ConstantVariable(value)

    def metadata(self, tensor_var, name: str, args: tuple, value, kwargs=None):
        """The tracker for `tensor.name(*args)` (`size`, `stride`, `numel`...), answered from the
        fake value: constants when static, SymNodeVariables (a size placeholder, or a node
        reading the metadata in the graph) when symbolic."""
        if self.torch_function_state == TF_ENABLED and tensor_var.cls is not torch.Tensor:
            self._result_subclass([tensor_var], {})     # (a tensor of a class with its own hook: a break)
        if isinstance(value, torch.Size) or (name == "stride" and isinstance(value, tuple)):
            items = tuple(self.metadata(tensor_var, name, (i,), v) for i, v in enumerate(value))
            return SizeVariable(items) if isinstance(value, torch.Size) else TupleVariable(items)
        if not _is_symbolic(value):
            return self.wrap_value(value)
        known = self.symbol_inputs.get(value.node.expr)
        if known is not None:
            return known
        if name in replaced_names(tensor_var.cls):     # (see _explicit_tensor_method)
            node = self.graph.call_function(getattr(torch.Tensor, name), (tensor_var.proxy.node,) + tuple(args),
                                            dict(kwargs or {}))
        else:
            node = self.graph.call_method(name, (tensor_var.proxy.node,) + tuple(args), dict(kwargs or {}))
        node.meta["example_value"] = value
        return SymNodeVariable(proxy=torch.fx.Proxy(node, self.tracer), value=value)

    # -- finishing --------------------------------------------------------------
    def count_ops(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module"))

    def final_guards(self) -> set:
        """Every guard of the frame: those collected while tracing plus the shape guards."""
        guards = set(self.guards)
        guards.update(self._module_identity_guards())
        guards.update(self._distinct_object_guards())
        if self.input_properties:
            # in input order (the first place a symbol appears defines it); an unspecialized
            # number whose placeholder was pruned (specialized, unused) still needs its guards
            props = [p for props in self.input_properties.values() for p in props]
            try:
                guards.update(shape_guards(self.shape_env, props))
            except ShapeGuardError as e:
                raise Unsupported("unguardable_shape", what=f"a shape assumption that cannot be guarded ({e})")
        return guards

    def module_refs(self) -> tuple:
        """(source, weakref) of each module read from the frame: which objects an entry was compiled
        for, so that a miss for other modules (another layer) does not count toward the cache size
        limit of these (compiler/convert_frame.py)."""
        return tuple((source, weakref.ref(module)) for source, module in self.module_sources.items())

    def _module_identity_guards(self) -> list:
        """Modules are guarded by type: a write to one is seen by a read through another source only
        if they are one object, which only modules of the same class can be. So when the graph writes
        to a module of a class with several distinct modules in the trace, those are pinned to the
        objects traced (distinct then, distinct on every call)."""
        written = {var.cls for var in self.side_effects.mutated if isinstance(var, NNModuleVariable)}
        objects: dict = {}
        for module in self.module_sources.values():
            if type(module) in written:
                objects.setdefault(type(module), set()).add(id(module))
        return [Guard.id_match(source, module) for source, module in self.module_sources.items()
                if len(objects.get(type(module), ())) > 1]

    def _distinct_object_guards(self) -> list:
        """A write to an object is seen by a read through another source only if they are one object
        (objects reached twice were one tracker, guarded SAME_OBJECT by `wrap`) or share one state (an
        attribute dict: a dict that is `vars(o)`, objects sharing one `__dict__`). So each object the
        graph writes to stays apart from every other object of its type the trace reached, and its
        state from theirs, as when traced: `a.append(1); return len(b)` called with `a is b` must not
        reuse the entry traced with two lists. (Modules: `_module_identity_guards`; tensors: their
        memory is guarded.) One APART group for the states, one per class for the objects: a member
        of the group of its class also apart from the others by its state is so as an object too."""
        def state(value, var):
            """The source of the dict holding the object's attributes (the dict itself for a dict)."""
            if type(value) is dict:
                return var.source
            if isinstance(var, UserDefinedObjectVariable) and instance_dict(value) is not None:
                return InstanceDictSource(var.source)
            return None
        reached = [(value, var) for value, var in self.wrapped_objects.values()
                   if isinstance(var, VariableTracker) and var.source is not None
                   and not isinstance(var, (NNModuleVariable, TensorVariable))]
        written = set(self.side_effects.mutated)
        written.update(v.owner for v in self.side_effects.mutated if getattr(v, "owner", None) is not None)
        # group -> (label, [(source, written)]): the states, then the objects of each class
        groups: dict = {}
        for value, var in reached:      # (a dict subclass's object: written when its items are)
            mine = state(value, var)
            if mine is not None:
                groups.setdefault("states", ("attribute dicts", []))[1].append((mine, var in written))
            groups.setdefault(("class", id(type(value))), (f"{type(value).__qualname__} objects", []))[1].append(
                (var.source, var in written))
        guards = []
        for group, (label, members) in groups.items():
            if any(w for _, w in members) and len(members) > 1:
                guards += [Guard.apart(source, group, label, w) for source, w in members]
        return guards

    def _specialized(self, value):
        """The constant a symbolic int/float was specialized to while tracing, or None."""
        if isinstance(value, (torch.SymInt, torch.SymFloat)):
            expr = self.shape_env.replace(value.node.expr)
            if expr.is_number:
                return int(expr) if isinstance(value, torch.SymInt) else float(expr)
        return None

    def prune_size_inputs(self, live_values) -> None:
        """Before the graph call is generated: drop the size placeholders of symbols that tracing
        specialized to a constant (`L['x'].size(1) == 8`) and that nothing uses. The others stay,
        even unused, so a backend can bind every symbol of its tensor inputs."""
        live = {v.proxy.node for v in live_values if isinstance(v, (TensorVariable, SymNodeVariable))}
        self._prune_dead_metadata(live)
        for i in reversed(range(len(self.graph_inputs))):
            source, proxy, value = self.graph_inputs[i]
            node = proxy.node
            # a specialized value that is live is output as its constant (see as_proxy)
            if isinstance(value, (torch.SymInt, torch.SymFloat)) and not node.users and \
                    self._specialized(value) is not None:
                self.graph.erase_node(node)
                del self.graph_inputs[i]
                self.input_by_source.pop(source, None)     # (a random draw has no entry: it is drawn anyway)
                self.symbol_inputs.pop(value.node.expr, None)
                self.prunes += 1

    def _prune_dead_metadata(self, live=frozenset()) -> None:
        """Drop shape arithmetic whose result was only used to decide something at trace time
        (`if x.shape[0] > 2`): the decision is a guard, not a graph computation."""
        for node in reversed(list(self.graph.nodes)):
            if node.users or node in live or node.op not in ("call_function", "call_method"):
                continue
            if not isinstance(node.meta.get("example_value"), _SYMBOLIC + (int, float, bool)):
                continue
            if (node.op == "call_method" and node.target in _PURE_METHODS) or \
                    (node.op == "call_function" and (_is_pure_function(node.target) or node.target in
                                                     _SYMBOLIC_AWARE or node.target is operator.getitem)):
                self.graph.erase_node(node)
                self.prunes += 1

    @staticmethod
    def _refuse_autograd_metadata_change(op_name: str, args) -> None:
        """An input's autograd record cannot be put back once an op changed it in place: `x.t_()` on
        an input requiring grad gives it a grad_fn, `x.detach_()` drops it (and a functionalizing
        backend would not change the input's at all). These run as Python, where eager runs them."""
        target = args[0] if args else None
        if not isinstance(target, TensorVariable) or target.proxy.node.op != "placeholder":
            return
        if op_name == "detach_" or target.example.requires_grad:
            raise Unsupported("attribute_write", what=f"{target.describe()}.{op_name}() of a graph input"
                              + (" requiring grad" if op_name != "detach_" else ""))

    def _input_sharing_storage(self, t):
        """The fake of the graph input whose storage `t` views, if any."""
        storage = _storage_of(t)
        for _, proxy, value in self.graph_inputs:
            fake = proxy.node.meta["example_value"]
            if storage is not None and isinstance(value, torch.Tensor) and _storage_of(fake) == storage:
                return fake
        return None

    def _watch_writes_beyond_inputs(self) -> list:
        """Before an op, once an `as_strided` view of an input's storage is in the graph of a backend that
        functionalizes it: the inputs' fakes and versions (see _refuse_writes_beyond_inputs)."""
        if not any(not node._erased for node in self.strided_input_views):
            return []
        return [(proxy.node.meta["example_value"], proxy.node.meta["example_value"]._version)
                for _, proxy, value in self.graph_inputs if isinstance(value, torch.Tensor)]

    def _refuse_writes_beyond_inputs(self, watched, name, operands) -> None:
        """A backend that functionalizes the graph writes an input back as the input's own elements
        (aot_eager, inductor): a write through an `as_strided` view into memory of the storage that is
        not the input's (`x.as_strided((4,), (1,), 0).add_(1)` of `x = base[1:3]`) was lost. Such a
        write, of anything but a view within a contiguous input's elements, runs as Python; so does any
        write into an input's storage once an `as_strided` took a view of a view of it (AOTAutograd
        cannot functionalize that chain: a compile error)."""
        tensors = [t for t in torch.utils._pytree.tree_leaves(operands) if isinstance(t, torch.Tensor)]
        chained = any(not node._erased and node.meta["strided_after_a_view"] for node in self.strided_input_views)
        for fake, version in watched:
            if fake._version == version:
                continue
            if chained:
                raise Unsupported("unsupported_call", fn=name or "an in-place op",
                                  detail=" (a write into an input an as_strided view of a view reaches)")
            size, stride, offset = self._original_metadata(fake)
            storage = _storage_of(fake)
            for t in tensors:
                if _storage_of(t) == storage and not _within_contiguous(t, size, stride, offset):
                    raise Unsupported("unsupported_call", fn=name or "an in-place op",
                                      detail=" (a write through an as_strided view beyond the input it views)")

    def _original_metadata(self, fake):
        """`fake`'s (size, stride, storage offset) before the graph changed them in place."""
        for logged, size, stride, offset in self.metadata_log:
            if logged is fake:
                return size, stride, offset
        return tuple(fake.shape), tuple(fake.stride()), fake.storage_offset()

    def reshaped_inputs(self) -> list:
        """Positions, among the graph's inputs, of the tensors an op of the graph changes the sizes,
        strides or storage offset of in place (`x.t_()`), even if a later op changes them back."""
        logged = {id(fake) for fake, *_ in self.metadata_log}
        return [i for i, (_, proxy, value) in enumerate(self.graph_inputs) if isinstance(value, torch.Tensor) and
                id(proxy.node.meta["example_value"]) in logged]

    def written_inputs(self) -> list:
        """Positions, among the graph's inputs, of the tensors an op of the graph writes into (or into
        a view of): their version counter moved, or they are the first operand of an in-place op (fake
        `_foreach_add_` moves no version counter), or a batch norm updated them as running statistics."""
        updated = set()
        for node in self.graph.nodes:
            name = node.target if node.op == "call_method" else getattr(node.target, "__name__", None)
            name = name.split(".")[0] if isinstance(name, str) else ""
            if name in _UNVERSIONED_WRITES:
                operands = _unversioned_written_operands(node)
            elif name.endswith("_") and not name.startswith("__") and node.args:
                operands = node.args[0]
            else:
                continue
            torch.fx.node.map_arg(operands, lambda n: updated.add(_storage_of(n.meta.get("example_value"))))
        return [i for i, (_, proxy, value) in enumerate(self.graph_inputs) if isinstance(value, torch.Tensor) and
                (proxy.node.meta["example_value"]._version != proxy.node.meta["version"] or
                 _storage_of(proxy.node.meta["example_value"]) in updated)]

    def _guard_memory_sharing(self):
        """A graph that writes into a tensor input is only right for inputs sharing memory with it as
        they do now (`a.add_(1); b * 2` with `b` a view of `a`): guard which ones do (see
        guards.guard.written_sharing)."""
        written = set(self.written_inputs())
        if written:
            tensors = [(i, source, value) for i, (source, _, value) in enumerate(self.graph_inputs)
                       if isinstance(value, torch.Tensor)]
            pattern = memory_sharing(*(v for _, _, v in tensors))
            self.guards.add(Guard.memory_sharing([s for _, s, _ in tensors], pattern,
                                                 [k for k, (i, _, _) in enumerate(tensors) if i in written]))

    def compile_graph(self, outputs: list):
        """Add the output node, hand the graph to the backend, and return the compiled callable."""
        self.graph.output(tuple(self.as_proxy(v) for v in outputs))
        self._prune_dead_metadata()
        root = torch.nn.Module()
        for name, value in self.constant_tensors:
            setattr(root, name, value)
        gm = torch.fx.GraphModule(root, self.graph, class_name="BytegraphGraph")
        self._guard_memory_sharing()
        # like torch.compile: real tensors, and SymInts for the size placeholders
        example_inputs = [value for _, _, value in self.graph_inputs]
        if self.eager_autograd and track_state_blocks(gm):
            return gm, leaving_blocks_on_raise(self.backend(gm, example_inputs))
        if self.eager_autograd or not _has_inference_regions(gm):
            return gm, self.backend(gm, example_inputs)
        return gm, inference_regions_for_backend(gm, self.backend, example_inputs)


# -- inference mode for backends that transform the graph ------------------------------------------
_ENTER_INFERENCE = torch.autograd.grad_mode._enter_inference_mode
_EXIT_INFERENCE = torch.autograd.grad_mode._exit_inference_mode


def _has_inference_regions(gm) -> bool:
    return bool(gm.graph.find_nodes(op="call_function", target=_ENTER_INFERENCE))


def inference_regions_for_backend(gm, backend, example_inputs):
    """A graph with `torch.inference_mode` blocks, for a backend that retraces it (AOTAutograd,
    inductor), which would drop the mode: the backend gets the graph with each block as grad mode off
    (what inference mode does to the ops' autograd; grad turned on inside one broke the trace), and
    the tensors the graph returns that eager makes inside the mode are made inference tensors again
    by a clone under the mode. An output that is a view, or shares its memory with another output,
    would lose that sharing: such a graph runs as recorded instead (`gm`, which enters the mode)."""
    outputs = next(iter(gm.graph.find_nodes(op="output"))).args[0]
    tensors = [out for out in outputs if isinstance(out, torch.fx.Node) and
               isinstance(out.meta.get("example_value"), torch.Tensor)]
    made = [i for i, out in enumerate(outputs) if out in tensors and out.meta["example_value"].is_inference()]
    storages = [out.meta["example_value"].untyped_storage()._cdata for out in dict.fromkeys(tensors)]
    for i in made:
        fake = outputs[i].meta["example_value"]
        if fake._is_view() or storages.count(fake.untyped_storage()._cdata) > 1:
            return gm
    # each block becomes the grad mode it sets on entry and restores on exit
    marks = gm.graph.find_nodes(op="call_function", target=_ENTER_INFERENCE) + \
        gm.graph.find_nodes(op="call_function", target=_EXIT_INFERENCE)
    for node in marks:
        mode = node.meta["grad_inside"] if node.target is _ENTER_INFERENCE else node.meta["grad_after"]
        with gm.graph.inserting_before(node):
            gm.graph.call_function(torch._C._set_grad_enabled, (mode,))
    for node in sorted(marks, key=lambda n: n.target is _ENTER_INFERENCE):   # exits (the users) first
        gm.graph.erase_node(node)
    gm.recompile()
    compiled = backend(gm, example_inputs)
    first = {}
    for i in made:
        first.setdefault(outputs[i], i)

    def run(*args):
        out = list(compiled(*args))
        with torch.inference_mode():
            for i in made:
                j = first[outputs[i]]
                out[i] = out[j] if j < i else out[i].clone()   # one clone per tensor, as eager has one
        return tuple(out)
    return run


def _is_leaf_requiring_grad(example) -> bool:
    """A leaf made in the graph (`zeros_like(q).requires_grad_()`, a factory with requires_grad=True)."""
    return isinstance(example, torch.Tensor) and example.requires_grad and example.is_leaf
