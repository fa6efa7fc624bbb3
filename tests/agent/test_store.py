"""The SQLite session store: durable events, exact history, results, run state, threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from kernel.agent.runlock import RunLock
from kernel.agent.store import RunState, SessionStore, UnknownSession
from kernel.events import AssistantText, ToolCallStarted, UserMessage
from kernel.tools.spec import ErrorCode, ToolResult


@pytest.fixture
def store(tmp_path: Path):
    s = SessionStore(tmp_path / "db.sqlite3")
    yield s
    s.close()


def test_sessions_create_list_search_rename_mode_delete(store: SessionStore, tmp_path: Path):
    a = store.create_session(tmp_path / "ws-a", "claude-sonnet-4-5", "ask", title="Fix the build")
    b = store.create_session(tmp_path / "ws-b", "claude-sonnet-4-5", "auto")
    store.append_event(UserMessage(b, "please find the 漢字 in notes"))
    assert [s.session_id for s in store.list_sessions()] == [b, a]
    assert [s.session_id for s in store.list_sessions("build")] == [a]
    assert [s.session_id for s in store.list_sessions("漢字")] == [b]
    assert [s.session_id for s in store.list_sessions("ws-b")] == [b]
    assert store.list_sessions("100%") == []
    store.rename_session(b, "Notes")
    store.set_session_mode(b, "read-only")
    info = store.get_session(b)
    assert (info.title, info.mode, info.workspace) == ("Notes", "read-only", str(tmp_path / "ws-b"))
    store.delete_session(a)
    with pytest.raises(UnknownSession):
        store.get_session(a)
    with pytest.raises(UnknownSession):
        store.rename_session(a, "x")
    assert [s.session_id for s in store.list_sessions()] == [b]


def test_events_round_trip_in_order_with_sequence_numbers(store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    seqs = [store.append_event(UserMessage(sid, "hi")),
            store.append_event(ToolCallStarted(sid, "c1", "read_file", {"path": "a"})),
            store.append_event(AssistantText(sid, "done"))]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    got = store.events(sid)
    assert [s for s, _ in got] == seqs
    assert got[1][1] == ToolCallStarted(sid, "c1", "read_file", {"path": "a"})
    assert [e for _, e in store.events(sid, after_seq=seqs[0])] == [e for _, e in got[1:]]


def test_an_appended_event_is_on_disk_for_another_connection(store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    seq = store.append_event(AssistantText(sid, "visible"))
    other = sqlite3.connect(store.path)
    assert other.execute("SELECT seq FROM events WHERE session_id = ?", (sid,)).fetchall() == [
        (seq,)]
    other.close()


def test_message_history_is_exact(store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hello ü"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "x"}}]},
    ]
    for m in msgs:
        store.append_message(sid, m)
    assert store.messages(sid) == msgs
    store.replace_last_message(sid, {"role": "assistant", "content": "x"})
    assert store.messages(sid)[-1] == {"role": "assistant", "content": "x"}


def test_result_log_round_trip(store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    log = store.result_log(sid)
    assert log.get("c1") is None
    r1 = ToolResult("c1", "text out", duration_ms=1.5, output_bytes=8)
    r2 = ToolResult("c2", ({"type": "text", "text": "t"},), is_error=True,
                    error_code=ErrorCode.TIMEOUT, externalized_path="/x/c2.txt")
    log.put(r1)
    log.put(r2)
    assert log.get("c1") == r1
    assert log.get("c2") == r2
    assert store.result_log(store.create_session(tmp_path, "m")).get("c1") is None


def test_a_new_result_log_finds_what_was_stored_before_it_and_only_that(
        store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    ids = ["c1", "toolu_01", "x\udc80y", "中文"]
    for call_id in ids:
        store.put_result(sid, ToolResult(call_id, f"out {call_id}"))
    log = store.result_log(sid)
    for call_id in ids:
        found = log.get(call_id)
        assert found is not None and found.content == f"out {call_id}"
    for missing in ("c2", "C1", "x\udc81y", ""):
        assert log.get(missing) is None
    assert store.result_ids(sid) == {"c1", "toolu_01", "x\\udc80y", "中文"}


def test_run_state_and_interrupted_after_crash(store: SessionStore, tmp_path: Path):
    a = store.create_session(tmp_path, "m")
    b = store.create_session(tmp_path, "m")
    assert store.get_session(a).run_state is RunState.IDLE
    store.set_run_state(a, RunState.RUNNING, {"rounds": 2})
    store.set_run_state(b, RunState.FINISHED)
    assert store.get_session(a).run_info == {"rounds": 2}
    c = store.create_session(tmp_path, "m")
    store.set_run_state(c, RunState.RUNNING)
    live = RunLock(tmp_path / "locks" / c)
    live.acquire()  # c's run is alive (another process would hold it the same way)
    try:
        settled = store.settle_dead_runs(lambda sid: RunLock(tmp_path / "locks" / sid))
    finally:
        live.release()
    assert settled == [a]
    assert store.get_session(a).run_state is RunState.INTERRUPTED
    assert store.get_session(b).run_state is RunState.FINISHED
    assert store.get_session(c).run_state is RunState.RUNNING
    assert store.settle_dead_runs(lambda sid: RunLock(tmp_path / "locks" / sid), [a, b]) == []
    assert store.settle_dead_runs(lambda sid: RunLock(tmp_path / "locks" / sid)) == [c]


def test_a_failing_write_does_not_lose_a_concurrent_one(store: SessionStore, tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    errors: list[BaseException] = []

    def good() -> None:
        for i in range(200):
            store.append_event(AssistantText(sid, str(i)))

    def bad() -> None:
        for _ in range(50):
            try:
                store.rename_session("missing", "x")
            except UnknownSession as exc:
                errors.append(exc)

    threads = [threading.Thread(target=good) for _ in range(3)] + [threading.Thread(target=bad)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 50
    assert len(store.events(sid)) == 600


def test_reopen_keeps_everything_and_trace(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    with SessionStore(path) as s:
        sid = s.create_session(tmp_path, "m")
        s.append_event(UserMessage(sid, "x"))
        s.append_trace(sid, {"round": 0, "request_id": "req_1"})
        s.append_trace(sid, {"round": 1})
    with SessionStore(path) as s:
        assert [e for _, e in s.events(sid)] == [UserMessage(sid, "x")]
        assert s.trace(sid) == [{"round": 0, "request_id": "req_1"}, {"round": 1}]
        s.close()
        with pytest.raises(RuntimeError):
            s.append_event(UserMessage(sid, "y"))


def test_submitted_events_commit_in_order_and_barrier_waits_for_them(store: SessionStore,
                                                                     tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    futures = [store.submit_event(AssistantText(sid, str(i))) for i in range(300)]
    store.barrier().result()
    assert all(f.done() for f in futures)
    seqs = [f.result() for f in futures]
    assert seqs == sorted(seqs)
    assert [e.text for _, e in store.events(sid)] == [str(i) for i in range(300)]


def test_a_submitted_event_for_a_missing_session_fails_alone(store: SessionStore,
                                                             tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    good = store.submit_event(AssistantText(sid, "kept"))
    bad = store.submit_event(AssistantText("no-such-session", "lost"))
    assert good.result() > 0
    with pytest.raises(sqlite3.IntegrityError):
        bad.result()
    assert [e.text for _, e in store.events(sid)] == ["kept"]


def test_pipelined_result_log_answers_from_memory_and_commits(store: SessionStore,
                                                              tmp_path: Path):
    sid = store.create_session(tmp_path, "m")
    pending = []
    log = store.result_log(sid, pipeline=pending.append)
    result = ToolResult("c9", "out")
    log.put(result)
    assert log.get("c9") == result
    pending[0].result()
    assert store.result_log(sid).get("c9") == result


def test_a_cancelled_waiter_does_not_kill_the_writer(store: SessionStore, tmp_path: Path):
    """asyncio.wrap_future cancels the job's future when its awaiting task is cancelled;
    the writer must still commit the write and go on serving everyone else."""
    sid = store.create_session(tmp_path / "ws", "claude-sonnet-4-5", "ask")
    release = threading.Event()
    blocker = store._submit(lambda conn: release.wait(10))
    abandoned = store.submit_event(UserMessage(sid, "nobody waits for me"))
    abandoned_barrier = store.barrier()
    assert abandoned.cancel() and abandoned_barrier.cancel()
    release.set()
    blocker.result(timeout=10)
    seq = store.append_event(UserMessage(sid, "after"))
    texts = [e.text for _, e in store.events(sid)]
    assert texts == ["nobody waits for me", "after"]
    assert seq > 0


def test_a_failure_inside_the_writer_fails_its_callers_and_the_writer_goes_on(
        store: SessionStore, tmp_path: Path):
    """Whatever goes wrong inside the writer thread, its waiters get an error instead of
    waiting forever, and later writes still work."""
    sid = store.create_session(tmp_path / "ws", "claude-sonnet-4-5", "ask")

    def broken(conn: sqlite3.Connection) -> None:
        raise SystemExit("a bug escaping the job")

    failed = store._submit(broken)
    with pytest.raises(RuntimeError, match="store writer failed"):
        failed.result(timeout=10)
    store.append_event(UserMessage(sid, "still here"))
    assert [e.text for _, e in store.events(sid)] == ["still here"]


def test_an_events_text_is_the_one_it_stored_made_once(store: SessionStore, tmp_path: Path):
    """`event_text` (what `reins exec --json` prints) is the very string the store wrote
    for an event just submitted, the same JSON for any other event."""
    import json

    from kernel.events import json_text

    sid = store.create_session(tmp_path, "m")
    events = [AssistantText(sid, "line\u2028break \ud800"),
              ToolCallStarted(sid, call_id="c1", name="read_file", input={"path": "ü"})]
    for event in events:
        store.submit_event(event).result()
    texts = [store.event_text(event) for event in events]
    with sqlite3.connect(store.path) as db:
        stored = [row[0] for row in db.execute("SELECT data FROM events ORDER BY seq")]
    assert texts == stored == [json_text(e.to_dict()) for e in events]
    assert [json.loads(t) for t in texts] == [e.to_dict() for e in events]
    assert store.event_text(events[0]) == texts[0]  # handed out once, then made again
    other = AssistantText(sid, "never stored")
    assert store.event_text(other) == json_text(other.to_dict())
