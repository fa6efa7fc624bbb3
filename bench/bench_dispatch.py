"""Dispatch overhead: a validated trivial tool through the whole pipeline vs calling it."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Literal

from jsonschema import Draft202012Validator

from bench.common import Stats, fmt_seconds, report, stats, time_calls
from kernel.paths import AppPaths
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.schema import tool
from kernel.tools.spec import ToolCall

N = 20_000
GOAL_OVERHEAD_S = 25e-6
ARGS = {"text": "hello", "count": 3, "mode": "fast"}


async def add_async(
    text: Annotated[str, "Text."], count: int = 1, mode: Literal["fast", "slow"] = "fast"
) -> str:
    """Trivial async tool."""
    return text


def add_sync(
    text: Annotated[str, "Text."], count: int = 1, mode: Literal["fast", "slow"] = "fast"
) -> str:
    """Trivial sync tool."""
    return text


async def _time_async(fn: Callable[[int], Awaitable[object]], n: int, warmup: int = 500) -> Stats:
    for i in range(warmup):
        await fn(i)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        await fn(warmup + i)
        samples.append(time.perf_counter() - t0)
    return stats(samples)


def _dispatcher(root: Path, registry: ToolRegistry) -> Dispatcher:
    paths = AppPaths(data=root / "data", config=root / "config")
    workspace = root / "ws"
    workspace.mkdir()
    return Dispatcher(
        registry,
        session_id="bench",
        workspace=workspace,
        outputs=OutputStore.for_session(paths, "bench"),
        path_policy=PathPolicy(workspace, app_paths=paths),
    )


async def _measure(d: Dispatcher) -> tuple[Stats, Stats, Stats, Stats]:
    async def direct(_: int) -> object:
        return await add_async(**ARGS)

    async def through(i: int) -> object:
        return await d.dispatch(ToolCall(f"a{i}", "trivial", ARGS))

    async def direct_thread(_: int) -> object:
        return await asyncio.to_thread(add_sync, **ARGS)

    async def through_thread(i: int) -> object:
        return await d.dispatch(ToolCall(f"s{i}", "trivial_sync", ARGS))

    floor = await _time_async(direct, N)
    piped = await _time_async(through, N)
    thread_floor = await _time_async(direct_thread, N // 10)
    thread_piped = await _time_async(through_thread, N // 10)
    return floor, piped, thread_floor, thread_piped


def run() -> None:
    registry = ToolRegistry([tool(name="trivial")(add_async), tool(name="trivial_sync")(add_sync)])
    with tempfile.TemporaryDirectory() as tmp:
        d = _dispatcher(Path(tmp), registry)
        floor, piped, thread_floor, thread_piped = asyncio.run(_measure(d))
    overhead = piped.median - floor.median
    report("direct await of the async tool (floor)", fmt_seconds(floor.median), ratio=1.0)
    report(
        "dispatch of the same tool (validated)",
        fmt_seconds(piped.median),
        ratio=piped.median / floor.median,
    )
    report(
        "  median dispatch overhead",
        fmt_seconds(overhead),
        goal=f"≤ {fmt_seconds(GOAL_OVERHEAD_S)}",
        ok=overhead <= GOAL_OVERHEAD_S,
    )
    report(
        "  p99 dispatch",
        fmt_seconds(piped.p99),
        ratio=piped.p99 / floor.median,
    )
    report(
        "asyncio.to_thread of the sync tool (floor)", fmt_seconds(thread_floor.median), ratio=1.0
    )
    report(
        "dispatch of the sync tool (worker thread)",
        fmt_seconds(thread_piped.median),
        ratio=thread_piped.median / thread_floor.median,
    )
    report(
        "  median overhead over to_thread",
        fmt_seconds(thread_piped.median - thread_floor.median),
    )

    schema = registry.get("trivial").input_schema  # type: ignore[union-attr]
    entry = registry.entry("trivial")
    assert entry is not None
    cached = registry.validator("trivial")
    fast = time_calls(lambda: entry.is_valid(ARGS), N)
    hot = time_calls(lambda: cached.is_valid(ARGS), N)
    cold = time_calls(lambda: Draft202012Validator(schema).is_valid(ARGS), N // 10)
    report(
        "validation, compiled check used by dispatch (floor)",
        fmt_seconds(fast.median),
        ratio=1.0,
    )
    report(
        "validation, cached jsonschema validator",
        fmt_seconds(hot.median),
        ratio=hot.median / fast.median,
    )
    report(
        "validation, jsonschema validator built per call",
        fmt_seconds(cold.median),
        ratio=cold.median / fast.median,
    )
    report("  uncached / cached jsonschema", f"{cold.median / hot.median:.2f}×")
    print(f"   ({os.cpu_count()} cores, n={N})")
