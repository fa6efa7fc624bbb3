"""Linux inotify through ctypes: watches on folders, read without blocking.

The standard library has no inotify, and the packages that wrap it either run threads of
their own or follow whole trees with policies of their own; the workspace index
(kernel.sandbox.workspace_index) needs only four calls, read when it asks, so they are here.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import select
import struct
from dataclasses import dataclass

IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

FOLDER_CHANGES = (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF
                  | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
"""What makes a watched folder worth reading again: an entry made, removed or renamed, and
the folder itself gone. Writes into files are not followed: what must not be written is
bound read-only in the sandbox, and a flood of writes would only fill the queue."""
_HEADER = struct.Struct("iIII")


class InotifyError(OSError):
    """inotify is unavailable, or a watch could not be added (e.g. the watch limit)."""


@dataclass(frozen=True)
class InotifyEvent:
    wd: int
    mask: int
    name: str


@functools.cache
def _libc() -> ctypes.CDLL:
    """This process's libc, as kernel.sandbox.hardening opens it (ctypes.util.find_library
    would run ldconfig for every instance)."""
    return ctypes.CDLL(None, use_errno=True)


class Inotify:
    """One inotify instance (non-blocking, close-on-exec)."""

    def __init__(self) -> None:
        self._lib = _libc()
        fd = self._lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise InotifyError(code, f"inotify_init1: {os.strerror(code)}")
        self.fd: int = fd

    def add_watch(self, path: str, mask: int = FOLDER_CHANGES) -> int:
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), ctypes.c_uint32(mask))
        if wd < 0:
            code = ctypes.get_errno()
            raise InotifyError(code, f"inotify_add_watch {path}: {os.strerror(code)}")
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        """Stop following `wd` (a watch already gone with its folder is no error)."""
        self._lib.inotify_rm_watch(self.fd, ctypes.c_int(wd))

    def pending(self) -> bool:
        """Events are queued (a poll that does not wait)."""
        return bool(select.select([self.fd], [], [], 0)[0])

    def read(self) -> list[InotifyEvent]:
        """Every event queued now (an empty list when there is none)."""
        events: list[InotifyEvent] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                raw = data[offset:offset + size].split(b"\0", 1)[0]
                offset += size
                events.append(InotifyEvent(wd, mask, os.fsdecode(raw)))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
