"""The settings pages fed by the kernel: the session's grants (in words, revocable) and the
MCP servers (state, enable / disable / restart, Claude Desktop import shown before it is
written). Real widgets, a real settings.json; the kernel side is tested in
test_worker_grants.py and tests/mcp/test_mcp_worker.py."""

from __future__ import annotations

import json
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.settings.dialog import SettingsDialog
from desktop.settings.grants import GrantsPanel
from desktop.settings.mcp import McpPanel
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.policy.settings import add_rule, load_settings, remove_rule

SESSION = p.GrantInfo("run_command(git status)", "run_command: the command `git status` "
                      "(any spacing or quoting) — in this session only", "session", True)
ALWAYS = p.GrantInfo("write_file(docs/**)", "write_file: paths matching docs/** in the "
                     "session's workspace", "always")


def test_grants_are_listed_in_words_and_revoked_one_by_one(qtbot: QtBot) -> None:
    panel = GrantsPanel()
    qtbot.addWidget(panel)
    panel.set_session("Fix the build")
    assert "loading" in panel.session_label.text()
    panel.show_grants((SESSION, ALWAYS))
    assert panel.session_label.text() == "Granted in “Fix the build”"
    rows = [[panel.tree.topLevelItem(i).text(c) for c in range(3)] for i in range(2)]
    assert rows == [
        ["run_command(git status)", "This session", SESSION.words + " (with network)"],
        ["write_file(docs/**)", "Always (settings.json)", ALWAYS.words]]
    assert not panel.empty_label.isVisibleTo(panel)
    panel.tree.setCurrentItem(panel.tree.topLevelItem(1))
    with qtbot.waitSignal(panel.revoke_requested) as signal:
        qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    assert signal.args == ["write_file(docs/**)", "always"]
    assert not panel.revoke_button.isEnabled()  # until the kernel's new list arrives
    panel.show_grants((SESSION,))
    assert panel.tree.topLevelItemCount() == 1 and panel.revoke_button.isEnabled()
    panel.show_grants(())
    assert panel.empty_label.isVisibleTo(panel) and not panel.revoke_button.isEnabled()


def test_no_session_means_nothing_to_revoke(qtbot: QtBot) -> None:
    panel = GrantsPanel()
    qtbot.addWidget(panel)
    panel.set_session(None)
    assert "Open a session" in panel.session_label.text()
    assert not panel.tree.isEnabled() and not panel.revoke_button.isEnabled()


READY = p.McpServerInfo("git", "ready", "ready with 2 tools", "uvx mcp-server-git",
                        ("mcp__git__log", "mcp__git__diff"), pid=41)
FAILED = p.McpServerInfo("broken", "failed", "failed: exited with code 3; retrying in 2 s",
                         "python broken.py", error="exited with code 3",
                         stderr_tail=("Traceback (most recent call last):", "boom"),
                         failures=1, retry_in_s=2.0)
DISABLED = p.McpServerInfo("time", "disabled", "disabled", "uvx mcp-server-time")


def select(panel: McpPanel, name: str) -> None:
    for i in range(panel.tree.topLevelItemCount()):
        item = panel.tree.topLevelItem(i)
        if item.text(0) == name:
            panel.tree.setCurrentItem(item)
            return
    raise AssertionError(f"{name} is not listed")


def test_servers_show_their_state_and_offer_the_fitting_actions(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    panel = McpPanel(reins_home, find_config=lambda: None)
    qtbot.addWidget(panel)
    assert not panel.import_button.isVisibleTo(panel)
    panel.set_states((READY, FAILED, DISABLED))
    states = {panel.tree.topLevelItem(i).text(0): panel.tree.topLevelItem(i).text(1)
              for i in range(3)}
    assert states == {"git": "ready with 2 tools",
                      "broken": "failed: exited with code 3; retrying in 2 s",
                      "time": "disabled"}
    select(panel, "broken")
    details = panel.details.toPlainText()
    assert "Error: exited with code 3" in details and "  boom" in details
    assert panel.restart_button.isEnabled() and panel.disable_button.isEnabled()
    assert not panel.enable_button.isEnabled()
    with qtbot.waitSignal(panel.action_requested) as signal:
        qtbot.mouseClick(panel.restart_button, Qt.MouseButton.LeftButton)
    assert signal.args == ["broken", "restart"]
    select(panel, "time")
    assert panel.enable_button.isEnabled()
    assert not panel.disable_button.isEnabled() and not panel.restart_button.isEnabled()
    with qtbot.waitSignal(panel.action_requested) as signal:
        qtbot.mouseClick(panel.enable_button, Qt.MouseButton.LeftButton)
    assert signal.args == ["time", "enable"]
    select(panel, "git")
    assert "Tools: mcp__git__log, mcp__git__diff" in panel.details.toPlainText()
    # A pushed update keeps the selection.
    panel.set_states((p.McpServerInfo("git", "starting", "starting", "uvx mcp-server-git"),
                      FAILED, DISABLED))
    assert panel.selected() == "git" and panel.details.toPlainText().startswith(
        "git: starting")
    panel.set_states((), error="MCP servers not started: mcpServers.x: bad")
    assert panel.state_label.text() == "MCP servers not started: mcpServers.x: bad"


def test_claude_desktop_import_is_shown_then_written(qtbot: QtBot, reins_home: AppPaths,
                                                     tmp_path: Path) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    mine = {"command": "my-git", "args": []}
    reins_home.settings_file.write_text(json.dumps(
        {"model": "m", "mcpServers": {"git": mine}}))
    claude = tmp_path / "Claude" / "claude_desktop_config.json"
    claude.parent.mkdir()
    claude.write_text(json.dumps({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"]},
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "web": {"url": "https://example.com/mcp"}}}))
    panel = McpPanel(reins_home, find_config=lambda: claude)
    qtbot.addWidget(panel)
    assert panel.import_button.isVisibleTo(panel)
    assert str(claude) in panel.import_label.text()
    with qtbot.assertNotEmitted(panel.imported):
        qtbot.mouseClick(panel.import_button, Qt.MouseButton.LeftButton)
    text = panel.import_label.text()
    assert "would add 2: time, web" in text
    assert "different definition (yours is kept): git" in text
    assert json.loads(reins_home.settings_file.read_text())["mcpServers"] == {"git": mine}
    assert panel.confirm_import.isVisibleTo(panel)
    with qtbot.waitSignal(panel.imported):
        qtbot.mouseClick(panel.confirm_import, Qt.MouseButton.LeftButton)
    servers = load_settings(reins_home).mcp_servers
    assert servers == {"git": mine, "time": {"command": "uvx", "args": ["mcp-server-time"]},
                       "web": {"url": "https://example.com/mcp"}}
    assert load_settings(reins_home).model == "m"
    assert "Imported time, web" in panel.import_label.text()
    assert not panel.confirm_import.isVisibleTo(panel)
    qtbot.mouseClick(panel.import_button, Qt.MouseButton.LeftButton)
    assert "Nothing new to import." in panel.import_label.text()
    assert not panel.confirm_import.isVisibleTo(panel)


def test_a_broken_claude_desktop_file_is_explained_not_imported(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    claude = tmp_path / "claude_desktop_config.json"
    claude.write_text('{"mcpServers": {"x": {"args": []}}}')
    panel = McpPanel(reins_home, find_config=lambda: claude)
    qtbot.addWidget(panel)
    qtbot.mouseClick(panel.import_button, Qt.MouseButton.LeftButton)
    assert panel.import_label.text().startswith("Cannot import: ")
    assert "mcpServers.x" in panel.import_label.text()
    assert not panel.confirm_import.isVisibleTo(panel)
    assert not reins_home.settings_file.exists()


def test_saving_settings_keeps_a_rule_revoked_while_the_dialog_was_open(
        qtbot: QtBot, reins_home: AppPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring, "get_keyring", keyring.backends.fail.Keyring)
    add_rule(reins_home, "allow", "run_command(git status)")
    dialog = SettingsDialog(reins_home, diagnostics=lambda: "ok", find_mcp_config=lambda: None)
    qtbot.addWidget(dialog)
    assert dialog.tabs.tabText(dialog.tabs.indexOf(dialog.grants_panel)) == "&Grants"
    assert dialog.tabs.indexOf(dialog.mcp_panel) >= 0
    remove_rule(reins_home, "allow", "run_command(git status)")  # e.g. from the Grants page
    add_rule(reins_home, "allow", "read_file(~/notes/**)")  # e.g. an "always allow"
    dialog.model_edit.setText("claude-other")
    dialog.rule_edits["deny"].setPlainText("read_file(~/.ssh/**)")
    dialog.save()
    settings = load_settings(reins_home)
    assert settings.model == "claude-other"
    assert [r.text for r in settings.permissions.allow.rules] == ["read_file(~/notes/**)"]
    assert [r.text for r in settings.permissions.deny.rules] == ["read_file(~/.ssh/**)"]
