"""The prompt box: Enter sends, Shift+Enter adds a line, Esc stops the run (or leaves the
editing of the last message; while an approval waits, the controller makes it "decide
later" instead); files dropped or pasted (and a pasted image) are attached as
chips above it (desktop.chat.attach), a dropped folder is mentioned by path. Attach…
opens in the session's workspace (`set_workspace`), not in the process's folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeyEvent,
    QPalette,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.chat.attach import AttachmentTray, Chip, Kept, image_bytes, local_files
from desktop.chat.documents import reading_font

SEND_SIZE = 32
EDIT_LINES = (2, 10)
"""The prompt's least and most lines shown (it grows with what is typed)."""
COMPOSER_SIDE = 16
COMPOSER_WIDTH = 800
"""The composer's widest (the conversation's column and a little more)."""


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
        self.setFont(reading_font())
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
    """The composer: one rounded box holding the prompt, the attachments' chips and a row
    of controls (attach, the model and mode pickers the window puts in with `add_controls`,
    and Send, which becomes Stop while a run goes). `send` (a new prompt) or
    `edit_submitted` (the last message, edited) carry the text; the attachments are taken
    with `take_attachments`."""

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
        self.frame = QFrame(self)
        self.frame.setObjectName("composer")
        self.edit = PromptEdit(self.frame)
        self.edit.setObjectName("composerEdit")
        self.edit.setFrameShape(QFrame.Shape.NoFrame)
        self.edit.document().contentsChanged.connect(self._fit_height)
        self.send_button = QPushButton(self.frame)
        self.send_button.setObjectName("sendButton")
        self.send_button.setAccessibleName("Send prompt")
        self.send_button.setToolTip("Send (Enter)")
        self.stop_button = QPushButton(self.frame)
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setAccessibleName("Stop the run")
        self.stop_button.setToolTip("Stop the run (Esc)")
        self.attach_button = QToolButton(self.frame)
        self.attach_button.setObjectName("attachButton")
        self.attach_button.setAccessibleName("Attach files or images")
        self.attach_button.setToolTip("Attach files or images (or drop them here, or paste)")
        self.attach_button.setAutoRaise(True)
        self.attach_button.clicked.connect(self.choose_files)
        for button in (self.send_button, self.stop_button):
            button.setFixedSize(SEND_SIZE, SEND_SIZE)
        self.tray = AttachmentTray(self.frame)
        self.editing_label = QLabel("Editing your last message — Esc leaves it as it was",
                                    self.frame)
        self.editing_label.setAccessibleName("Editing the last message")
        self.editing_label.hide()
        self.editing = False
        self._saved: tuple[str, list[Chip]] = ("", [])
        self.workspace = ""
        """The shown session's folder, where Attach… opens ("" before a session)."""
        self.controls = QHBoxLayout()
        self.controls.setSpacing(6)
        self.controls.addWidget(self.attach_button)
        self.controls.addStretch(1)
        self.controls.addWidget(self.stop_button)
        self.controls.addWidget(self.send_button)
        column = QVBoxLayout(self.frame)
        column.setContentsMargins(14, 10, 10, 8)
        column.setSpacing(4)
        column.addWidget(self.editing_label)
        column.addWidget(self.tray)
        column.addWidget(self.edit, 1)
        column.addLayout(self.controls)
        self._outer = QHBoxLayout(self)
        self._outer.setContentsMargins(COMPOSER_SIDE, 4, COMPOSER_SIDE, 12)
        self._outer.addWidget(self.frame, 1)
        self.edit.files_given.connect(self.attach_files)
        self.edit.image_given.connect(self.tray.add_image)
        self.edit.edit_last.connect(self.edit_last_requested)
        self.edit.submitted.connect(self._submit)
        self.edit.cancel_requested.connect(self._escape)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stop)
        self.restyle()
        self._fit_height()
        self.set_running(False)

    def _fit_height(self) -> None:
        """As tall as its text, from EDIT_LINES[0] to EDIT_LINES[1] lines (then it scrolls)."""
        lines = int(self.edit.document().documentLayout().documentSize().height())
        shown = min(max(lines, EDIT_LINES[0]), EDIT_LINES[1])
        margins = self.edit.contentsMargins()
        height = (shown * self.edit.fontMetrics().lineSpacing() + margins.top()
                  + margins.bottom() + 2 * int(self.edit.document().documentMargin()))
        if self.edit.height() != height:
            self.edit.setFixedHeight(height)

    def add_controls(self, *widgets: QWidget) -> None:
        """Put pickers (model, mode) in the composer's row, after Attach."""
        for offset, widget in enumerate(widgets, 1):
            self.controls.insertWidget(offset, widget)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """The composer is as wide as the conversation's column, centred under it."""
        super().resizeEvent(event)
        spare = self.width() - 2 * COMPOSER_SIDE - COMPOSER_WIDTH
        side = COMPOSER_SIDE + max(0, spare // 2)
        if self._outer.contentsMargins().left() != side:
            self._outer.setContentsMargins(side, 4, side, 12)

    def restyle(self) -> None:
        """The rounded box and the round Send/Stop in the palette's colours."""
        from desktop.icons import icon
        from desktop.theme import mix

        palette = QGuiApplication.palette()
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        accent = palette.color(QPalette.ColorRole.Highlight)
        on_accent = palette.color(QPalette.ColorRole.HighlightedText)
        border = mix(base, text, 0.22)
        sheet = (
            f"#composer {{ background: {base.name()}; border: 1px solid {border.name()};"
            " border-radius: 18px; }"
            " #composerEdit { background: transparent; }"
            f" #sendButton, #stopButton {{ background: {accent.name()};"
            f" border: none; border-radius: {SEND_SIZE // 2}px; }}"
            f" #sendButton:disabled {{ background: {mix(base, text, 0.18).name()}; }}"
            f" #stopButton {{ background: {text.name()}; }}"
            " #composer QComboBox { border: 1px solid transparent; border-radius: 8px;"
            f" padding: 2px 8px; background: transparent; color: {text.name()}; }}"
            f" #composer QComboBox:hover {{ border-color: {border.name()}; }}")
        if sheet == self.frame.styleSheet():  # (a new sheet is a palette change: once only)
            return
        self.frame.setStyleSheet(sheet)
        self.send_button.setIcon(icon("send", on_accent, 18))
        self.stop_button.setIcon(icon("stop", base, 16))
        self.attach_button.setIcon(icon("attach", mix(text, base, 0.3), 20))

    def set_running(self, running: bool) -> None:
        """Send becomes Stop while a run goes (one place, one button)."""
        self.stop_button.setEnabled(running)
        self.send_button.setEnabled(not running)
        self.stop_button.setVisible(running)
        self.send_button.setVisible(not running)

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
    def set_workspace(self, folder: str) -> None:
        self.workspace = folder

    def choose_files(self) -> None:
        """Ask for files to attach, starting in the workspace (the home folder when there is
        none or it is gone); the dialog is window-modal and answers through a signal."""
        from PySide6.QtWidgets import QFileDialog  # its Python type only when asked

        start = self.workspace if self.workspace and Path(self.workspace).is_dir() \
            else str(Path.home())
        dialog = QFileDialog(self, "Attach files or images", start)
        dialog.setObjectName("attachDialog")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.filesSelected.connect(self.attach_files)
        dialog.open()

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
