"""The desktop's kernel worker starts the settings' MCP servers and ends them with itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
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
