"""The stdio transport: an MCP server as a child process, in its own process group.

Unlike the SDK's `stdio_client`, the child gets exactly the environment it is given (the
SDK merges in inherited variables), its stderr goes to a file (the last lines are shown
when it fails), its exit is noticed even while a grandchild still holds its stdout open,
and on close the whole process group is ended: stdin closed, a grace period, SIGTERM to the
group, SIGKILL to what is left.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from kernel.sandbox.server_start import ServerStart

EXIT_GRACE_S = 2.0
"""How long a server may take to exit by itself once its stdin is closed."""
KILL_GRACE_S = 2.0
"""Between SIGTERM and SIGKILL to the process group."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A single JSON-RPC line longer than this ends the connection (memory stays bounded)."""
_EXIT_POLL_S = 0.05
_DRAIN_AFTER_EXIT_S = 0.5


class MessageTooLarge(Exception):
    """The server wrote a line longer than MAX_MESSAGE_BYTES."""


@dataclass
class StdioChannel:
    """What an open stdio transport gives the session, and how to watch the process."""

    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_stream: MemoryObjectSendStream[SessionMessage]
    process: anyio.abc.Process
    closed: anyio.Event
    """Set when the server's output ended or the process exited."""
    exit_grace_s: float = 0.0
    """How long the server may take to exit by itself when the channel closes. 0 until the
    session is initialized: a server still starting has nothing to finish, it is ended at
    once."""

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def exited(self) -> bool:
        """The process has ended, even if the event loop has not noticed yet: a zombie
        counts (`waitid` with WNOWAIT looks without reaping it), and so does one that is
        dying (killed, its main thread a zombie while its other threads end: not waitable
        yet for a few ms)."""
        if self.process.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.process.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped by the loop's child watcher
            return True
        except OSError:
            return False
        return info is not None or _dying(self.process.pid)


def _dying(pid: int) -> bool:
    """/proc says the process is a zombie or dead (Linux; elsewhere: no)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ")"
    return stat[stat.rfind(b")") + 2:][:1] in (b"Z", b"X")


@asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None,
    stderr: IO[Any],
    on_message: Callable[[SessionMessage], None] | None = None,
    start: ServerStart | None = None,
) -> AsyncIterator[StdioChannel]:
    """Start `command` and speak newline-delimited JSON-RPC with it until the block ends;
    `on_message` sees every message the moment it is read, in order. A sandboxed server's
    `start` (its network, its pinned links) is completed before it runs, and ended with it.

    Raises OSError when the program cannot be started, ServerStartFailed when its sandbox
    cannot be completed (it is ended first: it never ran).
    """
    process = await anyio.open_process(
        [command, *args], env=dict(env), cwd=cwd, stderr=stderr, start_new_session=True,
        pass_fds=start.pass_fds if start is not None else ())
    if start is not None:
        start.started()
        try:
            await start.connect()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop_process(process, 0)
                await start.aclose()
            raise
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    closed = anyio.Event()

    async def read_stdout() -> None:
        assert process.stdout is not None
        pending: list[bytes] = []
        size = 0
        try:
            async with read_send:
                async for chunk in process.stdout:
                    while chunk:
                        cut = chunk.find(b"\n")
                        if cut < 0:
                            pending.append(chunk)
                            size += len(chunk)
                            if size > MAX_MESSAGE_BYTES:
                                await read_send.send(MessageTooLarge(
                                    f"the server wrote a message over {MAX_MESSAGE_BYTES} bytes"))
                                return
                            break
                        pending.append(chunk[:cut])
                        line = b"".join(pending)
                        pending, size, chunk = [], 0, chunk[cut + 1 :]
                        if line.strip():
                            message = _parse_line(line)
                            if on_message is not None and isinstance(message, SessionMessage):
                                on_message(message)
                            await read_send.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            closed.set()

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    async def watch_exit() -> None:
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S)
        with anyio.move_on_after(_DRAIN_AFTER_EXIT_S):
            await closed.wait()
        closed.set()
        await read_send.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(write_stdin)
        tg.start_soon(watch_exit)
        channel = StdioChannel(read_recv, write_send, process, closed)
        try:
            yield channel
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                await stop_process(process, channel.exit_grace_s)
                await read_recv.aclose()
                if start is not None:
                    await start.aclose()
            tg.cancel_scope.cancel()


async def stop_process(process: anyio.abc.Process, grace_s: float = EXIT_GRACE_S) -> None:
    """Close stdin, give the server `grace_s`, then end its whole process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(grace_s):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S / 5)
    # Always signal the group: the leader may be gone while children it started live on.
    await terminate_posix_process_tree(process, KILL_GRACE_S)
    with anyio.move_on_after(KILL_GRACE_S):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_S / 5)
    if process.stdout is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


def _parse_line(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def tail_lines(path: Path, lines: int = 20, max_bytes: int = 16_384) -> tuple[str, ...]:
    """The last `lines` lines of a (stderr) file, decoded leniently; () when unreadable."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return ()
    text = data.decode("utf-8", "replace").splitlines()
    if size > max_bytes and text:
        text = text[1:]
    kept = [t.rstrip() for t in text if t.strip()]
    return tuple(kept[-lines:])
