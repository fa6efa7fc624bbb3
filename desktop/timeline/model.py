"""The timeline's table model: one row per tool call, fed by `kernel.events`.

    model = TimelineModel()
    model.apply(event)            # any Event; non-tool events are ignored
    model.apply_many(events)
    model.flush()                 # insert/signal now instead of at the next batch tick

Rows are never removed; one per call id, in the order calls were first seen, except that a
call Reins made for another (a step of a composite call, a fallback: `parent_call_id`) is
placed after its parent's earlier children, its Tool cell indented under it. New rows
are inserted in batches: events are folded into their records at once, and the rows they add
are inserted together every `batch_ms` (default 75 ms) with one beginInsertRows. Updates to
rows already shown emit `dataChanged` for exactly those rows (contiguous runs merged), at the
same tick; while any call runs, a 1 s tick signals only the Duration cell of running rows so
their elapsed time moves. Nothing repaints rows that did not change.

Every cell is plain text (`Qt.DisplayRole`), model and tool text escaped by
`kernel.visible` (one line each); `RECORD_ROLE` gives the row's `CallRecord`.
"""

from __future__ import annotations

import enum
import html
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from desktop.timeline.record import TOOL_EVENTS, CallRecord, advance, status_words
from desktop.words import format_bytes, format_duration
from kernel.events import Event
from kernel.visible import one_line

if TYPE_CHECKING:
    from kernel.protocol import StepInfo

RECORD_ROLE = int(Qt.ItemDataRole.UserRole) + 1
STATUS_ROLE = int(Qt.ItemDataRole.UserRole) + 2
CALL_ID_ROLE = int(Qt.ItemDataRole.UserRole) + 3

DEFAULT_BATCH_MS = 75
TICK_MS = 1000

Index = QModelIndex | QPersistentModelIndex


class Column(enum.IntEnum):
    STATUS = 0
    TOOL = 1
    ARGUMENTS = 2
    DURATION = 3
    OUTPUT = 4
    APPROVAL = 5
    ACTION = 6


HEADERS = {
    Column.STATUS: "Status",
    Column.TOOL: "Tool",
    Column.ARGUMENTS: "Arguments",
    Column.DURATION: "Duration",
    Column.OUTPUT: "Output",
    Column.APPROVAL: "Approved by",
    Column.ACTION: "",
}

_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_ACCESSIBLE = int(Qt.ItemDataRole.AccessibleTextRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_TEXT_ROLES = frozenset({_DISPLAY, _ACCESSIBLE})
_ROLES = frozenset({_DISPLAY, _ACCESSIBLE, _TOOLTIP, _ALIGNMENT, RECORD_ROLE, STATUS_ROLE,
                    CALL_ID_ROLE})
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_COLUMNS = tuple(Column)

EXTERNALIZED_MARKER = "⇱"
"""Shown after the size of an output kept on disk in full (open it in the viewer)."""


def duration_tip(record: CallRecord, now: float) -> str | None:
    """The Duration cell's tooltip: run time, and the wait for the approval on its own."""
    if record.started_at is None and record.duration_ms is None:
        return None
    ran = f"Ran for {format_duration(record.elapsed(now))}"
    if record.waited_s:
        return f"{ran}; waited {format_duration(record.waited_s)} for the approval"
    return ran


def action_label(record: CallRecord) -> str:
    if record.stoppable:
        return "■ Stop"
    if record.externalized_path:
        return "Open output"
    return ""


def changes_words(record: CallRecord) -> str:
    """What the call changed, in a few words ("2 files changed, +3 −1, 1 deleted"; it says
    when the step was undone), "" when it changed nothing."""
    if record.changes_error:
        return record.changes_error
    if not record.changes:
        return ""
    words = f"Changed: {record.changes.summary()}"
    if record.undo == "undone":
        return f"{words} — undone"
    if record.undo == "kept":
        return f"{words} — can no longer be undone"
    return words


class TimelineModel(QAbstractTableModel):
    """Tool-call rows built from events; see the module docstring."""

    tools_changed = Signal()
    """A tool name appeared that no earlier row had (for the tool filter)."""

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        batch_ms: int = DEFAULT_BATCH_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self._clock = clock
        self._records: dict[str, CallRecord] = {}
        self._order: list[str] = []
        self._row: dict[str, int] = {}
        self._pending: list[str] = []
        self._dirty: set[int] = set()
        self._running: set[str] = set()
        self._tools: set[str] = set()
        self._batch = QTimer(self)
        self._batch.setSingleShot(True)
        self._batch.setInterval(batch_ms)
        self._batch.timeout.connect(self.flush)
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._tick.timeout.connect(self._tick_running)

    # --- feeding -------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        if not isinstance(event, TOOL_EVENTS):
            return
        call_id = event.call_id
        old = self._records.get(call_id)
        new = advance(old, event, event.at)
        if new is None or new == old:
            return
        self._records[call_id] = new
        if new.status == "running":
            self._running.add(call_id)
            if not self._tick.isActive():
                self._tick.start()
        else:
            self._running.discard(call_id)
        if old is None:
            self._pending.append(call_id)
        elif call_id in self._row:
            self._dirty.add(self._row[call_id])
        if new.name not in self._tools:
            self._tools.add(new.name)
            self.tools_changed.emit()
        if not self._batch.isActive():
            self._batch.start()

    def apply_many(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def set_steps(self, steps: Iterable[StepInfo]) -> None:
        """Mark each call's step undone, undoable or kept, as the kernel's step list says
        (an undo step's own call keeps its state: it is the undone call that changes)."""
        for step in steps:
            if step.undoes:
                continue
            old = self._records.get(step.call_id)
            if old is None:
                continue
            new = old.with_step(step.undone, step.undoable)
            if new is not old:
                self._records[step.call_id] = new
                if step.call_id in self._row:
                    self._dirty.add(self._row[step.call_id])
        self.flush()

    def flush(self) -> None:
        """Insert the rows waiting for the batch tick and signal the changed ones, now."""
        self._batch.stop()
        dirty = {self._order[row] for row in self._dirty}
        self._dirty = set()
        tail: list[str] = []
        for call_id in self._pending:
            at = self._place(call_id, tail)
            if at == len(self._order) + len(tail):
                tail.append(call_id)
                continue
            self._append(tail)
            tail = []
            self.beginInsertRows(QModelIndex(), at, at)
            self._order.insert(at, call_id)
            self._row = {c: i for i, c in enumerate(self._order)}
            self.endInsertRows()
        self._append(tail)
        self._pending = []
        if dirty:
            self._signal_rows(sorted(self._row[c] for c in dirty), Column.STATUS, Column.ACTION)

    def _append(self, call_ids: list[str]) -> None:
        if not call_ids:
            return
        first = len(self._order)
        self.beginInsertRows(QModelIndex(), first, first + len(call_ids) - 1)
        for offset, call_id in enumerate(call_ids):
            self._row[call_id] = first + offset
        self._order.extend(call_ids)
        self.endInsertRows()

    def _place(self, call_id: str, tail: list[str]) -> int:
        """Where a new row goes: after its parent and the parent's earlier descendants (the
        rows being appended, `tail`, count after the shown ones); at the end otherwise."""
        end = len(self._order) + len(tail)
        parent = self._records[call_id].parent_call_id
        if not parent:
            return end
        at = self._row.get(parent)
        if at is None:
            if parent not in tail:
                return end
            at = len(self._order) + tail.index(parent)
        at += 1
        while at < end and parent in self._ancestors(
                self._order[at] if at < len(self._order) else tail[at - len(self._order)]):
            at += 1
        return at

    def _ancestors(self, call_id: str) -> list[str]:
        """The calls this one was made for, nearest first."""
        out: list[str] = []
        record = self._records.get(call_id)
        while record is not None and record.parent_call_id and len(out) < 16:
            out.append(record.parent_call_id)
            record = self._records.get(record.parent_call_id)
        return out

    def clear(self) -> None:
        """Forget every call (for a session switch)."""
        self._batch.stop()
        self._tick.stop()
        self.beginResetModel()
        self._records.clear()
        self._order.clear()
        self._row.clear()
        self._pending.clear()
        self._dirty.clear()
        self._running.clear()
        self._tools.clear()
        self.endResetModel()
        self.tools_changed.emit()

    # --- lookups -------------------------------------------------------------------------

    def record_at(self, row: int) -> CallRecord:
        return self._records[self._order[row]]

    def record(self, call_id: str) -> CallRecord | None:
        return self._records.get(call_id)

    def row_of(self, call_id: str) -> int | None:
        """The row of a call, inserting pending rows first so a just-seen call has one."""
        if call_id in self._records and call_id not in self._row:
            self.flush()
        return self._row.get(call_id)

    def tool_names(self) -> list[str]:
        return sorted(self._tools)

    # --- Qt model interface --------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._order)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[Column(section)]
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return HEADERS[Column(section)] or "Action"
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        # Views ask for a dozen roles per cell on every paint: answer the others at once.
        if role not in _ROLES or not index.isValid():
            return None
        record = self._records[self._order[index.row()]]
        if role in _TEXT_ROLES:
            return self._text(record, _COLUMNS[index.column()])
        if role == RECORD_ROLE:
            return record
        if role == STATUS_ROLE:
            return record.status
        if role == CALL_ID_ROLE:
            return record.call_id
        column = index.column()
        if role == _TOOLTIP and column in (Column.ARGUMENTS, Column.TOOL):
            # Tooltips render rich text when they look like it: escape the untrusted text.
            text = record.shown_summary if column == Column.ARGUMENTS else record.shown_name
            return f"<pre>{html.escape(text)}</pre>"
        if role == _TOOLTIP and column == Column.DURATION:
            return duration_tip(record, self._clock())
        if role == _TOOLTIP and column == Column.STATUS:
            return changes_words(record) or None
        if role == _ALIGNMENT and column in (Column.DURATION, Column.OUTPUT):
            return _RIGHT
        return None

    def _text(self, record: CallRecord, column: Column) -> str:
        if column is Column.STATUS:
            words = status_words(record)
            return f"{words} · undone" if record.undo == "undone" else words
        if column is Column.TOOL:
            depth = len(self._ancestors(record.call_id))
            return f"{'    ' * (depth - 1)}  ↳ {record.shown_name}" if depth else record.shown_name
        if column is Column.ARGUMENTS:
            return record.shown_summary
        if column is Column.DURATION:
            if record.status == "running" or record.duration_ms is not None:
                return format_duration(record.elapsed(self._clock()))
            return ""
        if column is Column.OUTPUT:
            if record.output_bytes is not None:
                size = format_bytes(record.output_bytes)
                return f"{size} {EXTERNALIZED_MARKER}" if record.externalized_path else size
            if record.status == "running":
                return format_bytes(record.bytes_so_far)
            return ""
        if column is Column.APPROVAL:
            return one_line(record.approval.label)
        return action_label(record)

    # --- signalling ----------------------------------------------------------------------

    def _tick_running(self) -> None:
        if not self._running:
            self._tick.stop()
            return
        rows = sorted(self._row[c] for c in self._running if c in self._row)
        self._signal_rows(rows, Column.DURATION, Column.DURATION)

    def _signal_rows(self, rows: list[int], first_col: Column, last_col: Column) -> None:
        """One dataChanged per run of consecutive rows in `rows` (sorted)."""
        if not rows:
            return
        start = prev = rows[0]
        for row in [*rows[1:], -2]:
            if row != prev + 1:
                self.dataChanged.emit(self.index(start, first_col), self.index(prev, last_col))
                start = row
            prev = row
