"""What the form and sampling dialogs share: a bold line naming the server, a count of the
requests waiting, answer buttons no keystroke presses (`desktop.approval.deliberate`), and a
chord (Ctrl+Enter) for the first answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from desktop.approval.deliberate import Arming, DeliberateButton, QuietDialog


def plain_label(text: str, parent: QWidget, name: str, *, wrap: bool = True) -> QLabel:
    """A label that shows `text` as it is (never rich text)."""
    label = QLabel(text, parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(wrap)
    label.setAccessibleName(name)
    return label


class RequestDialog(QuietDialog):
    """A non-modal dialog answering one server request at a time."""

    noun = "requests"
    """What the count counts ("2 of 3 forms")."""

    def __init__(self, parent: QWidget | None, name: str) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.server_label = plain_label("", self, "Server", wrap=False)
        font = self.server_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.server_label.setFont(font)
        self.count_label = plain_label("", self, f"Pending {self.noun}", wrap=False)
        self.arming = Arming(self)

    def answer_buttons(self, labels: Sequence[tuple[str, str]], hint: str,
                       chord: Callable[[], None]) -> tuple[QHBoxLayout, QHBoxLayout,
                                                           list[DeliberateButton]]:
        """The header (server, count), the row of answer buttons (`labels`: text and
        accessible name; the first left, the others right after `hint`), and the buttons;
        Ctrl+Enter calls `chord`."""
        buttons = []
        for text, name in labels:
            button = DeliberateButton(text, self)
            button.setAccessibleName(name)
            buttons.append(button)
        self.arming.watch(buttons)
        header = QHBoxLayout()
        header.addWidget(self.server_label, 1)
        header.addWidget(self.count_label)
        row = QHBoxLayout()
        row.addWidget(buttons[0])
        row.addStretch(1)
        keys = plain_label(hint, self, "Keys of this dialog", wrap=False)
        keys.setEnabled(False)  # drawn muted
        row.addWidget(keys)
        for button in buttons[1:]:
            row.addWidget(button)
        for keys_text in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys_text), self, chord)
        return header, row, buttons

    @property
    def armed(self) -> bool:
        """The request has been on screen long enough to be answered."""
        return self.arming.armed

    def update_count(self, position: int, total: int) -> None:
        self.count_label.setText(f"{position} of {total} {self.noun}" if total > 1 else "")
        self.count_label.setVisible(total > 1)
