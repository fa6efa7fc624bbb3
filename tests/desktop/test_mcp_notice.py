"""An MCP server's failure is said once, briefly, in the status bar, never in the
conversation: the decision as a table, the real window fed the kernel's real message, and
real servers (one that cannot start, one killed) driving the real widget."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem
from desktop.mcp_notice import McpFailureNotice, notice_forms, to_say
from desktop.status_bar import FitButton
from kernel import events as ev
from kernel import protocol as p
from kernel.events import ServerStatus
from kernel.mcp.manager import Backoff, ServerState
from kernel.paths import AppPaths
from tests.desktop.test_main_window import load, make
from tests.mcp.conftest import edge, harness

WAIT = 60.0


def info(name: str, status: str, error: str = "", failures: int = 0,
         stderr: tuple[str, ...] = ()) -> p.McpServerInfo:
    return p.McpServerInfo(name, ServerStatus(status), target=f"/usr/bin/{name}",
                           error=error, failures=failures, stderr_tail=stderr)


FAILED_A = info("a", "failed", "exited with code 3")


@pytest.mark.parametrize(("said", "servers", "fresh", "after"), [
    (set(), [], [], set()),
    (set(), [info("a", "ready")], [], set()),
    (set(), [FAILED_A], ["a"], {"a"}),
    ({"a"}, [FAILED_A], [], {"a"}),  # the same failure again (a run, a new kernel)
    ({"a"}, [info("a", "starting")], [], {"a"}),  # a restart attempt keeps it said
    ({"a"}, [info("a", "failed", "killed by signal 9", 2)], [], {"a"}),  # it failed again
    ({"a"}, [info("a", "ready")], [], set()),  # it came back: a later failure is new
    ({"a"}, [info("a", "disabled")], [], set()),
    ({"a"}, [], [], set()),  # removed from settings
    (set(), [info("a", "starting")], [], set()),  # not failed yet
    ({"a"}, [FAILED_A, info("b", "failed", "timeout"), info("c", "ready")], ["b"], {"a", "b"}),
])
def test_a_failure_is_said_once_until_the_server_was_fine_again(
        said: set[str], servers: list[p.McpServerInfo], fresh: list[str],
        after: set[str]) -> None:
    new, remembered = to_say(frozenset(said), servers)
    assert [s.name for s in new] == fresh and remembered == after


@pytest.mark.parametrize(("names", "forms"), [
    ([], ()),
    (["docs"], ("⚠ MCP server “docs” failed · Details", "⚠ MCP “docs” failed",
                "⚠ MCP failed")),
    (["a", "b"], ("⚠ 2 MCP servers failed · Details", "⚠ 2 MCP failed", "⚠ MCP failed")),
    (["x\ny" + "z" * 40], (f"⚠ MCP server “x\\x0ay{'z' * 25}…” failed · Details",
                           f"⚠ MCP “x\\x0ay{'z' * 25}…” failed", "⚠ MCP failed")),
])
def test_the_status_bar_words_are_brief(names: list[str], forms: tuple[str, ...]) -> None:
    assert notice_forms(names) == forms


def test_the_window_says_a_failure_once_outside_the_conversation(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage("s1", "hi"),
         ev.McpServerEvent("s1", "docs", "failed", "exited with code 3", 0,
                           ["docs: fatal: no database"]))
    w = controller.window
    button = w.mcp_button
    assert button.isHidden()

    failed = info("docs", "failed", "exited with code 3 before it was ready", 1,
                  ("docs: fatal: no database",))
    client.batch.emit([p.McpServerStates((info("web", "ready"), failed))])
    assert not button.isHidden() and button.text() == "⚠ MCP server “docs” failed · Details"
    assert "tools are not available" in button.toolTip()
    texts = [i.text for i in controller.views["s1"].chat.items() if isinstance(i, MessageItem)]
    assert texts == ["hi"], "the conversation says nothing about the server"

    button.click()
    box = controller.mcp_notice.box
    assert box is not None and box.isVisible()
    assert "docs: exited with code 3 before it was ready" in box.informativeText()
    assert "docs: fatal: no database" in box.detailedText()
    assert button.isHidden(), "read: the item goes"

    # Its restarts fail too, and a run goes on: nothing is said again.
    for again in (info("docs", "starting", failures=1),
                  info("docs", "failed", "killed by signal 9", 2)):
        client.batch.emit([p.McpServerStates((info("web", "ready"), again))])
        assert button.isHidden()

    settings = next(b for b in box.buttons() if b.text() == "MCP &settings…")
    settings.click()
    dialog = controller.settings_dialog
    assert dialog is not None and dialog.tabs.currentWidget() is dialog.mcp_panel
    dialog.close()

    # Fine again, then a new failure: said again.
    client.batch.emit([p.McpServerStates((info("docs", "ready"),))])
    client.batch.emit([p.McpServerStates((info("docs", "failed", "no answer", 1),))])
    assert not button.isHidden()


@pytest.mark.slow  # real MCP servers
def test_real_servers_each_failure_said_once(qtbot: QtBot, tmp_path: Path) -> None:
    """A server that cannot start fails three times in a row, then a running one is killed
    and comes back: two notices, one for each."""
    button = FitButton("MCP server failed")
    qtbot.addWidget(button)
    notice = McpFailureNotice(button, lambda: None)

    async def run() -> list[ServerState]:
        servers = {"missing": {"command": "/nonexistent/mcp-server"}, "edge": edge()}
        async with harness(tmp_path, servers, backoff=Backoff(0.01, 0.02, 3)) as h:
            await h.manager.wait_for(
                "missing", lambda s: s.status is ServerStatus.FAILED and s.retry_in_s is None,
                WAIT)
            first = await h.manager.wait_for(
                "edge", lambda s: s.status is ServerStatus.READY, WAIT)
            os.kill(first.pid, 9)
            await h.manager.wait_for(
                "edge", lambda s: s.status is ServerStatus.READY and s.pid != first.pid, WAIT)
            return list(h.published)

    published = asyncio.run(run())
    assert len([s for s in published if s.name == "missing"
                and s.status is ServerStatus.FAILED]) == 3
    latest: dict[str, p.McpServerInfo] = {}
    said: list[str] = []
    for state in published:  # the states as the kernel pushes them, one change at a time
        latest[state.name] = p.McpServerInfo.from_state(state.to_dict())
        notice.update(list(latest.values()))
        if notice.unread:
            said += notice.unread
            notice.show_details()
            assert notice.box is not None
            notice.box.close()
    assert said == ["missing", "edge"]
    assert button.isHidden() or not button.text()
