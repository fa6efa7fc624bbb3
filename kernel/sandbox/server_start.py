"""The start of a sandboxed MCP server: its seccomp filter, its internet through pasta, its
links pinned.

A server's bubblewrap (kernel.sandbox.server) reports the sandbox's pid on its info fd and
waits on its block fd when the server gets a network namespace of its own or its workspace
has marked links; once the server process is started, `connect` attaches pasta to that
namespace (kernel.sandbox.network: outside hosts reached, this machine's loopback services
and abstract sockets not), lets bubblewrap go and, with links to pin, binds them onto
themselves while the server's shell stage waits (kernel.sandbox.pin, as for a command: a
server lives long, and an editor or git reading a link it replaced would take the server's),
makes its workspace read-only (kernel.sandbox.workspace_gate: writable only while a call is
in flight), then lets the server go. A server with a workspace always has that stage, with
links to pin or none. Every sandboxed server has a start: it holds the descriptor of the
seccomp filter bwrap installs on the server (kernel.sandbox.seccomp), as on every command.
`aclose` ends pasta with the server and closes its gate.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from kernel.sandbox import seccomp
from kernel.sandbox.handshake import MAX_INFO_BYTES, HandshakeError, child_pid
from kernel.sandbox.network import START_TIMEOUT_S, NetworkUnavailable, Pasta
from kernel.sandbox.pin import PinError, PinStage
from kernel.sandbox.readall import read_all
from kernel.sandbox.workspace_gate import GateError, WorkspaceGate


class ServerStartFailed(Exception):
    """The server's sandbox could not be completed; the caller ends the server (it never ran)."""


class ServerStart:
    def __init__(self, pasta: str | None, stage: PinStage | None = None,
                 workspace: tuple[str, str] | None = None) -> None:
        """`workspace`: (the workspace, the server's state folder), both resolved, for a
        server with a workspace (then `stage` is given, its links or none)."""
        self._pasta = Pasta(pasta) if pasta is not None else None
        self.stage = stage
        self._workspace = workspace
        self.gate: WorkspaceGate | None = None
        """The server's workspace gate, once `connect` made it read-only."""
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self._filter = seccomp.open_program()
        """The seccomp filter bubblewrap installs on the server (kernel.sandbox.seccomp)."""

    @property
    def own_network(self) -> bool:
        """The server gets a network namespace of its own (with pasta)."""
        return self._pasta is not None

    @property
    def child_fds(self) -> tuple[int, int]:
        """(info fd, block fd) as bwrap sees them."""
        return self._info_write, self._block_read

    @property
    def seccomp_fd(self) -> int:
        """The seccomp filter as bwrap sees it."""
        return self._filter

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Every descriptor bwrap must get (pass them with `pass_fds`)."""
        return (*self.child_fds, self._filter,
                *(self.stage.child_fds if self.stage is not None else ()))

    def started(self) -> None:
        """Close the child's ends here once bwrap has them."""
        self._close("_info_write", "_block_read", "_filter")
        if self.stage is not None:
            self.stage.started()

    async def connect(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Attach pasta, let bwrap go, pin the links, let the server start. Raises
        ServerStartFailed (the caller ends the server: it never ran)."""
        try:
            info = await asyncio.wait_for(read_all(self._info_read, MAX_INFO_BYTES), timeout_s)
            pid = child_pid(info)
        except TimeoutError:
            raise ServerStartFailed(
                f"bubblewrap did not report the server's sandbox in {timeout_s:g} s") from None
        except HandshakeError as exc:
            raise ServerStartFailed(str(exc)) from exc
        if self._pasta is not None:
            try:
                await self._pasta.attach(pid)
            except NetworkUnavailable as exc:
                raise ServerStartFailed(f"the server's network could not be set up: {exc}") from exc
        with contextlib.suppress(OSError):  # bwrap gone already: it runs nothing
            os.write(self._block_write, b"1")
        self._close("_block_write")
        if self.stage is not None:
            try:
                await self.stage.pin(pid)
                if self._workspace is not None:
                    self.gate = WorkspaceGate.open(pid, *self._workspace)
                    await self.gate.lock()
                self.stage.go()
            except Exception as exc:  # any: the server must not start
                raise ServerStartFailed(
                    str(exc) if isinstance(exc, (PinError, OSError)) else
                    f"its workspace could not be made read-only: {exc}"
                    if isinstance(exc, GateError) else
                    f"its protected links could not be pinned ({exc!r})") from exc

    async def aclose(self) -> None:
        """End pasta (the server has ended, or is being ended) and close every fd."""
        if self._pasta is not None:
            await self._pasta.aclose()
        if self.stage is not None:
            self.stage.close()
        if self.gate is not None:
            self.gate.close()
        self._close("_info_read", "_info_write", "_block_read", "_block_write", "_filter")

    def _close(self, *names: str) -> None:
        for name in names:
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)
