"""A pending approval survives `kill -9`: after a restart the same request is pending again,
is answered, and the run continues from exactly that call (none twice, none skipped)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from kernel.agent.store import SessionStore
from kernel.events import AssistantDelta, Event
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from kernel.policy.channels import Answer, QueueChannel
from tests.policy.restartkit import MODEL, agent_for

ROOT = Path(__file__).resolve().parents[2]


def _script() -> list:
    return [
        reply("working", ToolUse("tick", {}, id="call_tick"),
              ToolUse("write_file", {"path": "a.txt", "content": "A"}, id="call_a"),
              ToolUse("write_file", {"path": "b.txt", "content": "B"}, id="call_b")),
        reply("all done"),
    ]


def _wait_for_request(child: subprocess.Popen[str]) -> list[dict]:
    seen: list[dict] = []
    assert child.stdout is not None
    for line in child.stdout:
        event = json.loads(line)
        seen.append(event)
        if event["type"] == "approval_request":
            return seen
    raise AssertionError(f"the child ended before asking: {seen}")


def test_pending_approval_survives_kill_and_resumes(workspace: Path, reins_home: AppPaths,
                                                    tmp_path: Path) -> None:
    with FakeAnthropicServer(_script(), api_key="test-key") as server:
        with SessionStore(reins_home.database) as store:
            sid = store.create_session(workspace, MODEL, "ask")
        env = {**os.environ, "REINS_HOME": os.environ["REINS_HOME"], "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.policy.restartkit", server.base_url, sid],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            printed = _wait_for_request(child)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        assert printed[-1]["call_id"] == "call_a"
        assert (workspace / "ticks.txt").read_text() == "call_tick\n"
        assert not (workspace / "a.txt").exists()

        with SessionStore(reins_home.database) as store:
            stored = [e for _, e in store.events(sid)]
            assert [e.call_id for e in stored if e.type == "approval_request"] == ["call_a"]
            assert store.get_result(sid, "call_a") is None
            assert store.get_result(sid, "call_tick") is not None

            channel = QueueChannel()
            asked: list[str] = []
            reported: list[Event] = []

            async def resume() -> object:
                agent = agent_for(store, reins_home, server.base_url, channel)

                async def answer() -> None:
                    while True:
                        request = await channel.requests.get()
                        asked.append(request.call_id)
                        channel.answer(request.call_id, Answer("allow_once"))

                helper = asyncio.ensure_future(answer())
                try:
                    return await agent.resume(sid, reported.append)
                finally:
                    helper.cancel()
                    await agent.provider.close()

            finished = asyncio.run(resume())
            after = [e for _, e in store.events(sid)]

        assert getattr(finished, "stop_reason", None) == "end_turn"
        assert asked == ["call_a", "call_b"]
        assert (workspace / "ticks.txt").read_text() == "call_tick\n"
        assert (workspace / "a.txt").read_text() == "A"
        assert (workspace / "b.txt").read_text() == "B"

        requests = [e.call_id for e in after if e.type == "approval_request"]
        assert requests == ["call_a", "call_b"]
        shown = [e for e in reported if not isinstance(e, AssistantDelta)]
        assert [e.call_id for e in shown if e.type == "approval_request"] == ["call_a", "call_b"]
        decisions = [(e.call_id, e.decision) for e in after if e.type == "approval_decision"]
        assert decisions == [("call_tick", "allow"), ("call_a", "allow_once"),
                             ("call_b", "allow_once")]
        results = [e.call_id for e in after if e.type == "tool_result"]
        assert sorted(results) == ["call_a", "call_b", "call_tick"]
        assert len(results) == 3

        second = server.requests[-1].body["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in second if b["type"] == "tool_result"] == [
            "call_tick", "call_a", "call_b"]
        assert not any(b.get("is_error") for b in second if b["type"] == "tool_result")
        assert len(server.requests) == 2
