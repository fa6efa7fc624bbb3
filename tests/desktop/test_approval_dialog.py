"""The approval dialog: what it shows, its four answers, the destructive confirmation, the
queue with a count, that closing it postpones instead of denying, and that no keystroke or
early click answers it (it takes no focus, no allow is a default, answers wait a moment)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.deliberate import ARM_DELAY_MS
from desktop.approval.dialog import ApprovalDialog, ApprovalQueue
from kernel.events import HELD_RULE, ApprovalRequest
from kernel.protocol import ApprovalAnswer
from tests.desktop.conftest import click_answer, typing_window, wait_armed

CTRL = Qt.KeyboardModifier.ControlModifier
DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new"


def request(call_id: str, risk: str = "write", **kw: object) -> ApprovalRequest:
    base = dict(session_id="s1", call_id=call_id, name="write_file",
                input={"path": "x.py", "content": "new"}, risk=risk,
                reason="writes ask in ask mode", preview=DIFF,
                rule="mode ask",
                always_rules=[{"rule": "write_file(x.py)",
                               "words": "write_file: paths matching x.py in the workspace"}])
    base.update(kw)
    return ApprovalRequest(**base)  # type: ignore[arg-type]


def make_queue(qtbot: QtBot) -> tuple[QWidget, ApprovalQueue]:
    window = QWidget()
    qtbot.addWidget(window)
    queue = ApprovalQueue(window, session_title=lambda s: f"Title of {s}")
    return window, queue


def armed(qtbot: QtBot, dialog: ApprovalDialog) -> None:
    wait_armed(qtbot, dialog, dialog.deny)


def test_shows_tool_risk_reason_preview_and_rule(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1"))
    dialog = queue.dialog
    assert dialog.isVisible() and not dialog.isModal()
    assert dialog.tool_label.text() == "write_file"
    assert "WRITE" in dialog.risk_badge.text()
    assert dialog.reason_label.text() == "Why you are asked: writes ask in ask mode."
    assert dialog.reason_label.toolTip() == "Rule: mode ask"
    assert dialog.preview.toPlainText() == DIFF
    assert dialog.always_rule.text() == ("Always allow saves to settings: write_file(x.py) — "
                                         "paths matching x.py in the workspace")
    assert dialog.session_label.text() == "Session: Title of s1"


def test_command_preview_falls_back_to_exact_arguments(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", "execute", name="run_command", input={"command": "ls -la"},
                         preview=""))
    assert '"command": "ls -la"' in queue.dialog.preview.toPlainText()


def test_each_answer_resolves_its_future_in_order(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    futures = [queue.submit(request(f"c{i}")) for i in range(4)]
    dialog = queue.dialog
    assert dialog.count_label.text() == "1 of 4 pending"
    answers: list[ApprovalAnswer] = []
    queue.answered.connect(answers.append)
    click_answer(qtbot, dialog, dialog.allow_once)
    assert dialog.count_label.text() == "1 of 3 pending"
    click_answer(qtbot, dialog, dialog.allow_session)
    click_answer(qtbot, dialog, dialog.allow_always)
    qtbot.keyClicks(dialog.deny_message, "use the other file")
    click_answer(qtbot, dialog, dialog.deny)
    assert [f.result(0).decision for f in futures] == [
        "allow_once", "allow_session", "allow_always", "deny"]
    assert futures[3].result(0).message == "use the other file"
    assert [a.call_id for a in answers] == ["c0", "c1", "c2", "c3"]
    assert not dialog.isVisible() and len(queue) == 0


def test_keyboard_operable_by_chords_only(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    future = queue.submit(request("c1"))
    dialog = queue.dialog
    armed(qtbot, dialog)
    for key in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Select):
        for button in (dialog.allow_once, dialog.allow_session, dialog.allow_always):
            qtbot.keyClick(button, key)
    assert not future.done()
    qtbot.keyClick(dialog.preview, Qt.Key.Key_Space)
    assert not future.done()
    # The chord works once the request has been shown long enough; Ctrl+Enter (it sends in
    # many apps) and Ctrl+Shift+Enter (one slip from it) answer nothing.
    queue.show_current(activate=True)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dialog)
    for modifiers in (CTRL, CTRL | Qt.KeyboardModifier.ShiftModifier):
        qtbot.keyClick(dialog, Qt.Key.Key_Return, modifiers)
    assert not future.done()
    qtbot.keyClick(dialog, Qt.Key.Key_Y, CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert future.result(0).decision == "allow_once"
    _, queue = make_queue(qtbot)
    dialog = queue.dialog
    future = queue.submit(request("c3"))
    armed(qtbot, dialog)
    qtbot.keyClicks(dialog.deny_message, "no")
    qtbot.keyClick(dialog.deny_message, Qt.Key.Key_Return)
    assert future.result(0) == ApprovalAnswer("s1", "c3", "deny", "no", False)


def test_no_allow_button_is_a_default_or_takes_the_focus(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1"))
    dialog = queue.dialog
    armed(qtbot, dialog)
    for button in (dialog.allow_once, dialog.allow_session, dialog.allow_always):
        button.setDefault(True)
        assert not button.isDefault() and not button.autoDefault()
        assert button.focusPolicy() == Qt.FocusPolicy.NoFocus
    assert dialog.deny.isDefault()
    assert dialog.focusWidget() not in (dialog.allow_once, dialog.allow_session,
                                        dialog.allow_always)


def test_answers_wait_a_moment_after_each_request_appears(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    first = queue.submit(request("c1"))
    second = queue.submit(request("c2"))
    dialog = queue.dialog
    assert 400 <= ARM_DELAY_MS <= 600 and dialog.arming.delay_ms == ARM_DELAY_MS
    dialog.arming.delay_ms = 5_000  # (a loaded test machine must not make it armed early)
    for button in (dialog.allow_once, dialog.allow_session, dialog.allow_always, dialog.deny):
        assert not button.isEnabled()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        button.click()
    qtbot.keyClick(dialog, Qt.Key.Key_Y, CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert not first.done()
    qtbot.wait(ARM_DELAY_MS)
    assert not dialog.armed and not dialog.allow_once.isEnabled()
    dialog.arming.delay_ms = ARM_DELAY_MS
    dialog.arming.refresh()
    armed(qtbot, dialog)
    assert dialog.allow_once.isEnabled()
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
    assert first.result(0).decision == "allow_once"
    # The next request is a new question: its buttons are inert again.
    assert dialog.request is not None and dialog.request.call_id == "c2"
    dialog.arming.delay_ms = 5_000
    assert not dialog.allow_once.isEnabled()
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
    assert not second.done()


def test_shown_without_taking_the_focus_from_what_the_user_types_in(qtbot: QtBot) -> None:
    window, edit = typing_window(qtbot)
    queue = ApprovalQueue(window)
    future = queue.submit(request("c1"))
    assert queue.dialog.isVisible()
    for _ in range(3):
        qtbot.keyClicks(QApplication.focusWidget(), "go on ")
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
        qtbot.wait(ARM_DELAY_MS // 2)
    assert QApplication.focusWidget() is edit and edit.text() == "go on " * 3
    assert not future.done() and len(queue) == 1
    queue.show_current(activate=True)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is queue.dialog)


def test_destructive_needs_a_second_confirmation_and_no_always(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    future = queue.submit(request("c1", "destructive", name="run_command",
                                  input={"command": "rm -rf build"}))
    dialog = queue.dialog
    assert not dialog.allow_always.isVisibleTo(dialog)
    assert not dialog.allow_once.isEnabled()
    armed(qtbot, dialog)
    assert not dialog.allow_once.isEnabled()
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
    qtbot.keyClick(dialog, Qt.Key.Key_Y, CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert not future.done()
    dialog.confirm_box.setChecked(True)
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
    assert future.result(0) == ApprovalAnswer("s1", "c1", "allow_once", "", True)


def test_closing_postpones_and_reopens_the_same_request(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    future = queue.submit(request("c1"))
    with qtbot.waitSignal(queue.dialog.postponed):
        qtbot.keyClick(queue.dialog, Qt.Key.Key_Escape)
    assert not queue.dialog.isVisible() and not future.done() and len(queue) == 1
    queue.show_current()
    assert queue.dialog.isVisible() and queue.dialog.tool_label.text() == "write_file"


def test_duplicates_are_merged_and_discard_cancels(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    first = queue.submit(request("c1"))
    assert queue.submit(request("c1")) is first
    other = queue.submit(request("c2", session_id="s2"))
    queue.discard("s1")
    assert first.cancelled() and not other.done() and len(queue) == 1
    assert queue.dialog.request is not None and queue.dialog.request.call_id == "c2"


def test_always_rule_comes_from_the_request_field_not_the_preview(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", preview="always allow would save: run_command(rm -rf /)",
                         always_rules=[{"rule": "write_file(a.py)", "words": "a in workspace"},
                                       {"rule": "write_file(b.py)", "words": "b in workspace"}]))
    dialog = queue.dialog
    assert dialog.allow_always.isVisibleTo(dialog)
    assert dialog.always_rule.text() == ("Always allow saves to settings: write_file(a.py) — "
                                         "a in workspace; write_file(b.py) — b in workspace")
    assert "rm -rf" not in dialog.always_rule.text()


def test_no_always_rules_hides_always_allow(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", always_rules=[]))
    dialog = queue.dialog
    assert not dialog.allow_always.isVisibleTo(dialog)
    assert not dialog.always_rule.isVisibleTo(dialog)


def test_the_risk_badge_colour_follows_the_risk(qtbot: QtBot) -> None:
    """Only a destructive call is a saturated red; an ordinary command is a calm amber, a
    read calm; each badge's white text is legible (WCAG AA, 4.5:1) on a light or a dark
    window, since its background is its own."""
    from PySide6.QtGui import QColor

    from desktop.approval.dialog import RISK_COLOURS

    def luminance(colour: QColor) -> float:
        def channel(c: float) -> float:
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
        return (0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF())
                + 0.0722 * channel(colour.blueF()))

    colours = {risk: QColor(RISK_COLOURS[risk])
               for risk in ("read", "write", "execute", "destructive")}
    for risk, colour in colours.items():
        assert 1.05 / (luminance(colour) + 0.05) >= 4.5, risk
    red = colours["destructive"]
    assert red.hue() < 15 or red.hue() > 345
    assert all(red.saturationF() > c.saturationF()
               for r, c in colours.items() if r != "destructive")
    for risk in ("read", "write", "execute"):
        assert 20 <= colours[risk].hue() <= 300, f"{risk} must not be red"
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", "execute", name="run_command", input={"command": "date"},
                         preview="date"))
    assert RISK_COLOURS["execute"] in queue.dialog.risk_badge.styleSheet()
    assert "color: white" in queue.dialog.risk_badge.styleSheet()


def test_held_changes_are_kept_or_discarded_not_allowed_for_a_session(qtbot: QtBot) -> None:
    """A request about a call's held changes (kernel.transaction) says keep or discard; the
    next ordinary request says allow or deny again."""
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", "execute", name="run_command", rule=HELD_RULE,
                         can_always=False, always_rules=[]))
    dialog = queue.dialog
    assert dialog.allow_once.text() == "Keep these changes"
    assert dialog.deny.text() == "&Discard them"
    assert not dialog.allow_session.isVisibleTo(dialog)
    assert not dialog.allow_always.isVisibleTo(dialog)
    assert dialog.windowTitle().startswith("Keep these changes?")
    assert "keep them" in dialog.keys_hint.text()
    click_answer(qtbot, dialog, dialog.allow_once)
    queue.submit(request("c2"))
    assert dialog.allow_once.text() == "Allow once" and dialog.deny.text() == "&Deny"
    assert dialog.allow_session.isVisibleTo(dialog)
    assert "allow once" in dialog.keys_hint.text()


def test_run_and_review_is_a_button_only_where_the_request_offers_it(qtbot: QtBot) -> None:
    """The dialog shows the answers the request carries: Run and review is a button (armed
    like the others) when offered, and its answer is `allow_review`; a cut diff has a
    button that opens the whole of it."""
    _, queue = make_queue(qtbot)
    answers: list[ApprovalAnswer] = []
    queue.answered.connect(answers.append)
    queue.submit(request("c1", "execute", name="run_command", input={"command": "make"},
                         always_rules=[],
                         choices=["allow_once", "allow_session", "allow_review", "deny"]))
    dialog = queue.dialog
    assert dialog.run_review.isVisibleTo(dialog) and dialog.run_review.text() == \
        "Run and review"
    assert not dialog.allow_always.isVisibleTo(dialog)
    assert not dialog.full_diff.isVisibleTo(dialog)
    click_answer(qtbot, dialog, dialog.run_review)
    assert [a.decision for a in answers] == ["allow_review"]

    queue.submit(request("c2", "execute", name="run_command", input={"command": "curl x"},
                         choices=["allow_once", "allow_session", "deny"]))
    assert not dialog.run_review.isVisibleTo(dialog)
    click_answer(qtbot, dialog, dialog.deny)
    assert [a.decision for a in answers] == ["allow_review", "deny"]


def test_a_cut_diff_opens_whole_in_the_viewer(qtbot: QtBot, tmp_path: Path) -> None:
    full = tmp_path / "c1.diff.txt"
    full.write_text("Every changed path (1: 1 held):\n" + "+line\n" * 5000)
    _, queue = make_queue(qtbot)
    queue.submit(request("c1", "execute", name="run_command", rule=HELD_RULE,
                         can_always=False, always_rules=[], full_preview=str(full),
                         choices=["allow_once", "deny"]))
    dialog = queue.dialog
    assert dialog.full_diff.isVisibleTo(dialog) and not dialog.run_review.isVisibleTo(dialog)
    qtbot.mouseClick(dialog.full_diff, Qt.MouseButton.LeftButton)
    viewers = [w for w in QApplication.topLevelWidgets()
               if type(w).__name__ == "OutputViewer" and w.isVisible()]
    assert [v.path_label.text() for v in viewers] == [str(full)]  # type: ignore[attr-defined]
    for viewer in viewers:
        viewer.close()
