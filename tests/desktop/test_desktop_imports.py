"""desktop/ talks to the kernel through the protocol: it imports from kernel/ only the
protocol, the event types it decodes into, and pure leaf modules. The imports that still
cross the line are listed by file; nothing may be added to that list, and a file that stops
crossing must leave it. Settings, rules, MCP configuration and `reins doctor` are the
kernel's, reached through protocol messages only (issue 19 §1)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {
    "kernel.protocol", "kernel.events", "kernel.visible", "kernel.paths", "kernel.modes",
    "kernel.keys", "kernel.workspace", "kernel.attachments",
}
"""The protocol and the events it carries; pure helpers with no kernel state: how text is
shown (visible), where files are (paths), the mode names, the key names, which folders are
broad (workspace), what a file is as an attachment (attachments)."""
ENTRY_POINTS = {
    "desktop/entry.py": {"kernel.cli"},  # `reins exec …` is the kernel's own command line
    "desktop/kernel_client.py": {"kernel.worker"},  # the process it starts
    "desktop/selftest.py": {"kernel.fakemodel"},  # the loopback model of the self-test
    "desktop/screenshots.py": {"kernel.fakemodel"},
    "desktop/evaluations/screenshots.py": {"kernel.eval.task"},
}
DEBT = {
    "desktop/evaluations/window.py": {"kernel.eval.scoring"},
    "desktop/evaluations/runs.py": {"kernel.eval.checks", "kernel.eval.scoring"},
}
"""Crossings still to move behind the protocol (issue 19 §1)."""


def _kernel_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "kernel":
                found.update(f"kernel.{a.name}" for a in node.names)
            elif node.module.startswith("kernel."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("kernel"))
    return found


def test_desktop_imports_only_the_protocol_and_pure_leaves() -> None:
    crossing = {}
    for path in sorted((ROOT / "desktop").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        beyond = _kernel_imports(path) - ALLOWED - ENTRY_POINTS.get(rel, set())
        if beyond:
            crossing[rel] = beyond
    assert crossing == DEBT
