"""The process limit where RLIMIT_NPROC does not hold: a pids cgroup per command.

RLIMIT_NPROC counts the processes of one user, and Linux never enforces it for the user
whose kernel uid is 0 (nor inside a user namespace that maps to it): run as root, a fork
storm in a sandbox would only be stopped by the machine. So when the kernel's real uid is 0
in the initial user namespace, each command's sandbox is moved into a cgroup of its own,
`<pids hierarchy>/reins/<kernel pid>-<n>`, with `pids.max` set to the process limit, during
bubblewrap's start handshake, before the command starts (kernel.sandbox.handshake). Every
process the command starts stays in that cgroup; it is removed once they are all gone.

Which mechanism holds here is `process_limit()`: "rlimit" (an ordinary user), "cgroup"
(root, with a writable pids controller, cgroup v1 or v2), or "none" (root without one: the
limit is then not enforced, and `reins doctor` says so).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ProcessLimit = Literal["rlimit", "cgroup", "none"]
MOUNTINFO = "/proc/self/mountinfo"
UID_MAP = "/proc/self/uid_map"
GROUP = "reins"
_counter = itertools.count()


class CgroupError(Exception):
    """A command's cgroup could not be made or joined (the command must not start)."""


def kernel_uid(uid: int | None = None, uid_map: str = UID_MAP) -> int | None:
    """The uid that `uid` (default: the real uid) maps to outside this user namespace."""
    uid = os.getuid() if uid is None else uid
    try:
        lines = Path(uid_map).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            continue
        inside, outside, count = map(int, fields)
        if inside <= uid < inside + count:
            return outside + (uid - inside)
    return None


@functools.cache
def rlimit_holds() -> bool:
    """RLIMIT_NPROC is enforced for this process's real user (its kernel uid is not 0)."""
    return kernel_uid() not in (0, None)


@dataclass(frozen=True)
class Hierarchy:
    """Where the pids controller is mounted, and Reins' folder in it."""

    mount: Path
    version: Literal[1, 2]

    @property
    def root(self) -> Path:
        return self.mount / GROUP


def _pids_mounts(mountinfo: str) -> list[Hierarchy]:
    found: list[Hierarchy] = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        mount, fstype, options = Path(fields[4]), rest[0], rest[2].split(",")
        if fstype == "cgroup" and "pids" in options:
            found.append(Hierarchy(mount, 1))
        elif fstype == "cgroup2" and "pids" in _read(mount / "cgroup.controllers").split():
            found.append(Hierarchy(mount, 2))
    return sorted(found, key=lambda h: h.version)  # a v1 pids mount is where pids is bound


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _enable(hierarchy: Hierarchy) -> None:
    """Make Reins' folder in the hierarchy (cgroup v2: with pids handed down to it)."""
    if hierarchy.version == 2:
        control = hierarchy.mount / "cgroup.subtree_control"
        if "pids" not in _read(control).split():
            control.write_text("+pids")
    with contextlib.suppress(FileExistsError):
        hierarchy.root.mkdir()
    if hierarchy.version == 2:
        control = hierarchy.root / "cgroup.subtree_control"
        if "pids" not in _read(control).split():
            control.write_text("+pids")


@functools.cache
def usable_hierarchy() -> Hierarchy | None:
    """The pids hierarchy Reins can make cgroups in (None when there is none, or no right)."""
    for hierarchy in _pids_mounts(_read(Path(MOUNTINFO))):
        try:
            _enable(hierarchy)
            probe = CommandCgroup.make(hierarchy, 1)
        except (OSError, CgroupError):
            continue
        if not probe.remove():
            continue
        _remove_stale(hierarchy)
        return hierarchy
    return None


def _remove_stale(hierarchy: Hierarchy) -> None:
    """Remove the empty cgroups left by Reins kernels that are gone."""
    try:
        entries = list(hierarchy.root.iterdir())
    except OSError:
        return
    for entry in entries:
        owner = entry.name.partition("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                entry.rmdir()


def process_limit() -> ProcessLimit:
    """Which mechanism enforces the process limit of commands started from here."""
    if rlimit_holds():
        return "rlimit"
    return "cgroup" if usable_hierarchy() is not None else "none"


@dataclass
class CommandCgroup:
    """The cgroup of one command."""

    path: Path

    @classmethod
    def make(cls, hierarchy: Hierarchy, processes: int) -> CommandCgroup:
        path = hierarchy.root / f"{os.getpid()}-{next(_counter)}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(processes))
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise CgroupError(f"the process limit's cgroup could not be made ({exc})") from exc
        return cls(path)

    def join(self, pid: int) -> None:
        """Move `pid` into this cgroup (its later children are born in it)."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise CgroupError(f"the sandbox could not join its cgroup ({exc})") from exc

    def pids(self) -> list[int]:
        """The processes still in the cgroup."""
        return [int(pid) for pid in _read(self.path / "cgroup.procs").split() if pid.isdigit()]

    def remove(self) -> bool:
        """Kill what is left in the cgroup and remove it; False while it is still busy
        (a process not yet reaped), in which case the caller tries again."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            self.path.rmdir()
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                return False
            if exc.errno != errno.ENOENT:
                raise CgroupError(f"the command's cgroup could not be removed ({exc})") from exc
        return True


def remove_when_empty(cgroup: CommandCgroup, timeout_s: float = 5.0) -> bool:
    """Blocking: `remove`, retried until the last process is reaped (bounded)."""
    deadline = time.monotonic() + timeout_s
    while not cgroup.remove():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def confine(pid: int, processes: int) -> CommandCgroup | None:
    """Put `pid` into a new cgroup of `processes` when the rlimit cannot hold (else None).

    Raises CgroupError when the cgroup is needed and available but cannot be made or joined.
    """
    if rlimit_holds():
        return None
    hierarchy = usable_hierarchy()
    if hierarchy is None:
        return None
    cgroup = CommandCgroup.make(hierarchy, processes)
    try:
        cgroup.join(pid)
    except CgroupError:
        cgroup.remove()
        raise
    return cgroup
