"""Visible work in the real chat view: the activity line (spinner, what runs, elapsed time)
follows the run's events, and a streaming message shows a cursor after its last character."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage
from pytestqt.qtbot import QtBot

from desktop.chat.delegate import caret_rect
from desktop.chat.feed import apply_event
from desktop.chat.geometry import message_pieces, row_box
from desktop.chat.model import RENDER_INTERVAL_MS, ChatModel, MessageItem
from desktop.chat.view import ChatView
from kernel import events as ev
from tests.desktop.chat_views import shown_view

S = "s1"


def make_view(qtbot: QtBot) -> ChatView:
    return shown_view(qtbot)


RUN: list[tuple[ev.Event, str | None]] = [
    (ev.UserMessage(S, "go"), "Thinking"),
    (ev.AssistantDelta(S, "Let me look"), None),
    (ev.AssistantText(S, "Let me look"), "Thinking"),
    (ev.ToolCallStarted(S, "a", "list_directory", {}, ".", "read"), "Running list_directory"),
    (ev.ToolCallStarted(S, "b", "read_file", {}, "x", "read"), "Running 2 tools"),
    (ev.ToolResultEvent(S, "a", "list_directory", False, None, 3.0), "Running read_file"),
    (ev.ToolResultEvent(S, "b", "read_file", False, None, 3.0), "Thinking"),
    (ev.ApprovalRequest(S, "c", "run_command", {"command": "ls"}, "execute", "ask"),
     "Waiting for your approval"),
    (ev.ApprovalDecision(S, "c", "allow_once"), "Running run_command"),
    (ev.ToolResultEvent(S, "c", "run_command", True, "cancelled", 3.0), "Thinking"),
    (ev.RunFinished(S, "end_turn"), None),
]


def test_the_activity_follows_the_run(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    seen = []
    for event, label in RUN:
        apply_event(model, event, at=time.time())
        seen.append(model.activity.label if model.activity else None)
        assert view.activity.isVisible() is (label is not None)
    assert seen == [label for _, label in RUN]


def test_the_activity_line_animates_and_counts_the_time(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    apply_event(model, ev.UserMessage(S, "go"), at=time.time() - 3.0)
    indicator = view.activity
    assert indicator.isVisible() and indicator.text().startswith("Thinking · 3.")
    assert indicator.geometry().bottom() >= view.viewport().geometry().bottom(), (
        "it sits under the messages, not over them")
    first = indicator.grab().toImage().copy(0, 0, 40, indicator.height())
    qtbot.wait(200)
    assert indicator.grab().toImage().copy(0, 0, 40, indicator.height()) != first, (
        "the spinner moved")
    # The same label keeps its start; a new one starts from zero.
    apply_event(model, ev.AssistantText(S, "x"), at=time.time())
    assert indicator.text().startswith("Thinking · 3.")
    apply_event(model, ev.ToolCallStarted(S, "a", "grep", {}, "x", "read"), at=time.time())
    assert indicator.text().startswith("Running grep · ") and indicator.text().endswith(" ms")
    model.finish_streaming()
    assert not indicator.isVisible()


def test_switching_sessions_shows_the_other_sessions_activity(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    busy = view.chat_model()
    apply_event(busy, ev.UserMessage(S, "go"), at=time.time())
    idle = ChatModel(view)
    view.setModel(idle)
    assert not view.activity.isVisible()
    view.setModel(busy)
    assert view.activity.isVisible()


def _dark_pixels(image: QImage, rect: QRectF) -> int:
    count = 0
    for x in range(int(rect.left()) + 1, int(rect.right())):
        for y in range(int(rect.top()) + 1, int(rect.bottom())):
            if QColor(image.pixel(x, y)).lightness() < 100:
                count += 1
    return count


@pytest.mark.parametrize("text", ["Streaming words", "para\n\nsecond para", "- a list\n- item",
                                  "```py\nx = 1"])
def test_a_streaming_message_shows_a_cursor_after_its_text(qtbot: QtBot, text: str) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    model.append_delta(text)
    qtbot.wait(RENDER_INTERVAL_MS * 4)
    item = model.item(0)
    assert isinstance(item, MessageItem) and item.streaming
    rect = QRectF(view.visualRect(model.index(0)))
    caret = caret_rect(message_pieces(item, rect), row_box(rect))
    last_line = item.documents()[-1].toPlainText().split("\n")[-1]
    assert caret.left() > rect.left() + len(last_line) * 3, "after the last character"
    assert _dark_pixels(view.viewport().grab().toImage(), caret) > 10
    model.finish_text(text)
    view.viewport().repaint()
    assert _dark_pixels(view.viewport().grab().toImage(), caret) == 0


def test_waiting_retrying_and_compacting_are_shown(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    now = time.time()
    apply_event(model, ev.UserMessage(S, "go"), at=now)
    apply_event(model, ev.ModelWaiting(S, waited_s=12.0, timeout_s=60.0), at=now)
    assert view.activity.text().startswith("Waiting for the model · 12.")
    apply_event(model, ev.AssistantDelta(S, "Half an ans"), at=now)
    apply_event(model, ev.ModelRetry(S, attempt=1, of=4, delay_s=2.0, reason="overloaded",
                                     discarded=True), at=now)
    assert view.activity.text().startswith(
        "Retrying in 2.0 s: overloaded (attempt 2 of 4) · ")
    streamed, notice = model.item(1), model.item(2)
    assert isinstance(streamed, MessageItem) and not streamed.streaming
    assert isinstance(notice, MessageItem) and notice.text == (
        "The answer above broke off (overloaded); the model answers again.")
    apply_event(model, ev.ModelRetry(S, attempt=2, of=4, delay_s=4.0, reason="rate limited"),
                at=now)
    assert model.rowCount() == 3, "a retry before any text adds no notice"
    apply_event(model, ev.ContextCompacted(S, "summary", 4, 180_000, 40_000, "auto"), at=now)
    last = model.item(3)
    assert isinstance(last, MessageItem) and last.text == (
        "Older turns were summarized to fit the context window (about 180,000 → 40,000 "
        "tokens); the full history is kept.")
    assert view.activity.text().startswith("Thinking · ")


def test_a_notice_is_shown_as_a_notice_in_the_chat(qtbot: QtBot) -> None:
    """A `notice` (what a dead kernel's command left, kept aside: kernel.transaction.folders)
    is a note of its own in the session's chat."""
    from desktop.chat.model import Role

    model = make_view(qtbot).chat_model()
    apply_event(model, ev.Notice(S, code="transaction_recovered", call_id="k1",
                                 message="None of its 1 changes was applied."), at=time.time())
    items = [model.item(i) for i in range(model.rowCount())]
    assert [(i.role, i.text) for i in items if isinstance(i, MessageItem)] == [
        (Role.NOTICE, "None of its 1 changes was applied.")]
