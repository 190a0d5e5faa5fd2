"""Structure figures for issue 15: import circles, function-level imports, long functions, probes.

Run from the repository root: `python tools/structure_figures.py` (add `--json` for machine output).
Reads the source with `ast` only; nothing is imported, so it works on a broken tree too.

- circles: strongly-connected components of the import graph between the project's own modules,
  per package, counting every import that runs (module level and inside functions; imports under
  `if TYPE_CHECKING:` never run and are left out).
- function-level imports: `import`/`from ... import` statements inside a function body, per package.
- longest functions: by source lines (decorators excluded), the 10 longest across the project.
- hasattr probes: `hasattr(...)` calls in frontend/ whose object is not a module or a class constant.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

# folder -> import name, as pyproject.toml's [tool.setuptools.package-dir] maps them
PACKAGES = {
    "compiler": "bytegraph",
    "frontend": "bytegraph.frontend",
    "frontend/variables": "bytegraph.frontend.variables",
    "guards": "bytegraph.guards",
    "backends": "bytegraph.backends",
    "backends/inductor": "bytegraph.backends.inductor",
}
TOP_FOLDERS = ("compiler", "frontend", "guards", "backends")


def module_files(root: Path) -> dict[str, Path]:
    """Every project module, by its dotted import name."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            modules[name] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """(import node, inside a function?) for every import that runs."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    yield from walk_one(sub, in_function)
                continue
            yield from walk_one(child, in_function)

    def walk_one(node, in_function):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        yield from walk(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    yield from walk(tree, False)


def _top_level_names(tree: ast.AST) -> set:
    """The names a module binds at its top level (what `from package import name` can mean besides
    a submodule)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _targets(module: str, is_package: bool, node, modules: dict, bound: dict) -> list[str]:
    """The project modules an import statement loads. `from package import name` where the package
    does not bind `name` loads a submodule that is not Python source (the C extension `_C`): no edge."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    found = []
    for alias in node.names:
        submodule = f"{origin}.{alias.name}"
        if submodule in modules:
            found.append(submodule)
        elif origin in modules and alias.name in bound[origin]:
            found.append(origin)
    return found


def import_graph(root: Path):
    modules = module_files(root)
    edges: dict[str, set] = {name: set() for name in modules}
    local_imports: Counter = Counter()
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in modules.items()}
    bound = {name: _top_level_names(tree) for name, tree in trees.items()}
    for name, path in modules.items():
        for node, in_function in _imports(trees[name]):
            if in_function:
                local_imports[str(path.relative_to(root))] += 1
            for target in _targets(name, path.stem == "__init__", node, modules, bound):
                if target != name:
                    edges[name].add(target)
    return modules, edges, local_imports


def strongly_connected(edges: dict[str, set]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components of more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def longest_functions(root: Path, count: int = 10) -> list[tuple[int, str]]:
    lengths = []
    for folder in TOP_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    lengths.append((lines, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return sorted(lengths, key=lambda item: (-item[0], item[1]))[:count]


# names the frontend gives trackers (`var`, `obj_var`, `self` in a tracker method, `args[0]`...)
_TRACKER_NAME = re.compile(r"^(self|var|obj|other|item|arg|args|value_var|\w+_var|a|b|x|y)$")


def _names_a_tracker(expr: ast.expr) -> bool:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return isinstance(expr, ast.Name) and bool(_TRACKER_NAME.match(expr.id))


def hasattr_probes(root: Path) -> dict:
    """`hasattr(x, ...)` calls in frontend/, and those (with `getattr(x, "name", default)`) whose
    object is by its name a tracker: a capability the tracker protocol should answer instead."""
    every, on_trackers = [], []
    for path in sorted((root / "frontend").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                continue
            where = f"{path.relative_to(root)}:{node.lineno} {ast.unparse(node)}"
            if node.func.id == "hasattr":
                every.append(where)
            if (node.func.id == "hasattr" or node.func.id == "getattr" and len(node.args) == 3) and \
                    _names_a_tracker(node.args[0]):
                on_trackers.append(where)
    return {"hasattr": every, "on_trackers": on_trackers}


def figures(root: Path) -> dict:
    modules, edges, local_imports = import_graph(root)
    circles = {}
    for folder in TOP_FOLDERS:
        prefix = PACKAGES[folder]
        members = [m for m in modules if m == prefix or m.startswith(prefix + ".")]
        if folder == "compiler":  # the other folders live below bytegraph.*; keep them apart
            others = [PACKAGES[f] for f in TOP_FOLDERS if f != "compiler"]
            members = [m for m in members if not any(m == o or m.startswith(o + ".") for o in others)]
        sub = {m: edges[m] & set(members) for m in members}
        circles[folder] = strongly_connected(sub)
    per_folder = Counter()
    for path, n in local_imports.items():
        per_folder[path.split("/")[0]] += n
    return {
        "circles": circles,
        "circles_project": strongly_connected(edges),
        "function_level_imports": dict(sorted(per_folder.items())),
        "function_level_imports_by_file": dict(local_imports.most_common()),
        "longest_functions": longest_functions(root),
        "hasattr_probes": hasattr_probes(root),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent, type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = figures(args.root)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    print("import circles (strongly-connected components, within a package):")
    for folder, components in result["circles"].items():
        shown = "; ".join(f"{len(c)} modules: {', '.join(m.rsplit('.', 1)[-1] for m in c)}" for c in components)
        print(f"  {folder}: {len(components)}" + (f"  [{shown}]" if components else ""))
    project = result["circles_project"]
    print(f"  across packages: {len(project)}" + "".join(f"\n    {len(c)}: {', '.join(c)}" for c in project))
    total = sum(result["function_level_imports"].values())
    print(f"function-level imports: {total}  {result['function_level_imports']}")
    for path, n in result["function_level_imports_by_file"].items():
        print(f"  {n:3d} {path}")
    print("longest functions:")
    for lines, where in result["longest_functions"]:
        print(f"  {lines:4d} {where}")
    probes = result["hasattr_probes"]
    print(f"hasattr calls in frontend/: {len(probes['hasattr'])}")
    print(f"probes on trackers (hasattr, getattr with a default): {len(probes['on_trackers'])}")
    for probe in probes["on_trackers"]:
        print(f"  {probe}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
