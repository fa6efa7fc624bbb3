"""Apply chosen changes of an overlay upper layer to the real workspace, all or nothing.

First every target is checked (`conflicts`): what is at the path now must be what the
command saw (a file for a modification, nothing for a creation, the same type for a
deletion), not changed after the command started (`since_ns`, against its ctime and mtime),
and every folder on the way a real folder (or one this apply makes). Any conflict: nothing
is applied. Then each touched path is kept by the recorder, the step is written with what
each path is to become (`Recorder.pending`: a crash from here on is rolled back at the next
start), and the changes are made: removals deepest first, then folders, files and links
shallowest first, then folder modes deepest first. A file of the upper layer is moved into
place (renameat2: swapped with the workspace's file, whose old inode is left in the upper
layer, or moved in where there was none), without its extended attributes; where it cannot
be moved (another file system, a hard link) it is copied under a temporary name and
renamed over. Every step goes through folder descriptors that never follow a link, on the
upper side as on the workspace side (kernel.transaction.fsat), so neither a link a command
made nor one the workspace had takes a write outside. A failure midway puts back
everything kept (`Recorder.rollback`). A file moved in is gone from the upper layer; after
the `last` apply the upper layer is kept as the step's stash, from which an undo moves
the old files back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.transaction.blobs import syncfs
from kernel.transaction.changeset import Change, ChangeSet, EntryType, parent_paths
from kernel.transaction.fsat import (
    ABSENT,
    DIR_FLAGS,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    Displaced,
    Folders,
    State,
    chmod_at,
    entry_type,
    open_dir,
    open_file,
    parent_of,
    read_link,
    remove_at,
    rename2,
    split,
    strip_xattrs,
    write_file_at,
    write_link_at,
)
from kernel.transaction.seen import SeenFiles

if TYPE_CHECKING:
    from kernel.transaction.checkpoints import Recorder, Step


class ApplyError(OSError):
    """The changes could not be applied; what was applied was put back."""


@dataclass(frozen=True)
class Conflict:
    """A target the user (or something else) changed while the command ran."""

    path: str
    reason: str


@dataclass(frozen=True)
class Applied:
    """What `apply` did: the changes applied and their step, or the conflicts (then
    nothing was applied)."""

    changes: ChangeSet
    conflicts: tuple[Conflict, ...] = ()
    step: Step | None = None

    @property
    def ok(self) -> bool:
        return not self.conflicts


_MAKES_FOLDER = frozenset({"created", "replaced"})
ORIGIN_XATTRS = ("user.overlay.origin", "trusted.overlay.origin")
"""Set by the overlay on what it copies up from the lower layer."""
CLOCK_REALTIME_COARSE = 5
"""Linux's clock id (the time module does not name it)."""


def start_stamp() -> int:
    """The `since_ns` to take when a command starts: the clock file times are stamped
    from (CLOCK_REALTIME_COARSE), so a change after it is never stamped before it. A
    target stamped in the same tick counts as changed meanwhile (asking once too often is
    safe; missing a change is not)."""
    return time.clock_gettime_ns(CLOCK_REALTIME_COARSE)


def apply(upper: Path, workspace: Path, changes: Sequence[Change], *, since_ns: int,
          recorder: Recorder, durable: bool = True, last: bool = False,
          seen: SeenFiles | None = None) -> Applied:
    """Apply exactly `changes` (a subset of `read_upper(upper, workspace)`: see
    kernel.transaction.changeset.split_held) from `upper` to `workspace`, and commit them
    to `recorder` as one step (no changes: no step). `durable`: the kept bytes are on disk
    before the workspace is touched, and the applied bytes before the step is recorded.
    `last`: nothing more is applied from `upper`, which becomes the step's stash. `seen`:
    what read_upper read of the files (kernel.transaction.seen), not read again."""
    chosen = ChangeSet(tuple(changes))
    if not chosen:
        return Applied(chosen)
    with _opened(upper) as upper_fd, _opened(workspace) as ws_fd:
        looked: dict[str, os.stat_result | OSError | None] = {}
        found = conflicts(ws_fd, chosen, since_ns, upper_fd, looked)
        if found:
            return Applied(ChangeSet(), found)
        unusable = [c.path for c in chosen if c.entry == "other" and c.kind != "deleted"]
        if unusable:
            raise ApplyError(0, f"a socket, FIFO or device cannot be applied: {unusable}")
        touched = sorted({c.path for c in chosen} | {c.previous for c in chosen if c.previous})
        try:
            recorder.keep_all(touched, durable=durable, seen=seen, looked=looked)
            sources: dict[str, os.stat_result] = {}
            recorder.pending(_intended(upper_fd, chosen, recorder.kept, seen, sources))
            _make(upper_fd, ws_fd, chosen, recorder.owner.trash.take, sources)
            if durable:
                syncfs(ws_fd)
        except BaseException as exc:
            recorder.rollback()
            if isinstance(exc, OSError):
                raise ApplyError(exc.errno, f"the changes could not be applied ({exc}); "
                                 f"nothing was changed") from exc
            raise
        recorder.owner.trash.empty_later()
        if last:
            recorder.stash(upper)
        return Applied(chosen, step=recorder.commit(chosen))


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[int]:
    fd = os.open(folder, DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def _describe(st: os.stat_result | None) -> str:
    if st is None:
        return "nothing"
    return {"file": "a file", "dir": "a folder", "link": "a link",
            "other": "a special file"}[entry_type(st.st_mode)]


def conflicts(ws_fd: int, chosen: ChangeSet, since_ns: int, upper_fd: int,
              looked: dict[str, os.stat_result | OSError | None] | None = None
              ) -> tuple[Conflict, ...]:
    """Every target of `chosen` that is not as the command saw it (see the module's text).
    A new path whose upper entry the overlay copied up (it carries an `origin` mark: it was
    in the workspace, here or under another name) in a folder changed meanwhile is taken
    for a file removed meanwhile (a hard link or a moved file in a folder the user
    changed is asked about too: asking once too often is safe). `looked` gets what each
    path it looked at was (its lstat; None: nothing; an OSError: unreachable)."""
    with Folders(ws_fd) as folders:
        return _conflicts(folders, chosen, since_ns, upper_fd,
                          looked if looked is not None else {})


def _conflicts(folders: Folders, chosen: ChangeSet, since_ns: int, upper_fd: int,
               seen: dict[str, os.stat_result | OSError | None]) -> tuple[Conflict, ...]:
    ws_fd = folders.root_fd
    by_path = {c.path: c for c in chosen}
    found: list[Conflict] = []

    def look(path: str) -> os.stat_result | OSError | None:
        if path not in seen:
            head, name = split(path)
            try:
                seen[path] = os.stat(name, dir_fd=folders.open(head), follow_symlinks=False)
            except FileNotFoundError:
                seen[path] = None
            except OSError as exc:
                seen[path] = exc
        return seen[path]

    def folders_ok(path: str, removing: bool) -> tuple[str, bool]:
        """(why the folders on the way to `path` are not usable, whether one of them is
        made by this apply); a path being removed is below the workspace's folders."""
        for parent in parent_paths(path):
            change = by_path.get(parent)
            if not removing and change is not None and change.kind in _MAKES_FOLDER:
                if change.entry != "dir":
                    return f"{parent} is made a {change.entry}, so nothing can be below it", True
                return "", True
            st = look(parent)
            if isinstance(st, OSError):
                return f"a folder on the way to it cannot be reached ({st.strerror})", False
            if st is None or not stat.S_ISDIR(st.st_mode):
                return f"{parent} is {_describe(st)} in the workspace, not a folder", False
        return "", False

    def folder_of(path: str) -> os.stat_result | OSError | None:
        head = path.rpartition("/")[0]
        return look(head) if head else os.fstat(ws_fd)

    removed = {c.path for c in chosen if c.kind in ("deleted", "replaced")} | {
        c.previous for c in chosen if c.previous}
    for change in chosen:
        targets = [(change.path, _expected(change), change.kind == "deleted")]
        if change.previous:
            targets.append((change.previous, ("file",), True))
        for path, expected, removing in targets:
            reason, made = folders_ok(path, removing)
            st = None if made else look(path)
            if not reason and not made and isinstance(st, os.stat_result) and stat.S_ISDIR(
                    st.st_mode) and change.kind in ("deleted", "replaced"):
                reason = _judge(st, expected, None) or _kept_inside(ws_fd, path, removed)
            elif not reason and not made:
                reason = _judge(st, expected, since_ns)
            if not reason and not made and not removing and look(path) is None and (
                    _copied_up(upper_fd, path) and _changed(folder_of(path), since_ns)):
                reason = "it was removed after the command started"
            if reason:
                found.append(Conflict(path, reason))
    return tuple(found)


def _copied_up(upper_fd: int, path: str) -> bool:
    try:
        with parent_of(upper_fd, path) as (fd, name):
            entry = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return False
    try:
        return any(_has_xattr(entry, name) for name in ORIGIN_XATTRS)
    finally:
        os.close(entry)


def _has_xattr(fd: int, name: str) -> bool:
    try:
        os.getxattr(f"/proc/self/fd/{fd}", name)
    except OSError:
        return False
    return True


def _expected(change: Change) -> tuple[EntryType | None, ...]:
    """What the workspace must have at the change's path (None: nothing)."""
    if change.kind in ("created", "renamed"):
        return (None,)
    if change.kind in ("modified", "mode", "deleted"):
        return (change.entry,)
    if change.kind == "link":
        return (None, "link")
    return ("file", "dir", "link", "other")


def _changed(st: os.stat_result | OSError | None, since_ns: int) -> bool:
    return isinstance(st, os.stat_result) and max(st.st_ctime_ns, st.st_mtime_ns) >= since_ns


def _kept_inside(ws_fd: int, path: str, removed: set[str]) -> str:
    """Why the folder `path` cannot be removed: an entry in it that is not removed too (a
    folder's own times change with its entries, so they are not what is judged: an
    earlier apply of the same command's other changes must not count)."""
    fd = open_dir(ws_fd, path)
    try:
        names = sorted(os.listdir(fd))
    finally:
        os.close(fd)
    for name in names:
        if f"{path}/{name}" not in removed:
            return f"it holds {name!r}, which the command did not remove"
    return ""


def _judge(st: os.stat_result | OSError | None, expected: tuple[EntryType | None, ...],
           since_ns: int | None) -> str:
    if isinstance(st, OSError):
        return f"it cannot be reached ({st.strerror})"
    kind = None if st is None else entry_type(st.st_mode)
    if kind not in expected:
        return (f"it is {_describe(st) if isinstance(st, os.stat_result) else 'nothing'} "
                f"now, not what the command saw")
    if since_ns is not None and _changed(st, since_ns):
        return "it was changed after the command started"
    return ""


def _intended(upper_fd: int, chosen: ChangeSet, kept: dict[str, State], seen: SeenFiles | None,
              sources: dict[str, os.stat_result]) -> dict[str, State]:
    """What each kept path is to become: absent where removed, else what the upper layer
    holds there (the bytes of a file moved in are those bytes; a file `seen` read and
    still the same is not read again, and its lstat goes to `sources` for `_make`)."""
    gone = {c.path for c in chosen if c.kind == "deleted"} | {
        c.previous for c in chosen if c.previous}

    def state(folders: Folders, path: str) -> State:
        if seen is not None and path in seen.upper:
            st = folders.lstat(path)
            read = seen.known("upper", path, st) if st is not None else None
            if st is not None and read is not None:
                sources[path] = st
                return read.state
        return folders.state(path)

    with Folders(upper_fd) as folders:
        return {path: ABSENT if path in gone else state(folders, path) for path in kept}


def _make(upper_fd: int, ws_fd: int, chosen: ChangeSet, displaced: Displaced,
          sources: Mapping[str, os.stat_result]) -> None:
    """The changes, in the order that keeps every step possible (see the module's text);
    removed files go to `displaced`. `sources`: the upper entries' lstats `_intended`
    took (the upper layer is Reins' own folder, which nothing else writes meanwhile)."""
    removals = [c.previous for c in chosen if c.previous]
    removals += [c.path for c in chosen if c.kind in ("deleted", "replaced")]
    for path in sorted(set(removals), reverse=True):
        with parent_of(ws_fd, path) as (fd, name):
            remove_at(fd, name, displaced)
    modes: dict[str, int] = {}
    with Folders(upper_fd) as uppers, Folders(ws_fd) as folders:  # opened after the removals
        for change in chosen:
            if change.kind == "deleted":
                continue
            head, name = split(change.path)
            up = uppers.open(head)
            source = sources.get(change.path) or os.stat(name, dir_fd=up,
                                                         follow_symlinks=False)
            if entry_type(source.st_mode) != change.entry:
                raise ApplyError(0, f"{change.path} is not a {change.entry} in the upper layer")
            _put(up, folders.open(head), name, change, source, modes)
    for path in sorted(modes, reverse=True):
        with parent_of(ws_fd, path) as (fd, name):
            chmod_at(fd, name, modes[path])


def _put(up: int, fd: int, name: str, change: Change, source: os.stat_result,
         modes: dict[str, int]) -> None:
    mode = stat.S_IMODE(source.st_mode)
    if change.entry == "dir":
        if change.kind in _MAKES_FOLDER:
            os.mkdir(name, 0o700, dir_fd=fd)
        modes[change.path] = mode
    elif change.entry == "link":
        write_link_at(fd, name, read_link(up, name))
    elif change.kind == "mode":
        chmod_at(fd, name, mode)
    elif not _moved(up, fd, name, change, source):
        src = open_file(up, name)
        try:
            write_file_at(fd, name, src, mode)
        finally:
            os.close(src)


def _moved(up: int, fd: int, name: str, change: Change, source: os.stat_result) -> bool:
    """Move the upper layer's file into the workspace (see the module's text); False when
    it must be copied instead."""
    if source.st_nlink != 1:
        return False
    try:
        strip_xattrs(up, name)
        rename2(up, name, fd, name, RENAME_EXCHANGE if change.kind == "modified"
                else RENAME_NOREPLACE)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EACCES, errno.EPERM,
                         errno.ENOTSUP, errno.ENODATA):
            return False
        raise
    return True

