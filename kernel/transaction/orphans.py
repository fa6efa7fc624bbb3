"""The call folders a dead kernel left under `<data>/transactions/` (made and held by
kernel.sandbox.call_folders), found at the next start.

A call folder holds a command's overlay (`upper/`, `work/`). While a kernel uses one, it
holds an exclusive flock on the folder (`new_transaction` takes it, `remove_transaction`
drops it). The lock ends with its process, however the process ends. So a folder nobody
holds is an orphan: its kernel died (kill -9, a crash, a power cut) before the call
settled. Before the command starts, the kernel writes the call's ticket (`call.json`:
the session, the call, the workspace), which says whose changes the orphan holds.

The rule at the next kernel start (`recover_orphans`): nothing of an orphan is ever
applied.
- An orphan whose upper layer holds changes is moved, with its ticket and a list of the
  changes (`changes.txt`), to `<data>/recovered/<session>/<call>-<id>/`. Its session gets
  a `notice` event saying so, and the user copies back what they want.
- An orphan with no changes is removed: a sandbox made ahead and never used, or a command
  that wrote nothing.
- Recovered folders are removed at a start RECOVERED_DAYS days later.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernel.events import Notice
from kernel.paths import AppPaths
from kernel.sandbox.call_folders import TICKET, held_here, remove_tree
from kernel.transaction.upper import UpperError, read_upper

log = logging.getLogger(__name__)

RECOVERED_DAYS = 30
NOTICE_CODE = "transaction_recovered"
@dataclass(frozen=True)
class Recovered:
    """One orphan found at a kernel's start, and what became of it."""

    folder: str
    session_id: str
    call_id: str
    changes: int
    kept_at: str
    """Where its changes are kept ('' when it had none and was removed)."""


Append = Callable[[Notice], object]
"""Commit an event to its session's history (SessionStore.append_event)."""


def recover_orphans(paths: AppPaths, append: Append, *, now: float | None = None
                    ) -> list[Recovered]:
    """Apply the module's rule to every folder under `<data>/transactions` that no living
    kernel holds, and drop recovered folders older than RECOVERED_DAYS. Never raises for
    one folder: what cannot be handled is logged and left for the next start."""
    found: list[Recovered] = []
    root = paths.data / "transactions"
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(root.iterdir()):
            try:
                outcome = _recover(paths, entry, append)
            except OSError as exc:
                log.warning("a transaction folder left by a dead kernel could not be "
                            "handled: %s: %s", entry, exc)
                continue
            if outcome is not None:
                found.append(outcome)
    _expire(paths.data / "recovered", time.time() if now is None else now)
    return found


def _recover(paths: AppPaths, folder: Path, append: Append) -> Recovered | None:
    if folder.is_symlink() or not folder.is_dir() or held_here(folder):
        return None
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # a living kernel's
        ticket = _ticket(folder / TICKET)
        listing = _changes(folder / "upper", ticket.get("workspace", ""))
        if not listing:
            remove_tree(folder)
            return Recovered(str(folder), ticket.get("session_id", ""),
                             ticket.get("call_id", ""), 0, "")
        session, call = ticket.get("session_id", ""), ticket.get("call_id", "")
        dest = _recovered_folder(paths, session, call, folder.name)
        os.rename(folder / "upper", dest / "upper")
        (dest / "changes.txt").write_text("\n".join(listing) + "\n")
        (dest / TICKET).write_text(json.dumps(ticket))
        remove_tree(folder)
    finally:
        os.close(fd)
    recovered = Recovered(str(folder), session, call, len(listing), str(dest))
    if session:
        _tell(append, recovered)
    return recovered


def _tell(append: Append, recovered: Recovered) -> None:
    try:
        append(Notice(recovered.session_id, code=NOTICE_CODE, call_id=recovered.call_id,
                      path=recovered.kept_at, message=notice_text(recovered)))
    except Exception as exc:  # a session deleted meanwhile, a store that refuses
        log.warning("the notice of a recovered transaction was not stored: %s", exc)


def notice_text(recovered: Recovered) -> str:
    """What the session's notice says."""
    return (f"Reins stopped while the command of call {recovered.call_id} ran, before what "
            f"it changed was judged. None of its {recovered.changes} changes was applied to "
            f"the workspace. They are kept in {recovered.kept_at} (upper/ holds the files, "
            f"changes.txt lists them) for {RECOVERED_DAYS} days; copy back what you want.")


def _ticket(path: Path) -> dict[str, str]:
    """The folder's ticket; {} when it has none or it is unreadable (the command never
    started, or the kernel died while writing it)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _changes(upper: Path, workspace: str) -> list[str]:
    """Each change of the upper layer as `kind path` (against the workspace, when the ticket
    names one that still exists), else each entry it holds."""
    if workspace and os.path.isdir(workspace):
        try:
            return [f"{c.kind} {c.path}" for c in read_upper(upper, Path(workspace)).changes]
        except (UpperError, OSError):
            pass
    return [f"entry {p.relative_to(upper)}" for p in sorted(upper.rglob("*"))] \
        if upper.is_dir() else []


def _recovered_folder(paths: AppPaths, session: str, call: str, name: str) -> Path:
    base = paths.data / "recovered" / _safe(session or "no-session")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    dest = base / f"{_safe(call or 'no-call')}-{_safe(name)}"
    dest.mkdir(mode=0o700)
    return dest


def _safe(name: str) -> str:
    """A name from a ticket as one harmless path component."""
    kept = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80]
    return kept.strip(".") or "_"


def _expire(root: Path, now: float) -> None:
    cutoff = now - RECOVERED_DAYS * 86_400
    with contextlib.suppress(FileNotFoundError):
        for session in root.iterdir():
            for kept in session.iterdir():
                with contextlib.suppress(OSError):
                    if kept.lstat().st_mtime < cutoff:
                        remove_tree(kept)
            with contextlib.suppress(OSError):
                session.rmdir()  # only when empty
