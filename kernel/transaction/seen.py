"""What reading a change set read of each file, so applying it need not read it again.

`read_upper` reads a changed file whole on both sides (for its line counts); it notes each
side's identity (device, inode, size, times, mode) and sha256, and the workspace side's
bytes when they are small. `apply` takes a note instead of reading the file again (to keep
the workspace's old bytes, to record what the upper file becomes) only while the file's
identity is the same: any write changes its ctime, so a file changed since is read again.
Apply reads and hashes each file once instead of twice: about a third of its time.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from kernel.transaction.fsat import State

Side = Literal["upper", "lower"]


Identity = tuple[int, int, int, int, int, int]
"""What tells a file's bytes unchanged without reading them (a write changes ctime): its
device, inode, size, mtime, ctime and mode."""


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


class Read(NamedTuple):
    """One side of a file as it was read: its identity then, its state, and its bytes when
    they are at most `SeenFiles.data_up_to` (None otherwise). A tuple: one is made per changed
    file on each side, and a frozen dataclass costs several times as much to make."""

    identity: Identity
    state: State
    data: bytes | None


@dataclass
class SeenFiles:
    """The notes of one `read_upper`, by side and workspace-relative path."""

    data_up_to: int = 0
    """The workspace side's bytes are noted up to this size (0: none)."""
    max_data: int = 0
    """At most this many bytes are noted in all."""
    upper: dict[str, Read] = field(default_factory=dict)
    lower: dict[str, Read] = field(default_factory=dict)
    _held: int = 0

    def note(self, side: Side, path: str, st: os.stat_result, data: bytes) -> None:
        """`data` is the whole of the file `path` whose `st` was taken before reading it."""
        if not stat.S_ISREG(st.st_mode) or len(data) != st.st_size:
            return
        state = State("file", stat.S_IMODE(st.st_mode), hashlib.sha256(data).hexdigest())
        keep = (side == "lower" and len(data) <= self.data_up_to
                and self._held + len(data) <= self.max_data)
        if keep:
            self._held += len(data)
        (self.upper if side == "upper" else self.lower)[path] = Read(
            identity(st), state, data if keep else None)

    def known(self, side: Side, path: str, st: os.stat_result) -> Read | None:
        """The note of `path` when the file is still what was read (`st` taken now)."""
        read = (self.upper if side == "upper" else self.lower).get(path)
        return read if read is not None and read.identity == identity(st) else None
