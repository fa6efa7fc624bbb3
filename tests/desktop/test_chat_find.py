"""Find in the conversation (Ctrl+F) with the real view, and a timestamp on hover."""

from __future__ import annotations

import time

from PySide6.QtCore import QPoint, Qt
from pytestqt.qtbot import QtBot

from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, Role, timestamp_text
from desktop.chat.view import FIND_WIDTH, ChatView
from kernel import events as ev
from tests.desktop.chat_views import shown_view


def make_view(qtbot: QtBot, rows: int = 60) -> ChatView:
    view = shown_view(qtbot)
    model = view.chat_model()
    for i in range(rows):
        model.add_message(Role.USER if i % 2 else Role.ASSISTANT,
                          f"message {i}\n\n" + ("the **Needle** is here" if i in (3, 41, 57)
                                                 else "nothing to see"))
    return view


def test_ctrl_f_finds_every_match_steps_and_reveals_it(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    view.scrollToBottom()
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    bar = view.find_bar
    assert bar.isVisible() and view.focusWidget() is bar.edit
    qtbot.keyClicks(bar.edit, "needle")
    assert [m.row for m in view.matches()] == [3, 41, 57]
    assert bar.count.text() == "1 of 3"
    assert view.selected_text() == "Needle"
    qtbot.waitUntil(lambda: view.indexAt(QPoint(20, 60)).row() in range(0, 6))
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "2 of 3"
    qtbot.waitUntil(lambda: 41 in {view.indexAt(QPoint(20, y)).row() for y in range(0, 380, 20)})
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count.text() == "1 of 3"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count.text() == "3 of 3", "it wraps around"
    qtbot.keyClicks(bar.edit, "zzz")
    assert bar.count.text() == "no matches" and view.selected_text() == ""
    qtbot.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert not bar.isVisible() and view.matches() == []


def test_the_find_bar_sits_at_the_top_right_when_opened_and_as_the_view_resizes(
        qtbot: QtBot) -> None:
    """It is placed when it opens and at each resize while open (not while hidden)."""
    view = make_view(qtbot, rows=0)
    view.resize(900, 400)
    qtbot.waitUntil(lambda: view.width() == 900)
    view.open_find()
    for width in (900, 500, 1300):
        view.resize(width, 400)
        qtbot.waitUntil(lambda w=width: view.width() == w)
        bar, port = view.find_bar.geometry(), view.viewport().width()
        assert bar.right() == port - 9 and bar.top() == 6, (width, bar)
        assert bar.width() == min(FIND_WIDTH, port - 16)


def test_find_sees_the_text_as_shown_not_the_markdown(qtbot: QtBot) -> None:
    view = make_view(qtbot, rows=0)
    view.chat_model().add_message(Role.ASSISTANT,
                                  "a **bold** word and `code`\n\n```sh\nls -la\n```")
    view.find_text("bold word")
    assert len(view.matches()) == 1
    view.find_text("**bold**")
    assert view.matches() == []
    view.find_text("ls -la")
    assert [m.piece for m in view.matches()] == [1]


def test_hovering_a_message_shows_when_it_arrived(qtbot: QtBot) -> None:
    model = ChatModel()
    at = time.mktime((2026, 3, 4, 14, 5, 6, 0, 0, -1))
    apply_event(model, ev.UserMessage("s", "hi"), at=at)
    apply_event(model, ev.AssistantText("s", "hello"), at=at + 2)
    apply_event(model, ev.ToolCallStarted("s", "c", "grep", {}, "x", "read"), at=at + 3)
    apply_event(model, ev.AssistantText("s", "from the store"))
    tips = [model.data(model.index(r), Qt.ItemDataRole.ToolTipRole) for r in range(4)]
    assert tips == ["Sent at 2026-03-04 14:05:06", "Received at 2026-03-04 14:05:08",
                    "Called at 2026-03-04 14:05:09", None]
    assert timestamp_text(model.item(3)) is None, "history from the store has no time to show"
