"""Grants and MCP servers through the whole app: real widgets, a real kernel worker, the real
anthropic client against the fake model, a real MCP server. Allow a command for the session,
see it in the status bar and on the Grants page, revoke it there, and the next equivalent
call asks again; disable an MCP server from Settings and find it saved in settings.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.controller import AppController
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import approval_card, click_answer, running_app
from tests.desktop.test_app_e2e import running, type_prompt
from tests.mcp.conftest import edge

WAIT_MS = 90_000
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-perm-key") as server:
        yield server
        server.release()


@pytest.fixture
def app(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[AppController]:
    monkeypatch.setattr(keyring, "get_keyring", keyring.backends.fail.Keyring)
    with running_app(qtbot, reins_home, fake, api_key="sk-perm-key", model="claude-perm",
                     mode="ask", mcpServers={"edge": edge()}) as controller:
        yield controller


def test_grant_revoked_in_settings_asks_again_and_mcp_server_disabled(
        qtbot: QtBot, app: AppController, fake: FakeAnthropicServer, workspace: Path,
        reins_home: AppPaths) -> None:
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "ask", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    fake.add(reply(ToolUse("run_command", {"command": "echo granted"})), reply("first done"),
             reply(ToolUse("run_command", {"command": "echo  granted"})), reply("second done"))

    type_prompt(qtbot, app, "run it")
    approval = approval_card(qtbot, app, timeout=WAIT_MS)
    assert "run_command(echo granted)" in approval.always_rule.text()
    click_answer(qtbot, approval, approval.buttons["allow_session"])
    qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.grants_button.isVisibleTo(w), timeout=WAIT_MS)
    assert w.grants_button.text() == "1 grant"

    # The status bar's button opens Settings on the session's grants; revoke it there.
    qtbot.mouseClick(w.grants_button, Qt.MouseButton.LeftButton)
    dialog = app.settings_dialog
    assert dialog is not None and dialog.isVisible()
    panel = dialog.grants_panel
    assert dialog.tabs.currentWidget() is panel
    qtbot.waitUntil(lambda: panel.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    row = panel.tree.topLevelItem(0)
    assert row.text(0) == "run_command(echo granted)"
    assert row.text(1).endswith("” (open now)"), "the session it holds in, the open one"
    assert "in this session only" in row.text(2)
    qtbot.mouseClick(panel.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.tree.topLevelItemCount() == 0, timeout=WAIT_MS)
    assert panel.empty_label.isVisibleTo(panel)
    assert not w.grants_button.isVisibleTo(w)

    # MCP servers: the edge server is ready; disable it.
    mcp = dialog.mcp_panel
    dialog.show_tab(mcp)

    def edge_status() -> str:
        info = mcp.servers.get("edge")
        return info.status if info is not None else ""

    qtbot.waitUntil(lambda: edge_status() == "ready", timeout=WAIT_MS)
    assert mcp.tree.topLevelItem(0).text(1).startswith("ready with ")
    mcp.tree.setCurrentItem(mcp.tree.topLevelItem(0))
    qtbot.mouseClick(mcp.disable_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: edge_status() == "disabled", timeout=WAIT_MS)
    saved = json.loads(reins_home.settings_file.read_text())
    assert saved["mcpServers"]["edge"]["disabled"] is True
    assert mcp.enable_button.isEnabled() and not mcp.restart_button.isEnabled()
    dialog.reject()

    # The revoked grant no longer matches: the equivalent call asks again.
    type_prompt(qtbot, app, "run it again")
    approval = approval_card(qtbot, app, timeout=WAIT_MS)
    assert approval.request.input == {"command": "echo  granted"}
    click_answer(qtbot, approval, approval.deny)
    qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
