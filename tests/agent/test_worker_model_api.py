"""The desktop side of the model API, through the real kernel worker process and its pipe:
the agents get each model's limits from settings' "models", and CompactSession (the app's
Compact) summarizes a session's oldest turns, answered by a context_compacted event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernel import protocol as p
from kernel.agent.compact import SUMMARY_SYSTEM
from kernel.fakemodel import FakeAnthropicServer, reply
from tests.security.test_workspace_broad import Worker


@pytest.fixture
def worker_settings() -> dict[str, Any]:
    """For the `served` worker (tests/conftest.py)."""
    return {"model": "local-coder",
            "models": {"local-*": {"context_window": 16384, "max_tokens": 2048}}}


def _finished_runs(worker: Worker, count: int) -> None:
    worker.wait_for(p.RunStatus, count * 2)


def test_the_app_compacts_a_session_and_its_agents_use_the_models_limits(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path):
    server, worker = served
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    server.add(reply("one"), reply("two"), reply("Two questions, answered one and two."))
    worker.send(p.StartRun(session, "first question"))
    _finished_runs(worker, 1)
    worker.send(p.StartRun(session, "second question"))
    _finished_runs(worker, 2)
    assert server.requests[0].body["max_tokens"] == 2048
    worker.send(p.CompactSession(session))
    _finished_runs(worker, 3)
    compacted = [m.event for m in worker.received if isinstance(m, p.EventMessage)
                 and m.event.type == "context_compacted"]
    assert len(compacted) == 1 and compacted[0].reason == "user"
    assert server.requests[-1].body["system"] == SUMMARY_SYSTEM
    assert server.problems == []
