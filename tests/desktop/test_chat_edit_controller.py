"""The controller's side of edit, regenerate and attachments, with the real window and a
recording stand-in for the kernel client: the commands sent, the refusals while a run is in
progress, a prompt and its chips kept when the kernel cannot take them, and stored times."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.test_main_window import load, make

SENT = [ev.UserMessage("s1", "fix the build", at=1_700_000_000.0,
                       attachments=[{"name": "log.txt", "kind": "text", "bytes": 120,
                                     "blocks": 1}]),
        ev.AssistantText("s1", "Fixed.", at=1_700_000_005.0),
        ev.RunFinished("s1", stop_reason="end_turn", at=1_700_000_006.0)]


def test_editing_the_last_message_sends_an_edit_keeping_what_stays(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, *SENT)
    w = controller.window
    w.prompt.edit.setPlainText("x")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Up)
    assert not w.prompt.editing, "Up moves the cursor in a prompt being written"
    w.prompt.edit.clear()
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Up)
    assert w.prompt.editing and w.prompt.edit.toPlainText() == "fix the build"
    assert [c.name for c in w.prompt.tray.chips()] == ["log.txt"]
    (tmp_path / "more.txt").write_text("more")
    w.prompt.attach_files([str(tmp_path / "more.txt")])
    w.prompt.edit.setPlainText("fix the build, then test")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    (edit,) = client.of(p.EditLastMessage)
    assert isinstance(edit, p.EditLastMessage)
    assert (edit.session_id, edit.prompt, edit.keep) == ("s1", "fix the build, then test",
                                                         (0,))
    assert [(a.name, a.data) for a in edit.attachments] == [("more.txt", "bW9yZQ==")]
    assert controller.views["s1"].running and client.of(p.StartRun) == []


def test_edit_and_regenerate_are_refused_while_a_run_is_in_progress(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, *SENT)
    client.batch.emit([p.RunStatus("s1", "running")])
    controller.begin_edit()
    assert not controller.window.prompt.editing
    assert "Stop the run before editing" in controller.window.statusBar().currentMessage()
    controller.regenerate()
    assert client.of(p.RegenerateAnswer) == []
    assert "Stop the run" in controller.window.statusBar().currentMessage()
    client.batch.emit([p.RunStatus("s1", "idle")])
    controller.regenerate()
    assert client.of(p.RegenerateAnswer) == [p.RegenerateAnswer("s1")]


def test_a_prompt_the_kernel_cannot_take_keeps_its_attachments(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    (tmp_path / "a.txt").write_text("a")
    w.prompt.attach_files([str(tmp_path / "a.txt")])
    client.alive = False
    w.prompt.edit.setPlainText("read it")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    assert w.prompt.edit.toPlainText() == "read it"
    assert [c.name for c in w.prompt.tray.chips()] == ["a.txt"]
    client.alive = True
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    (start,) = client.of(p.StartRun)
    assert isinstance(start, p.StartRun) and [a.name for a in start.attachments] == ["a.txt"]
    assert w.prompt.tray.chips() == []


def test_stored_messages_show_when_they_were_sent(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, *SENT)
    chat = controller.views["s1"].chat
    tips = [chat.data(chat.index(r), Qt.ItemDataRole.ToolTipRole)
            for r, item in enumerate(chat.items()) if isinstance(item, MessageItem)][:2]
    assert [t.split(" at ")[0] for t in tips] == ["Sent", "Received"]
    assert all(t.split(" at ")[1].startswith("2023-11-1") for t in tips)
