"""One status per call, in the chat and the timeline alike, live and after a reload: the real
kernel worker (over its pipe) runs a call the rules deny, one the user denies, one that times
out, one the user stops while it runs and one that fails; the events it sends are shown by
a chat and a timeline, then the session is opened again and shown by new ones. Each call has
the kernel's status in all four, and the reloaded timeline has the times the calls happened,
not the time of the reload."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, ToolCardItem
from desktop.timeline.model import TimelineModel
from kernel import protocol as p
from kernel.events import ApprovalRequest, CallStatus, Event, ToolProgress
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.security.test_workspace_broad import Worker

pytestmark = pytest.mark.timeout(180)

EXPECTED: dict[str, CallStatus] = {
    "by_rules": "denied",
    "by_you": "denied",
    "too_slow": "timeout",
    "stopped": "stopped",
    "failed": "error",
}


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-status") as server:
        yield server
        server.release()


@pytest.fixture
def worker(reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[Worker]:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(
        {"base_url": fake.base_url, "model": "claude-status",
         "permissions": {"deny": ["write_file(blocked.txt)"]}}))
    w = Worker()
    w.wait_for(p.KernelReady)
    w.send(p.SetApiKey("sk-status"))
    yield w
    w.close()


def event_messages(w: Worker) -> list[Event]:
    return [m.event for m in w.received if isinstance(m, p.EventMessage)]


def wait_event(w: Worker, found: type[Event], call_id: str) -> None:
    deadline = time.monotonic() + 60
    while not any(isinstance(e, found) and getattr(e, "call_id", "") == call_id
                  for e in event_messages(w)):
        assert time.monotonic() < deadline, f"no {found.__name__} for {call_id}"
        if w.conn.poll(1):
            message = p.decode(w.conn.recv_bytes())
            if message is not None:
                w.received.append(message)


def shown(events: list[Event], qtbot: QtBot) -> tuple[dict[str, str], dict[str, str],
                                                       TimelineModel]:
    chat = ChatModel()
    timeline = TimelineModel(batch_ms=0)
    for event in events:
        apply_event(chat, event)
        timeline.apply(event)
    timeline.flush()
    cards = {i.call_id: i.status for i in chat.items() if isinstance(i, ToolCardItem)}
    rows = {}
    for call_id in EXPECTED:
        record = timeline.record(call_id)
        assert record is not None, call_id
        rows[call_id] = record.status
    return cards, rows, timeline


def test_each_call_has_the_kernels_status_in_the_chat_and_the_timeline(
        qtbot: QtBot, worker: Worker, fake: FakeAnthropicServer, workspace: Path) -> None:
    fake.add(reply(ToolUse("write_file", {"path": "blocked.txt", "content": "x"}, "by_rules")),
             reply(ToolUse("read_file", {"path": "/etc/hostname"}, "by_you")),
             reply(ToolUse("run_command", {"command": "sleep 20", "timeout_s": 1}, "too_slow")),
             reply(ToolUse("run_command", {"command": "sleep 30"}, "stopped")),
             reply(ToolUse("read_file", {"path": "no-such-file.txt"}, "failed")),
             reply("all done"))
    worker.send(p.NewSession(str(workspace), "auto"))
    session_id = worker.wait_for(p.SessionLoaded).info.session_id
    worker.send(p.StartRun(session_id, "go"))
    wait_event(worker, ApprovalRequest, "by_you")
    worker.send(p.ApprovalAnswer(session_id, "by_you", "deny"))
    wait_event(worker, ToolProgress, "stopped")
    worker.send(p.CancelCall(session_id, "stopped"))
    worker.wait_for(p.RunStatus, 2)  # running, then idle
    live = event_messages(worker)

    cards, rows, live_timeline = shown(live, qtbot)
    assert cards == EXPECTED and rows == EXPECTED

    worker.send(p.OpenSession(session_id))
    loaded = worker.wait_for(p.SessionLoaded, 2)
    reloaded_cards, reloaded_rows, reloaded_timeline = shown(list(loaded.events), qtbot)
    assert reloaded_cards == EXPECTED and reloaded_rows == EXPECTED

    reload_time = time.time()
    for call_id in EXPECTED:
        before, after = live_timeline.record(call_id), reloaded_timeline.record(call_id)
        assert before is not None and after is not None
        assert after.queued_at == before.queued_at < reload_time
        assert after.finished_at == before.finished_at
        assert after.finished_at is not None and after.finished_at >= after.queued_at
