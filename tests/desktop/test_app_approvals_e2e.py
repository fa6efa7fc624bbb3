"""Approvals through the whole app (real widgets, a real kernel worker, the real anthropic
client against the fake model): typing on while a request arrives answers nothing; a
request pending when the app quits comes back on the next start and, allowed, runs that
very call once, records the grant, and the model gets the real result; a command the
kernel died in is asked again, showing the command, before Retry runs it again."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role
from desktop.controller import AppController
from kernel.agent.store import RunState, SessionStore
from kernel.events import ApprovalDecision, ApprovalRequest, ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from kernel.policy.approvals import INTERRUPTED_REASON
from tests.desktop.conftest import approval_card, click_answer, running_app, shown_card
from tests.desktop.test_app_e2e import running, type_prompt

WAIT_MS = 90_000
KEY = "sk-approvals-e2e"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as server:
        yield server
        server.release()


def start(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, mode: str
          ) -> Any:
    return running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-approvals",
                       mode=mode)


def new_session(qtbot: QtBot, app: AppController, workspace: Path, mode: str) -> str:
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), mode, False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    assert app.current is not None
    return app.current


def stored(app: AppController, kind: type) -> list[Any]:
    view = app.views[app.current or ""]
    return [e for e in view.events if isinstance(e, kind)]


def tool_result_block(fake: FakeAnthropicServer, call_id: str) -> dict[str, Any]:
    for request in fake.requests:
        for message in request.body["messages"]:
            content = message["content"]
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                        return block
    raise AssertionError(f"the model never got a result for {call_id}")


def block_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def test_typing_on_while_a_request_arrives_answers_nothing(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with start(qtbot, reins_home, fake, "ask") as app:
        new_session(qtbot, app, workspace, "ask")
        w = app.window
        w.activateWindow()
        w.prompt.edit.setFocus()
        qtbot.waitUntil(lambda: QApplication.focusWidget() is w.prompt.edit, timeout=WAIT_MS)
        fake.add(reply("Writing it.", ToolUse("write_file", {"path": "note.txt",
                                                             "content": "hi"})),
                 reply("Done."))
        type_prompt(qtbot, app, "write a note")
        typed = 0
        # The user goes on typing the next message — spaces, Enter — while the request
        # arrives and for a while after, into whatever has the keyboard focus.
        while shown_card(app) is None or typed < 12:
            target = QApplication.focusWidget()
            assert target is w.prompt.edit, f"the focus moved to {target!r}"
            qtbot.keyClicks(target, "go on ")
            qtbot.keyClick(target, Qt.Key.Key_Space)
            qtbot.keyClick(target, Qt.Key.Key_Return)
            qtbot.wait(60)
            typed += 1 if shown_card(app) is not None else 0
            assert typed or len(fake.requests) < 3, "the request never came"
        assert QApplication.focusWidget() is w.prompt.edit
        assert w.prompt.edit.toPlainText().startswith("go on  ")
        assert len(app.approvals) == 1 and stored(app, ApprovalDecision) == []
        assert not (workspace / "note.txt").exists()
        assert running(app), "the run still waits for the answer"

        card = shown_card(app)
        click_answer(qtbot, card, card.allow_once)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert (workspace / "note.txt").read_text() == "hi"
        [decision] = stored(app, ApprovalDecision)
        assert (decision.decision, decision.decided_by) == ("allow_once", "ui")


def test_a_request_pending_at_quit_runs_that_very_call_once_when_allowed_after_restart(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    fake.add(reply("First write.", ToolUse("write_file", {"path": "a.txt", "content": "A"},
                                           id="call_a")),
             reply("Again.", ToolUse("write_file", {"path": "a.txt", "content": "AA"},
                                     id="call_a2")),
             reply("All done."))
    with start(qtbot, reins_home, fake, "ask") as app:
        sid = new_session(qtbot, app, workspace, "ask")
        type_prompt(qtbot, app, "write a.txt twice")
        card = approval_card(qtbot, app, timeout=WAIT_MS)
        assert card.request.call_id == "call_a"
        process = app.client.process
        app.window.close()
        box = app.window.quit_box
        assert box is not None and "wait" in box.text()
        next(b for b in box.buttons() if b.text() == "&Quit anyway").click()
        assert process is not None and not process.is_alive()
    assert not (workspace / "a.txt").exists()
    with SessionStore(reins_home.database) as store:
        assert store.get_session(sid).run_state is RunState.INTERRUPTED
        assert store.get_result(sid, "call_a") is None, "the waiting call got no result"

    with start(qtbot, reins_home, fake, "ask") as app:
        # The last session comes back by itself, with its pending request.
        qtbot.waitUntil(lambda: app.current == sid, timeout=WAIT_MS)
        card = approval_card(qtbot, app, timeout=WAIT_MS)
        assert card.request.call_id == "call_a"
        click_answer(qtbot, card, card.buttons["allow_session"])
        qtbot.waitUntil(lambda: any(isinstance(i, MessageItem) and i.text == "All done."
                                    for i in app.views[sid].chat.items())
                        and not running(app), timeout=WAIT_MS)
        assert (workspace / "a.txt").read_text() == "AA"
        asked = {r.call_id for r in stored(app, ApprovalRequest)}
        assert asked == {"call_a"}, "the second write did not ask"
        decisions = [(d.call_id, d.decision, d.decided_by) for d in
                     stored(app, ApprovalDecision)]
        assert decisions[0] == ("call_a", "allow_session", "ui")
        assert ("call_a2", "allow", "policy") in decisions
        results = {r.call_id: r for r in stored(app, ToolResultEvent)}
        assert not results["call_a"].is_error and not results["call_a2"].is_error
        block = tool_result_block(fake, "call_a")
        assert not block.get("is_error") and "cancel" not in block_text(block).lower()
        qtbot.waitUntil(lambda: app.window.grants_button.text() == "1 grant", timeout=WAIT_MS)
    with SessionStore(reins_home.database) as store:
        events = [e for _, e in store.events(sid)]
    assert [e.call_id for e in events if isinstance(e, ApprovalRequest)] == ["call_a"]
    assert [(e.call_id, e.decision) for e in events if isinstance(e, ApprovalDecision)] == [
        ("call_a", "allow_session"), ("call_a2", "allow")]
    assert [e.call_id for e in events if isinstance(e, ToolResultEvent)] == [
        "call_a", "call_a2"], "each call ran once"


def test_retry_after_the_kernel_died_in_a_command_asks_again_showing_it(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    command = "echo ran >> marks.txt; sleep 120"
    fake.add(reply(ToolUse("run_command", {"command": command}, id="call_c")),
             reply("I will not run it again."))
    marks = workspace / "marks.txt"
    with start(qtbot, reins_home, fake, "auto") as app:
        sid = new_session(qtbot, app, workspace, "auto")
        type_prompt(qtbot, app, "run it")
        uppers = reins_home.data / "transactions"
        qtbot.waitUntil(lambda: any(uppers.glob("*/upper/marks.txt")), timeout=WAIT_MS)
        assert not marks.exists(), "a running command's writes are not in the workspace"
        assert stored(app, ApprovalRequest) == [], "auto mode ran it without asking"
        old = app.client.process
        assert old is not None
        os.kill(old.pid, signal.SIGKILL)
        w = app.window
        qtbot.waitUntil(lambda: app.client.process is not old and w.kernel_label.text() == ""
                        and app.views[sid].interrupted and w.banner.isVisible(),
                        timeout=WAIT_MS)
        assert "Retry" in w.banner.button.text()
        qtbot.mouseClick(w.banner.button, Qt.MouseButton.LeftButton)
        card = approval_card(qtbot, app, timeout=WAIT_MS)
        assert card.request.call_id == "call_c"
        assert INTERRUPTED_REASON in card.reason_label.text()
        assert command in card.preview.toPlainText()
        assert card.button("allow_always") is None
        assert not marks.exists(), "what the command the kernel died in wrote was not applied"
        click_answer(qtbot, card, card.deny)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert not marks.exists()
        block = tool_result_block(fake, "call_c")
        assert block.get("is_error") and "denied" in block_text(block)
        assert any(isinstance(i, MessageItem) and i.role is Role.ASSISTANT
                   and i.text == "I will not run it again." for i in app.views[sid].chat.items())
