"""The app's side of server requests that need the user, through the real kernel worker:
forms (elicitation) go out as McpFormRequest and come back as McpFormAnswer, checked
against the form's schema; roots follow the running session; `/` prompts are listed and
fetched."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.mcp.app import ElicitationChannel, check_answer
from tests.mcp.conftest import edge
from tests.security.test_workspace_broad import Worker

SCHEMA = {"type": "object", "properties": {"color": {"type": "string"},
                                           "count": {"type": "integer", "minimum": 1}},
          "required": ["color"]}


@pytest.mark.parametrize(("action", "content", "expected"), [
    ("accept", {"color": "red"}, {"color": "red"}),
    ("accept", {"color": "red", "count": 2}, {"color": "red", "count": 2}),
    ("decline", None, None),
    ("cancel", None, None),
])
def test_answers_that_fit(action: str, content: Any, expected: Any) -> None:
    result = check_answer(SCHEMA, action, content)
    assert result.action == action and result.content == expected


@pytest.mark.parametrize(("action", "content", "message"), [
    ("accept", {}, "'color' is a required property"),
    ("accept", {"color": 3}, "color: 3 is not of type 'string'"),
    ("accept", {"color": "red", "count": 0}, "count: 0 is less than the minimum of 1"),
    ("accept", {"color": "red", "count": True}, "count: True is not of type 'integer'"),
    ("accept", ["red"], "needs its fields as an object"),
    ("accept", None, "needs its fields as an object"),
    ("decline", {"color": "red"}, "a 'decline' answer carries no content"),
    ("allow", None, "unknown answer 'allow'"),
    ("", None, "unknown answer ''"),
])
def test_answers_that_do_not_fit_are_refused(action: str, content: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        check_answer(SCHEMA, action, content)


def test_a_url_form_is_accepted_without_content() -> None:
    assert check_answer({}, "accept", None, url=True).action == "accept"


def _form() -> mcp_types.ElicitRequestFormParams:
    return mcp_types.ElicitRequestFormParams(message="Pick", requested_schema=SCHEMA)


def test_the_channel_waits_for_a_fitting_answer_and_cancels_otherwise() -> None:
    async def main() -> list[str]:
        sent: list[p.McpFormRequest] = []
        channel = ElicitationChannel(sent.append, timeout_s=5)
        asked = asyncio.ensure_future(channel.ask("edge", _form()))
        while not sent:
            await asyncio.sleep(0)
        request = sent[0]
        assert (request.server, request.message) == ("edge", "Pick")
        assert [f["name"] for f in request.fields] == ["color", "count"]
        with pytest.raises(ValueError, match="'color' is a required property"):
            channel.answer(request.request_id, "accept", {})
        with pytest.raises(ValueError, match="no form 'form-9'"):
            channel.answer("form-9", "decline", None)
        channel.answer(request.request_id, "accept", {"color": "red"})
        first = await asked
        assert (first.action, first.content) == ("accept", {"color": "red"})
        with pytest.raises(ValueError, match="is waiting"):
            channel.answer(request.request_id, "decline", None)  # answered once only

        late = ElicitationChannel(sent.append, timeout_s=0.05)
        timed_out = await late.ask("edge", _form())
        closing = ElicitationChannel(sent.append, timeout_s=5)
        pending = asyncio.ensure_future(closing.ask("edge", _form()))
        await asyncio.sleep(0.01)
        closing.close()
        return [first.action, timed_out.action, (await pending).action]

    assert asyncio.run(main()) == ["accept", "cancel", "cancel"]


@pytest.fixture
def worker_settings(everything: dict[str, Any]) -> dict[str, Any]:
    """For the `served` worker (tests/conftest.py)."""
    return {"permissions": {"allow": ["mcp__edge__ask_form", "mcp__edge__roots"]},
            "mcpServers": {"edge": edge(), "every": everything}}


def _ready(worker: Worker, count: int) -> None:
    while True:
        states = [m for m in worker.received if isinstance(m, p.McpServerStates)]
        if states and len([s for s in states[-1].servers if s.status == "ready"]) == count:
            return
        worker.wait_for(p.McpServerStates, len(states) + 1)


def test_the_app_answers_forms_follows_roots_and_offers_prompts(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path) -> None:
    server, worker = served
    _ready(worker, 2)
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    server.add(reply(ToolUse("mcp__edge__roots", {}, id="r1"),
                     ToolUse("mcp__edge__ask_form", {}, id="f1")), reply("Done."))
    worker.send(p.StartRun(session, "ask me"))
    form = worker.wait_for(p.McpFormRequest)
    assert form.server == "edge" and form.message == "Pick your preferences"
    assert {f["name"] for f in form.fields} == {"color", "count"}
    worker.send(p.McpFormAnswer(form.request_id, "accept", {"color": 7}))
    refused = worker.wait_for(p.CommandFailed)
    assert refused.command == "mcp_form_answer" and "is not of type 'string'" in refused.message
    worker.send(p.McpFormAnswer(form.request_id, "accept", {"color": "red", "count": 5}))
    worker.wait_for(p.RunStatus, 2)
    results = {m.event.call_id: m.event for m in worker.received
               if isinstance(m, p.EventMessage) and m.event.type == "tool_result"}
    assert json.loads(results["f1"].preview) == {"action": "accept",
                                                 "data": {"color": "red", "count": 5}}
    assert json.loads(results["r1"].preview) == [
        {"uri": workspace.resolve().as_uri(), "name": workspace.name}]

    worker.send(p.ListMcpPrompts())
    listed = worker.wait_for(p.McpPromptList)
    args_prompt = next(x for x in listed.prompts if (x.server, x.name) == ("every",
                                                                          "args-prompt"))
    assert args_prompt.required == ("city",) and "state" in args_prompt.arguments
    worker.send(p.GetMcpPrompt("every", "args-prompt", {"city": "Paris"}))
    assert worker.wait_for(p.McpPromptText).text == "What's weather in Paris?"
    worker.send(p.GetMcpPrompt("every", "args-prompt", {}))
    missing = worker.wait_for(p.CommandFailed, 2)
    assert "needs city" in missing.message
    worker.send(p.GetMcpPrompt("every", "args-prompt", {"city": 3}))
    bad = worker.wait_for(p.CommandFailed, 3)
    assert "must be an object of name → text" in bad.message
