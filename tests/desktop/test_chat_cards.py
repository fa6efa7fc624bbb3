"""Tool calls inside the chat: a card expands in place (arguments, result preview, Open full
output), its outcome reads in words, and its duration is the run time without the wait for
the user's approval (one duration format with the timeline)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRectF, Qt
from pytestqt.qtbot import QtBot

from desktop.chat.feed import apply_event, result_detail
from desktop.chat.geometry import card_box
from desktop.chat.model import ChatModel, ToolCardItem
from desktop.chat.view import ChatView
from desktop.words import format_duration
from kernel import events as ev
from tests.desktop.chat_views import shown_view

S = "s1"


def make_view(qtbot: QtBot) -> ChatView:
    return shown_view(qtbot, 640, 500)


def run_call(model: ChatModel, *, output: str | None = None) -> None:
    apply_event(model, ev.ToolCallStarted(S, "c1", "run_command",
                                          {"command": "make test\x1b[2K", "timeout_s": 60},
                                          "make test", "execute"), at=100.0)
    apply_event(model, ev.ToolResultEvent(
        S, "c1", "run_command", True, "execution_error", 1234.0, 50_000, output,
        "exit code 3 · 1.23 s · sandbox: bwrap\n" + "\n".join(f"line {i}" for i in range(40))),
        at=101.0)


def test_a_card_expands_in_place_with_arguments_and_result(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    run_call(model)
    card = model.item(0)
    assert isinstance(card, ToolCardItem) and not card.expanded
    folded = view.visualRect(model.index(0)).height()
    activated: list[str] = []
    view.tool_card_activated.connect(activated.append)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.visualRect(model.index(0)).topLeft() + QPoint(60, 14))
    assert card.expanded and activated == ["c1"]
    qtbot.waitUntil(lambda: view.visualRect(model.index(0)).height() > folded + 200)
    body = card.body.toPlainText() if card.body is not None else ""
    assert '"command": "make test\\u001b[2K"' in body and '"timeout_s": 60' in body
    assert "Result\nexit code 3 · 1.23 s" in body
    assert "line 14" in body and "line 15" not in body and "… 25 more lines" in body
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.visualRect(model.index(0)).topLeft() + QPoint(60, 14))
    assert not card.expanded
    qtbot.waitUntil(lambda: view.visualRect(model.index(0)).height() == folded)


def test_open_full_output_from_the_card(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    run_call(model, output="/tmp/reins/out/c1.txt")
    model.toggle_card(0)
    qtbot.waitUntil(lambda: view.visualRect(model.index(0)).height() > 200)
    card = model.item(0)
    assert isinstance(card, ToolCardItem)
    geometry = card_box(card, QRectF(view.visualRect(model.index(0))))
    assert geometry.open_output is not None
    with qtbot.waitSignal(view.open_output) as opened:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=geometry.open_output.center().toPoint())
    assert opened.args == ["/tmp/reins/out/c1.txt"]
    assert card.expanded, "the button does not fold the card"


def test_without_a_kept_output_there_is_no_open_button(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    run_call(model)
    model.toggle_card(0)
    qtbot.waitUntil(lambda: view.visualRect(model.index(0)).height() > 200)
    card = model.item(0)
    assert isinstance(card, ToolCardItem)
    assert card_box(card, QRectF(view.visualRect(model.index(0)))).open_output is None


@pytest.mark.parametrize("is_error, code, preview, status, words", [
    (False, None, "exit code 0 · …", "ok", None),
    (True, "execution_error", "exit code 3 · 0.03 s · sandbox: bwrap", "error", "exit code 3"),
    (True, "execution_error", "exit code 137 · 2 s", "error", "exit code 137"),
    (True, "execution_error", "exit code none (never ended) · 2 s", "error", "never ended"),
    (True, "execution_error", "Traceback: boom", "error", "failed"),
    (True, "approval_denied", "", "denied", "denied by you"),
    (True, "permission_denied", "", "denied", "not allowed by the rules"),
    (True, "cancelled", "", "stopped", "stopped"),
    (True, "timeout", "", "timeout", "timed out"),
    (True, "invalid_arguments", "", "error", "invalid arguments"),
    (True, "unknown_tool", "", "error", "unknown tool"),
])
def test_outcomes_read_in_words(is_error: bool, code: str | None, preview: str, status: str,
                                words: str | None) -> None:
    event = ev.ToolResultEvent(S, "c", "run_command", is_error, code, 30.0, 2048, None, preview)
    detail = result_detail(event)
    assert event.status == status
    expected = [words] if words else []
    assert detail.split(" · ") == [*expected, "30 ms", "2.0 KB"]
    assert "_" not in detail, "no error codes"


def test_the_cards_duration_leaves_out_the_approval_wait(qtbot: QtBot) -> None:
    model = ChatModel()
    apply_event(model, ev.ApprovalRequest(S, "c", "run_command", {"command": "ls"}, "execute",
                                          "ask"), at=1000.0)
    apply_event(model, ev.ApprovalDecision(S, "c", "allow_once"), at=1008.9)
    apply_event(model, ev.ToolResultEvent(S, "c", "run_command", False, None, 8930.0, 10),
                at=1008.93)
    card = model.item(0)
    assert isinstance(card, ToolCardItem) and card.status == "ok"
    assert card.detail == "30 ms · 10 B"


@pytest.mark.parametrize("seconds, shown", [
    (0.0, "0 ms"), (0.0304, "30 ms"), (0.9994, "999 ms"), (1.0, "1.0 s"), (20.463, "20.5 s"),
    (59.94, "59.9 s"), (60.0, "1 min 00 s"), (65.2, "1 min 05 s"), (3599.0, "59 min 59 s"),
    (3600.0, "1 h 00 min"), (7380.0, "2 h 03 min"), (-1.0, "0 ms"),
])
def test_one_duration_format(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


def test_a_composites_steps_sit_indented_under_it_and_unfold_in_their_column(
        qtbot: QtBot) -> None:
    # A composite's steps (and a step's own fallback) are calls Reins made for the model's
    # one call: each line sits one step further in, under the call it serves, and its
    # unfolded details keep to that narrower column; an unknown parent is a call of its own.
    view = make_view(qtbot)
    model = view.chat_model()
    for call, parent in (("wr", ""), ("s1", "wr"), ("s2", "wr"), ("f1", "s2"), ("x", "gone")):
        apply_event(model, ev.ToolCallStarted(S, call, "run_command", {"command": "ls"},
                                              "ls", "execute", parent_call_id=parent))
    cards = [model.item(row) for row in range(model.rowCount())]
    assert [(c.call_id, c.depth) for c in cards if isinstance(c, ToolCardItem)] == [
        ("wr", 0), ("s1", 1), ("s2", 1), ("f1", 2), ("x", 0)]
    lefts = [card_box(c, QRectF(view.visualRect(model.index(row))))  # type: ignore[arg-type]
             .header.left() for row, c in enumerate(cards)]
    assert lefts[1] == lefts[2] > lefts[0] == lefts[4] and lefts[3] > lefts[2]
    step = model.item(3)
    assert isinstance(step, ToolCardItem)
    model.toggle_card(3)
    view.executeDelayedItemsLayout()
    rect = QRectF(view.visualRect(model.index(3)))
    box = card_box(step, rect)
    assert box.body is not None and box.body.left() > lefts[3]
    assert box.body.right() <= rect.right()
    assert not view.grab().toImage().isNull()
