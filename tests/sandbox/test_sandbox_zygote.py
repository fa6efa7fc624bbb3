"""The zygote that forks the link binders (kernel.sandbox.zygote): the binders are its
children, not the kernel's, so what they cost no longer depends on what the kernel holds
(timed in bench/bench_sandbox.py with BALLAST_MB; here only the structure); a zygote that
died fails the next pin closed and the pin after starts a new one; it ends with the kernel.

Real processes, real bubblewrap for the commands, as the user running the tests.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

from kernel.sandbox import zygote
from kernel.sandbox.pin import Pin, PinError, PinStage
from tests.sandbox.sandbox_helpers import RunCommand

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 10.0
T = TypeVar("T")


def _until(find: Callable[[], T]) -> T:
    """What `find` finds, as soon as it finds something."""
    deadline = time.monotonic() + WAIT_S
    while not (found := find()):
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.01)
    return found


def _gone(pid: int, name: str = "reins-zygote") -> bool:
    """`pid` is no longer a live process called `name` (ended, a zombie, or another one)."""
    try:
        process = psutil.Process(pid)
        return process.status() == psutil.STATUS_ZOMBIE or process.name() != name
    except psutil.NoSuchProcess:
        return True


def _descriptors(pid: int) -> dict[int, str]:
    folder = f"/proc/{pid}/fd"
    return {int(fd): os.readlink(f"{folder}/{fd}") for fd in os.listdir(folder)}


def test_the_binder_is_the_zygotes_child_and_holds_only_its_descriptors(
        tmp_path: Path) -> None:
    """The binder of a stage that never says it is ready (this process's own mount namespace,
    never entered) waits as the zygote's child, and the zygote is this process's. When the
    stage's end of the ready pipe closes, the binder reports that the sandbox ended: the pin
    fails closed."""
    stage = PinStage((Pin(str(tmp_path / "never"), "x"),))
    running = zygote.start()
    others = {child.pid for child in psutil.Process(running.pid).children()}
    try:
        stage.prepare(os.getpid())
        [binder] = _until(lambda: [child for child in psutil.Process(running.pid).children()
                                   if child.pid not in others
                                   and child.name() == "reins-binder"])  # (named just after
        # its fork: a child found sooner may still bear the zygote's name)
        assert binder.name() == "reins-binder" and binder.ppid() == running.pid
        assert psutil.Process(running.pid).ppid() == os.getpid()
        assert binder.pid not in [child.pid for child in psutil.Process().children()]
        if os.geteuid() == 0:  # only root reads a non-dumpable process's descriptors
            held = _descriptors(binder.pid)
            assert [held[fd] for fd in (0, 1, 2)] == [os.devnull] * 3, held
            kinds = sorted(target.split(":")[0] for fd, target in held.items() if fd > 2)
            assert kinds == ["/memfd", "mnt", "pipe", "pipe"], held
        stage.started()
        with pytest.raises(PinError, match="the sandbox ended before its command started"):
            asyncio.run(stage.run(os.getpid()))
    finally:
        stage.close()
    _until(lambda: _gone(binder.pid, "reins-binder"))


def test_the_zygote_keeps_only_its_socket_in_a_process_group_of_its_own() -> None:
    running = zygote.start()
    process = psutil.Process(running.pid)
    assert process.name() == "reins-zygote" and process.ppid() == os.getpid()
    assert os.getpgid(running.pid) == running.pid != os.getpgid(0)
    if os.geteuid() == 0:  # only root reads a non-dumpable process's descriptors
        held = _descriptors(running.pid)
        assert [held[fd] for fd in (0, 1, 2)] == [os.devnull] * 3, held
        assert [target.split(":")[0] for fd, target in held.items() if fd > 2] == ["socket"]


def test_a_zygote_that_died_fails_the_next_pin_closed_and_the_one_after_has_a_new_one(
        run_cmd: RunCommand, workspace: Path) -> None:
    (workspace / "shared").mkdir()
    (workspace / ".vscode").symlink_to("shared")
    outcome, text = run_cmd("readlink .vscode")
    assert outcome.exit_code == 0 and text.strip() == "shared", (outcome, text)
    first = zygote.start()
    os.kill(first.pid, signal.SIGKILL)
    _until(lambda: _gone(first.pid))
    outcome, text = run_cmd("rm .vscode; ln -s elsewhere .vscode")
    assert outcome.exit_code != 0 and outcome.stopped.startswith("not run: "), outcome
    assert (f"the zygote that starts the link binders (pid {first.pid}) has ended (killed by "
            f"signal {signal.SIGKILL.value}); a new one is started") in outcome.stopped, outcome
    assert os.readlink(workspace / ".vscode") == "shared"
    assert first.pid not in [child.pid for child in psutil.Process().children()]  # reaped
    outcome, text = run_cmd("rm .vscode 2>&1; readlink .vscode")
    assert outcome.exit_code == 0 and "Device or resource busy" in text, (outcome, text)
    assert text.strip().endswith("shared") and zygote.start().pid != first.pid


KERNEL = """
import os, sys, threading, time
from kernel.sandbox import zygote
where = sys.argv[1]
started = []
if where == "thread":  # the thread ends at once: only the socket's end of file ends it
    thread = threading.Thread(target=lambda: started.append(zygote.start()))
    thread.start()
    thread.join()
else:
    started.append(zygote.start())
child = os.fork()  # a copy of the kernel that outlives it must not keep its socket's end
if child == 0:
    time.sleep(60)
    os._exit(0)
print(started[0].pid, child, flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("end", ["exit", "killed"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_the_zygote_ends_with_the_kernel(where: str, end: str) -> None:
    """A kernel that exits or is killed (SIGKILL: none of its code runs) leaves no zygote,
    also while a process forked from it lives on; one forked from a thread outlives that
    thread."""
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, where], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert kernel.stdin is not None and kernel.stdout is not None
    pid, child = (int(word) for word in kernel.stdout.readline().split())
    try:
        _until(lambda: not _gone(pid))  # named once it has set itself apart
        if end == "killed":
            kernel.kill()
        else:
            kernel.stdin.close()
        assert kernel.wait(WAIT_S) == (-signal.SIGKILL if end == "killed" else 0)
        _until(lambda: _gone(pid))
    finally:
        kernel.kill()
        kernel.wait()
        os.kill(child, signal.SIGKILL)


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_closing_a_stage_while_its_report_is_awaited_leaves_the_loop_watching_new_fds(
        ) -> None:
    """A sandbox ended while its binder's report is awaited (one made ahead and discarded):
    the report's descriptor is closed only once the loop no longer watches it, so a new
    descriptor that gets its number (the next command's exit watch) still wakes the loop."""
    async def run() -> bytes:
        loop = asyncio.get_running_loop()
        stage = PinStage(())
        report_read, report_write = os.pipe()
        stage._binder = (zygote.start(), report_read)  # asked: its report never comes
        waiting = asyncio.create_task(stage.pin(os.getpid()))
        await asyncio.sleep(0.01)
        stage.close()
        waiting.cancel()
        os.close(report_write)
        for _ in range(100):  # the number is free once the stage has let it go
            if not _open(report_read):
                break
            await asyncio.sleep(0)
        fresh_read, fresh_write = os.pipe()
        os.dup2(fresh_read, report_read)  # the next descriptor opened gets that number
        os.close(fresh_read)
        woke = loop.create_future()
        loop.add_reader(report_read, lambda: woke.done() or woke.set_result(
            os.read(report_read, 10)))
        os.write(fresh_write, b"exit")
        try:
            return await asyncio.wait_for(woke, 2)
        finally:
            loop.remove_reader(report_read)
            os.close(report_read)
            os.close(fresh_write)
            with pytest.raises(asyncio.CancelledError):
                await waiting

    assert asyncio.run(run()) == b"exit"
