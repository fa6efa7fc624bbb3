"""Process hardening of the kernel itself."""

from __future__ import annotations

import ctypes
import sys

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def _prctl(option: int, arg: int = 0) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, arg, 0, 0, 0))


def make_non_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): other processes of the same user can no longer read this
    process's memory, environment or command line through /proc or ptrace, and it leaves
    no core dump. Children get their own dumpable flag back at exec. Linux only; returns
    whether it was applied."""
    if sys.platform != "linux":
        return False
    return _prctl(PR_SET_DUMPABLE, 0) == 0


def is_dumpable() -> bool | None:
    """The current flag (None where it cannot be read)."""
    if sys.platform != "linux":
        return None
    return _prctl(PR_GET_DUMPABLE) == 1
