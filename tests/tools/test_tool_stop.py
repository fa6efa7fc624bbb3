"""A sync tool that timed out or was stopped really ends: its thread stops working (measured
as the CPU time every other thread of the process uses afterwards, from /proc), the result
says it was stopped, and a handler that cannot be told to stop is still reported honestly."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernel.tools.builtin import builtin_tools
from kernel.tools.dispatch import Dispatcher
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode, ToolCall, ToolContext, ToolResult

TICK = os.sysconf("SC_CLK_TCK")


def _cpu_by_thread() -> dict[int, float]:
    """CPU seconds used so far by each thread of this process but the calling one."""
    me = threading.get_native_id()
    used = {}
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me:
            continue
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        used[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
    return used


async def _busy_after(seconds: float = 0.8, settle: float = 0.0) -> float:
    """The most CPU any other thread used over the next `seconds` (after `settle`)."""
    await asyncio.sleep(settle)
    before = _cpu_by_thread()
    await asyncio.sleep(seconds)
    after = _cpu_by_thread()
    return max((after[t] - before.get(t, 0.0) for t in after), default=0.0)


@pytest.fixture
def big(workspace: Path) -> Path:
    """About 6 MB of short lines: a few seconds of work for grep and read_file."""
    path = workspace / "big.txt"
    path.write_bytes(b"ab\n" * 2_000_000)
    return path


def _timed_out(env: Any, name: str, args: dict[str, Any]) -> tuple[ToolResult, float]:
    spec = next(s for s in builtin_tools() if s.name == name)
    d = env.dispatcher([replace(spec, timeout_s=0.05)])

    async def go() -> tuple[ToolResult, float]:
        result = await d.dispatch(ToolCall("c1", name, args))
        # A stopped thread ends at its next check; on a loaded machine it may wait to be
        # scheduled for that, so the CPU is counted from 0.2 s after the timeout: one still
        # working uses a good part of the 0.8 s after, one that stopped none of it.
        return result, await _busy_after(settle=0.2)

    return asyncio.run(go())


@pytest.mark.parametrize(("name", "args"), [
    ("grep", {"pattern": "(a|b)+c", "path": "big.txt"}),
    ("grep", {"pattern": "zz", "path": "."}),
    ("grep", {"pattern": "a$", "path": ".", "glob": "*.txt", "case_insensitive": True}),
    ("read_file", {"path": "big.txt", "offset": 1_999_990}),
])
def test_a_timed_out_file_tool_stops_working(env: Any, big: Path, name: str,
                                             args: dict[str, Any]) -> None:
    result, busy = _timed_out(env, name, args)
    assert result.error_code is ErrorCode.TIMEOUT
    assert "0.05 s time limit; was stopped" in result.text
    assert busy < 0.04, f"a thread kept working for {busy:.2f} s of CPU after the timeout"


def test_a_grep_over_many_folders_stops_between_files(env: Any, workspace: Path) -> None:
    for n in range(60):
        folder = workspace / f"d{n}"
        folder.mkdir()
        (folder / "f.txt").write_bytes(b"line\n" * 50_000)
    result, busy = _timed_out(env, "grep", {"pattern": "nothing here", "path": "."})
    assert result.error_code is ErrorCode.TIMEOUT and "was stopped" in result.text
    assert busy < 0.04


def test_a_grep_the_user_stops_ends_its_thread(env: Any, big: Path) -> None:
    spec = next(s for s in builtin_tools() if s.name == "grep")
    d = env.dispatcher([spec])

    async def go() -> tuple[ToolResult, float]:
        async def stop() -> None:
            while not d.running("g1"):
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.1)
            assert d.cancel_call("g1")

        stopper = asyncio.ensure_future(stop())
        result = await d.dispatch(ToolCall("g1", "grep", {"pattern": "(a|b)+c", "path": "."}))
        await stopper
        # A stop is noticed between lines, not inside the one C call that decodes and
        # splits a file (≤ 20 MB, tens of ms): the result comes at once, the thread ends
        # right after.
        return result, await _busy_after(settle=0.3)

    result, busy = asyncio.run(go())
    assert result.error_code is ErrorCode.CANCELLED
    assert "did not finish" in result.text and "background" not in result.text
    assert busy < 0.04


def test_a_stopped_handler_that_checks_ends_and_one_that_cannot_be_told_is_said_so(
        env: Any) -> None:
    release = threading.Event()
    rounds = [0]

    @tool(timeout_s=0.05)
    def checking(ctx: ToolContext) -> str:
        """Works in a loop that checks."""
        while True:
            ctx.check_stop()
            rounds[0] += 1

    @tool(timeout_s=0.05)
    def deaf() -> str:
        """Blocks without a ToolContext: nobody can tell it to stop."""
        release.wait(10)
        return "late"

    d: Dispatcher = env.dispatcher([checking, deaf])

    async def go() -> tuple[ToolResult, ToolResult, int]:
        first = await d.dispatch(ToolCall("c1", "checking", {}))
        seen = rounds[0]
        await asyncio.sleep(0.2)
        second = await d.dispatch(ToolCall("c2", "deaf", {}))
        release.set()
        return first, second, rounds[0] - seen

    try:
        first, second, more = asyncio.run(go())
    finally:
        release.set()
    assert "was stopped" in first.text and more == 0
    assert second.error_code is ErrorCode.TIMEOUT
    assert "may still finish in the background" in second.text
