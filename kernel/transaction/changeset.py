"""What a command (or a file tool) changed in the workspace: the data that crosses
boundaries (events, the protocol, the UI, the checkpoint index).

A path is relative to the workspace, '/'-separated, as `os.fsdecode` gives it: a name that
is not UTF-8 keeps its bytes as lone surrogates (`os.fsencode` gives them back), which
`kernel.events.json_text` writes as escapes. `to_json`/`from_json` map a change set to and
from plain dicts; `from_json` refuses anything malformed with a `ChangeSetError`.

`split_held` is the one place that decides which changes depend on which: a change below a
folder another change makes cannot be applied without it, and a folder cannot be removed
while something below it is kept.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["created", "modified", "deleted", "renamed", "mode", "link", "replaced"]
"""created: a new file or folder; modified: other bytes; deleted: gone; renamed: a deletion
paired with a creation of identical bytes (`previous` is the old path); mode: only the
permission bits changed; link: a symlink made or re-pointed; replaced: what is there is of
another type than before (a file turned into a folder or a link, or back)."""
CHANGE_KINDS: tuple[ChangeKind, ...] = typing.get_args(ChangeKind)
EntryType = Literal["file", "dir", "link", "other"]
ENTRY_TYPES: tuple[EntryType, ...] = typing.get_args(EntryType)

_REMOVES = frozenset({"deleted", "replaced"})
"""Kinds that remove what the workspace has at the path (replaced: before putting another
type there)."""


class ChangeSetError(ValueError):
    """A change set (or a choice of its changes) that cannot be used; the message says why."""


@dataclass(frozen=True)
class Change:
    """One path's change. `entry` is what is there after (for deleted: what was there)."""

    path: str
    kind: ChangeKind
    entry: EntryType
    previous: str = ""
    added: int = 0
    removed: int = 0
    binary: bool = False
    executable: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "entry": self.entry}
        for name, default in _OPTIONAL.items():
            value = getattr(self, name)
            if value != default:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Change:
        if not isinstance(data, Mapping):
            raise ChangeSetError(f"a change must be an object, got {type(data).__name__}")
        unknown = data.keys() - _FIELDS
        if unknown:
            raise ChangeSetError(f"a change has unknown fields: {sorted(unknown)}")
        path = data.get("path")
        kind = data.get("kind")
        entry = data.get("entry")
        if kind not in CHANGE_KINDS:
            raise ChangeSetError(f"change kind {kind!r} is not one of {list(CHANGE_KINDS)}")
        if entry not in ENTRY_TYPES:
            raise ChangeSetError(f"entry {entry!r} is not one of {list(ENTRY_TYPES)}")
        values: dict[str, Any] = {}
        for name, default in _OPTIONAL.items():
            if name not in data:  # the default: valid
                continue
            value = data[name]
            if type(value) is not type(default) or (type(value) is int and value < 0):
                raise ChangeSetError(f"change field {name!r} must be a "
                                     f"{'non-negative ' if type(default) is int else ''}"
                                     f"{type(default).__name__}, got {value!r}")
            values[name] = value
        path = check_path(path)
        previous = values.get("previous", "")
        if kind == "renamed":
            check_path(previous)
        elif previous:
            raise ChangeSetError(f"{path!r}: only a renamed change has a previous path")
        return cls(path=path, kind=kind, entry=entry, **values)


_OPTIONAL: dict[str, Any] = {"previous": "", "added": 0, "removed": 0, "binary": False,
                             "executable": False}
_FIELDS = frozenset({"path", "kind", "entry", *_OPTIONAL})


def check_path(path: Any) -> str:
    """`path` if it is a workspace-relative path Reins may use: '/'-separated, not empty,
    no '.', '..' or empty component, no NUL; else ChangeSetError."""
    if not isinstance(path, str) or not path:
        raise ChangeSetError(f"a change path must be a non-empty string, got {path!r}")
    if "\0" in path or any(part in ("", ".", "..") for part in path.split("/")):
        raise ChangeSetError(f"change path {path!r} is not a plain relative path")
    return path


def parent_paths(path: str) -> Iterable[str]:
    """The folders above `path`, nearest first ('a/b/c' → 'a/b', 'a')."""
    parts = path.split("/")
    for end in range(len(parts) - 1, 0, -1):
        yield "/".join(parts[:end])


@dataclass(frozen=True)
class ChangeSet:
    """Every change of one call, sorted by path, each path once. Deletions are always
    listed, one per entry (a deleted folder and everything that was in it)."""

    changes: tuple[Change, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.changes, key=lambda c: c.path))
        paths = [c.path for c in ordered]
        if len(set(paths)) != len(paths):
            doubled = sorted({p for p in paths if paths.count(p) > 1})
            raise ChangeSetError(f"a change set lists these paths twice: {doubled}")
        object.__setattr__(self, "changes", ordered)

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> typing.Iterator[Change]:
        return iter(self.changes)

    def to_json(self) -> dict[str, Any]:
        return {"changes": [c.to_json() for c in self.changes]}

    @classmethod
    def from_json(cls, data: Any) -> ChangeSet:
        if not isinstance(data, Mapping) or set(data) != {"changes"}:
            raise ChangeSetError("a change set must be an object with only 'changes'")
        items = data["changes"]
        if not isinstance(items, list):
            raise ChangeSetError("a change set's 'changes' must be a list")
        return cls(tuple(Change.from_json(item) for item in items))

    def summary(self) -> str:
        """'3 files changed, +10 −2, 1 deleted' (folders are not counted as files)."""
        if not self.changes:
            return "no changes"
        deleted = sum(1 for c in self.changes if c.kind == "deleted" and c.entry != "dir")
        changed = sum(1 for c in self.changes if c.entry != "dir" and c.kind != "deleted")
        folders = sum(1 for c in self.changes if c.entry == "dir")
        parts = []
        if changed:
            parts.append(f"{changed} {'file' if changed == 1 else 'files'} changed")
        added = sum(c.added for c in self.changes)
        removed = sum(c.removed for c in self.changes)
        if added or removed:
            parts.append(f"+{added} \u2212{removed}")
        if deleted:
            parts.append(f"{deleted} deleted")
        if folders:
            parts.append(f"{folders} {'folder' if folders == 1 else 'folders'}")
        return ", ".join(parts)


def split_held(changes: ChangeSet, held: Iterable[str]) -> tuple[ChangeSet, ChangeSet]:
    """(what can be applied, what is held) when the paths `held` are held: also held is every
    change that needs a held one — a change below a folder a held change makes (created or
    replaced), and the removal of a folder (deleted or replaced) above a held change, since
    the folder would not be empty. A held rename holds its old path's removal with it."""
    by_path = {c.path: c for c in changes}
    held_paths = {p for p in held if p in by_path}
    growing = True
    while growing:
        growing = False
        for change in changes:
            if change.path in held_paths:
                continue
            if _needs_held(change, held_paths, by_path):
                held_paths.add(change.path)
                growing = True
    keep = tuple(c for c in changes if c.path not in held_paths)
    return ChangeSet(keep), ChangeSet(tuple(by_path[p] for p in held_paths))


def _needs_held(change: Change, held: set[str], by_path: Mapping[str, Change]) -> bool:
    for parent in parent_paths(change.path):
        if parent in held and by_path[parent].kind in ("created", "replaced"):
            return True
    if change.kind in _REMOVES or change.entry == "dir":
        prefix = change.path + "/"
        if any(p.startswith(prefix) for p in held):
            return True
    return False

