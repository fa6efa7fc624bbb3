"""The store's schema version is read and acted on: a database made by the first released
schema (its SQL frozen here, with rows as that version wrote them) is migrated and reads
back unchanged; a newer one, a damaged one and a foreign SQLite file are refused with a
message and left as they were. A call's progress is kept as its latest line only."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from kernel.agent.store import SCHEMA_VERSION, SessionStore, StoreOpenError
from kernel.events import ToolCallStarted, ToolProgress, ToolResultEvent, UserMessage

# Schema version 1 exactly as kernel/agent/store.py created it until migrations existed.
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', workspace TEXT NOT NULL,
    model TEXT NOT NULL, mode TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    run_state TEXT NOT NULL DEFAULT 'idle', run_info TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    type TEXT NOT NULL, data TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_session ON events(session_id, seq);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
    PRIMARY KEY (session_id, idx));
CREATE TABLE IF NOT EXISTS tool_results (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    call_id TEXT NOT NULL, content TEXT NOT NULL, is_error INTEGER NOT NULL,
    error_code TEXT, duration_ms REAL NOT NULL, output_bytes INTEGER NOT NULL,
    externalized_path TEXT, PRIMARY KEY (session_id, call_id));
CREATE TABLE IF NOT EXISTS trace (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    pos INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (session_id, pos));
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1');
"""
SID = "20260101-120000-0badcafe"


def _v1_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.execute("INSERT INTO sessions VALUES (?, 'Old work', '/ws', 'claude-sonnet-4-5', 'ask',"
                 " 1.0, 2.0, 'finished', '{\"rounds\": 1}')", (SID,))
    events = [UserMessage(SID, "hello"), ToolCallStarted(SID, "c1", "read_file", {"path": "a"}),
              ToolProgress(SID, "c1", 10, "one"), ToolProgress(SID, "c1", 20, "two"),
              ToolResultEvent(SID, "c1", "read_file", False, preview="text")]
    for event in events:
        conn.execute("INSERT INTO events(session_id, type, data, created) VALUES (?, ?, ?, 3.0)",
                     (SID, event.type, json.dumps(event.to_dict())))
    conn.execute("INSERT INTO messages VALUES (?, 0, 'user', '\"hello\"')", (SID,))
    conn.execute("INSERT INTO tool_results VALUES (?, 'c1', '\"text\"', 0, NULL, 5.0, 4, NULL)",
                 (SID,))
    conn.execute("INSERT INTO trace VALUES (?, 0, '{\"round\": 1}')", (SID,))
    conn.commit()
    conn.close()


def _v1_database_marked(folder: Path, version: str) -> Path:
    db = folder / "reins.sqlite3"
    _v1_database(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    conn.commit()
    conn.close()
    return db


def _version(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_database_of_the_first_schema_is_migrated_and_reads_back_unchanged(tmp_path: Path):
    db = tmp_path / "reins.sqlite3"
    _v1_database(db)
    with SessionStore(db) as store:
        info = store.get_session(SID)
        assert (info.title, info.model, info.run_info) == ("Old work", "claude-sonnet-4-5",
                                                           {"rounds": 1})
        assert [e.type for _, e in store.events(SID)] == [
            "user_message", "tool_call", "tool_progress", "tool_progress", "tool_result"]
        assert store.messages(SID) == [{"role": "user", "content": "hello"}]
        got = store.get_result(SID, "c1")
        assert got is not None and got.content == "text"
        assert store.trace(SID) == [{"round": 1}]
        store.append_event(ToolProgress(SID, "c2", 1, "new"))
    assert _version(db) == str(SCHEMA_VERSION)
    with SessionStore(db) as again:  # opening a current database changes nothing
        assert len(again.events(SID)) == 6
    assert _version(db) == str(SCHEMA_VERSION)


def test_a_new_database_is_made_at_the_current_version(tmp_path: Path):
    db = tmp_path / "new.sqlite3"
    SessionStore(db).close()
    assert _version(db) == str(SCHEMA_VERSION)


def test_two_stores_opening_an_old_database_at_once_migrate_it_once(tmp_path: Path):
    db = tmp_path / "reins.sqlite3"
    _v1_database(db)
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            SessionStore(db).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _version(db) == str(SCHEMA_VERSION)


@pytest.mark.parametrize("version", [str(SCHEMA_VERSION + 1), "99", "1000000"])
def test_a_database_from_a_newer_reins_is_refused_and_left_alone(tmp_path: Path, version: str):
    db = _v1_database_marked(tmp_path, version)
    before = _digest(db)
    with pytest.raises(StoreOpenError, match=rf"newer version of Reins \(schema version "
                                             rf"{version}; this version reads up to "
                                             rf"{SCHEMA_VERSION}\)"):
        SessionStore(db)
    assert _digest(db) == before


@pytest.mark.parametrize("value", ["", "two", "0", "-3", "1.5"])
def test_an_unreadable_schema_version_is_refused(tmp_path: Path, value: str):
    _v1_database_marked(tmp_path, value)
    with pytest.raises(StoreOpenError, match="unreadable schema version"):
        SessionStore(tmp_path / "reins.sqlite3")


@pytest.mark.parametrize("content", [
    b"this is not a database at all\n" * 200,
    b"SQLite format 3\x00" + b"\xff" * 4000,
    b"\x00" * 4096,
])
def test_a_damaged_file_is_refused_with_its_path(tmp_path: Path, content: bytes):
    db = tmp_path / "reins.sqlite3"
    db.write_bytes(content)
    with pytest.raises(StoreOpenError, match=r"cannot be opened: .*Move it aside"):
        SessionStore(db)
    assert db.read_bytes() == content


def test_an_sqlite_file_reins_did_not_make_is_refused(tmp_path: Path):
    db = tmp_path / "reins.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError, match=r"did not make .*photos"):
        SessionStore(db)


def test_a_call_keeps_only_its_latest_progress_in_order(tmp_path: Path):
    with SessionStore(tmp_path / "db.sqlite3") as store:
        sid = store.create_session(tmp_path, "m")
        store.append_event(ToolCallStarted(sid, "a", "run_command", {"command": "x"}))
        store.append_event(ToolCallStarted(sid, "b", "run_command", {"command": "y"}))
        futures = [store.submit_event(ToolProgress(sid, call, n, f"{call} line {n}"))
                   for n in range(1, 40) for call in ("a", "b")]
        for future in futures:
            future.result()
        store.append_event(ToolResultEvent(sid, "a", "run_command", False))
        store.append_event(ToolProgress(sid, "b", 99, "b last"))
        kept = [(e.type, getattr(e, "call_id", ""), getattr(e, "last_line", ""))
                for _, e in store.events(sid)]
        assert kept == [("tool_call", "a", ""), ("tool_call", "b", ""),
                        ("tool_progress", "a", "a line 39"), ("tool_result", "a", ""),
                        ("tool_progress", "b", "b last")]
        other = store.create_session(tmp_path, "m")  # the same call id in another session
        store.append_event(ToolProgress(other, "a", 1, "elsewhere"))
        assert [e.last_line for _, e in store.events(sid) if isinstance(e, ToolProgress)] == [
            "a line 39", "b last"]
