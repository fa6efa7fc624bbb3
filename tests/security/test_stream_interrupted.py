"""A run that dies never stays "running", and one that fails still ends its stream.

Real `reins exec` processes against the fake model server: one killed with SIGKILL while
the model is answering (then `reins export`, the desktop kernel worker and a resume see
it), one whose database another process holds locked (the store cannot write: the stream
still ends with `error` and `run_finished`)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
from kernel import protocol as p
from kernel.agent.runlock import session_lock
from kernel.agent.store import RunState, SessionStore
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import Reply, Text, reply
from kernel.paths import AppPaths
from tests.security.execkit import REINS, exec_env, json_lines, run_json

pytestmark = pytest.mark.timeout(240)


def _start(server: FakeAnthropicServer, workspace: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [REINS, "exec", "--json", "--mode", "auto", "--workspace", str(workspace), "go"],
        env=exec_env(server), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)


def _session_of(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    for line in child.stdout:
        event = json.loads(line)
        if event["type"] == "user_message":
            return str(event["session_id"])
    raise AssertionError(f"no user_message; stderr: {child.communicate()[1]}")


def _stalled_run(server: FakeAnthropicServer, workspace: Path) -> tuple[
        subprocess.Popen[str], str]:
    """A `reins exec` whose model has started to answer and then stalls."""
    child = _start(server, workspace)
    session_id = _session_of(child)
    assert server.stalled.wait(60)
    return child, session_id


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def _stored_state(paths: AppPaths, session_id: str) -> RunState:
    with SessionStore(paths.database) as store:
        return store.get_session(session_id).run_state


def _export_header(server: FakeAnthropicServer, session_id: str) -> dict[str, Any]:
    done = subprocess.run([REINS, "export", session_id], env=exec_env(server),
                          capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(done.stdout.splitlines()[0]))


def test_a_killed_exec_is_interrupted_on_the_next_start_and_resumes(
        workspace: Path, reins_home: AppPaths) -> None:
    script = [Reply((Text("working on it, " * 40),), stall_after=6),
              reply("resumed and done")]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        child, session_id = _stalled_run(server, workspace)
        assert _stored_state(reins_home, session_id) is RunState.RUNNING
        assert _export_header(server, session_id)["run_state"] == "running"  # it is alive
        _kill(child)
        server.release()
        assert _export_header(server, session_id)["run_state"] == "interrupted"
        assert _stored_state(reins_home, session_id) is RunState.INTERRUPTED
        done = run_json(server, workspace, "--session", session_id, prompt=None)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "run_finished" and events[-1]["stop_reason"] == "end_turn"
    assert "resumed and done" in [e.get("text") for e in events]
    assert _stored_state(reins_home, session_id) is RunState.FINISHED


def _loaded(qtbot: QtBot, client: KernelClient, messages: list[Any],
            session_id: str) -> p.SessionLoaded:
    mark = len(messages)
    client.send(p.OpenSession(session_id))
    found: list[p.SessionLoaded] = []

    def seen() -> bool:
        found[:] = [m for m in messages[mark:] if isinstance(m, p.SessionLoaded)]
        return bool(found)

    qtbot.waitUntil(seen, timeout=60_000)
    return found[0]


def test_the_app_shows_a_live_exec_run_as_running_and_a_killed_one_as_interrupted(
        qtbot: QtBot, workspace: Path, reins_home: AppPaths) -> None:
    script = [Reply((Text("working on it, " * 40),), stall_after=6)]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        child, session_id = _stalled_run(server, workspace)
        client = KernelClient(restart=False)
        messages: list[p.Message] = []
        client.batch.connect(messages.extend)
        client.start()
        try:
            qtbot.waitUntil(lambda: any(isinstance(m, p.KernelReady) for m in messages),
                            timeout=60_000)
            assert not _loaded(qtbot, client, messages, session_id).interrupted
            assert _stored_state(reins_home, session_id) is RunState.RUNNING
            _kill(child)
            server.release()
            assert _loaded(qtbot, client, messages, session_id).interrupted
        finally:
            client.stop()
            if child.poll() is None:
                _kill(child)
    assert _stored_state(reins_home, session_id) is RunState.INTERRUPTED


def _hold_write_lock(database: Path, until: threading.Event) -> threading.Thread:
    held = threading.Event()

    def hold() -> None:
        db = sqlite3.connect(database, isolation_level=None, timeout=30)
        db.execute("BEGIN IMMEDIATE")
        held.set()
        until.wait(120)
        db.execute("ROLLBACK")
        db.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(60)
    return thread


def test_a_run_whose_store_cannot_write_still_ends_its_stream(
        workspace: Path, reins_home: AppPaths) -> None:
    script = [Reply((Text("an answer that will not be stored"),), stall_after=3)]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        child, session_id = _stalled_run(server, workspace)
        release = threading.Event()
        holder = _hold_write_lock(reins_home.database, release)
        server.release()  # the answer ends; storing it waits for the lock, then fails
        started = time.monotonic()
        try:
            out, err = child.communicate(timeout=150)
        finally:
            release.set()
            holder.join(30)
    assert time.monotonic() - started >= 9  # SQLite waited out its busy timeout
    events = json_lines(out)
    assert [e["type"] for e in events][-2:] == ["error", "run_finished"], (events, err)
    assert events[-2]["code"] == "internal_error"
    assert "locked" in events[-2]["message"]
    assert events[-1]["stop_reason"] == "error"
    assert child.returncode == 1
    assert "in <module>" not in err  # logged with its traceback, but nothing uncaught
    with SessionStore(reins_home.database) as store:
        store.settle_dead_runs(lambda sid: session_lock(reins_home, sid))
        assert store.get_session(session_id).run_state is RunState.INTERRUPTED

