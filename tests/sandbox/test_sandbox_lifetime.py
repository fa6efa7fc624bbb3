"""Nothing outlives its call: timeout, cancel and shutdown end every process (process table)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor, CommandOutcome
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.sandbox_helpers import MISSING, leftovers


def marker() -> str:
    """A sleep duration no other process uses, to find our own leftovers."""
    return f"1000.{uuid.uuid4().int % 10**9}"


def escaping(m: str) -> str:
    """Background, nohup'd and setsid'd children, and one double-forked out of its group."""
    return (
        f"sleep {m} & nohup sleep {m} >/dev/null 2>&1 & setsid sleep {m} & "
        f"(setsid sleep {m} &); echo started; sleep {m}"
    )


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
def test_timeout_kills_every_child_and_keeps_partial_output(
    sandboxed: bool, run_cmd, run_bare
) -> None:
    m = marker()
    run = run_cmd if sandboxed else run_bare
    extra = {} if sandboxed else {"allow_unsandboxed": True}
    outcome, text = run(escaping(m), timeout_s=1, **extra)
    assert outcome.timed_out and not outcome.cancelled
    assert outcome.sandbox == ("bwrap" if sandboxed else "none")
    assert "timed out after 1 s" in outcome.stopped
    assert "started" in text
    assert leftovers(m) == []


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
def test_background_children_end_with_a_normal_exit(sandboxed: bool, run_cmd, run_bare) -> None:
    m = marker()
    run = run_cmd if sandboxed else run_bare
    extra = {} if sandboxed else {"allow_unsandboxed": True}
    outcome, text = run(f"sleep {m} & setsid sleep {m} & (setsid sleep {m} &); echo done",
                        **extra)
    assert outcome.exit_code == 0 and not outcome.timed_out and "done" in text
    assert leftovers(m) == []


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
def test_sigterm_comes_first_so_the_command_can_clean_up(
    sandboxed: bool, run_cmd, run_bare
) -> None:
    run = run_cmd if sandboxed else run_bare
    extra = {} if sandboxed else {"allow_unsandboxed": True}
    m = marker()
    outcome, text = run(f"trap 'echo got-term; exit 0' TERM; echo started; sleep {m} & wait",
                        timeout_s=1, **extra)
    assert outcome.timed_out and text == "started\ngot-term\n"
    assert outcome.exit_code == 0  # the command's own status, from its trap
    assert leftovers(m) == []


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(run_cmd) -> None:
    m = marker()
    outcome, _text = run_cmd(f"trap '' TERM; sleep {m} & trap '' TERM; echo started; wait",
                             timeout_s=1)
    assert outcome.timed_out
    assert leftovers(m) == []


def _start(
    executor: CommandExecutor, command: str, workspace: Path, outputs: OutputStore,
    cancel: asyncio.Event | None = None, **kwargs: object,
) -> tuple[asyncio.Task[CommandOutcome], asyncio.Event]:
    """Start `command`; the event is set once its progress shows the line `started`."""
    spool = outputs.spool(f"bg-{uuid.uuid4().hex}")
    started = asyncio.Event()

    def progress(_size: int, last_line: str, _elapsed: float) -> None:
        if last_line == "started":
            started.set()

    task = asyncio.ensure_future(
        executor.run(command, workspace=workspace, spool=spool, timeout_s=300, cancel=cancel,
                     on_progress=progress, progress_interval_s=0.05, **kwargs)  # type: ignore[arg-type]
    )
    task.add_done_callback(lambda _t: spool.close())
    return task, started


def test_cancel_event_stops_the_command(executor, workspace: Path, outputs) -> None:
    m = marker()

    async def scenario() -> CommandOutcome:
        cancel = asyncio.Event()
        task, started = _start(executor, escaping(m), workspace, outputs, cancel)
        await started.wait()
        cancel.set()
        return await task

    outcome = asyncio.run(scenario())
    assert outcome.cancelled and not outcome.timed_out
    assert "cancelled" in outcome.stopped
    assert leftovers(m) == []


def test_cancelling_the_task_stops_the_command(executor, workspace: Path, outputs) -> None:
    m = marker()

    async def scenario() -> None:
        task, started = _start(executor, escaping(m), workspace, outputs)
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert leftovers(m) == []
    assert executor.running == 0


def test_shutdown_ends_every_running_command(
    reins_home: AppPaths, sandbox_status, workspace: Path, outputs
) -> None:
    executor = CommandExecutor(reins_home, ExecSettings(grace_s=0.5))
    bare = CommandExecutor(reins_home, ExecSettings(grace_s=0.5, bwrap=MISSING))
    m = marker()

    async def scenario() -> list[CommandOutcome]:
        first, s1 = _start(executor, escaping(m), workspace, outputs)
        second, s2 = _start(executor, escaping(m), workspace, outputs)
        third, s3 = _start(bare, escaping(m), workspace, outputs, allow_unsandboxed=True)
        for started in (s1, s2, s3):
            await started.wait()
        assert executor.running == 2 and bare.running == 1
        executor.shutdown()
        bare.shutdown()
        return [await first, await second, await third]

    outcomes = asyncio.run(scenario())
    assert all(o.cancelled and "shutting down" in o.stopped for o in outcomes)
    assert leftovers(m) == []
