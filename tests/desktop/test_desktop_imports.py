"""desktop/ talks to the kernel through the protocol: it imports from kernel/ only the
protocol, the event types it decodes into, and pure leaf modules (each importing no kernel
module but these: checked below). Nothing else crosses the line, save the named entry
points. Settings, rules, MCP configuration and `reins doctor` are the kernel's, reached
through protocol messages only (issue 19 §1)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[2] / "kernel" / "shared"
ALLOWED = {
    "kernel.protocol", "kernel.events", "kernel.visible", "kernel.paths", "kernel.modes",
    "kernel.setting_records", "kernel.transaction.changeset", "kernel.eval.scoring",
    *(f"kernel.shared.{p.stem}" for p in SHARED.glob("*.py") if p.stem != "__init__"),
}
"""The protocol and the events it carries, and pure helpers with no kernel state: how text
is shown (visible), where files are (paths), the mode names, the records of a settings
change the protocol re-exports (setting_records), a call's change set as its result event
carries it (transaction.changeset), every module of kernel/shared (the leaves the UI shares
with the kernel: attachments, broad workspaces, the key's names and file, the demo's
names), and the format of the results file `reins eval` writes for the Evaluations window
with the arithmetic over it (eval.scoring: the window's protocol with its child process, as
kernel.protocol is the kernel worker's)."""
ENTRY_POINTS = {
    "desktop/entry.py": {"kernel.cli.main"},  # `reins exec …` is the kernel's own command line
    "desktop/kernel_client.py": {"kernel.worker.service"},  # the process it starts
    "desktop/selftest.py": {"kernel.fakemodel"},  # the loopback model of the self-test
    "desktop/screenshots.py": {"kernel.fakemodel"},
    "desktop/evaluations/screenshots.py": {"kernel.eval.task"},
}


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
    assert crossing == {}


def test_the_allowed_modules_are_leaves() -> None:
    """An allowed module that imported the rest of the kernel would carry it into desktop/
    by the back door: each imports, of the kernel, only other allowed modules."""
    beyond = {}
    for module in sorted(ALLOWED):
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.is_file():
            path = path.with_suffix("") / "__init__.py"
        if found := _kernel_imports(path) - ALLOWED:
            beyond[module] = found
    assert beyond == {}


def test_a_crossing_is_seen(tmp_path: Path) -> None:
    """The walk sees every spelling of an import of the kernel (the check cannot pass by
    missing one)."""
    sample = tmp_path / "sample.py"
    sample.write_text("import kernel.eval.checks\nfrom kernel.worker.service import service\n"
                      "from kernel.agent.loop import Agent\nimport os, kernel.cli.main as c\n"
                      "def f():\n    from kernel.policy import settings\n")
    assert _kernel_imports(sample) == {"kernel.eval.checks", "kernel.worker.service",
                                       "kernel.agent.loop", "kernel.cli.main",
                                       "kernel.policy"}
