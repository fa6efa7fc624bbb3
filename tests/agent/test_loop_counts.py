"""What a run reports about itself when a real model is stopped or repeats itself: a turn
stopped mid-stream counts its round and what streamed; calls refused as a loop are
recorded in the order the model made them (the agent against the fake Messages API
server, through the real SDK)."""

from __future__ import annotations

import asyncio

import pytest

from kernel.agent.context import CHARS_PER_TOKEN
from kernel.agent.limits import LoopLimits
from kernel.events import AssistantDelta, RunFinished
from kernel.fakemodel import Reply, Silence, Text, ToolUse, reply
from tests.agent.conftest import Harness

LONG = "word " * 400


def _cancelled_after(harness: Harness, deltas: int) -> RunFinished:
    sid = harness.session()
    agent = harness.agent()

    async def go() -> RunFinished:
        def sink(event: object) -> None:
            harness.seen.append(event)  # type: ignore[arg-type]
            if isinstance(event, AssistantDelta) and \
                    len(harness.of_type("assistant_delta")) == deltas:
                agent.cancel(sid)
        try:
            return await agent.run(sid, "talk", sink)
        finally:
            await agent.provider.close()

    return asyncio.run(go())


@pytest.mark.parametrize("deltas", [1, 5, 20])
def test_a_run_cancelled_mid_stream_counts_its_round_and_what_streamed(harness: Harness,
                                                                       deltas: int) -> None:
    harness.server.add(Reply((Text(LONG),), delay_s=0.01, chunk_chars=5, input_tokens=321))
    finished = _cancelled_after(harness, deltas)
    harness.server.release()
    assert finished.stop_reason == "cancelled"
    streamed = sum(len(e.text) for e in harness.of_type("assistant_delta"))
    assert finished.rounds == 1
    assert finished.usage["input_tokens"] == 321
    assert finished.usage["output_tokens"] >= streamed / CHARS_PER_TOKEN > 0
    assert finished.usage["output_tokens"] < len(LONG) / CHARS_PER_TOKEN


def test_a_time_budget_that_ends_a_stream_counts_it(harness: Harness) -> None:
    harness.server.add(reply("Done.", input_tokens=50),
                       Reply((Text(LONG),), delay_s=0.05, chunk_chars=5, input_tokens=77))
    sid, first = harness.run("one")
    assert first.rounds == 1
    _, finished = harness.run("two", session_id=sid, limits=LoopLimits(max_seconds=1.5))
    harness.server.release()
    assert finished.stop_reason == "time_budget"
    assert finished.rounds == 1 and finished.usage["input_tokens"] == 77
    assert finished.usage["output_tokens"] > 0


def test_a_run_cancelled_before_its_answer_started_counts_no_round(harness: Harness) -> None:
    harness.server.add(Silence())
    sid = harness.session()
    agent = harness.agent()

    async def go() -> RunFinished:
        asyncio.get_running_loop().call_later(0.2, agent.cancel, sid)
        try:
            return await agent.run(sid, "talk", harness.seen.append)
        finally:
            await agent.provider.close()

    finished = asyncio.run(go())
    harness.server.release()
    assert finished.stop_reason == "cancelled"
    assert (finished.rounds, sum(finished.usage.values())) == (0, 0)


SAME = {"path": "a.txt"}


def _same(i: int) -> ToolUse:
    return ToolUse("read_file", SAME, id=f"c{i}")


# (the turn's calls, the ids refused as a loop)
TURNS = [
    ((_same(1), _same(2), _same(3)), {"c3"}),
    ((_same(1), _same(2), _same(3), ToolUse("list_directory", {"path": "."}, id="d1")),
     {"c3"}),
    ((_same(1), _same(2), _same(3), _same(4)), {"c3", "c4"}),
    ((ToolUse("list_directory", {"path": "."}, id="d1"), _same(1), _same(2), _same(3),
      ToolUse("list_directory", {"path": "."}, id="d2")), {"c3"}),
]


@pytest.mark.parametrize(("calls", "refused"), TURNS)
def test_calls_refused_as_a_loop_are_recorded_in_the_order_made(
        harness: Harness, calls: tuple[ToolUse, ...], refused: set[str]) -> None:
    harness.server.add(reply(*calls), reply("done"))
    _, finished = harness.run("go")
    assert finished.rounds == 2
    made = [c.id for c in calls]
    assert [e.call_id for e in harness.of_type("tool_call")] == made
    results = [e.call_id for e in harness.of_type("tool_result")]
    assert sorted(results) == sorted(made)
    for call_id in refused:  # a refused call's result follows every earlier call's
        position = made.index(call_id)
        assert all(results.index(earlier) < results.index(call_id)
                   for earlier in made[:position])
    codes = {e.call_id: e.error_code for e in harness.of_type("tool_result")}
    assert {k for k, v in codes.items() if v == "loop_detected"} == refused
    stored = [b["tool_use_id"] for b in harness.server.requests[1].body["messages"][-1]
              ["content"] if b.get("type") == "tool_result"]
    assert stored == made
