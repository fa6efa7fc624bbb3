"""reins.spec leaves unused Qt modules out of the bundle; no app code may import one (the
frozen app would fail only when that code path runs, so this is checked on the source)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "packaging" / "reins.spec"


def spec_constant(name: str) -> object:
    tree = ast.parse(SPEC.read_text(), filename=str(SPEC))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{SPEC} defines no {name}")


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_app_code_imports_a_module_the_bundle_leaves_out() -> None:
    excluded = spec_constant("EXCLUDED_MODULES")
    assert isinstance(excluded, list) and "PySide6.QtNetwork" in excluded
    offenders = []
    for source in sorted([*(ROOT / "kernel").rglob("*.py"), *(ROOT / "desktop").rglob("*.py")]):
        for module in imported_modules(source):
            hit = next((x for x in excluded if module == x or module.startswith(x + ".")), None)
            if hit is not None:
                offenders.append(f"{source.relative_to(ROOT)} imports {module}")
    assert offenders == [], (
        "these imports would fail in the packaged app (reins.spec EXCLUDED_MODULES leaves the "
        "module out; take it off that list if it is really needed): " + "; ".join(offenders))


def test_the_check_sees_imports_of_excluded_modules(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from PySide6.QtSvg import QSvgRenderer\nimport PySide6.QtNetwork\n")
    assert {"PySide6.QtSvg", "PySide6.QtNetwork"} <= imported_modules(sample)
