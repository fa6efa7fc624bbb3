"""What floats on the conversation: the empty state (the workspace, what the mode allows, a
few prompts to start from), the "jump to latest" button, and a turn's actions (copy the
answer; retry the last one). Real widgets on the view's viewport, placed by the view."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from desktop.icons import icon, icon_pixmap
from desktop.theme import mix
from desktop.words import MODE_ALLOWS
from kernel.modes import MODE_NAMES, Mode
from kernel.visible import one_line

SUGGESTIONS = (
    "Explain what this project does and how it is laid out",
    "Find out why the tests fail and fix it",
    "Review my uncommitted changes",
    "Write a README for this folder",
)
"""Prompts to start from (a click puts one in the composer, to send or change)."""
JUMP_SIZE = 34
SUGGESTIONS_WIDTH = 560


def _quiet() -> str:
    palette = QGuiApplication.palette()
    return mix(palette.color(QPalette.ColorRole.Text), palette.color(QPalette.ColorRole.Base),
               0.4).name()


class EmptyState(QWidget):
    """A new chat's page: where Reins works, what it may do there, and where to begin."""

    suggestion = Signal(str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAccessibleName("Start of the conversation")
        self.title = QLabel("What should Reins do?", self)
        font = self.title.font()
        font.setPixelSize(24)
        self.title.setFont(font)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.workspace = QLabel(self)
        self.workspace.setAccessibleName("Workspace")
        self.workspace.setTextFormat(Qt.TextFormat.PlainText)
        self.workspace.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.mode = QLabel(self)
        self.mode.setAccessibleName("What the mode allows")
        self.mode.setTextFormat(Qt.TextFormat.PlainText)
        self.mode.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.mode.setWordWrap(True)
        self.buttons: list[QPushButton] = []
        column = QWidget(self)
        column.setMaximumWidth(SUGGESTIONS_WIDTH)
        grid = QVBoxLayout(column)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(8)
        for text in SUGGESTIONS:
            button = QPushButton(text, column)
            button.setObjectName("suggestion")
            button.setAccessibleName(f"Suggested prompt: {text}")
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.clicked.connect(lambda _c=False, text=text: self.suggestion.emit(text))
            self.buttons.append(button)
            grid.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        layout.addStretch(1)
        layout.addWidget(self.title)
        layout.addWidget(self.workspace)
        layout.addWidget(self.mode)
        layout.addSpacing(14)
        layout.addWidget(column, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)
        self.set_context("", "")
        self.restyle()

    def set_context(self, workspace: str, mode: str) -> None:
        """The session's folder and mode ("" for none: a session is made on sending)."""
        self.workspace.setText(f"Working in {one_line(workspace)}" if workspace else
                               "Your first message asks which folder to work in")
        allows = MODE_ALLOWS.get(mode, "")
        self.mode.setText(f"{MODE_NAMES[Mode(mode)]} mode: {allows}" if allows else "")
        self.mode.setVisible(bool(allows))

    def restyle(self) -> None:
        palette = QGuiApplication.palette()
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        quiet = _quiet()
        self.setStyleSheet(
            f"QLabel {{ color: {quiet}; background: transparent; }}"
            f" QPushButton#suggestion {{ text-align: left; padding: 9px 14px;"
            f" border: 1px solid {mix(base, text, 0.16).name()}; border-radius: 12px;"
            f" background: {base.name()}; color: {text.name()}; }}"
            f" QPushButton#suggestion:hover {{ background: {mix(base, text, 0.05).name()}; }}")
        self.title.setStyleSheet(f"color: {text.name()};")


class JumpButton(QToolButton):
    """A round button over the end of the conversation, shown while the user reads above."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAccessibleName("Jump to latest")
        self.setToolTip("Jump to the latest message (Ctrl+End)")
        self.setFixedSize(JUMP_SIZE, JUMP_SIZE)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.restyle()
        self.hide()

    def restyle(self) -> None:
        palette = QGuiApplication.palette()
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        self.setIcon(icon("arrow-down", text, 18))
        self.setStyleSheet(
            f"QToolButton {{ background: {base.name()}; border: 1px solid"
            f" {mix(base, text, 0.22).name()}; border-radius: {JUMP_SIZE // 2}px; }}"
            f" QToolButton:hover {{ background: {mix(base, text, 0.06).name()}; }}")


class ActionStrip(QWidget):
    """Quiet icon-and-word buttons under or beside a message, shown on hover: a turn's Copy
    and Retry (the last answer only), the user's message's Copy and Edit (the last one)."""

    def __init__(self, parent: QWidget, name: str,
                 buttons: tuple[tuple[str, str, str], ...]) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.row = -1
        """The row whose actions these are (-1: none)."""
        self.buttons = [self._button(*spec) for spec in buttons]
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        for button in self.buttons:
            layout.addWidget(button)
        layout.addStretch(1)
        self.restyle()
        self.hide()

    def _button(self, text: str, name: str, tip: str) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setProperty("icon-name", name)
        button.setAccessibleName(tip)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        return button

    def restyle(self) -> None:
        palette = QGuiApplication.palette()
        quiet = mix(palette.color(QPalette.ColorRole.Text),
                    palette.color(QPalette.ColorRole.Base), 0.4)
        for button in self.buttons:
            button.setIcon(icon(str(button.property("icon-name")), quiet, 15))
        sheet = f"QToolButton {{ color: {quiet.name()}; padding: 2px 6px; border-radius: 6px; }}"
        if sheet != self.styleSheet():
            self.setStyleSheet(sheet)


class TurnActions(ActionStrip):
    """Under a turn's last row: the answer's versions (‹ 1/2 ›, when it has earlier ones),
    Copy (the turn's answer), Retry (the last answer), and, quietly, the model that wrote
    it."""

    version_step = Signal(int)
    """‹ (-1) or › (+1): the previous or next version of the turn's answer."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, "Answer actions", (
            ("Copy", "copy", "Copy this answer"),
            ("Retry", "retry", "Ask for this answer again")))
        self.earlier = self._step("chevron-left", "Previous version (Alt+Left)", -1)
        self.count = QLabel(self)
        self.count.setAccessibleName("Version")
        self.later = self._step("chevron-right", "Next version (Alt+Right)", 1)
        self.model = QLabel(self)
        self.model.setAccessibleName("Model")
        self.model.setTextFormat(Qt.TextFormat.PlainText)
        layout = self.layout()
        assert isinstance(layout, QHBoxLayout)
        for position, widget in enumerate((self.earlier, self.count, self.later)):
            layout.insertWidget(position, widget)
        layout.insertSpacing(3, 6)
        layout.addWidget(self.model)
        self.set_versions(None)
        self.restyle()

    def _step(self, name: str, tip: str, step: int) -> QToolButton:
        button = QToolButton(self)
        button.setProperty("icon-name", name)
        button.setAccessibleName(tip.split(" (")[0])
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.clicked.connect(lambda: self.version_step.emit(step))
        return button

    def set_versions(self, shown: tuple[int, int] | None, note: str = "", *,
                     locked: bool = False) -> None:
        """Version `shown[0]` of `shown[1]` (1-based; None: the answer has no others), and
        what the model sees when it is not the one shown; `locked`: none can be chosen now
        (an approval waits)."""
        for widget in (self.earlier, self.count, self.later):
            widget.setVisible(shown is not None)
        if shown is not None:
            self.count.setText(f"{shown[0]}/{shown[1]}")
            self.earlier.setEnabled(shown[0] > 1 and not locked)
            self.later.setEnabled(shown[0] < shown[1] and not locked)
        self.count.setToolTip(note)
        self.note = note

    def set_model(self, name: str) -> None:
        """The model that wrote the answer (its friendly name); the note of an older version
        shown for reading takes its place."""
        self.model.setText(self.note or name)
        self.model.setToolTip(
            "An earlier version, shown for reading: the model is sent the one the chat goes "
            "on from" if self.note else (f"Written by {name}" if name else ""))
        self.model.setVisible(bool(self.note or name))

    def restyle(self) -> None:
        super().restyle()
        if not hasattr(self, "model"):
            return
        quiet = _quiet()
        palette = QGuiApplication.palette()
        text, base = palette.color(QPalette.ColorRole.Text), palette.color(QPalette.ColorRole.Base)
        for button in (self.earlier, self.later):
            name = str(button.property("icon-name"))
            step = icon(name, mix(text, base, 0.2), 16)
            for ratio in (1.0, 2.0):  # (no further version that way: fainter than Qt's grey)
                step.addPixmap(icon_pixmap(name, mix(text, base, 0.8), 16, ratio),
                               QIcon.Mode.Disabled)
            button.setIcon(step)
        for label in (self.count, self.model):
            label.setStyleSheet(f"color: {quiet}; background: transparent; padding: 0 4px;")


def turn_actions(parent: QWidget) -> TurnActions:
    """Under a turn's last row: its versions, Copy, Retry (the last answer), its model."""
    return TurnActions(parent)


def message_actions(parent: QWidget) -> ActionStrip:
    """Beside the user's message: Copy, and Edit for the last one."""
    return ActionStrip(parent, "Message actions", (
        ("Copy", "copy", "Copy this message"), ("Edit", "edit", "Edit your last message")))
