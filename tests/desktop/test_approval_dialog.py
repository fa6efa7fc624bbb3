"""The approval dialog: what it shows, its four answers, the destructive confirmation, the
queue with a count, and that closing it postpones instead of denying."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.dialog import ApprovalQueue
from kernel.events import ApprovalRequest
from kernel.protocol import ApprovalAnswer

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


def test_shows_tool_risk_reason_preview_and_rule(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    queue.submit(request("c1"))
    dialog = queue.dialog
    assert dialog.isVisible() and not dialog.isModal()
    assert dialog.tool_label.text() == "write_file"
    assert "WRITE" in dialog.risk_badge.text()
    assert dialog.reason_label.text() == (
        "Why you are asked: writes ask in ask mode (decided by mode ask)")
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
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
    assert dialog.count_label.text() == "1 of 3 pending"
    qtbot.mouseClick(dialog.allow_session, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(dialog.allow_always, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(dialog.deny_message, "use the other file")
    qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
    assert [f.result(0).decision for f in futures] == [
        "allow_once", "allow_session", "allow_always", "deny"]
    assert futures[3].result(0).message == "use the other file"
    assert [a.call_id for a in answers] == ["c0", "c1", "c2", "c3"]
    assert not dialog.isVisible() and len(queue) == 0


def test_keyboard_operable(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    future = queue.submit(request("c1"))
    dialog = queue.dialog
    qtbot.keyClick(dialog.allow_once, Qt.Key.Key_Space)
    assert future.result(0).decision == "allow_once"
    future = queue.submit(request("c2"))
    qtbot.keyClicks(dialog.deny_message, "no")
    qtbot.keyClick(dialog.deny_message, Qt.Key.Key_Return)
    assert future.result(0) == ApprovalAnswer("s1", "c2", "deny", "no", False)


def test_destructive_needs_a_second_confirmation_and_no_always(qtbot: QtBot) -> None:
    _, queue = make_queue(qtbot)
    future = queue.submit(request("c1", "destructive", name="run_command",
                                  input={"command": "rm -rf build"}))
    dialog = queue.dialog
    assert not dialog.allow_always.isVisibleTo(dialog)
    assert not dialog.allow_once.isEnabled()
    qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
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
