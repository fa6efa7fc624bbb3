"""Editing the last prompt and regenerating the last answer: where the history is cut (table
tests of kernel.agent.branch), and the agent against the fake Messages API: the superseded
turns leave the requests, stay in the store (a messages_superseded event, the trace, the
events the timeline shows), and the stored history is the current branch."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from kernel.agent.branch import NothingToChange, Place, cut, last_prompt, prompt_place
from kernel.agent.loop import RunBusy
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    MessagesSuperseded,
    ToolCallStarted,
    UserMessage,
)
from kernel.fakemodel import Failure, Silence, ToolUse, reply
from kernel.shared.attachments import read_attachment
from tests.agent.conftest import Harness, _closing


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def answer(t: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(t)]}


RESULT = {"type": "tool_result", "tool_use_id": "c1", "content": "ok", "is_error": False}
CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "x",
                                          "input": {}}]}


@pytest.mark.parametrize(("history", "prompt", "place"), [
    ([user(text("hi")), answer("yo")], UserMessage("s", "hi", at_message=0), Place(0, 0, 1)),
    # recorded place is checked, not trusted
    ([user(text("hi")), answer("yo")], UserMessage("s", "hi", at_message=1), Place(0, 0, 1)),
    ([user(text("hi")), answer("yo")], UserMessage("s", "hi", at_message=7), Place(0, 0, 1)),
    # an old session (no place recorded): the newest user text equal to the prompt
    ([user(text("a")), answer("b"), user(text("a")), answer("c")], UserMessage("s", "a"),
     Place(2, 0, 1)),
    # content stored as a plain string
    ([{"role": "user", "content": "plain"}], UserMessage("s", "plain"), Place(0, 0, 1)),
    # merged after a stopped turn's results
    ([user(text("a")), CALL, user(RESULT, text("b")), answer("c")],
     UserMessage("s", "b", at_message=2, at_block=1), Place(2, 1, 1)),
    # attachments: their blocks belong to the prompt
    ([user(text("see"), text("<attachment>"), text("[note]")), answer("ok")],
     UserMessage("s", "see", at_message=0, attachments=[{"blocks": 2}]), Place(0, 0, 3)),
    # a prompt an unanswered earlier prompt shares a message with
    ([user(text("one"), text("two"))], UserMessage("s", "two", at_message=0, at_block=1),
     Place(0, 1, 1)),
])
def test_prompt_place(history, prompt, place):
    assert prompt_place(history, prompt) == place


@pytest.mark.parametrize("history", [
    [], [answer("x")], [user(text("other")), answer("x")],
    [{"role": "user", "content": [{"type": "image", "source": {}}]}],
])
def test_a_prompt_not_in_the_history_cannot_be_changed(history):
    with pytest.raises(NothingToChange, match="no longer in the history"):
        prompt_place(history, UserMessage("s", "gone", at_message=0))


def test_no_prompt_at_all():
    with pytest.raises(NothingToChange, match="no message yet"):
        last_prompt([])


@pytest.mark.parametrize(("history", "place", "reason", "kept", "superseded"), [
    ([user(text("q")), answer("a")], Place(0, 0, 1), "edit", [], [user(text("q")),
                                                                 answer("a")]),
    ([user(text("q")), answer("a")], Place(0, 0, 1), "regenerate", [user(text("q"))],
     [answer("a")]),
    ([user(text("q")), CALL, user(RESULT), answer("a")], Place(0, 0, 1), "regenerate",
     [user(text("q"))], [CALL, user(RESULT), answer("a")]),
    # earlier blocks of the prompt's message stay
    ([user(text("q")), CALL, user(RESULT, text("b")), answer("c")], Place(2, 1, 1), "edit",
     [user(text("q")), CALL, user(RESULT)], [user(text("b")), answer("c")]),
    ([user(text("q")), CALL, user(RESULT, text("b")), answer("c")], Place(2, 1, 1),
     "regenerate", [user(text("q")), CALL, user(RESULT, text("b"))], [answer("c")]),
    # attachments go with an edit, stay with a regeneration
    ([user(text("see"), text("<file>")), answer("a")], Place(0, 0, 2), "edit", [],
     [user(text("see"), text("<file>")), answer("a")]),
    ([user(text("see"), text("<file>")), answer("a")], Place(0, 0, 2), "regenerate",
     [user(text("see"), text("<file>"))], [answer("a")]),
    # nothing answered yet (the model failed): regenerating supersedes nothing
    ([user(text("q"))], Place(0, 0, 1), "regenerate", [user(text("q"))], []),
])
def test_cut(history, place, reason, kept, superseded):
    change = cut(history, place, reason)
    assert change.history == kept
    assert change.superseded == superseded
    assert change.first_index == place.index


def test_an_unknown_reason_is_refused():
    with pytest.raises(ValueError, match="unknown reason"):
        cut([user(text("q"))], Place(0, 0, 1), "undo")


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m["content"]
        for b in content if isinstance(content, list) else [text(content)]:
            if b.get("type") == "text":
                out.append(b["text"])
    return out


def edit(harness: Harness, sid: str, prompt: str, **kw: Any) -> Any:
    agent = harness.agent()
    return asyncio.run(_closing(agent, agent.edit(sid, prompt, harness.seen.append, **kw)))


def regenerate(harness: Harness, sid: str) -> Any:
    agent = harness.agent()
    return asyncio.run(_closing(agent, agent.regenerate(sid, harness.seen.append)))


def test_an_edited_prompt_replaces_the_old_one_and_its_answer(harness: Harness):
    harness.server.add(reply("first answer"), reply("second answer"), reply("edited answer"))
    sid, _ = harness.run("first")
    harness.run("second", session_id=sid)
    finished = edit(harness, sid, "second, better")
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    sent = harness.server.requests[-1].body["messages"]
    assert texts(sent) == ["first", "first answer", "second, better"]
    assert texts(harness.store.messages(sid)) == ["first", "first answer", "second, better",
                                                  "edited answer"]
    events = harness.stored(sid)
    (superseded,) = [e for e in events if isinstance(e, MessagesSuperseded)]
    assert superseded.reason == "edit" and texts(superseded.messages) == [
        "second", "second answer"]
    assert [e.text for e in events if isinstance(e, UserMessage)] == [
        "first", "second", "second, better"]
    assert len(harness.store.trace(sid)) == 3  # the superseded round stays in the trace


def test_regenerate_asks_again_without_the_old_answer_and_its_calls(harness: Harness):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"}, id="c1")),
                       reply("alpha, I think"), reply("it says alpha file"))
    sid, _ = harness.run("what is in a?")
    finished = regenerate(harness, sid)
    assert finished.stop_reason == "end_turn"
    assert harness.server.requests[-1].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what is in a?",
                                      "cache_control": {"type": "ephemeral"}}]}]
    assert texts(harness.store.messages(sid)) == ["what is in a?", "it says alpha file"]
    events = harness.stored(sid)
    (superseded,) = [e for e in events if isinstance(e, MessagesSuperseded)]
    assert superseded.reason == "regenerate"
    assert [m["role"] for m in superseded.messages] == ["assistant", "user", "assistant"]
    assert [e.call_id for e in events if isinstance(e, ToolCallStarted)] == ["c1"]
    assert [e.type for e in events].count("user_message") == 1


def test_editing_twice_keeps_each_superseded_branch(harness: Harness):
    harness.server.add(reply("1"), reply("2"), reply("3"))
    sid, _ = harness.run("v1")
    edit(harness, sid, "v2")
    edit(harness, sid, "v3")
    assert texts(harness.store.messages(sid)) == ["v3", "3"]
    branches = [texts(e.messages) for e in harness.stored(sid)
                if isinstance(e, MessagesSuperseded)]
    assert branches == [["v1", "1"], ["v2", "2"]]


def test_a_prompt_that_was_never_answered_can_be_edited(harness: Harness):
    harness.server.add(Failure(400, "invalid_request_error", "no"), reply("fine"))
    sid, finished = harness.run("brokn")
    assert finished.stop_reason == "error"
    edit(harness, sid, "broken")
    assert texts(harness.server.requests[-1].body["messages"]) == ["broken"]


def test_an_edit_keeps_the_chosen_attachments(harness: Harness):
    harness.server.add(reply("seen"), reply("seen again"))
    notes = read_attachment("notes.txt", b"remember the milk\n")
    todo = read_attachment("todo.md", b"- [ ] eggs\n")
    sid, _ = harness.run("read these", agent=harness.agent())
    agent = harness.agent()
    asyncio.run(_closing(agent, agent.run(sid, "and these", harness.seen.append,
                                          [notes, todo])))
    edit(harness, sid, "only the notes", keep=[0])
    sent = texts(harness.server.requests[-1].body["messages"])
    assert sent[-2:] == ["only the notes", '<attachment name="notes.txt">\nremember the milk\n'
                                            "\n</attachment>"]
    prompts = [e for e in harness.stored(sid) if isinstance(e, UserMessage)]
    assert [a["name"] for a in prompts[-1].attachments] == ["notes.txt"]
    assert [a["name"] for a in prompts[-2].attachments] == ["notes.txt", "todo.md"]


def png(size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


def test_attachments_go_to_the_model_as_blocks_and_large_images_are_downscaled(
        harness: Harness):
    harness.server.add(reply("a red bar"))
    picture = read_attachment("wide.png", png((9000, 10)))
    notes = read_attachment("notes.txt", b"line one\n")
    sid = harness.session()
    agent = harness.agent()
    asyncio.run(_closing(agent, agent.run(sid, "what is this?", harness.seen.append,
                                          [picture, notes])))
    assert not harness.server.problems
    content = harness.server.requests[0].body["messages"][0]["content"]
    assert [b["type"] for b in content] == ["text", "image", "text", "text"]
    assert "downscaled from 9000x10" in content[2]["text"]
    with Image.open(io.BytesIO(base64.b64decode(content[1]["source"]["data"]))) as shown:
        assert max(shown.size) <= 8000
    assert content[3]["text"].startswith('<attachment name="notes.txt">')
    (prompt,) = [e for e in harness.stored(sid) if isinstance(e, UserMessage)]
    assert [(a["name"], a["kind"], a["blocks"]) for a in prompt.attachments] == [
        ("wide.png", "image", 2), ("notes.txt", "text", 1)]
    assert harness.store.messages(sid)[0]["content"][1]["type"] == "image"


def test_nothing_to_edit_or_regenerate_is_said_before_anything_is_stored(harness: Harness):
    sid = harness.session()
    for action in (lambda: edit(harness, sid, "x"), lambda: regenerate(harness, sid)):
        with pytest.raises(NothingToChange, match="no message yet"):
            action()
    assert harness.stored(sid) == [] and harness.server.requests == []


def test_editing_while_a_run_is_in_progress_is_refused(harness: Harness):
    harness.server.add(reply("one"), Silence())
    sid, _ = harness.run("first")

    async def scenario() -> str:
        agent = harness.agent()
        try:
            task = asyncio.create_task(agent.run(sid, "second", harness.seen.append))
            while not harness.server.stalled.is_set():
                await asyncio.sleep(0.01)
            with pytest.raises(RunBusy):
                await agent.edit(sid, "changed", harness.seen.append)
            with pytest.raises(RunBusy):
                await agent.regenerate(sid, harness.seen.append)
            agent.cancel(sid)
            return (await task).stop_reason
        finally:
            harness.server.release()
            await agent.provider.close()

    assert asyncio.run(scenario()) == "cancelled"
    assert not [e for e in harness.stored(sid) if isinstance(e, MessagesSuperseded)]


@pytest.mark.parametrize("reason", ["edit", "regenerate"])
def test_a_pending_approval_of_a_superseded_call_is_closed(harness: Harness, reason: str):
    sid = harness.session()
    harness.store.append_event(UserMessage(sid, "delete it", at_message=0))
    harness.store.append_message(sid, user(text("delete it")))
    harness.store.append_message(sid, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c9", "name": "run_command", "input": {"command": "rm x"}}]})
    harness.store.append_event(ApprovalRequest(sid, call_id="c9", name="run_command",
                                               input={"command": "rm x"}, risk="execute",
                                               reason="asks"))
    harness.server.add(reply("I will not delete it."))
    if reason == "edit":
        edit(harness, sid, "keep it")
    else:
        regenerate(harness, sid)
    decisions = [e for e in harness.stored(sid) if isinstance(e, ApprovalDecision)]
    assert [(d.call_id, d.decision, d.decided_by) for d in decisions] == [
        ("c9", "deny", "user")]
    assert "was not run" in decisions[0].message
    assert "c9" not in json.dumps(harness.server.requests[0].body["messages"])
