"""The change set of an overlay upper layer against its lower layer (the real workspace).

The upper follows the overlay format of a mount in a user namespace (`userxattr`): a
deleted entry is a character device 0/0 (a whiteout; on kernels with "xwhiteouts", an
empty file with `user.overlay.whiteout` in a folder marked opaque `x`); a folder that
replaced the lower one is marked opaque (`user.overlay.opaque` or
`trusted.overlay.opaque` = `y`). With metacopy and redirect_dir off, a chmod or a rename
copies the whole file up and a renamed folder is a new folder beside a whiteout.

What is reported is the net change against the workspace: a file copied up with the same
bytes and mode is no change; the same bytes with other permission bits is `mode`; a
deletion paired with a creation of identical (non-empty) bytes is `renamed`. Both trees are
walked through folder descriptors, never following a link (kernel.transaction.fsat), and
files are compared and hashed a chunk at a time. Added/removed line counts are for display:
the lines of one side not matched by an equal line of the other (as a multiset), for text
files up to `COUNT_LINES_UP_TO` bytes. What was read of each such file is noted
(kernel.transaction.seen), so applying the change set need not read it again.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kernel.transaction.changeset import Change, ChangeKind, ChangeSet, EntryType
from kernel.transaction.fsat import (
    CHUNK,
    DIR_FLAGS,
    READ_FLAGS,
    entry_type,
    open_dir,
    read_link,
    same_bytes,
)
from kernel.transaction.seen import SeenFiles

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
WHITEOUT_XATTRS = ("user.overlay.whiteout", "trusted.overlay.whiteout")
COUNT_LINES_UP_TO = 1 << 20
"""Line counts are made for text files up to this size (each side); larger ones show 0."""
BINARY_SNIFF = 8000
"""A NUL byte in this many first bytes makes a file binary (as git decides)."""


class UpperError(OSError):
    """The upper layer or the lower one cannot be read."""


@dataclass
class _Found:
    """The walk's findings: the changes, rename candidates by size, and what was read."""

    seen: SeenFiles
    changes: dict[str, Change] = field(default_factory=dict)
    deleted_files: dict[int, list[str]] = field(
        default_factory=lambda: collections.defaultdict(list))
    created_files: dict[int, list[str]] = field(
        default_factory=lambda: collections.defaultdict(list))


def read_upper(upper: Path, lower: Path, seen: SeenFiles | None = None) -> ChangeSet:
    """Every change the upper layer `upper` makes to `lower` (see the module's text);
    what was read of each changed file is noted in `seen`."""
    try:
        upper_fd = os.open(upper, DIR_FLAGS)
    except OSError as exc:
        raise UpperError(exc.errno, f"the upper layer {upper} cannot be read: {exc}") from exc
    try:
        lower_fd = os.open(lower, DIR_FLAGS)
    except OSError as exc:
        os.close(upper_fd)
        raise UpperError(exc.errno, f"the workspace {lower} cannot be read: {exc}") from exc
    try:
        found = _Found(seen if seen is not None else SeenFiles())
        _walk(found, upper_fd, lower_fd, "", opaque=False)
        _pair_renames(found, upper_fd, lower_fd)
        return ChangeSet(tuple(found.changes.values()))
    finally:
        os.close(upper_fd)
        os.close(lower_fd)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _xattr(fd: int, names: tuple[str, ...]) -> bytes | None:
    for name in names:
        with contextlib.suppress(OSError):
            return os.getxattr(fd, name)
    return None


def _is_whiteout(st: os.stat_result, dir_fd: int, name: str, xwhiteouts: bool) -> bool:
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    if xwhiteouts and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
        try:
            return _xattr(fd, WHITEOUT_XATTRS) is not None
        finally:
            os.close(fd)
    return False


def _lstat(dir_fd: int | None, name: str) -> os.stat_result | None:
    if dir_fd is None:
        return None
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _walk(found: _Found, upper_fd: int, lower_fd: int | None, rel: str, *,
          opaque: bool) -> None:
    """Compare the upper folder `upper_fd` at `rel` with the workspace's (`lower_fd`, None
    where the workspace has no folder there). `opaque`: lower entries not in the upper are
    gone."""
    marker = _xattr(upper_fd, OPAQUE_XATTRS) if rel else None
    xwhiteouts = marker == b"x"
    names = sorted(os.listdir(upper_fd))
    for name in names:
        path = _join(rel, name)
        st = os.stat(name, dir_fd=upper_fd, follow_symlinks=False)
        low = _lstat(lower_fd, name)
        if _is_whiteout(st, upper_fd, name, xwhiteouts):
            if low is not None:
                _deleted(found, lower_fd, name, path, low)
            continue
        _compare(found, upper_fd, lower_fd, name, path, st, low)
    if opaque and lower_fd is not None:
        present = set(names)
        for name in sorted(os.listdir(lower_fd)):
            if name not in present:
                low = _lstat(lower_fd, name)
                if low is not None:
                    _deleted(found, lower_fd, name, _join(rel, name), low)


def _compare(found: _Found, upper_fd: int, lower_fd: int | None, name: str, path: str,
             st: os.stat_result, low: os.stat_result | None) -> None:
    kind = entry_type(st.st_mode)
    low_kind = entry_type(low.st_mode) if low is not None else None
    mode = stat.S_IMODE(st.st_mode)
    if low is not None and low_kind != kind:
        if low_kind == "dir":
            _deleted_below(found, lower_fd, name, path)
        if kind != "dir":
            _add(found, _described(found, upper_fd, None, name, path, "replaced", kind, mode,
                                   st, None))
    if kind == "dir":
        _compare_dir(found, upper_fd, lower_fd, name, path, mode, low, low_kind)
    elif kind == "file":
        _compare_file(found, upper_fd, lower_fd, name, path, st, low, low_kind)
    elif kind == "link":
        if low_kind is None or (low_kind == "link" and read_link(upper_fd, name)
                                != read_link(_some(lower_fd), name)):
            _add(found, Change(path, "link", "link"))
    elif low_kind is None:
        _add(found, Change(path, "created", "other"))
    elif low is not None and low_kind == "other" and (
            stat.S_IFMT(low.st_mode) != stat.S_IFMT(st.st_mode) or low.st_rdev != st.st_rdev):
        _add(found, Change(path, "replaced", "other"))
    elif low is not None and low_kind == "other" and stat.S_IMODE(low.st_mode) != mode:
        _add(found, Change(path, "mode", "other"))


def _some(fd: int | None) -> int:
    if fd is None:
        raise AssertionError("a lower entry without its folder")
    return fd


def _compare_dir(found: _Found, upper_fd: int, lower_fd: int | None, name: str, path: str,
                 mode: int, low: os.stat_result | None, low_kind: str | None) -> None:
    child_upper = os.open(name, DIR_FLAGS, dir_fd=upper_fd)
    child_lower: int | None = None
    try:
        if low is None:
            _add(found, Change(path, "created", "dir"))
        elif low_kind != "dir":
            _add(found, Change(path, "replaced", "dir"))
        else:
            if stat.S_IMODE(low.st_mode) != mode:
                _add(found, Change(path, "mode", "dir", executable=bool(mode & 0o100)))
            child_lower = os.open(name, DIR_FLAGS, dir_fd=_some(lower_fd))
        opaque = _xattr(child_upper, OPAQUE_XATTRS) == b"y"
        _walk(found, child_upper, child_lower, path, opaque=opaque)
    finally:
        os.close(child_upper)
        if child_lower is not None:
            os.close(child_lower)


def _compare_file(found: _Found, upper_fd: int, lower_fd: int | None, name: str, path: str,
                  st: os.stat_result, low: os.stat_result | None,
                  low_kind: str | None) -> None:
    mode = stat.S_IMODE(st.st_mode)
    if low is None:
        if st.st_size:
            found.created_files[st.st_size].append(path)
        _add(found, _described(found, upper_fd, None, name, path, "created", "file", mode,
                               st, None))
        return
    if low_kind != "file":
        return  # replaced: reported by _compare
    kind: ChangeKind = "modified"
    if low.st_size == st.st_size:
        up = os.open(name, READ_FLAGS, dir_fd=upper_fd)
        try:
            down = os.open(name, READ_FLAGS, dir_fd=_some(lower_fd))
            try:
                if same_bytes(up, down):
                    if stat.S_IMODE(low.st_mode) == mode:
                        return
                    kind = "mode"
            finally:
                os.close(down)
        finally:
            os.close(up)
    if kind == "mode":
        _add(found, Change(path, "mode", "file", executable=bool(mode & 0o100)))
    else:
        _add(found, _described(found, upper_fd, lower_fd, name, path, "modified", "file",
                               mode, st, low))


def _deleted(found: _Found, lower_fd: int | None, name: str, path: str,
             low: os.stat_result) -> None:
    """`path` (the workspace's entry `name` in `lower_fd`) is gone, with all below it."""
    kind = entry_type(low.st_mode)
    if kind == "dir":
        _deleted_below(found, lower_fd, name, path)
        _add(found, Change(path, "deleted", "dir"))
    elif kind == "file":
        if low.st_size:
            found.deleted_files[low.st_size].append(path)
        _add(found, _described(found, None, lower_fd, name, path, "deleted", "file", 0, None,
                               low))
    else:
        _add(found, Change(path, "deleted", kind))


def _deleted_below(found: _Found, lower_fd: int | None, name: str, path: str) -> None:
    """Everything inside the workspace's folder `name` is gone."""
    fd = os.open(name, DIR_FLAGS, dir_fd=_some(lower_fd))
    try:
        for child in sorted(os.listdir(fd)):
            low = _lstat(fd, child)
            if low is not None:
                _deleted(found, fd, child, _join(path, child), low)
    finally:
        os.close(fd)


def _add(found: _Found, change: Change) -> None:
    found.changes[change.path] = change


def _described(found: _Found, upper_fd: int | None, lower_fd: int | None, name: str,
               path: str, kind: ChangeKind, entry: EntryType, mode: int,
               up: os.stat_result | None, low: os.stat_result | None) -> Change:
    """A file's change with its line counts (new side in `upper_fd`, old in `lower_fd`;
    `up` and `low` their stats, taken before they are read, for `found.seen`)."""
    if entry != "file":
        return Change(path, kind, entry)
    new = _sample(upper_fd, name, up)
    old = _sample(lower_fd, name, low) if kind != "replaced" else None
    if new is not None and up is not None:
        found.seen.note("upper", path, up, new)
    if old is not None and low is not None:
        found.seen.note("lower", path, low, old)
    binary = any(s is not None and b"\0" in s[:BINARY_SNIFF] for s in (new, old))
    added = removed = 0
    if not binary and (new is None or len(new) <= COUNT_LINES_UP_TO) and (
            old is None or len(old) <= COUNT_LINES_UP_TO):
        added, removed = line_counts(new.splitlines() if new is not None else [],
                                     old.splitlines() if old is not None else [])
    return Change(path, kind, entry, added=added, removed=removed, binary=binary,
                  executable=bool(mode & 0o100))


def line_counts(new: list[bytes], old: list[bytes]) -> tuple[int, int]:
    """(added, removed): the lines of each side not matched by an equal line of the other,
    as multisets. One side a prefix of the other (an append, a truncation: the usual
    change) is counted without building the multisets."""
    if new[:len(old)] == old:
        return len(new) - len(old), 0
    if old[:len(new)] == new:
        return 0, len(old) - len(new)
    new_lines, old_lines = collections.Counter(new), collections.Counter(old)
    return sum((new_lines - old_lines).values()), sum((old_lines - new_lines).values())


def _sample(dir_fd: int | None, name: str, st: os.stat_result | None) -> bytes | None:
    """Up to COUNT_LINES_UP_TO + 1 bytes of the file `name` (None: no such side). `st`, its
    stat when known: a file that gives no more than its size in one read is read whole
    (one read, sized to it, instead of a chunk and a read that finds its end)."""
    if dir_fd is None:
        return None
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    try:
        if st is not None and st.st_size <= COUNT_LINES_UP_TO:
            first = os.read(fd, st.st_size + 1)
            if len(first) <= st.st_size:
                return first
            out = bytearray(first)
        else:
            out = bytearray()
        while len(out) <= COUNT_LINES_UP_TO:
            chunk = os.read(fd, min(CHUNK, COUNT_LINES_UP_TO + 1 - len(out)))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    finally:
        os.close(fd)


def _digest(root_fd: int, path: str) -> str:
    head, _, name = path.rpartition("/")
    dir_fd = open_dir(root_fd, head)
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _pair_renames(found: _Found, upper_fd: int, lower_fd: int) -> None:
    """A deleted file and a created one of the same (non-empty) bytes: one `renamed`
    change at the new path (paired in path order when several have the same bytes)."""
    for size in sorted(set(found.deleted_files) & set(found.created_files)):
        gone: dict[str, list[str]] = collections.defaultdict(list)
        for path in found.deleted_files[size]:
            gone[_digest(lower_fd, path)].append(path)
        for path in sorted(found.created_files[size]):
            old_paths = gone.get(_digest(upper_fd, path))
            if not old_paths:
                continue
            previous = old_paths.pop(0)
            made = found.changes[path]
            del found.changes[previous]
            found.changes[path] = Change(path, "renamed", "file", previous=previous,
                                         executable=made.executable)
