"""The desktop's kernel worker starts the settings' MCP servers and ends them with itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.mcp.conftest import edge
from tests.mcp.test_mcp_cli import _edge_processes

WAIT_MS = 60_000


@pytest.fixture
def client(qtbot: QtBot, reins_home: AppPaths) -> Iterator[KernelClient]:
    kc = KernelClient()
    yield kc
    kc.stop()


def test_worker_starts_servers_in_the_background_and_ends_them(
        qtbot: QtBot, client: KernelClient, reins_home: AppPaths) -> None:
    mark = uuid.uuid4().hex
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(
        {"mcpServers": {"edge": edge(env={"REINS_MCP_MARK": mark})}}))
    readies = []
    client.ready.connect(readies.append)
    client.start()
    qtbot.waitUntil(lambda: bool(readies), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(_edge_processes(mark)) == 1, timeout=WAIT_MS)
    (server,) = _edge_processes(mark)
    process = client.process
    client.stop()
    assert process is not None and process.exitcode == 0
    qtbot.waitUntil(lambda: not _edge_processes(mark), timeout=WAIT_MS)
    assert server not in _edge_processes(mark)


def _states(messages: list[p.Message]) -> list[p.McpServerStates]:
    return [m for m in messages if isinstance(m, p.McpServerStates)]


def _server(messages: list[p.Message], name: str) -> p.McpServerInfo | None:
    states = _states(messages)
    if not states:
        return None
    return next((s for s in states[-1].servers if s.name == name), None)


def test_worker_pushes_server_states_and_obeys_enable_disable_restart(
        qtbot: QtBot, client: KernelClient, reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(
        {"mcpServers": {"edge": edge(), "broken": edge("--die-at-start")}}))
    messages: list[p.Message] = []
    client.batch.connect(messages.extend)
    client.start()

    def status(name: str) -> str:
        info = _server(messages, name)
        return info.status if info is not None else ""

    qtbot.waitUntil(lambda: status("edge") == "ready", timeout=WAIT_MS)
    ready = _server(messages, "edge")
    assert ready is not None and ready.pid > 0
    assert ready.summary.startswith("ready with ") and "mcp__edge__echo" in ready.tools
    qtbot.waitUntil(lambda: status("broken") == "failed", timeout=WAIT_MS)
    broken = _server(messages, "broken")
    assert broken is not None and broken.error and broken.stderr_tail

    client.send(p.McpServerAction("edge", "disable"))
    qtbot.waitUntil(lambda: status("edge") == "disabled", timeout=WAIT_MS)
    on_disk = json.loads(reins_home.settings_file.read_text())
    assert on_disk["mcpServers"]["edge"]["disabled"] is True
    assert _server(messages, "edge").tools == ()  # type: ignore[union-attr]

    mark = len(messages)
    client.send(p.McpServerAction("edge", "restart"))
    qtbot.waitUntil(lambda: any(isinstance(m, p.CommandFailed) for m in messages[mark:]),
                    timeout=WAIT_MS)
    assert "enable it first" in next(m.message for m in messages[mark:]
                                     if isinstance(m, p.CommandFailed))

    client.send(p.McpServerAction("edge", "enable"))
    qtbot.waitUntil(lambda: status("edge") == "ready", timeout=WAIT_MS)
    assert "disabled" not in json.loads(reins_home.settings_file.read_text())["mcpServers"][
        "edge"]
    first_pid = _server(messages, "edge").pid  # type: ignore[union-attr]

    mark = len(messages)
    client.send(p.McpServerAction("edge", "restart"))
    qtbot.waitUntil(lambda: any(s.name == "edge" and s.status == "starting"
                                for m in _states(messages[mark:]) for s in m.servers),
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: status("edge") == "ready", timeout=WAIT_MS)
    assert _server(messages, "edge").pid != first_pid  # type: ignore[union-attr]

    mark = len(messages)
    client.send(p.ListMcpServers())
    qtbot.waitUntil(lambda: bool(_states(messages[mark:])), timeout=WAIT_MS)
    assert {s.name for s in _states(messages[mark:])[0].servers} == {"edge", "broken"}


def test_worker_applies_servers_added_to_settings(
        qtbot: QtBot, client: KernelClient, reins_home: AppPaths) -> None:
    messages: list[p.Message] = []
    client.batch.connect(messages.extend)
    client.start()
    qtbot.waitUntil(lambda: any(isinstance(m, p.KernelReady) for m in messages),
                    timeout=WAIT_MS)
    client.send(p.ListMcpServers())
    qtbot.waitUntil(lambda: bool(_states(messages)), timeout=WAIT_MS)
    assert _states(messages)[-1].servers == ()
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps({"mcpServers": {"edge": edge()}}))
    client.send(p.GetSettings())  # the kernel reads settings.json again
    qtbot.waitUntil(lambda: (_server(messages, "edge") or p.McpServerInfo("", "")).status
                    == "ready", timeout=WAIT_MS)
