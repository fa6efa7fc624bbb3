"""The session store: one SQLite database (WAL) that loses nothing that was shown.

It holds the sessions (title, workspace, model, mode, run state), the exact message history
sent to the API, every stored event, the results of executed tool calls (the dispatcher's
`ResultLog`, so a call executed before a crash is never run twice) and the per-round trace.

Schema: `SCHEMA_VERSION` is read when the store opens; an older database is migrated step
by step (`MIGRATIONS`, each in one transaction), a newer one is refused with a message that
says so (StoreOpenError, as is a file that is not a Reins database or cannot be read).

Durability: every write is committed (WAL, `synchronous=FULL`, so fsynced) before the call
that made it returns (a call's progress line alone is committed without the fsync, and
replaces the call's previous one: see `submit_event`). `append_event` therefore returns
only once the event is on disk, and callers report an event (print it, send it to the UI)
only after that. `submit_event` is the pipelined form: it returns at once with a Future that
completes when the event is on disk, so a producer can keep going while the commit
happens, and the events it submits meanwhile share the next commit (the agent loop reports
each event from that Future).

Threads: the store is safe to use from any number of threads. All writes go through one
writer thread that commits whatever is queued at that moment in one transaction (group
commit): concurrent writers share one fsync, and each caller still waits for its own commit.
Each write runs inside its own savepoint, so a failing write raises in its caller only.
Reads use a separate connection. Tool outputs are never stored here as blobs: a stored
result holds only the preview the model saw and the path of the externalized output.

Text from a model or a tool cannot make a write fail: everything stored as JSON is written
with `kernel.events.json_text`, which writes lone surrogates (valid in a Python string,
unencodable as UTF-8, which SQLite requires) as `\\uXXXX` escapes that read back as the
same string — nothing is replaced or dropped. A session title (plain text, shown only) keeps
a lone surrogate as the visible text `\\udXXX` (`backslashreplace`).
"""

from __future__ import annotations

import enum
import json
import logging
import queue
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kernel.agent.runlock import RunLock, SessionLocked
from kernel.events import Event, ToolProgress, event_from_dict, json_text
from kernel.paths import check_session_id
from kernel.tools.spec import ErrorCode, ToolResult

T = TypeVar("T")
log = logging.getLogger(__name__)
_KEPT_TEXTS = 256
"""Event texts kept for `SessionStore.event_text` (a run's printer asks for each soon)."""

_BASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    workspace TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    run_state TEXT NOT NULL DEFAULT 'idle',
    run_info TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events(session_id, seq);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
);
CREATE TABLE IF NOT EXISTS tool_results (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    content TEXT NOT NULL,
    is_error INTEGER NOT NULL,
    error_code TEXT,
    duration_ms REAL NOT NULL,
    output_bytes INTEGER NOT NULL,
    externalized_path TEXT,
    PRIMARY KEY (session_id, call_id)
);
CREATE TABLE IF NOT EXISTS trace (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, pos)
);
"""
"""Schema version 1, as the first released store made it. Never edit it: a change of the
schema is a new entry of MIGRATIONS."""

MIGRATIONS: tuple[str, ...] = (
    # 1 -> 2: the call an event belongs to, so a call's progress row is found and replaced
    # (tool_progress is kept as the latest line per call, not one row per tick).
    "ALTER TABLE events ADD COLUMN call_id TEXT;"
    " CREATE INDEX events_by_call ON events(session_id, call_id, type);",
)
"""`MIGRATIONS[i]` takes a database from version i + 1 to i + 2 (SQL run in one transaction
with the version change). Adding a column is one entry: `"ALTER TABLE t ADD COLUMN c ..."`."""

SCHEMA_VERSION = 1 + len(MIGRATIONS)


class StoreOpenError(RuntimeError):
    """The session database cannot be used: unreadable, or made by a newer Reins."""


def _schema_version(conn: sqlite3.Connection, path: Path) -> int:
    """The database's schema version; 0 for a new, empty database (or one whose creation
    stopped before its version was written: the base schema is made idempotently)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        if tables - {"sqlite_sequence"}:
            raise StoreOpenError(
                f"{path} is an SQLite database that Reins did not make (tables: "
                f"{', '.join(sorted(tables))}). Move it aside to start with an empty one.")
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return 0
    try:
        version = int(row[0])
    except (TypeError, ValueError):
        version = 0
    if version < 1:
        raise StoreOpenError(
            f"the session database {path} has an unreadable schema version {row[0]!r}; it "
            f"is damaged. Move it aside to start with an empty one.")
    return version


def migrate(conn: sqlite3.Connection, path: Path) -> int:
    """Bring the database to SCHEMA_VERSION (creating it when new); the version it had.

    Each step runs in one IMMEDIATE transaction that re-reads the version first, so two
    processes opening an old database at once migrate it once. A database from a newer
    Reins is refused (StoreOpenError) and left untouched."""
    found = _schema_version(conn, path)
    if found > SCHEMA_VERSION:
        raise StoreOpenError(
            f"the session database {path} was made by a newer version of Reins (schema "
            f"version {found}; this version reads up to {SCHEMA_VERSION}). Update Reins to "
            f"open it, or move it aside to start with an empty one.")
    conn.execute("PRAGMA journal_mode=WAL")  # persistent: changes the file, so not before
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = _schema_version(conn, path)
            if version >= SCHEMA_VERSION:
                conn.execute("COMMIT")
                return found
            if version == 0:
                for statement in _BASE_SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                version = 1
            else:
                for statement in MIGRATIONS[version - 1].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                version += 1
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                         (str(version),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _stored_event(data: str, created: float) -> Event:
    """A stored event; one stored before events carried their time gets the row's."""
    fields = json.loads(data)
    if isinstance(fields, dict):
        fields.setdefault("at", created)
    return event_from_dict(fields)


class UnknownSession(KeyError):
    """No session with this id."""

    def __str__(self) -> str:
        return f"no session {self.args[0]!r}"


class RunState(enum.StrEnum):
    """Where a session's latest run stands. `running` after a crash means interrupted."""

    IDLE = "idle"
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    FINISHED = "finished"


@dataclass(frozen=True)
class StoredSession:
    session_id: str
    title: str
    workspace: str
    model: str
    mode: str
    created: float
    updated: float
    run_state: RunState
    run_info: Mapping[str, Any] = field(default_factory=dict)
    """The loop's progress record of the latest run (rounds, usage, cost, limits)."""


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)


def _dumps(value: Any) -> str:
    return json_text(value, compact=True)


def _shown_text(text: str) -> str:
    """Text for a plain TEXT column: a lone surrogate becomes the visible `\\udXXX`."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _result_content(content: str) -> Any:
    value = json.loads(content)
    return value if isinstance(value, str) else tuple(value)


class SessionResultLog:
    """The dispatcher's ResultLog for one session: results by call id. It assumes it is
    the only writer of the session's results while it is used (a run holds the session's
    lock): a result stored by another log after this one first looked is not seen.

    By default `put` returns once the result is on disk. With `pipeline`, `put` only queues
    the commit and hands its Future to `pipeline` (the caller then reports the outcome);
    results put through this log are answered from memory at once, so `get` never misses
    one whose commit is still under way. Commits are in submission order, so a result is on
    disk no later than any event submitted after it."""

    def __init__(self, store: SessionStore, session_id: str,
                 pipeline: Callable[[Future[None]], None] | None = None) -> None:
        self._store = store
        self.session_id = session_id
        self._pipeline = pipeline
        self._recent: dict[str, ToolResult] = {}
        self._stored: set[str] | None = None
        """The ids of the results stored when the log was first asked (read once, so a
        new call costs no query; results put through this log are in `_recent`)."""

    def get(self, call_id: str) -> ToolResult | None:
        recent = self._recent.get(call_id)
        if recent is not None:
            return recent
        if self._stored is None:
            self._stored = self._store.result_ids(self.session_id)
        if _sql_text(call_id) not in self._stored:
            return None
        return self._store.get_result(self.session_id, call_id)

    def put(self, result: ToolResult) -> None:
        future = self._store.submit_result(self.session_id, result)
        self._recent[result.call_id] = result
        if self._pipeline is None:
            future.result()
        else:
            self._pipeline(future)


class _JobFailed(Exception):
    """A job of a batch raised: the batch is redone with one savepoint per job."""


@dataclass
class _Job:
    fn: Callable[[sqlite3.Connection], Any] | None
    """None: a barrier (writes nothing; completes after every job queued before it)."""
    future: Future[Any]
    durable: bool = True
    """False: a batch of only such jobs is committed without an fsync (WAL,
    synchronous=NORMAL: it survives the process being killed, not a power cut, and the next
    durable commit fsyncs it too). Used for a call's progress line, which the next one
    replaces."""


def _settle(future: Future[Any], ok: bool, value: Any) -> None:
    """Complete a job's future. A waiter that was cancelled (asyncio.wrap_future cancels the
    job's future with it) no longer wants the answer; the write itself is committed, and the
    writer thread must not die over it."""
    if not future.set_running_or_notify_cancel():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class SessionStore:
    """Sessions, message history, events, tool results and traces in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            writer = self._connect(wal=False)
            try:
                migrate(writer, self.path)
            except BaseException:
                writer.close()
                raise
            self._reader = self._connect()
        except sqlite3.Error as exc:
            raise StoreOpenError(
                f"the session database {self.path} cannot be opened: {exc}. Move it aside to "
                f"start with an empty one.") from exc
        self._read_lock = threading.Lock()
        self._texts: OrderedDict[int, tuple[Event, str]] = OrderedDict()
        """The JSON text of the events submitted last, by event object (`event_text`); the
        event is kept with it, so its id is not reused while it is here."""
        self._texts_lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(
            target=self._writer_loop, args=(writer,), name="reins-store-writer", daemon=True
        )
        self._thread.start()

    def _connect(self, wal: bool = True) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    # ---- the writer -------------------------------------------------------------------

    def _writer_loop(self, conn: sqlite3.Connection) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            batch = [job]
            stop = False
            while True:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            try:
                self._commit_batch(conn, batch)
            except BaseException as exc:  # never leave a waiter hanging on a dead writer
                log.exception("the session store's writer failed")
                for job in batch:
                    if not job.future.done():
                        _settle(job.future, False, exc if isinstance(exc, Exception)
                                else RuntimeError(f"store writer failed: {exc!r}"))
            if stop:
                break
        conn.close()

    @classmethod
    def _commit_batch(cls, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        """One transaction for the whole batch. If a job fails, the batch is redone with a
        savepoint per job, so only the failing job's caller gets the error."""
        if all(job.fn is None for job in batch):
            for job in batch:
                _settle(job.future, True, None)
            return
        light = not any(job.durable for job in batch if job.fn is not None)
        if light:
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            outcomes = cls._run_batch(conn, batch, isolate=False)
        except _JobFailed:
            try:
                outcomes = cls._run_batch(conn, batch, isolate=True)
            except Exception as exc:
                cls._fail(batch, exc)
                return
        except Exception as exc:
            cls._fail(batch, exc)
            return
        finally:
            if light:
                conn.execute("PRAGMA synchronous=FULL")
        for job, (ok, value) in zip(batch, outcomes, strict=True):
            _settle(job.future, ok, value)

    @staticmethod
    def _run_batch(conn: sqlite3.Connection, batch: list[_Job],
                   *, isolate: bool) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in batch:
                if job.fn is None:
                    outcomes.append((True, None))
                elif not isolate:
                    try:
                        outcomes.append((True, job.fn(conn)))
                    except Exception as exc:
                        raise _JobFailed from exc
                else:
                    conn.execute("SAVEPOINT job")
                    try:
                        outcomes.append((True, job.fn(conn)))
                        conn.execute("RELEASE job")
                    except Exception as exc:
                        conn.execute("ROLLBACK TO job")
                        conn.execute("RELEASE job")
                        outcomes.append((False, exc))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return outcomes

    @staticmethod
    def _fail(batch: list[_Job], exc: Exception) -> None:
        for job in batch:
            _settle(job.future, False, exc)

    def _submit(self, fn: Callable[[sqlite3.Connection], T] | None,
                durable: bool = True) -> Future[T]:
        if self._closed:
            raise RuntimeError("the session store is closed")
        future: Future[T] = Future()
        self._jobs.put(_Job(fn, future, durable))
        return future

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in the writer; return once its transaction is committed."""
        return self._submit(fn).result()

    def barrier(self) -> Future[None]:
        """A Future that completes once everything submitted before it is committed."""
        return self._submit(None)

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        """Finish pending writes and close. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        self._thread.join()
        with self._read_lock:
            self._reader.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- sessions ---------------------------------------------------------------------

    def create_session(
        self, workspace: Path | str, model: str, mode: str = "ask", title: str = ""
    ) -> str:
        session_id = new_session_id()
        now = time.time()

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO sessions(id, title, workspace, model, mode, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, _shown_text(title), str(workspace), model, mode, now, now),
            )

        self._write(insert)
        return session_id

    def get_session(self, session_id: str) -> StoredSession:
        rows = self._read(
            "SELECT id, title, workspace, model, mode, created, updated, run_state, run_info"
            " FROM sessions WHERE id = ?",
            (session_id,),
        )
        if not rows:
            raise UnknownSession(session_id)
        return _session_info(rows[0])

    def has_session(self, session_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM sessions WHERE id = ?", (session_id,)))

    def list_sessions(self, query: str | None = None) -> list[StoredSession]:
        """Newest first. `query` matches title, workspace, or any stored message text."""
        columns = "id, title, workspace, model, mode, created, updated, run_state, run_info"
        if not query:
            rows = self._read(f"SELECT {columns} FROM sessions ORDER BY updated DESC")
        else:
            like = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self._read(
                f"SELECT {columns} FROM sessions s WHERE title LIKE ?1 ESCAPE '\\'"
                " OR workspace LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM events e"
                " WHERE e.session_id = s.id AND e.type IN ('user_message', 'assistant_text')"
                " AND e.data LIKE ?1 ESCAPE '\\') ORDER BY updated DESC",
                (like,),
            )
        return [_session_info(r) for r in rows]

    def _update_session(self, session_id: str, column: str, value: Any) -> Future[None]:
        def update(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                f"UPDATE sessions SET {column} = ?, updated = ? WHERE id = ?",
                (value, time.time(), session_id),
            )
            if cur.rowcount == 0:
                raise UnknownSession(session_id)

        return self._submit(update)

    def submit_rename_session(self, session_id: str, title: str) -> Future[None]:
        """Set the title without waiting (the agent loop names a session this way)."""
        return self._update_session(session_id, "title", _shown_text(title))

    def rename_session(self, session_id: str, title: str) -> None:
        self.submit_rename_session(session_id, title).result()

    def set_session_mode(self, session_id: str, mode: str) -> None:
        self._update_session(session_id, "mode", mode).result()

    def set_session_model(self, session_id: str, model: str) -> None:
        self._update_session(session_id, "model", model).result()

    def set_session_workspace(self, session_id: str, workspace: Path | str) -> None:
        """The folder the session's later runs work in (a scratch session given a real one)."""
        self._update_session(session_id, "workspace", str(workspace)).result()

    def delete_session(self, session_id: str) -> None:
        """Remove the session and everything stored for it (its files on disk are removed by
        `kernel.tools.externalize.remove_session_outputs`)."""

        def delete(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise UnknownSession(session_id)

        self._write(delete)

    # ---- run state --------------------------------------------------------------------

    def submit_run_state(
        self, session_id: str, state: RunState, info: Mapping[str, Any] | None = None
    ) -> Future[None]:
        """Record where the latest run stands; `info` replaces the run's progress record."""

        def update(conn: sqlite3.Connection) -> None:
            params: tuple[Any, ...]
            if info is None:
                sql, params = "UPDATE sessions SET run_state = ?, updated = ? WHERE id = ?", (
                    state.value, time.time(), session_id)
            else:
                sql = "UPDATE sessions SET run_state = ?, run_info = ?, updated = ? WHERE id = ?"
                params = (state.value, _dumps(dict(info)), time.time(), session_id)
            if conn.execute(sql, params).rowcount == 0:
                raise UnknownSession(session_id)

        return self._submit(update)

    def set_run_state(
        self, session_id: str, state: RunState, info: Mapping[str, Any] | None = None
    ) -> None:
        self.submit_run_state(session_id, state, info).result()

    def settle_dead_runs(self, lock_for: Callable[[str], RunLock],
                         session_ids: Iterable[str] | None = None) -> list[str]:
        """Every session (of `session_ids`, else all) recorded `running` whose run lock
        nobody holds — its process was killed or crashed — becomes `interrupted`; their ids.

        A run holds its session's lock (`lock_for(id)`) for as long as it runs, and the
        operating system drops it when the process dies, so a free lock means a dead run.
        The state is changed while the lock is held here, so a run starting at the same
        moment either finds the lock taken (and says the session is busy) or starts after
        the change; a session run by a live process (another `reins exec`, the app) is left
        `running`."""
        running = {r[0] for r in self._read("SELECT id FROM sessions WHERE run_state = ?",
                                            (RunState.RUNNING.value,))}
        if session_ids is not None:
            running &= set(session_ids)
        settled = []
        for session_id in sorted(running):
            lock = lock_for(session_id)
            try:
                lock.acquire()
            except SessionLocked:
                continue
            try:
                self._write(_interrupt_if_running(session_id))
            finally:
                lock.release()
            settled.append(session_id)
        return settled

    # ---- events -----------------------------------------------------------------------

    def append_event(self, event: Event) -> int:
        """Store one event; returns its sequence number once it is committed to disk."""
        return self.append_events([event])[0]

    def submit_event(self, event: Event) -> Future[int]:
        """Store one event without waiting: the Future gives its sequence number once it
        is committed to disk (or the error that kept it from being stored).

        A `tool_progress` event replaces the call's previous one (a session keeps the
        latest progress line of each call, not one row per tick) and alone is committed
        without an fsync (see `_Job.durable`): it is still on disk before it is reported."""
        data = json_text(event.to_dict())
        with self._texts_lock:
            self._texts[id(event)] = (event, data)
            if len(self._texts) > _KEPT_TEXTS:
                self._texts.popitem(last=False)
        insert = self._insert_rows([(event, data)])
        return self._submit(lambda conn: insert(conn)[0],
                            durable=event.type != ToolProgress.type)

    def event_text(self, event: Event) -> str:
        """`event` as the store writes it (`kernel.events.json_text` of its `to_dict()`,
        the line `reins exec --json` prints); for an event just submitted, the very text it
        stored, made once (the printer writes it rather than encoding each event a second
        time). Each text is handed out once."""
        with self._texts_lock:
            kept = self._texts.pop(id(event), None)
        if kept is not None and kept[0] is event:
            return kept[1]
        return json_text(event.to_dict())

    def append_events(self, events: Iterable[Event]) -> list[int]:
        """Store several events in one transaction; their sequence numbers, in order."""
        return self._write(self._insert_events(events))

    @classmethod
    def _insert_events(cls, events: Iterable[Event]) -> Callable[[sqlite3.Connection],
                                                                  list[int]]:
        return cls._insert_rows([(e, json_text(e.to_dict())) for e in events])

    @staticmethod
    def _insert_rows(events: Iterable[tuple[Event, str]]
                     ) -> Callable[[sqlite3.Connection], list[int]]:
        """Insert each event with its JSON text (`json_text(event.to_dict())`: what
        `reins exec --json` prints, so one encoding serves both)."""
        rows = [(e.session_id, e.type, data, _call_id_of(e)) for e, data in events]

        def insert(conn: sqlite3.Connection) -> list[int]:
            now = time.time()
            seqs = []
            for session_id, type_, data, call_id in rows:
                if type_ == ToolProgress.type and call_id is not None:
                    conn.execute("DELETE FROM events WHERE session_id = ? AND call_id = ?"
                                 " AND type = ?", (session_id, call_id, type_))
                cur = conn.execute(
                    "INSERT INTO events(session_id, type, data, created, call_id)"
                    " VALUES (?, ?, ?, ?, ?)", (session_id, type_, data, now, call_id))
                seqs.append(int(cur.lastrowid or 0))
            return seqs

        return insert

    def events(self, session_id: str, after_seq: int = 0) -> list[tuple[int, Event]]:
        rows = self._read(
            "SELECT seq, data, created FROM events WHERE session_id = ? AND seq > ?"
            " ORDER BY seq", (session_id, after_seq),
        )
        return [(seq, _stored_event(data, created)) for seq, data, created in rows]

    # ---- the API message history ------------------------------------------------------

    def submit_message(self, session_id: str, message: Mapping[str, Any]) -> Future[int]:
        """Append one API message ({"role", "content"}) exactly as sent; its index."""
        role = message["role"]
        content = _dumps(message["content"])

        def insert(conn: sqlite3.Connection) -> int:
            (idx,) = conn.execute(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            conn.execute(
                "INSERT INTO messages(session_id, idx, role, content) VALUES (?, ?, ?, ?)",
                (session_id, idx, role, content),
            )
            conn.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))
            return int(idx)

        return self._submit(insert)

    def append_message(self, session_id: str, message: Mapping[str, Any]) -> int:
        return self.submit_message(session_id, message).result()

    def submit_replace_last_message(self, session_id: str,
                                    message: Mapping[str, Any]) -> Future[None]:
        """Replace the newest message (used to merge consecutive user turns)."""
        role = message["role"]
        content = _dumps(message["content"])

        def update(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE messages SET role = ?, content = ? WHERE session_id = ? AND idx ="
                " (SELECT MAX(idx) FROM messages WHERE session_id = ?)",
                (role, content, session_id, session_id),
            )
            if cur.rowcount == 0:
                raise ValueError(f"session {session_id!r} has no message to replace")

        return self._submit(update)

    def replace_last_message(self, session_id: str, message: Mapping[str, Any]) -> None:
        self.submit_replace_last_message(session_id, message).result()

    def submit_replace_message(self, session_id: str, index: int,
                               message: Mapping[str, Any]) -> Future[None]:
        """Replace the message at `index` (a media block the API refused, made sendable)."""
        role = message["role"]
        content = _dumps(message["content"])

        def update(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE messages SET role = ?, content = ? WHERE session_id = ? AND idx = ?",
                (role, content, session_id, index))
            if cur.rowcount == 0:
                raise ValueError(f"session {session_id!r} has no message {index}")

        return self._submit(update)

    def submit_branch(self, event: Event, first_index: int,
                      kept: Mapping[str, Any] | None) -> Future[int]:
        """Supersede the history from `first_index` on, in one transaction with `event`
        (which keeps what is superseded): the message at `first_index` becomes `kept`
        (None: it goes too), every later one goes. The event's sequence number."""
        session_id = event.session_id
        insert = self._insert_events([event])
        first = None if kept is None else (kept["role"], _dumps(kept["content"]))

        def branch(conn: sqlite3.Connection) -> int:
            (seq,) = insert(conn)
            if first is None:
                conn.execute("DELETE FROM messages WHERE session_id = ? AND idx >= ?",
                             (session_id, first_index))
            else:
                conn.execute("DELETE FROM messages WHERE session_id = ? AND idx > ?",
                             (session_id, first_index))
                if conn.execute("UPDATE messages SET role = ?, content = ? WHERE session_id"
                                " = ? AND idx = ?", (*first, session_id, first_index)
                                ).rowcount == 0:
                    raise ValueError(f"session {session_id!r} has no message {first_index}")
            return seq

        return self._submit(branch)

    def message(self, session_id: str, index: int) -> dict[str, Any] | None:
        """The history message at `index` (None when there is none)."""
        rows = self._read("SELECT role, content FROM messages WHERE session_id = ? AND idx = ?",
                          (session_id, index))
        return {"role": rows[0][0], "content": json.loads(rows[0][1])} if rows else None

    def submit_restore(self, event: Event, first_index: int,
                       tail: Sequence[Mapping[str, Any]]) -> Future[int]:
        """Replace the history from `first_index` on with `tail`, in one transaction with
        `event` (which keeps what was there: an earlier answer made current again). The
        event's sequence number."""
        session_id = event.session_id
        insert = self._insert_events([event])
        rows = [(session_id, first_index + n, m["role"], _dumps(m["content"]))
                for n, m in enumerate(tail)]

        def restore(conn: sqlite3.Connection) -> int:
            (seq,) = insert(conn)
            conn.execute("DELETE FROM messages WHERE session_id = ? AND idx >= ?",
                         (session_id, first_index))
            conn.executemany("INSERT INTO messages(session_id, idx, role, content)"
                             " VALUES (?, ?, ?, ?)", rows)
            return seq

        return self._submit(restore)

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY idx",
            (session_id,),
        )
        return [{"role": role, "content": json.loads(content)} for role, content in rows]

    # ---- tool results (ResultLog) -----------------------------------------------------

    def result_log(self, session_id: str,
                   pipeline: Callable[[Future[None]], None] | None = None) -> SessionResultLog:
        check_session_id(session_id)
        return SessionResultLog(self, session_id, pipeline)

    def submit_result(self, session_id: str, result: ToolResult) -> Future[None]:
        content = _dumps(result.content if isinstance(result.content, str)
                         else [dict(b) for b in result.content])
        row = (
            session_id, _sql_text(result.call_id), content, int(result.is_error),
            result.error_code.value if result.error_code else None,
            float(result.duration_ms), int(result.output_bytes), result.externalized_path,
        )

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO tool_results(session_id, call_id, content, is_error,"
                " error_code, duration_ms, output_bytes, externalized_path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

        return self._submit(insert)

    def put_result(self, session_id: str, result: ToolResult) -> None:
        self.submit_result(session_id, result).result()

    def result_ids(self, session_id: str) -> set[str]:
        """The call ids of the session's stored results (as `tool_results` keys them)."""
        return {r[0] for r in self._read(
            "SELECT call_id FROM tool_results WHERE session_id = ?", (session_id,))}

    def get_result(self, session_id: str, call_id: str) -> ToolResult | None:
        rows = self._read(
            "SELECT content, is_error, error_code, duration_ms, output_bytes, externalized_path"
            " FROM tool_results WHERE session_id = ? AND call_id = ?",
            (session_id, _sql_text(call_id)),
        )
        if not rows:
            return None
        content, is_error, code, duration_ms, output_bytes, path = rows[0]
        return ToolResult(
            call_id=call_id,
            content=_result_content(content),
            is_error=bool(is_error),
            error_code=ErrorCode(code) if code else None,
            duration_ms=duration_ms,
            output_bytes=output_bytes,
            externalized_path=path,
        )

    # ---- trace ------------------------------------------------------------------------

    def submit_trace(self, session_id: str, record: Mapping[str, Any]) -> Future[None]:
        data = _dumps(dict(record))

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO trace(session_id, pos, record) VALUES (?, (SELECT COALESCE("
                "MAX(pos) + 1, 0) FROM trace WHERE session_id = ?), ?)",
                (session_id, session_id, data),
            )

        return self._submit(insert)

    def append_trace(self, session_id: str, record: Mapping[str, Any]) -> None:
        self.submit_trace(session_id, record).result()

    def trace(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT record FROM trace WHERE session_id = ? ORDER BY pos", (session_id,)
        )
        return [json.loads(r[0]) for r in rows]


def _call_id_of(event: Event) -> str | None:
    call_id = getattr(event, "call_id", None)
    return _sql_text(call_id) if isinstance(call_id, str) else None


def _sql_text(value: str) -> str:
    """A key SQLite can hold as text: the ids come from the model, which may send lone
    surrogates (not UTF-8): those are kept as `\\udXXX` escapes (the events' JSON keeps the
    id as it was)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _interrupt_if_running(session_id: str) -> Callable[[sqlite3.Connection], None]:
    def update(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE sessions SET run_state = ? WHERE id = ? AND run_state = ?",
                     (RunState.INTERRUPTED.value, session_id, RunState.RUNNING.value))

    return update


def _session_info(row: tuple[Any, ...]) -> StoredSession:
    sid, title, workspace, model, mode, created, updated, state, info = row
    return StoredSession(
        session_id=sid, title=title, workspace=workspace, model=model, mode=mode,
        created=created, updated=updated, run_state=RunState(state),
        run_info=json.loads(info),
    )
