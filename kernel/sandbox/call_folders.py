"""The call folders of transactions (`<data>/transactions/<id>`): made, held and removed.

A call folder holds a command's overlay (`upper/`, `work/`) and its ticket (`call.json`:
the session, the call, the workspace). While a kernel uses one it holds an exclusive flock
on it, which ends with the process however it ends: a folder nobody holds is an orphan
(kernel.transaction.orphans decides what becomes of it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from kernel.paths import AppPaths

TICKET = "call.json"
_HELD: dict[Path, int] = {}
"""Each call folder this process uses → the descriptor whose flock holds it."""


def new_transaction(paths: AppPaths, workspace: Path) -> Path:
    """A new call folder under `<data>/transactions` (its owner's only, held by this process),
    with an empty `upper/` of the workspace's mode (the overlay's top folder takes the
    upper's) and `work/`."""
    root = paths.data / "transactions"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(tempfile.mkdtemp(dir=root))
    _hold(folder)
    (folder / "work").mkdir(mode=0o700)
    (folder / "upper").mkdir(mode=0o700)
    os.chmod(folder / "upper", stat.S_IMODE(os.stat(workspace).st_mode))
    return folder


def write_ticket(folder: Path, session_id: str, call_id: str, workspace: Path) -> None:
    """Say whose call the folder's command is, before it starts (read by `recover_orphans`
    if this kernel dies before the call settles)."""
    data = json.dumps({"session_id": session_id, "call_id": call_id,
                       "workspace": str(workspace)})
    fd = os.open(folder / TICKET, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                 | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(data)


def remove_transaction(folder: Path) -> None:
    """Remove a call folder and let go of it."""
    remove_tree(folder)
    fd = _HELD.pop(folder, None)
    if fd is not None:
        os.close(fd)


def _hold(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD[folder] = fd


def remove_tree(folder: Path) -> None:
    """Remove a folder tree. The overlay leaves folders of mode 0 in `work/`, three deep
    with `volatile` (`work/work/incompat/volatile/`), and a command may leave some in
    `upper/`: a folder that cannot be entered is made enterable first, with every folder
    below it (a user without CAP_DAC_OVERRIDE could not enter the deeper ones)."""
    def enterable(_function: object, path: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                _enterable_below(path)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    shutil.rmtree(folder, onerror=enterable)


def _enterable_below(top: str) -> None:
    """Mode 0700 on `top` and every folder below it, each before it is walked into; a link
    is never followed (os.walk does not enter one, and none is changed)."""
    os.chmod(top, 0o700)
    for parent, folders, _files in os.walk(top):
        for name in folders:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)


def held_here(folder: Path) -> bool:
    """Whether this process holds `folder` (a call of its own still running)."""
    return folder in _HELD
