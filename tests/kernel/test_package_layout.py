"""The kernel's layout stays one a newcomer can find their way in (issue 29 §6): its packages
import each other without a cycle, and the modules left at its top are the shared
vocabularies and path owners, not loose code."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[2] / "kernel"
TOP_LEVEL = {"events", "protocol", "modes", "setting_records", "paths", "pathrules",
             "hardlinks", "visible"}
"""The event and message vocabularies, the mode names, the settings records, where files
are, the one list of secret and protected paths (and their hard links), how untrusted text
is shown."""


def _unit(module: str) -> str:
    """The package (or top-level module) a dotted kernel module belongs to."""
    return ".".join(module.split(".")[:2])


def package_imports(root: Path) -> dict[str, set[str]]:
    """Each kernel package → the other kernel packages it imports (at any place in a file:
    a function-level or TYPE_CHECKING import is a dependency too)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        source = _unit(".".join(parts))
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = ([f"{node.module}.{a.name}" for a in node.names]
                         if node.module == "kernel" else [node.module])
            for name in names:
                if name.startswith("kernel.") and _unit(name) != source:
                    edges[source].add(_unit(name))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle's packages (Tarjan's strongly connected components of two or more)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_kernel_packages_import_each_other_without_a_cycle() -> None:
    assert cycles(package_imports(KERNEL)) == []


def test_a_cycle_is_seen(tmp_path: Path) -> None:
    """The walk sees a cycle through a function-level import and a `from kernel import`."""
    root = tmp_path / "kernel"
    for package in ("a", "b", "c"):
        (root / package).mkdir(parents=True)
    (root / "a" / "x.py").write_text("from kernel.b.y import f\n")
    (root / "b" / "y.py").write_text("def f():\n    from kernel import c\n")
    (root / "c" / "__init__.py").write_text("import kernel.a.x\n")
    assert cycles(package_imports(root)) == [["kernel.a", "kernel.b", "kernel.c"]]


def test_only_the_shared_vocabularies_stay_at_the_top() -> None:
    loose = {p.stem for p in KERNEL.glob("*.py")} - {"__init__"}
    assert loose == TOP_LEVEL
