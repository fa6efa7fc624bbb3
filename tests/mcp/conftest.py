"""Helpers for the MCP tests: real servers, THE registry, a real dispatcher."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from kernel.mcp.asks import ServerAsks
from kernel.mcp.config import McpServerConfig, parse_mcp_servers
from kernel.mcp.environment import server_env
from kernel.mcp.launch import ServerLaunch, direct_launch
from kernel.mcp.manager import Backoff, McpManager, ServerState
from kernel.mcp.resources import make_resources_tool
from kernel.tools.dispatch import Dispatcher, NullObserver
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import Progress, ToolCall, ToolResult
from tests.mcp.everything import everything_entry, install

EDGE = Path(__file__).parent / "servers" / "edge.py"
BIN = str(Path(sys.executable).parent)


def edge(*args: str, **extra: Any) -> dict[str, Any]:
    """A Claude-Desktop-style entry that runs the edge-case test server."""
    return {"command": sys.executable, "args": [str(EDGE), *args], **extra}


def gone(pid: int) -> bool:
    """The process has ended (a zombie counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture(scope="session")
def everything() -> dict[str, Any]:
    """The mcpServers entry of server-everything (installed on first use; skipped, saying
    why, when Node or the package cannot be had)."""
    problem = install()
    if problem:
        pytest.skip(f"@modelcontextprotocol/server-everything: {problem}")
    return everything_entry()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_server(port: int, script: Path = EDGE, *args: str) -> subprocess.Popen[bytes]:
    """A test server over streamable HTTP on `port`, once it accepts connections."""
    server = subprocess.Popen([sys.executable, str(script), *args, "--http-port", str(port)],
                              stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              env={"PATH": f"{BIN}:/usr/bin:/bin"})
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    return server


def base_env(home: Path) -> dict[str, str]:
    """The user's environment in these tests (the servers get it through `server_env`)."""
    return {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


@dataclass
class Harness:
    registry: ToolRegistry
    manager: McpManager
    dispatcher: Dispatcher
    published: list[ServerState] = field(default_factory=list)
    progress: list[Progress] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def call(self, name: str, args: Mapping[str, Any] | None = None) -> ToolResult:
        return await self.dispatcher.dispatch(
            ToolCall(f"call-{next(self._ids)}", name, dict(args or {})))

    def seen(self, name: str) -> list[ServerState]:
        return [s for s in self.published if s.name == name]


class ProgressRecorder(NullObserver):
    def __init__(self, into: list[Progress]) -> None:
        self.into = into

    def progress(self, progress: Progress) -> None:
        self.into.append(progress)


@asynccontextmanager
async def harness(
    tmp_path: Path,
    servers: Mapping[str, Any],
    *,
    backoff: Backoff | None = None,
    env: dict[str, str] | None = None,
    ping_interval_s: float = 30.0,
    asks: ServerAsks | None = None,
) -> AsyncIterator[Harness]:
    """A manager with `servers` started (not awaited), stopped at the end."""
    registry = ToolRegistry()
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    progress: list[Progress] = []
    dispatcher = Dispatcher(registry, session_id="mcp-test", workspace=workspace,
                            outputs=OutputStore(tmp_path / "tool-results"),
                            path_policy=PathPolicy(workspace),
                            observer=ProgressRecorder(progress))
    published: list[ServerState] = []
    built = env if env is not None else base_env(tmp_path)

    async def launch_for(config: McpServerConfig) -> ServerLaunch:
        env = server_env(config, source=built, login_path=built["PATH"], writable=())
        return direct_launch(config, env)

    manager = McpManager(registry, launch_for=launch_for, logs_dir=tmp_path / "logs",
                         backoff=backoff or Backoff(0.2, 1.0, 4), on_state=published.append,
                         ping_interval_s=ping_interval_s,
                         asks=asks or ServerAsks(roots=(workspace,)))
    manager.resources_tool = make_resources_tool(manager)
    h = Harness(registry, manager, dispatcher, published, progress)
    await manager.start(parse_mcp_servers(servers))
    try:
        yield h
    finally:
        await manager.aclose()
