"""The marked entries of one workspace (kernel.sandbox.marks), kept current by inotify.

A walk of a workspace of 100,000 files takes a third of a second; a command must not pay that
twice. So the index walks once, watches every folder it walked, and afterwards reads only
the folders inotify says changed. `refresh()` costs next to nothing when nothing changed,
and what a command changed when it did.

- Folders the walk does not enter (a hidden secret, a read-only protected folder, the parts
  of a git directory git never reads as code: objects, refs, logs) are not watched.
- A folder that changed is read again; a new folder below it is walked whole.
- Each file outside git directories is looked at once (an lstat) for its link count: the
  files with more than one name are `linked`, for kernel.sandbox.samefiles.
- The entries outside git directories called one of `names` (`follow`: what a git config
  names at any depth, kernel.sandbox.git_named) are `named` wherever the walk meets them.
- When inotify's queue overflows the index walks the workspace again; when inotify is
  missing or a watch cannot be added (the user's watch limit), every refresh walks the
  whole workspace: slower, never wrong (`watching` says which).

Not thread-safe: one caller at a time (the executor serialises refreshes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kernel.sandbox.git_named import NamedPaths, with_named
from kernel.sandbox.inotify import (
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVE_SELF,
    IN_Q_OVERFLOW,
    Inotify,
    InotifyError,
)
from kernel.sandbox.marks import EntryKind, Mark, classify, may_be_marked
from kernel.sandbox.samefiles import with_same

Listing = dict[str, tuple[EntryKind, int]]
"""name → (kind, inode) of a folder's entries."""


def _kind(item: os.DirEntry[str]) -> EntryKind:
    """From the folder's listing (d_type), without a stat of each entry."""
    if item.is_symlink():
        return "link"
    if item.is_dir(follow_symlinks=False):
        return "dir"
    if item.is_file(follow_symlinks=False):
        return "file"
    return "other"


def _readlink(path: str) -> str:
    """What a link holds; '' when it is gone already (the next refresh sees that)."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


def list_folder(folder: str) -> Listing | None:
    """A folder's entries without following links; None when it cannot be read (gone, or
    no permission)."""
    found: Listing = {}
    try:
        with os.scandir(folder) as entries:
            for item in entries:
                try:
                    found[item.name] = (_kind(item), item.inode())
                except OSError:
                    continue
    except OSError:
        return None
    return found


def _looks_bare(folder: str) -> bool:
    """`folder` is a bare repository (one lstat for most folders: they have no HEAD)."""
    try:
        if not stat.S_ISREG(os.lstat(os.path.join(folder, "HEAD")).st_mode):
            return False
        return (stat.S_ISDIR(os.lstat(os.path.join(folder, "objects")).st_mode)
                and stat.S_ISDIR(os.lstat(os.path.join(folder, "refs")).st_mode))
    except OSError:
        return False


@dataclass
class _Folder:
    git_dir: str | None
    wd: int | None
    ino: int
    children: set[str] = field(default_factory=set)
    """Names below it the index knows: marks and walked folders."""


class WorkspaceIndex:
    """The marks of the workspace `root` (an absolute, resolved path)."""

    def __init__(self, root: str, *, watch: bool = True, excluded: tuple[str, ...] = ()
                 ) -> None:
        """`excluded`: absolute folders left out (Reins' own, mounted apart)."""
        self.root = root
        self._excluded = frozenset(excluded)
        self.marks: dict[str, Mark] = {}
        self.linked: dict[str, tuple[int, int]] = {}
        """path → (st_dev, st_ino) of every file outside git directories with more than one
        name (kernel.hardlinks): one lstat per file the walk meets."""
        self._folders: dict[str, _Folder] = {}
        self._by_wd: dict[int, str] = {}
        self._notify: Inotify | None = None
        self._want_watch = watch
        self.names: frozenset[str] = frozenset()
        self.named: dict[str, EntryKind] = {}
        """path → kind of each entry outside git directories called one of `names`."""
        self.watching = False
        """inotify follows every walked folder (else every refresh walks everything)."""
        self._rebuild()

    def close(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        self.watching = False

    @property
    def current(self) -> bool:
        """Nothing changed since the last refresh (inotify follows and has nothing queued)."""
        return self._notify is not None and not self._notify.pending()

    def refresh(self) -> dict[str, Mark]:
        """Bring the marks up to date; returns them (path → mark)."""
        if self._notify is None:
            self._rebuild()
            return self.marks
        events = self._notify.read()
        if any(event.mask & IN_Q_OVERFLOW for event in events):
            self._rebuild()
            return self.marks
        changed = {self._by_wd[e.wd] for e in events if e.wd in self._by_wd}
        for event in events:  # a folder gone or moved: its watch is gone too
            gone = self._by_wd.get(event.wd)
            if gone is not None and event.mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                if gone == "":
                    self._rebuild()
                    return self.marks
                self._forget(gone)
                changed.add(gone.rpartition("/")[0])
        for rel in list(changed):  # a folder that became a bare repository: its parent
            folder = self._folders.get(rel)
            if rel and folder is not None and folder.git_dir is None and _looks_bare(
                    self._abs(rel)):
                changed.add(rel.rpartition("/")[0])
        for rel in sorted(changed, key=lambda r: (r.count("/"), r)):
            if rel in self._folders:
                for child, git_dir in self._read(rel):
                    self._walk(child, git_dir)
        return self.marks

    def follow(self, names: frozenset[str]) -> None:
        """Note in `named` the entries called one of `names` from now on: the workspace is
        walked again when they change (seldom: when a git config does)."""
        if names != self.names:
            self.names = names
            self._rebuild()

    def _abs(self, rel: str) -> str:
        return self.root if rel == "" else os.path.join(self.root, rel)

    def _rebuild(self) -> None:
        self.close()
        self.marks.clear()
        self.linked.clear()
        self.named.clear()
        self._folders.clear()
        self._by_wd.clear()
        if self._want_watch:
            try:
                self._notify = Inotify()
                self.watching = True
            except InotifyError:
                self._notify = None
        self._walk("", None)

    def _watch(self, rel: str) -> int | None:
        if self._notify is None:
            return None
        try:
            wd = self._notify.add_watch(self._abs(rel))
        except InotifyError:
            self.close()  # from now on every refresh walks the whole workspace
            return None
        self._by_wd[wd] = rel
        return wd

    def _walk(self, rel: str, git_dir: str | None) -> None:
        """Watch and read the folder `rel`, then every folder below it worth entering."""
        pending = [(rel, git_dir)]
        while pending:
            folder, inside = pending.pop()
            try:
                ino = os.lstat(self._abs(folder)).st_ino
            except OSError:
                continue
            self._folders[folder] = _Folder(inside, self._watch(folder), ino)
            pending.extend(self._read(folder))

    def _read(self, rel: str) -> list[tuple[str, str | None]]:
        """Read the folder `rel` (again): its marks and known sub-folders updated. Returns
        the sub-folders not walked yet, with the git directory each belongs to. A folder
        replaced by another of the same name (another inode) is walked anew: its watch
        went with the old one."""
        folder = self._folders[rel]
        listing = list_folder(self._abs(rel))
        if listing is None:
            self._forget(rel)
            return []
        for name in folder.children - listing.keys():
            self._forget(f"{rel}/{name}" if rel else name)
        folder.children = set()
        fresh: list[tuple[str, str | None]] = []
        plain = folder.git_dir is None
        for name, (kind, ino) in listing.items():
            child = f"{rel}/{name}" if rel else name
            if plain and kind != "dir" and not may_be_marked(name):
                self._note_names(folder, name, child, kind)
                continue  # most files: nothing else to judge
            if kind == "dir" and self._excluded and self._abs(child) in self._excluded:
                continue
            bare = plain and kind == "dir" and _looks_bare(self._abs(child))
            seen = classify(child, kind, ino, git_dir=folder.git_dir, bare=bare)
            mark = seen.mark
            if mark is not None and kind == "link":
                mark = replace(mark, led=_readlink(self._abs(child)))
            known, walked = self.marks.get(child), self._folders.get(child)
            if known != mark or (walked is not None and (
                    seen.walk != "descend" or walked.git_dir != seen.git_dir
                    or walked.ino != ino)):
                self._forget(child)
                walked = None
            if mark is not None:
                self.marks[child] = mark
                folder.children.add(name)
            if seen.walk == "descend":
                folder.children.add(name)
                if walked is None:
                    fresh.append((child, seen.git_dir))
            if plain:
                self._note_names(folder, name, child, kind)
        return fresh

    def _note_names(self, folder: _Folder, name: str, rel: str, kind: EntryKind) -> None:
        """Note in `linked` whether `rel`, the entry `name` of `folder`, is a file with more
        than one name, and in `named` whether it is called one of `names`."""
        if name in self.names:
            self.named[rel] = kind
            folder.children.add(name)
        info = None
        if kind == "file":
            try:
                info = os.lstat(self._abs(rel))
            except OSError:
                info = None
        if info is None or info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
            self.linked.pop(rel, None)
            return
        self.linked[rel] = (info.st_dev, info.st_ino)
        folder.children.add(name)

    def rescan(self) -> None:
        """Walk the whole workspace again (a file's other name may have been made where no
        watch sees it: a name's link count changes without an event in its folder)."""
        self._rebuild()

    def _forget(self, rel: str) -> None:
        """Drop the entry `rel` and everything the index knows below it."""
        prefix = rel + "/" if rel else ""
        for path in [p for p in self._folders if p == rel or p.startswith(prefix)]:
            gone = self._folders.pop(path)
            if gone.wd is not None and self._notify is not None:
                del self._by_wd[gone.wd]
                self._notify.rm_watch(gone.wd)
        for path in [p for p in self.marks if p == rel or p.startswith(prefix)]:
            del self.marks[path]
        for path in [p for p in self.linked if p == rel or p.startswith(prefix)]:
            del self.linked[path]
        for path in [p for p in self.named if p == rel or p.startswith(prefix)]:
            del self.named[path]


MAX_HOPS = 40
"""Links followed from a protected link, as the kernel does (ELOOP beyond)."""


def with_led(workspace: str, marks: Mapping[str, Mark]) -> dict[str, Mark]:
    """`marks` and, marked as protected too, where each protected link among them leads
    inside the workspace, hop by hop (`.idea -> cfg/hop -> real`), with the links to folders
    met on the way (`.envrc -> sub/envrc` with `sub -> real`): what exists is bound
    read-only, the links pinned; what does not (`.vscode -> missing`, `.envrc -> sub/envrc`)
    and a command makes is new and undone after it, unless a link on the way changed (then
    that link is undone, and what it led to is not the protected link's)."""
    root = os.path.realpath(workspace)
    led: dict[str, Mark] = {}
    for mark in marks.values():
        if mark.entry != "link" or mark.kind not in ("protected", "git-entry"):
            continue
        rule, hop = f"where {mark.path} leads", mark
        via: tuple[str, ...] = (mark.path,)
        for _ in range(MAX_HOPS):
            met, found = _led_to(root, hop, rule, via)
            for folder_link in met:
                led.setdefault(folder_link.path, folder_link)
            if found is None:
                break
            led.setdefault(found.path, found)
            if found.entry != "link":
                break
            via, hop = (*found.via, found.path), found
    return {**led, **marks}


def _led_to(root: str, link: Mark, rule: str, via: tuple[str, ...]
            ) -> tuple[list[Mark], Mark | None]:
    """The links to folders inside the workspace met on the way to the entry `link` holds
    the path of, and that entry, marked (None when it is outside the workspace or missing);
    the entry's `via` ends with the links met."""
    start = "/" if link.led.startswith("/") else os.path.dirname(os.path.join(root, link.path))
    folder, met = _folders(root, start, os.path.dirname(link.led), rule, via)
    via = (*via, *(m.path for m in met))
    target = os.path.join(folder, os.path.basename(link.led))
    if not target.startswith(root + "/") or os.path.basename(target) in ("", ".", ".."):
        return met, None
    try:
        info = os.lstat(target)
    except OSError:
        return met, None
    path = target[len(root) + 1:]
    if stat.S_ISLNK(info.st_mode):
        return met, Mark(path, "protected", rule, "link", info.st_ino, _readlink(target), via)
    entry: EntryKind = ("dir" if stat.S_ISDIR(info.st_mode) else
                        "file" if stat.S_ISREG(info.st_mode) else "other")
    return met, Mark(path, "protected", rule, entry, info.st_ino, via=via)


def _folders(root: str, start: str, text: str, rule: str, via: tuple[str, ...]
             ) -> tuple[str, list[Mark]]:
    """The folder `text` names from the real folder `start`, resolved as the kernel does,
    and the links inside the workspace it passes, marked."""
    folder, met = start, []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            folder = os.path.dirname(folder)
            continue
        step = os.path.join(folder, part)
        try:
            info = os.lstat(step)
        except OSError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            if step.startswith(root + "/"):
                met.append(Mark(step[len(root) + 1:], "protected", rule, "link", info.st_ino,
                                _readlink(step), via))
            folder = os.path.realpath(step)
        else:
            folder = step
    return folder, met


def sandbox_marks(workspace: str, index: WorkspaceIndex, same: Mapping[str, Mark],
                  named: NamedPaths) -> dict[str, Mark]:
    """The `index`'s marks of the real path `workspace` as every sandbox applies them (a
    command's, kernel.sandbox.guard; a server's, kernel.sandbox.server): with what its git
    configs name (`named`, kernel.sandbox.git_named; the index follows its names), where its
    protected links lead (`with_led`), and the other names of secret and protected files
    (`same`, kernel.sandbox.samefiles)."""
    marks = with_named(workspace, index.marks, named, index.named)
    return with_same(with_led(workspace, marks), same)
