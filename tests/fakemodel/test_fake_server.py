"""The fake Messages API server, driven by the real anthropic SDK over HTTP."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from kernel.fakemodel import Failure, FakeAnthropicServer, Reply, Text, Thinking, ToolUse, reply

USER = [{"role": "user", "content": "hi"}]


def client(server: FakeAnthropicServer, **kw) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, **kw)


def test_json_reply_with_tool_use_and_recorded_request():
    script = [Reply((Text("let me look"), ToolUse("read_file", {"path": "a.txt"}, id="t1")))]
    with FakeAnthropicServer(script, api_key="k") as server:
        async def go():
            async with client(server) as c:
                return await c.messages.create(model="claude-sonnet-4-6", max_tokens=100,
                                               messages=USER)
        msg = asyncio.run(go())
    assert msg.stop_reason == "tool_use"
    assert msg.content[0].text == "let me look"
    assert (msg.content[1].name, msg.content[1].input, msg.content[1].id) == (
        "read_file", {"path": "a.txt"}, "t1")
    assert server.requests[0].body["messages"] == USER
    headers = server.requests[0].headers
    assert "k" in (headers.get("x-api-key"), headers.get("authorization", "").split()[-1])


def test_streamed_reply_accumulates_text_thinking_and_tool_input():
    long_text = "漢字 and more text " * 10
    script = [Reply((Thinking("pondering"), Text(long_text),
                     ToolUse("grep", {"pattern": "x" * 50, "n": 3})), input_tokens=7,
                    cache_read_input_tokens=5)]
    with FakeAnthropicServer(script) as server:
        async def go():
            async with client(server) as c, c.messages.stream(
                    model="claude-sonnet-4-6", max_tokens=100, messages=USER) as stream:
                deltas = [t async for t in stream.text_stream]
                return deltas, await stream.get_final_message(), stream.request_id
        deltas, msg, request_id = asyncio.run(go())
    assert len(deltas) > 1 and "".join(deltas) == long_text
    assert msg.content[0].thinking == "pondering" and msg.content[0].signature
    assert msg.content[2].input == {"pattern": "x" * 50, "n": 3}
    assert msg.usage.input_tokens == 7 and msg.usage.cache_read_input_tokens == 5
    assert msg.stop_reason == "tool_use"
    assert request_id == "req_fake_1"


def test_overloaded_then_success_uses_sdk_retries():
    with FakeAnthropicServer([Failure(529), Failure(529), reply("ok")]) as server:
        async def go():
            async with client(server, max_retries=2) as c:
                return await c.messages.create(model="m", max_tokens=10, messages=USER)
        assert asyncio.run(go()).content[0].text == "ok"
    assert len(server.requests) == 3


def test_wrong_key_is_401_and_exhausted_script_is_a_clear_400():
    with FakeAnthropicServer([], api_key="right") as server:
        async def go(key):
            async with anthropic.AsyncAnthropic(api_key=key, base_url=server.base_url) as c:
                return await c.messages.create(model="m", max_tokens=10, messages=USER)
        with pytest.raises(anthropic.AuthenticationError):
            asyncio.run(go("wrong"))
        with pytest.raises(anthropic.BadRequestError, match="no more turns"):
            asyncio.run(go("right"))


def test_request_breaking_api_rules_gets_400():
    bad = [{"role": "user", "content": "x"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a",
                                              "input": {}}]},
           {"role": "user", "content": "no result"}]
    with FakeAnthropicServer([reply("never")]) as server:
        async def go():
            async with client(server) as c:
                return await c.messages.create(model="m", max_tokens=10, messages=bad)
        with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
            asyncio.run(go())
        assert server.remaining == 1 and server.problems


def test_cut_stream_is_a_protocol_error_for_the_client_after_partial_text():
    with FakeAnthropicServer([Reply((Text("partial answer that goes on"),), cut_after=4,
                                    chunk_chars=4)]) as server:
        async def go():
            got = []
            async with client(server, max_retries=0) as c, c.messages.stream(
                    model="m", max_tokens=10, messages=USER) as stream:
                try:
                    async for t in stream.text_stream:
                        got.append(t)
                except Exception as exc:
                    return got, exc
            return got, None
        got, exc = asyncio.run(go())
    assert got == ["part", "ial "]
    assert exc is not None
