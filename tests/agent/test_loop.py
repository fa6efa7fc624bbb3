"""The agent loop against the fake Messages API server, driven through the real SDK."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kernel.agent.limits import LoopLimits
from kernel.agent.loop import Agent
from kernel.agent.reporter import StoreFailed
from kernel.agent.store import RunState
from kernel.events import AssistantDelta, RunFinished, ToolCallStarted
from kernel.fakemodel import Failure, Reply, Text, Thinking, ToolUse, reply
from kernel.runtime.assemble import open_kernel
from kernel.tools.externalize import OutputStore
from kernel.tools.schema import tool
from kernel.tools.spec import ToolResult
from tests.agent.conftest import Harness, extra_tool


def tool_results(request) -> dict[str, dict]:
    last = request.body["messages"][-1]
    return {b["tool_use_id"]: b for b in last["content"] if b.get("type") == "tool_result"}


def test_multi_round_run_with_parallel_calls(harness: Harness):
    harness.server.add(
        reply("Reading both.", ToolUse("read_file", {"path": "a.txt"}, id="c1"),
              ToolUse("read_file", {"path": "b.txt"}, id="c2"),
              ToolUse("list_directory", {"path": "."}, id="c3")),
        reply("a says alpha, b says beta.", cache_read_input_tokens=90,
              cache_creation_input_tokens=7),
    )
    sid, finished = harness.run("what is in a and b?")
    assert finished.stop_reason == "end_turn" and finished.rounds == 2
    assert finished.usage["input_tokens"] == 200 and finished.usage["output_tokens"] == 40
    assert finished.usage["cache_read_input_tokens"] == 90
    assert finished.usage["cache_creation_input_tokens"] == 7
    assert [e.type for e in harness.reported()] == [
        "session_started", "user_message", "assistant_text",
        "tool_call", "tool_call", "tool_call", "tool_result", "tool_result", "tool_result",
        "assistant_text", "run_finished"]
    assert harness.stored(sid) == harness.reported()
    assert any(isinstance(e, AssistantDelta) for e in harness.seen)
    results = tool_results(harness.server.requests[1])
    assert list(results) == ["c1", "c2", "c3"]
    assert "alpha file" in str(results["c1"]["content"]) and not results["c1"]["is_error"]
    assert "beta file" in str(results["c2"]["content"])
    assert "a.txt" in str(results["c3"]["content"])
    first = harness.server.requests[0].body
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert str(harness.workspace) in first["system"][0]["text"]
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["tool_choice"] == {"type": "auto"} and first["stream"] is True
    history = harness.store.messages(sid)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[:3] == [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                          for b in m["content"]]}
        for m in harness.server.requests[1].body["messages"]]
    trace = harness.store.trace(sid)
    assert [t["round"] for t in trace] == [0, 1]
    assert trace[0]["request_id"] == "req_fake_1"
    assert [t["name"] for t in trace[0]["tools"]] == ["read_file", "read_file", "list_directory"]
    assert trace[1]["answer"] == "a says alpha, b says beta."
    assert trace[1]["usage"]["cache_read_input_tokens"] == 90
    assert harness.store.get_session(sid).run_state is RunState.FINISHED
    assert harness.store.get_session(sid).title == "what is in a and b?"


def test_hallucinated_tool_and_bad_arguments_are_results_the_model_recovers_from(
        harness: Harness):
    harness.server.add(
        reply(ToolUse("read_fil", {"path": "a.txt"}, id="c1"),
              ToolUse("read_file", {"path": 5}, id="c2")),
        reply(ToolUse("read_file", {"path": "a.txt"}, id="c3")),
        reply("alpha."),
    )
    _, finished = harness.run("read a")
    assert finished.stop_reason == "end_turn" and finished.rounds == 3
    results = tool_results(harness.server.requests[1])
    assert results["c1"]["is_error"] and "read_file" in results["c1"]["content"]
    assert results["c2"]["is_error"] and "path" in results["c2"]["content"]
    codes = {e.call_id: e.error_code for e in harness.of_type("tool_result")}
    assert codes == {"c1": "unknown_tool", "c2": "invalid_arguments", "c3": None}


def test_third_identical_call_is_not_run_and_fifth_stops_the_loop(harness: Harness):
    same = {"path": "a.txt"}
    harness.server.add(*[reply(ToolUse("read_file", same, id=f"c{i}")) for i in range(1, 6)])
    _, finished = harness.run("loop")
    assert finished.stop_reason == "loop_detected" and finished.rounds == 5
    codes = [e.error_code for e in harness.of_type("tool_result")]
    assert codes == [None, None, "loop_detected", "loop_detected", "loop_detected"]
    blocked = tool_results(harness.server.requests[3])["c3"]
    assert blocked["is_error"] and "already made" in blocked["content"]
    assert "alpha file" in blocked["content"]


def test_max_rounds_stops_with_its_own_reason(harness: Harness):
    harness.server.add(*[reply(ToolUse("read_file", {"path": f"{c}.txt"}))
                         for c in "abab"])
    _, finished = harness.run("go", limits=LoopLimits(max_rounds=2))
    assert (finished.stop_reason, finished.rounds) == ("max_rounds", 2)
    assert len(harness.server.requests) == 2


def test_token_budget_stops_with_its_own_reason(harness: Harness):
    harness.server.add(*[reply(ToolUse("read_file", {"path": f"{c}.txt"})) for c in "abab"])
    _, finished = harness.run("go", limits=LoopLimits(max_tokens=200))
    assert (finished.stop_reason, finished.rounds) == ("token_budget", 2)


def test_cost_budget_uses_the_price_table(harness: Harness):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"}), input_tokens=400_000),
                       reply("never"))
    _, finished = harness.run("go", limits=LoopLimits(max_cost_usd=1.0))
    assert (finished.stop_reason, finished.rounds) == ("cost_budget", 1)
    assert finished.cost_usd == 400_000 * 3 / 1e6 + 20 * 15 / 1e6


def test_time_budget_stops_with_its_own_reason(harness: Harness):
    @tool
    async def slow() -> str:
        """Takes a while."""
        await asyncio.sleep(30)
        return "done"

    extra_tool(harness, slow)
    harness.server.add(reply(ToolUse("slow", {}, id="s1")), reply("never"))
    # Long enough for the first request on a loaded machine, far below the tool's 30 s.
    _, finished = harness.run("go", limits=LoopLimits(max_seconds=2.0))
    assert (finished.stop_reason, finished.rounds) == ("time_budget", 1)
    assert [e.error_code for e in harness.of_type("tool_result")] == ["cancelled"]
    assert len(harness.server.requests) == 1


def test_per_tool_rate_limit(harness: Harness):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"}, id="c1"),
                             ToolUse("read_file", {"path": "b.txt"}, id="c2")), reply("ok"))
    _, finished = harness.run("go", limits=LoopLimits(rate_limits={"read_file": 1}))
    assert finished.stop_reason == "end_turn"
    results = tool_results(harness.server.requests[1])
    assert not results["c1"]["is_error"]
    assert results["c2"]["is_error"] and "1 calls per minute" in results["c2"]["content"]


def test_overloaded_then_success(harness: Harness):
    harness.server.add(Failure(529), Failure(529), reply("fine"))
    _, finished = harness.run("hi")
    assert finished.stop_reason == "end_turn"
    assert len(harness.server.requests) == 3


def test_overload_after_retries_is_a_clear_error_and_the_turn_is_retryable(harness: Harness):
    harness.server.add(Failure(529), Failure(529), Failure(529))
    sid, finished = harness.run("hi")
    assert finished.stop_reason == "error"
    (error,) = harness.of_type("error")
    assert error.code == "overloaded" and "529" in error.message
    assert "retry" in error.message.lower()
    assert harness.store.messages(sid)[-1]["role"] == "user"
    harness.server.add(reply("back"))
    agent = harness.agent()
    resumed = asyncio.run(agent.resume(sid, harness.seen.append))
    assert resumed is not None and resumed.stop_reason == "end_turn"
    assert harness.server.requests[-1].body["messages"][-1]["content"][0]["text"] == "hi"


def test_a_new_prompt_after_a_failed_turn_is_its_own_turn_never_merged(harness: Harness):
    """After a 529 the user writes something else instead of Retry: the failed prompt stays
    in the history as its own turn, closed by a note that it got no answer; the new prompt
    is a user turn of its own (the API would merge two user turns into one)."""
    harness.server.add(Failure(529), Failure(529), Failure(529))
    sid, finished = harness.run("write the report")
    assert finished.stop_reason == "error"
    harness.server.add(reply("Here is the summary."))
    _, again = harness.run("just summarize instead", session_id=sid)
    assert again.stop_reason == "end_turn"
    messages = harness.server.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    texts = [[b.get("text") for b in m["content"]] for m in messages]
    assert texts[0] == ["write the report"]
    assert texts[1] == ["(No answer to this message: the request failed (overloaded).)"]
    assert texts[2] == ["just summarize instead"]
    assert not harness.server.problems


def test_a_new_prompt_after_a_stopped_unanswered_turn_is_its_own_turn(harness: Harness):
    harness.server.add(Reply((Text("never seen"),), stall_after=1))
    sid = harness.session()
    agent = harness.agent()

    async def go() -> RunFinished:
        asyncio.get_running_loop().call_later(0.5, agent.cancel, sid)
        try:
            return await agent.run(sid, "first question", harness.seen.append)
        finally:
            await agent.provider.close()

    asyncio.run(go())
    harness.server.release()
    assert harness.store.messages(sid)[-1]["role"] == "user", "no answer was kept"
    harness.server.add(reply("ok"))
    harness.run("second question", session_id=sid)
    messages = harness.server.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0]["text"] == (
        "(No answer to this message: the user stopped the run before it was answered.)")
    assert [b.get("text") for b in messages[2]["content"]] == ["second question"]


def test_stream_cut_mid_message_keeps_partial_text(harness: Harness):
    harness.server.add(Reply((Text("The answer is forty-two, because"),), cut_after=5,
                             chunk_chars=6))
    sid, finished = harness.run("q", max_retries=0)
    assert finished.stop_reason == "error"
    (error,) = harness.of_type("error")
    assert error.code == "stream_broken"
    assert [e.text for e in harness.of_type("assistant_text")] == ["The answer is fort"]
    assert harness.store.messages(sid)[-1]["role"] == "user"


def test_stalled_stream_ends_within_the_read_timeout(harness: Harness):
    harness.server.add(Reply((Text("slow start and then nothing"),), stall_after=4,
                             chunk_chars=5))
    _, finished = harness.run("q", max_retries=0, read_timeout_s=0.5)
    harness.server.release()
    assert finished.stop_reason == "error"
    (error,) = harness.of_type("error")
    assert error.code == "stream_broken" and "0.5 s" in error.message
    assert [e.text for e in harness.of_type("assistant_text")] == ["slow start"]


def test_cancel_mid_stream(harness: Harness):
    harness.server.add(Reply((Text("word " * 200),), delay_s=0.02, chunk_chars=5))
    sid = harness.session()
    agent = harness.agent()

    async def go() -> RunFinished:
        def sink(event):
            harness.seen.append(event)
            if isinstance(event, AssistantDelta) and len(harness.of_type("assistant_delta")) == 3:
                agent.cancel(sid)
        try:
            return await agent.run(sid, "talk", sink)
        finally:
            await agent.provider.close()

    finished = asyncio.run(go())
    harness.server.release()
    assert finished.stop_reason == "cancelled"
    partial = harness.of_type("assistant_text")[0].text
    assert partial.startswith("word word") and len(partial) < 100
    assert harness.store.messages(sid)[-1] == {
        "role": "assistant", "content": [{"type": "text", "text": partial.rstrip()}]}
    harness.server.add(reply("ok"))
    _, again = harness.run("go on", session_id=sid)
    assert again.stop_reason == "end_turn"
    assert not harness.server.problems


def test_cancel_mid_tool(harness: Harness):
    state = {"cancelled": False}

    @tool
    async def wait_forever() -> str:
        """Never finishes by itself."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return "never"

    extra_tool(harness, wait_forever)
    harness.server.add(reply(ToolUse("wait_forever", {}, id="w1"),
                             ToolUse("read_file", {"path": "a.txt"}, id="r1")))
    sid = harness.session()
    agent = harness.agent()

    async def go() -> RunFinished:
        def sink(event):
            harness.seen.append(event)
            if isinstance(event, ToolCallStarted) and event.name == "wait_forever":
                asyncio.get_running_loop().call_later(0.05, agent.cancel, sid)
        try:
            return await agent.run(sid, "wait", sink)
        finally:
            await agent.provider.close()

    finished = asyncio.run(go())
    assert finished.stop_reason == "cancelled" and state["cancelled"]
    codes = {e.call_id: e.error_code for e in harness.of_type("tool_result")}
    assert codes == {"w1": "cancelled", "r1": "cancelled"}
    last = harness.store.messages(sid)[-1]
    assert [(b["tool_use_id"], b["is_error"]) for b in last["content"]] == [
        ("w1", True), ("r1", True)]
    harness.server.add(reply("ok"))
    _, again = harness.run("next", session_id=sid)
    assert again.stop_reason == "end_turn" and not harness.server.problems


def test_max_tokens_is_continued_once_then_reported(harness: Harness):
    harness.server.add(reply("part one", stop_reason="max_tokens"), reply("part two"))
    _, finished = harness.run("long")
    assert finished.stop_reason == "end_turn"
    assert "cut off" in harness.server.requests[1].body["messages"][-1]["content"][0]["text"]
    harness.seen.clear()
    harness.server.add(reply("a", stop_reason="max_tokens"), reply("b", stop_reason="max_tokens"))
    _, finished = harness.run("longer")
    assert finished.stop_reason == "max_tokens"
    assert harness.of_type("error")[0].code == "max_tokens"


def test_pause_turn_refusal_and_thinking_blocks(harness: Harness):
    harness.server.add(
        Reply((Thinking("let me think"), ToolUse("read_file", {"path": "a.txt"}, id="c1"))),
        reply("searching", stop_reason="pause_turn"),
        reply("done"),
    )
    _, finished = harness.run("think", thinking_budget=1024, max_tokens=4096)
    assert finished.stop_reason == "end_turn"
    second = harness.server.requests[1].body
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert second["messages"][1]["content"][0] == {
        "type": "thinking", "thinking": "let me think", "signature": "fake-signature"}
    third = harness.server.requests[2].body["messages"]
    assert third[-1] == {"role": "assistant", "content": [{"type": "text", "text": "searching"}]}
    harness.server.add(reply("I can't help with that.", stop_reason="refusal"))
    _, refused = harness.run("bad")
    assert refused.stop_reason == "refusal"


def test_resume_dispatches_only_the_calls_without_a_stored_result(harness: Harness):
    runs: list[str] = []

    @tool(concurrent_safe=True)
    def count(tag: str) -> str:
        """Counts executions."""
        runs.append(tag)
        return f"ran {tag}"

    extra_tool(harness, count)
    sid = harness.session()
    store = harness.store
    store.append_message(sid, {"role": "user", "content": [{"type": "text", "text": "go"}]})
    store.append_message(sid, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "k1", "name": "count", "input": {"tag": "one"}},
        {"type": "tool_use", "id": "k2", "name": "count", "input": {"tag": "two"}}]})
    store.result_log(sid).put(ToolResult("k1", "ran one (before the crash)"))
    store.set_run_state(sid, RunState.RUNNING, {"rounds": 1})
    harness.server.add(reply("both done"))
    agent = harness.agent()
    finished = asyncio.run(agent.resume(sid, harness.seen.append))
    assert finished is not None and finished.stop_reason == "end_turn"
    assert finished.rounds == 2
    assert runs == ["two"]
    results = tool_results(harness.server.requests[0])
    assert results["k1"]["content"] == "ran one (before the crash)"
    assert results["k2"]["content"] == "ran two"
    assert asyncio.run(harness.agent().resume(sid, harness.seen.append)) is None


def test_the_time_budget_covers_the_whole_run_across_a_resume(harness: Harness):
    """A run that had used its time before the crash is not given a fresh clock."""
    def interrupted(elapsed: object) -> str:
        sid = harness.session()
        harness.store.append_message(sid, {"role": "user",
                                           "content": [{"type": "text", "text": "go"}]})
        harness.store.set_run_state(sid, RunState.RUNNING, {"rounds": 0, "elapsed_s": elapsed})
        return sid

    limits = LoopLimits(max_seconds=60)
    spent = interrupted(61.5)
    finished = asyncio.run(harness.agent(limits=limits).resume(spent, harness.seen.append))
    assert finished is not None and finished.stop_reason == "time_budget"
    assert harness.server.requests == []
    harness.server.add(reply("done"), reply("done again"))
    for elapsed in (2.0, "not a number"):
        sid = interrupted(elapsed)
        finished = asyncio.run(harness.agent(limits=limits).resume(sid, harness.seen.append))
        assert finished is not None and finished.stop_reason == "end_turn"
        info = harness.store.get_session(sid).run_info
        assert info["elapsed_s"] >= (2.0 if elapsed == 2.0 else 0.0)


def test_old_tool_results_are_trimmed_to_pointers_near_the_context_window(
        harness: Harness, workspace: Path):
    for i in range(3):
        (workspace / f"big{i}.txt").write_text(f"file {i}\n" + ("x" * 99 + "\n") * 60)
    harness.server.add(*[reply(ToolUse("read_file", {"path": f"big{i}.txt"}, id=f"b{i}"))
                         for i in range(3)], reply("done"))
    sid, finished = harness.run("read them", context_window=9000, max_tokens=1000)
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    last = harness.server.requests[-1].body["messages"]
    first_result = last[2]["content"][0]
    assert first_result["tool_use_id"] == "b0"
    assert "older tool result removed" in first_result["content"]
    path = Path(first_result["content"].split("full output is at ")[1].split(" — ")[0])
    assert path.read_text().count("x" * 99) == 60
    newest = last[-1]["content"][0]
    assert str(newest["content"]).count("x" * 99) == 60
    assert "b0" in harness.store.trace(sid)[-1]["trimmed_results"]
    assert str(harness.store.messages(sid)[2]["content"][0]["content"]).count("x" * 99) == 60


def test_a_trimmed_results_full_output_is_on_disk_before_the_next_tool_runs(
        harness: Harness, workspace: Path):
    """The full output of a trimmed result is written in a thread while the request goes
    out; the tool the model answers with reads it."""
    for i in range(3):
        (workspace / f"big{i}.txt").write_text(f"file {i}\n" + ("x" * 99 + "\n") * 60)
    harness.server.add(*[reply(ToolUse("read_file", {"path": f"big{i}.txt"}, id=f"b{i}"))
                         for i in range(3)],
                       reply(ToolUse("read_tool_output", {"call_id": "b0"}, id="again")),
                       reply("done"))
    _, finished = harness.run("read them", context_window=9000, max_tokens=1000)
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    asked = harness.server.requests[3].body["messages"]
    assert "older tool result removed" in asked[2]["content"][0]["content"]
    again = tool_results(harness.server.requests[4])["again"]
    assert not again["is_error"] and str(again["content"]).count("x" * 99) == 60


def _reads_near_the_window(harness: Harness, sid: str, names: list[str]
                           ) -> tuple[list[list[dict[str, Any]]], RunFinished]:
    """A run that reads `names` (call ids b0, b1, …) in a 9,000-token window, then ends:
    the messages of each request, and how the run finished."""
    harness.server.add(*[reply(ToolUse("read_file", {"path": name}, id=f"b{i}"))
                         for i, name in enumerate(names)], reply("done"))
    _, finished = harness.run("read them", session_id=sid, context_window=9000,
                              max_tokens=1000)
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    return [r.body["messages"] for r in harness.server.requests], finished


def test_a_full_output_that_cannot_be_written_is_not_pointed_to_again(
        harness: Harness, workspace: Path):
    for i in range(8):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n" + ("x" * 99 + "\n") * 30)
    sid = harness.session()
    OutputStore.for_session(harness.paths, sid).path_for("b0").mkdir(parents=True)
    requests, _ = _reads_near_the_window(harness, sid, [f"f{i}.txt" for i in range(8)])
    trimming = [n for n, m in enumerate(requests) if "older tool result" in str(m)]
    pointed = [n for n in trimming if "older tool result" in str(requests[n][2])]
    assert len(trimming) >= 2 and pointed == trimming[:1]
    last = requests[-1]
    assert str(last[2]["content"][0]["content"]).count("x" * 99) == 30
    assert "older tool result removed" in last[4]["content"][0]["content"]


def test_a_full_output_written_after_the_last_request_is_awaited_and_its_failure_reported(
        harness: Harness, workspace: Path):
    """The last request trims a result: its full output is written in a thread while that
    request goes out, and no tool runs after it. The run waits for the write before it
    ends; the write fails (the session's output folder is a file, which stops root too)
    and says so in an error event, stored and reported before run_finished."""
    for i in range(3):
        (workspace / f"big{i}.txt").write_text(f"file {i}\n" + ("x" * 99 + "\n") * 60)
    sid = harness.session()
    root = OutputStore.for_session(harness.paths, sid).root
    root.parent.mkdir(parents=True)
    root.write_text("a file where the output folder goes")
    requests, finished = _reads_near_the_window(harness, sid,
                                                [f"big{i}.txt" for i in range(3)])
    assert [n for n, m in enumerate(requests) if "older tool result" in str(m)] == [3]
    reported = harness.reported()
    (error,) = [e for e in reported if e.type == "error"]
    assert error.code == "output_not_stored"
    assert "b0" in error.message and str(root / "b0.txt") in error.message
    assert "File exists" in error.message or "Not a directory" in error.message
    assert reported[-2:] == [error, finished]
    assert harness.stored(sid) == reported
    assert root.read_text() == "a file where the output folder goes"


def test_a_failing_sink_stops_the_run_instead_of_going_on_unreported(harness: Harness):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"}, id="c1")),
                       reply(ToolUse("read_file", {"path": "b.txt"}, id="c2")), reply("x"))
    sid = harness.session()
    agent = harness.agent()

    def sink(event):
        if event.type == "tool_call":
            raise BrokenPipeError("stdout closed")
        harness.seen.append(event)

    async def go():
        try:
            return await agent.run(sid, "go", sink)
        finally:
            await agent.provider.close()

    with pytest.raises(StoreFailed, match="stdout closed"):
        asyncio.run(go())
    assert len(harness.server.requests) <= 2
    assert "tool_call" in [e.type for e in harness.stored(sid)]


def test_a_run_prepares_its_workspace_before_it_asks_the_model(harness: Harness):
    """The kernel passes `CommandExecutor.prepare`: the first command's sandbox is made
    while the model writes (kernel.sandbox.standby)."""
    prepared: list[tuple[Path, int]] = []
    base = harness.agent()
    agent = Agent(harness.store, harness.registry, base.provider, paths=harness.paths,
                  prepare=lambda ws: prepared.append((ws, len(harness.server.requests))))
    harness.server.add(reply("Done."))
    _sid, finished = harness.run("hello", agent=agent)
    assert finished.stop_reason == "end_turn"
    assert prepared == [(harness.workspace, 0)]


def test_the_kernels_agents_prepare_the_command_sandbox(harness: Harness):
    kernel = open_kernel(harness.paths)
    provider = harness.agent().provider
    try:
        assert kernel.agent(provider).prepare == kernel.executor.prepare
    finally:
        kernel.close()
        asyncio.run(provider.close())
