"""The dialog that asks before a server's sampling request goes to the model.

It shows what would be sent — which server asks, for which session's run, the model, the
most tokens it may write, the system prompt and every message — all through
`kernel.visible` in plain-text widgets. *Send to the model* is a `DeliberateButton` (a click,
or Ctrl+Enter once the dialog has the focus) and waits ARM_DELAY_MS after each request is
shown; *Decline*, Esc and closing the dialog decline. Nothing is sent otherwise.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent, QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

from desktop.mcp_requests.base import RequestDialog, plain_label
from kernel.protocol import McpSamplingRequest
from kernel.visible import one_line, visible


def shown_messages(request: McpSamplingRequest) -> str:
    """The messages as the dialog shows them: each under its role, escaped."""
    return "\n\n".join(f"── {one_line(m.role)} ──\n{visible(m.text)}" for m in request.messages)


class SamplingDialog(RequestDialog):
    """Shows one sampling request; emits `answered(approve)`."""

    answered = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, "MCP sampling request")
        self.setWindowTitle("An MCP server asks the model — Reins")
        self.resize(620, 520)
        self.request: McpSamplingRequest | None = None
        self.session_label = plain_label("", self, "Session")
        self.details_label = plain_label("", self, "What would be sent")
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.system_label = plain_label("System prompt:", self, "System prompt label")
        self.system = QPlainTextEdit(self)
        self.system.setAccessibleName("System prompt")
        self.system.setReadOnly(True)
        self.system.setFont(fixed)
        self.system.setMaximumHeight(90)
        self.messages = QPlainTextEdit(self)
        self.messages.setAccessibleName("Messages")
        self.messages.setReadOnly(True)
        self.messages.setFont(fixed)
        header, buttons, (self.send_button, self.decline_button) = self.answer_buttons(
            (("Send to the model", "Send to the model"), ("Decline", "Decline")),
            "Ctrl+Enter: send · Esc: decline", lambda: self._answer(True))
        self.send_button.setToolTip("Click, or press Ctrl+Enter")
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.session_label)
        layout.addWidget(self.details_label)
        layout.addWidget(self.system_label)
        layout.addWidget(self.system)
        layout.addWidget(plain_label("Messages:", self, "Messages label"))
        layout.addWidget(self.messages, 1)
        layout.addLayout(buttons)
        self.send_button.clicked.connect(lambda: self._answer(True))
        self.decline_button.clicked.connect(lambda: self._answer(False))

    def show_request(self, request: McpSamplingRequest, position: int, total: int,
                     session_title: str = "") -> None:
        self.request = request
        self.server_label.setText(one_line(
            f"The MCP server “{request.server}” asks the model to answer"))
        self.session_label.setText(one_line(
            f"For the run of the session “{session_title or 'Untitled session'}”"))
        self.details_label.setText(one_line(
            f"Model {request.model}, at most {request.max_tokens:,} tokens of answer. The "
            "tokens and their cost count against this run's budgets."))
        self.system.setPlainText(visible(request.system))
        self.system.setVisible(bool(request.system))
        self.system_label.setVisible(bool(request.system))
        self.messages.setPlainText(shown_messages(request))
        self.update_count(position, total)
        self.arming.start()

    def _answer(self, approve: bool) -> None:
        if self.request is not None and self.armed and self.isVisible():
            self.answered.emit(approve)

    def reject(self) -> None:
        """Esc or the close button: decline (nothing is sent)."""
        if self.request is not None and self.isVisible():
            self.answered.emit(False)

    def closeEvent(self, event: QCloseEvent) -> None:
        event.ignore()
        self.reject()
