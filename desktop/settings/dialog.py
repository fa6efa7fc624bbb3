"""The settings dialog: API key, base URL, model, default mode, rules, every session's
grants, MCP servers, sandbox, data folder.

settings.json is the kernel's: the dialog shows the kernel's reading of it (SettingsSnapshot)
and sends only the keys the user changed (UpdateSettings). As you type, the kernel checks
the changes (`check_only`) with the settings' own validation and names every bad rule by
its line; Save waits for the kernel's answer and closes only when the file was written.
The API key is the UI's: it goes to the system keyring (keystore), never to settings.json;
with no keyring, to a file only the user can read if they tick the box that says so, else
it is kept in memory for this run. *Test connection* asks the kernel to check the key and
base URL as typed (CheckConnection) and shows its verdict in words.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QFontDatabase, QIcon
from PySide6.QtWidgets import (
    QCheckBox,
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
from desktop.theme import keep_panel_sheet
from kernel.modes import MODES
from kernel.paths import AppPaths
from kernel.protocol import (
    RULE_LISTS,
    CheckConnection,
    ConnectionChecked,
    GetDiagnostics,
    SettingChange,
    SettingsProblem,
    SettingsSnapshot,
    UpdateSettings,
)

HELP = "settingsHelp"
"""The object name of a page's help text (shown muted)."""
CHECK_DELAY_MS = 250
"""How long typing pauses before the kernel checks the changes."""
_REQUESTS = itertools.count(1)


@dataclass(frozen=True)
class SavedSettings:
    """What the app passes on after a save (settings.json itself is the kernel's)."""

    api_key: str | None
    key_in_memory: bool = False
    """There is no keyring: the key is held in memory for this run only."""
    key_in_file: bool = False
    """There is no keyring and the user chose to keep the key in the key file."""


def _column(*items: QWidget | QHBoxLayout) -> QVBoxLayout:
    """Widgets and rows stacked in one form field (a wrapped label in a row of its own
    would get the height of a narrower one)."""
    column = QVBoxLayout()
    for item in items:
        if isinstance(item, QWidget):
            column.addWidget(item)
        else:
            column.addLayout(item)
    return column


def _form(tab: QWidget) -> QFormLayout:
    """A page's form: labels right-aligned against their fields, room between the rows."""
    form = QFormLayout(tab)
    form.setContentsMargins(18, 18, 18, 18)
    form.setHorizontalSpacing(14)
    form.setVerticalSpacing(14)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def rule_lines(text: str) -> tuple[list[str], list[int]]:
    """A rule list as typed: the rules (one per non-blank line, trimmed) and the line each
    came from (1-based), to say which line the kernel found wrong."""
    rules, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            rules.append(line.strip())
            lines.append(number)
    return rules, lines


def sort_problems(problems: tuple[SettingsProblem, ...], lines: Mapping[str, list[int]],
                  ) -> tuple[dict[str, list[str]], list[str]]:
    """The kernel's problems per rule list ('line N: …', N the line in that list's box) and
    the others, each as 'where: what'."""
    by_list: dict[str, list[str]] = {name: [] for name in lines}
    other: list[str] = []
    for problem in problems:
        path = problem.path
        if len(path) == 3 and path[0] == "permissions" and path[1] in by_list \
                and path[2].isdigit() and int(path[2]) < len(lines[path[1]]):
            by_list[path[1]].append(f"line {lines[path[1]][int(path[2])]}: {problem.message}")
        else:
            other.append(problem.message)
    return by_list, other


class SettingsDialog(QDialog):
    saved = Signal(object)
    """A SavedSettings, after the kernel wrote settings.json (and the key was kept)."""
    command = Signal(object)
    """A protocol command for the kernel (UpdateSettings, GetDiagnostics, ImportMcpServers,
    CheckConnection)."""

    def __init__(self, paths: AppPaths, parent: QWidget | None = None,
                 memory_key: str | None = None,
                 settings: SettingsSnapshot | None = None) -> None:
        """`settings`: the kernel's last snapshot (a newer one comes through
        `show_settings`). The Grants and MCP pages show what the app feeds them from the
        kernel; their buttons emit signals the app turns into protocol commands.
        `memory_key`: the key the app holds in memory (shown when there is no keyring)."""
        super().__init__(parent)
        self.setWindowTitle("Settings — Reins")
        self.setAccessibleName("Settings")
        self.resize(720, 560)
        self.paths = paths
        self._memory_key = memory_key
        self._keyring = True
        self._filled = False
        self._loaded: dict[str, Any] = {}
        self._rule_lines: dict[str, list[int]] = {}
        self._check_id = ""
        self._save_id = ""
        self._connection_id = ""
        self._problems: tuple[SettingsProblem, ...] = ()
        self._check_timer = QTimer(self)
        self._check_timer.setSingleShot(True)
        self._check_timer.setInterval(CHECK_DELAY_MS)
        self._check_timer.timeout.connect(self.check)
        self.tabs = QTabWidget(self)
        self.tabs.setAccessibleName("Settings sections")
        self.tabs.addTab(self._model_tab(), "&Model")
        self.tabs.addTab(self._rules_tab(), "&Permissions")
        self.grants_panel = GrantsPanel(self)
        self.tabs.addTab(self.grants_panel, "&Grants")
        self.mcp_panel = McpPanel(self)
        self.mcp_panel.command.connect(self.command)
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
        for button in self.buttons.buttons():
            button.setIcon(QIcon())  # words only, as the composer's buttons
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.setSpacing(10)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        for label in (self.key_status, self.key_file_note, self.grants_panel.intro,
                      self.mcp_panel.intro, *self.findChildren(QLabel, HELP)):
            label.setProperty("muted", True)
        keep_panel_sheet(self)  # grouped, quiet fields and buttons, light or dark
        self._load_key()
        self._settings_widgets: list[QWidget] = [
            self.base_url_edit, self.model_edit, self.mode_combo, *self.rule_edits.values()]
        for widget in self._settings_widgets:
            widget.setEnabled(False)  # until the kernel's reading of settings.json arrives
        self.error_label.setText("Waiting for the kernel to read settings.json…")
        if settings is not None and settings.path:
            self.show_settings(settings)

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
        self.key_file_box = QCheckBox("Keep the key in a &file only you can read", tab)
        self.key_file_box.setAccessibleName("Keep the key in a file only you can read")
        self.key_file_note = QLabel(
            f"The file is {self.paths.api_key_file}, mode 0600 (as Claude Code keeps its key "
            "on Linux): other users cannot read it, but any program running as you can.", tab)
        self.key_file_note.setWordWrap(True)
        self.key_file_note.setTextFormat(Qt.TextFormat.PlainText)
        for widget in (self.key_file_box, self.key_file_note):
            widget.setVisible(False)
        self.test_button = QPushButton("&Test connection", tab)
        self.test_button.setAccessibleName("Test connection")
        self.test_button.setToolTip("Check the key and base URL as typed with one small "
                                    "request to the server")
        self.test_button.clicked.connect(self.test_connection)
        self.connection_label = QLabel(tab)
        self.connection_label.setAccessibleName("Connection test result")
        self.connection_label.setWordWrap(True)
        self.connection_label.setTextFormat(Qt.TextFormat.PlainText)
        self.connection_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.show_key)
        key_column = _column(key_row, self.key_status, self.key_file_box, self.key_file_note)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addStretch(1)
        url_column = _column(self.base_url_edit, test_row, self.connection_label)
        form = _form(tab)
        key_label = QLabel("API &key:", tab)
        key_label.setBuddy(self.key_edit)
        form.addRow(key_label, key_column)
        url_label = QLabel("&Base URL:", tab)
        url_label.setBuddy(self.base_url_edit)
        form.addRow(url_label, url_column)
        form.addRow("M&odel (new sessions):", self.model_edit)
        form.addRow("Default &mode:", self.mode_combo)
        for edit in (self.base_url_edit, self.model_edit):
            edit.textChanged.connect(self._edited)
        self.mode_combo.currentIndexChanged.connect(self._edited)
        return tab

    def _rules_tab(self) -> QWidget:
        tab = QWidget(self)
        layout = QVBoxLayout(tab)
        intro = QLabel("One rule per line, e.g. run_command(git status), write_file(docs/**), "
                       "mcp__git__*. Deny beats ask beats allow beats the mode.", tab)
        intro.setWordWrap(True)
        intro.setObjectName(HELP)
        layout.setContentsMargins(18, 18, 18, 18)
        layout.setSpacing(6)
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
            edit.textChanged.connect(self._edited)
            layout.addSpacing(8)
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
        self.sandbox_text.setPlainText("Checking the sandbox…")
        layout = QVBoxLayout(tab)
        layout.setContentsMargins(18, 18, 18, 18)
        layout.addWidget(self.sandbox_text, 1)
        layout.addWidget(refresh, 0, Qt.AlignmentFlag.AlignRight)
        return tab

    def _data_tab(self) -> QWidget:
        tab = QWidget(self)
        form = _form(tab)
        self.data_label = QLabel(str(self.paths.data), tab)
        self.data_label.setAccessibleName("Data folder")
        self.data_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.config_label = QLabel("", tab)
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
        note.setObjectName(HELP)
        form.addRow("", note)
        return tab

    # -- from the kernel ------------------------------------------------------------------
    def _load_key(self) -> None:
        state = keystore.keyring_state()
        self._keyring = state.available
        self.key_status.setText(state.explanation)
        for widget in (self.key_file_box, self.key_file_note):
            widget.setVisible(not state.available)
        if state.available:
            self.key_edit.setText(keystore.stored_key() or "")
            return
        try:
            kept = keystore.file_key(self.paths)
        except OSError as exc:
            kept = None
            self.key_status.setText(f"{state.explanation} {exc}")
        self.key_file_box.setChecked(kept is not None)
        self.key_edit.setText(self._memory_key or kept or "")

    # -- testing the connection ---------------------------------------------------------------
    def test_connection(self) -> None:
        """Ask the kernel to check the key and base URL as typed (ConnectionChecked answers)."""
        self._connection_id = f"connection-{next(_REQUESTS)}"
        self.test_button.setEnabled(False)
        where = self.base_url_edit.text().strip() or "the Anthropic API"
        self.connection_label.setStyleSheet("")
        self.connection_label.setText(f"Testing the connection to {where}…")
        self.command.emit(CheckConnection(self._connection_id, self.key_edit.text().strip(),
                                          self.base_url_edit.text().strip(),
                                          self.model_edit.text().strip()))

    def show_connection(self, checked: ConnectionChecked) -> None:
        """The kernel's verdict on the last test (an older test's is ignored)."""
        if checked.request_id != self._connection_id:
            return
        self._connection_id = ""
        self.test_button.setEnabled(True)
        self.connection_label.setStyleSheet("" if checked.ok else "color: #cf222e;")
        self.connection_label.setText(("✓ " if checked.ok else "✗ ") + checked.message)

    def show_settings(self, snapshot: SettingsSnapshot) -> None:
        """The kernel's reading of settings.json: fills the fields the first time, shows
        the answer to a check or a save, and feeds the MCP page."""
        self.config_label.setText(snapshot.path)
        self.mcp_panel.show_settings(snapshot)
        if snapshot.request_id and snapshot.request_id == self._save_id:
            self._saved(snapshot)
        elif snapshot.request_id and snapshot.request_id == self._check_id:
            self._show_problems(snapshot.problems)
        elif not self._filled:
            self._fill(snapshot)
        if snapshot.error and not snapshot.request_id:
            self.error_label.setText(f"settings.json cannot be used: {snapshot.error}")

    def _fill(self, snapshot: SettingsSnapshot) -> None:
        values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
        permissions = values.get("permissions")
        permissions = permissions if isinstance(permissions, Mapping) else {}
        self._loaded = {
            "model": str(values.get("model", "")), "base_url": str(values.get("base_url", "")),
            "default_mode": str(values.get("default_mode", snapshot.default_mode)),
            **{name: list(permissions.get(name, [])) for name in RULE_LISTS}}
        widgets = self._settings_widgets
        for widget in widgets:
            widget.blockSignals(True)
        self.base_url_edit.setText(self._loaded["base_url"])
        self.model_edit.setText(self._loaded["model"])
        self.mode_combo.setCurrentText(self._loaded["default_mode"])
        for name, edit in self.rule_edits.items():
            edit.setPlainText("\n".join(self._loaded[name]))
        for widget in widgets:
            widget.blockSignals(False)
            widget.setEnabled(True)
        self._filled = True
        self.error_label.setText("")

    @property
    def loaded(self) -> bool:
        """The kernel's reading of settings.json has arrived (the fields show it)."""
        return self._filled

    def show_diagnostics(self, text: str) -> None:
        self.sandbox_text.setPlainText(text)

    def refresh_diagnostics(self) -> None:
        """Ask the kernel for `reins doctor`'s facts again (it starts bubblewrap)."""
        self.sandbox_text.setPlainText("Checking the sandbox…")
        self.command.emit(GetDiagnostics())

    def not_sent(self, why: str) -> None:
        """A command could not reach the kernel (it is restarting)."""
        self._save_id = self._check_id = self._connection_id = ""
        self.save_button.setEnabled(True)
        self.test_button.setEnabled(True)
        self.error_label.setText(why)

    # -- checking and saving ---------------------------------------------------------------
    def changes(self) -> tuple[SettingChange, ...]:
        """The keys the user changed since the kernel's reading: only those are sent, so a
        rule saved or revoked meanwhile (always allow, the Grants page) is not undone.
        Nothing before the kernel's reading arrived (the fields are disabled until then)."""
        out: list[SettingChange] = []
        if not self._filled:
            return ()
        for key, edit in (("model", self.model_edit), ("base_url", self.base_url_edit)):
            text = edit.text().strip()
            if text != self._loaded.get(key, ""):
                out.append(SettingChange((key,), text) if text
                           else SettingChange((key,), remove=True))
        mode = self.mode_combo.currentText()
        if mode != self._loaded.get("default_mode", "ask"):
            out.append(SettingChange(("default_mode",), mode))
        for name, box in self.rule_edits.items():
            rules, self._rule_lines[name] = rule_lines(box.toPlainText())
            if rules != self._loaded.get(name, []):
                out.append(SettingChange(("permissions", name), rules))
        return tuple(out)

    def _edited(self) -> None:
        if self._filled:
            self._check_timer.start()

    def check(self) -> None:
        """Ask the kernel whether the changes would load (nothing is written)."""
        changes = self.changes()
        if not changes:
            self._check_id = ""
            self._show_problems(())
            return
        self._check_id = f"check-{next(_REQUESTS)}"
        self.command.emit(UpdateSettings(changes, self._check_id, check_only=True))

    def _show_problems(self, problems: tuple[SettingsProblem, ...]) -> None:
        self._problems = problems
        by_list, other = sort_problems(problems, self._rule_lines)
        for name, label in self.rule_errors.items():
            label.setText("\n".join(by_list.get(name, [])))
            label.setVisible(bool(by_list.get(name)))
        url_problems = [p.message for p in problems if p.path[:1] == ("base_url",)]
        self.base_url_edit.setToolTip("\n".join(url_problems))
        self.error_label.setText("\n".join(other))
        self.save_button.setEnabled(not problems)

    def save(self) -> None:
        """Send the changes; the dialog closes once the kernel wrote them."""
        self._check_timer.stop()
        changes = self.changes()
        if not changes:
            self._finish()
            return
        self._save_id = f"save-{next(_REQUESTS)}"
        self.save_button.setEnabled(False)
        self.error_label.setText("Saving…")
        self.command.emit(UpdateSettings(changes, self._save_id))

    def _saved(self, snapshot: SettingsSnapshot) -> None:
        self._save_id = ""
        if snapshot.problems:
            self._show_problems(snapshot.problems)
            self.error_label.setText("Not saved: " + (self.error_label.text() or
                                                      "see the problems shown"))
            self.save_button.setEnabled(True)  # e.g. once settings.json is fixed by hand
            return
        self._finish()

    def _finish(self) -> None:
        """settings.json is written: keep the key, tell the app, close."""
        key = self.key_edit.text().strip()
        in_file = not self._keyring and self.key_file_box.isChecked()
        try:
            if self._keyring:
                keystore.save_key(key)
            else:  # unticked: no file is kept (one kept before is removed)
                keystore.save_key_file(self.paths, key if in_file else "")
        except (keystore.KeyringUnavailable, OSError) as exc:
            self.error_label.setText(f"Settings saved, but the key was not: {exc}")
            return
        self.saved.emit(SavedSettings(key or None, key_in_memory=bool(key) and not self._keyring
                                      and not in_file, key_in_file=bool(key) and in_file))
        self.accept()

    def show_tab(self, page: QWidget) -> None:
        """Bring one page (e.g. `grants_panel`) to the front."""
        self.tabs.setCurrentWidget(page)
