"""Every third-party module kernel/ and desktop/ import comes from a dependency
pyproject.toml declares (not one taken for granted because another dependency pulls it in),
and none is a private module of another package (`mcp.shared._httpx_utils` may change in
any release)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = {"kernel", "desktop", "bench", "tests", "packaging"}


def _imports() -> list[tuple[str, str]]:
    """(file, dotted module) of every absolute import in kernel/ and desktop/."""
    found = []
    for path in [*ROOT.joinpath("kernel").rglob("*.py"), *ROOT.joinpath("desktop").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(ROOT)), a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((str(path.relative_to(ROOT)), node.module))
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0] for d in project["dependencies"]}
    return {n.lower().replace("_", "-") for n in names}


def _third_party(module: str) -> str | None:
    top = module.split(".")[0]
    if top in OURS or top in sys.stdlib_module_names or top == "__future__":
        return None
    return top


def test_every_third_party_import_is_a_declared_dependency() -> None:
    declared = _declared()
    dists = packages_distributions()
    missing = sorted({
        (top, file) for file, module in _imports()
        if (top := _third_party(module)) is not None
        and not any(d.lower().replace("_", "-") in declared for d in dists.get(top, [top]))
    })
    assert missing == [], f"imported but not declared in pyproject.toml: {missing}"


def test_no_private_module_of_another_package_is_imported() -> None:
    private = sorted({(file, module) for file, module in _imports()
                      if _third_party(module) is not None
                      and any(part.startswith("_") for part in module.split("."))})
    assert private == []
