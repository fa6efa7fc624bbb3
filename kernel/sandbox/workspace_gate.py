"""A sandboxed MCP server's workspace: writable only while a call to it is in flight.

A server lives as long as the kernel; what it makes in its workspace during a call is undone
after it (kernel.sandbox.guard), but a thread of its own could write between calls (a
`sub/.vscode/tasks.json`, an `.envrc`) and the next call's marks, read fresh, would take it
for the user's. So between calls its workspace is read-only inside its mount namespace:
`WorkspaceGate.open` takes, before the server runs, every writable mount of its sandbox at
or below the workspace (the workspace's bind, the git directories and pinned folders bound
onto themselves, the pinned links, what the host mounted below; not the server's state
folder), each the one a path there reaches, checked by its mount id, and keeps an O_PATH
descriptor of each root for the server's life (a rename inside cannot make it another).
A binder forked from the zygote (kernel.sandbox.binder.set_read_only) sets
MOUNT_ATTR_RDONLY on exactly these mounts, each alone, and clears it on the same ones: at
the start, before the server runs (`lock`), then when the first call starts and after the
last one in flight ends (`writable`).

Fail closed: a workspace that cannot be made writable fails the call (GateError) and is
made read-only again; one that cannot be made read-only again (a file the server holds open
for writing there, EBUSY; the zygote gone) has its server killed at once (its sandbox's
init, through a pidfd: every process in it dies) before GateError is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TypeVar

from kernel.sandbox import zygote
from kernel.sandbox.binder import OK
from kernel.sandbox.pin import PinError, failure, read_report

T = TypeVar("T")
_CHUNK = zygote.MAX_FDS - 2
"""Mounts per binder: its message also carries the namespace and the report pipe."""
_ESCAPED = re.compile(rb"\\([0-7]{3})")


class GateError(Exception):
    """The workspace could not be made writable, or read-only (then the server was stopped)."""


@dataclass(frozen=True)
class _Mount:
    id: int
    point: str
    writable: bool


def _mounts(pid: int) -> list[_Mount]:
    """The mounts of the sandbox whose init is `pid`, as /proc/PID/mountinfo lists them."""
    with open(f"/proc/{pid}/mountinfo", "rb") as file:
        lines = file.read().splitlines()
    out = []
    for line in lines:
        fields = line.split(b" ")
        point = _ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        out.append(_Mount(int(fields[0]), os.fsdecode(point),
                          fields[5].split(b",")[0] == b"rw"))
    return out


def _mount_id(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}", "rb") as file:
        for line in file:
            if line.startswith(b"mnt_id:"):
                return int(line.split()[1])
    raise GateError("the kernel gives no mount id here")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class WorkspaceGate:
    """The writable mounts of one server's workspace and the server's sandbox, held open."""

    def __init__(self, pidfd: int, namespace: int, mounts: list[tuple[str, int]]) -> None:
        self._pidfd = pidfd
        self._namespace = namespace
        self._mounts = mounts
        """(mount point, O_PATH descriptor of its root)."""
        self._in_flight = 0
        self._lock = asyncio.Lock()
        self._stopped = ""

    @classmethod
    def open(cls, pid: int, workspace: str, state: str) -> WorkspaceGate:
        """The gate of the sandbox whose init is `pid` (made, its links pinned, its program
        not started). Raises GateError or OSError."""
        pidfd = os.pidfd_open(pid)
        held = [pidfd]
        try:
            held.append(os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC))
            by_id = {m.id: m for m in _mounts(pid)}
            mounts: list[tuple[str, int]] = []
            for point in dict.fromkeys(m.point for m in by_id.values()
                                       if _inside(m.point, workspace)
                                       and not _inside(m.point, state)):
                fd = os.open(f"/proc/{pid}/root{point}",
                             os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
                held.append(fd)
                top = by_id.get(_mount_id(fd))
                if top is None or top.point != point:
                    raise GateError(f"{point} is not the mount it was in the server's sandbox")
                if top.writable:
                    mounts.append((point, fd))
                else:
                    os.close(held.pop())
            if not mounts:
                raise GateError(f"no writable mount of the workspace {workspace} was found "
                                f"in the server's sandbox")
        except BaseException:
            for fd in held:
                os.close(fd)
            raise
        return cls(held[0], held[1], mounts)

    @property
    def points(self) -> tuple[str, ...]:
        """The mount points toggled, as the sandbox sees them."""
        return tuple(point for point, _ in self._mounts)

    async def lock(self) -> None:
        """Make the workspace read-only (at the start: the caller stops the sandbox when
        this raises GateError)."""
        await self._set(read_only=True)

    @contextlib.asynccontextmanager
    async def writable(self) -> AsyncIterator[None]:
        """The workspace writable for the block (one call; concurrent calls share it), then
        read-only again once no call is in flight. Raises GateError (see the module)."""
        async with self._lock:
            if self._stopped:
                raise GateError(self._stopped)
            if self._in_flight == 0:
                try:
                    await self._set(read_only=False)
                except BaseException as exc:  # cancelled too: some mounts may be writable
                    await _finished(self._relock())
                    if not isinstance(exc, GateError):
                        raise
                    raise GateError(f"its workspace could not be made writable for the "
                                    f"call ({exc}), so the call was not sent; the "
                                    f"workspace stays read-only") from exc
            self._in_flight += 1
        try:
            yield
        finally:
            await _finished(self._leave())

    async def _leave(self) -> None:
        async with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                await self._relock()

    async def _relock(self) -> None:
        """Read-only again, or the server killed; GateError either way when it failed."""
        try:
            await self._set(read_only=True)
        except GateError as exc:
            self._stopped = (f"its workspace could not be made read-only again after a "
                             f"call ({exc}), so the server was stopped; the call may have "
                             f"had effects")
            self.stop()
            raise GateError(self._stopped) from exc

    def stop(self) -> None:
        """Kill the server's sandbox (its init: every process in it dies)."""
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    async def _set(self, *, read_only: bool) -> None:
        for start in range(0, len(self._mounts), _CHUNK):
            chunk = self._mounts[start:start + _CHUNK]
            report_read, report_write = os.pipe()
            try:
                try:
                    asked = zygote.start()
                    asked.send([self._namespace, report_write, *(fd for _, fd in chunk)],
                               zygote.READ_ONLY if read_only else zygote.WRITABLE)
                finally:
                    os.close(report_write)
                text = await read_report(report_read)
            except (OSError, PinError) as exc:
                raise GateError(str(exc)) from exc
            finally:
                os.close(report_read)
            if text != OK:
                said = failure(text, asked)
                index, _, why = said.partition(" ")
                if index.isdigit() and int(index) < len(chunk):
                    said = f"{chunk[int(index)][0]}: {why}"
                raise GateError(said)

    def close(self) -> None:
        """Close every descriptor (the server has ended, or is being ended)."""
        for fd in (self._pidfd, self._namespace, *(fd for _, fd in self._mounts)):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._mounts = []
        self._pidfd = self._namespace = -1


async def _finished(work: Awaitable[T]) -> T:
    """`work` run to its end even when the caller is cancelled meanwhile (the cancellation
    is raised after it): a workspace is never left writable because a call was cut short."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
