"""Put paths of the workspace back to kept states (undo, and the rollback of an apply).

Paths already as kept are left alone. What is in the way is removed deepest first (a
folder that should not be there is empty by then: everything that was made in it is a kept
path too), then folders, files and links are made shallowest first (a file from its blob,
written under a temporary name and renamed over), then folders get their permission bits,
deepest first (a read-only folder last). Every step goes through folder descriptors that
never follow a link (kernel.transaction.fsat).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping

from kernel.transaction.fsat import (
    Displaced,
    Folders,
    State,
    chmod_at,
    parent_of,
    remove_at,
    split,
    write_bytes_at,
    write_file_at,
    write_link_at,
)

Reuse = Callable[[int, str, str, State, bool], bool]
"""Put a file back by moving in a kept inode that holds its bytes (folder descriptor,
name, path, the state wanted, whether something that is not a folder is there now): False
when there is none."""
Fetch = Callable[[str], "bytes | int"]
"""A file's kept bytes by their sha256: the bytes, or a read descriptor (the caller closes
it); -1 when they are no longer kept."""


class RestoreError(OSError):
    """A path could not be put back; the message names it."""


def restore(root_fd: int, targets: Mapping[str, State], fetch: Fetch,
            displaced: Displaced | None = None, reuse: Reuse | None = None,
            current: Mapping[str, State] | None = None) -> None:
    """Make every path of `targets` (relative to the folder `root_fd`) what its State says;
    what is replaced or removed goes to `displaced` (kernel.transaction.trash); a file is
    moved back by `reuse` where it can, else written from `fetch`. `current`: what each
    path is now, when the caller has just read it (an undo's kept states), else read here."""
    if current is None or not current.keys() >= targets.keys():
        with Folders(root_fd) as folders:
            current = {path: folders.state(path) for path in targets}
    todo = {path: state for path, state in targets.items() if current[path] != state}
    for path in sorted(todo, reverse=True):
        now, want = current[path], todo[path]
        if now.kind == "absent" or (now.kind == want.kind and want.kind == "dir"):
            continue
        if now.kind == "dir" or want.kind in ("absent", "dir"):
            _at(root_fd, path, "remove", functools.partial(remove_at, displaced=displaced))
    with Folders(root_fd) as folders:  # opened after the removals, each after it is made
        for path in sorted(todo):
            now, want = current[path], todo[path]
            if want.kind == "dir" and now.kind != "dir":
                _at(folders, path, "make the folder",
                    lambda fd, name: os.mkdir(name, 0o700, dir_fd=fd))
            elif want.kind == "file":
                _at(folders, path, "write", functools.partial(
                    _put_file, path=path, want=want, fetch=fetch, displaced=displaced,
                    reuse=reuse, there=now.kind not in ("absent", "dir")))
            elif want.kind == "link":
                _at(folders, path, "make the link",
                    functools.partial(write_link_at, target=want.digest))
            elif want.kind == "other":
                raise RestoreError(0, f"{path}: a socket, FIFO or device cannot be put back")
    for path in sorted(todo, reverse=True):
        want = todo[path]
        if want.kind == "dir" and (current[path].kind != "dir"
                                   or current[path].mode != want.mode):
            _at(root_fd, path, "set the mode of", functools.partial(chmod_at, mode=want.mode))


def _put_file(dir_fd: int, name: str, path: str, want: State, fetch: Fetch,
              displaced: Displaced | None, reuse: Reuse | None, there: bool) -> None:
    if reuse is not None and reuse(dir_fd, name, path, want, there):
        return
    kept = fetch(want.digest)
    if isinstance(kept, bytes):
        write_bytes_at(dir_fd, name, kept, want.mode, displaced)
        return
    if kept < 0:
        raise FileNotFoundError(f"the kept bytes {want.digest} are gone")
    try:
        write_file_at(dir_fd, name, kept, want.mode, displaced)
    finally:
        os.close(kept)


def _at(root: int | Folders, path: str, doing: str, step: Callable[[int, str], None]) -> None:
    """Run `step(folder fd, name)` for `path` (its folder opened from the root's descriptor,
    or taken from `root`'s open folders), an OSError said as a RestoreError."""
    try:
        if isinstance(root, Folders):
            head, name = split(path)
            step(root.open(head), name)
            return
        with parent_of(root, path) as (fd, name):
            step(fd, name)
    except OSError as exc:
        raise RestoreError(exc.errno, f"cannot {doing} {path}: {exc.strerror or exc}") from exc
