"""Other names (hard links) in a workspace of its secret and protected files, and of the
home's (kernel.hardlinks), as marks the sandbox hides or binds read-only like those files.

The workspace index (kernel.sandbox.workspace_index) knows each file of the workspace with
more than one name (`WorkspaceIndex.linked`); `SameFiles` knows the secret and protected
files by inode: those anchored at the home and the workspace's marks (with the files in
the folders they mark). A linked file whose inode is one of them is marked as that file.

The files are looked up again only when the workspace's marks change or inotify reports an
entry made, removed or renamed in the home, in a folder anchored there (`~/.ssh`), or in a
folder the workspace's marks name (`.git/hooks`, `.vscode`): a command pays nothing when
none did. A name made for an existing file elsewhere changes its link count without an
event in its own folder (`ln scripts/hook.sh .git/hooks/pre-commit`), so when a secret or
protected file has gained a name the index does not know, the workspace is walked again
(`SameFiles.current` says so).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from pathlib import PurePosixPath

from kernel.hardlinks import Inode, Named, add_files, anchored, at_home
from kernel.pathrules import SECRET_PATTERNS, WORKTREE_PROTECTED, fold_name
from kernel.sandbox.inotify import FOLDER_CHANGES, IN_DONT_FOLLOW, Inotify, InotifyError
from kernel.sandbox.marks import Mark

_KINDS = {"secret": "secret", "protected": "protected", "git-entry": "protected"}
_HEADS = tuple(dict.fromkeys(fold_name(PurePosixPath(p).parts[0])
                             for p in (*SECRET_PATTERNS, *WORKTREE_PROTECTED)))
"""The first segments of the lists' patterns: only an entry of the home so named matters
(the home changes often: `~/.claude.json`, editors' backups)."""


def _matters_at_home(name: str) -> bool:
    folded = fold_name(name)
    return any(fnmatch.fnmatchcase(folded, head) for head in _HEADS)


class SameFiles:
    """The secret and protected files of the home and of one workspace, by inode."""

    def __init__(self, home: str, root: str) -> None:
        self.home = home
        self.root = root
        self.files: dict[Inode, Named] = {}
        self._marks: dict[str, Mark] | None = None
        self._notify: Inotify | None = None
        self._home_watch: int | None = None
        self._stale = True
        self._several: set[tuple[Inode, int]] | None = None
        """(inode, link count) of the files with several names when last looked up (None
        before the first look-up, which follows the index's first walk)."""

    def close(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify = None

    def current(self, marks: Mapping[str, Mark], linked: Mapping[str, Inode]) -> bool:
        """Bring `files` up to date with the workspace's `marks` (and `linked`, the index's,
        which has just walked or been refreshed); True when a file of them has gained a name
        since the last call that is none of `linked`, on the workspace's file system (the
        index must walk again to find it)."""
        if self.quiet(marks):
            return False
        self._look_up(marks)
        several = {(key, named.nlink) for key, named in self.files.items() if named.nlink > 1}
        gained = set() if self._several is None else several - self._several
        self._several = several
        known = set(linked.values())
        try:
            device = os.stat(self.root).st_dev
        except OSError:
            return False
        return any(key[0] == device and key not in known for key, _n in gained)

    def quiet(self, marks: Mapping[str, Mark]) -> bool:
        """Nothing to look up again: the same marks, and no entry made, removed or renamed
        where the files are (in the home, none named as the lists' patterns begin)."""
        if self._marks != marks or self._notify is None:
            return False
        for event in self._notify.read():
            if event.wd != self._home_watch or _matters_at_home(event.name):
                self._stale = True
        return not self._stale

    def _look_up(self, marks: Mapping[str, Mark]) -> None:
        self.close()
        try:
            self._notify = Inotify()
        except InotifyError:
            self._notify = None
        self._stale = False
        self._home_watch = self._watch(self.home)
        for path in anchored(self.home, (*SECRET_PATTERNS, *WORKTREE_PROTECTED)):
            self._watch(path)
        for mark in marks.values():
            if mark.kind in _KINDS and mark.entry == "dir" and not mark.same_as:
                self._watch(os.path.join(self.root, mark.path))
        self.files = look_up(self.home, self.root, marks)
        self._marks = dict(marks)

    def _watch(self, path: str) -> int | None:
        if self._notify is None or not os.path.isdir(path):
            return None
        try:
            return self._notify.add_watch(path, FOLDER_CHANGES & ~IN_DONT_FOLLOW)
        except InotifyError:
            self.close()  # from now on they are looked up before every command
            return None

    def marks(self, linked: Mapping[str, Inode]) -> dict[str, Mark]:
        """A mark for each of `linked` that is another name of one of `files`."""
        return same_marks(self.root, self.files, linked)


def look_up(home: str, root: str, marks: Mapping[str, Mark]) -> dict[Inode, Named]:
    """The secret and protected files anchored at `home` and of the workspace `root`'s
    `marks` (with the files in the folders they mark), by inode."""
    files = at_home(home)
    for mark in marks.values():
        kind = _KINDS.get(mark.kind)
        if kind is not None and not mark.same_as and mark.entry in ("file", "dir"):
            add_files(files, os.path.join(root, mark.path),
                      "secret" if kind == "secret" else "protected", mark.rule)
    return files


def same_marks(root: str, files: Mapping[Inode, Named], linked: Mapping[str, Inode]
               ) -> dict[str, Mark]:
    """A mark for each of `linked` (paths in the workspace `root`) that is another name of
    one of `files`."""
    found: dict[str, Mark] = {}
    for rel, key in linked.items():
        named = files.get(key)
        if named is not None and named.path != os.path.join(root, rel):
            found[rel] = Mark(rel, named.kind, named.rule, "file", key[1], same_as=named.path)
    return found


def with_same(marks: Mapping[str, Mark], same: Mapping[str, Mark]) -> dict[str, Mark]:
    """`marks` with the marks of other names added; one that hides a secret wins over a
    mark by name that does not (`src/.bashrc`, protected by name, is a secret's name)."""
    merged = dict(marks)
    for path, mark in same.items():
        known = merged.get(path)
        if known is None or (mark.kind == "secret" and known.kind != "secret"):
            merged[path] = mark
    return merged
