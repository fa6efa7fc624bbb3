"""The settings pages fed by the kernel: every session's grants (in words, revocable at
once), the MCP servers (state, enable / disable / restart, the add/edit form's fields ↔
entry, the import preview in words). Real widgets; through the real kernel worker:
test_settings_app.py, tests/kernel/test_settings_owner.py and test_worker_grants.py."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.settings.grants import GrantsPanel, granted_in, in_order
from desktop.settings.mcp import McpPanel, describe_plan
from desktop.settings.mcp_entry import ServerFields, entry_of, fields_of
from kernel import protocol as p

SESSION = p.GrantInfo("run_command(git status)", "run_command: the command `git status` "
                      "(any spacing or quoting) — in this session only", "session", True,
                      "s1", "Fix the build")
OTHER = p.GrantInfo("run_command(ls)", "run_command: the command `ls` — in this session only",
                    "session", False, "s2", "")
ALWAYS = p.GrantInfo("write_file(docs/**)", "write_file: paths matching docs/** in the "
                     "session's workspace", "always")


@pytest.mark.parametrize(("grant", "current", "words"), [
    (SESSION, "s1", "“Fix the build” (open now)"),
    (SESSION, "s2", "“Fix the build”"),
    (SESSION, None, "“Fix the build”"),
    (OTHER, None, "“Untitled session”"),
    (ALWAYS, "s1", "Every session (settings.json)"),
    (ALWAYS, None, "Every session (settings.json)"),
])
def test_where_a_grant_holds_in_words(grant: p.GrantInfo, current: str | None,
                                      words: str) -> None:
    assert granted_in(grant, current) == words


@pytest.mark.parametrize(("current", "order"), [
    (None, [OTHER, SESSION, ALWAYS]),
    ("s1", [SESSION, OTHER, ALWAYS]),
    ("s2", [OTHER, SESSION, ALWAYS]),
    ("nope", [OTHER, SESSION, ALWAYS]),
])
def test_the_open_sessions_grants_come_first(current: str | None,
                                             order: list[p.GrantInfo]) -> None:
    assert in_order((ALWAYS, OTHER, SESSION), current) == order


def test_every_sessions_grants_are_listed_in_words_and_revoked_at_once(qtbot: QtBot) -> None:
    panel = GrantsPanel()
    qtbot.addWidget(panel)
    assert "acts at once" in panel.intro.text() and "Save and Cancel do not undo" in \
        panel.intro.text()
    assert panel.revoke_button.text() == "&Revoke now"
    panel.show_all((ALWAYS, OTHER, SESSION), current="s1")
    rows = [[panel.tree.topLevelItem(i).text(c) for c in range(3)] for i in range(3)]
    assert rows == [
        ["run_command(git status)", "“Fix the build” (open now)",
         SESSION.words + " (with network)"],
        ["run_command(ls)", "“Untitled session”", OTHER.words],
        ["write_file(docs/**)", "Every session (settings.json)", ALWAYS.words]]
    assert not panel.empty_label.isVisibleTo(panel)
    panel.tree.setCurrentItem(panel.tree.topLevelItem(1))
    with qtbot.waitSignal(panel.revoke_requested) as signal:
        qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    assert signal.args == ["s2", "run_command(ls)", "session"]
    assert not panel.revoke_button.isEnabled()  # until the kernel's new list arrives
    panel.tree.setCurrentItem(panel.tree.topLevelItem(2))
    panel.show_all((SESSION, ALWAYS), current="s1")
    assert panel.selected() == ("", "write_file(docs/**)", "always"), "the choice is kept"
    with qtbot.waitSignal(panel.revoke_requested) as signal:
        qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    assert signal.args == ["", "write_file(docs/**)", "always"]
    panel.show_all(())
    assert panel.empty_label.isVisibleTo(panel) and not panel.revoke_button.isEnabled()
    assert "Nothing is granted" in panel.empty_label.text()


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


def test_servers_show_their_state_and_offer_the_fitting_actions(qtbot: QtBot) -> None:
    panel = McpPanel()
    qtbot.addWidget(panel)
    assert "act at once" in panel.intro.text() and "Save and Cancel do not undo" in \
        panel.intro.text()
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




FULL = {"command": "uvx", "args": ["mcp-server-git", "--repository", "/r"],
        "env": {"GIT_AUTHOR_NAME": "me", "X": "a=b"}, "cwd": "/w", "sandbox": True,
        "startup_timeout_s": 90, "tool_timeout_s": 2.5, "disabled": True}


@pytest.mark.parametrize("entry", [
    FULL,
    {"command": "npx"},
    {"command": "x", "args": ["a b", "--c=d"]},
    {"url": "https://example.com/mcp"},
    {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"},
     "tool_timeout_s": 30, "disabled": True},
    {"url": "http://127.0.0.1:9/mcp", "type": "streamable-http"},
    {"command": "x", "type": "stdio"},
])
def test_an_entry_survives_the_form_unchanged(entry: dict[str, Any]) -> None:
    assert entry_of(fields_of("git", entry), entry) == (entry, [])


@pytest.mark.parametrize(("fields", "entry", "problems"), [
    (ServerFields("t", command=" uvx ", args="mcp-server-time\n\n--local-timezone=UTC\n"),
     {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]}, []),
    (ServerFields("t", command="x", env="A=1\n\nB = two=2\nC=\n"),
     {"command": "x", "env": {"A": "1", "B": " two=2", "C": ""}}, []),
    (ServerFields("t", command="x", env="A=1\nnot a pair\n=v"),
     {"command": "x", "env": {"A": "1"}},
     ["environment line 2: NAME=value expected, got 'not a pair'",
      "environment line 3: NAME=value expected, got '=v'"]),
    (ServerFields("t", command="x", startup_timeout_s="ninety", tool_timeout_s=" 7 "),
     {"command": "x", "tool_timeout_s": 7},
     ["the startup timeout must be a number of seconds, got 'ninety'"]),
    (ServerFields("t", command="x", tool_timeout_s="0.5"), {"command": "x",
                                                           "tool_timeout_s": 0.5}, []),
    (ServerFields("t", kind="url", url=" https://e/mcp ", command="ignored", sandbox=True),
     {"url": "https://e/mcp"}, []),
    (ServerFields("", command="x"), {"command": "x"}, ["the server needs a name"]),
    (ServerFields("   ", command="x"), {"command": "x"}, ["the server needs a name"]),
    (ServerFields(" git", command="x"), {"command": "x"},
     ["the name must not start or end with spaces"]),
    (ServerFields("t", command=""), {"command": ""}, []),  # the kernel says what is missing
    (ServerFields("t", cwd=" /w ", command="x", sandbox=True),
     {"command": "x", "cwd": "/w", "sandbox": True}, []),
])
def test_the_form_makes_the_entry_and_names_shape_problems(
        fields: ServerFields, entry: dict[str, Any], problems: list[str]) -> None:
    assert entry_of(fields) == (entry, problems)


@pytest.mark.parametrize(("original", "kind", "kept"), [
    ({"command": "x", "disabled": True, "type": "stdio"}, "command",
     {"disabled": True, "type": "stdio"}),
    ({"command": "x", "disabled": True, "type": "stdio"}, "url", {"disabled": True}),
    ({"url": "https://e", "headers": {"A": "b"}}, "url", {"headers": {"A": "b"}}),
    ({"url": "https://e", "headers": {"A": "b"}, "type": "http"}, "command", {}),
])
def test_keys_the_form_does_not_show_are_kept_where_they_still_apply(
        original: dict[str, Any], kind: str, kept: dict[str, Any]) -> None:
    fields = ServerFields("s", kind=kind, command="c", url="https://u")  # type: ignore[arg-type]
    entry, problems = entry_of(fields, original)
    assert problems == []
    assert {k: v for k, v in entry.items() if k in ("disabled", "type", "headers")} == kept


@pytest.mark.parametrize(("plan", "lines"), [
    (p.McpImportPlan("/c.json", ("time", "web"), ("uvx mcp-server-time", "https://e/mcp"),
                     ("same",), ("git",)),
     ["From /c.json:", "would add 2:", "  time — runs uvx mcp-server-time",
      "  web — runs https://e/mcp", "already here, identical: same",
      "name already used by a different server (yours is kept, this one is not imported): "
      "git"]),
    (p.McpImportPlan("/c.json", ("time",), ("uvx t",), written=True),
     ["From /c.json:", "added 1:", "  time — runs uvx t"]),
    (p.McpImportPlan("/c.json", (), (), ("a",), ()),
     ["From /c.json:", "already here, identical: a", "Nothing new to import."]),
    (p.McpImportPlan("/c.json", error="/c.json is not valid JSON: x at line 4, column 3"),
     ["Cannot import: /c.json is not valid JSON: x at line 4, column 3"]),
])
def test_an_import_plan_in_words(plan: p.McpImportPlan, lines: list[str]) -> None:
    assert describe_plan(plan).splitlines() == lines


def test_the_form_checks_its_shape_then_waits_for_the_kernel(qtbot: QtBot) -> None:
    panel = McpPanel()
    qtbot.addWidget(panel)
    panel.show_settings(p.SettingsSnapshot("/c/settings.json",
                                           {"mcpServers": {"git": FULL, "time": {
                                               "command": "uvx"}}}))
    panel.set_states((p.McpServerInfo("git", "disabled"), p.McpServerInfo("time", "ready")))
    select(panel, "git")
    assert panel.edit_button.isEnabled() and panel.remove_button.isEnabled()
    form = panel.open_form("git")
    qtbot.addWidget(form)
    assert form.args_edit.toPlainText() == "mcp-server-git\n--repository\n/r"
    assert form.sandbox_check.isChecked() and form.startup_edit.text() == "90"
    form.name_edit.setText("time")
    sent: list[p.Message] = []
    panel.command.connect(sent.append)
    form.save_button.click()
    assert "'time' is already configured" in form.problem_label.text() and sent == []
    form.name_edit.setText("git2")
    form.env_edit.setPlainText("oops")
    form.save_button.click()
    assert "environment line 1" in form.problem_label.text() and sent == []
    form.env_edit.setPlainText("A=1")
    form.save_button.click()
    [update] = sent
    assert isinstance(update, p.UpdateSettings) and not update.check_only
    assert update.changes == (
        p.SettingChange(("mcpServers", "git2"), {**FULL, "env": {"A": "1"}}),
        p.SettingChange(("mcpServers", "git"), remove=True))
    assert form.problem_label.text() == "Checking with the kernel…"
    assert not form.save_button.isEnabled()
    panel.show_settings(p.SettingsSnapshot("/c/settings.json", request_id=update.request_id,
                                           problems=(p.SettingsProblem(
                                               ("mcpServers", "git2"), "mcpServers.git2: bad"),)))
    assert form.isVisible() and form.problem_label.text() == "Not saved: mcpServers.git2: bad"
    form.save_button.click()
    with qtbot.waitSignal(form.finished):
        panel.show_settings(p.SettingsSnapshot("/c/settings.json", {"mcpServers": {
            "git2": FULL}}, request_id=sent[-1].request_id))
    assert "Saved git2" in panel.state_label.text()
