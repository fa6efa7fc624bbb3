"""Find in the conversation (Ctrl+F): a bar over the chat's top right, and where the words
occur in the messages as shown (case-insensitive, across every message of the session)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextDocument
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from desktop.chat.model import ChatItem, MessageItem


@dataclass(frozen=True)
class Match:
    row: int
    piece: int
    start: int
    end: int


def find_matches(items: list[ChatItem], needle: str, width: float) -> list[Match]:
    """Every occurrence of `needle` in the messages' pieces, in order (messages are laid
    out at `width` first if they were never shown)."""
    if not needle:
        return []
    matches: list[Match] = []
    for row, item in enumerate(items):
        if not isinstance(item, MessageItem):
            continue
        item.layout(width)
        for index, doc in enumerate(item.documents()):
            cursor = doc.find(needle, 0)
            while not cursor.isNull():
                matches.append(Match(row, index, cursor.selectionStart(), cursor.selectionEnd()))
                cursor = doc.find(needle, cursor, QTextDocument.FindFlag(0))
    return matches


class FindEdit(QLineEdit):
    previous = Signal()
    closed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.closed.emit()
            return
        if (event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.previous.emit()
            return
        super().keyPressEvent(event)


class FindBar(QFrame):
    """The search field, "n of m", previous/next and close."""

    search = Signal(str)
    step = Signal(int)
    """+1 next match, -1 previous."""
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Find in conversation")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.edit = FindEdit(self)
        self.edit.setAccessibleName("Find text")
        self.edit.setPlaceholderText("Find in conversation")
        self.edit.setClearButtonEnabled(True)
        self.count = QLabel("", self)
        self.count.setAccessibleName("Matches")
        self.count.setTextFormat(Qt.TextFormat.PlainText)
        self.count.setMinimumWidth(70)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.count)
        for text, name, delta in (("↑", "Previous match (Shift+Enter)", -1),
                                  ("↓", "Next match (Enter)", 1)):
            button = QToolButton(self)
            button.setText(text)
            button.setAccessibleName(name)
            button.setToolTip(name)
            button.clicked.connect(lambda _=False, d=delta: self.step.emit(d))
            layout.addWidget(button)
        close = QToolButton(self)
        close.setText("✕")
        close.setAccessibleName("Close find (Esc)")
        close.setToolTip("Close (Esc)")
        close.clicked.connect(self.closed)
        layout.addWidget(close)
        self.edit.textChanged.connect(self.search)
        self.edit.returnPressed.connect(lambda: self.step.emit(1))
        self.edit.previous.connect(lambda: self.step.emit(-1))
        self.edit.closed.connect(self.closed)
        self.hide()

    def open(self) -> None:
        self.show()
        self.raise_()
        self.edit.setFocus()
        self.edit.selectAll()

    def show_count(self, current: int, total: int) -> None:
        if not self.edit.text():
            self.count.setText("")
        elif total == 0:
            self.count.setText("no matches")
        else:
            self.count.setText(f"{current + 1} of {total}")
