"""One run per session across processes: an advisory lock file held while a run is active.

`reins exec --session ID` and the desktop kernel may open the same database; the lock
(`flock` on `<data>/sessions/<id>/run.lock`) keeps them from running the same session at
once. The operating system drops the lock when the process dies, so a run interrupted by
a crash or `kill -9` can be resumed at once. Where `fcntl` does not exist (Windows) the
lock is not taken and only the in-process check applies.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernel.paths import AppPaths

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class SessionLocked(RuntimeError):
    """Another process is running this session."""


class RunLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionLocked(
                "this session is running in another Reins process (the app or another "
                "`reins exec`); wait for it to finish or stop it there") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def session_lock(paths: AppPaths, session_id: str) -> RunLock:
    """The lock a run of this session holds (the one place that says where it is)."""
    return RunLock(paths.session_dir(session_id) / "run.lock")
