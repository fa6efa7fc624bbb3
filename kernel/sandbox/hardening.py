"""Process hardening of the kernel itself and of the processes it forks (kernel.sandbox.zygote).

prctl(2) is resolved once, at import: a process forked from the kernel calls it without
loading anything.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15

_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def _prctl(option: int, arg: int | bytes = 0) -> int:
    if _PRCTL is None:
        return -1
    value = arg if isinstance(arg, bytes) else ctypes.c_ulong(arg)  # no upper half undefined
    return int(_PRCTL(option, value, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)))


def make_non_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): other processes of the same user can no longer read this
    process's memory, environment or command line through /proc or ptrace, and it leaves
    no core dump. Children get their own dumpable flag back at exec. Linux only; returns
    whether it was applied."""
    return _prctl(PR_SET_DUMPABLE, 0) == 0


def is_dumpable() -> bool | None:
    """The current flag (None where it cannot be read)."""
    if _PRCTL is None:
        return None
    return _prctl(PR_GET_DUMPABLE) == 1


def die_with_parent(parent: int) -> bool:
    """Be killed (SIGKILL) when the thread that forked this process ends (PR_SET_PDEATHSIG);
    False when `parent`, the process that forked it, has ended already (the caller then
    ends). True off Linux, where nothing is set."""
    if _PRCTL is None:
        return True
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return os.getppid() == parent


def name_process(name: bytes) -> None:
    """This process's name as `ps -o comm` and top show it (15 bytes at most); its command
    line stays the one it was forked with."""
    _prctl(PR_SET_NAME, name)
