"""Runs one shell command in the sandbox and streams its output to a spool file.

- Fail closed: without a sandbox, `run` refuses (`SandboxUnavailable`) unless the caller
  says the user approved that very call (`allow_unsandboxed`).
- The environment is built from the allowlist (`kernel.sandbox.env`), never inherited.
- Stdout and stderr share one pipe, so the spool keeps them in the order they arrived. The
  pipe is read in 1 MiB chunks straight into the spool file: memory stays flat. The spool
  keeps at most `ExecSettings.max_output_bytes` (1 GiB); the rest is drained, counted
  (`CommandOutcome.output_cut`) and only its last 4 KiB kept, after a note.
- Nothing outlives its call: the command is the leader of its own session (and, in bwrap,
  inside a PID namespace that dies with it). On timeout, cancel or `shutdown()` every process
  below it gets SIGTERM, then, after the grace period, SIGKILL; `run` returns only when they
  are all gone.
- The sandbox of the next command is made ahead (kernel.sandbox.standby): when a run starts
  (`prepare`) and when a command is let go, bubblewrap builds it and waits; a call takes it
  only if it is made from exactly what that call would get, else builds its own.
- Protected and secret entries at any depth of the workspace (kernel.sandbox.guard): each
  command's sandbox hides or binds read-only what the workspace index knows, and what the
  command made anew among them is undone after it (`CommandOutcome.reverted`).
- Each workspace has its own sandbox home (AppPaths.sandbox_home_for, 0700): what a command
  plants there (a `.pth`, a `~/.gitconfig`) never runs in another workspace's commands.
- A seccomp filter (kernel.sandbox.seccomp) is handed to every bubblewrap start.
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
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernel.paths import AppPaths
from kernel.sandbox import seccomp
from kernel.sandbox.binder import Overlay
from kernel.sandbox.bwrap import TRANSACTION_FOLDER, hidden_secrets
from kernel.sandbox.call_folders import new_transaction, remove_transaction, write_ticket
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.env import build_env
from kernel.sandbox.guard import WorkspaceGuards
from kernel.sandbox.handshake import Handshake
from kernel.sandbox.hardening import make_non_dumpable
from kernel.sandbox.launcher import (
    BwrapLauncher,
    Launcher,
    LaunchRequest,
    UnsandboxedLauncher,
    shell_script,
)
from kernel.sandbox.limits import ResourceLimits, describe_stop, size_words
from kernel.sandbox.marks import Mark
from kernel.sandbox.network import FIX_PASTA, NetworkScope, Pasta, find_pasta, resolv_conf, scope
from kernel.sandbox.overlay_probe import overlay_status
from kernel.sandbox.pids import CgroupError, CommandCgroup, remove_when_empty
from kernel.sandbox.pin import PinStage, links_to_pin
from kernel.sandbox.proctree import ProcId, alive, descendants, signal_all
from kernel.sandbox.refusal import CommandRefused, OutputSink
from kernel.sandbox.revert import Reverted
from kernel.sandbox.settings import ExecSettings
from kernel.sandbox.standby import IDLE_S, Fingerprint, fingerprint

CHUNK = 1 << 20
WRITE_CHUNK = 128 << 10
"""Writes of this size reach the page cache several times faster than 1 MiB ones here."""
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
TAIL_BYTES = 4096
POLL_S = 0.02
REAP_WAIT_S = 5.0
AHEAD_AFTER_S = 0.05
"""A command that runs this long gets the next command's sandbox made while it runs; a
quicker one gets it made when it ends. Making a sandbox while another one starts or ends
slows both (moving a process into its pids cgroup waits for an RCU grace period, which
holds up every fork and exit meanwhile): a `true` took 12 ms instead of 4.5."""
DEFAULT_SETTINGS = ExecSettings()
ProgressCallback = Callable[[int, str, float], None]
"""(bytes so far, last line, elapsed seconds)."""


class SandboxUnavailable(CommandRefused):
    """No sandbox, and the user did not approve running this call without one."""

    def __init__(self, status: SandboxStatus) -> None:
        super().__init__(
            f"The command was not run: no sandbox is available (sandbox: none). "
            f"Reason: {status.reason}.",
            hint=(
                f"Fix: {status.fix}. Until then every command needs the user's explicit "
                f"approval; ask the user to approve this call."
            ),
            kind="sandbox_unavailable",
        )
        self.status = status


@dataclass(frozen=True)
class OutputCut:
    """The output of a command went past what its spool keeps."""

    kept: int
    """Bytes kept (the bound)."""
    dropped: int
    """Bytes past it, read from the pipe and not kept."""

    @property
    def words(self) -> str:
        """'output cut at 1 GiB: 123 MiB more were not kept'."""
        return (f"output cut at {size_words(self.kept)}: {size_words(self.dropped)} more were "
                "not kept")


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
    output_cut: OutputCut | None = None
    """Set when the output went past `ExecSettings.max_output_bytes` (the spool then ends
    with a note and the last 4 KiB of what was not kept)."""
    made_ahead: bool = False
    """The sandbox was made before the call asked for it (kernel.sandbox.standby)."""
    network_scope: NetworkScope = "none"
    """What the network was (kernel.sandbox.network)."""
    reverted: tuple[Reverted, ...] = ()
    """What the command made that git, a shell or an editor would run outside the sandbox,
    moved out of the workspace after it (kernel.sandbox.revert)."""
    pinned: tuple[str, ...] = ()
    """The workspace's marked links, fixed in place while the command ran (kernel.sandbox.pin):
    removing, renaming or replacing them failed (EBUSY). Paths relative to the workspace."""
    transaction: Path | None = None
    """The call's folder when the command ran as a transaction: its `upper/` holds every
    change the command made to the workspace, none of them applied yet. The caller reads,
    judges and applies them (kernel.transaction), then removes it (`remove_transaction`)."""

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
    handshake: Handshake | None = None

    @property
    def cgroup(self) -> CommandCgroup | None:
        """The command's pids cgroup (set during the start handshake), if it has one."""
        return self.handshake.cgroup if self.handshake is not None else None


@dataclass(eq=False)
class _Sandbox:
    """A started launcher whose shell waits for its script (the command) and its go-ahead."""

    proc: subprocess.Popen[bytes]
    launcher: Launcher
    request: LaunchRequest
    """What it was started with (the handshake fds as bwrap knows them)."""
    handshake: Handshake | None
    output_fd: int
    """Our end of the pipe that takes stdout and stderr."""
    script_fd: int
    """The shell's stdin, still to be filled (-1 once filled)."""
    fingerprint: Fingerprint | None = None
    """Set for a sandbox made ahead: what it was made from."""

    def fill(self, script: bytes) -> None:
        """Give the shell its script. Before the go-ahead: the shell has not read yet."""
        _write_script(self.script_fd, script)
        os.close(self.script_fd)
        self.script_fd = -1

    def discard(self) -> None:
        """End a sandbox that never got its command (its sandbox dies with bubblewrap)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(REAP_WAIT_S)
        for fd in (self.output_fd, self.script_fd):
            if fd >= 0:
                os.close(fd)
        self.output_fd = self.script_fd = -1
        if self.handshake is not None:
            self.handshake.close()
            if self.handshake.cgroup is not None:  # joined while it waited
                with contextlib.suppress(CgroupError):
                    remove_when_empty(self.handshake.cgroup)
        if self.request.transaction is not None:
            remove_transaction(self.request.transaction)


class _Ahead:
    """The one sandbox made ahead for the next command (kernel.sandbox.standby)."""

    def __init__(self) -> None:
        self.sandbox: _Sandbox | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False

    def put(self, sandbox: _Sandbox, loop: asyncio.AbstractEventLoop) -> None:
        self.sandbox = sandbox
        self.timer = loop.call_later(IDLE_S, self.discard)

    def take(self) -> _Sandbox | None:
        sandbox, self.sandbox = self.sandbox, None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        return sandbox

    def discard(self) -> None:
        sandbox = self.take()
        if sandbox is not None:
            sandbox.discard()

    def close(self) -> None:
        self.closed = True
        self.discard()


class CommandExecutor:
    def __init__(
        self, paths: AppPaths, settings: ExecSettings = DEFAULT_SETTINGS, *, ahead: bool = True,
        transactions: bool = False,
    ) -> None:
        """`ahead`: make each command's sandbox before it is asked for (kernel.sandbox.standby).
        `transactions`: run each sandboxed command as a transaction (its workspace an
        overlay; `CommandOutcome.transaction`)."""
        self.paths = paths
        self.settings = settings
        self.transactions = transactions
        self._live: set[_Live] = set()
        self._buffer: bytearray | None = None
        self._ahead = _Ahead()
        self._ahead.closed = not ahead
        self._guards = WorkspaceGuards(paths)
        self._tasks: set[asyncio.Task[None]] = set()
        self._emptying: dict[int, CommandCgroup] = {}
        """Cgroups of ended commands being removed (in the background)."""
        weakref.finalize(self, self._ahead.close)
        weakref.finalize(self, self._guards.close)
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
            return _bwrap(status)
        if allow_unsandboxed:
            return UnsandboxedLauncher()
        raise SandboxUnavailable(status)

    def _request(self, workspace: Path, cwd: Path, network: bool, limits: ResourceLimits,
                 marks: dict[str, Mark],
                 shown_secrets: tuple[tuple[str, bool], ...] = ()) -> LaunchRequest:
        net = scope(network, self.settings.local_network)
        return LaunchRequest(
            cwd=cwd,
            workspace=workspace,
            network=net,
            resolv_conf=resolv_conf(self.paths.data / "sandbox-net") if net == "internet"
            else None,
            limits=limits,
            grace_s=self.settings.grace_s,
            sandbox_home=self.paths.sandbox_home_for(workspace).resolve(),
            real_home=Path.home().resolve(),
            paths=self.paths,
            read_only_paths=self.settings.shown_paths(),
            path_vars=self.settings.path_vars(os.environ),
            marks=tuple(marks.values()),
            shown_secrets=shown_secrets,
        )

    def protected_links(self, workspace: Path) -> dict[Path, str]:
        """Where each protected link of `workspace` leads → the link (see WorkspaceGuards)."""
        return self._guards.protected_links(workspace)

    def prepare(self, workspace: Path, *, network: bool = False) -> None:
        """Make the sandbox of a first command in `workspace` ahead (from the event loop).

        Does nothing without a sandbox, or when one that fits is made ahead already."""
        if self._ahead.closed:
            return
        status = self.status()
        if not status.available:
            return
        try:
            workspace = workspace.resolve(strict=True)
            home = _sandbox_home(self.paths, workspace)
        except OSError:
            return  # the command will say what is wrong
        env, _withheld = build_env(self.settings, home=home, tmpdir=Path("/tmp"))
        request = self._request(workspace, workspace, network, self.settings.limits, {})
        self._ahead_later(_bwrap(status), request, env)

    def _ahead_later(self, launcher: Launcher, request: LaunchRequest, env: dict[str, str]
                     ) -> None:
        """Make a sandbox for `request` ahead once the workspace's marks are current."""
        async def make() -> None:
            with contextlib.suppress(CommandRefused):
                marks = await self._guards.marks(request.workspace)
                shown = await self._guards.shown_secrets(request.read_only_paths,
                                                         request.real_home)
                self._ensure_ahead(launcher, replace(request, marks=tuple(marks.values()),
                                                     shown_secrets=shown), env)

        task = asyncio.get_running_loop().create_task(make())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run(
        self,
        command: str,
        *,
        workspace: Path,
        spool: OutputSink,
        timeout_s: float,
        cwd: Path | None = None,
        network: bool = False,
        allow_unsandboxed: bool = False,
        cancel: asyncio.Event | None = None,
        on_progress: ProgressCallback | None = None,
        progress_interval_s: float = 0.5,
        owner: tuple[str, str] | None = None,
    ) -> CommandOutcome:
        """Run `command` under `/bin/sh -c` and return when it and all it started are gone.
        `owner`: the (session, call) it runs for, written in its transaction's folder
        before it starts (kernel.transaction.folders: whose an orphaned folder was).

        A cancelled task stops the command (SIGTERM, grace, SIGKILL) before re-raising;
        setting `cancel` does the same and returns an outcome with `cancelled=True`.
        """
        started = time.monotonic()
        launcher = self._launcher(allow_unsandboxed)
        workspace = workspace.resolve()
        cwd = cwd.resolve() if cwd is not None else workspace
        sandbox_home = _sandbox_home(self.paths, workspace)
        limits = self.settings.limits.for_timeout(timeout_s)
        script = shell_script(command)
        private_tmp: Path | None = None
        sandbox: _Sandbox | None = None
        ahead_timer: asyncio.TimerHandle | None = None
        try:
            if not launcher.private_tmp:
                private_tmp = Path(tempfile.mkdtemp(prefix="reins-"))
            env, withheld = build_env(
                self.settings, home=sandbox_home, tmpdir=private_tmp or Path("/tmp")
            )
            before = (await self._guards.marks(workspace) if launcher.kernel_sets_limits
                      else None)
            shown = (await self._guards.shown_secrets(self.settings.shown_paths(),
                                                      Path.home().resolve())
                     if launcher.kernel_sets_limits else ())
            request = self._request(workspace, cwd, network, limits, before or {}, shown)

            def next_ahead() -> None:
                self._ahead_later(launcher, replace(request, limits=self.settings.limits), env)

            def started_running() -> None:
                nonlocal ahead_timer
                ahead_timer = asyncio.get_running_loop().call_later(AHEAD_AFTER_S, next_ahead)

            sandbox = self._take_ahead(launcher, request, env)
            if sandbox is not None:
                try:
                    sandbox.fill(script)
                except OSError as exc:
                    sandbox.discard()
                    raise CommandRefused(f"The command could not be started: {exc}.") from exc
            else:
                sandbox = self._start(launcher, request, env, script)
            transaction = sandbox.request.transaction
            if transaction is not None:
                try:
                    if owner is not None:
                        write_ticket(transaction, *owner, workspace)
                    outcome = await self._run(
                        sandbox, started, spool, timeout_s, limits, network, withheld, cancel,
                        on_progress, progress_interval_s, started_running,
                    )  # fmt: skip
                except BaseException:
                    remove_transaction(transaction)
                    raise
                return replace(outcome, transaction=transaction)
            reverted: tuple[Reverted, ...] = ()
            try:
                outcome = await self._run(
                    sandbox, started, spool, timeout_s, limits, network, withheld, cancel,
                    on_progress, progress_interval_s, started_running,
                )  # fmt: skip
            finally:
                if before is not None:  # also when cancelled: nothing planted stays
                    reverted = await asyncio.shield(
                        self._guards.undo(workspace, before, spool.path.stem))
            pinned = tuple(os.path.relpath(pin.path, workspace) for pin in
                           links_to_pin(str(workspace), request.marks) if not pin.folder
                           ) if launcher.kernel_sets_limits else ()
            return replace(outcome, reverted=reverted, pinned=pinned)
        finally:
            if ahead_timer is not None:
                ahead_timer.cancel()
            if private_tmp is not None:
                shutil.rmtree(private_tmp, ignore_errors=True)
            if sandbox is not None and launcher.kernel_sets_limits:
                asyncio.get_running_loop().call_soon(next_ahead)  # what this one changed

    def _start(self, launcher: Launcher, request: LaunchRequest, env: dict[str, str],
               script: bytes | None) -> _Sandbox:
        """Start the launcher; its shell gets `script` now, or later through `fill`."""
        handshake: Handshake | None = None
        filter_fd = -1
        if launcher.kernel_sets_limits:
            stage: PinStage | None = None
            if self.transactions:
                request = replace(request, transaction=new_transaction(self.paths,
                                                                       request.workspace))
                ws = str(request.workspace)
                stage = PinStage((), Overlay(ws, TRANSACTION_FOLDER,
                                             hidden_secrets(ws, request.marks),
                                             overlay_status().volatile))
            elif pins := links_to_pin(str(request.workspace), request.marks):
                stage = PinStage(pins)
            try:
                handshake = Handshake(_network(request.network, self.settings.pasta), stage)
            except BaseException:
                if request.transaction is not None:
                    remove_transaction(request.transaction)
                raise
            request = replace(request, handshake_fds=handshake.child_fds,
                              stage_fds=handshake.stage.child_fds if handshake.stage else None)
        read_fd, write_fd = os.pipe()
        script_fd = _script_file()
        try:
            if handshake is not None:
                filter_fd = _filter_fd()
                request = replace(request, seccomp_fd=filter_fd)
            with contextlib.suppress(OSError):
                fcntl.fcntl(read_fd, F_SETPIPE_SZ, PIPE_SIZE)
            if script is not None:  # before the start: a launcher without a handshake
                _write_script(script_fd, script)  # runs the shell at once
            argv = launcher.argv(request)
            made_from = fingerprint(argv, env) if script is None else None
            sandbox = _Sandbox(subprocess.Popen(
                argv,
                stdin=script_fd,
                stdout=write_fd,
                stderr=write_fd,
                env=env,
                cwd="/" if launcher.private_tmp else request.cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=(*handshake.pass_fds, filter_fd) if handshake is not None else (),
            ), launcher, request, handshake, read_fd, script_fd, made_from)  # fmt: skip
        except BaseException as exc:
            for fd in (read_fd, script_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if handshake is not None:
                handshake.close()
            if request.transaction is not None:
                remove_transaction(request.transaction)
            if isinstance(exc, OSError):
                raise CommandRefused(f"The command could not be started: {exc}.") from exc
            raise
        finally:
            os.close(write_fd)
            if filter_fd >= 0:  # bubblewrap has its own (it reads it before the sandbox)
                os.close(filter_fd)
        if handshake is not None:
            handshake.started()
            if script is None:  # made ahead: its cgroup is joined while it waits
                handshake.confine_early(asyncio.get_running_loop(), request.limits)
        if script is not None:
            os.close(script_fd)
            sandbox.script_fd = -1
        return sandbox

    @staticmethod
    def _fits(sandbox: _Sandbox, launcher: Launcher, request: LaunchRequest,
              env: dict[str, str]) -> bool:
        """The sandbox is alive and made from exactly what a call of `request` gets now
        (with a stage exactly when the call would get one: a transaction, or links to pin)."""
        request = replace(request, transaction=sandbox.request.transaction)
        return (sandbox.launcher == launcher and sandbox.proc.poll() is None
                and replace(request.limits, cpu_s=None) == replace(sandbox.request.limits,
                                                                   cpu_s=None)
                and request.staged == (sandbox.request.stage_fds is not None)
                and sandbox.fingerprint == fingerprint(launcher.argv(
                    replace(request, handshake_fds=sandbox.request.handshake_fds,
                            stage_fds=sandbox.request.stage_fds,
                            seccomp_fd=sandbox.request.seccomp_fd)), env))

    def _take_ahead(self, launcher: Launcher, request: LaunchRequest, env: dict[str, str]
                    ) -> _Sandbox | None:
        """The sandbox made ahead, if it fits this call (else it is ended)."""
        sandbox = self._ahead.take()
        if sandbox is None or self._fits(sandbox, launcher, request, env):
            return sandbox
        sandbox.discard()
        return None

    def _ensure_ahead(self, launcher: Launcher, request: LaunchRequest, env: dict[str, str]
                      ) -> None:
        """Have a sandbox made ahead that fits `request` (from the event loop)."""
        loop = asyncio.get_running_loop()
        current = self._ahead.sandbox
        if self._ahead.closed or (
                current is not None and self._fits(current, launcher, request, env)):
            return
        self._ahead.discard()
        try:
            sandbox = self._start(launcher, request, env, None)
        except (CommandRefused, OSError):
            return  # the next call builds its own and reports what fails
        self._ahead.put(sandbox, loop)

    async def _run(
        self,
        sandbox: _Sandbox,
        started: float,
        spool: OutputSink,
        timeout_s: float,
        limits: ResourceLimits,
        network: bool,
        withheld: list[str],
        cancel: asyncio.Event | None,
        on_progress: ProgressCallback | None,
        progress_interval_s: float,
        on_started: Callable[[], None],
    ) -> CommandOutcome:
        loop = asyncio.get_running_loop()
        proc, launcher = sandbox.proc, sandbox.launcher
        live = _Live(proc, launcher, handshake=sandbox.handshake)
        self._live.add(live)
        if sandbox.handshake is not None:
            sandbox.handshake.watch(loop, limits, lambda reason: self._refuse(live, reason),
                                    on_started)
        pump = _Pump(loop, sandbox.output_fd, spool, self._read_buffer(),
                     self.settings.max_output_bytes)
        sandbox.output_fd = -1  # the pump closes it
        watch = _ExitWatch(loop, proc)
        exited = watch.exited
        waiters: set[asyncio.Future[Any]] = {exited}
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
            pump.end()
        except asyncio.CancelledError:
            live.stop = live.stop or "cancel"
            await asyncio.shield(self._stop(live))  # a second cancel cannot cut it short
            await asyncio.shield(self._release(live))
            raise
        finally:
            for task in (cancel_task, ticker):
                if task is not None:
                    task.cancel()
            pump.close()
            watch.close()
            if sandbox.handshake is not None:
                sandbox.handshake.close()
            self._live.discard(live)
        await self._release(live)
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
            network_scope=sandbox.request.network if launcher.isolates_network else "host",
            write_error=pump.write_error,
            output_cut=OutputCut(pump.keep, pump.cut) if pump.cut else None,
            made_ahead=sandbox.fingerprint is not None,
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

    async def _release(self, live: _Live) -> None:
        """Once the command ended: wait for what was signalled, end its pasta, then remove
        its cgroup (in the background: its last process may take a moment to be reaped,
        and an empty cgroup holds nothing; `shutdown` removes what is left)."""
        await self._wait_gone(live)
        if live.handshake is not None and live.handshake.network is not None:
            await live.handshake.network.aclose()
        if live.cgroup is not None:
            cgroup = live.cgroup
            self._emptying[id(cgroup)] = cgroup
            task = asyncio.get_running_loop().create_task(self._empty(cgroup))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _empty(self, cgroup: CommandCgroup) -> None:
        """Remove an ended command's cgroup; when the loop ends first, at once (bounded)."""
        try:
            await _remove_cgroup(cgroup)
            self._emptying.pop(id(cgroup), None)
        finally:
            if self._emptying.pop(id(cgroup), None) is not None:  # cancelled
                with contextlib.suppress(CgroupError):
                    remove_when_empty(cgroup)

    async def _wait_gone(self, live: _Live) -> None:
        """After a stop, wait (bounded) until every process we signalled has died."""
        deadline = time.monotonic() + REAP_WAIT_S
        while any(alive(p) for p in live.known) and time.monotonic() < deadline:
            signal_all(live.known, signal.SIGKILL)
            await asyncio.sleep(POLL_S)

    def shutdown(self) -> None:
        """End every running command now (Reins is exiting): SIGTERM, grace, SIGKILL.

        No sandbox is made ahead any more."""
        self._ahead.close()
        for task in self._tasks:
            task.cancel()
        self._guards.close()
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
        for live in lives:
            if live.handshake is not None and live.handshake.network is not None:
                live.handshake.network.stop()
            if live.cgroup is not None:
                with contextlib.suppress(CgroupError):
                    remove_when_empty(live.cgroup)
        for cgroup in list(self._emptying.values()):
            with contextlib.suppress(CgroupError):
                remove_when_empty(cgroup)
        self._emptying.clear()

    @property
    def running(self) -> int:
        """How many commands are running now."""
        return len(self._live)


def _network(network_scope: NetworkScope, name: str) -> Pasta | None:
    """The pasta that gives a sandbox the internet (fail closed: none, no network)."""
    if network_scope != "internet":
        return None
    pasta = find_pasta(name)
    if pasta is None:
        raise CommandRefused(
            "The command was not run: it is allowed the network, but pasta (the user-mode "
            "network stack that gives a sandbox the internet without this machine's local "
            "services) is not installed.",
            hint=f"Fix: {FIX_PASTA}; or set exec.local_network to share this machine's "
                 "network with commands.",
            kind="sandbox_unavailable")
    return Pasta(pasta)


def _bwrap(status: SandboxStatus) -> BwrapLauncher:
    return BwrapLauncher(status.bwrap_path, status.nested_userns_blocked)


async def _remove_cgroup(cgroup: CommandCgroup) -> None:
    """Remove the command's pids cgroup once the last of its processes is reaped (bounded:
    one left busy is removed when a later kernel starts)."""
    deadline = time.monotonic() + REAP_WAIT_S
    with contextlib.suppress(CgroupError):  # in a thread: a cgroup's rmdir may wait for the
        while not await asyncio.to_thread(cgroup.remove) and (  # kernel (RCU), tens of ms
                time.monotonic() < deadline):
            await asyncio.sleep(POLL_S)


def _sandbox_home(paths: AppPaths, workspace: Path) -> Path:
    """The workspace's sandbox home (AppPaths.sandbox_home_for), made if missing; it and the
    folder of homes are the user's alone (0700)."""
    paths.sandbox_homes.mkdir(mode=0o700, parents=True, exist_ok=True)
    home = paths.sandbox_home_for(workspace)
    home.mkdir(mode=0o700, exist_ok=True)
    for folder in (paths.sandbox_homes, home):
        if folder.stat().st_mode & 0o077:
            folder.chmod(0o700)
    return home


def _filter_fd() -> int:
    """A descriptor of the seccomp filter for one bubblewrap start (fail closed: none, no
    start)."""
    try:
        return seccomp.open_program()
    except OSError as exc:
        raise CommandRefused(f"The command was not run: {exc}.",
                             kind="sandbox_unavailable") from exc


def _write_script(fd: int, script: bytes) -> None:
    written = 0
    while written < len(script):
        written += os.pwrite(fd, script[written:], written)


def _script_file() -> int:
    """An anonymous file for the shell's script (a memfd; an unlinked temporary file
    where there is none)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("reins-command", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())


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
    """Moves the command's output from the pipe to the spool file as it arrives, up to `keep`
    bytes; past that it still drains the pipe (the command runs on as it would, neither
    blocked on a full pipe nor killed by SIGPIPE: its timeout ends a runaway), counts what it
    drops (`cut`) and keeps the last `TAIL_BYTES`, which `end` writes after a note."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, fd: int, spool: OutputSink, buffer: bytearray,
        keep: int,
    ) -> None:
        self.loop = loop
        self.fd = fd
        self.spool = spool
        self.tail = b""
        self.buffer = buffer
        """Shared, reused for every read: each chunk goes to the spool before the next read."""
        self.room = keep
        """How many more bytes the spool keeps."""
        self.keep = keep
        self.cut = 0
        """Bytes read past `keep`, not kept."""
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
        kept = min(size, self.room)
        self.room -= kept
        self.cut += size - kept
        if not self.write_error:
            self._write(view[:kept])

    def _write(self, view: memoryview) -> None:
        try:
            for start in range(0, len(view), WRITE_CHUNK):
                self.spool.write(view[start : start + WRITE_CHUNK])
        except OSError as exc:
            self.write_error = f"the output file stopped taking output: {exc}"

    def end(self) -> None:
        """After the output ended: when some was cut, a note and the last of it."""
        if self.cut and not self.write_error:
            last = self.tail[-min(self.cut, TAIL_BYTES):]
            self._write(memoryview(
                f"\n[{OutputCut(self.keep, self.cut).words}; the last {size_words(len(last))} "
                f"follow]\n".encode() + last))

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
    spool: OutputSink, started: float, on_progress: ProgressCallback, interval_s: float
) -> None:
    while True:
        await asyncio.sleep(interval_s)
        on_progress(spool.bytes_written, spool.last_line, time.monotonic() - started)
