"""The tool-call timeline panel: a live table of every tool call plus the selected call's details.

    panel = TimelinePanel(parent=None)
    panel.apply(event)              # feed every kernel.events.Event (others are ignored)
    panel.apply_many(events)        # e.g. a session's stored events on load
    panel.clear()                   # forget every call (session switch)
    panel.select_call(call_id)      # jump to a call's row (from a chat card); clears filters
                                    # that hide it; does NOT emit call_selected
    panel.open_output               # Signal(str): the user wants a call's full output (path)
    panel.follow_output             # Signal(str): ... of a call still running (follow it)
    panel.stop_requested            # Signal(str): the user wants a running call stopped (id)
    panel.call_selected             # Signal(str): the user selected a row (call id)
    panel.call_activated            # Signal(str): the user clicked a row or pressed Enter
                                    # on it (the app opens the call's pending approval)
    panel.undo_requested            # Signal(str): Undo this call (a call id)
    panel.rewind_requested          # Signal(str): Rewind to here (a call id)
    panel.diff_requested            # Signal(str): the diff of a call's changes (a call id)
    panel.set_steps(steps)          # the kernel's step list: which calls are undone
    panel.show_undo_outcome(o)      # what an undo or rewind did (an UndoOutcome)
    panel.show_diff(call_id, text)  # a call's diff, from the kernel

Layout: a filter bar (text search over tool names and arguments, a status filter, a tool
filter, the number of calls shown; the search applies after a 150 ms pause in typing), a
`QTableView` over `TimelineModel` → `TimelineFilter`
with `TimelineDelegate` and fixed-height rows, and the `DetailsPane` below it in a splitter.
A running call, or one waiting for an approval (the stop withdraws it), is stopped with its
row's "■ Stop" cell, the Stop button of the details pane,
the row's context menu, or the Delete key; an externalized output is opened with the row's
"Open output" cell, a double click, the context menu, or the details pane. A call that
changed the workspace is undone, or everything after it rewound, from the details pane's
buttons or the row's context menu, or Ctrl+Z on its selected row (undo).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QEvent,
    QItemSelection,
    QModelIndex,
    QObject,
    QPoint,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop.theme import keep_panel_sheet
from desktop.timeline.delegate import TimelineDelegate
from desktop.timeline.details import DetailsPane
from desktop.timeline.filter import TimelineFilter
from desktop.timeline.model import CALL_ID_ROLE, RECORD_ROLE, Column, TimelineModel
from desktop.timeline.notices import RunNotes
from desktop.timeline.record import CallRecord
from desktop.timeline.undo import outcome_words
from desktop.words import STATUS_WORDS, count
from kernel.events import CALL_STATUSES, CallStatus, Event
from kernel.visible import one_line

if TYPE_CHECKING:
    from kernel.protocol import StepInfo, UndoOutcome

SEARCH_DELAY_MS = 150
"""Typing pauses this long before the rows are filtered (a pass over every row)."""
ALL = "all"
FAILED = "failed"
STATUS_CHOICES: list[tuple[str, str, frozenset[CallStatus]]] = [
    ("All statuses", ALL, frozenset()),
    ("Active (queued, awaiting, running)", "active",
     frozenset({"queued", "awaiting_approval", "running"})),
    ("Failed (error, denied, stopped, timed out)", FAILED,
     frozenset({"error", "denied", "stopped", "timeout"})),
    *((STATUS_WORDS[s].capitalize(), s, frozenset({s})) for s in CALL_STATUSES),
]


class TimelinePanel(QWidget):
    open_output = Signal(str)
    follow_output = Signal(str)
    stop_requested = Signal(str)
    call_selected = Signal(str)
    call_activated = Signal(str)
    undo_requested = Signal(str)
    rewind_requested = Signal(str)
    diff_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, batch_ms: int = 75) -> None:
        super().__init__(parent)
        self.setAccessibleName("Tool call timeline")
        self.model = TimelineModel(self, batch_ms=batch_ms)
        self.proxy = TimelineFilter(self)
        self.proxy.setSourceModel(self.model)
        self._selecting = False

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search tool calls…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search tool names and arguments")
        self._search_delay = QTimer(self)
        self._search_delay.setSingleShot(True)
        self._search_delay.setInterval(SEARCH_DELAY_MS)
        self._search_delay.timeout.connect(lambda: self.proxy.set_text(self.search.text()))
        self.search.textChanged.connect(lambda _t: self._search_delay.start())
        self.status_filter = QComboBox()
        self.status_filter.setAccessibleName("Filter by status")
        self.status_filter.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.status_filter.setMinimumContentsLength(7)
        for label, key, _ in STATUS_CHOICES:
            self.status_filter.addItem(label, key)
        self.status_filter.currentIndexChanged.connect(self._status_changed)
        self.tool_filter = QComboBox()
        self.tool_filter.setAccessibleName("Filter by tool")
        self.tool_filter.setSizeAdjustPolicy(  # an MCP tool's name is long: elided, not wide
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.tool_filter.setMinimumContentsLength(7)
        self.tool_filter.addItem("All tools", "")
        self.tool_filter.currentIndexChanged.connect(
            lambda _i: self.proxy.set_tool(self.tool_filter.currentData() or None)
        )
        self.model.tools_changed.connect(self._refresh_tools)
        self.count = QLabel()
        self.count.setAccessibleName("Number of calls shown")
        self.count.setProperty("muted", True)
        self.title = QLabel("Tool calls")
        self.title.setObjectName("timelineTitle")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.1)
        self.title.setFont(font)
        title = QHBoxLayout()  # a title strip, then the search and the filters in two rows,
        title.addWidget(self.title, 1)  # so the search keeps its room in a narrow dock
        title.addWidget(self.count)
        filters = QHBoxLayout()
        filters.setSpacing(4)
        filters.addWidget(self.status_filter, 1)
        filters.addWidget(self.tool_filter, 1)
        bar = QVBoxLayout()
        bar.setSpacing(6)
        bar.addLayout(title)
        bar.addWidget(self.search)
        bar.addLayout(filters)

        self.delegate = TimelineDelegate(self)
        self.delegate.stop_clicked.connect(self.stop_requested)
        self.delegate.open_clicked.connect(self.open_output)
        self.view = QTableView()
        self.view.setAccessibleName("Tool calls")
        self.view.setModel(self.proxy)
        self.view.setItemDelegate(self.delegate)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setShowGrid(False)
        self.view.setWordWrap(False)
        self.view.setMouseTracking(True)  # the hovered row's soft shade
        self.view.entered.connect(lambda index: self._hover(index.row()))
        self.view.viewport().installEventFilter(self)  # Leave: no row hovered
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.doubleClicked.connect(self._double_clicked)
        self.view.clicked.connect(self._activated)
        self.view.activated.connect(self._activated)
        rows = self.view.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.delegate.row_height(self.view.fontMetrics()))
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setHighlightSections(False)
        header.setSectionResizeMode(Column.ARGUMENTS, QHeaderView.ResizeMode.Stretch)
        metrics = self.view.fontMetrics()
        widths = {
            Column.STATUS: metrics.horizontalAdvance("error: execution_error") + 36,
            Column.TOOL: metrics.horizontalAdvance("read_tool_output") + 12,
            Column.DURATION: metrics.horizontalAdvance("Duration") + 24,
            Column.OUTPUT: metrics.horizontalAdvance("999.9 MB ⇱") + 16,
            Column.APPROVAL: metrics.horizontalAdvance("allowed by rule Edit(src/**)") + 12,
            Column.ACTION: metrics.horizontalAdvance("Open output") + 26,
        }
        for column, width in widths.items():
            self.view.setColumnWidth(column, width)
        self.view.selectionModel().selectionChanged.connect(self._selection_changed)
        stop_key = QShortcut(QKeySequence(Qt.Key.Key_Delete), self.view)
        stop_key.setContext(Qt.ShortcutContext.WidgetShortcut)  # only with the table focused
        stop_key.activated.connect(self._stop_current)
        self.view.installEventFilter(self)  # Ctrl+Z (the view takes it as a shortcut override)

        self.details = DetailsPane()
        self.details.open_output.connect(self.open_output)
        self.details.follow_output.connect(self.follow_output)
        self.details.stop_requested.connect(self.stop_requested)
        self.details.undo_requested.connect(self.undo_requested)
        self.details.rewind_requested.connect(self.rewind_requested)
        self.details.diff_requested.connect(self.diff_requested)

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setHandleWidth(8)
        splitter.addWidget(self.view)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.splitter = splitter
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 8, 6, 8)
        layout.setSpacing(8)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        self.notes = RunNotes(self)
        layout.addWidget(self.notes)

        for signal in (self.model.rowsInserted, self.model.modelReset,
                       self.proxy.rowsInserted, self.proxy.rowsRemoved,
                       self.proxy.modelReset, self.proxy.layoutChanged):
            signal.connect(self._update_count)
        self.model.dataChanged.connect(self._refresh_details)
        self._update_count()
        keep_panel_sheet(self)  # grouped, quiet fields and buttons, light or dark

    # --- public API ----------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        self.model.apply(event)
        self.notes.apply(event)

    def apply_many(self, events: Iterable[Event]) -> None:
        events = list(events)
        self.model.apply_many(events)
        self.notes.apply_many(events)

    def clear(self) -> None:
        self.model.clear()
        self.notes.clear()
        self.details.forget()
        self.details.show_record(None)

    def set_steps(self, steps: Iterable[StepInfo]) -> None:
        self.model.set_steps(steps)

    def show_undo_outcome(self, outcome: UndoOutcome) -> None:
        """Say what the undo did on the call it was asked of (the row itself changes with
        the step list the kernel sends after it)."""
        self.details.show_undo_note(outcome.call_id, outcome_words(outcome))

    def show_diff(self, call_id: str, text: str) -> None:
        self.details.show_diff(call_id, text)

    def select_call(self, call_id: str) -> bool:
        """Select and show a call's row; False when no call has that id."""
        row = self.model.row_of(call_id)
        if row is None:
            return False
        source = self.model.index(row, 0)
        index = self.proxy.mapFromSource(source)
        if not index.isValid():
            self.search.clear()
            self._search_delay.stop()
            self.status_filter.setCurrentIndex(0)
            self.tool_filter.setCurrentIndex(0)
            self.proxy.clear_filters()
            index = self.proxy.mapFromSource(source)
        self._selecting = True
        try:
            self.view.selectRow(index.row())
            self.view.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        finally:
            self._selecting = False
        return True

    def selected_call(self) -> str | None:
        record = self._current_record()
        return record.call_id if record else None

    # --- internals -----------------------------------------------------------------------

    def _current_record(self) -> CallRecord | None:
        rows = self.view.selectionModel().selectedRows()
        if not rows:
            return None
        record = rows[0].data(RECORD_ROLE)
        return record if isinstance(record, CallRecord) else None

    def _selection_changed(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        record = self._current_record()
        self.details.show_record(record)
        if record is not None and not self._selecting:
            self.call_selected.emit(record.call_id)

    def _refresh_details(self, top: QModelIndex, bottom: QModelIndex) -> None:
        shown = self.details.record
        if shown is None:
            return
        row = self.model.row_of(shown.call_id)
        if row is not None and top.row() <= row <= bottom.row():
            self.details.show_record(self.model.record(shown.call_id))

    def _status_changed(self, _index: int) -> None:
        key = self.status_filter.currentData()
        statuses = next(s for _, k, s in STATUS_CHOICES if k == key)
        self.proxy.set_statuses(statuses)

    def _refresh_tools(self) -> None:
        current = self.tool_filter.currentData()
        self.tool_filter.blockSignals(True)
        self.tool_filter.clear()
        self.tool_filter.addItem("All tools", "")
        for name in self.model.tool_names():
            self.tool_filter.addItem(one_line(name), name)
        found = self.tool_filter.findData(current)
        self.tool_filter.setCurrentIndex(max(found, 0))
        self.tool_filter.blockSignals(False)
        if found < 0 and current:
            self.proxy.set_tool(None)

    def _update_count(self) -> None:
        total, shown = self.model.rowCount(), self.proxy.rowCount()
        self.count.setText(f"{shown} of {count(total, 'call')}" if self.proxy.active
                           else count(total, "call"))

    def _double_clicked(self, index: QModelIndex) -> None:
        record = index.data(RECORD_ROLE)
        if isinstance(record, CallRecord) and record.externalized_path:
            self.open_output.emit(record.externalized_path)

    def _activated(self, index: QModelIndex) -> None:
        record = index.data(RECORD_ROLE)
        if isinstance(record, CallRecord):
            self.call_activated.emit(record.call_id)

    def _stop_current(self) -> None:
        record = self._current_record()
        if record is not None and record.stoppable:
            self.stop_requested.emit(record.call_id)

    def _show_diff_of(self, call_id: str) -> None:
        self.select_call(call_id)
        self.diff_requested.emit(call_id)

    def _hover(self, row: int) -> None:
        if row != self.delegate.hovered_row:
            self.delegate.hovered_row = row
            self.view.viewport().update()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.view.viewport() and event.type() == QEvent.Type.Leave:
            self._hover(-1)
        if (watched is self.view and event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.matches(QKeySequence.StandardKey.Undo)):
            self._undo_current()
            return True
        return super().eventFilter(watched, event)

    def _undo_current(self) -> None:
        record = self._current_record()
        if record is not None and record.undoable:
            self.undo_requested.emit(record.call_id)

    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        record = index.data(RECORD_ROLE) if index.isValid() else None
        if not isinstance(record, CallRecord):
            return
        call_id = index.data(CALL_ID_ROLE)
        menu = QMenu(self)
        menu.setAccessibleName("Tool call actions")
        stop = menu.addAction("Stop")
        stop.setEnabled(record.stoppable)
        stop.triggered.connect(lambda: self.stop_requested.emit(call_id))
        path = record.externalized_path
        open_action = menu.addAction("Open full output")
        open_action.setEnabled(bool(path))
        open_action.triggered.connect(lambda: self.open_output.emit(path or ""))
        if record.changes:
            menu.addSeparator()
            diff = menu.addAction("Show diff")
            diff.triggered.connect(lambda: self._show_diff_of(call_id))
            undo = menu.addAction("Undo this call")
            undo.setEnabled(record.undoable)
            undo.triggered.connect(lambda: self.undo_requested.emit(call_id))
            rewind = menu.addAction("Rewind to here")
            rewind.triggered.connect(lambda: self.rewind_requested.emit(call_id))
        menu.popup(self.view.viewport().mapToGlobal(pos))
