"""The first-run panel: shown while no API key is set; explains what is needed and where
the key will be kept (the system keyring; with none, memory for this run or — if the user
chooses — a file only they can read), and offers the built-in demo model, which needs no
key, so a person sees what Reins does first."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from kernel.shared.demo import DEMO_LABEL

TEXT_WIDTH = 560

IN_KEYRING = "Settings keeps the key in your system keyring, never in a file."
IN_MEMORY = ("This system has no keyring, so a key entered in Settings is kept in memory for "
             "this run of Reins only, unless you tick the box there that keeps it in a file "
             "only you can read. ANTHROPIC_API_KEY works too.")
DEMO_TEXT = (f"<p><b>No key yet?</b> Try the <b>{DEMO_LABEL}</b>: a short script that "
             "answers, uses a tool, asks before it writes a file and shows each step in the "
             "timeline. It works in a scratch folder Reins makes, and sends nothing anywhere."
             "</p>")


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
        f"</p>{DEMO_TEXT}<p>Your past sessions stay browsable in the sidebar without a key.</p>")


class WelcomePanel(QWidget):
    open_settings = Signal()
    try_demo = Signal()
    """The user chose the demo model (a new demo session in a scratch folder)."""

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
        self.demo_button = QPushButton("Try the &demo (no key needed)", self)
        self.demo_button.setAccessibleName("Try the demo model, no key needed")
        self.demo_button.clicked.connect(self.try_demo)
        row = QHBoxLayout()  # centred by stretches: a wrapped label given an alignment
        row.addStretch(1)    # in a box layout gets a wrong height and is cut off
        row.addWidget(self.text, 10)
        row.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.button)
        buttons.addWidget(self.demo_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addLayout(buttons)
        layout.addStretch(2)

    def set_keyring(self, available: bool) -> None:
        self.text.setText(welcome_text(available))

    def set_kernel_ready(self, ready: bool) -> None:
        """The demo runs in the kernel: its button waits for it."""
        self.demo_button.setEnabled(ready)
        self.demo_button.setToolTip("" if ready else "Waiting for the kernel to start…")
