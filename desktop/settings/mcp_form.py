"""The form that adds or edits one MCP server: name, command or URL, arguments,
environment, working folder, sandbox, timeouts.

Saving sends the entry to the kernel (`submitted`); the form stays open, saying it is
checking, until the kernel's answer: its problems are shown here in the kernel's words and
the form can be corrected; no problem closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop.settings.mcp_entry import ServerFields, entry_of, fields_of

KINDS = (("command", "Command (stdio)"), ("url", "URL (streamable HTTP)"))


class McpServerForm(QDialog):
    submitted = Signal(str, object)
    """(name, entry) to save; the answer comes back through `answer`."""

    def __init__(self, parent: QWidget | None = None, name: str = "",
                 entry: Mapping[str, Any] | None = None,
                 taken: frozenset[str] = frozenset()) -> None:
        """`name`/`entry`: the server being edited (none: a new one); `taken`: the names of
        the other configured servers."""
        super().__init__(parent)
        self.original_name = name
        self.original = dict(entry) if entry is not None else None
        self.taken = taken
        self.setWindowTitle("Edit MCP server" if entry is not None else "Add MCP server")
        self.setAccessibleName(self.windowTitle())
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.name_edit = self._line("Server name", "e.g. git")
        self.kind_combo = QComboBox(self)
        self.kind_combo.setAccessibleName("Kind of server")
        for kind, label in KINDS:
            self.kind_combo.addItem(label, kind)
        self.command_edit = self._line("Command", "e.g. uvx")
        self.args_edit = QPlainTextEdit(self)
        self.args_edit.setAccessibleName("Arguments, one per line")
        self.args_edit.setFont(fixed)
        self.args_edit.setTabChangesFocus(True)
        self.env_edit = QPlainTextEdit(self)
        self.env_edit.setAccessibleName("Environment, one NAME=value per line")
        self.env_edit.setFont(fixed)
        self.env_edit.setTabChangesFocus(True)
        self.cwd_edit = self._line("Working folder", "(optional)")
        self.sandbox_check = QCheckBox("Run it in the sandbox (bubblewrap)", self)
        self.sandbox_check.setAccessibleName("Run the server in the sandbox")
        self.url_edit = self._line("Server URL", "https://…")
        self.startup_edit = self._line("Start-up timeout in seconds", "60 (default)")
        self.tool_edit = self._line("Tool call timeout in seconds", "120 (default)")
        self.problem_label = QLabel(self)
        self.problem_label.setAccessibleName("Problems with this server")
        self.problem_label.setWordWrap(True)
        self.problem_label.setTextFormat(Qt.TextFormat.PlainText)
        self.problem_label.setStyleSheet("color: #cf222e;")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setAccessibleName("Save this server")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName(
            "Cancel editing the server")
        self.buttons.accepted.connect(self.submit)
        self.buttons.rejected.connect(self.reject)
        self.form = QFormLayout()
        rows: list[tuple[str, QWidget]] = [
            ("Name:", self.name_edit), ("Kind:", self.kind_combo),
            ("Command:", self.command_edit), ("Arguments:", self.args_edit),
            ("Environment:", self.env_edit), ("Working folder:", self.cwd_edit),
            ("", self.sandbox_check), ("URL:", self.url_edit),
            ("Start-up timeout (s):", self.startup_edit), ("Tool timeout (s):", self.tool_edit)]
        for label, widget in rows:
            self.form.addRow(label, widget)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.buttons)
        self.kind_combo.currentIndexChanged.connect(self._kind_changed)
        self.set_fields(fields_of(name, entry) if entry is not None else ServerFields())

    def _line(self, accessible: str, placeholder: str) -> QLineEdit:
        edit = QLineEdit(self)
        edit.setAccessibleName(accessible)
        edit.setPlaceholderText(placeholder)
        return edit

    def set_fields(self, fields: ServerFields) -> None:
        self.name_edit.setText(fields.name)
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(fields.kind))
        self.command_edit.setText(fields.command)
        self.args_edit.setPlainText(fields.args)
        self.env_edit.setPlainText(fields.env)
        self.cwd_edit.setText(fields.cwd)
        self.sandbox_check.setChecked(fields.sandbox)
        self.url_edit.setText(fields.url)
        self.startup_edit.setText(fields.startup_timeout_s)
        self.tool_edit.setText(fields.tool_timeout_s)
        self._kind_changed()

    def fields(self) -> ServerFields:
        return ServerFields(
            name=self.name_edit.text(), kind=self.kind_combo.currentData(),
            command=self.command_edit.text(), args=self.args_edit.toPlainText(),
            env=self.env_edit.toPlainText(), cwd=self.cwd_edit.text(),
            url=self.url_edit.text(), sandbox=self.sandbox_check.isChecked(),
            startup_timeout_s=self.startup_edit.text(), tool_timeout_s=self.tool_edit.text())

    def _kind_changed(self) -> None:
        stdio = self.kind_combo.currentData() == "command"
        for widget in (self.command_edit, self.args_edit, self.env_edit, self.cwd_edit,
                       self.sandbox_check):
            self.form.setRowVisible(widget, stdio)
        self.form.setRowVisible(self.url_edit, not stdio)

    def submit(self) -> None:
        """Check the shape here, then let the kernel check the rest (and save)."""
        fields = self.fields()
        entry, problems = entry_of(fields, self.original)
        if fields.name in self.taken:
            problems.insert(0, f"a server named {fields.name!r} is already configured: edit "
                               f"it, or choose another name")
        if problems:
            self.problem_label.setText("\n".join(problems))
            return
        self.problem_label.setText("Checking with the kernel…")
        self.save_button.setEnabled(False)
        self.submitted.emit(fields.name, entry)

    def answer(self, problems: list[str]) -> None:
        """The kernel's answer to the last submission: its problems, or none (saved)."""
        self.save_button.setEnabled(True)
        if problems:
            self.problem_label.setText("Not saved: " + "\n".join(problems))
        else:
            self.accept()

    def not_sent(self, why: str) -> None:
        self.save_button.setEnabled(True)
        self.problem_label.setText(why)
