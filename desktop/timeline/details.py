"""The details of one tool call, shown beside the timeline when a row is selected.

    pane = DetailsPane()
    pane.show_record(record)      # a CallRecord, or None to show nothing
    pane.open_output              # Signal(str): "Open full output" clicked (a file path)
    pane.follow_output            # Signal(str): the same for a call still running: the
                                  # viewer opens at the end and follows it as it grows
    pane.stop_requested           # Signal(str): "Stop" clicked (a call id)
    pane.undo_requested           # Signal(str): "Undo this call" clicked (a call id)
    pane.rewind_requested         # Signal(str): "Rewind to here" clicked (a call id)
    pane.diff_requested           # Signal(str): "Show diff" clicked (a call id)
    pane.show_diff(call_id, text) # the diff the kernel sent (shown if that call is shown)
    pane.show_undo_note(call_id, text)  # what an undo of that call did, in words

A call that changed the workspace shows what it changed (a summary, each change on a line)
with Show diff, Undo this call and Rewind to here; an undone one says so and offers
neither. The diff comes from the kernel (its checkpoints keep the bytes): no file is read
here.

The call's name and status in words, Stop, Open full output and Copy output stay at the
top (the pane fits a 300 px wide dock); the result takes most of the room under them (for a
running command, the last lines of its output as they are written, and Open full output
follows it while it runs);
the arguments as indented JSON, the approval (risk, reason, decision, who decided, rule,
scope, message), the timings (the run time, and the wait for the approval on its own) and
the exact text the model received scroll below. "Copy arguments" and "Copy output" put the
JSON and the model's text on the clipboard, as shown. Everything is plain
text (QPlainTextEdit / QLabel with Qt.PlainText): tool output is never interpreted as rich
text, and every text from the model or a tool is shown through `kernel.visible` (control,
bidirectional and invisible characters escaped).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.timeline.model import changes_words
from desktop.timeline.record import CallRecord, status_words
from desktop.timeline.tail import TAIL_LINES, tail_lines
from desktop.timeline.undo import changes_text
from desktop.words import (
    decider_words,
    decision_words,
    format_bytes,
    format_duration,
    scope_words,
)
from kernel.visible import one_line, visible

PREVIEW_CHARS = 4_000
LISTED_LINES = 4
"""A call's changes are listed in a box this many lines high at most (it scrolls)."""
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

ERROR_HINTS = {
    "unknown_tool": "The model asked for a tool that is not registered.",
    "invalid_arguments": "The arguments did not match the tool's schema; the model was told "
                         "what was wrong and can retry.",
    "permission_denied": "The path or action is outside what the workspace policy allows.",
    "approval_denied": "The call was refused (by you, a deny rule, or the mode).",
    "approval_unavailable": "No one could be asked for approval, so the call was refused.",
    "timeout": "The call ran longer than its time limit and was stopped.",
    "execution_error": "The tool ran and failed; the model received its error message.",
    "cancelled": "The call was stopped before it finished.",
    "loop_detected": "The same call was repeated too many times; the loop was broken.",
    "rate_limited": "The tool was called too often in a short time.",
    "sandbox_unavailable": "The sandbox could not be started, so the command was not run.",
}


def error_hint(code: str | None) -> str:
    if not code:
        return ""
    return ERROR_HINTS.get(code, "See the text the model received below.")


def _clock(t: float | None) -> str:
    if t is None:
        return "—"
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def _plain_label(accessible: str) -> QLabel:
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setAccessibleName(accessible)
    return label


def _text_box(accessible: str, max_height: int | None = None) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    if max_height is not None:
        box.setMaximumHeight(max_height)
    box.setAccessibleName(accessible)
    return box


class DetailsPane(QWidget):
    """The call's name and status with Stop and Open full output always in view; under them
    the result takes the room (the live tail of a running command: its last lines), and the
    arguments, approval, timings and the model's exact text scroll below."""

    open_output = Signal(str)
    follow_output = Signal(str)
    stop_requested = Signal(str)
    undo_requested = Signal(str)
    rewind_requested = Signal(str)
    diff_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Tool call details")
        self._record: CallRecord | None = None
        self._diffs: dict[str, str] = {}
        self._notes: dict[str, str] = {}
        """Where a running call's output is being written (set by the app): the pane shows
        its last lines and opens it while it still runs."""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        self.title = _plain_label("Call")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        layout.addWidget(self.title)

        actions = QHBoxLayout()
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop this call")
        self.stop_button.clicked.connect(self._stop)
        self.open_button = QPushButton("Open full output")
        self.open_button.setAccessibleName("Open full output in the viewer")
        self.open_button.clicked.connect(self._open)
        self.copy_output = QPushButton("Copy output")
        self.copy_output.setAccessibleName("Copy output")
        self.copy_output.clicked.connect(self._copy_output)
        self.copy_arguments = QPushButton("Copy arguments")
        self.copy_arguments.setAccessibleName("Copy arguments")
        self.copy_arguments.clicked.connect(self._copy_arguments)
        for button in (self.stop_button, self.open_button, self.copy_output):
            actions.addWidget(button)
        actions.addStretch(1)
        layout.addLayout(actions)

        self.changes_box = self._changes_box()
        layout.addWidget(self.changes_box)

        result_box = QGroupBox("Result")
        result_layout = QVBoxLayout(result_box)
        self.error = _plain_label("Error code and hint")
        self.result_info = _plain_label("Output size and location")
        self.result_preview = _text_box("Result preview")
        self.result_preview.setMinimumHeight(120)
        result_layout.addWidget(self.error)
        result_layout.addWidget(self.result_info)
        result_layout.addWidget(self.result_preview, 1)

        more = QWidget()
        more_layout = QVBoxLayout(more)
        more_layout.setContentsMargins(0, 0, 0, 0)
        args_box = QGroupBox("Arguments")
        args_layout = QVBoxLayout(args_box)
        self.arguments = _text_box("Arguments as JSON", 110)
        args_layout.addWidget(self.arguments)
        args_layout.addWidget(self.copy_arguments, 0, Qt.AlignmentFlag.AlignLeft)
        more_layout.addWidget(args_box)

        approval_box = QGroupBox("Approval")
        form = QFormLayout(approval_box)
        self.approval_fields: dict[str, QLabel] = {}
        for key in ("Risk", "Reason", "Decision", "Decided by", "Scope", "Rule", "Message"):
            label = _plain_label(f"Approval {key.lower()}")
            self.approval_fields[key] = label
            form.addRow(key, label)
        more_layout.addWidget(approval_box)

        timing_box = QGroupBox("Timings")
        timing_form = QFormLayout(timing_box)
        self.timing_fields: dict[str, QLabel] = {}
        for key in ("Duration", "Waiting for approval", "Queued", "Approval asked", "Decided",
                    "Started", "Finished"):
            label = _plain_label(f"Timing {key.lower()}")
            self.timing_fields[key] = label
            timing_form.addRow(key, label)
        more_layout.addWidget(timing_box)

        model_box = QGroupBox("Exact text the model received")
        model_layout = QVBoxLayout(model_box)
        self.model_text = _text_box("Exact text the model received", 200)
        model_layout.addWidget(self.model_text)
        more_layout.addWidget(model_box)
        more_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(more)
        self.more = scroll

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(result_box)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout.addWidget(splitter, 1)
        self.show_record(None)

    def _changes_box(self) -> QGroupBox:
        box = QGroupBox("Changes")
        box.setAccessibleName("What the call changed")
        column = QVBoxLayout(box)
        self.changes_summary = _plain_label("Summary of the changes")
        self.undo_note = _plain_label("What the undo did")
        self.undo_note.setVisible(False)
        buttons = QHBoxLayout()
        self.diff_button = QPushButton("Show diff")
        self.diff_button.setAccessibleName("Show the diff of this call's changes")
        self.diff_button.clicked.connect(lambda: self._emit(self.diff_requested))
        self.undo_button = QPushButton("Undo this call")
        self.undo_button.setAccessibleName("Undo this call's changes")
        self.undo_button.clicked.connect(lambda: self._emit(self.undo_requested))
        self.rewind_button = QPushButton("Rewind to here")
        self.rewind_button.setAccessibleName("Undo every later call's changes")
        self.rewind_button.clicked.connect(lambda: self._emit(self.rewind_requested))
        for button in (self.diff_button, self.undo_button, self.rewind_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.changes_list = _text_box("Each change")
        self.diff = _text_box("Diff of the changes")
        self.diff.setMinimumHeight(140)
        self.diff.setVisible(False)
        column.addWidget(self.changes_summary)
        column.addLayout(buttons)
        column.addWidget(self.undo_note)
        column.addWidget(self.changes_list)
        column.addWidget(self.diff)
        return box

    def _emit(self, signal: SignalInstance) -> None:
        if self._record is not None:
            signal.emit(self._record.call_id)

    def show_diff(self, call_id: str, text: str) -> None:
        self._diffs[call_id] = visible(text)
        if self._record is not None and self._record.call_id == call_id:
            self._show_changes(self._record)

    def show_undo_note(self, call_id: str, text: str) -> None:
        self._notes[call_id] = text
        if self._record is not None and self._record.call_id == call_id:
            self._show_changes(self._record)

    def forget(self) -> None:
        """Forget the diffs and notes kept (a session switch)."""
        self._diffs.clear()
        self._notes.clear()

    def _show_changes(self, record: CallRecord | None) -> None:
        note = self._notes.get(record.call_id, "") if record is not None else ""
        words = changes_words(record) if record is not None else ""
        self.changes_box.setVisible(bool(words or note))
        if record is None:
            return
        self.changes_summary.setText(words)
        self.undo_note.setText(note)
        self.undo_note.setVisible(bool(note))
        has_changes = bool(record.changes)
        self.diff_button.setVisible(has_changes)
        self.undo_button.setVisible(record.undoable)
        self.rewind_button.setVisible(has_changes and record.undo != "none")
        listed = changes_text(record.changes)
        if self.changes_list.toPlainText() != listed:
            self.changes_list.setPlainText(listed)
            lines = min(max(len(record.changes), 1), LISTED_LINES)  # the diff gets the rest
            self.changes_list.setFixedHeight(
                lines * self.changes_list.fontMetrics().lineSpacing() + 12)
        self.changes_list.setVisible(has_changes)
        diff = self._diffs.get(record.call_id)
        self.diff.setVisible(diff is not None)
        if diff is not None and self.diff.toPlainText() != diff:
            self.diff.setPlainText(diff)

    @property
    def record(self) -> CallRecord | None:
        return self._record

    def show_record(self, record: CallRecord | None) -> None:
        self._record = record
        self._show_changes(record)
        for widget in (self.more, self.result_preview, self.copy_output, self.copy_arguments):
            widget.setEnabled(record is not None)
        if record is None:
            self.title.setText("Select a tool call to see its details.")
            for box in (self.arguments, self.result_preview, self.model_text):
                box.setPlainText("")
            for label in (*self.approval_fields.values(), *self.timing_fields.values(),
                          self.error, self.result_info):
                label.setText("")
            self.stop_button.setEnabled(False)
            self.open_button.setEnabled(False)
            return
        self.title.setText(one_line(f"{record.name} — {status_words(record)}  "
                                    f"({record.call_id})"))
        self.stop_button.setEnabled(record.stoppable)
        self.open_button.setEnabled(self._output_path(record) is not None)
        arguments = visible(record.arguments_json)
        if self.arguments.toPlainText() != arguments:
            self.arguments.setPlainText(arguments)
        self._show_result(record)
        approval = record.approval
        values = {
            "Risk": approval.risk or record.risk,
            "Reason": approval.reason,
            "Decision": decision_words(approval.decision),
            "Decided by": decider_words(approval.decided_by),
            "Scope": scope_words(approval.scope),
            "Rule": approval.rule or approval.requested_rule,
            "Message": approval.message,
        }
        for key, value in values.items():
            self.approval_fields[key].setText(visible(value) if value else "—")
        now = time.time()
        timings = {
            "Duration": format_duration(record.elapsed(now))
            if record.started_at is not None or record.duration_ms is not None else "—",
            "Waiting for approval": format_duration(record.waited_s)
            if record.decided_at is not None and record.approval_requested_at is not None
            else "—",
            "Queued": _clock(record.queued_at),
            "Approval asked": _clock(record.approval_requested_at),
            "Decided": _clock(record.decided_at),
            "Started": _clock(record.started_at),
            "Finished": _clock(record.finished_at),
        }
        for key, value in timings.items():
            self.timing_fields[key].setText(value)

    def _show_result(self, record: CallRecord) -> None:
        if record.error_code:
            words = status_words(record)
            self.error.setText(f"{words[:1].upper()}{words[1:]}: {error_hint(record.error_code)}")
        else:
            self.error.setText("")
        self.error.setVisible(bool(record.error_code))
        if record.status == "running":
            info = f"Running: {format_bytes(record.bytes_so_far)} so far"
            path = self._output_path(record)
            tail = tail_lines(path) if path is not None else None
            if tail is not None:
                info += f" — its last {TAIL_LINES} lines, as they come"
            preview = visible(_ANSI.sub("", record.last_line if tail is None else tail))
        elif record.output_bytes is not None:
            info = f"{format_bytes(record.output_bytes)} of output"
            if record.externalized_path:
                info += f"; full output kept at {record.externalized_path}"
            preview = visible(_ANSI.sub("", record.preview[:PREVIEW_CHARS]))
        else:
            info, preview = "No result yet.", ""
        self.result_info.setText(info)
        if self.result_preview.toPlainText() != preview:
            self.result_preview.setPlainText(preview)
        if record.status == "running":  # a live tail: its newest line in view
            bar = self.result_preview.verticalScrollBar()
            bar.setValue(bar.maximum())
        model_text = visible(record.preview)
        if self.model_text.toPlainText() != model_text:
            self.model_text.setPlainText(model_text)

    def _copy_output(self) -> None:
        QGuiApplication.clipboard().setText(self.model_text.toPlainText())

    def _copy_arguments(self) -> None:
        QGuiApplication.clipboard().setText(self.arguments.toPlainText())

    def _stop(self) -> None:
        if self._record is not None and self._record.stoppable:
            self.stop_requested.emit(self._record.call_id)

    def _output_path(self, record: CallRecord) -> Path | None:
        """The full output: kept on disk once finished, or being written while it runs."""
        if record.externalized_path:
            return Path(record.externalized_path)
        if record.status != "running" or not record.running_output:
            return None
        path = Path(record.running_output)
        return path if path.is_file() else None

    def _open(self) -> None:
        record = self._record
        path = self._output_path(record) if record is not None else None
        if record is not None and path is not None:
            running = record.status == "running"
            (self.follow_output if running else self.open_output).emit(str(path))
