"""The details of one tool call, shown beside the timeline when a row is selected.

    pane = DetailsPane()
    pane.show_record(record)      # a CallRecord, or None to show nothing
    pane.open_output              # Signal(str): "Open full output" clicked (a file path)
    pane.stop_requested           # Signal(str): "Stop" clicked (a call id)

Shows the full arguments as indented JSON, a preview of the result, the error code with a
hint of what it means, the approval (risk, reason, decision, who decided, rule, scope,
message), the timings, and the exact text the model received. "Copy arguments" and "Copy
output" put the JSON and the model's text on the clipboard, as shown. Everything is plain
text (QPlainTextEdit / QLabel with Qt.PlainText): tool output is never interpreted as rich
text, and every text from the model or a tool is shown through `kernel.visible` (control,
bidirectional and invisible characters escaped).
"""

from __future__ import annotations

import re
import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.timeline.model import format_bytes, format_seconds, status_label
from desktop.timeline.record import CallRecord, Status
from kernel.visible import one_line, visible

PREVIEW_CHARS = 4_000
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


def _text_box(accessible: str, max_height: int) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    box.setMaximumHeight(max_height)
    box.setAccessibleName(accessible)
    return box


class DetailsPane(QScrollArea):
    open_output = Signal(str)
    stop_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Tool call details")
        self.setWidgetResizable(True)
        self._record: CallRecord | None = None
        body = QWidget()
        layout = QVBoxLayout(body)

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
        actions.addWidget(self.stop_button)
        actions.addWidget(self.open_button)
        actions.addStretch(1)
        layout.addLayout(actions)

        args_box = QGroupBox("Arguments")
        args_layout = QVBoxLayout(args_box)
        self.arguments = _text_box("Arguments as JSON", 150)
        self.copy_arguments = QPushButton("Copy arguments")
        self.copy_arguments.setAccessibleName("Copy arguments")
        self.copy_arguments.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(self.arguments.toPlainText())
        )
        args_layout.addWidget(self.arguments)
        args_layout.addWidget(self.copy_arguments, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(args_box)

        result_box = QGroupBox("Result")
        result_layout = QVBoxLayout(result_box)
        self.error = _plain_label("Error code and hint")
        self.result_info = _plain_label("Output size and location")
        self.result_preview = _text_box("Result preview", 120)
        result_layout.addWidget(self.error)
        result_layout.addWidget(self.result_info)
        result_layout.addWidget(self.result_preview)
        layout.addWidget(result_box)

        approval_box = QGroupBox("Approval")
        form = QFormLayout(approval_box)
        self.approval_fields: dict[str, QLabel] = {}
        for key in ("Risk", "Reason", "Decision", "Decided by", "Scope", "Rule", "Message"):
            label = _plain_label(f"Approval {key.lower()}")
            self.approval_fields[key] = label
            form.addRow(key, label)
        layout.addWidget(approval_box)

        timing_box = QGroupBox("Timings")
        timing_form = QFormLayout(timing_box)
        self.timing_fields: dict[str, QLabel] = {}
        for key in ("Queued", "Approval asked", "Decided", "Started", "Finished", "Duration"):
            label = _plain_label(f"Timing {key.lower()}")
            self.timing_fields[key] = label
            timing_form.addRow(key, label)
        layout.addWidget(timing_box)

        model_box = QGroupBox("Exact text the model received")
        model_layout = QVBoxLayout(model_box)
        self.model_text = _text_box("Exact text the model received", 200)
        self.copy_output = QPushButton("Copy output")
        self.copy_output.setAccessibleName("Copy output")
        self.copy_output.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(self.model_text.toPlainText())
        )
        model_layout.addWidget(self.model_text)
        model_layout.addWidget(self.copy_output, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(model_box)
        layout.addStretch(1)
        self.setWidget(body)
        self.show_record(None)

    @property
    def record(self) -> CallRecord | None:
        return self._record

    def show_record(self, record: CallRecord | None) -> None:
        self._record = record
        self.widget().setEnabled(record is not None)
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
        self.title.setText(one_line(f"{record.name} — {status_label(record)}  "
                                    f"({record.call_id})"))
        self.stop_button.setEnabled(record.status.stoppable)
        self.open_button.setEnabled(bool(record.externalized_path))
        arguments = visible(record.arguments_json)
        if self.arguments.toPlainText() != arguments:
            self.arguments.setPlainText(arguments)
        self._show_result(record)
        approval = record.approval
        values = {
            "Risk": approval.risk or record.risk,
            "Reason": approval.reason,
            "Decision": approval.decision,
            "Decided by": approval.decided_by,
            "Scope": approval.scope,
            "Rule": approval.rule or approval.requested_rule,
            "Message": approval.message,
        }
        for key, value in values.items():
            self.approval_fields[key].setText(visible(value) if value else "—")
        now = time.time()
        timings = {
            "Queued": _clock(record.queued_at),
            "Approval asked": _clock(record.approval_requested_at),
            "Decided": _clock(record.decided_at),
            "Started": _clock(record.started_at),
            "Finished": _clock(record.finished_at),
            "Duration": format_seconds(record.elapsed(now))
            if record.started_at is not None or record.duration_ms is not None else "—",
        }
        for key, value in timings.items():
            self.timing_fields[key].setText(value)

    def _show_result(self, record: CallRecord) -> None:
        if record.error_code:
            self.error.setText(f"Error {record.error_code}: {error_hint(record.error_code)}")
        else:
            self.error.setText("")
        self.error.setVisible(bool(record.error_code))
        if record.status is Status.RUNNING:
            info = f"Running: {format_bytes(record.bytes_so_far)} so far"
            preview = visible(_ANSI.sub("", record.last_line))
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
        model_text = visible(record.preview)
        if self.model_text.toPlainText() != model_text:
            self.model_text.setPlainText(model_text)

    def _stop(self) -> None:
        if self._record is not None and self._record.status.stoppable:
            self.stop_requested.emit(self._record.call_id)

    def _open(self) -> None:
        if self._record is not None and self._record.externalized_path:
            self.open_output.emit(self._record.externalized_path)
