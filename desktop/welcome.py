"""The first-run panel: shown while no API key is set; explains what is needed, and where
the key will be kept (the system keyring, or — with none — memory, for this run only)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

TEXT_WIDTH = 560

IN_KEYRING = "Settings keeps the key in your system keyring, never in a file."
IN_MEMORY = ("This system has no keyring, so a key entered in Settings is kept in memory for "
             "this run of Reins only, never in a file. To keep one, start Reins with "
             "ANTHROPIC_API_KEY set.")


def welcome_text(keyring: bool) -> str:
    """The panel's text; `keyring`: whether a system keyring exists (assumed until known)."""
    return (
        "<h2>Welcome to Reins</h2>"
        "<p>Reins lets an AI assistant work in a folder on your computer while you keep hold "
        "of the reins: it asks before it writes files or runs commands, and every tool call "
        "is shown in the timeline.</p>"
        "<p>To start, Reins needs an <b>Anthropic API key</b>, or the address of an "
        f"Anthropic-compatible server (a local llama.cpp or Ollama). "
        f"{IN_KEYRING if keyring else IN_MEMORY}"
        "</p><p>Your past sessions stay browsable in the sidebar without a key.</p>")


class WelcomePanel(QWidget):
    open_settings = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Welcome")
        self.text = QLabel(welcome_text(True), self)
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setMaximumWidth(TEXT_WIDTH)
        self.text.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.button = QPushButton("Open &Settings…", self)
        self.button.setAccessibleName("Open settings to add an API key")
        self.button.clicked.connect(self.open_settings)
        row = QHBoxLayout()  # centred by stretches: a wrapped label given an alignment
        row.addStretch(1)    # in a box layout gets a wrong height and is cut off
        row.addWidget(self.text, 10)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)

    def set_keyring(self, available: bool) -> None:
        self.text.setText(welcome_text(available))
