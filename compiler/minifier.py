"""The minifier: shrink a graph a backend gets wrong to the smallest subgraph that still goes wrong
the same way, and write `repro.py`, a standalone script that shows it.

Compile time only; active when `config.repro_after == "dynamo"` (`BYTEGRAPH_REPRO_AFTER`). What
counts as wrong depends on `config.repro_level` (`BYTEGRAPH_REPRO_LEVEL`):

    1  the backend raises while compiling the graph: write the whole graph as repro.py, no shrinking
    2  (default) the same, shrunk to the smallest failing subgraph
    3  also run the compiled graph once on the example inputs: an exception there counts too
    4  also compare its result with eager (accuracy): a difference beyond tolerance counts too

Shrinking is delta debugging (ddmin) over the graph's op nodes. A candidate is a subset of nodes; a
value it needs from a node outside the subset becomes an input of the subgraph (a tensor with that
node's real value, computed once by running the whole graph eagerly) or a constant (an int, a
dtype...). The candidate "still fails" when the backend fails on it in the same stage (compile or
run) with the same exception type, or, for accuracy, when it still differs from eager.

`config.repro_after == "aot"` (the AOT graphs) is not implemented: no backend here lowers through
AOTAutograd yet.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os

import torch
import torch.fx

from .debug_dir import FrameDir
from .scripts import backend_loader_source, backend_reference, clone_inputs, random_inputs, standalone_script
from .logs import log
from .timing import phase

CALL_OPS = ("call_function", "call_method", "call_module")
MAX_CANDIDATES = 2000      # backend runs one minification may spend
_LITERAL_TYPES = (bool, int, float, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout)


class BackendCompilerFailed(RuntimeError):
    """The backend failed on a graph; `repro_path` is the minified repro (or None)."""

    def __init__(self, message: str, repro_path: str | None):
        super().__init__(message)
        self.repro_path = repro_path


class AccuracyError(RuntimeError):
    """The compiled graph computes a different result than eager; `repro_path` is the repro."""

    def __init__(self, message: str, repro_path: str | None):
        super().__init__(message)
        self.repro_path = repro_path


@dataclasses.dataclass(frozen=True)
class Failure:
    stage: str              # "compile", "run" or "accuracy"
    exc_type: type | None   # None for accuracy

    def describe(self) -> str:
        if self.stage == "accuracy":
            return "the compiled result differs from eager"
        return f"{self.exc_type.__name__} while {'compiling' if self.stage == 'compile' else 'running'}"


# -- checking a backend ---------------------------------------------------------------------------
def compile_checked(backend, gm, example_inputs, frame_dir: FrameDir, level: int, title: str):
    """Compile `gm` with `backend`; on a failure (as `level` defines it) minify, write repro.py and raise."""
    failure, pristine = None, copy_graph_module(gm)   # backends may rewrite the graph they are given
    try:
        compiled = backend(gm, example_inputs)
    except Exception as e:  # noqa: BLE001 - any backend failure is what we are here for
        failure, error = Failure("compile", type(e)), e
    concrete = concrete_inputs(example_inputs)     # what the compiled code is called with
    if failure is None and level >= 3:
        failure, error = _check_compiled(compiled, pristine, concrete, level)
    if failure is None:
        return compiled
    with phase("minifier"):
        repro = minify(backend, pristine, concrete, failure, frame_dir, title, shrink=level >= 2)
    where = f"; minified repro: {repro}" if repro else "; no repro could be written"
    if failure.stage == "accuracy":
        raise AccuracyError(f"{title}: {error}{where}", repro)
    raise BackendCompilerFailed(f"backend failed on {title}: {type(error).__name__}: {error}{where}", repro) \
        from error


def concrete_inputs(inputs) -> list:
    """Example inputs with symbolic sizes (SymInt...) replaced by the numbers they stand for."""
    out = []
    for v in inputs:
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) and v.node.hint is not None:
            v = v.node.pytype(v.node.hint)
        out.append(v)
    return out


def _check_compiled(compiled, gm, example_inputs, level):
    try:
        actual = _run_seeded(compiled, example_inputs)
    except Exception as e:  # noqa: BLE001
        return Failure("run", type(e)), e
    if level >= 4:
        expected = _run_seeded(gm, example_inputs)
        diff = compare(expected, actual)
        if diff:
            return Failure("accuracy", None), f"accuracy: the compiled result differs from eager ({diff})"
    return None, None


def _run_seeded(fn, inputs):
    """Run on copies of the inputs with a fixed seed, leaving the caller's RNG and grad mode alone."""
    with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(torch.is_grad_enabled()):
        torch.manual_seed(1234)
        return fn(*clone_inputs(inputs))


def compare(expected, actual, tol: float | None = None) -> str:
    """Empty if the two results match within tolerance, else what differs."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"a {type(expected).__name__} vs a {type(actual).__name__}"
        if expected.size() != actual.size() or expected.dtype != actual.dtype:
            return (f"{expected.dtype}{list(expected.size())} vs {actual.dtype}{list(actual.size())}")
        e, a = expected.detach(), actual.detach()
        if e.is_floating_point() or e.is_complex():
            t = tol if tol is not None else (1e-2 if e.element_size() <= 2 else 1e-4)
            if not torch.allclose(e, a, rtol=t, atol=t, equal_nan=True):
                return f"max abs difference {(e - a).abs().max().item():.3g}"
            return ""
        return "" if torch.equal(e, a) else "values differ"
    if isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list)):
        if len(expected) != len(actual):
            return f"{len(expected)} outputs vs {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            d = compare(e, a, tol)
            if d:
                return f"output {i}: {d}"
        return ""
    if isinstance(expected, float) and isinstance(actual, float):
        return "" if math.isclose(expected, actual, rel_tol=1e-4, abs_tol=1e-4) else f"{expected} vs {actual}"
    return "" if expected == actual else f"{expected!r} vs {actual!r}"


def copy_graph_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` with its own graph (nodes' meta copied shallowly), sharing submodules."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)


def _reproduces(backend, gm, inputs, failure: Failure) -> bool:
    with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(torch.is_grad_enabled()):
        expected = None
        if failure.stage == "accuracy":     # before the backend sees (and maybe rewrites) the graph
            try:
                expected = _run_seeded(gm, inputs)
            except Exception:  # noqa: BLE001 - the subgraph itself is broken: not this failure
                return False
        try:
            compiled = backend(gm, clone_inputs(inputs))
        except Exception as e:  # noqa: BLE001
            return failure.stage == "compile" and type(e) is failure.exc_type
        if failure.stage == "compile":
            return False
        try:
            actual = _run_seeded(compiled, inputs)
        except Exception as e:  # noqa: BLE001
            return failure.stage == "run" and type(e) is failure.exc_type
        return failure.stage == "accuracy" and bool(compare(expected, actual))


# -- subgraphs --------------------------------------------------------------------------------------
class Subgraphs:
    """Builds the subgraph of `gm` made of a subset of its op nodes, with the real values of every
    node (from one eager run) standing in for what the subset does not compute."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm = gm
        self.nodes = [n for n in gm.graph.nodes if n.op in CALL_OPS]
        self.values = _node_values(gm, example_inputs)

    def _external(self, node) -> bool:
        """Whether a value of `node` can be fed from outside (as an input or a constant)."""
        value = self.values[node]
        return isinstance(value, torch.Tensor) or _is_literal(value)

    def closure(self, keep) -> list:
        """`keep` plus the producers of values that cannot be fed from outside, in graph order."""
        kept = set(keep)
        work = list(kept)
        while work:
            node = work.pop()
            for arg in node.all_input_nodes:
                if arg not in kept and arg.op in CALL_OPS and not self._external(arg):
                    kept.add(arg)
                    work.append(arg)
        return [n for n in self.nodes if n in kept]

    def build(self, keep) -> tuple[torch.fx.GraphModule, list]:
        keep = self.closure(keep)
        kept = set(keep)
        graph = torch.fx.Graph()
        env, inputs = {}, []
        for node in keep:                      # inputs first: every value from outside the subset
            for arg in node.all_input_nodes:
                if arg in kept or arg in env:
                    continue
                value = self.values[arg]
                if isinstance(value, torch.Tensor):
                    env[arg] = graph.placeholder(arg.name)
                    env[arg].meta["example_value"] = value
                    inputs.append(value)
                else:
                    env[arg] = value           # a literal: embedded in the code
        outputs = []
        for node in keep:
            env[node] = graph.node_copy(node, lambda n: env[n])
            env[node].meta["example_value"] = self.values[node]
            if _has_tensor(self.values[node]) and (not node.users or any(u not in kept for u in node.users)):
                outputs.append(env[node])
        graph.output(tuple(outputs))
        return torch.fx.GraphModule(self.gm, graph, class_name="Repro"), inputs


def _node_values(gm, example_inputs) -> dict:
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n] = result
            return result

    with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(torch.is_grad_enabled()):
        torch.manual_seed(1234)
        Recorder(gm).run(*clone_inputs(example_inputs))
    for node, value in list(values.items()):
        if isinstance(value, torch.Tensor):   # an input of a candidate: a leaf, like a graph input
            leaf = value.detach().clone()
            values[node] = leaf.requires_grad_(value.requires_grad) if leaf.is_floating_point() else leaf
    return values


def _is_literal(value) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_is_literal(v) for v in value)
    return isinstance(value, _LITERAL_TYPES)


def _has_tensor(value) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_has_tensor(v) for v in value)
    return isinstance(value, torch.Tensor)


def ddmin(items: list, fails, budget: int = MAX_CANDIDATES) -> list:
    """Zeller's delta debugging: a 1-minimal sublist of `items` for which `fails(sublist)` holds
    (assuming it holds for `items`), trying at most `budget` candidates."""
    cache: dict = {}

    def test(candidate):
        key = tuple(id(x) for x in candidate)
        if key not in cache:
            if len(cache) >= budget:
                return False
            cache[key] = bool(candidate) and fails(candidate)
        return cache[key]

    n = 2
    while len(items) >= 2:
        size = math.ceil(len(items) / n)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        reduced = None
        for chunk in chunks:                         # a single chunk still fails?
            if test(chunk):
                reduced, n = chunk, 2
                break
        if reduced is None and len(chunks) > 2:      # everything but one chunk still fails?
            for i in range(len(chunks)):
                rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                if test(rest):
                    reduced, n = rest, max(n - 1, 2)
                    break
        if reduced is not None:
            items = reduced
            continue
        if n >= len(items):
            break
        n = min(2 * n, len(items))
    return items


# -- the repro --------------------------------------------------------------------------------------
def minify(backend, gm, example_inputs, failure: Failure, frame_dir: FrameDir, title: str,
           shrink: bool = True) -> str | None:
    """Shrink `gm` to a small subgraph that fails like `failure` and write repro.py; its path."""
    spec = backend_reference(backend)
    if spec is None:
        logging.getLogger("bytegraph").warning(
            "bytegraph minifier: the backend %r cannot be referenced from a script (define it at module "
            "level or register it); repro.py will say so", backend)
    small, inputs, note = gm, list(example_inputs), "the whole graph (not minified)"
    if shrink:
        try:
            sub = Subgraphs(gm, example_inputs)
        except Exception as e:  # noqa: BLE001 - the graph does not even run eagerly
            sub, note = None, f"the whole graph (not minified: it fails eagerly too: {type(e).__name__}: {e})"
        if sub is not None:
            def fails(keep):
                try:
                    cand, cand_inputs = sub.build(keep)
                except Exception:  # noqa: BLE001 - not a valid subgraph
                    return False
                return _reproduces(backend, cand, cand_inputs, failure)

            if fails(sub.nodes):
                keep = sub.closure(ddmin(list(sub.nodes), fails))
                small, inputs = sub.build(keep)
                note = f"minified from {len(sub.nodes)} to {len(keep)} op node(s)"
            else:
                note = "the whole graph (not minified: its subgraphs do not fail the same way)"
    inputs_file = None
    if not _reproduces(backend, copy_graph_module(small), random_inputs(inputs), failure):
        inputs_file = "repro_inputs.pt"       # random values do not show it: ship the real ones
        torch.save([i.detach() if isinstance(i, torch.Tensor) else i for i in inputs],
                   os.path.join(frame_dir.path, inputs_file))
    script = repro_script(small, inputs, failure, spec, title, note, inputs_file)
    path = frame_dir.write("repro.py", script)
    logging.getLogger("bytegraph").warning("bytegraph minifier: %s for %s (%s); wrote %s",
                                           failure.describe(), title, note, path)
    log("backend", f"repro for {title}:\n{script}")
    return path


def repro_script(gm, inputs, failure: Failure, spec, title: str, note: str, inputs_file: str | None) -> str:
    doc = f"""Minified repro written by bytegraph (BYTEGRAPH_REPRO_AFTER=dynamo) for {title}.

Failure: {failure.describe()}; this graph is {note}.
Run it standalone: `python repro.py`. It exits with an error while the bug is there, and prints
"repro did not fail" once it is fixed."""
    if failure.stage == "compile":
        main = """
        gm = torch.fx.symbolic_trace(Repro())
        inputs = make_inputs()
        compiled = load_backend(BACKEND_SPEC)(gm, clone_inputs(inputs))
        print("repro did not fail")
        """
    elif failure.stage == "run":
        main = """
        gm = torch.fx.symbolic_trace(Repro())
        inputs = make_inputs()
        compiled = load_backend(BACKEND_SPEC)(gm, clone_inputs(inputs))
        compiled(*clone_inputs(inputs))
        print("repro did not fail")
        """
    else:
        main = """
        gm = torch.fx.symbolic_trace(Repro())
        inputs = make_inputs()
        torch.manual_seed(1234)
        expected = gm(*clone_inputs(inputs))
        compiled = load_backend(BACKEND_SPEC)(gm, clone_inputs(inputs))
        torch.manual_seed(1234)
        actual = compiled(*clone_inputs(inputs))
        for i, (e, a) in enumerate(zip(expected, actual)):
            if not torch.allclose(e.detach(), a.detach(), rtol=1e-4, atol=1e-4, equal_nan=True):
                raise SystemExit(f"accuracy mismatch in output {i}: max abs difference "
                                 f"{(e.detach() - a.detach()).abs().max().item():.3g}")
        print("repro did not fail")
        """
    return standalone_script(gm, inputs, doc=doc, main=main, helpers=backend_loader_source(spec),
                             inputs_file=inputs_file)
