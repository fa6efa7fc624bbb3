"""The first-run panel: shown while no API key is set; explains what is needed."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

WELCOME = (
    "<h2>Welcome to Reins</h2>"
    "<p>Reins lets an AI assistant work in a folder on your computer while you keep hold "
    "of the reins: it asks before it writes files or runs commands, and every tool call is "
    "shown in the timeline.</p>"
    "<p>To start, Reins needs an <b>Anthropic API key</b> (or the address of an "
    "Anthropic-compatible server). The key is kept in your system keyring.</p>"
    "<p>Your past sessions stay browsable in the sidebar without a key.</p>"
)


class WelcomePanel(QWidget):
    open_settings = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Welcome")
        text = QLabel(WELCOME, self)
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        text.setMaximumWidth(560)
        self.button = QPushButton("Open &Settings…", self)
        self.button.setAccessibleName("Open settings to add an API key")
        self.button.clicked.connect(self.open_settings)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(text, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)
