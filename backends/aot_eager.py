"""The `aot_eager` backend: training through compiled code.

AOTAutograd (`torch._functorch.aot_autograd`) retraces the captured graph at the ATen level with
functionalization, differentiates it into a joint forward+backward graph, and a partitioner
(`backends/partitioners.py`) splits that into a forward graph and a backward graph. Both run
eagerly as fx GraphModules, wrapped in an autograd.Function by AOTAutograd's runtime.

What AOTAutograd takes care of, given that the frontend lifts parameters and buffers as graph
inputs: mutations of inputs (batch-norm running statistics, `buf.add_(1)`) are functionalized, and
the new values are written into the real tensors -- by a `copy_` at the end of the forward graph
for inputs that do not require grad, by the runtime wrapper after the forward otherwise; outputs
that alias inputs are regenerated as views of the real inputs; inputs that do not require grad get
no gradient; when no input requires grad or grad mode is off (`torch.no_grad()`), only an
inference graph is built and there is no backward.

Dynamic shapes: when the frontend made sizes symbolic, AOTAutograd traces with the frontend's fake
inputs and ShapeEnv, so the ATen graphs take SymInt inputs and the frame's shape guards cover them.

Options, through `bytegraph.compile(fn, backend="aot_eager", options={...})`:

- `partitioner`: `"default"` (torch's) or `"min_cut"` (ours: recompute cheap ops in the backward
  to save fewer tensors), or a callable with the partitioner signature.
- `decompositions`: a table `{OpOverload: fn}` applied while tracing (default: none).
- `graph_hook`: `callable(kind, gm)` called for every graph produced, `kind` being `"forward"`,
  `"backward"` or `"inference"` -- for tests and tools.

`BYTEGRAPH_LOGS=aot_graphs` prints every forward/backward/inference graph, and the debug dir
(`BYTEGRAPH_COMPILE_DEBUG=1`) gets them as `aot_<kind>_graph.py` in the frame's folder. The
backward graph is built when the frame compiles, not lazily at the first `.backward()`, so it is
logged, saved and checked together with the forward.

`aot_autograd(...)` is the reusable part: a backend that lowers the ATen graphs itself (inductor)
passes its own graph compiler. Compile time only, except the small `run` wrappers.
"""
from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable

import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental.symbolic_shapes import (GuardOnDataDependentSymNode, PendingUnbackedSymbolNotFound,
                                                    free_symbols, free_unbacked_symbols)

from .._tensor_guards import memory_sharing
from ..config import config
from ..debug_dir import FrameDir, current_frame_dir, write_artifact
from ..disable import disable
from ..logs import enabled, log
from ..minifier import compile_checked
from .eager_random import eager_dropout
from .partitioners import get_partitioner
from .registry import register_backend

_graph_numbers = itertools.count()     # names graphs in logs only


def run_eagerly(gm, example_inputs):
    """A graph compiler that runs the ATen graph as is, in AOTAutograd's boxed calling convention
    (one list argument)."""
    forward = gm.forward

    def run(args):
        return forward(*args)
    run._boxed_call = True
    return run


def run_backward_eagerly(gm, example_inputs):
    """`run_eagerly` for a backward graph, whose views reshape instead. Each view there comes from an
    autograd formula, which eager runs as a reshape (the view backward is `grad.reshape(sizes)`):
    AOTAutograd recorded a view because the fake strides allowed one, but some fake kernels answer
    other strides than the real kernel computes (softplus_backward: contiguous, where the real
    kernel keeps the gradient's transposed layout), and the view then fails at run time. A reshape
    is that same view wherever the real strides allow it, and eager's copy where they do not."""
    views = list(gm.graph.find_nodes(op="call_function", target=torch.ops.aten.view.default))
    for node in views:
        node.target = torch.ops.aten.reshape.default
    if views:
        gm.recompile()
    return run_eagerly(gm, example_inputs)


def _logged(kind: str, number: int, compile_graph: Callable, graph_hook: Callable | None) -> Callable:
    def compile_and_log(gm, example_inputs):
        if enabled("aot_graphs") or config.compile_debug:
            text = gm.print_readable(print_output=False)
            log("aot_graphs", f"aot {kind} graph {number}:\n{text}")
            write_artifact(f"aot_{kind}_graph.py", text)
        if graph_hook is not None:
            graph_hook(kind, gm)
        if config.repro_after == "aot":  # minify the ATen graph the inner compiler fails on
            frame_dir = current_frame_dir() or FrameDir(f"aot_{kind}_{number}")
            return compile_checked(compile_graph, gm, example_inputs, frame_dir, config.repro_level,
                                   f"aot {kind} graph {number}")
        return compile_graph(gm, example_inputs)
    return compile_and_log


def _tracing_inputs(gm, example_inputs) -> list:
    """What AOTAutograd traces with. With static shapes, the real inputs (it fakifies them with
    static sizes). When the frontend made sizes symbolic, its own fake values instead -- the
    placeholders' `example_value`s, which share the frontend's FakeTensorMode and ShapeEnv -- so
    the ATen graphs stay symbolic and any assumption AOTAutograd adds lands in the ShapeEnv the
    frame's guards are printed from."""
    fakes = [node.meta.get("example_value") for node in gm.graph.find_nodes(op="placeholder")]
    if len(fakes) != len(example_inputs) or any(f is None for f in fakes):
        return example_inputs
    symbolic = [f for f in fakes if isinstance(f, (torch.SymInt, torch.SymFloat)) or isinstance(f, torch.Tensor) and
                (free_symbols(f) or getattr(f, "item_memo", None) is not None)]   # a 0-d input read as a number
    # (a graph computing a data-dependent value, `.item()` captured: only the frontend's ShapeEnv allows it)
    return fakes if symbolic or makes_unbacked_values(gm) else example_inputs


def makes_unbacked_values(gm) -> bool:
    """Whether an op of the graph makes a value the trace could not know (`.item()` captured as an
    unbacked symbol, or a tensor sized by one)."""
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        for v in pytree.tree_leaves(node.meta.get("example_value", node.meta.get("val"))):   # (ATen graphs: "val")
            if isinstance(v, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)) and free_unbacked_symbols(v):
                return True
    return False


@contextlib.contextmanager
def _symfloat_inputs_kept():
    """Unspecialized Python floats reach the graph as SymFloat inputs (frontend/output_graph.py).
    AOTAutograd's `tensorify_python_scalars` pass expects torch.compile's encoding instead (a
    float64 0-d tensor input read with `.item()`), and for any other float symbol asks torch's
    frontend to restart -- an exception bytegraph cannot act on. Without the pass the ATen graphs
    take the SymFloat as it is (run time: the very Python float, as in eager)."""
    old = os.environ.get("TENSORIFY_PYTHON_SCALARS")
    os.environ["TENSORIFY_PYTHON_SCALARS"] = "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TENSORIFY_PYTHON_SCALARS", None)
        else:
            os.environ["TENSORIFY_PYTHON_SCALARS"] = old


@contextlib.contextmanager
def _numbers_read_from_inputs(inputs):
    """A 0-d input the frontend read as a number (`torch.arange(n)`) carries its symbol as the fake's
    `item_memo`, which AOTAutograd drops between its passes (a new fake-mode epoch); it then reads
    the number again as data-dependent (an unbacked symbol), which its fake mode must allow."""
    modes = {f.fake_mode for f in inputs if isinstance(f, torch.Tensor) and getattr(f, "item_memo", None) is not None}
    for mode in modes:
        mode.allow_scalar_outputs = True
    try:
        yield
    finally:
        for mode in modes:
            mode.allow_scalar_outputs = False


def makes_non_strided(gm) -> bool:
    """Whether some value of the graph is a sparse (or other non-strided) tensor, which neither
    AOTAutograd nor the inductor IR handles."""
    for n in gm.graph.nodes:
        for v in pytree.tree_leaves(n.meta.get("example_value")):
            if isinstance(v, torch.Tensor) and v.layout != torch.strided:
                return True
    return False


def shared_memory_groups(example_inputs) -> list:
    """The real tensor inputs that share memory, in groups of two or more (see `memory_sharing`)."""
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor)]
    groups: dict = {}
    for t, (group, _) in zip(tensors, memory_sharing(*tensors)):
        groups.setdefault(group, []).append(t)
    return [g for g in groups.values() if len(g) > 1]


def _memory_shared_across_storages(example_inputs) -> bool:
    return any(len({t.untyped_storage()._cdata for t in group}) > 1 for group in shared_memory_groups(example_inputs))


def _memory_shared_outside_views(example_inputs) -> bool:
    """Whether two inputs share memory without being views of one base in autograd's sense (`x` and
    `x.detach()`, `x.data`)."""
    def base(t):
        return t._base if t._is_view() else t
    return any(len({id(base(t)) for t in group}) > 1 for group in shared_memory_groups(example_inputs))


def aot_autograd(gm, example_inputs, *, fw_compiler: Callable = run_eagerly, bw_compiler: Callable | None = None,
                 inference_compiler: Callable | None = None, partitioner="default", decompositions=None,
                 graph_hook: Callable | None = None):
    """Compile `gm` through AOTAutograd: the graph compilers receive the functionalized ATen
    forward, backward and inference graphs (backward and inference default to `fw_compiler`).
    Returns a callable taking the graph's inputs positionally."""
    if makes_non_strided(gm):
        return gm   # sparse values: the graph runs as traced
    if _memory_shared_across_storages(example_inputs):
        # AOTAutograd finds aliased inputs by storage: inputs over one memory through distinct storages
        # (a tensor and `torch.from_numpy` of its `.numpy()`) would be functionalized as distinct, and a
        # write into one not seen by the other's reads. The graph runs as traced instead.
        return gm
    if _memory_shared_outside_views(example_inputs):
        # inputs over one memory that are not views of one base in autograd's sense (`x` and
        # `w = x.detach().requires_grad_()`): AOTAutograd merges them into a synthetic base, and then
        # fails to regenerate an output aliasing one of them (at run time), or to handle a write into
        # one (while compiling). The graph runs as traced instead.
        return gm
    # imported here: AOTAutograd pulls in much of torch's compiler stack, which `import bytegraph`
    # should not pay for
    import torch._functorch.config
    from torch._functorch.aot_autograd import aot_module_simplified
    number = next(_graph_numbers)
    inputs = _tracing_inputs(gm, example_inputs)
    if inputs is not example_inputs and shared_memory_groups(example_inputs):
        # inputs over one memory with symbolic sizes: AOTAutograd merges them into one base whose
        # storage size is symbolic, which its fake storages cannot hold (an internal error). The
        # graph runs as traced instead
        return gm
    gm = eager_dropout(gm)
    backward_default = run_backward_eagerly if fw_compiler is run_eagerly else fw_compiler
    # Donated buffers (the backward freeing what the forward saved) make AOTAutograd's backward refuse
    # `retain_graph=True` and `create_graph=True`, which eager allows. The flag is read again by its
    # runtime at every backward, so it is turned off for the process, not patched around the compile
    torch._functorch.config.donated_buffer = False
    try:
        with torch._functorch.config.patch(force_non_lazy_backward_lowering=True), _symfloat_inputs_kept(), \
                _numbers_read_from_inputs(inputs):
            compiled = aot_module_simplified(
                gm, inputs,
                fw_compiler=_logged("forward", number, fw_compiler, graph_hook),
                bw_compiler=_logged("backward", number, bw_compiler or backward_default, graph_hook),
                inference_compiler=_logged("inference", number, inference_compiler or fw_compiler, graph_hook),
                partition_fn=get_partitioner(partitioner),
                decompositions=decompositions,
                # under no_grad, keep input mutations as copy_ in the graph instead of a runtime epilogue
                keep_inference_input_mutations=True,
            )
    except AssertionError as e:
        # inputs over one memory that are not views of one another in autograd's sense (`x` and
        # `w = x.detach().requires_grad_()`, or `x` and a view of it, one of them written): AOTAutograd
        # does not handle their mutations. The graph runs as traced
        if "non-differentiable view" not in str(e):
            raise
        return gm
    except (GuardOnDataDependentSymNode, PendingUnbackedSymbolNotFound):
        # a value AOTAutograd's trace can only see as data-dependent: a size taken from a 0-d input's
        # value (`torch.linspace(0, 1, n)` needs its steps as an int), the index of `t[i]` (a 0-d
        # integer tensor, which its decomposition reads with `.item()`), a view at such an index
        # regenerated after its base is written (`v = t[i]; t.mul_(2); return v`): the graph runs as traced
        return gm
    except RuntimeError as e:   # (after GuardOnDataDependentSymNode, a RuntimeError too)
        # a tensor the backward needs, written in place later in the graph (`h = lin(x); x[m] = 0`):
        # eager's forward runs (only a backward through it would fail), AOTAutograd's joint trace
        # refuses. The graph runs as traced, with eager's autograd and its version checks
        if "modified by an inplace operation" not in str(e):
            raise
        return gm
    # AOTAutograd's runtime is torch code, but not all of it looks like torch's to the frame hook
    # (dataclass __init__s generated with exec have the file name "<string>"): run it unhooked
    return disable(compiled)


@register_backend("aot_eager")
def aot_eager(gm, example_inputs, *, partitioner="default", decompositions=None, graph_hook=None):
    return aot_autograd(gm, example_inputs, partitioner=partitioner, decompositions=decompositions,
                        graph_hook=graph_hook)
