"""Runs one shell command in the sandbox and streams its output to a spool file.

- Fail closed: without a sandbox, `run` refuses (`SandboxUnavailable`) unless the caller
  says the user approved that very call (`allow_unsandboxed`).
- The environment is built from the allowlist (`kernel.sandbox.env`), never inherited.
- Stdout and stderr share one pipe, so the spool keeps them in the order they arrived. The
  pipe is read in 1 MiB chunks straight into the spool file: memory stays flat.
- Nothing outlives its call: the command is the leader of its own session (and, in bwrap,
  inside a PID namespace that dies with it). On timeout, cancel or `shutdown()` every process
  below it gets SIGTERM, then, after the grace period, SIGKILL; `run` returns only when they
  are all gone.
- The kernel makes itself non-dumpable when an executor is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.env import build_env
from kernel.sandbox.handshake import Handshake
from kernel.sandbox.hardening import make_non_dumpable
from kernel.sandbox.launcher import (
    BwrapLauncher,
    Launcher,
    LaunchRequest,
    UnsandboxedLauncher,
)
from kernel.sandbox.limits import ResourceLimits, describe_stop
from kernel.sandbox.proctree import ProcId, alive, descendants, signal_all
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import SpoolWriter
from kernel.tools.spec import ErrorCode, ToolError

CHUNK = 1 << 20
WRITE_CHUNK = 128 << 10
"""Writes of this size reach the page cache several times faster than 1 MiB ones here."""
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
TAIL_BYTES = 4096
POLL_S = 0.02
REAP_WAIT_S = 5.0
DEFAULT_SETTINGS = ExecSettings()
ProgressCallback = Callable[[int, str, float], None]
"""(bytes so far, last line, elapsed seconds)."""


class SandboxUnavailable(ToolError):
    """No sandbox, and the user did not approve running this call without one."""

    def __init__(self, status: SandboxStatus) -> None:
        super().__init__(
            f"The command was not run: no sandbox is available (sandbox: none). "
            f"Reason: {status.reason}.",
            hint=(
                f"Fix: {status.fix}. Until then every command needs the user's explicit "
                f"approval; ask the user to approve this call."
            ),
            code=ErrorCode.SANDBOX_UNAVAILABLE,
        )
        self.status = status


@dataclass(frozen=True)
class CommandOutcome:
    exit_code: int | None
    """The exit code (128+N when a signal ended the command), None if it never ended."""
    stopped: str
    """Why it stopped, in words, when it was not an ordinary exit ('' otherwise)."""
    duration_s: float
    spool_path: Path
    output_bytes: int
    timed_out: bool
    cancelled: bool
    sandbox: str
    """"bwrap" or "none"."""
    withheld_env: tuple[str, ...]
    network: bool
    """The command had network access (always true without a sandbox)."""
    write_error: str = ""
    """Set when the spool file could not take all the output (e.g. a full disk)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.cancelled


@dataclass(eq=False)
class _Live:
    proc: subprocess.Popen[bytes]
    launcher: Launcher
    stop: str = ""
    """"timeout", "cancel", "shutdown" or "limits" once the executor stops it."""
    known: list[ProcId] = field(default_factory=list)
    limits_error: str = ""
    """Why the resource limits could not be set (the command was then never started)."""


class CommandExecutor:
    def __init__(self, paths: AppPaths, settings: ExecSettings = DEFAULT_SETTINGS) -> None:
        self.paths = paths
        self.settings = settings
        self._live: set[_Live] = set()
        self._buffer: bytearray | None = None
        make_non_dumpable()

    def status(self) -> SandboxStatus:
        return detect_sandbox(self.settings.bwrap)

    def _read_buffer(self) -> bytearray:
        """One buffer for every pump: they all read in callbacks of the one event loop."""
        if self._buffer is None:
            self._buffer = bytearray(CHUNK)
        return self._buffer

    def check_runnable(self, *, allow_unsandboxed: bool) -> None:
        """Raise SandboxUnavailable when a command could not run now (fail closed)."""
        self._launcher(allow_unsandboxed)

    def _launcher(self, allow_unsandboxed: bool) -> Launcher:
        status = self.status()
        if status.available:
            return BwrapLauncher(status.bwrap_path)
        if allow_unsandboxed:
            return UnsandboxedLauncher()
        raise SandboxUnavailable(status)

    async def run(
        self,
        command: str,
        *,
        workspace: Path,
        spool: SpoolWriter,
        timeout_s: float,
        cwd: Path | None = None,
        network: bool = False,
        allow_unsandboxed: bool = False,
        cancel: asyncio.Event | None = None,
        on_progress: ProgressCallback | None = None,
        progress_interval_s: float = 0.5,
    ) -> CommandOutcome:
        """Run `command` under `/bin/sh -c` and return when it and all it started are gone.

        A cancelled task stops the command (SIGTERM, grace, SIGKILL) before re-raising;
        setting `cancel` does the same and returns an outcome with `cancelled=True`.
        """
        launcher = self._launcher(allow_unsandboxed)
        workspace = workspace.resolve()
        cwd = cwd.resolve() if cwd is not None else workspace
        sandbox_home = self.paths.sandbox_home
        sandbox_home.mkdir(parents=True, exist_ok=True)
        limits = self.settings.limits.for_timeout(timeout_s)
        private_tmp: Path | None = None
        handshake: Handshake | None = None
        try:
            if not launcher.private_tmp:
                private_tmp = Path(tempfile.mkdtemp(prefix="reins-"))
            env, withheld = build_env(
                self.settings, home=sandbox_home, tmpdir=private_tmp or Path("/tmp")
            )
            if launcher.kernel_sets_limits:
                handshake = Handshake()
            argv = launcher.argv(
                LaunchRequest(
                    command=command,
                    cwd=cwd,
                    workspace=workspace,
                    network=network,
                    limits=limits,
                    grace_s=self.settings.grace_s,
                    sandbox_home=sandbox_home.resolve(),
                    real_home=Path.home().resolve(),
                    paths=self.paths,
                    read_only_paths=tuple(
                        Path(p).expanduser().resolve() for p in self.settings.read_only_paths
                    ),
                    handshake_fds=handshake.child_fds if handshake is not None else None,
                )
            )
            return await self._run(
                argv, env, cwd, spool, timeout_s, limits, launcher, handshake, network,
                withheld, cancel, on_progress, progress_interval_s,
            )  # fmt: skip
        finally:
            if handshake is not None:
                handshake.close()
            if private_tmp is not None:
                shutil.rmtree(private_tmp, ignore_errors=True)

    async def _run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        spool: SpoolWriter,
        timeout_s: float,
        limits: ResourceLimits,
        launcher: Launcher,
        handshake: Handshake | None,
        network: bool,
        withheld: list[str],
        cancel: asyncio.Event | None,
        on_progress: ProgressCallback | None,
        progress_interval_s: float,
    ) -> CommandOutcome:
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(read_fd, F_SETPIPE_SZ, PIPE_SIZE)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                env=env,
                cwd="/" if launcher.private_tmp else cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=handshake.child_fds if handshake is not None else (),
            )
        except OSError as exc:
            os.close(read_fd)
            raise ToolError(f"The command could not be started: {exc}.") from exc
        finally:
            os.close(write_fd)
        live = _Live(proc, launcher)
        self._live.add(live)
        if handshake is not None:
            handshake.started()
            handshake.watch(loop, limits, lambda reason: self._refuse(live, reason))
        pump = _Pump(loop, read_fd, spool, self._read_buffer())
        watch = _ExitWatch(loop, proc)
        exited = watch.exited
        waiters: set[asyncio.Future[object]] = {exited}
        cancel_task = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        if cancel_task is not None:
            waiters.add(cancel_task)
        ticker = (
            asyncio.ensure_future(_tick(spool, started, on_progress, progress_interval_s))
            if on_progress is not None
            else None
        )
        try:
            done, _pending = await asyncio.wait(
                waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if exited not in done:
                live.stop = "cancel" if cancel_task in done else "timeout"
                await self._stop(live)
            await exited
            await pump.finish(self.settings.grace_s)
        except asyncio.CancelledError:
            live.stop = live.stop or "cancel"
            await asyncio.shield(self._stop(live))  # a second cancel cannot cut it short
            raise
        finally:
            for task in (cancel_task, ticker):
                if task is not None:
                    task.cancel()
            pump.close()
            watch.close()
            self._live.discard(live)
        await self._wait_gone(live)
        code = proc.returncode
        exit_code = 128 - code if code is not None and code < 0 else code
        return CommandOutcome(
            exit_code=exit_code,
            stopped=_stop_words(live, timeout_s, self.settings.grace_s)
            or describe_stop(exit_code, limits, pump.tail.decode("utf-8", "replace")),
            duration_s=time.monotonic() - started,
            spool_path=spool.path,
            output_bytes=spool.bytes_written,
            timed_out=live.stop == "timeout",
            cancelled=live.stop in ("cancel", "shutdown"),
            sandbox=launcher.kind,
            withheld_env=tuple(withheld),
            network=network or not launcher.isolates_network,
            write_error=pump.write_error,
        )

    @staticmethod
    def _refuse(live: _Live, reason: str) -> None:
        """The limits could not be set: kill the sandbox before its command starts."""
        live.stop = "limits"
        live.limits_error = reason
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(live.proc.pid, signal.SIGKILL)

    async def _stop(self, live: _Live) -> None:
        """SIGTERM everything below the command, wait the grace period, then SIGKILL."""
        self._signal_term(live)
        deadline = time.monotonic() + self.settings.grace_s
        while live.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
        self._signal_kill(live)
        deadline = time.monotonic() + REAP_WAIT_S
        while live.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)

    def _signal_term(self, live: _Live) -> None:
        pid = live.proc.pid
        live.known = descendants(pid)
        if live.launcher.signal_leader_first:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)  # it forwards SIGTERM, once, to all below it
        else:
            signal_all(live.known, signal.SIGTERM)

    def _signal_kill(self, live: _Live) -> None:
        pid = live.proc.pid
        if live.proc.poll() is None:
            live.known += descendants(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        signal_all(live.known, signal.SIGKILL)

    async def _wait_gone(self, live: _Live) -> None:
        """After a stop, wait (bounded) until every process we signalled has died."""
        deadline = time.monotonic() + REAP_WAIT_S
        while any(alive(p) for p in live.known) and time.monotonic() < deadline:
            signal_all(live.known, signal.SIGKILL)
            await asyncio.sleep(POLL_S)

    def shutdown(self) -> None:
        """End every running command now (Reins is exiting): SIGTERM, grace, SIGKILL."""
        lives = list(self._live)
        for live in lives:
            live.stop = "shutdown"
            self._signal_term(live)
        deadline = time.monotonic() + self.settings.grace_s
        while any(live.proc.poll() is None for live in lives) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        for live in lives:
            self._signal_kill(live)
        deadline = time.monotonic() + REAP_WAIT_S
        while time.monotonic() < deadline and any(
            live.proc.poll() is None or any(alive(p) for p in live.known) for live in lives
        ):
            time.sleep(POLL_S)

    @property
    def running(self) -> int:
        """How many commands are running now."""
        return len(self._live)


def _stop_words(live: _Live, timeout_s: float, grace_s: float) -> str:
    stop = live.stop
    if stop == "limits":
        return f"not run: {live.limits_error}"
    if stop == "timeout":
        return (
            f"timed out after {timeout_s:g} s: stopped with SIGTERM (SIGKILL for anything "
            f"still running {grace_s:g} s later); the output so far is kept"
        )
    if stop == "cancel":
        return "cancelled by the user: stopped; the output so far is kept"
    if stop == "shutdown":
        return "stopped because Reins is shutting down"
    return ""


class _Pump:
    """Moves the command's output from the pipe to the spool file as it arrives."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, fd: int, spool: SpoolWriter, buffer: bytearray
    ) -> None:
        self.loop = loop
        self.fd = fd
        self.spool = spool
        self.tail = b""
        self.buffer = buffer
        """Shared, reused for every read: each chunk goes to the spool before the next read."""
        self.write_error = ""
        self.eof: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)
        self._reading = True

    def _readable(self) -> None:
        try:
            size = os.readv(self.fd, [self.buffer])
        except BlockingIOError:
            return
        except OSError:
            size = 0
        if not size:
            self._stop_reading()
            return
        view = memoryview(self.buffer)[:size]
        self.tail = (self.tail + view[-TAIL_BYTES:])[-TAIL_BYTES:]
        if self.write_error:
            return
        try:
            for start in range(0, size, WRITE_CHUNK):
                self.spool.write(view[start : start + WRITE_CHUNK])  # type: ignore[arg-type]
        except OSError as exc:
            self.write_error = f"the output file stopped taking output: {exc}"

    def _stop_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False
        if not self.eof.done():
            self.eof.set_result(None)

    async def finish(self, wait_s: float) -> None:
        """Wait for the end of the output (bounded: a stray writer cannot hold us)."""
        if self.eof.done():  # the usual case: no timer, no extra turn of the loop
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.eof), wait_s)

    def close(self) -> None:
        self._stop_reading()
        os.close(self.fd)


class _ExitWatch:
    """`exited` resolves when the process exits (a pidfd on Linux, polling elsewhere)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]) -> None:
        self.loop = loop
        self.proc = proc
        self.exited: asyncio.Future[None] = loop.create_future()
        self._poller: asyncio.Task[None] | None = None
        try:
            self._pidfd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self._pidfd = None
            self._poller = asyncio.ensure_future(self._poll())
        else:
            loop.add_reader(self._pidfd, self._ready)

    def _ready(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
        self.proc.wait()
        if not self.exited.done():
            self.exited.set_result(None)

    async def _poll(self) -> None:
        while self.proc.poll() is None:
            await asyncio.sleep(POLL_S)
        self._ready()

    def close(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._poller is not None:
            self._poller.cancel()
        if not self.exited.done():
            self.exited.cancel()


async def _tick(
    spool: SpoolWriter, started: float, on_progress: ProgressCallback, interval_s: float
) -> None:
    while True:
        await asyncio.sleep(interval_s)
        on_progress(spool.bytes_written, spool.last_line, time.monotonic() - started)
