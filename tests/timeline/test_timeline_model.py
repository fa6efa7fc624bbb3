"""A 10,000-row timeline model with live updates: rows correct, only changed rows signalled."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt
from pytestqt.qtbot import QtBot

from desktop.timeline.model import EXTERNALIZED_MARKER, Column, TimelineModel
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)

S = "s1"
N = 10_000


def cid(i: int) -> str:
    return f"call_{i:05d}"


def text(model: TimelineModel, row: int, column: Column) -> str:
    return str(model.data(model.index(row, column), Qt.ItemDataRole.DisplayRole))


class Spy:
    """Records (first row, last row, first column, last column) of every dataChanged."""

    def __init__(self, model: TimelineModel) -> None:
        self.changed: list[tuple[int, int, int, int]] = []
        self.inserted: list[tuple[int, int]] = []
        model.dataChanged.connect(self._changed)
        model.rowsInserted.connect(lambda _p, a, b: self.inserted.append((a, b)))

    def _changed(self, top: QModelIndex, bottom: QModelIndex, _roles: object = None) -> None:
        self.changed.append((top.row(), bottom.row(), top.column(), bottom.column()))


def test_ten_thousand_rows_batched_then_live_updates_touch_only_changed_rows(
    qtbot: QtBot,
) -> None:
    model = TimelineModel(batch_ms=60)
    spy = Spy(model)
    model.apply_many(
        ToolCallStarted(S, cid(i), f"tool{i % 7}", {"i": i}, summary=f"arg {i}")
        for i in range(N)
    )
    assert model.rowCount() == 0  # inserts wait for the batch tick
    qtbot.waitUntil(lambda: model.rowCount() == N, timeout=5000)
    assert spy.inserted == [(0, N - 1)]  # one insert for the whole burst
    assert spy.changed == []
    assert [text(model, r, Column.ARGUMENTS) for r in (0, 4321, N - 1)] == [
        "arg 0", "arg 4321", f"arg {N - 1}"]
    assert text(model, 17, Column.STATUS) == "queued"

    # Live updates on a few rows; two are neighbours and share one signal.
    model.apply(ToolProgress(S, cid(5), bytes_so_far=3000, last_line="x", elapsed_s=2.0))
    model.apply(ApprovalRequest(S, cid(9000), "tool5", {}, "execute", "ask mode"))
    model.apply(ToolResultEvent(S, cid(9001), "tool6", True, "timeout", 120000.0, 12, None, "t"))
    model.apply(ToolCallStarted(S, "late_call", "bash", {"cmd": "true"}))
    qtbot.waitUntil(lambda: model.rowCount() == N + 1, timeout=5000)
    status_changes = [c for c in spy.changed if c[2] == Column.STATUS]
    assert sorted(status_changes) == [
        (5, 5, Column.STATUS, Column.ACTION),
        (9000, 9001, Column.STATUS, Column.ACTION),
    ]
    # Anything else signalled is only the elapsed-time tick of the running row.
    assert all(c == (5, 5, Column.DURATION, Column.DURATION)
               for c in spy.changed if c[2] != Column.STATUS)
    assert spy.inserted[-1] == (N, N)
    assert text(model, 5, Column.STATUS) == "running"
    assert text(model, 5, Column.OUTPUT) == "2.9 KB"
    assert text(model, 5, Column.ACTION) == "■ Stop"
    assert text(model, 9000, Column.STATUS) == "awaiting approval"
    assert text(model, 9001, Column.STATUS) == "timed out"
    assert text(model, 9001, Column.DURATION) == "2 min 00 s"
    assert text(model, N, Column.TOOL) == "bash"
    assert text(model, 4, Column.STATUS) == "queued"

    # A burst of updates to one row is folded into one signal per tick.
    spy.changed.clear()
    for k in range(200):
        model.apply(ToolProgress(S, cid(7), bytes_so_far=k * 100, elapsed_s=k / 10))
    model.flush()
    assert [c for c in spy.changed if c[2] == Column.STATUS] == [
        (7, 7, Column.STATUS, Column.ACTION)]
    assert text(model, 7, Column.OUTPUT) == format_kb(199 * 100)


def format_kb(n: int) -> str:
    return f"{n / 1024:.1f} KB"


def test_running_rows_tick_only_their_duration_cell(qtbot: QtBot) -> None:
    now = [1000.0]
    model = TimelineModel(batch_ms=10, clock=lambda: now[0])
    spy = Spy(model)
    for i in range(5):
        model.apply(ToolCallStarted(S, cid(i), "bash", {}, at=now[0]))
    model.apply(ApprovalDecision(S, cid(1), "allow_once", "mode", at=now[0]))
    model.apply(ApprovalDecision(S, cid(3), "allow_once", "mode", at=now[0]))
    model.flush()
    spy.changed.clear()
    now[0] += 7.5
    qtbot.waitUntil(lambda: len(spy.changed) >= 2, timeout=3000)
    assert set(spy.changed[:2]) == {(1, 1, Column.DURATION, Column.DURATION),
                                    (3, 3, Column.DURATION, Column.DURATION)}
    assert text(model, 1, Column.DURATION) == "7.5 s"
    assert text(model, 0, Column.DURATION) == ""


def test_externalized_marker_approval_column_and_plain_text_cells(qtbot: QtBot) -> None:
    model = TimelineModel()
    model.apply(ToolCallStarted(S, "a", "bash", {"cmd": "<b>bold</b>"},
                                summary="<b>bold</b> <img src=x>"))
    model.apply(ApprovalDecision(S, "a", "allow", "policy", "call",
                                 "rule allow run_command(make *)"))
    model.apply(ToolResultEvent(S, "a", "bash", False, None, 1500.0, 5 * 1024 * 1024,
                                "/tmp/out/a.txt", "head…tail"))
    model.flush()
    assert text(model, 0, Column.ARGUMENTS) == "<b>bold</b> <img src=x>"
    tip = model.data(model.index(0, Column.ARGUMENTS), Qt.ItemDataRole.ToolTipRole)
    assert "&lt;b&gt;" in str(tip) and "<b>" not in str(tip).replace("<pre>", "")
    assert text(model, 0, Column.OUTPUT) == f"5.0 MB {EXTERNALIZED_MARKER}"
    assert text(model, 0, Column.APPROVAL) == "allowed by rule run_command(make *)"
    assert text(model, 0, Column.ACTION) == "Open output"
    assert text(model, 0, Column.DURATION) == "1.5 s"
    assert model.record("a").status == "ok"  # type: ignore[union-attr]
    assert model.tool_names() == ["bash"]
    model.clear()
    assert model.rowCount() == 0 and model.tool_names() == []


def test_progress_of_one_call_in_one_batch_is_one_row_update_with_the_latest_values(
    qtbot: QtBot,
) -> None:
    model = TimelineModel(batch_ms=60_000)  # flushed by hand: exactly one batch
    spy = Spy(model)
    model.apply_many([ToolCallStarted(S, cid(i), "bash", {"i": i}) for i in range(3)])
    model.flush()
    spy.changed.clear()
    model.apply_many(ToolProgress(S, cid(1), 100 * k, f"line {k}", k / 10)
                     for k in range(1, 201))
    model.flush()
    assert spy.changed == [(1, 1, Column.STATUS, Column.ACTION)]
    record = model.record(cid(1))
    assert record is not None
    assert (record.bytes_so_far, record.last_line) == (20_000, "line 200")
    assert text(model, 1, Column.OUTPUT) == "19.5 KB"
    assert text(model, 1, Column.STATUS) == "running"
    assert text(model, 0, Column.STATUS) == text(model, 2, Column.STATUS) == "queued"
