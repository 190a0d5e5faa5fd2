"""Standalone scripts the debugging tools write: an fx graph plus example inputs as a runnable
Python file (`fx_graph_runnable.py`, the minifier's `repro.py`), and references to a backend
that such a script, or a replay in another process, can load again.

Compile time only (debug tooling). Functions whose source is copied into the scripts
(`rand_strided`, `clone_inputs`, `load_backend`) import what they need themselves.
"""
from __future__ import annotations

import inspect
import os
import pickle
import sys

import torch
import torch.fx
from torch.fx.graph_module import _format_import_block, sys_importer

from .backends.registry import list_backends, lookup_backend


# -- standalone scripts ----------------------------------------------------------------------
def rand_strided(size, stride, dtype=torch.float32, device="cpu", requires_grad=False):
    """A random tensor with the given size, stride and dtype (values in [0, 2) for integers)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(n > 0 for n in size) else 0
    if dtype.is_floating_point or dtype.is_complex:
        buf = torch.randn(extent, dtype=dtype, device=device)
    elif dtype == torch.bool:
        buf = torch.randint(0, 2, (extent,), device=device).bool()
    else:
        buf = torch.randint(0, 2, (extent,), dtype=dtype, device=device)
    t = torch.as_strided(buf, tuple(size), tuple(stride))
    return t.requires_grad_() if requires_grad else t


def clone_inputs(inputs):
    """Copies of the tensors in `inputs` (same strides, same requires_grad); other values as is."""
    out = []
    for v in inputs:
        if isinstance(v, torch.Tensor):
            c = torch.empty_strided(v.size(), v.stride(), dtype=v.dtype, device=v.device)
            with torch.no_grad():
                c.copy_(v)
            out.append(c.requires_grad_(v.requires_grad) if v.is_floating_point() or v.is_complex() else c)
        else:
            out.append(v)
    return out


def _input_expr(value) -> str:
    if isinstance(value, torch.Tensor):
        return (f"rand_strided({tuple(value.size())!r}, {tuple(value.stride())!r}, {value.dtype}, "
                f"{str(value.device)!r}, requires_grad={value.requires_grad})")
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return repr(value.node.hint if value.node.hint is not None else value)
    return f"None  # a {type(value).__name__} cannot be written here"


def random_inputs(example_inputs, seed: int = 0) -> list:
    """In this process, exactly the inputs `make_inputs()` of a generated script creates."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return [rand_strided(tuple(v.size()), tuple(v.stride()), v.dtype, str(v.device), v.requires_grad)
                if isinstance(v, torch.Tensor) else v for v in example_inputs]


def _constant_expr(value: torch.Tensor) -> str:
    if value.numel() <= 64 and value.device.type == "cpu" and not value.is_complex():
        return f"torch.tensor({value.tolist()!r}, dtype={value.dtype})"
    return _input_expr(value)


def module_source(gm: torch.fx.GraphModule, class_name: str = "Repro") -> str:
    """Imports and an nn.Module class whose forward is the graph's code, constants included."""
    code = gm.graph.python_code(root_module="self")
    imports = _format_import_block(code.globals, sys_importer)
    imports = "\n".join(dict.fromkeys(line for line in imports.splitlines() if line.strip()))
    lines = [imports, "", "", f"class {class_name}(torch.nn.Module):", "    def __init__(self):",
             "        super().__init__()"]
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = gm
            for part in node.target.split("."):
                value = getattr(value, part)
            if isinstance(value, torch.Tensor):
                lines.append(f"        self.register_buffer({node.target.replace('.', '_')!r}, "
                             f"{_constant_expr(value)})")
    body = code.src.strip("\n")
    for node in gm.graph.nodes:
        if node.op == "get_attr" and "." in node.target:
            body = body.replace(f"self.{node.target}", f"self.{node.target.replace('.', '_')}")
    lines.append("")
    lines += ["    " + line for line in body.splitlines() if line.strip()]
    return "\n".join(lines)


def standalone_script(gm: torch.fx.GraphModule, example_inputs, *, doc: str, main: str, helpers: str = "",
                      inputs_file: str | None = None) -> str:
    """A script defining `Repro` (the graph), `make_inputs()` and `main`'s body under `__main__`.

    `make_inputs()` creates random inputs with the recorded shapes/strides/dtypes (seed 0), or loads
    `inputs_file` (saved next to the script with torch.save) when random values do not reproduce."""
    parts = ['"""' + doc.strip().replace('"""', "'''") + '\n"""', "import os", "", "import torch", "import torch.fx",
             module_source(gm), "", "", inspect.getsource(rand_strided), "", inspect.getsource(clone_inputs), "",
             "def make_inputs():"]
    if inputs_file:
        parts.append(f"    return torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
                     f"{inputs_file!r}))")
    else:
        parts.append("    torch.manual_seed(0)")
        parts.append("    return [")
        parts += [f"        {_input_expr(v)}," for v in example_inputs]
        parts.append("    ]")
    if helpers:
        parts += ["", "", helpers.strip()]
    parts += ["", "", 'if __name__ == "__main__":']
    parts += ["    " + line if line.strip() else "" for line in inspect.cleandoc(main).splitlines()]
    return "\n".join(parts) + "\n"


def runnable_script(gm: torch.fx.GraphModule, example_inputs, title: str) -> str:
    """`fx_graph_runnable.py`: runs the graph eagerly on random inputs and prints the outputs' shapes."""
    return standalone_script(gm, example_inputs, doc=f"""
{title}

Runs standalone: `python fx_graph_runnable.py`. The inputs are random, with the shapes, strides and
dtypes the graph was compiled for.""", main="""
mod = Repro()
with torch.no_grad():
    outputs = mod(*make_inputs())
for i, out in enumerate(outputs if isinstance(outputs, (tuple, list)) else [outputs]):
    if isinstance(out, torch.Tensor):
        print(f"output {i}: {out.dtype} {tuple(out.shape)}")
    else:
        print(f"output {i}: {out!r}")
""")


# -- referring to a backend from another process ------------------------------------------------
def backend_reference(backend) -> dict | None:
    """How a script in another process can get `backend` back: by its registered name, by importing
    it, or by unpickling it. None if none of these works."""
    for name in list_backends():
        try:
            if lookup_backend(name) is backend:
                return {"kind": "registry", "name": name}
        except Exception:  # noqa: BLE001, S112 - a broken entry point is not ours to report here
            continue
    module_name = getattr(backend, "__module__", None)
    qualname = getattr(backend, "__qualname__", None)
    module = sys.modules.get(module_name or "")
    if module is not None and qualname and "<" not in qualname and _resolve(module, qualname) is backend:
        file = getattr(module, "__file__", None)
        if module_name == "__main__":
            return {"kind": "import", "module": module_name, "qualname": qualname, "path": None,
                    "file": os.path.abspath(file) if file else None}
        return {"kind": "import", "module": module_name, "qualname": qualname, "path": _import_root(module),
                "file": None}
    try:
        data = pickle.dumps(backend)
    except Exception:  # noqa: BLE001 - lambdas, closures, objects holding locks...
        return None
    cls_module = sys.modules.get(type(backend).__module__)
    return {"kind": "pickle", "data": data, "path": _import_root(cls_module) if cls_module else None}


def _resolve(obj, qualname: str):
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _import_root(module) -> str | None:
    """The sys.path entry from which `module` was imported."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = os.path.dirname(os.path.abspath(file))
    depth = module.__name__.count(".") + (1 if os.path.basename(file) == "__init__.py" else 0)
    for _ in range(depth):
        path = os.path.dirname(path)
    return path


def load_backend(spec):
    """Get a backend back from `backend_reference(...)`'s description (also copied into scripts)."""
    # the imports are inside: this function's source is copied into standalone scripts
    import importlib
    import importlib.util
    import pickle
    import sys
    if spec is None:
        raise RuntimeError("the backend could not be referenced from another process (a lambda or a local "
                           "function?); define it at module level or register it with bytegraph.register_backend")
    if spec.get("path") and spec["path"] not in sys.path:
        sys.path.insert(0, spec["path"])
    if spec["kind"] == "registry":
        from bytegraph.backends.registry import lookup_backend
        return lookup_backend(spec["name"])
    if spec["kind"] == "pickle":
        return pickle.loads(spec["data"])
    if spec.get("file"):   # defined in a script that ran as __main__: load that file as a module
        file_spec = importlib.util.spec_from_file_location("_bytegraph_user_script", spec["file"])
        module = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(spec["module"])
    for part in spec["qualname"].split("."):
        module = getattr(module, part)
    return module


def backend_loader_source(spec) -> str:
    """Helper code for a script: `BACKEND_SPEC` and `load_backend(spec)`."""
    return f"BACKEND_SPEC = {spec!r}\n\n\n{inspect.getsource(load_backend)}"
