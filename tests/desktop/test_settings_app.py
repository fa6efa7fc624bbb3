"""The settings dialog in the real app, through the real kernel worker: settings.json is
read, checked as you type and written by the kernel only; `reins doctor`'s facts, every
session's grants, the MCP server form and the Claude Desktop import all come through the
protocol; the prompt is unlocked when the kernel says a run can start."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox
from pytestqt.qtbot import QtBot

from desktop.controller import AppController
from desktop.settings.dialog import SavedSettings, SettingsDialog
from kernel.fakemodel import FakeAnthropicServer
from kernel.paths import AppPaths
from kernel.policy.settings import add_rule
from tests.desktop.conftest import running_app

WAIT = 60_000
EDGE = Path(__file__).parents[1] / "mcp" / "servers" / "edge.py"
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="k-settings") as server:
        yield server


def on_disk(paths: AppPaths) -> dict[str, Any]:
    return json.loads(paths.settings_file.read_text())  # type: ignore[no-any-return]


def opened(qtbot: QtBot, app: AppController) -> SettingsDialog:
    qtbot.waitUntil(lambda: bool(app.settings.path), timeout=WAIT)
    dialog = app.open_settings()
    qtbot.waitUntil(lambda: dialog.loaded, timeout=WAIT)
    return dialog


def test_settings_are_read_checked_and_written_by_the_kernel(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, quiet_home: Path,
        no_keyring: None) -> None:
    with running_app(qtbot, reins_home, fake, api_key="k-settings", model="claude-file",
                     mode="ask", exec={"env": ["JAVA_HOME"]},
                     permissions={"allow": ["write_file(docs/**)"]}) as app:
        dialog = opened(qtbot, app)
        assert (dialog.model_edit.text(), dialog.base_url_edit.text()) == (
            "claude-file", fake.base_url)
        assert dialog.config_label.text() == str(reins_home.settings_file)

        # `reins doctor`'s facts, from the kernel.
        qtbot.waitUntil(lambda: "settings: " in dialog.sandbox_text.toPlainText(),
                        timeout=WAIT)
        report = dialog.sandbox_text.toPlainText()
        assert report.startswith("sandbox:") and "API key: found in the app" in report
        assert f"settings: {reins_home.settings_file}" in report

        # Checked as you type, by the kernel: the bad rule's line in its box.
        allow = dialog.rule_edits["allow"]
        allow.setPlainText("write_file(docs/**)\n\nrun_command(git status")
        qtbot.waitUntil(lambda: dialog.rule_errors["allow"].text().startswith("line 3: "),
                        timeout=WAIT)
        assert not dialog.save_button.isEnabled()
        allow.setPlainText("write_file(docs/**)")
        qtbot.waitUntil(lambda: dialog.save_button.isEnabled(), timeout=WAIT)
        assert dialog.rule_errors["allow"].text() == ""
        dialog.base_url_edit.setText("ftp://nope")
        qtbot.waitUntil(lambda: not dialog.save_button.isEnabled(), timeout=WAIT)
        assert "does not match" in dialog.base_url_edit.toolTip()
        dialog.base_url_edit.setText(fake.base_url)
        qtbot.waitUntil(lambda: dialog.save_button.isEnabled(), timeout=WAIT)

        # Every session's grants, from the kernel; Revoke acts at once.
        qtbot.waitUntil(lambda: [g.rule for g in dialog.grants_panel.grants]
                        == ["write_file(docs/**)"], timeout=WAIT)
        dialog.show_tab(dialog.grants_panel)
        dialog.grants_panel.revoke_button.click()
        qtbot.waitUntil(lambda: dialog.grants_panel.grants == (), timeout=WAIT)
        assert on_disk(reins_home)["permissions"]["allow"] == []
        add_rule(reins_home, "allow", "read_file(~/notes/**)")  # an "always allow" elsewhere

        dialog.model_edit.setText("claude-other")
        dialog.mode_combo.setCurrentText("auto-edit")
        dialog.rule_edits["deny"].setPlainText("read_file(~/.ssh/**)")
        dialog.key_edit.setText("sk-typed")
        with qtbot.waitSignal(dialog.saved, timeout=WAIT) as signal:
            dialog.save_button.click()
        assert signal.args == [SavedSettings("sk-typed", key_in_memory=True)]
        saved = on_disk(reins_home)
        assert (saved["model"], saved["default_mode"]) == ("claude-other", "auto-edit")
        assert saved["permissions"] == {"allow": ["read_file(~/notes/**)"],
                                        "deny": ["read_file(~/.ssh/**)"]}
        assert saved["exec"] == {"env": ["JAVA_HOME"]}, "keys the dialog does not edit stay"
        assert "sk-typed" not in reins_home.settings_file.read_text()
        qtbot.waitUntil(lambda: app.settings.model == "claude-other", timeout=WAIT)
        assert app.window.sessions.default_mode == "auto-edit"

        # A hand edit: the kernel reads it at the next session and tells the app.
        reins_home.settings_file.write_text(json.dumps({**saved, "model": "claude-hand"}))
        workspace = quiet_home / "project"
        workspace.mkdir()
        app._new_session(str(workspace), "ask", False)
        qtbot.waitUntil(lambda: app.settings.model == "claude-hand", timeout=WAIT)
        qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT)
        assert app.views[app.current].info.model == "claude-hand"


def pick(qtbot: QtBot, dialog: SettingsDialog, path: Path) -> None:
    """Choose `path` in the import's file picker, as a person does."""
    picker = dialog.mcp_panel.choose_import()
    qtbot.waitUntil(picker.isVisible, timeout=WAIT)
    picker.selectFile(str(path))
    picker.accept()


def test_mcp_servers_are_added_edited_removed_and_imported_through_the_kernel(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, quiet_home: Path,
        no_keyring: None) -> None:
    mine = {"command": "/bin/true", "disabled": True}
    with running_app(qtbot, reins_home, fake, api_key="k-settings", model="m", mode="ask",
                     mcpServers={"git": mine}) as app:
        dialog = opened(qtbot, app)
        panel = dialog.mcp_panel
        dialog.show_tab(panel)

        # Add: the kernel refuses what it cannot use, in its words; the form stays open.
        form = panel.open_form(None)
        form.name_edit.setText("edge")
        form.kind_combo.setCurrentIndex(form.kind_combo.findData("url"))
        form.url_edit.setText("ftp://example.com")
        form.save_button.click()
        qtbot.waitUntil(lambda: form.problem_label.text().startswith("Not saved: "),
                        timeout=WAIT)
        assert "http://" in form.problem_label.text() and form.isVisible()
        assert "edge" not in on_disk(reins_home)["mcpServers"]
        form.kind_combo.setCurrentIndex(form.kind_combo.findData("command"))
        form.command_edit.setText(sys.executable)
        form.args_edit.setPlainText(str(EDGE))
        form.env_edit.setPlainText("REINS_MCP_MARK=form")
        form.tool_edit.setText("30")
        form.save_button.click()
        qtbot.waitUntil(lambda: not form.isVisible(), timeout=WAIT)
        assert on_disk(reins_home)["mcpServers"]["edge"] == {
            "command": sys.executable, "args": [str(EDGE)],
            "env": {"REINS_MCP_MARK": "form"}, "tool_timeout_s": 30}
        assert on_disk(reins_home)["mcpServers"]["git"] == mine
        qtbot.waitUntil(lambda: getattr(panel.servers.get("edge"), "status", "") == "ready",
                        timeout=WAIT)

        # Edit: the kernel has the new entry, the form's hidden keys are kept.
        for i in range(panel.tree.topLevelItemCount()):
            if panel.tree.topLevelItem(i).text(0) == "git":
                panel.tree.setCurrentItem(panel.tree.topLevelItem(i))
        form = panel.open_form(panel.selected())
        assert form.command_edit.text() == "/bin/true"
        form.args_edit.setPlainText("--version")
        form.save_button.click()
        qtbot.waitUntil(lambda: not form.isVisible(), timeout=WAIT)
        assert on_disk(reins_home)["mcpServers"]["git"] == {**mine, "args": ["--version"]}

        # Remove asks first, then the kernel drops it and stops the server.
        box = panel.ask_remove()
        assert isinstance(box, QMessageBox) and "Remove git" in box.text()
        [remove] = [b for b in box.buttons() if b.text() == "Remove"]
        remove.click()
        qtbot.waitUntil(lambda: "git" not in on_disk(reins_home)["mcpServers"], timeout=WAIT)
        qtbot.waitUntil(lambda: "git" not in panel.servers, timeout=WAIT)

        # Import a Claude Desktop file the user picks: previewed, clashes named, then written.
        claude = quiet_home / "Downloads" / "claude_desktop_config.json"
        claude.parent.mkdir()
        claude.write_text(json.dumps({"mcpServers": {
            "edge": {"command": "uvx", "args": ["other"]},
            "time": {"command": "/bin/true", "args": ["--tz", "UTC"], "disabled": True}}}))
        pick(qtbot, dialog, claude)
        qtbot.waitUntil(lambda: "would add 1" in panel.import_label.text(), timeout=WAIT)
        text = panel.import_label.text()
        assert "time — runs /bin/true --tz UTC" in text
        assert "name already used by a different server" in text and "edge" in text
        assert "time" not in on_disk(reins_home)["mcpServers"], "a preview writes nothing"
        assert panel.confirm_import.isVisible()
        panel.confirm_import.click()
        qtbot.waitUntil(lambda: "added 1" in panel.import_label.text(), timeout=WAIT)
        servers = on_disk(reins_home)["mcpServers"]
        assert servers["time"] == {"command": "/bin/true", "args": ["--tz", "UTC"],
                                   "disabled": True}
        assert servers["edge"]["command"] == sys.executable, "yours is kept"
        assert not panel.confirm_import.isVisible()

        broken = quiet_home / "Downloads" / "broken.json"
        broken.write_text('{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n')
        pick(qtbot, dialog, broken)
        qtbot.waitUntil(lambda: panel.import_label.text().startswith("Cannot import: "),
                        timeout=WAIT)
        assert "line 4" in panel.import_label.text()
        assert not panel.confirm_import.isVisible()
        assert isinstance(dialog.mcp_panel.picker, QFileDialog)


def test_a_base_url_typed_in_settings_unlocks_the_prompt(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, quiet_home: Path,
        no_keyring: None) -> None:
    app = AppController(reins_home)
    qtbot.addWidget(app.window)
    app.start()
    try:
        qtbot.waitUntil(lambda: bool(app.settings.path), timeout=WAIT)
        w = app.window
        assert not app.can_run and w.pages.currentWidget() is w.welcome
        assert "API key" in app.settings.cannot_run
        dialog = opened(qtbot, app)
        dialog.base_url_edit.setText(fake.base_url)
        with qtbot.waitSignal(dialog.saved, timeout=WAIT):
            dialog.save_button.click()
        qtbot.waitUntil(lambda: app.can_run, timeout=WAIT)
        assert w.pages.currentWidget() is not w.welcome
    finally:
        app.shutdown()


def test_anthropic_base_url_alone_unlocks_the_prompt(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, quiet_home: Path,
        no_keyring: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    app = AppController(reins_home)
    qtbot.addWidget(app.window)
    app.start()
    try:
        assert not app.can_run, "nothing says so before the kernel does"
        qtbot.waitUntil(lambda: app.can_run, timeout=WAIT)
        assert app.window.pages.currentWidget() is not app.window.welcome
        assert app.settings.cannot_run == "" and app.api_key is None
    finally:
        app.shutdown()
