"""The line above the conversation that says plainly what a newcomer's session is: one that
works in a scratch folder Reins made (with *Choose folder…* to give it a real one), and one
that talks to the demo model (with *Add a key…*). Hidden for an ordinary session."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


@dataclass(frozen=True)
class WorkspaceNote:
    text: str
    choose_folder: bool
    add_key: bool


def workspace_note(workspace: str, *, scratch: bool, demo: bool, keyed: bool = False
                   ) -> WorkspaceNote | None:
    """What the bar says about a session (None: nothing to say); `keyed`: a real model can
    be used now (a key or a server is set)."""
    parts = []
    if demo and keyed:
        parts.append("Demo model: a script, not an AI. A key is set now: pick a real model "
                     "in the status bar, or start a new session (Ctrl+N).")
    elif demo:
        parts.append("Demo model: a script, not an AI, that shows what Reins does. Add a key "
                     "to work with a real model.")
    if scratch:
        parts.append(f"Working in a scratch folder Reins made: {workspace}. Choose a folder to "
                     "work on your own files from the next message on.")
    if not parts:
        return None
    return WorkspaceNote(" ".join(parts), scratch, demo and not keyed)


class WorkspaceBar(QFrame):
    choose_folder = Signal()
    add_key = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("About this session's folder and model")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.folder_button = QPushButton("C&hoose folder…", self)
        self.folder_button.setAccessibleName("Choose a folder for this session")
        self.folder_button.clicked.connect(self.choose_folder)
        self.key_button = QPushButton("Add a &key…", self)
        self.key_button.setAccessibleName("Open settings to add an API key")
        self.key_button.clicked.connect(self.add_key)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.folder_button, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.key_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.hide()

    def show_note(self, note: WorkspaceNote | None) -> None:
        if note is None:
            self.hide()
            return
        self.label.setText(note.text)
        self.folder_button.setVisible(note.choose_folder)
        self.key_button.setVisible(note.add_key)
        self.show()
