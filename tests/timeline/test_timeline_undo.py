"""Undo in the timeline, with real widgets (offscreen): a call's change set shows in its
details (summary, each change) with Show diff, Undo this call and Rewind to here, which send
the call's id; Ctrl+Z on the row undoes; the kernel's step list marks a row undone and takes
the action away; a blocked undo says each path and why; a malformed change set is said,
never raised."""

from __future__ import annotations

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.timeline.model import Column
from desktop.timeline.panel import TimelinePanel
from desktop.timeline.record import advance
from kernel import protocol as p
from kernel.events import ToolCallStarted, ToolResultEvent

CHANGES = [{"path": "a.txt", "kind": "modified", "entry": "file", "added": 3, "removed": 1},
           {"path": "new/b.txt", "kind": "created", "entry": "file", "added": 7},
           {"path": "old.txt", "kind": "deleted", "entry": "file", "removed": 2}]


def panel_with_calls(qtbot: QtBot, *calls: tuple[str, list[dict[str, object]]]) -> TimelinePanel:
    panel = TimelinePanel(batch_ms=1)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    for call_id, changes in calls:
        panel.apply(ToolCallStarted("s1", call_id=call_id, name="run_command",
                                    input={"command": "make"}))
        panel.apply(ToolResultEvent("s1", call_id=call_id, name="run_command", is_error=False,
                                    preview="done", changes=changes))
    panel.model.flush()
    return panel


def press_undo(qtbot: QtBot, panel: TimelinePanel, call_id: str) -> None:
    """Click the call's row (the table gets the focus), then Ctrl+Z."""
    row = panel.model.row_of(call_id)
    assert row is not None
    index = panel.proxy.mapFromSource(panel.model.index(row, Column.TOOL))
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=panel.view.visualRect(index).center())
    qtbot.keyClick(panel.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)


def test_the_details_show_the_changes_and_the_actions_send_the_call(qtbot: QtBot) -> None:
    panel = panel_with_calls(qtbot, ("c1", CHANGES), ("c2", []))
    sent: list[tuple[str, str]] = []
    panel.undo_requested.connect(lambda c: sent.append(("undo", c)))
    panel.rewind_requested.connect(lambda c: sent.append(("rewind", c)))
    panel.diff_requested.connect(lambda c: sent.append(("diff", c)))
    panel.select_call("c1")
    details = panel.details
    assert details.changes_box.isVisible()
    assert details.changes_summary.text() == "Changed: 2 files changed, +10 \u22123, 1 deleted"
    listed = details.changes_list.toPlainText().splitlines()
    assert [line.split()[:2] for line in listed] == [
        ["modified", "a.txt"], ["created", "new/b.txt"], ["deleted", "old.txt"]]
    assert "+3 \u22121" in listed[0]
    for button in (details.diff_button, details.undo_button, details.rewind_button):
        assert button.isVisible() and button.isEnabled()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert sent == [("diff", "c1"), ("undo", "c1"), ("rewind", "c1")]

    panel.show_diff("c1", "--- a/a.txt\n+++ b/a.txt\n-x\n+y")
    assert details.diff.isVisible() and "+y" in details.diff.toPlainText()

    press_undo(qtbot, panel, "c1")
    assert sent[-1] == ("undo", "c1")

    panel.select_call("c2")  # changed nothing: no changes, no actions
    assert not details.changes_box.isVisible()


def test_an_undone_row_says_so_and_offers_no_undo(qtbot: QtBot) -> None:
    panel = panel_with_calls(qtbot, ("c1", CHANGES), ("c2", CHANGES[:1]))
    panel.select_call("c1")
    panel.set_steps((p.StepInfo("c1", undone=True, undoable=False), p.StepInfo("c2"),
                     p.StepInfo("c1", undone=False, undoable=False, undoes="c1")))
    row = panel.model.row_of("c1")
    assert row is not None
    assert panel.model.index(row, Column.STATUS).data().endswith("· undone")
    details = panel.details
    assert not details.undo_button.isVisible()
    assert details.changes_summary.text().endswith("— undone")
    sent: list[str] = []
    panel.undo_requested.connect(sent.append)
    press_undo(qtbot, panel, "c1")
    assert sent == []
    other = panel.model.row_of("c2")
    assert other is not None and "undone" not in panel.model.index(other, 0).data()


def test_a_blocked_undo_says_which_files_and_why(qtbot: QtBot) -> None:
    panel = panel_with_calls(qtbot, ("c1", CHANGES))
    panel.select_call("c1")
    panel.show_undo_outcome(p.UndoOutcome(
        "s1", "c1", "undo", blocked=(p.BlockedPath("a.txt", "changed by call c2", "c2"),
                                     p.BlockedPath("old.txt", "changed outside Reins")),
        stopped_at="c1"))
    note = panel.details.undo_note
    assert note.isVisible()
    assert note.text().splitlines() == [
        "Call c1 was not undone; nothing of it was changed. These files are not what it left:",
        "  a.txt: changed by call c2",
        "  old.txt: changed outside Reins"]
    assert panel.details.undo_button.isVisible(), "still undoable once the files are back"


def test_a_malformed_change_set_is_said_not_raised(qtbot: QtBot) -> None:
    for bad in ([{"path": "../x", "kind": "created", "entry": "file"}],
                [{"path": "a", "kind": "exploded", "entry": "file"}],
                [{"path": "a", "kind": "created", "entry": "file", "added": -1}],
                ["not a change"]):
        record = advance(None, ToolCallStarted("s1", call_id="c", name="run_command",
                                               input={}), 0.0)
        done = advance(record, ToolResultEvent("s1", call_id="c", name="run_command",
                                               is_error=False, changes=bad), 1.0)
        assert done is not None and not done.changes and not done.undoable
        assert done.changes_error.startswith("the change set could not be read")
    panel = panel_with_calls(qtbot, ("c9", [{"path": "/etc/passwd", "kind": "created",
                                             "entry": "file"}]))
    panel.select_call("c9")
    assert "could not be read" in panel.details.changes_summary.text()
    assert not panel.details.undo_button.isVisible()
