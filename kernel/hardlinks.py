"""The secret and protected files that have other names (hard links), by inode.

A hard link names the same file (the same inode) under another name, so a check by name
does not see it: `ln ~/.ssh/id_ed25519 project/notes.txt` makes `notes.txt` the key, and
`ln .git/config gitconfig.txt` makes writing `gitconfig.txt` change git's config. Every
route therefore also compares a file's (st_dev, st_ino) with those of the secret and
protected files of kernel.pathrules that exist where Reins can find them: anchored at the
home folder (`~/.ssh/...`, `~/.bashrc`) and the workspace's own (the workspace index's
marks, kernel.sandbox.workspace_index, at any depth, and the files in the folders they
mark). A file with one name (st_nlink 1) has no other; a name made later for it is another.

A file with several names whose other names are none of these is left alone: hard links are
common (uv and pnpm link packages into `.venv` and `node_modules` from their caches, `git
clone` of a local repository links its objects, `cp -al` backups), and Linux cannot tell a
file's other names without searching the whole file system. What is not covered, for that
reason: secret locations deeper in the home than the patterns anchored there
(`~/other-project/.env`) or elsewhere on the disk; for commands, a name the workspace walk
never lists (inside a git directory's objects and refs) or outside the workspace (the
sandbox shows the root file system read-only: `/var/tmp/key` linked to `~/.ssh/id_rsa` is
readable there); the file tools compare such a name's inode with the files above that had
other names when last looked up.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from kernel.pathrules import SECRET_PATTERNS, WORKTREE_PROTECTED

SameKind = Literal["secret", "protected"]
Inode = tuple[int, int]
"""(st_dev, st_ino)."""
MAX_FILES = 20_000
"""Files looked at below one folder (a browser profile holds thousands): the rest is not."""
SAME_FILE_PREFIX = "hard-link:"
"""Where a path policy's verdict names the file a path is another name of:
`hard-link:<kind>:<rule>:<path>`."""


@dataclass(frozen=True)
class Named:
    """A secret or protected file."""

    path: str
    """Absolute: the name by which it is secret or protected."""
    kind: SameKind
    rule: str
    """The pattern of kernel.pathrules it matches (or the mark's rule)."""
    nlink: int
    """Its link count when it was looked at (more than 1: it has other names)."""


def anchored(folder: str, patterns: Iterable[str]) -> list[str]:
    """The entries of `folder` matching `patterns` anchored there, as they exist now (a
    folder pattern, `.ssh/**`, gives the folder): one listing of the folder, then only the
    patterns whose first name is in it are looked at further (an lstat for a literal one,
    a glob for the rest). A folder that cannot be listed costs one lstat per literal
    pattern instead."""
    found: set[str] = set()
    try:
        names: set[str] | None = set(os.listdir(folder))
    except OSError:
        names = None
    for pattern, first, first_magic, magic in _parsed(tuple(patterns)):
        if names is not None:
            firsts = (fnmatch.filter(names, first) if first_magic
                      else [first] if first in names else [])
            if not firsts:
                continue
            if pattern == first:
                found.update(os.path.join(folder, name) for name in firsts)
                continue
        if not magic:
            path = os.path.join(folder, pattern)
            if os.path.lexists(path):
                found.add(path)
        elif "/" in pattern:
            found.update(glob.glob(os.path.join(glob.escape(folder), pattern)))
    return sorted(found)


@functools.lru_cache(maxsize=16)
def _parsed(patterns: tuple[str, ...]) -> tuple[tuple[str, str, bool, bool], ...]:
    """Each pattern without its `/**`, its first name, and whether that and it are globs."""
    parsed = []
    for pattern in patterns:
        pattern = pattern.removesuffix("/**")
        first = pattern.partition("/")[0]
        parsed.append((pattern, first, glob.has_magic(first), glob.has_magic(pattern)))
    return tuple(parsed)


def _add(found: dict[Inode, Named], path: str, info: os.stat_result, kind: SameKind,
         rule: str) -> None:
    if stat.S_ISREG(info.st_mode):
        key = (info.st_dev, info.st_ino)
        if key not in found or (kind == "secret" and found[key].kind != "secret"):
            found[key] = Named(path, kind, rule, info.st_nlink)


def add_files(found: dict[Inode, Named], path: str, kind: SameKind, rule: str) -> None:
    """Add `path` (a file, or each file below a folder, links inside not followed; the
    folder itself may be reached through a link, as `~/.aws -> cloud/aws`) to `found`."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return
    if not stat.S_ISDIR(info.st_mode):
        _add(found, path, info, kind, rule)
        return
    seen = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            seen += 1
            if seen > MAX_FILES:
                return
            full = os.path.join(root, name)
            try:
                _add(found, full, os.lstat(full), kind, rule)
            except OSError:
                continue


_LISTS: tuple[tuple[SameKind, tuple[str, ...]], ...] = (
    ("secret", SECRET_PATTERNS), ("protected", WORKTREE_PROTECTED))


def at_home(home: str) -> dict[Inode, Named]:
    """The secret and protected files anchored at `home`, by inode."""
    found: dict[Inode, Named] = {}
    for kind, patterns in _LISTS:
        for pattern in patterns:
            for path in anchored(home, (pattern,)):
                add_files(found, path, kind, pattern)
    return found


def verdict_text(named: Named) -> str:
    """`named` as a path policy's verdict holds it (SAME_FILE_PREFIX)."""
    return f"{SAME_FILE_PREFIX}{named.kind}:{named.rule}:{named.path}"


def parse_verdict(text: str) -> Named | None:
    """The `Named` of a `verdict_text`, else None."""
    if not text.startswith(SAME_FILE_PREFIX):
        return None
    parts = text.removeprefix(SAME_FILE_PREFIX).split(":", 2)
    if len(parts) != 3 or parts[0] not in ("secret", "protected"):
        return None
    kind, rule, path = parts
    return Named(path, "secret" if kind == "secret" else "protected", rule, 0)
