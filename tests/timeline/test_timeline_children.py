"""Steps of a composite call and a fallback as child rows: placed under their parent (also
when another call's row came in between), the Tool cell indented, each with its own result;
painted by the real view offscreen."""

from __future__ import annotations

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.timeline import TimelinePanel
from desktop.timeline.model import Column
from kernel.events import ApprovalDecision, ToolCallStarted, ToolResultEvent

S = "s1"


def _call(call_id: str, name: str, parent: str = "") -> ToolCallStarted:
    return ToolCallStarted(S, call_id, name, {"path": "a.txt"}, summary="a.txt",
                           parent_call_id=parent)


def _result(call_id: str, name: str, error: str | None = None, parent: str = "",
            preview: str = "ok") -> ToolResultEvent:
    return ToolResultEvent(S, call_id, name, error is not None, error, 2.0, 10, None, preview,
                           parent_call_id=parent)


def _rows(panel: TimelinePanel) -> list[tuple[str, str]]:
    model = panel.model
    return [(str(model.data(model.index(r, Column.TOOL))),
             str(model.data(model.index(r, Column.STATUS)))) for r in range(model.rowCount())]


def test_child_rows_sit_indented_under_their_parent(qtbot: QtBot) -> None:
    panel = TimelinePanel(batch_ms=20)
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    panel.apply_many([
        _call("c1", "write_and_run"),
        _call("c1-step1", "write_file", "c1"),
        _result("c1-step1", "write_file", parent="c1"),
        _call("other", "read_file"),
    ])
    qtbot.waitUntil(lambda: panel.model.rowCount() == 3, timeout=3000)
    panel.apply_many([
        _call("c1-step2", "run_command", "c1"),
        ApprovalDecision(S, "c1-step2", "allow_once", "composite", "once"),
        _result("c1-step2", "run_command", "timeout", parent="c1"),
        _call("c1-step2-fallback", "run_command_mirror", "c1-step2"),
        _result("c1-step2-fallback", "run_command_mirror", parent="c1-step2"),
        _result("c1", "write_and_run", preview="write_and_run: 2 of 2 steps ran"),
        _result("other", "read_file"),
    ])
    qtbot.waitUntil(lambda: panel.model.rowCount() == 5, timeout=3000)
    panel.model.flush()
    assert _rows(panel) == [
        ("write_and_run", "done"),
        ("  ↳ write_file", "done"),
        ("  ↳ run_command", "timed out"),
        ("      ↳ run_command_mirror", "done"),
        ("read_file", "done"),
    ]
    step = panel.model.record("c1-step2")
    assert step is not None and step.parent_call_id == "c1"
    assert step.status == "timeout" and step.approval.decided_by == "composite"
    image = panel.view.grab().toImage()
    assert not image.isNull() and image.width() > 0
    rect = panel.view.visualRect(panel.proxy.mapFromSource(
        panel.model.index(panel.model.row_of("c1-step2-fallback") or 0, Column.TOOL)))
    assert rect.isValid() and rect.top() > panel.view.visualRect(panel.proxy.mapFromSource(
        panel.model.index(panel.model.row_of("c1-step2") or 0, Column.TOOL))).top()


def test_a_reloaded_session_places_children_in_one_batch(qtbot: QtBot) -> None:
    panel = TimelinePanel(batch_ms=20)
    qtbot.addWidget(panel)
    panel.apply_many([
        _call("p", "copy"), _call("q", "grep"), _call("p-step1", "read_file", "p"),
        _call("q-fallback", "grep_mirror", "q"), _call("p-step2", "write_file", "p"),
    ])
    panel.model.flush()
    names = [panel.model.data(panel.model.index(r, Column.TOOL), Qt.ItemDataRole.DisplayRole)
             for r in range(panel.model.rowCount())]
    assert names == ["copy", "  ↳ read_file", "  ↳ write_file", "grep", "  ↳ grep_mirror"]
