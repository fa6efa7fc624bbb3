"""Output: one stream in arrival order, spooled to disk, memory flat for 1 GB, progress."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psutil

from kernel.sandbox.executor import CommandExecutor, OutputCut
from kernel.sandbox.settings import ExecSettings
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
        # the spool keeps 1 GiB (the default bound): the 11 bytes past it are cut, and end
        # the spool after a note
        assert outcome.output_cut == OutputCut(GIB, len("\nlast line\n"))
        assert outcome.spool_path.stat().st_size == outcome.output_bytes > GIB
        with outcome.spool_path.open("rb") as spool_file:
            spool_file.seek(GIB)
            assert spool_file.read() == (b"\n[output cut at 1 GiB: 11 bytes more were not "
                                         b"kept; the last 11 bytes follow]\n\nlast line\n")
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


def test_output_past_the_bound_is_drained_counted_and_its_tail_kept(
    workspace: Path, outputs: OutputStore, tmp_path: Path
) -> None:
    """Break 7: the spool keeps `max_output_bytes`; the command still runs to its end (it
    neither blocks on a full pipe nor dies of SIGPIPE: `head` sees all it asked for), and the
    result says how much was cut, with the real tail at the end of the spool."""
    from kernel.paths import AppPaths
    executor = CommandExecutor(AppPaths(data=tmp_path / "d", config=tmp_path / "c"),
                               ExecSettings(max_output_bytes=64 * 1024), ahead=False)

    async def scenario() -> None:
        with outputs.spool("cut") as spool:
            outcome = await executor.run(
                "yes | head -c 3000000; echo; echo the real end; echo status $? >&2",
                workspace=workspace, spool=spool, timeout_s=60)
        assert outcome.exit_code == 0 and outcome.stopped == ""
        produced = 3_000_000 + len("\nthe real end\nstatus 0\n")
        assert outcome.output_cut == OutputCut(64 * 1024, produced - 64 * 1024)
        data = outcome.spool_path.read_bytes()
        assert data[: 64 * 1024] == b"y\n" * (32 * 1024)
        assert data[64 * 1024:].startswith(
            b"\n[output cut at 64 KiB: 2.8 MiB more were not kept; the last 4 KiB follow]\n")
        assert data.endswith(b"y\ny\n\nthe real end\nstatus 0\n")
        assert len(data) == outcome.output_bytes < 64 * 1024 + 4096 + 200

    asyncio.run(scenario())
    executor.shutdown()


def test_the_tool_result_says_plainly_how_much_was_cut() -> None:
    from kernel.sandbox.executor import CommandOutcome
    from kernel.tools.builtin.command import _header
    outcome = CommandOutcome(
        exit_code=0, stopped="", duration_s=1.0, spool_path=Path("/x"), output_bytes=GIB,
        timed_out=False, cancelled=False, sandbox="bwrap", withheld_env=(), network=False,
        output_cut=OutputCut(GIB, 123 * 1024**2))
    assert ("output cut at 1 GiB: 123 MiB more were not kept (the output ends with the last "
            "of them)") in _header(outcome)
