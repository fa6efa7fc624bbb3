"""The prompt box: Enter sends, Shift+Enter adds a line, Esc stops the run, dropped files
are mentioned by path."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget


class PromptEdit(QPlainTextEdit):
    submitted = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Prompt")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a line, Esc stops the run")
        self.setPlaceholderText("Ask Reins… (Enter to send, Shift+Enter for a new line)")
        self.setTabChangesFocus(True)
        self.setAcceptDrops(True)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            return
        if key == Qt.Key.Key_Escape:
            self.cancel_requested.emit()
            return
        super().keyPressEvent(event)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        paths = [url.toLocalFile() for url in source.urls() if url.isLocalFile()]
        if paths:
            self.insertPlainText(" ".join(_quote(p) for p in paths))
            return
        super().insertFromMimeData(source)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
            return
        super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        if event.mimeData().hasUrls():
            self.insertFromMimeData(event.mimeData())
            event.acceptProposedAction()
            return
        super().dropEvent(event)


def _quote(path: str) -> str:
    return f'"{path}"' if any(c.isspace() for c in path) else path


class PromptBox(QWidget):
    """The prompt editor with Send and Stop buttons."""

    send = Signal(str)
    stop = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = PromptEdit(self)
        self.edit.setMaximumHeight(120)
        self.send_button = QPushButton("&Send", self)
        self.send_button.setAccessibleName("Send prompt")
        self.stop_button = QPushButton("S&top", self)
        self.stop_button.setAccessibleName("Stop the run")
        self.stop_button.setToolTip("Stop the run (Esc)")
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.addWidget(self.edit, 1)
        layout.addLayout(buttons)
        self.edit.submitted.connect(self._submit)
        self.edit.cancel_requested.connect(self._stop)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self._stop)
        self.set_running(False)

    def set_running(self, running: bool) -> None:
        self.stop_button.setEnabled(running)
        self.send_button.setEnabled(not running)

    def set_enabled_for_input(self, enabled: bool, reason: str = "") -> None:
        self.edit.setReadOnly(not enabled)
        self.send_button.setEnabled(enabled and not self.stop_button.isEnabled())
        if reason:
            self.edit.setPlaceholderText(reason)

    def _submit(self) -> None:
        text = self.edit.toPlainText().strip()
        if not text or not self.send_button.isEnabled():
            return
        self.edit.clear()
        self.send.emit(text)

    def _stop(self) -> None:
        if self.stop_button.isEnabled():
            self.stop.emit()
