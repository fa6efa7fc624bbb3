"""The whole app, end to end: real widgets, a real kernel worker process, the real anthropic
client against the fake Anthropic server. Type a prompt, see streamed text, approve a write,
deny another, cancel a run, kill -9 the kernel and see it come back with the history intact,
then close the window and see the kernel stop."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role, ToolCardItem
from desktop.controller import AppController
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import approval_card, click_answer, running_app, shown_card

WAIT_MS = 90_000
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-e2e-key") as server:
        yield server


@pytest.fixture
def app(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[AppController]:
    with running_app(qtbot, reins_home, fake, api_key="sk-e2e-key", model="claude-e2e",
                     mode="ask") as controller:
        yield controller
    fake.release()


def chat_items(app: AppController) -> list[MessageItem | ToolCardItem]:
    view = app.views.get(app.current or "")
    return view.chat.items() if view is not None else []


def texts(app: AppController, role: Role) -> list[str]:
    return [i.text for i in chat_items(app) if isinstance(i, MessageItem) and i.role is role]


def cards(app: AppController) -> list[ToolCardItem]:
    return [i for i in chat_items(app) if isinstance(i, ToolCardItem)]


def running(app: AppController) -> bool:
    view = app.views.get(app.current or "")
    return view is not None and view.running


def type_prompt(qtbot: QtBot, app: AppController, text: str) -> None:
    edit = app.window.prompt.edit
    qtbot.waitUntil(lambda: not edit.isReadOnly(), timeout=WAIT_MS)
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def test_whole_app_round_trip(qtbot: QtBot, app: AppController, fake: FakeAnthropicServer,
                              workspace: Path) -> None:
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    assert w.sandbox_label.text().startswith("Sandbox:")

    # A new session in the workspace, mode ask.
    w.sessions.new_requested.emit(str(workspace), "ask", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    assert w.mode_combo.currentText() == "ask"

    # Prompt → streamed text → a write that asks → Allow once.
    fake.add(
        reply("I will write the note now.", ToolUse("write_file",
                                                    {"path": "note.txt", "content": "hello"}),
              chunk_chars=4),
        reply("And another file.", ToolUse("write_file",
                                           {"path": "other.txt", "content": "nope"})),
        reply("Understood: I left other.txt alone."),
    )
    type_prompt(qtbot, app, "write a note")
    card = approval_card(qtbot, app, timeout=WAIT_MS)
    assert texts(app, Role.USER) == ["write a note"]
    assert texts(app, Role.ASSISTANT)[0] == "I will write the note now."
    assert card.tool_label.text() == "write_file"
    assert "note.txt" in card.preview.toPlainText()
    first_call = card.request.call_id
    click_answer(qtbot, card, card.allow_once)

    # The second write asks too: deny it with a message for the model.
    qtbot.waitUntil(lambda: (shown_card(app) or card).request.call_id != first_call,
                    timeout=WAIT_MS)
    card = shown_card(app)
    assert "other.txt" in card.preview.toPlainText()
    qtbot.keyClicks(card.deny_message, "not that one")
    click_answer(qtbot, card, card.deny)

    qtbot.waitUntil(lambda: "Understood: I left other.txt alone." in texts(app, Role.ASSISTANT)
                    and not running(app), timeout=WAIT_MS)
    assert (workspace / "note.txt").read_text() == "hello"
    assert not (workspace / "other.txt").exists()
    assert [c.status for c in cards(app)] == ["ok", "denied"]
    assert "not that one" in json.dumps(fake.requests[2].body)
    assert w.windowTitle().endswith(" — Reins")
    assert "Tokens:" in w.usage_label.text()

    # A run that stalls mid-stream is cancelled with Stop.
    fake.add(reply("this answer stalls " * 10, chunk_chars=5, stall_after=8))
    type_prompt(qtbot, app, "take your time")
    qtbot.waitUntil(lambda: running(app) and w.prompt.stop_button.isEnabled(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: any(i.streaming for i in chat_items(app)
                                if isinstance(i, MessageItem)), timeout=WAIT_MS)
    qtbot.mouseClick(w.prompt.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not running(app) and "Run stopped." in texts(app, Role.NOTICE),
                    timeout=WAIT_MS)
    fake.release()
    shown_before_kill = texts(app, Role.USER) + texts(app, Role.ASSISTANT)

    # kill -9 the kernel: the UI says so, a new kernel starts, the session is reloaded.
    old = app.client.process
    assert old is not None
    os.kill(old.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: any("stopped unexpectedly" in t for t in texts(app, Role.ERROR)),
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: app.client.process is not old and w.kernel_label.text() == ""
                    and texts(app, Role.USER) == shown_before_kill[:2], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "Understood: I left other.txt alone." in texts(app,
                                                                           Role.ASSISTANT),
                    timeout=WAIT_MS)
    assert texts(app, Role.USER) == ["write a note", "take your time"]
    assert [c.status for c in cards(app)] == ["ok", "denied"]

    # The new kernel runs prompts too.
    fake.add(reply("Back in business."))
    type_prompt(qtbot, app, "still there?")
    qtbot.waitUntil(lambda: "Back in business." in texts(app, Role.ASSISTANT)
                    and not running(app), timeout=WAIT_MS)

    # Closing the window stops the kernel cleanly.
    process = app.client.process
    w.close()
    assert process is not None and not process.is_alive() and process.exitcode == 0
