"""bubblewrap's start handshake: the kernel sets the resource limits before the command starts.

bwrap writes `{"child-pid": N, …}` to its `--info-fd` as soon as it has created the
namespaces, and the sandbox's init then waits on `--block-fd` before it starts the command.
In between, the kernel calls prlimit(2) on that init (and, where RLIMIT_NPROC cannot hold,
moves it into a pids cgroup: kernel.sandbox.pids), so the command and everything it starts
inherit the limits. This costs no extra program in front of bwrap (util-linux `prlimit` was an
exec per command) and runs nothing in a forked copy of the kernel (no `preexec_fn`).

Fail closed: bwrap starts the command on any read of the block fd, end of file included, so
when the limits cannot be set the sandbox is killed *before* the block fd is closed. For a
transaction or a workspace with marked links bwrap's program is a shell stage that waits
once more while a binder mounts the overlay and binds the links (kernel.sandbox.pin); it is
killed when that fails.

A staged sandbox made ahead without a network of its own goes further ahead
(`confine_early`): every limit but the CPU time (which follows the call's timeout) is set
on bwrap's init, bubblewrap is let go, its init forks the stage and the binder does its
work while the stage waits, all before the command is known. The call then sets the CPU
limit on the stage itself (the process that becomes the command) and lets it go: only that
is left on the command's path.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.network import NetworkUnavailable, Pasta
from kernel.sandbox.pids import CgroupError, CommandCgroup, confine
from kernel.sandbox.pin import PinError, PinStage
from kernel.sandbox.proctree import ProcId, alive, child_processes

if TYPE_CHECKING:
    import asyncio  # the loop is the caller's; `reins doctor`'s probe needs none

MAX_INFO_BYTES = 64 << 10
"""bwrap's info is a few hundred bytes; more than this is not bwrap talking."""


class HandshakeError(Exception):
    """The limits could not be set; the command must not start."""


def child_pid(info: bytes) -> int:
    """The sandbox init's pid from bwrap's `--info-fd` JSON."""
    if not info:
        raise HandshakeError(
            "bubblewrap stopped before it created the sandbox (its message is in the output)"
        )
    try:
        pid = json.loads(info.decode("utf-8"))["child-pid"]
    except (UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise HandshakeError(f"bubblewrap did not report its sandbox's process ({exc!r})") from exc
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        raise HandshakeError(f"bubblewrap reported an impossible process id: {pid!r}")
    return pid


def set_limits(pid: int, limits: ResourceLimits, *, cpu: bool = True) -> None:
    """prlimit(2) every limit on `pid` (soft and hard); all but the CPU time's without
    `cpu`."""
    for name, soft, hard in limits.rlimits():
        if name == "RLIMIT_CPU" and not cpu:
            continue
        try:
            resource.prlimit(pid, getattr(resource, name), (soft, hard))
        except (OSError, ValueError) as exc:
            raise HandshakeError(
                f"the resource limit {name} could not be set on the sandbox ({exc}); "
                f"a setuid bubblewrap does not allow this"
            ) from exc


class Handshake:
    """The two pipes of one bwrap start: bwrap's info comes in, the go-ahead goes out."""

    def __init__(self, network: Pasta | None = None, stage: PinStage | None = None) -> None:
        self.network = network
        """Attached to the sandbox's network namespace before the go-ahead (kernel.sandbox.network);
        the caller stops it once the command has ended."""
        self.stage = stage
        """After the go-ahead, the sandbox's links are pinned before its command starts
        (kernel.sandbox.pin)."""
        self._attaching: asyncio.Task[None] | None = None
        self.cgroup: CommandCgroup | None = None
        """The command's pids cgroup, where one enforces the process limit (kernel.sandbox.pids);
        the caller removes it once the command's processes are gone."""
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self._info = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid: int | None = None
        """The sandbox init's pid, once bwrap has reported it."""
        self._failure = ""
        """Why the sandbox cannot be let go (found before the command came)."""
        self._early: ResourceLimits | None = None
        """Set by `confine_early`: the limits (all but the CPU time's) taken on bwrap's report."""
        self._staging: asyncio.Task[ProcId] | None = None
        """A sandbox let go early: the binder's work, then the stage's process."""
        self._waiting: tuple[ResourceLimits, Callable[[str], None],
                             Callable[[], None] | None] | None = None
        """What `watch` was given, until the command can be let go."""

    @property
    def child_fds(self) -> tuple[int, int]:
        """(info fd, block fd) as bwrap sees them (pass them with `pass_fds`)."""
        return self._info_write, self._block_read

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Every descriptor bwrap must get: the handshake's, and the pin stage's."""
        return self.child_fds + (self.stage.child_fds if self.stage is not None else ())

    def started(self) -> None:
        """Close the child's ends here once bwrap has them (else no end of file comes)."""
        for fd in (self._info_write, self._block_read):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._info_write = self._block_read = -1
        if self.stage is not None:
            self.stage.started()

    def complete(self, limits: ResourceLimits, timeout_s: float) -> None:
        """Blocking: read bwrap's info, set the limits, let the command start.

        On HandshakeError the caller kills bwrap first, then calls `close`."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._info_read], [], [], left)[0]:
                raise HandshakeError(f"bubblewrap did not report its sandbox in {timeout_s:g} s")
            if self._read_some():
                break
        if self.network is not None or self.stage is not None:
            raise HandshakeError("a sandbox with a network of its own or links to pin is "
                                 "started from the loop")
        self._confine(limits)
        self._go()

    def confine_early(self, loop: asyncio.AbstractEventLoop, limits: ResourceLimits) -> None:
        """For a sandbox made ahead: take bwrap's report as soon as it comes and move the
        sandbox into its pids cgroup then (a cgroup move costs milliseconds), so that when
        the command comes only its rlimits are left to set. With a stage and no network of
        its own, also set every limit but the CPU time's and let bubblewrap go, so the
        stage's binder works now (see the module's text). A failure is kept and reported
        by `watch`, which never lets the command start."""
        self._early = limits
        self._read_from(loop)

    @property
    def goes_early(self) -> bool:
        """bubblewrap is let go before the command is known (`confine_early`)."""
        return self._early is not None and self.stage is not None and self.network is None

    def watch(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: ResourceLimits,
        on_failure: Callable[[str], None],
        on_started: Callable[[], None] | None = None,
    ) -> None:
        """Do `complete` from the event loop without blocking it.

        `on_failure` gets the reason and must kill the sandbox; it runs before the block fd is
        closed, so the command never starts without its limits. `on_started` is called once
        the command has been let go.
        """
        self._waiting = (limits, on_failure, on_started)
        if self._pid is not None or self._failure:
            self._proceed(loop)
        elif self._loop is None:
            self._read_from(loop)

    def _read_from(self, loop: asyncio.AbstractEventLoop) -> None:
        os.set_blocking(self._info_read, False)

        def readable() -> None:
            try:
                if not self._read_some():
                    return
            except BlockingIOError:
                return
            except OSError as exc:
                self._stop_watching()
                self._failure = f"bubblewrap's report could not be read ({exc})"
            else:
                self._stop_watching()
                try:
                    self._pid = child_pid(bytes(self._info))
                    if self._early is not None:
                        self._join_cgroup(self._pid, self._early.processes)
                    if self.stage is not None:
                        self.stage.prepare(self._pid)
                    if self.goes_early:
                        self._go_early(loop, self._pid)
                except HandshakeError as exc:
                    self._failure = str(exc)
                except OSError as exc:
                    self._failure = f"the protected links could not be pinned: {exc}"
            if self._waiting is not None:
                self._proceed(loop)

        self._loop = loop
        loop.add_reader(self._info_read, readable)

    def _go_early(self, loop: asyncio.AbstractEventLoop, pid: int) -> None:
        """Set every limit but the CPU time's on bwrap's init, let it go (its init forks
        the stage, which inherits them) and have the binder work while the stage waits."""
        assert self._early is not None and self.stage is not None
        set_limits(pid, self._early, cpu=False)
        self._go()
        self._staging = loop.create_task(self._stage_ready(self.stage, pid))
        self._staging.add_done_callback(_retrieved)

    @staticmethod
    async def _stage_ready(stage: PinStage, pid: int) -> ProcId:
        """The binder's report (PinError when it failed), then the stage's process: the
        one child of bwrap's init."""
        await stage.pin(pid)
        children = child_processes(pid)
        if len(children) != 1:
            raise PinError("the sandbox's stage ended before its command started")
        return children[0]

    def _proceed(self, loop: asyncio.AbstractEventLoop) -> None:
        """bwrap has reported and the command is known: set the limits, then let it go."""
        assert self._waiting is not None
        limits, on_failure, on_started = self._waiting
        self._waiting = None
        if self._staging is not None and not self._failure:
            self._attaching = loop.create_task(self._finish_early(limits, on_failure,
                                                                  on_started))
            return
        try:
            if self._failure:
                raise HandshakeError(self._failure)
            assert self._pid is not None
            pid = self._pid
            set_limits(pid, limits)
            if self.cgroup is None:
                self._join_cgroup(pid, limits.processes)
        except HandshakeError as exc:
            on_failure(str(exc))
            self.close()
            return
        if self.network is None and self.stage is None:
            self._go()
            if on_started is not None:
                on_started()
        else:
            self._attaching = loop.create_task(self._finish(pid, on_failure, on_started))

    async def _finish(self, pid: int, on_failure: Callable[[str], None],
                      on_started: Callable[[], None] | None) -> None:
        """Attach the network, let bwrap go, pin the links, let the command go."""
        if self.network is not None:
            try:
                await self.network.attach(pid)
            except NetworkUnavailable as exc:
                on_failure(f"the command's network could not be set up: {exc}")
                self.close()
                return
        self._go()
        if self.stage is not None:
            await self._staged(self.stage.run(pid), on_failure, on_started)
        elif on_started is not None:
            on_started()

    async def _finish_early(self, limits: ResourceLimits, on_failure: Callable[[str], None],
                            on_started: Callable[[], None] | None) -> None:
        """For a sandbox let go early: once the binder has worked, set the call's CPU limit
        on the stage and let it go."""
        await self._staged(self._release_stage(limits), on_failure, on_started)

    async def _release_stage(self, limits: ResourceLimits) -> None:
        """The call's CPU limit on the waiting stage (checked alive after it, so a pid
        reused meanwhile fails the call), then its go-ahead."""
        assert self._staging is not None and self.stage is not None
        stage = await self._staging
        for name, soft, hard in limits.rlimits():
            if name == "RLIMIT_CPU":
                resource.prlimit(stage.pid, resource.RLIMIT_CPU, (soft, hard))
        if not alive(stage):
            raise PinError("the sandbox's stage ended before its command started")
        self.stage.go()

    async def _staged(self, work: Awaitable[None], on_failure: Callable[[str], None],
                      on_started: Callable[[], None] | None) -> None:
        """Await the stage's `work`; on any failure the command must not start, nor wait
        forever."""
        try:
            await work
        except Exception as exc:
            on_failure(str(exc) if isinstance(exc, (PinError, OSError)) else
                       f"the protected links could not be pinned ({exc!r})")
            self.close()
            return
        if on_started is not None:
            on_started()

    def _read_some(self) -> bool:
        """Read what bwrap wrote; True at the end of its info."""
        data = os.read(self._info_read, 4096)
        self._info += data
        return not data or len(self._info) > MAX_INFO_BYTES

    def _confine(self, limits: ResourceLimits) -> int:
        """Set the limits on the sandbox (rlimits, and a pids cgroup where needed); its pid."""
        pid = child_pid(bytes(self._info))
        set_limits(pid, limits)
        self._join_cgroup(pid, limits.processes)
        return pid

    def _join_cgroup(self, pid: int, processes: int) -> None:
        """Move the sandbox into a pids cgroup of its own where RLIMIT_NPROC cannot hold."""
        try:
            self.cgroup = confine(pid, processes)
        except CgroupError as exc:
            raise HandshakeError(str(exc)) from exc

    def _go(self) -> None:
        with contextlib.suppress(OSError):  # bwrap gone already: it runs nothing
            os.write(self._block_write, b"1")
        self._stop_watching()
        self._close_fds()

    def _stop_watching(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._info_read)
            self._loop = None

    def close(self) -> None:
        """Close every end still open. Only after the go-ahead or after the sandbox is dead."""
        self._stop_watching()
        watched = True
        for task in (self._attaching, self._staging):
            if task is None or task is _current_task():
                continue
            if task.get_loop().is_closed():  # its loop ended first: nothing watches any more
                watched = False
            else:
                task.cancel()
        self._attaching = self._staging = None
        if self.stage is not None:
            self.stage.close(watched)
        self._close_fds()

    def _close_fds(self) -> None:
        for name in ("_info_read", "_info_write", "_block_read", "_block_write"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


def _retrieved(task: asyncio.Task[ProcId]) -> None:
    """Mark a failure of a task nobody may await (its sandbox discarded) as seen; the
    call that awaits it reports it."""
    if not task.cancelled():
        task.exception()


def _current_task() -> asyncio.Task[object] | None:
    import asyncio  # loaded already when anything is attaching

    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop
        return None
