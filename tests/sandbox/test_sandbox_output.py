"""Output: one stream in arrival order, spooled to disk, memory flat for 1 GB, progress."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psutil

from kernel.sandbox.executor import CommandExecutor
from kernel.tools.externalize import OutputStore

GIB = 1024**3
MEMORY_GROWTH_LIMIT = 20 * 1024**2


def test_stdout_and_stderr_keep_their_order(run_cmd) -> None:
    outcome, text = run_cmd(
        "echo 1; echo 2 >&2; echo 3; echo 4 >&2; printf 5; printf 6 >&2; echo; exit 4"
    )
    assert text == "1\n2\n3\n4\n56\n"
    assert outcome.exit_code == 4 and outcome.stopped == ""
    assert outcome.output_bytes == len(text)


def test_one_gigabyte_of_output_keeps_memory_flat(
    executor: CommandExecutor, workspace: Path, outputs: OutputStore
) -> None:
    """RSS of this process (which runs the executor) is sampled while 1 GiB streams through."""
    me = psutil.Process()
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, me.memory_info().rss)
            done.wait(0.01)

    async def scenario() -> int:
        with outputs.spool("warm-up") as spool:
            await executor.run("echo warm", workspace=workspace, spool=spool, timeout_s=60)
        baseline = me.memory_info().rss
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            with outputs.spool("gigabyte") as spool:
                outcome = await executor.run(
                    "dd if=/dev/zero bs=1M count=1024 status=none; echo; echo last line",
                    workspace=workspace, spool=spool, timeout_s=300,
                )
        finally:
            done.set()
            sampler.join()
        assert outcome.exit_code == 0
        assert outcome.output_bytes == GIB + len("\nlast line\n")
        assert outcome.spool_path.stat().st_size == outcome.output_bytes
        preview = outputs.preview_file(outcome.spool_path, 30_000)
        assert preview.path == outcome.spool_path and "binary output" in preview.text
        outcome.spool_path.unlink()
        return peak - baseline

    growth = asyncio.run(scenario())
    assert growth <= MEMORY_GROWTH_LIMIT, f"RSS grew by {growth / 1e6:.1f} MB"


def test_progress_reports_bytes_and_the_last_line(
    executor: CommandExecutor, workspace: Path, outputs: OutputStore
) -> None:
    seen: list[tuple[int, str, float]] = []

    async def scenario() -> None:
        step = asyncio.Event()

        def progress(size: int, last_line: str, elapsed: float) -> None:
            seen.append((size, last_line, elapsed))
            if last_line == "line 1":
                step.set()

        with outputs.spool("progress") as spool:
            task = asyncio.ensure_future(executor.run(
                "echo line 1; read x < /dev/zero & wait; echo never",
                workspace=workspace, spool=spool, timeout_s=300,
                on_progress=progress, progress_interval_s=0.02,
                cancel=(cancel := asyncio.Event()),
            ))
            await step.wait()
            cancel.set()
            outcome = await task
        assert outcome.cancelled

    asyncio.run(scenario())
    assert seen and all(size == len("line 1\n") for size, line, _ in seen if line == "line 1")
    sizes = [s for s, _, _ in seen]
    elapsed = [e for _, _, e in seen]
    assert sizes == sorted(sizes) and elapsed == sorted(elapsed)
