"""In the app, a run records the MCP servers' outcomes its session has not seen (through the
real kernel worker process); the conversation does not repeat them (a failure is said once,
in the status bar: tests/desktop/test_mcp_notice.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kernel import protocol as p
from kernel.agent.store import SessionStore
from kernel.events import AssistantText, McpServerEvent
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.mcp.manager import ServerState, ServerStatus
from kernel.mcp.report import unseen_outcomes
from kernel.paths import AppPaths
from tests.mcp.conftest import edge
from tests.security.test_workspace_broad import Worker

READY = ServerState("a", ServerStatus.READY, "a", tools=("t",))
FAILED = ServerState("b", ServerStatus.FAILED, "b", error="exited with code 3")
STARTING = ServerState("c", ServerStatus.STARTING, "c")


@pytest.mark.parametrize(("states", "seen", "reported"), [
    ([READY, FAILED, STARTING], [], ["a", "b"]),
    ([READY, FAILED], [McpServerEvent("s", "a", "ready", "ready with 1 tool", 1)], ["b"]),
    ([READY, FAILED], [McpServerEvent("s", "b", "failed", "exited with code 3")], ["a"]),
    ([FAILED], [McpServerEvent("s", "b", "failed", "exited with code 3"),
                McpServerEvent("s", "b", "ready", "ready with 1 tool", 1)], ["b"]),
    ([FAILED], [McpServerEvent("s", "b", "failed", "another reason")], ["b"]),
    ([FAILED], [AssistantText("s", "b failed")], ["b"]),
    ([STARTING], [], []),
])
def test_what_a_run_records(states: list[ServerState], seen: list[McpServerEvent],
                            reported: list[str]) -> None:
    assert [e.server for e in unseen_outcomes("s", states, seen)] == reported


def test_the_chat_says_nothing_of_a_servers_outcome(qtbot: object) -> None:
    from desktop.chat.feed import apply_event
    from desktop.chat.model import ChatModel

    model = ChatModel()
    apply_event(model, McpServerEvent("s", "ok", "ready", "ready with 2 tools", 2))
    apply_event(model, McpServerEvent("s", "git", "failed", "no answer within 60 s"))
    assert model.items() == []


@pytest.fixture
def worker_settings() -> dict[str, Any]:
    """For the `served` worker (tests/conftest.py)."""
    return {"mcpServers": {"edge": edge(), "dies": edge("--die-at-start")}}


def test_a_run_in_the_app_records_each_new_outcome_once(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path,
        reins_home: AppPaths) -> None:
    server, worker = served

    def settled() -> bool:
        states = [m for m in worker.received if isinstance(m, p.McpServerStates)]
        return bool(states) and {s.status for s in states[-1].servers} <= {"ready", "failed"} \
            and len(states[-1].servers) == 2

    deadline = time.monotonic() + 60
    while not settled() and time.monotonic() < deadline:
        worker.wait_for(p.McpServerStates, len([m for m in worker.received
                                                if isinstance(m, p.McpServerStates)]) + 1)
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    server.add(reply("one"), reply("two"))
    worker.send(p.StartRun(session, "first"))
    worker.wait_for(p.RunStatus, 2)
    worker.send(p.StartRun(session, "second"))
    worker.wait_for(p.RunStatus, 4)
    sent = [m.event for m in worker.received if isinstance(m, p.EventMessage)
            and isinstance(m.event, McpServerEvent)]
    assert sorted((e.server, e.state) for e in sent) == [("dies", "failed"), ("edge", "ready")]
    dies = next(e for e in sent if e.server == "dies")
    assert "exited with code 3 before it was ready" in dies.reason
    assert "edge: fatal: cannot open the database" in dies.stderr_tail
    with SessionStore(reins_home.database) as store:
        stored = [e for _, e in store.events(session) if isinstance(e, McpServerEvent)]
    assert stored == sent
