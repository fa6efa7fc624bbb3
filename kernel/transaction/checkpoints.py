"""Checkpoints: every applied change set can be undone.

One per data folder, `<data>/checkpoints/`: an SQLite index (`index.sqlite3`) of steps and,
per step and path, what the path was before (kind, mode, sha256 of its bytes or a link's
target) and what the step left; the bytes themselves in a content-addressed store
(kernel.transaction.blobs). A `Recorder` keeps each path before it is changed
(`keep`), and `commit` makes the step. Undoing a step puts every path back only if each is
still what the step left; otherwise nothing changes and the result names each path and
what changed it (a later call, or "changed outside Reins"). An undo is itself a step
(`Step.undoes`), so its own changes are on record, but it is never undone in turn.

Small kept bytes (up to `SMALL_BYTES`) are rows of the step that keeps them (keyed by step,
so each step's rows are written at the end of the table), in the step's own transaction;
larger ones are content-addressed files, each counting the steps that keep it. The kept
bytes are bounded (`max_bytes`, a running total): after each commit the oldest steps drop
their bytes until the rest fit; such a step is listed as no longer undoable, never half
undone.

A command's step is written before the workspace is touched (`Recorder.pending`: its
entries with what each path was and what it is to become, its kept bytes, marked
`applying` by this process), in one durable commit, and marked `done` after. A crash
leaves one of: nothing recorded and nothing changed (before that commit); an `applying`
step with the workspace partly or wholly changed (after it), which the next `Checkpoints`
opened on the folder rolls back (`recover`: every path that is what the step made it is
put back; a path someone changed since is left and named); or a done step.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.sandbox.proctree import ProcId, alive, proc_id
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
    READ_FLAGS,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    Folders,
    State,
    fs_bytes,
    fs_text,
    hash_fd,
    open_dir,
    open_file,
    parent_of,
    rename2,
    split,
    state_at,
)
from kernel.transaction.restore import Fetch, restore
from kernel.transaction.seen import Read, SeenFiles
from kernel.transaction.trash import Trash

DEFAULT_MAX_BYTES = DEFAULT_CHECKPOINT_BYTES
"""The `checkpoints.max_bytes` setting when it is not set (kernel.setting_records)."""
OUTSIDE = "changed outside Reins"
SCHEMA_VERSION = 5
SMALL_BYTES = 64 << 10
"""Kept bytes up to this size are rows of the index, larger ones files."""
SMALL_HELD = 32 << 20
"""At most this many small kept bytes are held in memory for one step; past it, files."""
STASHES_KEPT = 16
"""The newest steps that keep the upper layer their apply swapped the workspace's old files
into (`<checkpoints>/stash/<step>`): their undo moves those files back (each checked
against the kept digest and mode) instead of writing new ones. Older stashes are freed."""
_MIGRATIONS = {
    2: ("ALTER TABLE steps ADD COLUMN state TEXT NOT NULL DEFAULT 'done'",
        "ALTER TABLE steps ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE blobs ADD COLUMN data BLOB"),
    3: ("DROP INDEX IF EXISTS entries_path",),
    4: ("ALTER TABLE blobs ADD COLUMN refs INTEGER NOT NULL DEFAULT 0",
        "UPDATE blobs SET refs = (SELECT COUNT(DISTINCT e.step_id) FROM entries e JOIN steps s"
        " ON s.id = e.step_id WHERE s.pruned = 0 AND e.before_kind = 'file' AND "
        "e.before_digest = CAST(blobs.digest AS BLOB))",
        "DROP INDEX IF EXISTS entries_blob",
        "CREATE TABLE totals (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO totals VALUES ('kept_bytes', (SELECT COALESCE(SUM(size), 0) FROM blobs))",
        "CREATE TRIGGER blobs_in AFTER INSERT ON blobs BEGIN UPDATE totals SET value = "
        "value + NEW.size WHERE name = 'kept_bytes'; END",
        "CREATE TRIGGER blobs_out AFTER DELETE ON blobs BEGIN UPDATE totals SET value = "
        "value - OLD.size WHERE name = 'kept_bytes'; END"),
    5: ("CREATE TABLE kept (step_id INTEGER NOT NULL, digest TEXT NOT NULL, data BLOB NOT "
        "NULL, PRIMARY KEY (step_id, digest)) WITHOUT ROWID",
        "CREATE TRIGGER kept_in AFTER INSERT ON kept BEGIN UPDATE totals SET value = "
        "value + length(NEW.data) WHERE name = 'kept_bytes'; END",
        "CREATE TRIGGER kept_out AFTER DELETE ON kept BEGIN UPDATE totals SET value = "
        "value - length(OLD.data) WHERE name = 'kept_bytes'; END",
        "INSERT OR IGNORE INTO kept SELECT DISTINCT e.step_id, b.digest, b.data FROM entries e"
        " JOIN steps s ON s.id = e.step_id JOIN blobs b ON b.digest = "
        "CAST(e.before_digest AS TEXT) WHERE e.before_kind = 'file' AND s.pruned = 0 AND "
        "b.data IS NOT NULL",
        "DELETE FROM blobs WHERE data IS NOT NULL"),
}
"""Each schema version's steps from the one before (v2: steps written before they are
applied, small kept bytes in the index; v3: no index of entries by path, which every step's
write paid for and only an undo that is refused read; v4: each kept digest counts the steps
not pruned that keep it (`refs`) and the kept bytes are a running total, instead of an
index of entries by digest and a sum over every kept byte's row at each commit: with 40
steps of 1,000 files those made a step's write three times slower than the first; v5: small
kept bytes are rows of their step (`kept`, keyed by step and digest: each step's rows are
written at the end of the table), the content-addressed `blobs` only the larger ones kept as
files: a table keyed by digest alone is written at random, and each step's write grew with
it: 4 -> 23 ms for 1,000 rows over 60 steps, against 3-4 ms throughout keyed by step)."""
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
    return State(kind, mode, fs_text(digest))  # type: ignore[arg-type]


class Checkpoints:
    """The checkpoint index of one data folder (see the module's text). Thread-safe."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        root.mkdir(parents=True, exist_ok=True)
        self.blobs = Blobs(root / "blobs")
        self.trash = Trash(root / "trash")
        """What an apply or an undo replaced or removed, freed in a thread."""
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
            self._db.execute("PRAGMA synchronous=FULL")  # a step is on disk once committed
            self._db.executescript(_SCHEMA)
            self._migrate(version)
        except sqlite3.Error as exc:
            raise CheckpointError(f"the checkpoint index {root / 'index.sqlite3'} cannot "
                                  f"be used: {exc}") from exc
        self.recovered = self.recover()
        self.trash.empty_later()  # what a process that ended left there
        """What `recover` did when this object was made."""

    def _migrate(self, version: int) -> None:
        """Bring a fresh or older index to SCHEMA_VERSION, each version in one transaction."""
        for target in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            with self._write() as db:
                for statement in _MIGRATIONS[target]:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version={target}")

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self.trash.close()

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
            found = self._db.execute(f"SELECT {_ROW_COLUMNS} FROM steps WHERE state = 'done'"
                                     f" AND {where}", tuple(args)).fetchall()
        return [_row(r) for r in found]

    def _call_of(self, step_id: int | None) -> str:
        if step_id is None:
            return ""
        rows = self._rows("id = ?", (step_id,))
        return rows[0].call_id if rows else ""

    def _step(self, row: _Row, changes: ChangeSet | None = None) -> Step:
        """The step of `row` (its `changes` when the caller has them, else read)."""
        return Step(session_id=row.session_id, call_id=row.call_id, at=row.at,
                    workspace=row.workspace,
                    changes=changes if changes is not None
                    else ChangeSet.from_json(json.loads(row.changes)),
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
            before = self._fetch(row.id, (b.digest for b, _a in entries.values()
                                          if b.kind == "file"))
            after = self._fetch(row.id, (a.digest for _b, a in entries.values()
                                         if a.kind == "file"), later=True)
            for change in ChangeSet.from_json(json.loads(row.changes)):
                lines.append(f"# {change.path}: {change.kind}"
                             + (f" (from {change.previous})" if change.previous else ""))
                lines += self._change_lines(row, change, entries, before, after)
        return bounded(lines)

    def _change_lines(self, row: _Row, change: Change, entries: dict[str, tuple[State, State]],
                      kept_before: Fetch, kept_after: Fetch) -> list[str]:
        if is_secret(change):
            return [SECRET_NOTE]
        after = entries.get(change.path, (ABSENT, ABSENT))[1]
        if after.kind == "link":
            return [f"link → {after.digest}"]
        if change.entry == "dir" or after.kind == "dir":
            return []
        before = entries.get(change.previous or change.path, (ABSENT, ABSENT))[0]
        return change_diff(change, self._text(row, "", before, kept_before),
                           self._text(row, change.path, after, kept_after))

    def _text(self, row: _Row, path: str, state: State, fetch: Fetch) -> str | None:
        """The text of a file state: '' when absent, from its kept bytes, else (`path`
        given) from the workspace while the file there has those bytes; None when binary,
        too large or no longer kept."""
        if state.kind == "absent":
            return ""
        if state.kind != "file":
            return None
        kept = fetch(state.digest)
        if isinstance(kept, bytes):
            return shown_text(kept[:MAX_FILE_BYTES + 1])
        fd = kept if kept >= 0 else self._live(row, path, state) if path else -1
        if fd < 0:
            return None
        try:
            return shown_text(os.pread(fd, MAX_FILE_BYTES + 1, 0))
        finally:
            os.close(fd)

    def _small(self, step_id: int, digests: Iterable[str], later: bool = False
               ) -> dict[str, bytes]:
        """The bytes of those of `digests` the index keeps as rows of the step `step_id`
        (`later`: of any step after it, where what it left was kept again)."""
        wanted = sorted(set(digests))
        small: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                batch = wanted[start:start + 500]
                small.update(self._db.execute(
                    f"SELECT digest, data FROM kept WHERE step_id {'>' if later else '='} ? "
                    f"AND digest IN ({','.join('?' * len(batch))})",
                    (step_id, *batch)).fetchall())
        return small

    def _fetch(self, step_id: int, digests: Iterable[str], later: bool = False) -> Fetch:
        """The bytes the step `step_id` kept of `digests` (`later`: that a later step kept):
        the bytes, or a read descriptor of the blob file (-1 when neither is kept any more).
        Those in the index are read together, when the first is asked for (an undo that
        moves every file back from its stash asks none)."""
        wanted = list(digests)
        small: dict[str, bytes] = {}
        loaded = False

        def fetch(digest: str) -> bytes | int:
            nonlocal loaded
            if not loaded:
                small.update(self._small(step_id, wanted, later))
                loaded = True
            if digest in small:
                return small[digest]
            try:
                return self.blobs.open(digest)
            except FileNotFoundError:
                return -1

        return fetch

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
        stash = self._open_stash(row.id)
        try:
            recorder = Recorder(self, row.session_id, row.call_id, Path(row.workspace), row.id)
            try:
                blocked = self._blocked(row, entries, ws_fd, recorder)
            except OSError as exc:
                recorder.discard()
                return UndoResult(refused=f"call {row.call_id} could not be undone ({exc}); "
                                  f"nothing was changed", stopped_at=row.call_id)
            if blocked:
                recorder.discard()
                return UndoResult(blocked=tuple(blocked), stopped_at=row.call_id)
            try:
                recorder.pending({p: before for p, (before, _after) in entries.items()})
                with Folders(stash) as stash_folders:
                    restore(ws_fd, {p: before for p, (before, _after) in entries.items()},
                            self._fetch(row.id, (b.digest for b, _a in entries.values()
                                                 if b.kind == "file")),
                            self.trash.take,
                            functools.partial(_reuse, stash_folders) if stash >= 0 else None,
                            current=recorder.kept)
            except OSError as exc:
                recorder.rollback()
                return UndoResult(refused=f"call {row.call_id} could not be undone ({exc}); "
                                  f"nothing was changed", stopped_at=row.call_id)
            original = ChangeSet.from_json(json.loads(row.changes))
            recorder.commit(ChangeSet(tuple(_inverse(c, entries) for c in original)))
        finally:
            os.close(ws_fd)
            if stash >= 0:
                os.close(stash)
                self._drop_stashes({row.id})
            self.trash.empty_later()
        return UndoResult(undone=(row.call_id,), restored=tuple(sorted(entries)))

    def _cannot_restore(self, row: _Row, entries: dict[str, tuple[State, State]]) -> str:
        with self._lock:  # the kept files whose bytes are not rows of the index
            elsewhere = {os.fsdecode(digest) for (digest,) in self._db.execute(
                "SELECT before_digest FROM entries e WHERE step_id = ? AND before_kind = "
                "'file' AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.step_id = e.step_id AND "
                "k.digest = CAST(e.before_digest AS TEXT))", (row.id,))}
        for path, (before, _after) in sorted(entries.items()):
            if before.kind == "other":
                return f"{path} was a socket, FIFO or device, which cannot be put back"
            if before.kind == "file" and before.digest in elsewhere and not self.blobs.has(
                    before.digest):
                return (f"call {row.call_id} can no longer be undone: the kept bytes of "
                        f"{path} are gone")
        return ""

    def _blocked(self, row: _Row, entries: dict[str, tuple[State, State]], ws_fd: int,
                 recorder: Recorder) -> list[Blocked]:
        """The paths that stop undoing `row`; what each path is now is kept by `recorder`
        on the way (one read of the workspace serves both)."""
        blocked = []
        with Folders(ws_fd) as folders:
            now_states = {}
            for path in entries:
                try:
                    recorder.keep(path, folders)
                    now_states[path] = recorder.kept[path]
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    blocked.append(Blocked(path, "a folder on the way is now a link or a file"))
        stopped: list[tuple[str, State | None]] = []
        for path, (before, after) in sorted(entries.items()):
            if path not in now_states:
                continue
            now = now_states[path]
            if now != after:
                stopped.append((path, now))
            elif after.kind == "dir" and before.kind != "dir":
                stopped.extend((f"{path}/{name}", None) for name in sorted(_listdir(ws_fd, path))
                               if f"{path}/{name}" not in entries)
        if stopped:
            later = self._later(row)
            blocked.extend(self._who(later.get(path, []), path, now) for path, now in stopped)
        return blocked

    def _later(self, row: _Row) -> dict[str, list[tuple[Any, ...]]]:
        """What the done steps after `row` in its workspace left at each path they touched,
        newest first: (call_id, undoes, after kind, mode, digest). One read for all the
        paths an undo stops at (no index by path: it would cost every step's write)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT e.path, s.call_id, s.undoes, e.after_kind, e.after_mode, "
                "e.after_digest FROM steps s JOIN entries e ON e.step_id = s.id WHERE "
                "s.id > ? AND s.workspace = ? AND s.state = 'done' ORDER BY s.id DESC",
                (row.id, os.fsencode(row.workspace))).fetchall()
        later: dict[str, list[tuple[Any, ...]]] = {}
        for path, *rest in rows:
            later.setdefault(os.fsdecode(path), []).append(tuple(rest))
        return later

    def _who(self, later: list[tuple[Any, ...]], path: str, now: State | None) -> Blocked:
        """Who changed `path` after the step whose `later` steps' entries of it are given:
        the newest later call whose step left it as it is now (`now` None: that touched it
        at all); failing a call, the newest undo that did; else someone outside Reins."""
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

    def _insert(self, db: sqlite3.Connection, recorder: Recorder, changes: ChangeSet,
                entries: dict[str, tuple[State, State]], state: str) -> int:
        """The step's row, its entries and the bytes it keeps (inside `db`'s transaction)."""
        cursor = db.execute(
            "INSERT INTO steps(session_id, call_id, at, workspace, changes, undoes, state, "
            "owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (recorder.session_id, recorder.call_id, time.time(),
             os.fsencode(str(recorder.workspace)), json.dumps(changes.to_json()),
             recorder.undoes, state, _owner() if state == "applying" else ""))
        step_id = cursor.lastrowid
        assert step_id is not None
        db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       [(step_id, fs_bytes(path), *_columns(b), *_columns(a))
                        for path, (b, a) in entries.items()])
        db.executemany("INSERT OR IGNORE INTO kept VALUES (?, ?, ?)",
                       [(step_id, digest, data) for digest, data in recorder.small.items()])
        db.executemany("INSERT INTO blobs(digest, size, refs) VALUES (?, ?, 1) ON CONFLICT"
                       "(digest) DO UPDATE SET refs = refs + 1",
                       [(digest, size) for digest, size in recorder.sizes.items()
                        if digest not in recorder.small])
        return step_id

    def _pending(self, recorder: Recorder, entries: dict[str, tuple[State, State]]) -> int:
        """Write the step as `applying` (see the module's text); its id."""
        with self._write() as db:
            return self._insert(db, recorder, ChangeSet(()), entries, "applying")

    def _record(self, recorder: Recorder, changes: ChangeSet,
                entries: dict[str, tuple[State, State]]) -> Step:
        with self._write() as db:
            if recorder.step_id is None:
                step_id = self._insert(db, recorder, changes, entries, "done")
            else:
                step_id = recorder.step_id
                db.execute("UPDATE steps SET state = 'done', owner = '', changes = ?, at = ? "
                           "WHERE id = ?", (json.dumps(changes.to_json()), time.time(), step_id))
                db.executemany(  # what `pending` did not write already
                    "UPDATE entries SET after_kind = ?, after_mode = ?, after_digest = ? "
                    "WHERE step_id = ? AND path = ?",
                    [(*_columns(a), step_id, fs_bytes(path))
                     for path, (_b, a) in entries.items() if recorder.intended(path) != a])
            if recorder.undoes is not None:
                db.execute("UPDATE steps SET undone_by = ? WHERE id = ?",
                           (step_id, recorder.undoes))
            dropped = self._prune(db)
        for digest in dropped:
            self.blobs.drop(digest)
        if recorder.stash_source is not None:
            self._keep_stash(step_id, recorder.stash_source)
        return self._step(self._rows("id = ?", (step_id,))[0], changes)

    def _open_stash(self, step_id: int) -> int:
        """A descriptor of the step's stash folder (-1 when it has none)."""
        try:
            return os.open(self.root / "stash" / str(step_id), DIR_FLAGS)
        except OSError:
            return -1

    def _keep_stash(self, step_id: int, upper: Path) -> None:
        """Keep `upper` as the step's stash (where it can be moved: the same file system,
        a folder its owner may move), and free all but the newest STASHES_KEPT."""
        stashes = self.root / "stash"
        stashes.mkdir(mode=0o700, exist_ok=True)
        with contextlib.suppress(OSError):
            os.rename(upper, stashes / str(step_id))
        kept = sorted((int(n) for n in os.listdir(stashes) if n.isdigit()), reverse=True)
        self._drop_stashes(set(kept[STASHES_KEPT:]))

    def _drop_stashes(self, step_ids: set[int]) -> None:
        if not step_ids:
            return
        fd = os.open(self.root / "stash", DIR_FLAGS)
        try:
            for step_id in step_ids:
                with contextlib.suppress(OSError):
                    self.trash.take(fd, str(step_id))
        finally:
            os.close(fd)
        self.trash.empty_later()

    def _forget(self, step_id: int) -> list[str]:
        """Remove a step that was never done, and the bytes only it kept; their digests."""
        with self._write() as db:
            pruned = db.execute("SELECT pruned FROM steps WHERE id = ?", (step_id,)).fetchone()
            unused = _release(db, step_id) if pruned == (0,) else []  # pruning released it
            db.execute("DELETE FROM entries WHERE step_id = ?", (step_id,))
            db.execute("DELETE FROM steps WHERE id = ?", (step_id,))
        return unused

    def recover(self) -> list[Blocked]:
        """Roll back every step left `applying` by a process that has ended (a crash):
        each path that is what the step made it is put back as it was; one that is
        neither that nor what it was (changed since) is left and named. The steps are
        then forgotten."""
        with self._lock:
            pending = self._db.execute(
                f"SELECT {_ROW_COLUMNS}, owner FROM steps WHERE state = 'applying' "
                "ORDER BY id DESC").fetchall()
        left: list[Blocked] = []
        for values in pending:
            if _owner_alive(values[-1]):
                continue
            row = _row(values[:-1])
            entries = self._entries(row.id)
            try:
                ws_fd = os.open(row.workspace, DIR_FLAGS)
            except OSError:
                continue
            try:
                with Folders(ws_fd) as folders:
                    now = {path: folders.state(path) for path in entries}
                back = {p: b for p, (b, a) in entries.items() if now[p] == a and a != b}
                left += [Blocked(p, OUTSIDE) for p, (b, a) in sorted(entries.items())
                         if now[p] not in (a, b)]
                restore(ws_fd, back, self._fetch(row.id, (b.digest for b in back.values()
                                                          if b.kind == "file")))
            except OSError:
                continue
            finally:
                os.close(ws_fd)
            for digest in self._forget(row.id):
                self.blobs.drop(digest)
        return left

    def _prune(self, db: sqlite3.Connection) -> list[str]:
        """Drop the bytes of the oldest steps until the rest fit in max_bytes (inside the
        caller's transaction); the digests whose files can go."""
        dropped: list[str] = []
        while _kept_bytes(db) > self.max_bytes:
            oldest = db.execute(
                "SELECT id FROM steps WHERE pruned = 0 AND EXISTS (SELECT 1 FROM entries "
                "WHERE step_id = steps.id AND before_kind = 'file') ORDER BY id LIMIT 1"
            ).fetchone()
            if oldest is None:
                break
            db.execute("UPDATE steps SET pruned = 1 WHERE id = ?", oldest)
            dropped += _release(db, oldest[0])
        return dropped

    def _known_blob(self, digest: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM blobs WHERE digest = ?",
                                    (digest,)).fetchone() is not None


def _kept_bytes(db: sqlite3.Connection) -> int:
    """The size of every kept byte (a running total the index's triggers keep)."""
    return int(db.execute("SELECT value FROM totals WHERE name = 'kept_bytes'").fetchone()[0])


def _release(db: sqlite3.Connection, step_id: int) -> list[str]:
    """The step `step_id` no longer keeps its bytes (pruned, or forgotten): its rows go, each
    of its blob files counts one step fewer, and those no step keeps any more are removed;
    their digests (inside the caller's transaction)."""
    db.execute("DELETE FROM kept WHERE step_id = ?", (step_id,))
    mine = ("SELECT DISTINCT CAST(before_digest AS TEXT) FROM entries WHERE step_id = ? AND "
            "before_kind = 'file'")
    db.execute(f"UPDATE blobs SET refs = refs - 1 WHERE digest IN ({mine})", (step_id,))
    unused = [digest for (digest,) in db.execute(
        f"SELECT digest FROM blobs WHERE refs <= 0 AND digest IN ({mine})", (step_id,))]
    db.executemany("DELETE FROM blobs WHERE digest = ?", [(d,) for d in unused])
    return unused


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


def _reuse(stash: Folders, dir_fd: int, name: str, path: str, want: State, there: bool
           ) -> bool:
    """Move the stash's file at `path` back to `name` in `dir_fd` when it holds exactly
    `want` (its digest and mode; never through a link); what was there (`there`: something
    that is not a folder, as the undo just read it; looked at again, since a folder made
    meanwhile must never be swapped into the stash) goes into the stash in its place.
    False when it cannot (then the caller writes the kept bytes)."""
    try:
        head, kept = split(path)
        folder = stash.open(head)
        fd = os.open(kept, READ_FLAGS, dir_fd=folder)
        try:
            st = os.fstat(fd)
            same = (stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == want.mode
                    and hash_fd(fd, st.st_size) == want.digest)
        finally:
            os.close(fd)
        if not same:
            return False
        if there and stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return False
        rename2(folder, kept, dir_fd, name, RENAME_EXCHANGE if there else RENAME_NOREPLACE)
    except OSError:
        return False
    return True


def _columns(state: State) -> tuple[str, int, bytes]:
    return state.kind, state.mode, fs_bytes(state.digest)


def _owner() -> str:
    """This process as `pid:start time` (a step it leaves `applying` is its own)."""
    me = proc_id(os.getpid())
    return f"{me.pid}:{me.start}" if me is not None else f"{os.getpid()}:0"


def _owner_alive(owner: str) -> bool:
    pid, _, start = owner.partition(":")
    try:
        return alive(ProcId(int(pid), int(start)))
    except ValueError:
        return False


@dataclass
class Recorder:
    """Keeps what paths of one workspace are before a step changes them (`keep`), then
    records the step (`commit`) or puts them all back (`rollback`). `pending` writes the
    step before the changes are made (see the module's text)."""

    owner: Checkpoints
    session_id: str
    call_id: str
    workspace: Path
    undoes: int | None
    kept: dict[str, State] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    """Every kept digest → its size."""
    small: dict[str, bytes] = field(default_factory=dict)
    """The kept bytes that go into the index."""
    step_id: int | None = None
    """The step's row once `pending` wrote it."""
    stash_source: Path | None = None
    """An upper layer to keep as the step's stash once it is committed (`stash`)."""
    _intended: dict[str, State] = field(default_factory=dict)
    _held: int = 0
    """The bytes in `small`."""
    _fd: int = -1

    def _root(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.workspace, DIR_FLAGS)
        return self._fd

    def keep(self, rel_path: str, folders: Folders | None = None, seen: SeenFiles | None = None,
             looked: Mapping[str, os.stat_result | OSError | None] | None = None) -> None:
        """Keep what `rel_path` is now (bytes, mode, link text or absence); call before
        changing it. Keeping a path twice keeps the first. The missing folders above an
        absent path are kept as absent too (a write that makes them is undone whole).
        `seen`: what was read of the workspace's files, taken where a file is still that."""
        if rel_path in self.kept:
            return
        self.kept[rel_path] = (self._known(rel_path, folders, seen, looked)
                               or self._snapshot(rel_path, folders))
        if self.kept[rel_path].kind == "absent":
            for parent in parent_paths(rel_path):
                if parent in self.kept or self._snapshot(parent, folders).kind != "absent":
                    break
                self.kept[parent] = ABSENT

    def keep_all(self, paths: Iterable[str], *, durable: bool = False,
                 seen: SeenFiles | None = None,
                 looked: Mapping[str, os.stat_result | OSError | None] | None = None) -> None:
        """`keep` each path; `durable`: the kept bytes are on disk when this returns.
        `looked`: each path's lstat, when the caller has just taken it (apply's check)."""
        with Folders(self._root()) as folders:
            for path in paths:
                self.keep(path, folders, seen, looked)
        if durable and len(self.sizes) > len(self.small):
            self.owner.blobs.sync()

    def _known(self, rel: str, folders: Folders | None, seen: SeenFiles | None,
               looked: Mapping[str, os.stat_result | OSError | None] | None) -> State | None:
        """The state of `rel` from `seen`, its small bytes kept, when the file is still
        what was read (kernel.transaction.seen); None: read it."""
        if seen is None or folders is None or rel not in seen.lower:
            return None
        st = looked.get(rel) if looked is not None and rel in looked else folders.lstat(rel)
        if not isinstance(st, os.stat_result):
            return None
        read: Read | None = seen.known("lower", rel, st)
        if read is None or read.data is None or self._held + len(read.data) > SMALL_HELD:
            return None
        digest = read.state.digest
        if digest not in self.small:
            self._held += len(read.data)
        self.small[digest] = read.data
        self.sizes[digest] = len(read.data)
        return read.state

    def _snapshot(self, rel: str, folders: Folders | None) -> State:
        if folders is None:
            return state_at(self._root(), rel, self._store)
        return folders.state(rel, self._store)

    def _store(self, fd: int) -> str:
        size = os.fstat(fd).st_size
        if size <= SMALL_BYTES and self._held + size <= SMALL_HELD:
            data = os.pread(fd, SMALL_BYTES + 1, 0)
            if len(data) <= SMALL_BYTES:
                digest = hashlib.sha256(data).hexdigest()
                if digest not in self.small:
                    self._held += len(data)
                self.small[digest] = data
                self.sizes[digest] = len(data)
                return digest
        digest, size = self.owner.blobs.put_fd(fd)
        self.sizes[digest] = size
        return digest

    def pending(self, intended: dict[str, State]) -> None:
        """Write the step, with what each kept path is to become (`intended`; those not
        given are taken as they are at `commit`), before the workspace is changed: one
        durable commit (see the module's text)."""
        self._intended = dict(intended)
        entries = {path: (before, self._intended.get(path, before))
                   for path, before in self.kept.items()}
        self.step_id = self.owner._pending(self, entries)

    def intended(self, path: str) -> State | None:
        """What `pending` was told `path` becomes (None: not told)."""
        return self._intended.get(path)

    def stash(self, upper: Path) -> None:
        """Keep the upper layer `upper`, into which an apply swapped the workspace's old
        files, as the step's stash when it is committed (see STASHES_KEPT)."""
        self.stash_source = upper

    def commit(self, changes: ChangeSet) -> Step:
        """Record the step: `changes`, and for each kept path what it was and what it is
        now (what `pending` was told it becomes, else read now)."""
        root = self._root()
        try:
            with Folders(root) as folders:
                entries = {path: (before, self._intended.get(path) or folders.state(path))
                           for path, before in self.kept.items()}
            return self.owner._record(self, changes, entries)
        finally:
            self.close()

    def rollback(self) -> None:
        """Put every kept path back as it was kept (a failed apply), and forget them (and
        the step, when `pending` wrote it)."""
        try:
            restore(self._root(), self.kept, self._fetch, self.owner.trash.take)
        finally:
            self.owner.trash.empty_later()
            if self.step_id is not None:
                self.owner._forget(self.step_id)
            self.discard()

    def discard(self) -> None:
        """Forget what was kept, with no step: the kept bytes no step holds are dropped."""
        try:
            for digest in self.sizes:
                if digest not in self.small and not self.owner._known_blob(digest):
                    self.owner.blobs.drop(digest)
        finally:
            self.close()

    def _fetch(self, digest: str) -> bytes | int:
        if digest in self.small:
            return self.small[digest]
        return self.owner.blobs.open(digest)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
