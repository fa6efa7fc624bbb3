"""An earlier answer to the last prompt made current again (the chat's ‹ 1/2 ›): the real
agent and store against the fake Messages API. The chosen answer is what the next request
carries, the one it replaced is kept in a `restore` event, a later Retry supersedes the
restored answer, and every version that is not an earlier answer to the last prompt is
refused in words without touching the history."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kernel.agent.branch import NothingToChange
from kernel.agent.restore import restore_version
from kernel.events import MessagesSuperseded
from kernel.fakemodel import ToolUse, reply
from tests.agent.conftest import Harness, _closing
from tests.agent.test_branch_edit import edit, regenerate, texts


def sent(harness: Harness) -> list[str]:
    return texts(harness.server.requests[-1].body["messages"])


def superseded(harness: Harness, sid: str) -> list[MessagesSuperseded]:
    return [e for e in harness.stored(sid) if isinstance(e, MessagesSuperseded)]


def test_an_earlier_answer_is_continued_from_and_survives_a_reload(harness: Harness):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"}, id="c1")),
                       reply("alpha, from the file"), reply("second try"),
                       reply("third try"), reply("went on from the first"),
                       reply("fourth try"))
    sid, _ = harness.run("what is in a?")
    regenerate(harness, sid)
    regenerate(harness, sid)
    assert texts(harness.store.messages(sid)) == ["what is in a?", "third try"]
    event = restore_version(harness.store, sid, 0)
    assert event.reason == "restore" and event.restores == 0
    assert texts(event.messages) == ["third try"]
    history = harness.store.messages(sid)  # (a fresh read: what a restart starts from)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert texts(history) == ["what is in a?", "alpha, from the file"]
    assert superseded(harness, sid)[-1] == event
    agent = harness.agent()
    asyncio.run(_closing(agent, agent.run(sid, "go on", harness.seen.append)))
    assert sent(harness) == ["what is in a?", "alpha, from the file", "go on"]
    assert "second try" not in str(harness.server.requests[-1].body)
    assert not harness.server.problems


def test_retry_after_a_restore_supersedes_the_restored_answer(harness: Harness):
    harness.server.add(reply("one"), reply("two"), reply("three"))
    sid, _ = harness.run("q")
    regenerate(harness, sid)
    restore_version(harness.store, sid, 0)
    regenerate(harness, sid)
    assert sent(harness) == ["q"]
    assert texts(harness.store.messages(sid)) == ["q", "three"]
    assert [(e.reason, texts(e.messages)) for e in superseded(harness, sid)] == [
        ("regenerate", ["one"]), ("restore", ["two"]), ("regenerate", ["one"])]
    restore_version(harness.store, sid, 1)
    assert texts(harness.store.messages(sid)) == ["q", "two"]


@pytest.mark.parametrize(("steps", "version", "words"), [
    ([], 5, "no version 5"),
    ([], -1, "no version -1"),
    (["restore 0"], 0, "already the current one"),
    (["edit"], 1, "only an earlier answer to the last message"),
    (["prompt"], 0, "only an earlier answer to the last message"),
])
def test_what_is_not_an_earlier_answer_to_the_last_prompt_is_refused(
        harness: Harness, steps: list[str], version: int, words: str):
    harness.server.add(*(reply(f"answer {n}") for n in range(4)))
    sid, _ = harness.run("q")
    regenerate(harness, sid)
    for step in steps:
        if step == "edit":
            edit(harness, sid, "q, edited")
        elif step == "prompt":
            harness.run("another", session_id=sid)
        else:
            restore_version(harness.store, sid, int(step.split()[1]))
    before = (harness.store.messages(sid), len(harness.stored(sid)))
    with pytest.raises(NothingToChange, match=words):
        restore_version(harness.store, sid, version)
    assert (harness.store.messages(sid), len(harness.stored(sid))) == before


def test_an_answer_whose_call_has_no_result_is_not_continued_from(harness: Harness):
    harness.server.add(reply("fine"))
    sid, _ = harness.run("q")
    call: dict[str, Any] = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c9", "name": "read_file", "input": {"path": "a"}}]}
    stale = MessagesSuperseded(sid, "regenerate", 0, 1, messages=[call])
    harness.store.submit_event(stale).result()
    with pytest.raises(NothingToChange, match="has no result"):
        restore_version(harness.store, sid, 0)
    assert texts(harness.store.messages(sid)) == ["q", "fine"]
