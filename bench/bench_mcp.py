"""MCP servers as tools: start-up of three servers, and the cost of a call through dispatch.

Figures, each against a floor measured in the same run:
- kernel start to every tool of 3 servers registered (mcp-server-time, mcp-server-git on a
  fresh repository, the FastMCP edge test server), started concurrently by the manager —
  against the slowest of the three started alone with the SDK (initialize + tools/list);
  the ideal ratio is 1 (concurrency hides all but the slowest);
- one call of an MCP tool (`echo`) through the Dispatcher (lookup, validation, gate, the
  manager, result mapping) — against the same call made directly on the SDK ClientSession
  of the same server process, alternating call by call; the median of the paired
  differences is Reins' overhead per call.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from bench.common import Stats, fmt_seconds, report, stats
from kernel.mcp.manager import ServerStatus
from kernel.mcp.startup import start_mcp_servers
from kernel.paths import AppPaths
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall

ROOT = Path(__file__).resolve().parent.parent
EDGE = ROOT / "tests" / "mcp" / "servers" / "edge.py"
BIN = Path(sys.executable).parent
STARTS = 3
CALLS = 400
EDGE_ENTRY: dict[str, Any] = {"command": sys.executable, "args": [str(EDGE)]}


def _repo(path: Path) -> Path:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "f.txt").write_text("x\n")
    subprocess.run(["git", "-C", str(path), "add", "f.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "init"], check=True, env=env)
    return path


def _servers(repo: Path) -> dict[str, dict[str, Any]]:
    return {
        "time": {"command": str(BIN / "mcp-server-time")},
        "git": {"command": str(BIN / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "edge": EDGE_ENTRY,
    }


async def _kernel_start(paths: AppPaths, servers: dict[str, Any]) -> float:
    registry = ToolRegistry()
    started = time.perf_counter()
    manager = await start_mcp_servers(registry, paths, servers)
    try:
        states = await manager.wait_settled(120)
        elapsed = time.perf_counter() - started
        bad = [s for s in states if s.status is not ServerStatus.READY]
        if bad:
            raise RuntimeError(f"servers not ready: {[(s.name, s.summary) for s in bad]}")
        return elapsed
    finally:
        await manager.aclose()


async def _sdk_start(entry: dict[str, Any], env: dict[str, str]) -> float:
    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=env)
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            return time.perf_counter() - started


async def _call_overhead(paths: AppPaths) -> tuple[Stats, Stats, Stats]:
    registry = ToolRegistry()
    manager = await start_mcp_servers(registry, paths, {"edge": EDGE_ENTRY})
    workspace = paths.data / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    dispatcher = Dispatcher(registry, session_id="bench", workspace=workspace,
                            outputs=OutputStore(paths.data / "out"),
                            path_policy=PathPolicy(workspace))
    counter = iter(range(10**9))
    try:
        await manager.wait_settled(120)
        connection = manager.connection("edge")
        session = connection.session if connection is not None else None
        if session is None:
            raise RuntimeError(f"edge is not ready: {manager.state('edge').summary}")

        async def direct() -> None:
            result = await session.call_tool("echo", {"text": "hello"})
            assert result.content[0].text == "hello"

        async def through_dispatch() -> None:
            result = await dispatcher.dispatch(
                ToolCall(f"c{next(counter)}", "mcp__edge__echo", {"text": "hello"}))
            assert result.text == "hello", result.content

        for _ in range(30):
            await direct()
            await through_dispatch()
        floors, ours, differences = [], [], []
        for i in range(CALLS):
            first, second = (direct, through_dispatch) if i % 2 else (through_dispatch, direct)
            times = {}
            for fn in (first, second):
                t0 = time.perf_counter()
                await fn()
                times[fn] = time.perf_counter() - t0
            floors.append(times[direct])
            ours.append(times[through_dispatch])
            differences.append(times[through_dispatch] - times[direct])
        return stats(floors), stats(ours), stats(differences)
    finally:
        await manager.aclose()


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = AppPaths(data=root / "data", config=root / "config")
        paths.data.mkdir(parents=True)
        servers = _servers(_repo(root / "repo"))
        env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8"}

        async def starts() -> tuple[list[float], list[float]]:
            ours, floors = [], []
            for _ in range(STARTS):
                alone = [await _sdk_start(entry, env) for entry in servers.values()]
                floors.append(max(alone))
                ours.append(await _kernel_start(paths, servers))
            return ours, floors

        ours, floors = asyncio.run(starts())
        ours_s, floor_s = stats(ours).median, stats(floors).median
        report("slowest of 3 servers alone (SDK), floor", fmt_seconds(floor_s))
        report("kernel start → all tools of 3 servers registered", fmt_seconds(ours_s),
               ratio=ours_s / floor_s, goal="≤ 2× the slowest alone on 2 cores",
               ok=ours_s <= 2 * floor_s)

        floor, through, paired = asyncio.run(_call_overhead(paths))
        overhead = paired.median
        report("MCP call, direct SDK ClientSession (floor)", fmt_seconds(floor.median))
        report("MCP call through dispatch", fmt_seconds(through.median),
               ratio=through.median / floor.median)
        report("overhead per call (median of paired differences)", fmt_seconds(overhead),
               ratio=overhead / floor.median, goal="≤ 1 ms", ok=overhead <= 1e-3)
