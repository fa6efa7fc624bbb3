"""Stopping one call from its timeline row, end to end: real widgets, a real kernel worker
process, the real anthropic client against the fake Anthropic server, bubblewrap.

The row's "■ Stop" sends cancel_call (not cancel_run): the command and everything it started
end, the model gets a cancelled result, and the run goes on to its answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role, ToolCardItem
from desktop.controller import AppController
from desktop.timeline.delegate import TimelineDelegate
from desktop.timeline.model import Column
from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import approval_card, running_app, shown_card
from tests.sandbox.sandbox_helpers import leftovers

WAIT_MS = 60_000
MARKER = "1000.4243"
"""`sleep 1000.4243`: a 1000-second sleep whose command line no other process has."""
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-stop-key") as server:
        yield server


@pytest.fixture
def app(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[AppController]:
    with running_app(qtbot, reins_home, fake, api_key="sk-stop-key", model="claude-stop",
                     mode="auto") as controller:
        yield controller
    fake.release()


def texts(app: AppController, role: Role) -> list[str]:
    view = app.views.get(app.current or "")
    items = view.chat.items() if view is not None else []
    return [i.text for i in items if isinstance(i, MessageItem) and i.role is role]


def card_status(app: AppController, call_id: str) -> str:
    view = app.views[app.current or ""]
    return next(i.status for i in view.chat.items()
                if isinstance(i, ToolCardItem) and i.call_id == call_id)


def test_stop_on_a_running_row_stops_only_that_call(qtbot: QtBot, app: AppController,
                                                     fake: FakeAnthropicServer,
                                                     workspace: Path) -> None:
    sent: list[p.Message] = []
    send = app.client.send

    def recording_send(message: p.Message) -> bool:
        sent.append(message)
        return send(message)

    app.client.send = recording_send  # type: ignore[method-assign]
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "auto", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)

    command = f"sleep {MARKER} & sleep {MARKER}"
    fake.add(reply("Sleeping twice.", ToolUse("run_command", {"command": command}, id="cmd1")),
             reply("You stopped the sleeps; moving on."))
    qtbot.keyClicks(w.prompt.edit, "sleep a while")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)

    timeline = w.timeline
    w.timeline_dock.show()

    def row_running() -> bool:
        record = timeline.model.record("cmd1")
        return record is not None and record.status == "running"

    qtbot.waitUntil(lambda: row_running() and len(leftovers(MARKER)) >= 2, timeout=WAIT_MS)
    row = timeline.model.row_of("cmd1")
    assert row is not None
    index = timeline.proxy.mapFromSource(timeline.model.index(row, Column.ACTION))
    assert index.data() == "■ Stop"
    view = timeline.view
    view.scrollTo(index)
    button = TimelineDelegate.button_rect(view.visualRect(index), view.fontMetrics(), "■ Stop")
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=button.center())

    qtbot.waitUntil(lambda: "You stopped the sleeps; moving on." in texts(app, Role.ASSISTANT)
                    and not app.views[app.current or ""].running, timeout=WAIT_MS)
    session_id = app.current
    assert p.CancelCall(session_id or "", "cmd1") in sent
    assert not any(isinstance(m, p.CancelRun) for m in sent)
    assert "Run stopped." not in texts(app, Role.NOTICE)
    assert card_status(app, "cmd1") == "stopped"
    record = timeline.model.record("cmd1")
    assert record is not None and record.status == "stopped"
    result = next(b for b in fake.requests[1].body["messages"][-1]["content"]
                  if b.get("type") == "tool_result")
    assert result["tool_use_id"] == "cmd1" and result["is_error"] is True
    assert "stopped the call to 'run_command' while it was running" in json.dumps(result)
    assert leftovers(MARKER) == []


def test_stopping_a_call_that_waits_for_approval_takes_its_card_away(
        qtbot: QtBot, app: AppController, fake: FakeAnthropicServer, workspace: Path) -> None:
    """The card goes on the kernel's answer to the request, while the run goes on (its
    next model turn is held open here, so the run's end cannot be what closes it)."""
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "ask", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    fake.add(reply(ToolUse("write_file", {"path": "new.txt", "content": "x"}, id="w1")),
             reply("Fine, no file then.", chunk_chars=4, stall_after=1))
    qtbot.keyClicks(w.prompt.edit, "write new.txt")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    card = approval_card(qtbot, app, timeout=WAIT_MS)
    assert card.request.call_id == "w1"

    w.timeline.stop_requested.emit("w1")  # what the row, the key and the details' Stop emit
    view = app.views[app.current or ""]
    qtbot.waitUntil(lambda: fake.stalled.is_set() and shown_card(app) is None
                    and not app.approvals.dialog.isVisible()
                    and card_status(app, "w1") == "stopped", timeout=WAIT_MS)
    assert view.running and len(app.approvals) == 0
    assert not (workspace / "new.txt").exists()
    result = next(b for b in fake.requests[1].body["messages"][-1]["content"]
                  if b.get("type") == "tool_result")
    assert result["tool_use_id"] == "w1" and result["is_error"] is True
    assert "before it was approved, so it was not run" in json.dumps(result)
    record = w.timeline.model.record("w1")
    assert record is not None and record.approval.decision == "deny"
    assert record.approval.decided_by == "user"
    app.cancel_run()
    qtbot.waitUntil(lambda: not view.running, timeout=WAIT_MS)
