"""The kit and the reproduction pipeline are two layers, and the arrows point from the pipeline to the kit (DESIGN §9):
nothing the kit imports, directly or through other modules, and at import time or inside a function, is pipeline."""
import ast
from pathlib import Path

import fedkit

PACKAGE = Path(fedkit.__file__).parent
KIT = {"config", "federation", "runner", "engine", "algorithms", "data", "models"}
PIPELINE = {"papers", "ledger", "plan", "precompute", "figures", "derived", "book", "cli"}


def imported(path: Path) -> set[str]:
    """The top-level fedkit modules (or subpackages) the file at ``path`` imports anywhere in its body."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = parts[:len(parts) - node.level] + tuple((node.module or "").split(".") if node.module else ())
            found.update([base[0]] if base else [alias.name for alias in node.names])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fedkit."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("fedkit."))
    return found - {parts[0]}


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        edges.setdefault(path.relative_to(PACKAGE).parts[0].removesuffix(".py"), set()).update(imported(path))
    return edges


def reached(edges: dict[str, set[str]], start: set[str]) -> set[str]:
    """Every module imported from ``start``, directly or through others (``start`` included)."""
    seen, todo = set(start), list(start)
    while todo:
        new = edges.get(todo.pop(), set()) - seen
        seen |= new
        todo.extend(new)
    return seen


def test_the_graph_sees_the_imports_it_is_meant_to_see():
    edges = graph()
    assert {"archive", "history"} <= edges["runner"]  # imports at module level
    assert {"config", "runner"} <= edges["archive"]  # imports inside a function only (Archived._trained)
    assert "runner" in edges["papers"] and "engine" in edges["algorithms"]  # inside subpackages


def test_the_kit_never_imports_the_pipeline():
    edges = graph()
    kit = reached(edges, KIT)
    arrows = sorted(f"{module} -> {target}" for module in kit - PIPELINE
                    for target in edges.get(module, set()) & PIPELINE)
    assert not arrows, f"the kit imports the pipeline: {arrows}"
