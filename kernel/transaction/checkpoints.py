"""Checkpoints: every applied change set can be undone.

One per data folder, `<data>/checkpoints/`: an SQLite index (`index.sqlite3`) of steps and,
per step and path, what the path was before (kind, mode, sha256 of its bytes or a link's
target) and what the step left; the bytes themselves in a content-addressed store
(kernel.transaction.blobs). A `Recorder` keeps each path before it is changed
(`keep`), and `commit` makes the step. Undoing a step puts every path back only if each is
still what the step left; otherwise nothing changes and the result names each path and
what changed it (a later call, or "changed outside Reins"). An undo is itself a step
(`Step.undoes`), so its own changes are on record, but it is never undone in turn.

The blobs are bounded (`max_bytes`): after each commit the oldest steps drop their bytes
until the rest fit; such a step is listed as no longer undoable, never half undone.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.setting_records import DEFAULT_CHECKPOINT_BYTES
from kernel.transaction.blobs import Blobs
from kernel.transaction.changeset import Change, ChangeKind, ChangeSet, EntryType, parent_paths
from kernel.transaction.diff import (
    MAX_FILE_BYTES,
    SECRET_NOTE,
    bounded,
    change_diff,
    is_secret,
    shown_text,
)
from kernel.transaction.fsat import (
    ABSENT,
    DIR_FLAGS,
    Folders,
    State,
    hash_fd,
    open_dir,
    open_file,
    parent_of,
    state_at,
)
from kernel.transaction.restore import restore

DEFAULT_MAX_BYTES = DEFAULT_CHECKPOINT_BYTES
"""The `checkpoints.max_bytes` setting when it is not set (kernel.setting_records)."""
OUTSIDE = "changed outside Reins"
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    at REAL NOT NULL,
    workspace BLOB NOT NULL,
    changes TEXT NOT NULL,
    undoes INTEGER,
    undone_by INTEGER,
    pruned INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS steps_session ON steps(session_id, id);
CREATE TABLE IF NOT EXISTS entries (
    step_id INTEGER NOT NULL,
    path BLOB NOT NULL,
    before_kind TEXT NOT NULL,
    before_mode INTEGER NOT NULL,
    before_digest BLOB NOT NULL,
    after_kind TEXT NOT NULL,
    after_mode INTEGER NOT NULL,
    after_digest BLOB NOT NULL,
    PRIMARY KEY (step_id, path)
);
CREATE INDEX IF NOT EXISTS entries_path ON entries(path, step_id);
CREATE INDEX IF NOT EXISTS entries_blob ON entries(before_digest) WHERE before_kind = 'file';
CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, size INTEGER NOT NULL);
"""


class CheckpointError(Exception):
    """A step that does not exist, or an index that cannot be used; the message says which."""


@dataclass(frozen=True)
class Step:
    """One applied change set of a call (or an undo: `undoes` is the call it undid)."""

    session_id: str
    call_id: str
    at: float
    workspace: str
    changes: ChangeSet
    undone: bool
    undoable: bool
    undoes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "call_id": self.call_id, "at": self.at,
                "workspace": self.workspace, "changes": self.changes.to_json(),
                "undone": self.undone, "undoable": self.undoable, "undoes": self.undoes}


@dataclass(frozen=True)
class Blocked:
    """A path that stops an undo: what it is now is not what the step left."""

    path: str
    reason: str
    by_call: str = ""
    """The later call that changed it, when one did."""


@dataclass(frozen=True)
class UndoResult:
    """What an undo (or a rewind) did: the calls undone and the paths put back, or why it
    stopped (`stopped_at`: the call that could not be undone; `blocked` its paths, or
    `refused` a reason that is not about one path)."""

    undone: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()
    blocked: tuple[Blocked, ...] = ()
    refused: str = ""
    stopped_at: str = ""

    @property
    def ok(self) -> bool:
        return not self.blocked and not self.refused

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "undone": list(self.undone), "restored": list(self.restored),
                "blocked": [{"path": b.path, "reason": b.reason, "by_call": b.by_call}
                            for b in self.blocked],
                "refused": self.refused, "stopped_at": self.stopped_at}

    def then(self, other: UndoResult) -> UndoResult:
        return UndoResult(self.undone + other.undone, self.restored + other.restored,
                          other.blocked, other.refused, other.stopped_at)


@dataclass(frozen=True)
class _Row:
    id: int
    session_id: str
    call_id: str
    at: float
    workspace: str
    changes: str
    undoes: int | None
    undone_by: int | None
    pruned: bool


_ROW_COLUMNS = "id, session_id, call_id, at, workspace, changes, undoes, undone_by, pruned"


def _row(values: Sequence[Any]) -> _Row:
    return _Row(values[0], values[1], values[2], values[3], os.fsdecode(values[4]),
                values[5], values[6], values[7], bool(values[8]))


def _state(kind: str, mode: int, digest: bytes) -> State:
    if kind == "absent":
        return ABSENT
    return State(kind, mode, os.fsdecode(digest))  # type: ignore[arg-type]


class Checkpoints:
    """The checkpoint index of one data folder (see the module's text). Thread-safe."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        root.mkdir(parents=True, exist_ok=True)
        self.blobs = Blobs(root / "blobs")
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(root / "index.sqlite3", isolation_level=None,
                                       timeout=30, check_same_thread=False)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise CheckpointError(f"{root / 'index.sqlite3'} was written by a newer "
                                      f"Reins (schema {version}); this one knows "
                                      f"{SCHEMA_VERSION}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise CheckpointError(f"the checkpoint index {root / 'index.sqlite3'} cannot "
                                  f"be used: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Checkpoints:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def begin(self, session_id: str, call_id: str, workspace: Path) -> Recorder:
        """A recorder of one step of `call_id` in `workspace` (keep paths, then commit)."""
        return Recorder(self, session_id, call_id, workspace, None)

    # reading

    def _rows(self, where: str, args: Sequence[Any]) -> list[_Row]:
        with self._lock:
            found = self._db.execute(f"SELECT {_ROW_COLUMNS} FROM steps WHERE {where}",
                                     tuple(args)).fetchall()
        return [_row(r) for r in found]

    def _call_of(self, step_id: int | None) -> str:
        if step_id is None:
            return ""
        rows = self._rows("id = ?", (step_id,))
        return rows[0].call_id if rows else ""

    def _step(self, row: _Row) -> Step:
        return Step(session_id=row.session_id, call_id=row.call_id, at=row.at,
                    workspace=row.workspace,
                    changes=ChangeSet.from_json(json.loads(row.changes)),
                    undone=row.undone_by is not None,
                    undoable=(row.undoes is None and row.undone_by is None
                              and not row.pruned),
                    undoes=self._call_of(row.undoes))

    def steps(self, session_id: str) -> list[Step]:
        """The session's steps, oldest first (undo steps included, `undoes` set)."""
        return [self._step(r) for r in self._rows("session_id = ? ORDER BY id", (session_id,))]

    def latest_undoable(self, session_id: str) -> Step | None:
        """The newest step of the session not undone yet (not an undo): what `reins undo`
        without a call undoes; after that undo, the one before. It may be no longer
        undoable (its bytes dropped): then undoing it says so."""
        rows = self._rows("session_id = ? AND undoes IS NULL AND undone_by IS NULL "
                          "ORDER BY id DESC LIMIT 1", (session_id,))
        return self._step(rows[0]) if rows else None

    def latest_session(self) -> str | None:
        """The session of the newest step, None when there is none."""
        rows = self._rows("1 ORDER BY id DESC LIMIT 1", ())
        return rows[0].session_id if rows else None

    def _entries(self, step_id: int) -> dict[str, tuple[State, State]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, before_kind, before_mode, before_digest, after_kind, after_mode,"
                " after_digest FROM entries WHERE step_id = ?", (step_id,)).fetchall()
        return {os.fsdecode(r[0]): (_state(r[1], r[2], r[3]), _state(r[4], r[5], r[6]))
                for r in rows}

    def diff(self, session_id: str, call_id: str) -> str:
        """What the call's steps changed, as a bounded unified diff (kernel.transaction.diff):
        the bytes before from the kept blobs, the bytes after from the blobs or, while the
        file is still what the step left, the workspace. A secret location's content is
        never shown; bytes no longer kept are said to be gone."""
        rows = self._rows("session_id = ? AND call_id = ? AND undoes IS NULL ORDER BY id",
                          (session_id, call_id))
        if not rows:
            raise CheckpointError(f"session {session_id!r} has no step of call {call_id!r}")
        lines: list[str] = []
        for row in rows:
            entries = self._entries(row.id)
            for change in ChangeSet.from_json(json.loads(row.changes)):
                lines.append(f"# {change.path}: {change.kind}"
                             + (f" (from {change.previous})" if change.previous else ""))
                lines += self._change_lines(row, change, entries)
        return bounded(lines)

    def _change_lines(self, row: _Row, change: Change,
                      entries: dict[str, tuple[State, State]]) -> list[str]:
        if is_secret(change):
            return [SECRET_NOTE]
        after = entries.get(change.path, (ABSENT, ABSENT))[1]
        if after.kind == "link":
            return [f"link → {after.digest}"]
        if change.entry == "dir" or after.kind == "dir":
            return []
        before = entries.get(change.previous or change.path, (ABSENT, ABSENT))[0]
        return change_diff(change, self._text(row, "", before), self._text(row, change.path,
                                                                           after))

    def _text(self, row: _Row, path: str, state: State) -> str | None:
        """The text of a file state: '' when absent, from its blob, else (`path` given) from
        the workspace while the file there has those bytes; None when binary, too large or
        no longer kept."""
        if state.kind == "absent":
            return ""
        if state.kind != "file":
            return None
        try:
            fd = self.blobs.open(state.digest)
        except FileNotFoundError:
            fd = self._live(row, path, state) if path else -1
        if fd < 0:
            return None
        try:
            return shown_text(os.pread(fd, MAX_FILE_BYTES + 1, 0))
        finally:
            os.close(fd)

    def _live(self, row: _Row, path: str, state: State) -> int:
        """A read descriptor of the workspace's `path` when it holds `state`'s bytes, else -1."""
        try:
            ws_fd = os.open(row.workspace, DIR_FLAGS)
        except OSError:
            return -1
        try:
            with parent_of(ws_fd, path) as (dir_fd, name):
                fd = open_file(dir_fd, name)
        except OSError:
            return -1
        finally:
            os.close(ws_fd)
        if os.fstat(fd).st_size <= MAX_FILE_BYTES and hash_fd(fd) == state.digest:
            return fd
        os.close(fd)
        return -1

    # undoing

    def undo(self, session_id: str, call_id: str) -> UndoResult:
        """Undo the call's steps not undone yet (newest first), each only if every path is
        still what it left (see the module's text)."""
        rows = self._rows("session_id = ? AND call_id = ? AND undoes IS NULL ORDER BY id DESC",
                          (session_id, call_id))
        if not rows:
            raise CheckpointError(f"session {session_id!r} has no step of call {call_id!r}")
        pending = [r for r in rows if r.undone_by is None]
        if not pending:
            return UndoResult(refused=f"call {call_id} is already undone", stopped_at=call_id)
        return self._undo_rows(pending)

    def rewind(self, session_id: str, call_id: str) -> UndoResult:
        """Undo every step of the session after `call_id`'s (newest first), stopping at the
        first that cannot be undone, said as `undo` says it."""
        rows = self._rows("session_id = ? AND call_id = ? AND undoes IS NULL ORDER BY id DESC",
                          (session_id, call_id))
        if not rows:
            raise CheckpointError(f"session {session_id!r} has no step of call {call_id!r}")
        later = self._rows("session_id = ? AND id > ? AND undoes IS NULL AND undone_by IS NULL"
                           " ORDER BY id DESC", (session_id, rows[0].id))
        return self._undo_rows(later)

    def _undo_rows(self, rows: Iterable[_Row]) -> UndoResult:
        result = UndoResult()
        for row in rows:
            result = result.then(self._undo_one(row))
            if not result.ok:
                break
        return result

    def _undo_one(self, row: _Row) -> UndoResult:
        if row.pruned:
            return UndoResult(refused=f"call {row.call_id} can no longer be undone: its kept "
                              f"bytes were dropped to stay under checkpoints.max_bytes",
                              stopped_at=row.call_id)
        entries = self._entries(row.id)
        refusal = self._cannot_restore(row, entries)
        if refusal:
            return UndoResult(refused=refusal, stopped_at=row.call_id)
        try:
            ws_fd = os.open(row.workspace, DIR_FLAGS)
        except OSError as exc:
            return UndoResult(refused=f"the workspace {row.workspace} cannot be opened: "
                              f"{exc.strerror}", stopped_at=row.call_id)
        try:
            blocked = self._blocked(row, entries, ws_fd)
            if blocked:
                return UndoResult(blocked=tuple(blocked), stopped_at=row.call_id)
            recorder = Recorder(self, row.session_id, row.call_id, Path(row.workspace), row.id)
            try:
                recorder.keep_all(entries)
                restore(ws_fd, {p: before for p, (before, _after) in entries.items()},
                        self.blobs)
            except OSError as exc:
                recorder.rollback()
                return UndoResult(refused=f"call {row.call_id} could not be undone ({exc}); "
                                  f"nothing was changed", stopped_at=row.call_id)
            original = ChangeSet.from_json(json.loads(row.changes))
            recorder.commit(ChangeSet(tuple(_inverse(c, entries) for c in original)))
        finally:
            os.close(ws_fd)
        return UndoResult(undone=(row.call_id,), restored=tuple(sorted(entries)))

    def _cannot_restore(self, row: _Row, entries: dict[str, tuple[State, State]]) -> str:
        for path, (before, _after) in sorted(entries.items()):
            if before.kind == "other":
                return f"{path} was a socket, FIFO or device, which cannot be put back"
            if before.kind == "file" and not self.blobs.has(before.digest):
                return (f"call {row.call_id} can no longer be undone: the kept bytes of "
                        f"{path} are gone")
        return ""

    def _blocked(self, row: _Row, entries: dict[str, tuple[State, State]],
                 ws_fd: int) -> list[Blocked]:
        blocked = []
        with Folders(ws_fd) as folders:
            now_states = {}
            for path in entries:
                try:
                    now_states[path] = folders.state(path)
                except OSError:
                    blocked.append(Blocked(path, "a folder on the way is now a link or a file"))
        for path, (before, after) in sorted(entries.items()):
            if path not in now_states:
                continue
            now = now_states[path]
            if now != after:
                blocked.append(self._who(row, path, now))
            elif after.kind == "dir" and before.kind != "dir":
                blocked.extend(self._who(row, f"{path}/{name}", None)
                               for name in sorted(_listdir(ws_fd, path))
                               if f"{path}/{name}" not in entries)
        return blocked

    def _who(self, row: _Row, path: str, now: State | None) -> Blocked:
        """Who changed `path` after the step `row`: the newest later call whose step left
        it as it is now (`now` None: that touched it at all); failing a call, the newest
        undo that did; else someone outside Reins."""
        with self._lock:
            later = self._db.execute(
                "SELECT s.call_id, s.undoes, e.after_kind, e.after_mode, e.after_digest "
                "FROM entries e JOIN steps s ON s.id = e.step_id WHERE e.path = ? AND s.id > ?"
                " AND s.workspace = ? ORDER BY s.id DESC",
                (os.fsencode(path), row.id, os.fsencode(row.workspace))).fetchall()
        matching = [r for r in later if now is None or _state(*r[2:]) == now]
        for call_id, undoes, *_after in matching:
            if undoes is None:
                return Blocked(path, f"changed by call {call_id}", call_id)
        if matching:
            call_id, undoes = matching[0][:2]
            return Blocked(path, f"changed by the undo of call {self._call_of(undoes)}",
                           call_id)
        return Blocked(path, OUTSIDE)

    # recording (used by Recorder)

    def _record(self, recorder: Recorder, changes: ChangeSet,
                entries: dict[str, tuple[State, State]], sizes: dict[str, int]) -> Step:
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO steps(session_id, call_id, at, workspace, changes, undoes) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (recorder.session_id, recorder.call_id, time.time(),
                 os.fsencode(str(recorder.workspace)), json.dumps(changes.to_json()),
                 recorder.undoes))
            step_id = cursor.lastrowid
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(step_id, os.fsencode(path), b.kind, b.mode, os.fsencode(b.digest), a.kind,
                  a.mode, os.fsencode(a.digest)) for path, (b, a) in entries.items()])
            db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", sizes.items())
            if recorder.undoes is not None:
                db.execute("UPDATE steps SET undone_by = ? WHERE id = ?",
                           (step_id, recorder.undoes))
            dropped = self._prune(db)
        for digest in dropped:
            self.blobs.drop(digest)
        return self._step(self._rows("id = ?", (step_id,))[0])

    def _prune(self, db: sqlite3.Connection) -> list[str]:
        """Drop the bytes of the oldest steps until the rest fit in max_bytes (inside the
        caller's transaction); the digests whose files can go."""
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
        dropped: list[str] = []
        while total > self.max_bytes:
            oldest = db.execute(
                "SELECT id FROM steps WHERE pruned = 0 AND EXISTS (SELECT 1 FROM entries "
                "WHERE step_id = steps.id AND before_kind = 'file') ORDER BY id LIMIT 1"
            ).fetchone()
            if oldest is None:
                break
            db.execute("UPDATE steps SET pruned = 1 WHERE id = ?", oldest)
            for (digest,) in db.execute(
                    "SELECT DISTINCT before_digest FROM entries WHERE step_id = ? AND "
                    "before_kind = 'file'", oldest).fetchall():
                live = db.execute(
                    "SELECT 1 FROM entries e JOIN steps s ON s.id = e.step_id WHERE "
                    "e.before_kind = 'file' AND e.before_digest = ? AND s.pruned = 0 LIMIT 1",
                    (digest,)).fetchone()
                if live is None:
                    name = os.fsdecode(digest)
                    size = db.execute("SELECT size FROM blobs WHERE digest = ?",
                                      (name,)).fetchone()
                    db.execute("DELETE FROM blobs WHERE digest = ?", (name,))
                    total -= size[0] if size else 0
                    dropped.append(name)
        return dropped

    def _known_blob(self, digest: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM blobs WHERE digest = ?",
                                    (digest,)).fetchone() is not None


def _listdir(root_fd: int, path: str) -> list[str]:
    fd = open_dir(root_fd, path)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def _inverse(change: Change, entries: dict[str, tuple[State, State]]) -> Change:
    """What undoing `change` does, as a change (the undo step's record)."""
    before = entries.get(change.path, (ABSENT, ABSENT))[0]
    if change.kind == "renamed":
        return Change(change.previous, "renamed", "file", previous=change.path,
                      executable=change.executable)
    if before.kind == "absent":
        return Change(change.path, "deleted", change.entry, removed=change.added,
                      binary=change.binary)
    entry: EntryType = before.kind
    kind: ChangeKind = change.kind
    if change.kind == "deleted":
        kind = "link" if entry == "link" else "created"
    return Change(change.path, kind, entry, added=change.removed, removed=change.added,
                  binary=change.binary,
                  executable=before.kind == "file" and bool(before.mode & 0o100))


@dataclass
class Recorder:
    """Keeps what paths of one workspace are before a step changes them (`keep`), then
    records the step (`commit`) or puts them all back (`rollback`)."""

    owner: Checkpoints
    session_id: str
    call_id: str
    workspace: Path
    undoes: int | None
    kept: dict[str, State] = field(default_factory=dict)
    _sizes: dict[str, int] = field(default_factory=dict)
    _fd: int = -1

    def _root(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.workspace, DIR_FLAGS)
        return self._fd

    def keep(self, rel_path: str, folders: Folders | None = None) -> None:
        """Keep what `rel_path` is now (bytes, mode, link text or absence); call before
        changing it. Keeping a path twice keeps the first. The missing folders above an
        absent path are kept as absent too (a write that makes them is undone whole)."""
        if rel_path in self.kept:
            return
        self.kept[rel_path] = self._snapshot(rel_path, folders)
        if self.kept[rel_path].kind == "absent":
            for parent in parent_paths(rel_path):
                if parent in self.kept or self._snapshot(parent, folders).kind != "absent":
                    break
                self.kept[parent] = ABSENT

    def keep_all(self, paths: Iterable[str], *, durable: bool = False) -> None:
        """`keep` each path; `durable`: the kept bytes are on disk when this returns."""
        with Folders(self._root()) as folders:
            for path in paths:
                self.keep(path, folders)
        if durable and self._sizes:
            self.owner.blobs.sync()

    def _snapshot(self, rel: str, folders: Folders | None) -> State:
        if folders is None:
            return state_at(self._root(), rel, self._store)
        return folders.state(rel, self._store)

    def _store(self, fd: int) -> str:
        digest, size = self.owner.blobs.put_fd(fd)
        self._sizes[digest] = size
        return digest

    def commit(self, changes: ChangeSet) -> Step:
        """Record the step: `changes`, and for each kept path what it was and what it is
        now."""
        root = self._root()
        try:
            with Folders(root) as folders:
                entries = {path: (before, folders.state(path))
                           for path, before in self.kept.items()}
            return self.owner._record(self, changes, entries, self._sizes)
        finally:
            self.close()

    def rollback(self) -> None:
        """Put every kept path back as it was kept (a failed apply), and forget them."""
        try:
            restore(self._root(), self.kept, self.owner.blobs)
        finally:
            for digest in self._sizes:
                if not self.owner._known_blob(digest):
                    self.owner.blobs.drop(digest)
            self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
