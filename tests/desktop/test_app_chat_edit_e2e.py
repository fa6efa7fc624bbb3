"""The whole app (real widgets, a real kernel worker, the real client against the fake model):
attach a file and send, edit the last message (its attachment kept), regenerate the answer,
go back to the earlier answer with ‹ and go on from it, then reload the session from the
store: the model was sent only the current branch, the chat shows it with the attachment
named and the answer's versions, and each message has its time on hover."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role, timestamp_text
from desktop.controller import AppController
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import running_app

WAIT_MS = 90_000
pytestmark = pytest.mark.timeout(300)


def messages(app: AppController) -> list[MessageItem]:
    view = app.views[app.current or ""]
    return [i for i in view.chat.items() if isinstance(i, MessageItem)
            and i.role in (Role.USER, Role.ASSISTANT)]


def sent_texts(fake: FakeAnthropicServer, n: int) -> list[str]:
    return [b["text"] for m in fake.requests[n].body["messages"] for b in m["content"]
            if b["type"] == "text"]


def idle(app: AppController) -> bool:
    view = app.views.get(app.current or "")
    return view is not None and not view.running


def test_attach_edit_regenerate_and_reload(qtbot: QtBot, reins_home: AppPaths,
                                           workspace: Path) -> None:
    with FakeAnthropicServer(api_key="sk-e2e-key") as fake, running_app(
            qtbot, reins_home, fake, api_key="sk-e2e-key", model="claude-e2e",
            mode="auto") as app:
        _conversation(qtbot, app, fake, workspace)
        fake.release()


def _conversation(qtbot: QtBot, app: AppController, fake: FakeAnthropicServer,
                  workspace: Path) -> None:
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "auto", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    (workspace / "todo.txt").write_text("call the plumber\n")
    fake.add(reply(ToolUse("read_file", {"path": "todo.txt"}, id="c_read")),
             reply("You should call the plumber."), reply("Call the plumber today."),
             reply("Today: the plumber."), reply("Then pay the plumber."))

    w.prompt.attach_files([str(workspace / "todo.txt")])
    qtbot.waitUntil(lambda: not w.prompt.edit.isReadOnly(), timeout=WAIT_MS)
    qtbot.keyClicks(w.prompt.edit, "what is on my list?")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(fake.requests) == 2 and idle(app), timeout=WAIT_MS)
    assert sent_texts(fake, 0) == [
        "what is on my list?", '<attachment name="todo.txt">\ncall the plumber\n\n</attachment>']
    assert w.prompt.tray.chips() == []

    app.begin_edit()
    assert w.prompt.editing and w.prompt.edit.toPlainText() == "what is on my list?"
    assert [c.name for c in w.prompt.tray.chips()] == ["todo.txt"]
    w.prompt.edit.setPlainText("what is urgent on my list?")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(fake.requests) == 3 and idle(app), timeout=WAIT_MS)
    assert sent_texts(fake, 2) == [
        "what is urgent on my list?",
        '<attachment name="todo.txt">\ncall the plumber\n\n</attachment>']
    assert [m.text for m in messages(app)] == ["what is urgent on my list?",
                                               "Call the plumber today."]

    app.regenerate()
    qtbot.waitUntil(lambda: len(fake.requests) == 4 and idle(app), timeout=WAIT_MS)
    assert sent_texts(fake, 3) == sent_texts(fake, 2)
    assert all(b["type"] == "text" for m in fake.requests[3].body["messages"]
               for b in m["content"]), "the superseded call and its result are not sent"
    assert [m.text for m in messages(app)] == ["what is urgent on my list?",
                                               "Today: the plumber."]

    w.chat.executeDelayedItemsLayout()
    strip = w.chat.turn_actions
    qtbot.waitUntil(lambda: strip.count.isVisible() and strip.count.text() == "2/2",
                    timeout=WAIT_MS)
    assert strip.model.text() == "claude-e2e"
    qtbot.mouseClick(strip.earlier, Qt.MouseButton.LeftButton)  # the kernel continues from it
    try:
        qtbot.waitUntil(lambda: not w.chat.chat_model().browsing()
                        and strip.count.text() == "1/2" and strip.buttons[1].isVisible(),
                        timeout=WAIT_MS)
    except qtbot.TimeoutError as exc:  # (seen once in a loaded full run: say what stood instead)
        chat = w.chat.chat_model()
        raise AssertionError(
            f"browsing={chat.browsing()} count={strip.count.text()!r} row={strip.row} "
            f"rows={chat.rowCount()} retry={strip.buttons[1].isVisible()} "
            f"status={w.statusBar().currentMessage()!r} idle={idle(app)}") from exc
    qtbot.keyClicks(w.prompt.edit, "and then?")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(fake.requests) == 5 and idle(app), timeout=WAIT_MS)
    assert sent_texts(fake, 4)[-2:] == ["Call the plumber today.", "and then?"]
    assert "Today: the plumber." not in str(fake.requests[4].body)

    session = app.current or ""
    app.views.pop(session)
    app.open_session(session)
    qtbot.waitUntil(lambda: session in app.views and app.current == session, timeout=WAIT_MS)
    shown = messages(app)
    assert [m.text for m in shown] == ["what is urgent on my list?", "Call the plumber today.",
                                       "and then?", "Then pay the plumber."]
    chat = app.views[session].chat
    found = chat.version_group(1)
    assert found is not None and (found[1].shown, len(found[1].branches)) == (0, 2)
    assert [a["name"] for a in shown[0].attachments] == ["todo.txt"]
    assert all(timestamp_text(m) for m in shown), "stored messages show their time too"
    assert w.timeline.model.row_of("c_read") is not None, "the timeline keeps the call"
