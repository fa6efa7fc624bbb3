"""The MCP servers page: each configured server with its state, enable / disable / restart,
and an offer to import the servers of a Claude Desktop configuration found on this machine.

States come from the kernel (McpServerStates, pushed whenever one changes); the buttons ask
the kernel (McpServerAction), which saves enabling and disabling in settings.json. An import
first shows what it would add, and writes only when the user confirms (settings' own writer,
existing entries never overwritten); the kernel then starts the new servers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kernel.mcp.config import (
    ImportPlan,
    McpConfigError,
    find_claude_desktop_config,
    plan_import,
    read_claude_desktop_servers,
)
from kernel.paths import AppPaths
from kernel.policy.settings import SettingsError, load_settings, set_mcp_servers
from kernel.protocol import McpServerInfo

STATUS_COLOURS = {"ready": "#2da44e", "starting": "#bf8700", "failed": "#cf222e",
                  "disabled": "#6e7781"}


def describe_plan(plan: ImportPlan, source: Path) -> str:
    """What an import would do, for a person."""
    lines = [f"From {source}:"]
    if plan.added:
        lines.append(f"would add {len(plan.added)}: {', '.join(plan.added)}")
    if plan.unchanged:
        lines.append(f"already here, identical: {', '.join(plan.unchanged)}")
    if plan.conflicts:
        lines.append(f"already here with a different definition (yours is kept): "
                     f"{', '.join(plan.conflicts)}")
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
    imported = Signal()
    """settings.json got new servers: the kernel should apply them."""

    def __init__(self, paths: AppPaths, parent: QWidget | None = None,
                 find_config: Callable[[], Path | None] = find_claude_desktop_config) -> None:
        super().__init__(parent)
        self.setAccessibleName("MCP servers")
        self.paths = paths
        self.servers: dict[str, McpServerInfo] = {}
        self.tree = QTreeWidget(self)
        self.tree.setAccessibleName("Configured MCP servers")
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Server", "State"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.tree.itemSelectionChanged.connect(self._selection_changed)
        self.state_label = QLabel("Waiting for the kernel…", self)
        self.state_label.setAccessibleName("MCP servers status")
        self.state_label.setWordWrap(True)
        self.state_label.setTextFormat(Qt.TextFormat.PlainText)
        self.details = QPlainTextEdit(self)
        self.details.setAccessibleName("Server details")
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
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
        buttons.addStretch(1)
        for button in (self.enable_button, self.disable_button, self.restart_button):
            buttons.addWidget(button)

        self.import_label = QLabel(self)
        self.import_label.setAccessibleName("Claude Desktop import")
        self.import_label.setWordWrap(True)
        self.import_label.setTextFormat(Qt.TextFormat.PlainText)
        self.import_button = QPushButton("Import from &Claude Desktop…", self)
        self.import_button.setAccessibleName("Preview the Claude Desktop import")
        self.import_button.clicked.connect(self.preview_import)
        self.confirm_import = QPushButton("&Write to settings", self)
        self.confirm_import.setAccessibleName("Import the servers shown")
        self.confirm_import.clicked.connect(self.write_import)
        import_row = QHBoxLayout()
        import_row.addWidget(self.import_label, 1)
        import_row.addWidget(self.import_button)
        import_row.addWidget(self.confirm_import)

        layout = QVBoxLayout(self)
        layout.addWidget(self.state_label)
        layout.addWidget(self.tree, 2)
        layout.addLayout(buttons)
        layout.addWidget(self.details, 1)
        layout.addLayout(import_row)

        self._plan: ImportPlan | None = None
        self.claude_config = find_config()
        self.import_button.setVisible(self.claude_config is not None)
        self.import_label.setVisible(self.claude_config is not None)
        self.confirm_import.hide()
        if self.claude_config is not None:
            self.import_label.setText(f"A Claude Desktop configuration exists at "
                                      f"{self.claude_config}.")
        self._update_buttons()

    # -- states from the kernel ------------------------------------------------------------
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
            self.state_label.setText("No MCP servers are configured (settings.json, "
                                     "\"mcpServers\").")
        else:
            self.state_label.setText(f"{len(servers)} server{'s' if len(servers) != 1 else ''}"
                                     " configured.")
        self._selection_changed()

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

    def _act(self, action: str) -> None:
        name = self.selected()
        if name is not None:
            self.action_requested.emit(name, action)

    # -- Claude Desktop import --------------------------------------------------------------
    def preview_import(self) -> None:
        """Show what importing would add; nothing is written yet."""
        if self.claude_config is None:
            return
        try:
            imported = read_claude_desktop_servers(self.claude_config)
            plan = plan_import(_current_servers(self.paths), imported)
        except (McpConfigError, SettingsError) as exc:
            self._plan = None
            self.import_label.setText(f"Cannot import: {exc}")
            self.confirm_import.hide()
            return
        self._plan = plan
        self.import_label.setText(describe_plan(plan, self.claude_config))
        self.confirm_import.setVisible(bool(plan.added))
        self.confirm_import.setText(f"&Write {len(plan.added)} to settings")

    def write_import(self) -> None:
        """Write the previewed servers (plan made again from the files as they are now)."""
        if self._plan is None or self.claude_config is None:
            return
        try:
            imported = read_claude_desktop_servers(self.claude_config)
            plan = plan_import(_current_servers(self.paths), imported)
            set_mcp_servers(self.paths, plan.merged)
        except (McpConfigError, SettingsError, OSError) as exc:
            self.import_label.setText(f"Not imported: {exc}")
            self.confirm_import.hide()
            return
        self._plan = None
        self.confirm_import.hide()
        added = ", ".join(plan.added) or "nothing new"
        self.import_label.setText(f"Imported {added} into settings.json.")
        self.imported.emit()


def _current_servers(paths: AppPaths) -> Mapping[str, Any]:
    return load_settings(paths).mcp_servers

