"""Stopping one tool call of a run (Agent.cancel_call): the run goes on, the model is told.

Driven through the real SDK against the fake Messages API server, with the real command
executor (bubblewrap) and, for approvals, the real PolicyGate on a QueueChannel.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kernel.agent.loop import Agent
from kernel.events import ApprovalDecision, ApprovalRequest, Event, RunFinished, ToolCallStarted
from kernel.fakemodel import ToolUse, reply
from kernel.policy.approvals import gate_factory
from kernel.policy.channels import QueueChannel
from kernel.runtime.assemble import SandboxFacts
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.builtin.command import make_run_command
from tests.agent.conftest import Harness, extra_tool
from tests.sandbox.sandbox_helpers import leftovers

MARKER = "1000.4242"
"""`sleep 1000.4242`: a 1000-second sleep whose command line no other process has."""


def _tool_results(request: Any) -> dict[str, dict]:
    last = request.body["messages"][-1]
    return {b["tool_use_id"]: b for b in last["content"] if b.get("type") == "tool_result"}


async def _poll(predicate: Any, tries: int = 400) -> bool:
    """Wait (up to tries × 25 ms) for `predicate()`; no timing is asserted."""
    for _ in range(tries):
        if predicate():
            return True
        await asyncio.sleep(0.025)
    return predicate()


def test_a_running_command_is_stopped_by_call_id_and_the_run_goes_on(harness: Harness):
    executor = CommandExecutor(harness.paths, ExecSettings(grace_s=0.5))
    extra_tool(harness, make_run_command(executor))
    command = f"sleep {MARKER} & sleep {MARKER}"
    harness.server.add(
        reply("Starting both sleeps.", ToolUse("run_command", {"command": command}, id="cmd1"),
              ToolUse("read_file", {"path": "a.txt"}, id="read1")),
        reply("The command was stopped; a.txt says alpha."),
    )
    sid = harness.session()
    agent = harness.agent()
    outcome: dict[str, Any] = {}

    async def stop_when_both_sleep() -> None:
        outcome["seen_running"] = await _poll(lambda: len(leftovers(MARKER)) >= 2)
        outcome["stopped"] = agent.cancel_call(sid, "cmd1")

    async def go() -> RunFinished:
        tasks: list[asyncio.Task[None]] = []

        def sink(event: Event) -> None:
            harness.seen.append(event)
            if isinstance(event, ToolCallStarted) and event.call_id == "cmd1":
                tasks.append(asyncio.ensure_future(stop_when_both_sleep()))
        try:
            return await agent.run(sid, "sleep twice, then read a.txt", sink)
        finally:
            await agent.provider.close()
            executor.shutdown()

    finished = asyncio.run(go())
    assert outcome == {"seen_running": True, "stopped": True}
    assert finished.stop_reason == "end_turn" and finished.rounds == 2
    results = {e.call_id: e for e in harness.of_type("tool_result")}
    assert results["cmd1"].is_error and results["cmd1"].error_code == "cancelled"
    assert not results["read1"].is_error
    sent = _tool_results(harness.server.requests[1])
    assert list(sent) == ["cmd1", "read1"]
    assert sent["cmd1"]["is_error"] is True
    assert "stopped the call to 'run_command' while it was running" in str(
        sent["cmd1"]["content"])
    assert "alpha file" in str(sent["read1"]["content"])
    assert harness.of_type("assistant_text")[-1].text == (
        "The command was stopped; a.txt says alpha.")
    assert not agent.cancel_call(sid, "cmd1")  # the run is over
    assert leftovers(MARKER) == []
    assert not harness.server.problems


def test_a_call_waiting_for_approval_is_stopped_and_its_request_answered(harness: Harness):
    channel = QueueChannel()
    executor = CommandExecutor(harness.paths, ExecSettings(grace_s=0.5))
    factory = gate_factory(app_paths=harness.paths, sandbox=SandboxFacts(executor.status()),
                           channel=channel)
    harness.server.add(
        reply(ToolUse("write_file", {"path": "new.txt", "content": "x"}, id="w1")),
        reply("Not written, as you wished."),
    )
    sid = harness.session(mode="ask")
    agent: Agent = harness.agent(gate_factory=factory)
    outcome: dict[str, Any] = {}

    async def stop_when_asked() -> None:
        request = await channel.requests.get()
        outcome["asked"] = request.call_id
        outcome["stopped"] = agent.cancel_call(sid, "w1")

    async def go() -> RunFinished:
        stopper = asyncio.ensure_future(stop_when_asked())
        try:
            return await agent.run(sid, "write new.txt", harness.seen.append)
        finally:
            stopper.cancel()
            await agent.provider.close()

    finished = asyncio.run(go())
    assert outcome == {"asked": "w1", "stopped": True}
    assert channel.pending == []
    assert finished.stop_reason == "end_turn"
    assert not (harness.workspace / "new.txt").exists()
    kinds = [(e.type, getattr(e, "call_id", "")) for e in harness.reported()
             if isinstance(e, ApprovalRequest | ApprovalDecision) or e.type == "tool_result"]
    assert kinds == [("approval_request", "w1"), ("approval_decision", "w1"),
                     ("tool_result", "w1")]
    (decision,) = harness.of_type("approval_decision")
    assert decision.decision == "deny" and decision.decided_by == "user"
    (result,) = harness.of_type("tool_result")
    assert result.error_code == "cancelled"
    sent = _tool_results(harness.server.requests[1])
    assert "before it was approved, so it was not run" in str(sent["w1"]["content"])
    assert harness.stored(sid) == harness.reported()
