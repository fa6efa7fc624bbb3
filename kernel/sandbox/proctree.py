"""The process tree under one process, read from /proc (Linux).

A process is named by (pid, start time), so a pid reused by an unrelated process after ours
died is never signalled.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

PROC = "/proc"


@dataclass(frozen=True)
class ProcId:
    pid: int
    start: int
    """Start time in clock ticks since boot (field 22 of /proc/<pid>/stat)."""


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a live process, or None (gone, or a zombie)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    state = fields[0].decode()
    if state in ("Z", "X"):
        return None
    return int(fields[1]), state, int(fields[19])


def proc_id(pid: int) -> ProcId | None:
    """The live process `pid` as a ProcId (None when gone)."""
    info = _stat(pid)
    return None if info is None else ProcId(pid, info[2])


def descendants(root: int) -> list[ProcId]:
    """Every live process below `root` (not `root` itself), parents before children."""
    children: dict[int, list[ProcId]] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        info = _stat(int(name))
        if info is not None:
            children.setdefault(info[0], []).append(ProcId(int(name), info[2]))
    out: list[ProcId] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(0), ()):
            out.append(child)
            queue.append(child.pid)
    return out


def child_processes(pid: int) -> list[ProcId]:
    """The live children of `pid`: the kernel's list of its main thread's children where
    it keeps one (one read), else those `descendants` finds directly below it."""
    try:
        with open(f"{PROC}/{pid}/task/{pid}/children", "rb") as listing:
            pids = [int(word) for word in listing.read().split()]
    except OSError:
        return [p for p in descendants(pid) if (_stat(p.pid) or (0,))[0] == pid]
    found = ((child, _stat(child)) for child in pids)
    return [ProcId(child, info[2]) for child, info in found if info is not None]


def alive(proc: ProcId) -> bool:
    info = _stat(proc.pid)
    return info is not None and info[2] == proc.start


def signal_all(procs: list[ProcId], sig: int) -> None:
    """Send `sig` to each process that is still the same process."""
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, sig)
