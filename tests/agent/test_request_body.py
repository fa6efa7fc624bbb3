"""The request body Reins encodes: byte for byte the JSON the SDK would send, each message
encoded once, lone surrogates scrubbed; and through the real SDK to a real HTTP server, the
same request as `client.messages.stream(**params)` makes."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.model.provider import AnthropicProvider, ProviderConfig, TurnCallbacks
from kernel.model.request_body import RequestEncoder, scrub_text


def plain(value: Any) -> Any:
    """Mappings as dicts and tuples as lists, as the SDK copies them before encoding."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def reference(params: Mapping[str, Any]) -> bytes:
    """The SDK's encoding of the same params: compact, not ASCII-escaped, NaN refused."""
    body = {**{k: v for k, v in params.items() if k != "stream"}, "stream": True}
    return json.dumps(scrub_text(plain(body)), ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


def message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("params", [
    {"model": "m", "max_tokens": 5, "messages": []},
    {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "plain"}]},
    {"model": "m", "max_tokens": 5, "stream": False,
     "messages": [{"role": "user", "content": "a stream key is sent as true"}]},
    {"model": "m", "max_tokens": 5, "system": "ünïcödé 中文 😀",
     "messages": [message("user", "quote \" backslash \\ tab \t nul \x00 esc \x1b")]},
    {"model": "m", "max_tokens": 5,
     "messages": [message("user", "line\u2028separator\u2029and\x85next")]},
    {"model": "m", "max_tokens": 5,
     "messages": [message("user", "half a pair \ud83d and \udfff alone")]},
    {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_\ud800", "is_error": True,
         "content": [{"type": "text", "text": "x"}]}]}]},
    {"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "read_file",
         "input": {"path": "a.txt", "offset": 1, "limit": 2 ** 70, "ratio": 0.1,
                   "flags": [True, False, None], "nested": {"k\udc80": ("tuple",)}}}]}]},
    {"model": "m", "max_tokens": 5, "tools": [{"name": "t", "input_schema": {
        "type": "object", "properties": MappingProxyType({"a": {"type": "string"}})}}],
     "tool_choice": {"type": "auto"}, "thinking": {"type": "enabled", "budget_tokens": 1024},
     "messages": [message("user", "x")]},
])
def test_the_body_is_what_the_sdk_would_send(params: Mapping[str, Any]) -> None:
    body = RequestEncoder().body(params)
    assert body == reference(params)
    json.loads(body)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), object(), b"x"])
def test_what_json_cannot_carry_is_refused_as_the_sdk_refuses_it(bad: object) -> None:
    params = {"model": "m", "max_tokens": 5, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n",
                                           "input": {"v": bad}}]}]}
    with pytest.raises((ValueError, TypeError)):
        RequestEncoder().body(params)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), json_values), max_size=6),
       st.dictionaries(st.text(), json_values, max_size=3))
def test_any_json_params_encode_as_the_reference(messages: list[tuple[str, Any]],
                                                 extra: dict[str, Any]) -> None:
    params = {**extra, "model": "m", "max_tokens": 5,
              "messages": [{"role": role, "content": content} for role, content in messages]}
    assert RequestEncoder().body(params) == reference(params)


def test_a_growing_history_encodes_as_the_whole_each_round() -> None:
    """A run: messages appended, merged into the last, replaced in place (trimmed), cut back,
    the last one copied with a cache mark; tools and system the same objects or new ones.
    Every body equals the reference of that round's params."""
    encoder = RequestEncoder()
    rng = random.Random(3)
    history: list[dict[str, Any]] = []
    tools = [{"name": "t", "input_schema": {"type": "object"}}]
    for i in range(80):
        text = "bad \ud800 surrogate" if rng.random() < 0.3 else f"fine {i}"
        history.append(message("user" if i % 2 else "assistant", text))
        if rng.random() < 0.2:
            history[rng.randrange(len(history))] = {"role": "user", "content": "new \udfff"}
        if rng.random() < 0.05:
            del history[rng.randrange(len(history)):]
        if rng.random() < 0.1:
            tools = [*tools, {"name": f"t{i}", "input_schema": {"type": "object"}}]
        sent = [*history[:-1], {**history[-1], "cache": i}] if history else []
        params = {"model": "m", "max_tokens": 5, "system": f"s{i // 10}",
                  "tools": list(tools), "messages": sent}
        assert encoder.body(params) == reference(params)


def test_a_message_is_encoded_once_while_it_is_the_same_object() -> None:
    """Encoding the same message objects again costs no encoding: counted by giving the
    encoder mappings that count how often they are read."""
    reads: list[str] = []

    class Counted(dict[str, Any]):
        def items(self) -> Any:
            reads.append(self["role"])
            return super().items()

    encoder = RequestEncoder()
    history: list[Any] = [Counted(role=f"m{i}", content="x") for i in range(50)]
    encoder.body({"messages": history})
    assert set(reads) == {f"m{i}" for i in range(50)}
    history.append(Counted(role="new", content="y"))
    history[10] = Counted(role="trimmed", content="z")
    reads.clear()
    body = encoder.body({"messages": history})
    assert set(reads) == {"new", "trimmed"}
    assert json.loads(body)["messages"][10]["role"] == "trimmed"


def test_the_provider_sends_what_the_sdk_sends() -> None:
    """The same params through `client.messages.stream` and through the provider reach a
    real HTTP server as the same request: body, content type, version, key; and the
    provider still streams the answer (text and a tool call) and its usage."""
    params_of = {
        "system": [{"type": "text", "text": "sys ü", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read_file", "description": "d",
                   "input_schema": {"type": "object", "properties": {"p": {"type": "string"}}}}],
        "messages": [message("user", "read it \ud800"),
                     {"role": "assistant", "content": [
                         {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                          "input": {"p": "a"}}]},
                     {"role": "user", "content": [{"type": "tool_result",
                                                   "tool_use_id": "toolu_1", "content": "ok"}]}],
    }
    with FakeAnthropicServer([reply("direct"), reply("hi", ToolUse("read_file", {"p": "b"}))],
                             api_key="sk-k") as server:
        provider = AnthropicProvider(ProviderConfig(base_url=server.base_url, max_retries=0),
                                     api_key="sk-k", environ={})
        params = provider.request_params(**params_of)

        async def go() -> Any:
            try:
                async with anthropic.AsyncAnthropic(api_key="sk-k", base_url=server.base_url,
                                                    max_retries=0) as client, \
                        client.messages.stream(**scrub_text(params)) as stream:
                    await stream.get_final_message()
                return await provider.stream_turn(params, TurnCallbacks())
            finally:
                await provider.close()

        turn = asyncio.run(go())
        direct, ours = server.requests
    assert ours.body == direct.body
    for header in ("content-type", "anthropic-version", "x-api-key", "accept"):
        assert ours.headers.get(header) == direct.headers.get(header), header
    assert turn.error is None and turn.stop_reason == "tool_use"
    assert [b["type"] for b in turn.content] == ["text", "tool_use"]
    assert turn.content[1]["input"] == {"p": "b"} and turn.usage["output_tokens"] > 0
