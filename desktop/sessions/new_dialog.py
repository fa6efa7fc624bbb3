"""The new-session dialog: a workspace folder and a mode.

No folder is filled in by the app's own choice (the last workspace used, if any, is): a
session's tools read and write its workspace, so the user picks it — or ticks *No folder*,
and the session works in a new scratch folder Reins makes (AppPaths.scratch), which can be
swapped for a real folder later (the conversation's *Choose folder…*). A folder that
`kernel.shared.workspace.broad_workspace_reason` calls too broad (the home folder, `/`, a system
folder) can only be chosen by ticking a box that says what it exposes; the kernel refuses
such a session without that confirmation.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.mode_picker import mode_picker
from kernel.shared.workspace import broad_workspace_reason


class NewSessionDialog(QDialog):
    """Asks for the workspace folder and the mode of a new session."""

    def __init__(self, parent: QWidget | None, workspace: str, mode: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("New session")
        self.setAccessibleName("New session")
        self.setMinimumWidth(520)
        self.workspace_edit = QLineEdit(workspace, self)
        self.workspace_edit.setAccessibleName("Workspace folder")
        self.workspace_edit.setPlaceholderText("The project folder Reins may work in")
        browse = QPushButton("&Browse…", self)
        browse.setAccessibleName("Choose workspace folder")
        browse.clicked.connect(self._browse)
        self.mode_combo = mode_picker(self)  # (each mode with what it allows)
        self.mode_combo.setAccessibleName("Mode")
        self.mode_combo.setCurrentText(mode)
        self.problem = QLabel(self)
        self.problem.setAccessibleName("Why this folder cannot be used")
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setWordWrap(True)
        self.broad_box = QCheckBox(self)
        self.broad_box.setAccessibleName("Confirm a broad workspace")
        self.broad_label = QLabel(self)
        self.broad_label.setTextFormat(Qt.TextFormat.PlainText)
        self.broad_label.setWordWrap(True)
        self.broad_label.setBuddy(self.broad_box)
        broad_row = QHBoxLayout()
        broad_row.addWidget(self.broad_box, 0, Qt.AlignmentFlag.AlignTop)
        broad_row.addWidget(self.broad_label, 1)
        row = QHBoxLayout()
        row.addWidget(self.workspace_edit, 1)
        row.addWidget(browse)
        form = QFormLayout()
        workspace_label = QLabel("&Workspace:", self)
        workspace_label.setBuddy(self.workspace_edit)
        form.addRow(workspace_label, row)
        self.scratch_box = QCheckBox(
            "No folder &yet: work in a new scratch folder Reins makes (you can choose a real "
            "folder later)", self)
        self.scratch_box.setAccessibleName("Work in a scratch folder")
        self.scratch_box.toggled.connect(self.workspace_edit.setDisabled)
        self.scratch_box.toggled.connect(browse.setDisabled)
        form.addRow("", self.scratch_box)
        form.addRow("&Mode:", self.mode_combo)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self._accept_if_valid)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addLayout(broad_row)
        layout.addWidget(self.buttons)
        self.workspace_edit.textChanged.connect(self._validate)
        self.broad_box.toggled.connect(self._validate)
        self.scratch_box.toggled.connect(self._validate)
        self._broad: str | None = None
        self._validate()
        self._picker: QFileDialog | None = None
        self.workspace_edit.selectAll()  # typing a path replaces the one offered
        self.workspace_edit.setFocus()

    def workspace(self) -> str:
        text = self.workspace_edit.text().strip()
        return str(Path(text).expanduser()) if text else ""

    def scratch(self) -> bool:
        """The session works in a scratch folder the kernel makes (no folder chosen)."""
        return self.scratch_box.isChecked()

    def mode(self) -> str:
        return self.mode_combo.currentText()

    def broad_confirmed(self) -> bool:
        """The folder is broad and the user ticked the box that says what it exposes."""
        return self._broad is not None and self.broad_box.isChecked()

    def _problem(self) -> str:
        workspace = self.workspace()
        if self.scratch():
            return ""
        if not workspace:
            return ("Choose the folder of the project Reins should work in, or tick "
                    "“No folder yet”.")
        if not Path(workspace).is_dir():
            return f"{workspace} is not an existing folder."
        return ""

    def _validate(self) -> None:
        problem = self._problem()
        broad = None if problem or self.scratch() else broad_workspace_reason(self.workspace())
        if broad != self._broad:
            self._broad = broad
            self.broad_box.setChecked(False)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.broad_label.setText(
            f"I understand: {broad}. Every one of them can be read without asking in ask "
            "mode, and changed in auto modes." if broad else "")
        self.broad_box.setVisible(broad is not None)
        self.broad_label.setVisible(broad is not None)
        ok = not problem and (broad is None or self.broad_box.isChecked())
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    def _accept_if_valid(self) -> None:
        if self.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled():
            self.accept()

    def _browse(self) -> None:
        start = self.workspace() or str(Path.home())
        self._picker = QFileDialog(self, "Choose the workspace folder", start)
        self._picker.setFileMode(QFileDialog.FileMode.Directory)
        self._picker.setOption(QFileDialog.Option.ShowDirsOnly)
        self._picker.fileSelected.connect(self.workspace_edit.setText)
        self._picker.open()
