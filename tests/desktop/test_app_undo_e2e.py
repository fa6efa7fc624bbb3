"""Undo from the timeline, end to end: real widgets, a real kernel worker process, the real
anthropic client against the fake Anthropic server, a real command applied as a checkpoint
step. The model's command writes a file; its timeline row shows the change; Undo this call
puts the file back on disk and the row says undone; Show diff shows the change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.controller import AppController
from desktop.timeline.model import Column
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import running_app

WAIT_MS = 60_000
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-undo-key") as server:
        yield server


@pytest.fixture
def app(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[AppController]:
    with running_app(qtbot, reins_home, fake, api_key="sk-undo-key", model="claude-undo",
                     mode="auto") as controller:
        yield controller
    fake.release()


def test_undo_this_call_puts_the_file_back(qtbot: QtBot, app: AppController,
                                           fake: FakeAnthropicServer, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the original\n")
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "auto", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    fake.add(reply(ToolUse("run_command", {"command": "printf 'rewritten\\n' > notes.txt"},
                           id="cmd1")), reply("Rewrote it."))
    qtbot.keyClicks(w.prompt.edit, "rewrite the notes")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)

    w.timeline_dock.show()
    timeline = w.timeline
    qtbot.waitUntil(lambda: (r := timeline.model.record("cmd1")) is not None
                    and bool(r.changes), timeout=WAIT_MS)
    assert (workspace / "notes.txt").read_text() == "rewritten\n"
    qtbot.waitUntil(lambda: not app.views[app.current or ""].running, timeout=WAIT_MS)
    assert timeline.select_call("cmd1")
    details = timeline.details
    assert details.changes_summary.text().startswith("Changed: 1 file changed, +1 \u22121")

    qtbot.mouseClick(details.diff_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(details.diff.isVisible, timeout=WAIT_MS)
    assert "-the original" in details.diff.toPlainText()
    assert "+rewritten" in details.diff.toPlainText()

    qtbot.waitUntil(details.undo_button.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(details.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: (workspace / "notes.txt").read_text() == "the original\n",
                    timeout=WAIT_MS)
    row = timeline.model.row_of("cmd1")
    assert row is not None
    qtbot.waitUntil(lambda: timeline.model.index(row, Column.STATUS).data().endswith("undone"),
                    timeout=WAIT_MS)
    assert not details.undo_button.isVisible()
    assert details.undo_note.text().startswith("Undone call cmd1; put back:")
    assert "notes.txt" in details.undo_note.text()
