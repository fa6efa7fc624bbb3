"""No two classes of kernel/ and desktop/ share a name: a reader (or a traceback) that says
`Kernel` or `SessionInfo` names one thing (issue 19 §4)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_class_name_is_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted([*ROOT.joinpath("kernel").rglob("*.py"),
                        *ROOT.joinpath("desktop").rglob("*.py")]):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(ROOT)))
    twins = {name: files for name, files in where.items() if len(files) > 1}
    assert twins == {}
