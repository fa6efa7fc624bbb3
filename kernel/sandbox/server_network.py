"""The internet for a sandboxed MCP server, through pasta as for a command.

A server's bubblewrap (kernel.sandbox.server) then has a network namespace of its own: it
reports the sandbox's pid on its info fd and waits on its block fd; once the server process
is started, `connect` attaches pasta to that namespace (kernel.sandbox.network: outside hosts
reached, this machine's loopback services and abstract sockets not) and lets the server go.
`aclose` ends pasta with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from kernel.sandbox.handshake import MAX_INFO_BYTES, HandshakeError, child_pid
from kernel.sandbox.network import START_TIMEOUT_S, NetworkUnavailable, Pasta


class ServerNetwork:
    def __init__(self, pasta: str) -> None:
        self._pasta = Pasta(pasta)
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()

    @property
    def child_fds(self) -> tuple[int, int]:
        """(info fd, block fd) as bwrap sees them (pass them with `pass_fds`)."""
        return self._info_write, self._block_read

    def started(self) -> None:
        """Close the child's ends here once bwrap has them."""
        self._close("_info_write", "_block_read")

    async def connect(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Attach pasta to the sandbox's network, then let the server start. Raises
        NetworkUnavailable (the caller ends the server: it never ran)."""
        try:
            info = await asyncio.wait_for(self._read_info(), timeout_s)
            pid = child_pid(info)
        except TimeoutError:
            raise NetworkUnavailable(
                f"bubblewrap did not report the server's sandbox in {timeout_s:g} s") from None
        except HandshakeError as exc:
            raise NetworkUnavailable(str(exc)) from exc
        await self._pasta.attach(pid)
        with contextlib.suppress(OSError):  # bwrap gone already: it runs nothing
            os.write(self._block_write, b"1")
        self._close("_block_write")

    async def _read_info(self) -> bytes:
        loop = asyncio.get_running_loop()
        os.set_blocking(self._info_read, False)
        info = bytearray()
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                data = os.read(self._info_read, 4096)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            info.extend(data)
            if (not data or len(info) > MAX_INFO_BYTES) and not done.done():
                done.set_result(None)

        loop.add_reader(self._info_read, readable)
        try:
            await done
        finally:
            loop.remove_reader(self._info_read)
        return bytes(info)

    async def aclose(self) -> None:
        """End pasta (the server has ended, or is being ended) and close every fd."""
        await self._pasta.aclose()
        self._close("_info_read", "_info_write", "_block_read", "_block_write")

    def _close(self, *names: str) -> None:
        for name in names:
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)
