"""Per-server timeouts (`startup_timeout_s`, `tool_timeout_s`), progress that keeps a long
call alive, and calls made while a server is down (they wait for its planned restart when it
comes within the call's timeout, and say whether the server was gone before or died during
the call). Real server processes (tests/mcp/servers/edge.py)."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernel.mcp.config import McpConfigError, parse_mcp_servers
from kernel.mcp.manager import Backoff, ServerStatus, restart_wait
from kernel.mcp.stdio import _dying
from kernel.mcp.tools import MAX_CALL_S
from kernel.tools.spec import ErrorCode, ToolError
from tests.mcp.conftest import edge, gone, harness

WAIT = 60.0


def _ready(state: Any) -> bool:
    return state.status is ServerStatus.READY


def test_timeouts_default_and_are_per_server() -> None:
    plain, tuned, remote = parse_mcp_servers({
        "plain": {"command": "x"},
        "tuned": {"command": "x", "startup_timeout_s": 5, "tool_timeout_s": 0.25},
        "remote": {"url": "http://h/mcp", "startup_timeout_s": 90.5, "tool_timeout_s": 600},
    })
    assert (plain.startup_timeout_s, plain.tool_timeout_s) == (60.0, 120.0)
    assert (tuned.startup_timeout_s, tuned.tool_timeout_s) == (5.0, 0.25)
    assert (remote.startup_timeout_s, remote.tool_timeout_s) == (90.5, 600.0)


@pytest.mark.parametrize("key", ["startup_timeout_s", "tool_timeout_s"])
@pytest.mark.parametrize(("value", "message"), [
    (0, "must be a number of seconds above 0 and at most 86400, got 0"),
    (-1, "got -1"),
    (86_401, "got 86401"),
    (math.inf, "got inf"),
    (math.nan, "got nan"),
    ("60", "expected number, got a string"),
    (True, "expected number, got a boolean"),
    (None, "expected number, got null"),
    ([60], "expected number, got an array"),
])
def test_bad_timeouts_are_refused_naming_the_key(key: str, value: Any, message: str) -> None:
    with pytest.raises(McpConfigError) as err:
        parse_mcp_servers({"srv": {"command": "x", key: value}})
    assert f"mcpServers.srv.{key}: " in str(err.value) and message in str(err.value)


NOW = 1000.0


@pytest.mark.parametrize(("status", "retry_at", "now", "deadline", "expected"), [
    (ServerStatus.STARTING, None, NOW, NOW + 5, None),
    (ServerStatus.READY, None, NOW, NOW + 5, None),  # ready but its session just went away
    (ServerStatus.FAILED, NOW + 1, NOW, NOW + 5, None),
    (ServerStatus.FAILED, NOW + 5, NOW, NOW + 5, None),
    (ServerStatus.FAILED, NOW - 1, NOW, NOW + 5, None),  # restart due: starting any moment
    (ServerStatus.FAILED, NOW + 60, NOW, NOW + 5,
     "its restart in 60 s comes after this call's 5 s timeout"),
    (ServerStatus.FAILED, None, NOW, NOW + 5, "it is not restarted automatically any more"),
    (ServerStatus.DISABLED, None, NOW, NOW + 5, "it is disabled in settings"),
    (ServerStatus.DISABLED, NOW + 1, NOW, NOW + 5, "it is disabled in settings"),
    (ServerStatus.STARTING, None, NOW + 5, NOW + 5,
     "it did not come back within this call's 5 s timeout"),
    (ServerStatus.FAILED, NOW + 1, NOW + 6, NOW + 5,
     "it did not come back within this call's 5 s timeout"),
])
def test_whether_a_call_waits_for_a_restart(status: ServerStatus, retry_at: float | None,
                                            now: float, deadline: float,
                                            expected: str | None) -> None:
    assert restart_wait(status, retry_at, now, deadline, 5.0) == expected


def test_progress_keeps_a_call_longer_than_its_timeout_alive(tmp_path: Path) -> None:
    """tool_timeout_s 1: a 3 s tool reporting every 0.3 s finishes; the same tool reporting
    every 2 s, and a silent one, are cancelled after about 1 s of silence."""

    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(tool_timeout_s=1)}) as h:
            await h.manager.wait_for("edge", _ready, WAIT)
            spec = h.registry.get("mcp__edge__long_work")
            assert spec is not None and spec.timeout_s == MAX_CALL_S
            started = time.monotonic()
            done = await h.call("mcp__edge__long_work", {"seconds": 3, "every": 0.3})
            assert not done.is_error, done.content
            assert done.text.startswith("worked 3.0 s in ") and time.monotonic() - started >= 3
            assert len(h.progress) >= 9
            assert h.progress[0].last_line == "still working (1) (1)"

            sparse = await h.call("mcp__edge__long_work", {"seconds": 6, "every": 2})
            assert sparse.is_error and sparse.error_code is ErrorCode.TIMEOUT
            assert "did not finish 'long_work': no answer within 1 s" in sparse.text
            assert "(its \"tool_timeout_s\" is 1 s), so the call was cancelled" in sparse.text
            assert sparse.duration_ms < 1900

            silent = await h.call("mcp__edge__sleep", {"seconds": 5})
            assert silent.error_code is ErrorCode.TIMEOUT
            assert "no answer within 1 s" in silent.text
            assert "since its last progress" not in silent.text

            later = await h.call("mcp__edge__long_work", {"seconds": 2.5, "every": 0.7})
            assert later.error_code is None, later.content  # never silent for 1 s
            echo = await h.call("mcp__edge__echo", {"text": "still there"})
            assert echo.text == "still there"

    asyncio.run(main())


def test_a_call_whose_progress_stops_is_cut_one_timeout_after_its_last_report(
        tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(tool_timeout_s=1)}) as h:
            await h.manager.wait_for("edge", _ready, WAIT)
            started = time.monotonic()
            cut = await h.call("mcp__edge__long_work",
                               {"seconds": 20, "every": 0.3, "quiet_after": 2})
            took = time.monotonic() - started
            assert cut.error_code is ErrorCode.TIMEOUT, cut.content
            assert "no answer within 1 s since its last progress notification" in cut.text
            assert 2.5 < took < 10, took  # reports until 2 s, then 1 s of silence

    asyncio.run(main())


def test_a_call_right_after_a_crash_waits_for_the_restart(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(tool_timeout_s=30)},
                           backoff=Backoff(1.0, 1.0, 5)) as h:
            first = await h.manager.wait_for("edge", _ready, WAIT)
            crash = await h.call("mcp__edge__crash")
            assert crash.error_code is ErrorCode.EXECUTION_ERROR
            assert "it was running when the call started and died during it" in crash.text
            assert "exited with code 7 during the call" in crash.text

            echo = await h.call("mcp__edge__echo", {"text": "after the restart"})
            assert not echo.is_error, echo.content
            assert echo.text == "after the restart"
            assert h.manager.state("edge").pid != first.pid

            # Dead before the call, before Reins noticed (it polls): the call still waits.
            pid = h.manager.state("edge").pid or 0
            os.kill(pid, 9)
            while not gone(pid):
                time.sleep(0.001)
            assert _ready(h.manager.state("edge"))
            again = await h.call("mcp__edge__echo", {"text": "after a kill"})
            assert again.text == "after a kill", again.content
            assert h.manager.state("edge").pid != pid

    asyncio.run(main())


def test_a_call_to_a_server_that_will_not_come_back_fails_at_once(tmp_path: Path) -> None:
    async def main() -> None:
        servers = {"gone": {"command": "/nonexistent/mcp-server", "tool_timeout_s": 30}}
        async with harness(tmp_path, servers, backoff=Backoff(0.05, 0.05, 2)) as h:
            await h.manager.wait_for(
                "gone", lambda s: s.status is ServerStatus.FAILED and s.retry_in_s is None,
                WAIT)
            # Its tools never registered; a direct call through the manager is the only
            # way in (a tool registered before a later failure takes the same path).
            started = time.monotonic()
            with pytest.raises(ToolError) as err:
                await h.manager._call("gone", "echo", {}, None, "")
            assert time.monotonic() - started < 1.0
            text = str(err.value)
            assert "it was already gone before this call" in text
            assert "it is not restarted automatically any more" in text
            assert "gave up after 2 failures" in text

    asyncio.run(main())


def test_a_disabled_server_is_not_waited_for(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(tool_timeout_s=30)}) as h:
            await h.manager.wait_for("edge", _ready, WAIT)
            spec = h.registry.get("mcp__edge__echo")
            assert spec is not None
            await h.manager.disable("edge")
            started = time.monotonic()
            with pytest.raises(ToolError) as err:
                await spec.handler(None, text="x")
            assert time.monotonic() - started < 1.0
            assert "it is disabled in settings" in str(err.value)

    asyncio.run(main())


def test_a_killed_server_counts_as_ended_while_its_threads_still_end() -> None:
    # A process with threads, killed: /proc shows its main thread a zombie a moment before
    # waitid can report it. `_dying` sees that (and a plain zombie); a live one is not.
    code = "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); " \
           "print('up', flush=True); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        assert not _dying(child.pid)
        os.kill(child.pid, 9)
        deadline = time.monotonic() + 10
        while not _dying(child.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert _dying(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not _dying(child.pid)  # reaped: no /proc entry
    assert not _dying(os.getpid())
