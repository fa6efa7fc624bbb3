"""Compaction: long sessions never die. Pure tables for the cut, the transcript and the
chunks; then whole runs against the fake server: a model with a 16K window through a
session that grows by write_file inputs, a server that answers "prompt is too long", the
app's Compact (Agent.compact) and a resume that goes on from the summary."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from kernel.agent.compact import (
    SUMMARY_INTRO,
    SUMMARY_SYSTEM,
    choose_cut,
    chunk_chars,
    chunks,
    summary_max_tokens,
    transcript,
)
from kernel.agent.context import estimate_tokens
from kernel.agent.store import SessionStore
from kernel.fakemodel import FakeAnthropicServer, Reply, ToolUse, reply
from kernel.fakemodel.validate import prompt_tokens
from kernel.tools.builtin import builtin_tools
from kernel.tools.registry import ToolRegistry
from tests.agent.conftest import Harness


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


HISTORY = [user("a" * 700), assistant("b" * 700), user("c" * 700), assistant("d" * 70),
           user("e" * 70), assistant("f" * 70), user("g" * 70)]
FROM_3, FROM_5 = estimate_tokens(HISTORY[3:]), estimate_tokens(HISTORY[5:])


@pytest.mark.parametrize(("history", "start", "keep", "cut"), [
    (HISTORY, 0, 10_000, 3),
    (HISTORY, 0, FROM_3, 3),
    (HISTORY, 0, FROM_3 - 1, 5),
    (HISTORY, 0, FROM_5, 5),
    (HISTORY, 0, 1, 5),
    (HISTORY, 3, 10_000, 5),
    (HISTORY, 5, 10_000, None),
    (HISTORY[:1], 0, 10, None),
    (HISTORY[:2], 0, 10, None),
    (HISTORY[:4], 0, 10, 3),
    (HISTORY, 1, 10_000, 3),
    (HISTORY, 2, 10_000, 5),
    ([], 0, 10, None),
])
def test_choose_cut(history, start, keep, cut):
    assert choose_cut(history, start, keep) == cut


def test_the_cut_keeps_tool_calls_with_their_results():
    history = [user("go"),
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                  "name": "read_file", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                             "content": "x" * 3000}]},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t2",
                                                  "name": "read_file", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                             "content": "y"}]}]
    for keep in (1, 50, 10_000):
        cut = choose_cut(history, 0, keep)
        assert cut is not None and history[cut]["role"] == "assistant"


def test_the_transcript_clips_each_block_head_and_tail():
    entries = transcript([
        user("u" * 10_000),
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "secret", "signature": "s"},
            {"type": "tool_use", "id": "t", "name": "write_file",
             "input": {"path": "f.txt", "content": "z" * 9000}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": [{"type": "text", "text": "written"}],
                                      "is_error": True}]},
        {"role": "user", "content": "plain string"},
        {"role": "assistant", "content": [{"type": "image", "source": {}}]},
    ])
    assert entries[0].startswith("User: ") and len(entries[0]) < 2700
    assert "characters left out" in entries[0]
    assert "secret" not in entries[1] and "[calls write_file with" in entries[1]
    assert entries[2] == "User: [result (error): written]"
    assert entries[3] == "User: plain string" and entries[4] == "Assistant: [image]"


@pytest.mark.parametrize(("entries", "size", "expected"), [
    (["aaa", "bbb"], 100, ["aaa\n\nbbb"]),
    (["aaa", "bbb"], 5, ["aaa", "bbb"]),
    (["abcdefghij"], 4, ["abcd", "efgh", "ij"]),
    ([], 10, []),
    ([""], 10, []),
])
def test_chunks(entries, size, expected):
    assert chunks(entries, size) == expected


def test_summary_sizes_fit_small_and_large_windows():
    assert summary_max_tokens(16384, 2048) == 2048
    assert summary_max_tokens(200_000, 32_000) == 8192
    assert summary_max_tokens(8192, 4096) == 1024
    for window, size in ((16384, 2048), (200_000, 8192), (8192, 1024)):
        room = chunk_chars(window, size) / 3.5 + size * 4 / 3.5
        assert room + size < window


class Script:
    """The fake model's side: summaries for summary requests, else the scripted work."""

    def __init__(self, work: list[Reply]) -> None:
        self.work = work
        self.summaries = 0

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        if body.get("system") == SUMMARY_SYSTEM:
            self.summaries += 1
            return reply(f"SUMMARY {self.summaries}: the user asked for files; written so far.")
        return self.work.pop(0) if self.work else reply("All files are written.")


def writes(n: int, size: int) -> list[Reply]:
    return [reply(f"Writing part {i}.", ToolUse("write_file", {
        "path": f"part{i}.txt", "content": f"part {i}\n" + "lorem ipsum " * (size // 12)},
        id=f"w{i}")) for i in range(n)]


def _harness(server: FakeAnthropicServer, reins_home: Any, workspace: Any) -> Harness:
    return Harness(server, reins_home, workspace, SessionStore(reins_home.database),
                   ToolRegistry(builtin_tools()))


def test_a_session_on_a_16k_window_model_is_compacted_and_never_refused(reins_home, workspace):
    script = Script(writes(24, 6000))
    with FakeAnthropicServer(api_key="test-key", responder=script,
                             context_limit_tokens=16384 - 2048) as server:
        harness = _harness(server, reins_home, workspace)
        try:
            sid, finished = harness.run("write the 24 parts", context_window=16384,
                                        max_tokens=2048)
            assert finished.stop_reason == "end_turn", harness.of_type("error")
            assert server.problems == [] and finished.rounds == 25
            compactions = harness.of_type("context_compacted")
            assert len(compactions) >= 2 and script.summaries >= 2
            assert all(c.reason == "auto" and c.tokens_after < c.tokens_before
                       for c in compactions)
            assert [c.first_kept for c in compactions] == sorted(c.first_kept
                                                                 for c in compactions)
            assert all(prompt_tokens(r.body, 3.5) <= 16384 - 2048 for r in server.requests)
            last = server.requests[-1].body
            assert last["messages"][0]["content"][0]["text"].startswith(SUMMARY_INTRO)
            assert f"SUMMARY {script.summaries}" in last["messages"][0]["content"][0]["text"]
            stored = harness.store.messages(sid)
            used = [b["input"]["path"] for m in stored if m["role"] == "assistant"
                    for b in m["content"] if b.get("type") == "tool_use"]
            assert used == [f"part{i}.txt" for i in range(24)]
            assert all((workspace / f"part{i}.txt").exists() for i in range(24))
            assert [e.type for e in harness.stored(sid)].count("context_compacted") == len(
                compactions)
        finally:
            harness.store.close()


def test_prompt_too_long_triggers_compaction_and_one_retry(reins_home, workspace):
    script = Script(writes(8, 6000))
    with FakeAnthropicServer(api_key="test-key", responder=script,
                             context_limit_tokens=9000) as server:
        harness = _harness(server, reins_home, workspace)
        try:
            sid, finished = harness.run("write the parts")
            assert finished.stop_reason == "end_turn", harness.of_type("error")
            refused = [p for p in server.problems if "prompt is too long" in p]
            assert len(refused) == 1 and len(server.problems) == 1
            reasons = [c.reason for c in harness.of_type("context_compacted")]
            assert reasons[0] == "prompt_too_long" and set(reasons[1:]) <= {"auto"}
            assert harness.of_type("error") == [] and finished.rounds == 9
            harness.seen.clear()
            script.work = [reply("Yes, from the summary.")]
            _, again = harness.run("do you remember?", session_id=sid)
            assert again.stop_reason == "end_turn"
            first = server.requests[-1].body["messages"][0]["content"][0]["text"]
            assert first.startswith(SUMMARY_INTRO)
        finally:
            harness.store.close()


def test_the_compact_button_summarizes_now_and_a_resume_goes_on_from_it(harness: Harness):
    harness.server.add(reply("one"), reply("two"))
    sid, _ = harness.run("first question")
    harness.run("second question", session_id=sid)
    harness.server.add(reply("Earlier: two questions, answered one and two."))
    agent = harness.agent()
    compacted = asyncio.run(_closing(agent, agent.compact(sid, harness.seen.append)))
    assert compacted is not None and compacted.reason == "user"
    assert compacted.summary == "Earlier: two questions, answered one and two."
    assert harness.server.requests[-1].body["system"] == SUMMARY_SYSTEM
    assert "first question" in str(harness.server.requests[-1].body["messages"])
    assert len(harness.store.messages(sid)) == 4
    harness.server.add(reply("three"))
    _, finished = harness.run("third question", session_id=sid)
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    sent = harness.server.requests[-1].body["messages"]
    assert sent[0]["content"][0]["text"].startswith(SUMMARY_INTRO)
    assert sent[1] == {"role": "assistant", "content": [{"type": "text", "text": "two"}]}


def test_nothing_to_compact_is_said(harness: Harness):
    harness.server.add(reply("one"))
    sid, _ = harness.run("only question")
    agent = harness.agent()
    assert asyncio.run(_closing(agent, agent.compact(sid, harness.seen.append))) is None
    assert harness.of_type("error")[-1].code == "nothing_to_compact"


def test_a_failed_summary_is_reported_and_loses_nothing(harness: Harness):
    from kernel.fakemodel import Failure

    harness.server.add(reply("one"), reply("two"))
    sid, _ = harness.run("first")
    harness.run("second", session_id=sid)
    harness.server.add(Failure(400, "invalid_request_error", "nope"))
    agent = harness.agent()
    assert asyncio.run(_closing(agent, agent.compact(sid, harness.seen.append))) is None
    assert harness.of_type("error")[-1].code == "compaction_failed"
    assert harness.of_type("context_compacted") == [] and len(harness.store.messages(sid)) == 4


async def _closing(agent: Any, coro: Any) -> Any:
    try:
        return await coro
    finally:
        await agent.provider.close()
