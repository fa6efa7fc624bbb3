"""The rest of MCP against `@modelcontextprotocol/server-everything` (npm) and the edge
server: roots (the session's workspace), elicitation (declined unless `--approve allow`,
then a form's defaults), sampling (declined without an asker), resources through one tool
(listed, read, resource links that say how to open them), prompts (`--mcp-prompt`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from kernel.events import Event, McpElicitation
from kernel.fakemodel import ToolUse, reply
from kernel.mcp.asks import (
    DECLINED_SAMPLING,
    ServerAsks,
    elicitation_defaults,
    form_fields,
    roots_result,
)
from kernel.mcp.headless import NO_BROWSER, NOT_APPROVED, exec_elicit, headless_elicitation
from kernel.mcp.manager import ServerStatus
from kernel.mcp.prompts import (
    PromptRefError,
    parse_prompt_args,
    parse_prompt_ref,
    prompt_text,
)
from kernel.mcp.resources import TOOL_NAME
from kernel.mcp.sampling import sampling_request, shown_prompt
from kernel.tools.spec import ErrorCode
from tests.cli.conftest import Cli, cli, events
from tests.mcp.conftest import edge, harness

__all__ = ["cli"]
WAIT = 60.0


def _ready(state: Any) -> bool:
    return state.status is ServerStatus.READY


# ---- pure decisions ---------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "content", "missing"), [
    ({"properties": {"a": {"type": "string", "default": "x"}}}, {"a": "x"}, ()),
    ({"properties": {"a": {"type": "string"}}, "required": ["a"]}, None, ("a",)),
    ({"properties": {"a": {"type": "string"}}}, {}, ()),
    ({"properties": {"a": {"const": 1}, "b": {"enum": ["only"]}}, "required": ["a", "b"]},
     {"a": 1, "b": "only"}, ()),
    ({"properties": {"a": {"enum": ["x", "y"]}}, "required": ["a"]}, None, ("a",)),
    ({"properties": {"n": {"type": "integer", "default": 0}}, "required": ["n", "gone"]},
     None, ("gone",)),
    ({"properties": "not-an-object", "required": "a"}, {}, ()),
    ({"properties": {"a": 5}, "required": [3, "a"]}, None, ("a",)),
    ({}, {}, ()),
])
def test_a_headless_accept_fills_in_defaults_only(schema: dict[str, Any],
                                                  content: dict[str, Any] | None,
                                                  missing: tuple[str, ...]) -> None:
    answer = elicitation_defaults(schema)
    assert answer.content == content and answer.missing == missing


def _form(schema: dict[str, Any]) -> mcp_types.ElicitRequestFormParams:
    return mcp_types.ElicitRequestFormParams(message="m", requested_schema=schema)


ALL_DEFAULTS = {"type": "object", "properties": {"c": {"type": "string", "default": "blue"}}}
NEEDS_NAME = {"type": "object", "properties": {"name": {"type": "string"}},
              "required": ["name"]}


@pytest.mark.parametrize(("params", "approve", "action", "reason"), [
    (_form(ALL_DEFAULTS), None, "decline", NOT_APPROVED),
    (_form(ALL_DEFAULTS), "deny", "decline", NOT_APPROVED),
    (_form(ALL_DEFAULTS), "allow", "accept", "accepted with the form's defaults"),
    (_form(NEEDS_NAME), "allow", "decline", "required fields have none: name"),
    (mcp_types.ElicitRequestURLParams(message="m", url="https://x.example/pay",
                                      elicitation_id="e1"), "allow", "decline", NO_BROWSER),
])
def test_headless_elicitation(params: Any, approve: str | None, action: str,
                              reason: str) -> None:
    result, why = headless_elicitation(params, approve)
    assert result.action == action and reason in why
    assert (result.content is not None) == (action == "accept")


def test_form_fields_describe_the_form() -> None:
    fields = form_fields({"properties": {"name": {"type": "string", "title": "Name"},
                                         "n": {"type": "integer", "default": 3},
                                         "bad": "x"}, "required": ["name"]})
    assert fields == [{"name": "name", "type": "string", "required": True, "title": "Name"},
                      {"name": "n", "type": "integer", "required": False, "default": 3},
                      {"name": "bad", "type": "string", "required": False}]


def test_roots_are_file_uris_once_each(tmp_path: Path) -> None:
    (tmp_path / "a b").mkdir()
    result = roots_result([tmp_path / "a b", tmp_path / "a b" / ".." / "a b", tmp_path])
    assert [(str(r.uri), r.name) for r in result.roots] == [
        ((tmp_path / "a b").as_uri(), "a b"), (tmp_path.as_uri(), tmp_path.name)]
    assert "%20" in str(result.roots[0].uri)


@pytest.mark.parametrize(("text", "expected"), [
    ("every/args-prompt", ("every", "args-prompt")),
    (" every / a/b ", ("every", "a/b")),
])
def test_prompt_refs(text: str, expected: tuple[str, str]) -> None:
    assert parse_prompt_ref(text) == expected


@pytest.mark.parametrize("text", ["every", "/name", "every/", " / ", ""])
def test_bad_prompt_refs(text: str) -> None:
    with pytest.raises(PromptRefError, match="SERVER/NAME"):
        parse_prompt_ref(text)


def test_prompt_args() -> None:
    assert parse_prompt_args(["city=Paris", "note=a=b", "empty="]) == {
        "city": "Paris", "note": "a=b", "empty": ""}
    for bad, message in ([["city"], "NAME=VALUE"], [["=x"], "NAME=VALUE"],
                         [["a=1", "a=2"], "given twice"]):
        with pytest.raises(PromptRefError, match=message):
            parse_prompt_args(bad)


def test_prompt_text_marks_what_is_not_the_users() -> None:
    result = mcp_types.GetPromptResult(messages=[
        mcp_types.PromptMessage(role="user", content=mcp_types.TextContent(type="text",
                                                                          text="Hi")),
        mcp_types.PromptMessage(role="assistant", content=mcp_types.TextContent(
            type="text", text="I will obey")),
        mcp_types.PromptMessage(role="user", content=mcp_types.ImageContent(
            type="image", data="AAAA", mime_type="image/png")),
    ])
    assert prompt_text(result) == ("Hi\n\n(the prompt's assistant part) I will obey\n\n"
                                   "[image not shown]")


def _sampling(**extra: Any) -> mcp_types.CreateMessageRequestParams:
    text = mcp_types.TextContent(type="text", text="What is 2+2?")
    image = mcp_types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
    return mcp_types.CreateMessageRequestParams(messages=[
        mcp_types.SamplingMessage(role="user", content=text),
        mcp_types.SamplingMessage(role="assistant", content=[text, image]),
    ], max_tokens=5000, **extra)


def test_sampling_requests_are_bounded_and_shown_as_sent() -> None:
    request = sampling_request(_sampling(system_prompt="Be brief.", stop_sequences=["END"],
                                         temperature=0.3), "claude-x", 1024)
    assert request["model"] == "claude-x" and request["max_tokens"] == 1024
    assert request["system"] == "Be brief." and request["stop_sequences"] == ["END"]
    assert "temperature" not in request
    assert [m["role"] for m in request["messages"]] == ["user", "assistant"]
    assert request["messages"][1]["content"][1]["type"] == "image"
    assert shown_prompt(request) == ("system: Be brief.\nuser: What is 2+2?\n"
                                     "assistant: What is 2+2? [image]")
    small = sampling_request(_sampling(), "m", 8192)
    assert small["max_tokens"] == 5000 and "system" not in small


# ---- server-everything and the edge server ----------------------------------------------


def test_roots_are_the_workspace_and_follow_it(tmp_path: Path,
                                               everything: dict[str, Any]) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"every": everything, "edge": edge()}) as h:
            await h.manager.wait_for("every", _ready, WAIT)
            await h.manager.wait_for("edge", _ready, WAIT)
            workspace = (tmp_path / "workspace").resolve()
            shown = await h.call("mcp__every__get-roots-list")
            assert workspace.as_uri() in shown.text, shown.content
            edge_roots = json.loads((await h.call("mcp__edge__roots")).text)
            assert edge_roots == [{"uri": workspace.as_uri(), "name": "workspace"}]

            other = tmp_path / "other"
            other.mkdir()
            await h.manager.set_roots([other])
            assert json.loads((await h.call("mcp__edge__roots")).text)[0]["uri"] == (
                other.resolve().as_uri())
            for _ in range(100):  # server-everything asks again on roots/list_changed
                shown = await h.call("mcp__every__get-roots-list")
                if other.resolve().as_uri() in shown.text:
                    break
                await asyncio.sleep(0.05)
            assert other.resolve().as_uri() in shown.text
            assert workspace.as_uri() not in shown.text

    asyncio.run(main())


def test_elicitation_is_declined_or_filled_with_defaults_and_recorded(
        tmp_path: Path, everything: dict[str, Any]) -> None:
    async def main(approve: str | None) -> tuple[list[Event], dict[str, str]]:
        seen: list[Event] = []
        asks = ServerAsks(roots=(tmp_path,), elicit=exec_elicit("s1", approve, seen.append))
        async with harness(tmp_path, {"every": everything, "edge": edge()}, asks=asks) as h:
            await h.manager.wait_for("every", _ready, WAIT)
            await h.manager.wait_for("edge", _ready, WAIT)
            texts = {
                "every": (await h.call("mcp__every__trigger-elicitation-request")).text,
                "url": (await h.call("mcp__every__trigger-url-elicitation", {
                    "url": "https://example.com/pay", "message": "Pay here",
                    "elicitationId": "e-1"})).text,
                "edge": (await h.call("mcp__edge__ask_form")).text,
            }
        return seen, texts

    seen, texts = asyncio.run(main(None))
    assert "declined" in texts["every"]
    assert json.loads(texts["edge"]) == {"action": "decline", "data": None}
    recorded = [e for e in seen if isinstance(e, McpElicitation)]
    assert [(e.server, e.action, e.decided_by) for e in recorded] == [
        ("every", "decline", "cli"), ("every", "decline", "cli"), ("edge", "decline", "cli")]
    assert recorded[0].reason == NOT_APPROVED and recorded[1].reason == NO_BROWSER
    name = next(f for f in recorded[0].fields if f["name"] == "name")
    assert name["required"] is True and name["type"] == "string"
    assert recorded[0].message == "Please provide inputs for the following fields:"

    seen, texts = asyncio.run(main("allow"))
    assert json.loads(texts["edge"]) == {"action": "accept",
                                         "data": {"color": "blue", "count": 3}}
    assert "declined" in texts["every"]  # its required "name" has no default
    every, url, form = [e for e in seen if isinstance(e, McpElicitation)]
    assert "these required fields have none: name" in every.reason
    assert url.reason == NO_BROWSER and form.action == "accept"


def test_sampling_is_declined_without_an_asker(tmp_path: Path,
                                               everything: dict[str, Any]) -> None:
    async def main() -> str:
        async with harness(tmp_path, {"every": everything}) as h:
            await h.manager.wait_for("every", _ready, WAIT)
            result = await h.call("mcp__every__trigger-sampling-request",
                                  {"prompt": "secret plan", "maxTokens": 20})
            return json.dumps(result.content)

    assert DECLINED_SAMPLING in asyncio.run(main())


def test_resources_are_listed_and_read_through_one_tool(tmp_path: Path,
                                                        everything: dict[str, Any]) -> None:
    async def main() -> None:
        servers = {"every": everything, "edge": edge(), "time": {"command": "mcp-server-time"}}
        async with harness(tmp_path, servers) as h:
            await h.manager.wait_settled(WAIT)
            assert TOOL_NAME in h.registry
            spec = h.registry.get(TOOL_NAME)
            assert spec is not None and spec.origin == "mcp" and spec.shown_risk == "read"

            listing = await h.call(TOOL_NAME, {"server": "every"})
            assert not listing.is_error, listing.content
            assert "<demo://resource/static/document/architecture.md> (text/markdown)" in (
                listing.text)
            assert "<demo://resource/dynamic/text/{resourceId}>" in listing.text

            doc = await h.call(TOOL_NAME, {
                "server": "every", "uri": "demo://resource/static/document/architecture.md"})
            assert doc.text.startswith("[resource demo://resource/static/document/"
                                       "architecture.md (text/markdown)]\n# Everything")

            links = await h.call("mcp__every__get-resource-links", {"count": 2})
            assert ("open it with mcp_resources, server 'every', uri "
                    "'demo://resource/dynamic/text/2'") in links.text
            linked = await h.call(TOOL_NAME, {"server": "every",
                                              "uri": "demo://resource/dynamic/text/2"})
            assert "Resource 2: This is a plaintext resource" in linked.text

            blob = await h.call(TOOL_NAME, {"server": "every",
                                            "uri": "demo://resource/dynamic/blob/1"})
            assert not blob.is_error and "demo://resource/dynamic/blob/1" in blob.text

            missing = await h.call(TOOL_NAME, {"server": "every", "uri": "demo://nothing/x"})
            assert missing.is_error and missing.error_code is ErrorCode.EXECUTION_ERROR
            assert "refused the call to the read of 'demo://nothing/x'" in missing.text
            none = await h.call(TOOL_NAME, {"server": "edge"})  # declares them, has none
            assert none.text == "Resources of the MCP server 'edge' (0):\n- (none)"
            unknown = await h.call(TOOL_NAME, {"server": "nope"})
            assert unknown.is_error and "'nope' offers no resources now" in unknown.text
            assert "servers with resources: 'every', 'edge', 'time'" in unknown.text
            extra = await h.call(TOOL_NAME, {"server": "every", "path": "/etc/passwd"})
            assert extra.error_code is ErrorCode.INVALID_ARGUMENTS

            await h.manager.disable("every")
            await h.manager.disable("edge")
            assert TOOL_NAME in h.registry  # time still declares resources
            await h.manager.disable("time")
            assert TOOL_NAME not in h.registry
            await h.manager.enable("every")
            await h.manager.wait_for("every", _ready, WAIT)
            assert TOOL_NAME in h.registry

    asyncio.run(main())


# ---- reins exec -------------------------------------------------------------------------


def _settings(cli: Cli, servers: dict[str, Any]) -> None:
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"mcpServers": servers}))


def _last_user_text(cli: Cli) -> str:
    content = cli.server.requests[0].body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(
        b.get("text", "") for b in content if isinstance(b, dict))


def test_exec_mcp_prompt_is_the_runs_prompt(cli: Cli, everything: dict[str, Any]) -> None:
    _settings(cli, {"every": everything})
    cli.server.add(reply("Sunny."))
    done = cli.run("exec", "--json", "--mcp-prompt", "every/args-prompt", "--mcp-prompt-arg",
                   "city=Paris", "and answer in French")
    assert done.returncode == 0, done.stderr
    assert _last_user_text(cli) == "What's weather in Paris?\n\nand answer in French"
    user = next(e for e in events(done.stdout) if e["type"] == "user_message")
    assert user["text"] == "What's weather in Paris?\n\nand answer in French"

    cli.server.add(reply("Read it."))
    with_resource = cli.run("exec", "--json", "--mcp-prompt", "every/resource-prompt",
                            "--mcp-prompt-arg", "resourceType=Text", "--mcp-prompt-arg",
                            "resourceId=1")
    assert with_resource.returncode == 0, with_resource.stderr
    text = next(e for e in events(with_resource.stdout) if e["type"] == "user_message")["text"]
    assert text.startswith("This prompt includes the Text resource with id: 1.")
    assert "[resource demo://resource/dynamic/text/1 (text/plain)]\nResource 1:" in text


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--mcp-prompt", "every/args-prompt"], 1,
     "the prompt every/args-prompt needs city: give --mcp-prompt-arg city=VALUE"),
    (["--mcp-prompt", "every/no-such-prompt"], 1,
     "has no prompt 'no-such-prompt' (its prompts: args-prompt, completable-prompt"),
    (["--mcp-prompt", "nobody/simple-prompt"], 1,
     "The MCP server 'nobody' is not configured"),
    (["--mcp-prompt", "every"], 2, "--mcp-prompt wants SERVER/NAME"),
    (["--mcp-prompt", "every/simple-prompt", "--mcp-prompt-arg", "x"], 2,
     "--mcp-prompt-arg wants NAME=VALUE"),
])
def test_exec_mcp_prompt_errors(cli: Cli, everything: dict[str, Any], args: list[str],
                                code: int, message: str) -> None:
    _settings(cli, {"every": everything})
    done = cli.run("exec", "--json", *args)
    assert done.returncode == code, (done.stdout, done.stderr)
    if code == 1:
        error = next(e for e in events(done.stdout) if e["type"] == "error")
        assert error["code"] == "mcp_prompt" and message in error["message"], error
    else:
        assert message in done.stderr
    assert cli.server.requests == []


def test_exec_records_a_declined_form_and_the_model_hears_it(cli: Cli,
                                                             everything: dict[str, Any]) -> None:
    _settings(cli, {"every": everything})
    cli.server.add(reply(ToolUse("mcp__every__trigger-elicitation-request", {}, id="c1")),
                   reply("The user declined."))
    done = cli.run("exec", "--json", "--mode", "auto", "--approve", "allow", "ask the user")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    (form,) = [e for e in out if e["type"] == "mcp_elicitation"]
    assert form["server"] == "every" and form["action"] == "decline"
    assert "required fields have none: name" in form["reason"]
    sent = json.dumps(cli.server.requests[1].body["messages"][-1]["content"])
    assert "declined" in sent


def test_exec_sampling_goes_to_the_model_only_with_approval(cli: Cli,
                                                            everything: dict[str, Any]) -> None:
    _settings(cli, {"every": everything})
    call = ToolUse("mcp__every__trigger-sampling-request", {"prompt": "tell a joke",
                                                            "maxTokens": 40}, id="c1")
    cli.server.add(reply(call), reply("A sampled joke."), reply("It told a joke."))
    done = cli.run("exec", "--json", "--mode", "auto", "--approve", "allow", "sample")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    (sampling,) = [e for e in out if e["type"] == "mcp_sampling"]
    assert sampling["action"] == "accept" and sampling["answer"] == "A sampled joke."
    assert sampling["prompt"] == ("system: You are a helpful test server.\n"
                                  "user: Resource trigger-sampling-request context: tell a joke")
    assert sampling["max_tokens"] == 40 and sampling["usage"]["output_tokens"] > 0
    sent = cli.server.requests[1].body
    assert sent["system"] == "You are a helpful test server." and "tools" not in sent
    assert sent["max_tokens"] == 40
    assert sent["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "Resource trigger-sampling-request context: tell a joke"}]}]
    result = json.dumps(cli.server.requests[2].body["messages"][-1]["content"])
    assert "A sampled joke." in result


def test_exec_sampling_without_approval_never_reaches_the_model(
        cli: Cli, everything: dict[str, Any]) -> None:
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({  # the tool is allowed, its sampling not
        "mcpServers": {"every": everything},
        "permissions": {"allow": ["mcp__every__trigger-sampling-request"]}}))
    call = ToolUse("mcp__every__trigger-sampling-request", {"prompt": "leak it",
                                                            "maxTokens": 40}, id="c1")
    cli.server.add(reply(call), reply("Declined."))
    done = cli.run("exec", "--json", "--mode", "auto", "hi")
    assert done.returncode == 0, done.stderr
    seen = events(done.stdout)
    samplings = [e for e in seen if e["type"] == "mcp_sampling"]
    assert len(samplings) == 1, [e for e in seen if e["type"] in ("mcp_server", "tool_result")]
    assert samplings[0]["action"] == "decline"
    assert "only with --approve allow" in samplings[0]["reason"]
    assert len(cli.server.requests) == 2
    assert "leak it" not in json.dumps(cli.server.requests[1].body["system"])
    assert DECLINED_SAMPLING in json.dumps(cli.server.requests[1].body["messages"][-1])
