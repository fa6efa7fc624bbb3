"""Session commands through the real kernel worker process and its pipe: deleting a session
while its command runs cancels and awaits the run first (no FOREIGN KEY error, no traceback,
nothing shown in the other session) and removes its externalized outputs; a command that
meets a broken database file gets an answer that says so, and the kernel goes on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kernel import protocol as p
from kernel.agent.store import SessionStore
from kernel.events import ToolCallStarted, ToolResultEvent, UserMessage
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.security.test_workspace_broad import Worker

pytestmark = pytest.mark.timeout(180)


def _events(worker: Worker, kind: type, session_id: str) -> list:
    return [m.event for m in worker.received if isinstance(m, p.EventMessage)
            and isinstance(m.event, kind) and m.event.session_id == session_id]


def _wait_event(worker: Worker, kind: type, session_id: str, count: int = 1) -> None:
    """Read the worker's messages until `count` events of `kind` of the session came."""
    while len(_events(worker, kind, session_id)) < count:
        seen = len([m for m in worker.received if isinstance(m, p.EventMessage)])
        worker.wait_for(p.EventMessage, count=seen + 1)


def test_deleting_a_running_session_ends_its_run_first_and_removes_its_files(
        served: tuple[FakeAnthropicServer, Worker], reins_home: AppPaths, workspace: Path,
        tmp_path: Path, capfd: pytest.CaptureFixture[str]):
    server, worker = served
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    worker.send(p.NewSession(str(other_ws), "auto"))
    other = worker.wait_for(p.SessionLoaded).info.session_id
    worker.send(p.NewSession(str(workspace), "auto"))
    doomed = worker.wait_for(p.SessionLoaded, 2).info.session_id
    server.add(reply(ToolUse("run_command", {"command": "seq 1 400000"})), reply("counted"),
               reply(ToolUse("run_command", {"command": "echo started; sleep 60"})),
               reply("never reached"))
    worker.send(p.StartRun(doomed, "count"))
    worker.wait_for(p.RunStatus, 2)
    results = _events(worker, ToolResultEvent, doomed)
    assert results and results[0].externalized_path, "the long output is on disk"
    kept = Path(results[0].externalized_path)
    assert kept.is_file() and reins_home.session_dir(doomed) in kept.parents
    worker.send(p.OpenSession(other))
    worker.wait_for(p.SessionLoaded, 3)
    worker.send(p.StartRun(doomed, "wait"))
    _wait_event(worker, ToolCallStarted, doomed, 2)  # the sleeping call
    worker.send(p.DeleteSession(doomed))
    deleted = worker.wait_for(p.SessionDeleted, timeout=30)
    assert deleted.session_id == doomed
    statuses = [m for m in worker.received if isinstance(m, p.RunStatus)
                and m.session_id == doomed]
    assert statuses[-1].state != "running"
    assert worker.received.index(statuses[-1]) < worker.received.index(deleted), \
        "the run ended before the session was deleted"
    worker.send(p.ListSessions())
    listed = worker.wait_for(p.SessionList)
    assert [s.session_id for s in listed.sessions] == [other]
    assert [m for m in worker.received if isinstance(m, p.CommandFailed)] == []
    assert not reins_home.session_dir(doomed).exists() and not kept.exists()
    worker.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "FOREIGN KEY" not in err, err
    with SessionStore(reins_home.database) as store:
        assert not store.has_session(doomed) and store.events(doomed) == []
        assert store.has_session(other)


def test_deleting_an_unknown_session_says_so(served: tuple[FakeAnthropicServer, Worker]):
    _server, worker = served
    worker.send(p.DeleteSession("20260101-000000-00000000"))
    failed = worker.wait_for(p.CommandFailed)
    assert failed.command == "delete_session" and "no session" in failed.message


def _break_events_table(database: Path) -> None:
    """Overwrite the root page of the events table with garbage (a real damaged file)."""
    conn = sqlite3.connect(database)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'"
                           ).fetchone()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    with open(database, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)


def test_a_command_that_meets_a_broken_database_gets_an_answer(
        reins_home: AppPaths, workspace: Path, capfd: pytest.CaptureFixture[str]):
    with SessionStore(reins_home.database) as store:
        sid = store.create_session(workspace, "m", title="kept")
        store.append_events([UserMessage(sid, f"line {n} " + "x" * 200) for n in range(300)])
    _break_events_table(reins_home.database)
    worker = Worker()
    try:
        worker.send(p.OpenSession(sid))
        failed = worker.wait_for(p.CommandFailed)
        assert failed.command == "open_session" and failed.session_id == sid
        assert "the session database failed" in failed.message
        assert "malformed" in failed.message
        worker.send(p.ListSessions("line 5"))
        searched = worker.wait_for(p.CommandFailed, 2)
        assert searched.command == "list_sessions" and "malformed" in searched.message
        worker.send(p.ListSessions())  # what does not touch the broken page still works
        assert [s.title for s in worker.wait_for(p.SessionList).sessions] == ["kept"]
    finally:
        worker.close()
    assert "malformed" in capfd.readouterr().err
