"""Reading a pipe to its end on the event loop, without blocking it."""

from __future__ import annotations

import os


async def read_all(fd: int, limit: int) -> bytes:
    """What `fd` gives until its end of file (a read error counts as one), or until more
    than `limit` bytes came. `fd` is made non-blocking; the caller bounds the wait."""
    import asyncio  # the loop's caller has it loaded; `reins doctor` loads this module, not it

    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    got = bytearray()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        got.extend(data)
        if (not data or len(got) > limit) and not done.done():
            done.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)
    return bytes(got)
