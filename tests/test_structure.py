"""Module dependencies point one way (issue 15): no import circle inside or across the packages,
counted by tools/structure_figures.py (every import that runs, at module level or in a function)."""
import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _figures():
    spec = importlib.util.spec_from_file_location("structure_figures", ROOT / "tools" / "structure_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.figures(ROOT)


def test_no_import_circles():
    figures = _figures()
    assert figures["circles"] == {"compiler": [], "frontend": [], "guards": [], "backends": []}
    assert figures["circles_project"] == []


def test_families_table_has_every_name_used():
    # a family looks up in `families` the names of the families above it: each must be registered
    from bytegraph.frontend.variables.base import families
    used = set()
    for path in (ROOT / "frontend").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "families" \
                    and node.attr != "register":
                used.add(node.attr)
    assert len(used) >= 10
    assert [name for name in sorted(used) if not hasattr(families, name)] == []
