"""The MCP servers page: each configured server with its state, enable / disable / restart;
add, edit and remove a server in a form; import the servers of a Claude Desktop
configuration file the user picks.

States come from the kernel (McpServerStates, pushed whenever one changes); the buttons ask
the kernel (McpServerAction), which saves enabling and disabling in settings.json. The form
and Remove change settings.json through the kernel (UpdateSettings), which validates the
entry and starts, restarts or stops the server. An import is first previewed by the kernel
(ImportMcpServers: what would be added, the names already used), and written only when the
user confirms; existing entries are never overwritten.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.settings.mcp_form import McpServerForm
from kernel.protocol import (
    ImportMcpServers,
    McpImportPlan,
    McpServerInfo,
    SettingChange,
    SettingsSnapshot,
    UpdateSettings,
)

STATUS_COLOURS = {"ready": "#2da44e", "starting": "#bf8700", "failed": "#cf222e",
                  "disabled": "#6e7781"}
_REQUESTS = itertools.count(1)


def describe_plan(plan: McpImportPlan) -> str:
    """What an import would do (or did), for a person."""
    if plan.error:
        return f"Cannot import: {plan.error}"
    lines = [f"From {plan.path}:"]
    if plan.added:
        verb = "added" if plan.written else "would add"
        lines.append(f"{verb} {len(plan.added)}:")
        lines += [f"  {name} — runs {runs}" for name, runs in zip(plan.added, plan.runs,
                                                                   strict=False)]
    if plan.unchanged:
        lines.append(f"already here, identical: {', '.join(plan.unchanged)}")
    if plan.conflicts:
        lines.append(f"name already used by a different server (yours is kept, this one is "
                     f"not imported): {', '.join(plan.conflicts)}")
    if not plan.added:
        lines.append("Nothing new to import.")
    return "\n".join(lines)


def server_details(info: McpServerInfo) -> str:
    """Everything known about one server, for the details box."""
    lines = [f"{info.name}: {info.summary or info.status}", f"Runs: {info.target}"]
    if info.pid:
        lines.append(f"Process: {info.pid}")
    if info.tools:
        lines.append("Tools: " + ", ".join(info.tools))
    lines += [f"Skipped: {s}" for s in info.skipped]
    if info.error:
        lines.append(f"Error: {info.error}")
    if info.stderr_tail:
        lines.append("Last lines of its stderr:")
        lines += [f"  {line}" for line in info.stderr_tail]
    return "\n".join(lines)


class McpPanel(QWidget):
    action_requested = Signal(str, str)
    """(server name, enable | disable | restart)."""
    command = Signal(object)
    """A protocol command for the kernel (UpdateSettings, ImportMcpServers)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("MCP servers")
        self.servers: dict[str, McpServerInfo] = {}
        self.entries: dict[str, Any] = {}
        """settings.json's `mcpServers`, as the kernel last reported it."""
        self.form: McpServerForm | None = None
        self._form_request = ""
        self._remove_request = ""
        self.tree = QTreeWidget(self)
        self.tree.setAccessibleName("Configured MCP servers")
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Server", "State"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.tree.itemSelectionChanged.connect(self._selection_changed)
        self.intro = QLabel("Changes here act at once: adding, editing, removing, enabling, "
                            "disabling and importing write settings.json when you do them, "
                            "and Save and Cancel do not undo them.", self)
        self.intro.setAccessibleName("About MCP server changes")
        self.intro.setWordWrap(True)
        self.state_label = QLabel("Waiting for the kernel…", self)
        self.state_label.setAccessibleName("MCP servers status")
        self.state_label.setWordWrap(True)
        self.state_label.setTextFormat(Qt.TextFormat.PlainText)
        self.details = QPlainTextEdit(self)
        self.details.setAccessibleName("Server details")
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.add_button = QPushButton("&Add…", self)
        self.add_button.setAccessibleName("Add an MCP server")
        self.add_button.clicked.connect(lambda: self.open_form(None))
        self.edit_button = QPushButton("Ed&it…", self)
        self.edit_button.setAccessibleName("Edit the selected server")
        self.edit_button.clicked.connect(lambda: self.open_form(self.selected()))
        self.remove_button = QPushButton("Remo&ve", self)
        self.remove_button.setAccessibleName("Remove the selected server")
        self.remove_button.clicked.connect(self.ask_remove)
        self.enable_button = QPushButton("&Enable", self)
        self.enable_button.setAccessibleName("Enable the selected server")
        self.disable_button = QPushButton("D&isable", self)
        self.disable_button.setAccessibleName("Disable the selected server")
        self.restart_button = QPushButton("Res&tart", self)
        self.restart_button.setAccessibleName("Restart the selected server")
        for button, action in ((self.enable_button, "enable"),
                               (self.disable_button, "disable"),
                               (self.restart_button, "restart")):
            button.clicked.connect(lambda _=False, a=action: self._act(a))
        buttons = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.enable_button, self.disable_button, self.restart_button):
            buttons.addWidget(button)

        self.import_label = QLabel(self)
        self.import_label.setAccessibleName("Claude Desktop import")
        self.import_label.setWordWrap(True)
        self.import_label.setTextFormat(Qt.TextFormat.PlainText)
        self.import_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.import_button = QPushButton("Import from &Claude Desktop…", self)
        self.import_button.setAccessibleName("Choose a Claude Desktop configuration to import")
        self.import_button.clicked.connect(self.choose_import)
        self.confirm_import = QPushButton("&Write to settings", self)
        self.confirm_import.setAccessibleName("Import the servers shown")
        self.confirm_import.clicked.connect(self.write_import)
        import_row = QHBoxLayout()
        import_row.addWidget(self.import_label, 1)
        import_row.addWidget(self.import_button, 0, Qt.AlignmentFlag.AlignTop)
        import_row.addWidget(self.confirm_import, 0, Qt.AlignmentFlag.AlignTop)

        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.state_label)
        layout.addWidget(self.tree, 2)
        layout.addLayout(buttons)
        layout.addWidget(self.details, 1)
        layout.addLayout(import_row)

        self.picker: QFileDialog | None = None
        self.claude_config = ""
        self._plan: McpImportPlan | None = None
        self.confirm_import.hide()
        self._update_buttons()

    # -- from the kernel ---------------------------------------------------------------------
    def set_states(self, servers: tuple[McpServerInfo, ...], error: str = "") -> None:
        chosen = self.selected()
        self.servers = {s.name: s for s in servers}
        self.tree.clear()
        for info in servers:
            item = QTreeWidgetItem([info.name, info.summary or info.status])
            item.setForeground(1, QBrush(QColor(STATUS_COLOURS.get(info.status, "#6e7781"))))
            item.setToolTip(1, info.summary)
            item.setData(0, Qt.ItemDataRole.UserRole, info.name)
            self.tree.addTopLevelItem(item)
            if info.name == chosen or (chosen is None and self.tree.topLevelItemCount() == 1):
                self.tree.setCurrentItem(item)
        self.tree.resizeColumnToContents(0)
        if error:
            self.state_label.setText(error)
        elif not servers:
            self.state_label.setText("No MCP servers are configured: add one, or import a "
                                     "Claude Desktop configuration.")
        else:
            self.state_label.setText(f"{len(servers)} server{'s' if len(servers) != 1 else ''}"
                                     " configured.")
        self._selection_changed()

    def show_settings(self, snapshot: SettingsSnapshot) -> None:
        """settings.json's servers (for the form), where Claude Desktop's file is, and the
        kernel's answer to the form or to Remove."""
        values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
        servers = values.get("mcpServers")
        self.entries = dict(servers) if isinstance(servers, Mapping) else {}
        self.claude_config = snapshot.claude_config
        if not self.import_label.text() and self.claude_config:
            self.import_label.setText(f"A Claude Desktop configuration exists at "
                                      f"{self.claude_config}.")
        problems = [problem.message for problem in snapshot.problems]
        if snapshot.request_id and snapshot.request_id == self._form_request:
            self._form_request = ""
            if self.form is not None:
                self.form.answer(problems)
                if not problems:
                    self.state_label.setText(f"Saved {self.form.name_edit.text()} in "
                                             "settings.json.")
        elif snapshot.request_id and snapshot.request_id == self._remove_request:
            self._remove_request = ""
            self.state_label.setText("Not removed: " + "; ".join(problems) if problems
                                     else "Removed from settings.json.")
        self._update_buttons()

    def show_plan(self, plan: McpImportPlan) -> None:
        """The kernel's preview of an import (or its result)."""
        self._plan = None if plan.error or plan.written else plan
        self.import_label.setText(describe_plan(plan))
        self.confirm_import.setVisible(self._plan is not None and bool(plan.added))
        self.confirm_import.setText(f"&Write {len(plan.added)} to settings")

    def not_sent(self, why: str) -> None:
        """A command could not reach the kernel."""
        if self.form is not None and self._form_request:
            self._form_request = ""
            self.form.not_sent(why)
        else:
            self.state_label.setText(why)

    # -- the list ----------------------------------------------------------------------------
    def selected(self) -> str | None:
        item = self.tree.currentItem()
        if item is None or not item.isSelected():
            return None
        return str(item.data(0, Qt.ItemDataRole.UserRole))

    def _selection_changed(self) -> None:
        name = self.selected()
        info = self.servers.get(name) if name is not None else None
        self.details.setPlainText(server_details(info) if info is not None else "")
        self._update_buttons()

    def _update_buttons(self) -> None:
        name = self.selected()
        info = self.servers.get(name) if name is not None else None
        disabled = info is not None and info.status == "disabled"
        self.enable_button.setEnabled(disabled)
        self.disable_button.setEnabled(info is not None and not disabled)
        self.restart_button.setEnabled(info is not None and not disabled)
        in_file = name is not None and name in self.entries
        self.edit_button.setEnabled(in_file)
        self.remove_button.setEnabled(in_file)

    def _act(self, action: str) -> None:
        name = self.selected()
        if name is not None:
            self.action_requested.emit(name, action)

    # -- add, edit, remove -------------------------------------------------------------------
    def open_form(self, name: str | None) -> McpServerForm:
        """The form for a new server (None) or the named one."""
        entry = self.entries.get(name) if name is not None else None
        taken = frozenset(self.entries) - ({name} if name is not None else set())
        form = McpServerForm(self, name or "", entry if isinstance(entry, Mapping) else None,
                             taken)
        form.submitted.connect(self._submit)
        self.form = form
        form.open()
        return form

    def _submit(self, name: str, entry: dict[str, Any]) -> None:
        assert self.form is not None
        changes = [SettingChange(("mcpServers", name), entry)]
        old = self.form.original_name
        if old and old != name:
            changes.append(SettingChange(("mcpServers", old), remove=True))
        self._form_request = f"mcp-form-{next(_REQUESTS)}"
        self.command.emit(UpdateSettings(tuple(changes), self._form_request))

    def ask_remove(self) -> QMessageBox | None:
        """Ask before removing the selected server from settings.json."""
        name = self.selected()
        if name is None or name not in self.entries:
            return None
        box = QMessageBox(QMessageBox.Icon.Question, "Remove MCP server",
                          f"Remove {name} from settings.json? Its server is stopped and its "
                          "tools are gone from new requests.",
                          QMessageBox.StandardButton.Cancel, self)
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        remove.setAccessibleName(f"Remove {name}")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        remove.clicked.connect(lambda: self._remove(name))
        box.open()
        return box

    def _remove(self, name: str) -> None:
        self._remove_request = f"mcp-remove-{next(_REQUESTS)}"
        self.command.emit(UpdateSettings((SettingChange(("mcpServers", name), remove=True),),
                                         self._remove_request))

    # -- Claude Desktop import ---------------------------------------------------------------
    def choose_import(self) -> QFileDialog:
        """Pick the file to import (Claude Desktop's own, when there is one, is offered
        first); the kernel then says what it would add."""
        start = self.claude_config or str(Path.home())
        picker = QFileDialog(self, "Import MCP servers from a Claude Desktop configuration",
                             start, "Claude Desktop configuration (*.json);;All files (*)")
        picker.setFileMode(QFileDialog.FileMode.ExistingFile)
        picker.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        if self.claude_config:
            picker.selectFile(self.claude_config)
        picker.fileSelected.connect(self.preview_import)
        self.picker = picker
        picker.open()
        return picker

    def preview_import(self, path: str) -> None:
        """Ask the kernel what importing `path` would add; nothing is written yet."""
        self._plan = None
        self.confirm_import.hide()
        self.import_label.setText(f"Reading {path}…")
        self.command.emit(ImportMcpServers(path))

    def write_import(self) -> None:
        """Write the previewed servers (the kernel plans again from the files as they are)."""
        if self._plan is None:
            return
        self.confirm_import.hide()
        self.command.emit(ImportMcpServers(self._plan.path, write=True))
