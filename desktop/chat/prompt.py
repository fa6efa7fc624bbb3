"""The prompt box: Enter sends, Shift+Enter adds a line, Esc stops the run (or leaves the
editing of the last message; while an approval waits, the controller makes it "decide
later" instead); files dropped or pasted (and a pasted image) are attached as
chips above it (desktop.chat.attach), a dropped folder is mentioned by path."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.chat.attach import AttachmentTray, Chip, Kept, image_bytes, local_files


class PromptEdit(QPlainTextEdit):
    submitted = Signal()
    cancel_requested = Signal()
    files_given = Signal(list)
    """Local files dropped or pasted: to attach."""
    image_given = Signal(bytes)
    """An image pasted from the clipboard (PNG bytes): to attach."""
    edit_last = Signal()
    """Up in an empty prompt: edit the last message sent."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Prompt")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a line, Esc stops the run "
                                      "(while an approval waits, it decides later), Up in an "
                                      "empty prompt edits your last message")
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
        if key == Qt.Key.Key_Up and not event.modifiers() and not self.toPlainText():
            self.edit_last.emit()
            return
        super().keyPressEvent(event)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasUrls() or source.hasImage() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        paths = local_files(source)
        if paths:
            self.files_given.emit(paths)
            return
        if source.hasImage():
            self.image_given.emit(image_bytes(source.imageData()))
            return
        super().insertFromMimeData(source)

    def mention(self, paths: list[str]) -> None:
        """Name these paths in the prompt (folders: they are not attached)."""
        self.insertPlainText(" ".join(_quote(p) for p in paths))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()
            return
        super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            self.insertFromMimeData(event.mimeData())
            event.acceptProposedAction()
            return
        super().dropEvent(event)


def _quote(path: str) -> str:
    return f'"{path}"' if any(c.isspace() for c in path) else path


class PromptBox(QWidget):
    """The prompt editor with Send, Stop and Attach buttons, and the attachments' chips.
    `send` (a new prompt) or `edit_submitted` (the last message, edited) carry the text; the
    attachments are taken with `take_attachments`."""

    send = Signal(str)
    stop = Signal()
    """The Stop button: stop the run."""
    escaped = Signal()
    """Esc in the prompt during a run: the controller stops it, unless an approval waits."""
    edit_submitted = Signal(str)
    edit_last_requested = Signal()
    """Up in the empty prompt box: the last message, to edit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = PromptEdit(self)
        self.edit.setMaximumHeight(120)
        self.send_button = QPushButton("&Send", self)
        self.send_button.setAccessibleName("Send prompt")
        self.stop_button = QPushButton("S&top", self)
        self.stop_button.setAccessibleName("Stop the run")
        self.stop_button.setToolTip("Stop the run (Esc)")
        self.attach_button = QPushButton("Attach…", self)
        self.attach_button.setAccessibleName("Attach files or images")
        self.attach_button.setToolTip("Attach files or images (or drop them here, or paste)")
        self.attach_button.clicked.connect(self.choose_files)
        self.tray = AttachmentTray(self)
        self.editing_label = QLabel("Editing your last message — Esc leaves it as it was", self)
        self.editing_label.setAccessibleName("Editing the last message")
        self.editing_label.hide()
        self.editing = False
        self._saved: tuple[str, list[Chip]] = ("", [])
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.attach_button)
        column = QVBoxLayout()
        column.setSpacing(2)
        column.addWidget(self.editing_label)
        column.addWidget(self.tray)
        column.addWidget(self.edit, 1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.addLayout(column, 1)
        layout.addLayout(buttons)
        self.edit.files_given.connect(self.attach_files)
        self.edit.image_given.connect(self.tray.add_image)
        self.edit.edit_last.connect(self.edit_last_requested)
        self.edit.submitted.connect(self._submit)
        self.edit.cancel_requested.connect(self._escape)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stop)
        self.set_running(False)

    def set_running(self, running: bool) -> None:
        self.stop_button.setEnabled(running)
        self.send_button.setEnabled(not running)

    def set_enabled_for_input(self, enabled: bool, reason: str = "") -> None:
        self.edit.setReadOnly(not enabled)
        self.send_button.setEnabled(enabled and not self.stop_button.isEnabled())
        if reason and reason != self.edit.placeholderText():
            self.edit.setPlaceholderText(reason)
            if self.edit.isVisible():
                # Qt repaints only when the placeholder appears or goes, not when its text
                # changes: on X11 "Reading the API key…" stayed after the key was read.
                self.edit.viewport().update()

    def _submit(self) -> None:
        text = self.edit.toPlainText().strip()
        if not text or not self.send_button.isEnabled():
            return
        self.edit.clear()
        if self.editing:
            self._leave_editing()
            self.edit_submitted.emit(text)
        else:
            self.send.emit(text)

    def _escape(self) -> None:
        if self.stop_button.isEnabled():
            self.escaped.emit()
        elif self.editing:
            self.cancel_edit()

    # -- attachments and editing ------------------------------------------------------------
    def choose_files(self) -> None:
        from PySide6.QtWidgets import QFileDialog  # its Python type only when asked

        paths, _ = QFileDialog.getOpenFileNames(self, "Attach files or images")
        if paths:
            self.attach_files(paths)

    def attach_files(self, paths: list[str]) -> None:
        """Attach these files (folders are mentioned by path in the prompt instead)."""
        folders = self.tray.add_files(paths)
        if folders:
            self.edit.mention(folders)

    def take_attachments(self) -> list[Chip]:
        return self.tray.take()

    def begin_edit(self, text: str, kept: list[Kept]) -> None:
        """Edit the last message: its text in the box and its attachments as chips; sending
        emits `edit_submitted`, Esc leaves everything as it was."""
        self._saved = (self.edit.toPlainText(), self.tray.take())
        self.editing = True
        self.editing_label.show()
        self.edit.setPlainText(text)
        self.tray.set_kept(kept)
        self.edit.setFocus()
        self.edit.moveCursor(self.edit.textCursor().MoveOperation.End)

    def cancel_edit(self) -> None:
        text, chips = self._saved
        self._leave_editing()
        self.edit.setPlainText(text)
        self.tray.set_kept([])
        for chip in chips:
            self.tray.restore(chip)

    def _leave_editing(self) -> None:
        self.editing = False
        self.editing_label.hide()
