"""An approval answered from where the keyboard is, through the whole app (real widgets, a
real kernel worker, the fake model): the request is a card in the conversation; Esc never
stops a run while it waits (it keeps waiting, as the card's hint says), wherever the focus
is; the allow chord the hint names works from the prompt, after the half-second guard, and
no chord typed by habit while writing (Ctrl+Enter, Ctrl+Shift+Enter) answers; a chord held
on answers one card, the next being a new question; a call stopped while it was asked is
never offered again after a restart, and an answer to it is refused in words instead of
dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QToolTip, QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.deliberate import ALLOW_ONCE_KEYS
from desktop.chat.model import MessageItem, Role
from desktop.controller import ESC_WHILE_ASKED, AppController
from kernel import protocol as p
from kernel.agent.store import SessionStore
from kernel.events import ApprovalDecision, ApprovalRequest, ToolResultEvent
from kernel.fakemodel import Failure, FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import (
    ARMED_WAIT_MS,
    approval_card,
    running_app,
    shown_card,
    wait_armed,
)
from tests.desktop.test_app_approvals_e2e import new_session, stored
from tests.desktop.test_app_e2e import running, type_prompt

WAIT_MS = 90_000
KEY = "sk-approval-keys-e2e"
pytestmark = pytest.mark.timeout(300)
CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as server:
        yield server
        server.release()


def start(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Any:
    return running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-keys", mode="ask")


def asked_to_write(qtbot: QtBot, app: AppController, fake: FakeAnthropicServer,
                   workspace: Path) -> str:
    """A session in ask mode whose run waits for the approval of a write, the focus in the
    prompt (where the user typed the request)."""
    sid = new_session(qtbot, app, workspace, "ask")
    w = app.window
    w.activateWindow()
    w.prompt.edit.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.prompt.edit, timeout=WAIT_MS)
    fake.add(reply("Writing it.", ToolUse("write_file", {"path": "notes.txt",
                                                         "content": "hi"}, id="call_w")),
             reply("Done."))
    type_prompt(qtbot, app, "Please write a notes file")
    approval_card(qtbot, app, timeout=WAIT_MS)
    assert QApplication.focusWidget() is w.prompt.edit
    assert not app.approvals.dialog.isVisible(), "in front, the card asks, not a dialog"
    return sid


def press(qtbot: QtBot, key: Qt.Key, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
          ) -> None:
    """A key pressed where the keyboard focus is, as a person presses it."""
    target = QApplication.focusWidget()
    assert isinstance(target, QWidget)
    qtbot.keyClick(target, key, modifiers)


def allow_chord(qtbot: QtBot) -> None:
    sequence = ALLOW_ONCE_KEYS.split("+")
    assert sequence == ["Ctrl", "Shift", "Y"]
    press(qtbot, Qt.Key.Key_Y, CTRL | SHIFT)


def test_esc_while_an_approval_waits_decides_later_and_never_stops_the_run(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with start(qtbot, reins_home, fake) as app:
        sid = asked_to_write(qtbot, app, fake, workspace)
        w, card = app.window, shown_card(app)
        assert "Esc keeps it waiting" in card.keys_hint.text()
        press(qtbot, Qt.Key.Key_Escape)  # in the prompt, where the focus stayed
        qtbot.waitUntil(lambda: QToolTip.text() == ESC_WHILE_ASKED, timeout=WAIT_MS)
        assert shown_card(app) is card, "the request is still there to answer"
        assert w.approvals_button.isVisible()
        # Esc again, in the prompt, the card's message and wherever else the focus may be.
        for widget in (w.prompt.edit, card.deny_message, w.chat, w.sessions):
            widget.setFocus()
            qtbot.waitUntil(lambda widget=widget: QApplication.focusWidget() is not None,
                            timeout=WAIT_MS)
            press(qtbot, Qt.Key.Key_Escape)
        qtbot.wait(1_000)  # what a stop would have done had time to arrive
        assert running(app) and len(app.approvals) == 1
        assert stored(app, ApprovalDecision) == [] and stored(app, ToolResultEvent) == []
        # The same request is there to decide.
        qtbot.mouseClick(w.approvals_button, Qt.MouseButton.LeftButton)
        assert shown_card(app) is card and card.request.call_id == "call_w"
        wait_armed(qtbot, card, card.allow_once)
        qtbot.mouseClick(card.allow_once, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert (workspace / "notes.txt").read_text() == "hi"
        assert app.current == sid


def test_the_allow_chord_works_from_the_prompt_and_no_chord_typed_by_habit_answers(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with start(qtbot, reins_home, fake) as app:
        asked_to_write(qtbot, app, fake, workspace)
        w, dialog = app.window, shown_card(app)
        assert dialog.keys_hint.text().startswith(f"{ALLOW_ONCE_KEYS}: allow once")
        assert ALLOW_ONCE_KEYS in dialog.allow_once.toolTip()
        # The chord at once, before the half-second guard is over: it answers nothing.
        dialog.arming.delay_ms = 5_000  # (a loaded machine must not arm it early)
        dialog.arming.start()
        allow_chord(qtbot)
        assert len(app.approvals) == 1 and stored(app, ApprovalDecision) == []
        dialog.arming.delay_ms = 500
        dialog.arming.refresh()
        wait_armed(qtbot, dialog, dialog.allow_once)
        # Chords people send with, and the keys of writing, go on answering nothing.
        qtbot.keyClicks(w.prompt.edit, "next question ")
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            for modifiers in (CTRL, CTRL | SHIFT, SHIFT):
                press(qtbot, key, modifiers)
        press(qtbot, Qt.Key.Key_Y, CTRL)
        press(qtbot, Qt.Key.Key_Space)
        qtbot.wait(300)
        assert len(app.approvals) == 1 and stored(app, ApprovalDecision) == []
        assert not (workspace / "notes.txt").exists()
        # The chord the hint names, from the prompt where the focus is: allowed once.
        assert QApplication.focusWidget() is w.prompt.edit
        allow_chord(qtbot)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert (workspace / "notes.txt").read_text() == "hi"
        [decision] = stored(app, ApprovalDecision)
        assert (decision.call_id, decision.decision) == ("call_w", "allow_once")
        assert w.prompt.edit.toPlainText().startswith("next question")
        assert QApplication.focusWidget() is w.prompt.edit


def test_the_chord_pressed_on_answers_one_request_only(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    """The next request is a new question: the chord pressed again and again (within its
    half-second guard) does not answer it too."""
    with start(qtbot, reins_home, fake) as app:
        new_session(qtbot, app, workspace, "ask")
        fake.add(reply(ToolUse("write_file", {"path": "a.txt", "content": "A"}, id="c_a"),
                       ToolUse("write_file", {"path": "b.txt", "content": "B"}, id="c_b")),
                 reply("Done."))
        w = app.window
        w.prompt.edit.setFocus()
        type_prompt(qtbot, app, "write two files")
        first = approval_card(qtbot, app, "c_a", timeout=WAIT_MS)
        wait_armed(qtbot, first, first.allow_once)

        presses_in_guard = 0
        for _ in range(2_000):  # pressed on until the second request is shown, and on
            second = shown_card(app, "c_b")
            if second is not None and second.armed:
                break
            presses_in_guard += second is not None
            qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Y, CTRL | SHIFT)
            qtbot.wait(20)
        assert presses_in_guard >= 2, "the second request came after the presses"
        assert [d.call_id for d in stored(app, ApprovalDecision)] == ["c_a"]
        assert shown_card(app) is second and not (workspace / "b.txt").exists()


def test_a_call_stopped_while_asked_is_never_offered_again_and_an_answer_to_it_is_refused(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with start(qtbot, reins_home, fake) as app:
        sid = asked_to_write(qtbot, app, fake, workspace)
        w = app.window
        qtbot.mouseClick(w.prompt.stop_button, Qt.MouseButton.LeftButton)  # a deliberate stop
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert not app.approvals.dialog.isVisible() and len(app.approvals) == 0
        assert shown_card(app) is None
    with SessionStore(reins_home.database) as store:
        events = [e for _, e in store.events(sid)]
    assert [e.call_id for e in events if isinstance(e, ApprovalRequest)] == ["call_w"]
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.status == "stopped"

    for _ in range(2):  # on every start, not only the first
        with start(qtbot, reins_home, fake) as app:
            qtbot.waitUntil(lambda app=app: app.current == sid
                            and app.views[sid].chat.rowCount() > 0, timeout=WAIT_MS)
            qtbot.wait(1_000)  # the pending requests are queued as the session loads
            assert len(app.approvals) == 0 and not app.approvals.dialog.isVisible()
            assert shown_card(app) is None
            assert not app.window.approvals_button.isVisible()
            # An answer that arrives anyway (a stale window) is said to be unused, not lost.
            app.client.send(p.ApprovalAnswer(sid, "call_w", "allow_once"))
            chat = app.views[sid].chat
            qtbot.waitUntil(lambda chat=chat: any(
                isinstance(i, MessageItem) and i.role is Role.ERROR
                and "no longer waits" in i.text for i in chat.items()),
                timeout=ARMED_WAIT_MS)
            qtbot.wait(500)
            assert not running(app)
    assert not (workspace / "notes.txt").exists()
    with SessionStore(reins_home.database) as store:
        assert not [e for _, e in store.events(sid) if isinstance(e, ApprovalDecision)]


def test_a_message_after_a_failed_turn_is_sent_as_its_own_turn(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    """After a 529 the person writes on instead of pressing Retry: the model gets the failed
    message and the new one as two turns, never as one merged message."""
    with start(qtbot, reins_home, fake) as app:
        sid = new_session(qtbot, app, workspace, "ask")
        fake.add(Failure(529), Failure(529), Failure(529))
        type_prompt(qtbot, app, "write the report")
        w = app.window
        qtbot.waitUntil(lambda: not running(app) and w.banner.isVisible(), timeout=WAIT_MS)
        assert "Retry" in w.banner.button.text()
        fake.add(reply("Here is the summary."))
        type_prompt(qtbot, app, "just summarize instead")
        qtbot.waitUntil(lambda: any(isinstance(i, MessageItem) and i.text == "Here is the summary."
                                    for i in app.views[sid].chat.items()), timeout=WAIT_MS)
        messages = fake.requests[-1].body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert [b.get("text") for b in messages[0]["content"]] == ["write the report"]
        assert [b.get("text") for b in messages[2]["content"]] == ["just summarize instead"]
