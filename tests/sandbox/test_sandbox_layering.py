"""The sandbox knows nothing of tools (the run_command tool adapts the executor's result and
refusals), and the tool specs' types resolve (no import cycle hidden under TYPE_CHECKING)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import kernel.sandbox
from kernel.tools.spec import ToolContext

SANDBOX = Path(kernel.sandbox.__file__).parent


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_sandbox_module_imports_the_tools() -> None:
    offending = {path.name: sorted(m for m in _imports(path) if m.startswith("kernel.tools"))
                 for path in SANDBOX.glob("*.py")}
    assert {name: mods for name, mods in offending.items() if mods} == {}


def test_the_tool_context_types_resolve() -> None:
    hints = typing.get_type_hints(ToolContext)
    assert hints["path_policy"].__name__ == "PathPolicy"
    assert hints["outputs"].__name__ == "OutputStore"
