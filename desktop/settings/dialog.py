"""The settings dialog: API key, base URL, model, default mode, rules, the current session's
grants, MCP servers, sandbox, data folder.

Rules are validated as you type with the policy's own rule parser; the file is written by
the policy's own settings writer (validated, locked, replaced atomically), so the dialog
cannot save anything the kernel would refuse to load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.settings import keystore
from desktop.settings.grants import GrantsPanel
from desktop.settings.mcp import McpPanel
from kernel.mcp.config import find_claude_desktop_config
from kernel.modes import MODES
from kernel.paths import AppPaths
from kernel.policy.rules import RuleError, parse_rule
from kernel.policy.settings import (
    RULE_LISTS,
    Settings,
    SettingsError,
    load_settings,
    update_settings,
)


@dataclass(frozen=True)
class SavedSettings:
    """What the app passes on to the kernel after a save."""

    api_key: str | None
    model: str
    base_url: str
    key_in_memory: bool = False
    """There is no keyring: the key is held in memory for this run only."""


def rule_problems(text: str) -> list[str]:
    """Every line of a rule list that does not parse, as 'line N: problem'."""
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parse_rule(line.strip())
        except RuleError as exc:
            problems.append(f"line {number}: {exc}")
    return problems


def sandbox_report() -> str:
    """The same diagnostics as `reins doctor`."""
    from kernel.sandbox.doctor import report

    return report()


class SettingsDialog(QDialog):
    saved = Signal(object)
    """A SavedSettings, after settings.json (and the keyring) were written."""
    _diagnosed = Signal(str)

    def __init__(self, paths: AppPaths, parent: QWidget | None = None,
                 diagnostics: Callable[[], str] = sandbox_report,
                 find_mcp_config: Callable[[], Path | None] = find_claude_desktop_config,
                 memory_key: str | None = None) -> None:
        """`find_mcp_config`: where a Claude Desktop configuration is (default: the usual
        place of this OS). The Grants and MCP pages show what the app feeds them from the
        kernel; their buttons emit signals the app turns into protocol commands.
        `memory_key`: the key the app holds in memory (shown when there is no keyring)."""
        super().__init__(parent)
        self.setWindowTitle("Settings — Reins")
        self.setAccessibleName("Settings")
        self.resize(680, 520)
        self.paths = paths
        self._memory_key = memory_key
        self._keyring = True
        self._diagnostics = diagnostics
        self._diagnosed.connect(self.sandbox_text_ready, Qt.ConnectionType.QueuedConnection)
        self.tabs = QTabWidget(self)
        self.tabs.setAccessibleName("Settings sections")
        self.tabs.addTab(self._model_tab(), "&Model")
        self.tabs.addTab(self._rules_tab(), "&Permissions")
        self.grants_panel = GrantsPanel(self)
        self.tabs.addTab(self.grants_panel, "&Grants")
        self.mcp_panel = McpPanel(paths, self, find_config=find_mcp_config)
        self.tabs.addTab(self.mcp_panel, "MC&P servers")
        self.tabs.addTab(self._sandbox_tab(), "Sa&ndbox")
        self.tabs.addTab(self._data_tab(), "&Data")
        self.error_label = QLabel(self)
        self.error_label.setAccessibleName("Settings problem")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #cf222e;")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setAccessibleName("Save settings")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Cancel")
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.load()

    # -- tabs ----------------------------------------------------------------------------
    def _model_tab(self) -> QWidget:
        tab = QWidget(self)
        self.key_edit = QLineEdit(tab)
        self.key_edit.setAccessibleName("Anthropic API key")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("sk-ant-…")
        self.show_key = QPushButton("Sho&w", tab)
        self.show_key.setAccessibleName("Show API key")
        self.show_key.setCheckable(True)
        self.show_key.toggled.connect(lambda on: self.key_edit.setEchoMode(
            QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password))
        self.key_status = QLabel(tab)
        self.key_status.setAccessibleName("Where the key is kept")
        self.key_status.setWordWrap(True)
        self.base_url_edit = QLineEdit(tab)
        self.base_url_edit.setAccessibleName("Base URL")
        self.base_url_edit.setPlaceholderText("https://api.anthropic.com (default)")
        self.model_edit = QLineEdit(tab)
        self.model_edit.setAccessibleName("Model")
        self.mode_combo = QComboBox(tab)
        self.mode_combo.setAccessibleName("Default mode")
        self.mode_combo.addItems(list(MODES))
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.show_key)
        form = QFormLayout(tab)
        key_label = QLabel("API &key:", tab)
        key_label.setBuddy(self.key_edit)
        form.addRow(key_label, key_row)
        form.addRow("", self.key_status)
        form.addRow("&Base URL:", self.base_url_edit)
        form.addRow("M&odel (new sessions):", self.model_edit)
        form.addRow("Default &mode:", self.mode_combo)
        self.base_url_edit.textChanged.connect(self._validate)
        return tab

    def _rules_tab(self) -> QWidget:
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        intro = QLabel("One rule per line, e.g. run_command(git status), write_file(docs/**), "
                       "mcp__git__*. Deny beats ask beats allow beats the mode.", tab)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.rule_edits: dict[str, QPlainTextEdit] = {}
        self.rule_errors: dict[str, QLabel] = {}
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for name in RULE_LISTS:
            label = QLabel(f"<b>{name.title()}</b>", tab)
            edit = QPlainTextEdit(tab)
            edit.setAccessibleName(f"{name.title()} rules")
            edit.setFont(fixed)
            edit.setTabChangesFocus(True)
            label.setBuddy(edit)
            error = QLabel(tab)
            error.setAccessibleName(f"Problems in {name} rules")
            error.setWordWrap(True)
            error.setTextFormat(Qt.TextFormat.PlainText)
            error.setStyleSheet("color: #cf222e;")
            edit.textChanged.connect(self._validate)
            layout.addWidget(label)
            layout.addWidget(edit, 1)
            layout.addWidget(error)
            self.rule_edits[name] = edit
            self.rule_errors[name] = error
        return tab

    def _sandbox_tab(self) -> QWidget:
        tab = QWidget(self)
        self.sandbox_text = QPlainTextEdit(tab)
        self.sandbox_text.setAccessibleName("Sandbox diagnostics")
        self.sandbox_text.setReadOnly(True)
        self.sandbox_text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        refresh = QPushButton("&Check again", tab)
        refresh.setAccessibleName("Check the sandbox again")
        refresh.clicked.connect(self.refresh_diagnostics)
        layout = QVBoxLayout(tab)
        layout.addWidget(self.sandbox_text, 1)
        layout.addWidget(refresh, 0, Qt.AlignmentFlag.AlignRight)
        return tab

    def _data_tab(self) -> QWidget:
        tab = QWidget(self)
        form = QFormLayout(tab)
        self.data_label = QLabel(str(self.paths.data), tab)
        self.data_label.setAccessibleName("Data folder")
        self.data_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.config_label = QLabel(str(self.paths.settings_file), tab)
        self.config_label.setAccessibleName("Settings file")
        self.config_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        open_data = QPushButton("Open data &folder", tab)
        open_data.setAccessibleName("Open data folder")
        open_data.clicked.connect(lambda: QDesktopServices.openUrl(
            QUrl.fromLocalFile(str(self.paths.data))))
        form.addRow("Data folder:", self.data_label)
        form.addRow("Settings file:", self.config_label)
        form.addRow("", open_data)
        note = QLabel("Set REINS_HOME to keep data and settings in one folder of your choice.",
                      tab)
        note.setWordWrap(True)
        form.addRow("", note)
        return tab

    # -- load / validate / save ----------------------------------------------------------------
    def load(self) -> None:
        try:
            settings = load_settings(self.paths)
        except SettingsError as exc:
            settings = Settings()
            self.error_label.setText(f"settings.json cannot be used: {exc}")
        state = keystore.keyring_state()
        self._keyring = state.available
        self.key_status.setText(state.explanation)
        self.key_edit.setText((keystore.stored_key() if state.available else self._memory_key)
                              or "")
        self.base_url_edit.setText(settings.base_url or "")
        self.model_edit.setText(settings.model or "")
        self.mode_combo.setCurrentText(str(settings.default_mode))
        permissions = settings.raw.get("permissions", {})
        self._loaded_rules = {name: list(permissions.get(name, [])) for name in RULE_LISTS}
        for name, edit in self.rule_edits.items():
            edit.setPlainText("\n".join(permissions.get(name, [])))
        self.refresh_diagnostics()
        self._validate()

    def refresh_diagnostics(self) -> None:
        """Run the sandbox check on a thread (it starts bubblewrap; the UI never waits)."""
        self.sandbox_text.setPlainText("Checking the sandbox…")
        threading.Thread(target=self._diagnose, name="sandbox-doctor", daemon=True).start()

    def _diagnose(self) -> None:
        try:
            text = self._diagnostics()
        except Exception as exc:  # diagnostics must show why they failed, not crash settings
            text = f"The sandbox check failed: {type(exc).__name__}: {exc}"
        try:
            self._diagnosed.emit(text)
        except RuntimeError:
            return  # the dialog was closed and deleted meanwhile

    def sandbox_text_ready(self, text: str) -> None:
        self.sandbox_text.setPlainText(text)

    def _validate(self) -> bool:
        ok = True
        for name, edit in self.rule_edits.items():
            problems = rule_problems(edit.toPlainText())
            self.rule_errors[name].setText("\n".join(problems))
            self.rule_errors[name].setVisible(bool(problems))
            ok = ok and not problems
        url = self.base_url_edit.text().strip()
        url_ok = not url or url.startswith(("http://", "https://"))
        self.base_url_edit.setToolTip("" if url_ok else "The base URL must start with http(s)://")
        self.save_button.setEnabled(ok and url_ok)
        return ok and url_ok

    def changes(self) -> dict[str, Any]:
        rules = {name: [line.strip() for line in edit.toPlainText().splitlines()
                        if line.strip()] for name, edit in self.rule_edits.items()}
        return {
            "model": self.model_edit.text().strip(),
            "base_url": self.base_url_edit.text().strip(),
            "default_mode": self.mode_combo.currentText(),
            "permissions": rules,
        }

    def save(self) -> None:
        if not self._validate():
            return
        changes = self.changes()

        def apply(data: dict[str, Any]) -> None:
            for key in ("model", "base_url"):
                if changes[key]:
                    data[key] = changes[key]
                else:
                    data.pop(key, None)
            data["default_mode"] = changes["default_mode"]
            # Only the lists edited here: a rule saved or revoked meanwhile (always allow,
            # the Grants page) is not undone by saving a copy loaded earlier.
            for name, rules in changes["permissions"].items():
                if rules != self._loaded_rules.get(name, []):
                    data.setdefault("permissions", {})[name] = rules

        try:
            update_settings(self.paths, apply)
        except (SettingsError, OSError) as exc:
            self.error_label.setText(f"Not saved: {exc}")
            return
        key = self.key_edit.text().strip()
        if self._keyring:
            try:
                keystore.save_key(key)
            except keystore.KeyringUnavailable as exc:
                self.error_label.setText(f"Settings saved, but the key was not: {exc}")
                return
        self.saved.emit(SavedSettings(key or None, changes["model"], changes["base_url"],
                                      key_in_memory=bool(key) and not self._keyring))
        self.accept()

    def show_tab(self, page: QWidget) -> None:
        """Bring one page (e.g. `grants_panel`) to the front."""
        self.tabs.setCurrentWidget(page)
