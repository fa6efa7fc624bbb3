"""The fake server's model-API behaviours for issue 18, driven by the real anthropic SDK:
GET /v1/models, an error event inside a 200 stream, a reply that never sends headers, the
prompt-size limit and the image limits (with the real API's wording and block paths)."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from typing import Any

import anthropic
import pytest
from PIL import Image

from kernel.fakemodel import FakeAnthropicServer, Reply, Silence, Text, reply
from kernel.fakemodel.validate import limit_problem, prompt_tokens

USER = [{"role": "user", "content": "hi"}]


def client(server: FakeAnthropicServer, **kw: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0,
                                    **kw)


def png(size: tuple[int, int]) -> str:
    out = io.BytesIO()
    Image.new("RGB", size).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_models_are_listed_and_retrieved():
    with FakeAnthropicServer(models=("m-one", "m-two")) as server:
        async def go() -> tuple[list[str], str]:
            async with client(server) as c:
                page = await c.models.list()
                one = await c.models.retrieve("m-two")
                return [m.id for m in page.data], one.id
        ids, found = asyncio.run(go())
        assert ids == ["m-one", "m-two"] and found == "m-two"

        async def missing() -> None:
            async with client(server) as c:
                await c.models.retrieve("nope")
        with pytest.raises(anthropic.NotFoundError):
            asyncio.run(missing())


def test_an_error_event_mid_stream_reaches_the_client_as_a_status_error_of_200():
    with FakeAnthropicServer([Reply((Text("partial answer"),), error_after=3)]) as server:
        seen: list[str] = []

        async def go() -> None:
            async with client(server) as c, c.messages.stream(
                    model="m", max_tokens=10, messages=USER) as s:
                async for event in s:
                    seen.append(event.type)
        with pytest.raises(anthropic.APIStatusError) as raised:
            asyncio.run(go())
    assert raised.value.status_code == 200
    assert "overloaded_error" in str(raised.value.body)
    assert seen[:1] == ["message_start"]


def test_silence_never_sends_headers_until_released():
    with FakeAnthropicServer([Silence()]) as server:
        async def go() -> None:
            async with client(server, timeout=0.5) as c:
                await c.messages.create(model="m", max_tokens=10, messages=USER)
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            asyncio.run(go())
        assert 0.4 < time.monotonic() - started < 3 and server.stalled.is_set()
        assert len(server.requests) == 1


def test_a_prompt_over_the_limit_gets_the_real_apis_400():
    with FakeAnthropicServer([reply("never")], context_limit_tokens=50) as server:
        async def go() -> None:
            async with client(server) as c:
                await c.messages.create(model="m", max_tokens=10,
                                        messages=[{"role": "user", "content": "x" * 400}])
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            asyncio.run(go())
        assert server.remaining == 1


def _body(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": content}]}


def _image(data: str, media: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


LIMITS = {"context_limit_tokens": None, "chars_per_token": 3.5, "max_image_bytes": 5000,
          "max_image_side": 100}


@pytest.mark.parametrize(("content", "says"), [
    ([_image(png((10, 10)))], None),
    ([_image(png((101, 10)))], "messages.0.content.0.image.source.base64.data: At least one"),
    ([_image("A" * 5001)], "messages.0.content.0.image.source.base64: image exceeds"),
    ([_image(png((10, 10)), "image/jpeg")], "does not match the provided media type"),
    ([_image("bm90IGFuIGltYWdl")], "Could not process image"),
    ([{"type": "text", "text": "t"},
      {"type": "tool_result", "tool_use_id": "x", "content": [_image(png((200, 10)))]}],
     "messages.0.content.1.content.0.image"),
    ([{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                      "data": "A" * 9000}}], None),
])
def test_image_limits(content, says):
    problem = limit_problem(_body(content), **LIMITS)
    assert (problem is None) if says is None else (problem is not None and says in problem)


def test_media_data_does_not_count_as_prompt_tokens():
    small = prompt_tokens(_body([_image("")]), 3.5)
    assert prompt_tokens(_body([_image("A" * 100_000)]), 3.5) == small
    assert prompt_tokens(_body([{"type": "text", "text": "x" * 3500}]), 3.5) >= 1000
