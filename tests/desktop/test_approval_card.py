"""The approval card in the conversation, on real widgets (offscreen): the choices it offers
(a table), its chord from the prompt where the user types (after the half-second guard,
never a key typed by habit), a card out of sight scrolled to instead of answered, Esc with
a pending approval never stopping the run, and a card as legible in dark mode as in light.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QVBoxLayout, QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.card import ApprovalCard, choice_label, offered_choices
from desktop.chat.model import ChatModel, Role
from desktop.chat.view import ChatView
from desktop.theme import DARK, contrast, flat_palette
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.conftest import ARMED_WAIT_MS, approval_card, wait_armed
from tests.desktop.test_main_window import load, make

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
RULES = [{"rule": "write_file(notes.txt)", "words": "write_file: notes.txt"}]


def request(call_id: str = "c1", *, risk: str = "write", rule: str = "mode ask",
            can_always: bool = True, always: list[dict[str, str]] | None = None
            ) -> ev.ApprovalRequest:
    return ev.ApprovalRequest("s1", call_id, "write_file", {"path": "notes.txt"}, risk,
                              "writes ask in ask mode", "--- a/notes.txt\n+++ b/notes.txt\n+hi",
                              rule=rule, can_always=can_always,
                              always_rules=RULES if always is None else always)


@pytest.mark.parametrize(("asked", "offered"), [
    (request(), ("allow_once", "allow_session", "allow_always", "deny")),
    (request(rule=ev.HELD_RULE), ("allow_once", "deny")),
    (request(risk="destructive"), ("allow_once", "allow_session", "deny")),
    (request(can_always=False), ("allow_once", "allow_session", "deny")),
    (request(always=[]), ("allow_once", "allow_session", "deny")),
])
def test_the_card_offers_the_choices_the_request_allows(asked: ev.ApprovalRequest,
                                                        offered: tuple[str, ...]) -> None:
    assert offered_choices(asked) == offered


def test_choice_labels_say_what_each_does_and_a_new_choice_reads_as_its_words() -> None:
    assert choice_label("allow_once") == "Allow once"
    assert choice_label("allow_once", held=True) == "Keep these changes"
    assert choice_label("deny", held=True) == "Discard them"
    assert choice_label("run_and_review") == "Run and review"


class Page:
    """A window with the conversation and a prompt, the focus in the prompt."""

    def __init__(self, qtbot: QtBot, *requests: ev.ApprovalRequest, filler: int = 0) -> None:
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.window.resize(900, 700)
        self.chat = ChatView(self.window)
        self.prompt = QPlainTextEdit(self.window)
        layout = QVBoxLayout(self.window)
        layout.addWidget(self.chat, 1)
        layout.addWidget(self.prompt)
        self.model = ChatModel(self.window)
        self.chat.setModel(self.model)
        for asked in requests:
            self.model.add_tool_card(asked.call_id, asked.name, "notes.txt",
                                     "awaiting_approval")
            self.model.set_approval(asked.call_id, asked)
        for n in range(filler):
            self.model.add_message(Role.ASSISTANT, f"paragraph {n}\n\n" * 6)
        self.answers: list[tuple[str, str, str, bool]] = []
        self.chat.approval_cards.decided.connect(
            lambda r, choice, message, confirmed: self.answers.append(
                (r.call_id, choice, message, confirmed)))
        self.window.show()
        self.window.activateWindow()
        self.prompt.setFocus()
        qtbot.waitUntil(lambda: QApplication.focusWidget() is self.prompt,
                        timeout=ARMED_WAIT_MS)
        self.chat.executeDelayedItemsLayout()

    def card(self, call_id: str = "c1") -> ApprovalCard:
        return self.chat.approval_cards.cards[call_id]


def test_the_chord_from_the_prompt_answers_after_the_guard_and_typing_never_does(
        qtbot: QtBot) -> None:
    page = Page(qtbot, request())
    card = page.card()
    assert card.isVisible() and page.chat.approval_cards.on_screen(card)
    card.arming.delay_ms = 5_000  # the guard, however loaded the machine
    card.rearm()
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == [], "the chord inside the half-second guard answers nothing"
    card.arming.delay_ms = 500
    card.arming.refresh()
    wait_armed(qtbot, card, card.allow_once)
    qtbot.keyClicks(page.prompt, "yes please ")
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space, Qt.Key.Key_Y):
        for modifiers in (Qt.KeyboardModifier.NoModifier, CTRL, SHIFT):
            qtbot.keyClick(page.prompt, key, modifiers)
    qtbot.keyClick(page.prompt, Qt.Key.Key_Return, CTRL | SHIFT)
    assert page.answers == [], "no key typed by habit answers"
    assert QApplication.focusWidget() is page.prompt, "the card took no focus"
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == [("c1", "allow_once", "", False)]
    assert page.prompt.toPlainText().startswith("yes please")


def test_the_allow_buttons_take_no_keys_and_deny_carries_the_message(qtbot: QtBot) -> None:
    page = Page(qtbot, request())
    card = page.card()
    wait_armed(qtbot, card, card.allow_once)
    for choice in ("allow_once", "allow_session", "allow_always"):
        button = card.buttons[choice]
        assert button.focusPolicy() == Qt.FocusPolicy.NoFocus
        qtbot.keyClick(button, Qt.Key.Key_Space)
        qtbot.keyClick(button, Qt.Key.Key_Return)
    assert page.answers == []
    qtbot.keyClicks(card.deny_message, "use notes.md")
    qtbot.keyClick(card.deny_message, Qt.Key.Key_Return)
    assert page.answers == [("c1", "deny", "use notes.md", False)]


def test_a_destructive_call_needs_its_confirmation(qtbot: QtBot) -> None:
    page = Page(qtbot, request(risk="destructive"))
    card = page.card()
    wait_armed(qtbot, card, card.deny)
    assert card.confirm_box.isVisible() and not card.allow_once.isEnabled()
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == []
    card.confirm_box.setChecked(True)
    page.prompt.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is page.prompt, timeout=ARMED_WAIT_MS)
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == [("c1", "allow_once", "", True)]


def test_a_card_out_of_sight_is_scrolled_to_by_the_chord_and_not_answered(
        qtbot: QtBot) -> None:
    page = Page(qtbot, request(), filler=30)
    chat = page.chat
    chat.scrollToBottom()
    card = page.card()
    qtbot.waitUntil(lambda: not chat.approval_cards.on_screen(card), timeout=ARMED_WAIT_MS)
    wait_armed(qtbot, card, card.allow_once)
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == [], "the user had not seen it"
    assert chat.approval_cards.on_screen(card) and not card.armed, "shown, a new question"
    wait_armed(qtbot, card, card.allow_once)
    qtbot.keyClick(page.prompt, Qt.Key.Key_Y, CTRL | SHIFT)
    assert page.answers == [("c1", "allow_once", "", False)]


def test_esc_with_an_approval_pending_never_stops_the_run(qtbot: QtBot,
                                                          reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=ARMED_WAIT_MS)
    client.batch.emit([p.RunStatus("s1", "running"),
                       p.EventMessage(ev.ToolCallStarted("s1", "c1", "write_file",
                                                         {"path": "notes.txt"}, "notes.txt")),
                       p.EventMessage(request())])
    card = approval_card(qtbot, controller, "c1")
    assert not controller.approvals.dialog.isVisible()
    for widget in (w.prompt.edit, card.deny_message, w.chat):
        widget.setFocus()
        qtbot.waitUntil(lambda widget=widget: QApplication.focusWidget() is widget,
                        timeout=ARMED_WAIT_MS)
        qtbot.keyClick(widget, Qt.Key.Key_Escape)
    assert client.of(p.CancelRun) == [] and client.of(p.ApprovalAnswer) == []
    assert approval_card(qtbot, controller, "c1") is card
    # Esc with nothing pending stops the run, as it always did.
    wait_armed(qtbot, card, card.deny)
    qtbot.mouseClick(card.deny, Qt.MouseButton.LeftButton)
    assert client.of(p.ApprovalAnswer) == [p.ApprovalAnswer("s1", "c1", "deny")]
    w.prompt.edit.setFocus()
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Escape)
    assert client.of(p.CancelRun) == [p.CancelRun("s1")]


@pytest.mark.parametrize("dark", [False, True])
def test_the_card_is_as_legible_in_dark_mode_as_in_light(qtbot: QtBot, dark: bool) -> None:
    light = QGuiApplication.palette()
    if dark:
        QGuiApplication.setPalette(flat_palette(*DARK))
    try:
        card = ApprovalCard(request())
        qtbot.addWidget(card)
        card.show()
        ground = card.grab().toImage().pixelColor(6, card.height() // 2)
        palette: Any = card.palette()
        text = palette.color(QPalette.ColorRole.Text)
        assert (ground.lightness() < 128) == dark, "the card follows the page"
        assert contrast(text, ground) >= 7.0
        assert contrast(palette.color(QPalette.ColorRole.PlaceholderText), ground) >= 3.0
    finally:
        QGuiApplication.setPalette(light)
