"""The request rules the real Messages API enforces that a harness can break.

The fake server answers 400 `invalid_request_error` with the first broken rule, as the real
API does, so a harness bug (a tool_use without its tool_result, too many cache breakpoints,
a lone surrogate) fails a test instead of passing silently. `limit_problem` adds the
limits, with the real API's wording where the harness reads it: a prompt that is too long,
an image too large (base64 bytes or pixels) or not of its declared media type, each naming
the block's place (`messages.2.content.0.content.1.image.source.base64`).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

MAX_CACHE_BREAKPOINTS = 4
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8000
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _count_cache_control(value: Any) -> int:
    if isinstance(value, Mapping):
        own = 1 if value.get("cache_control") else 0
        return own + sum(_count_cache_control(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(_count_cache_control(v) for v in value)
    return 0


def _surrogate_at(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_LONE_SURROGATE.search(value))
    if isinstance(value, Mapping):
        return any(_surrogate_at(k) or _surrogate_at(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_surrogate_at(v) for v in value)
    return False


def request_problem(body: Any) -> str | None:
    """The first rule the request breaks, or None when it is well formed."""
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
    if _surrogate_at(body):
        return ("The request body is not valid JSON: no low surrogate in string (a lone "
                "UTF-16 surrogate)")
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: must be a positive integer"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: must be user or assistant"
        if i and role == messages[i - 1].get("role"):
            return f"messages.{i}: roles must alternate between user and assistant"
        blocks = _blocks(message.get("content"))
        if not blocks and not (role == "assistant" and i == len(messages) - 1):
            return f"messages.{i}: content must not be empty"
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if role == "assistant" and uses:
            following = messages[i + 1] if i + 1 < len(messages) else None
            answered = {
                b.get("tool_use_id")
                for b in _blocks(following.get("content") if following else None)
                if b.get("type") == "tool_result"
            }
            missing = [u for u in uses if u not in answered]
            if missing:
                return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` "
                        f"blocks immediately after: {', '.join(map(str, missing))}")
        if role == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if results:
                previous = messages[i - 1] if i else {}
                asked = {b.get("id") for b in _blocks(previous.get("content"))
                         if b.get("type") == "tool_use"}
                stray = [r for r in results if r not in asked]
                if stray:
                    return (f"messages.{i}: unexpected `tool_use_id` found in `tool_result` "
                            f"blocks: {', '.join(map(str, stray))}")
    breakpoints = _count_cache_control([body.get("tools"), body.get("system"), messages])
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        return (f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {breakpoints}.")
    return None


def media_blocks(messages: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every image and document block of the messages, with its place as the API names it."""
    if not isinstance(messages, list):
        return
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        for j, block in enumerate(_blocks(message.get("content"))):
            where = f"messages.{i}.content.{j}"
            if block.get("type") in ("image", "document"):
                yield where, block
            elif block.get("type") == "tool_result":
                for k, inner in enumerate(_blocks(block.get("content"))):
                    if inner.get("type") in ("image", "document"):
                        yield f"{where}.content.{k}", inner


def _without_media(value: Any) -> Any:
    if isinstance(value, Mapping):
        if value.get("type") == "base64" and "data" in value:
            return {**value, "data": ""}
        return {k: _without_media(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_media(v) for v in value]
    return value


def prompt_tokens(body: Mapping[str, Any], chars_per_token: float) -> int:
    """The fake's token count of a request: its JSON characters (media data left out) over
    `chars_per_token`."""
    counted = _without_media({k: body.get(k) for k in ("system", "tools", "messages")})
    return int(len(json.dumps(counted, ensure_ascii=False)) / chars_per_token)


def _image_problem(where: str, block: Mapping[str, Any], max_bytes: int,
                   max_side: int) -> str | None:
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") != "base64":
        return None
    data = str(source.get("data", ""))
    if len(data) > max_bytes:
        return (f"{where}.image.source.base64: image exceeds {max_bytes / 1024 / 1024:g} MB "
                f"maximum: {len(data)} bytes > {max_bytes} bytes")
    try:
        from PIL import Image

        with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as image:
            size, kind = image.size, _FORMATS.get(str(image.format))
    except (binascii.Error, ValueError, OSError):
        return f"{where}.image.source.base64.data: Could not process image"
    if max(size) > max_side:
        return (f"{where}.image.source.base64.data: At least one of the image dimensions "
                f"exceed max allowed size: {max_side} pixels")
    if kind != source.get("media_type"):
        return (f"{where}.image.source.base64.data: Image does not match the provided "
                f"media type {source.get('media_type')}")
    return None


def limit_problem(body: Mapping[str, Any], *, context_limit_tokens: int | None,
                  chars_per_token: float, max_image_bytes: int,
                  max_image_side: int) -> str | None:
    """The first limit the request is over, in the real API's words; None when none is."""
    for where, block in media_blocks(body.get("messages")):
        if block.get("type") == "image":
            problem = _image_problem(where, block, max_image_bytes, max_image_side)
            if problem is not None:
                return problem
    if context_limit_tokens is not None:
        tokens = prompt_tokens(body, chars_per_token)
        if tokens > context_limit_tokens:
            return f"prompt is too long: {tokens} tokens > {context_limit_tokens} maximum"
    return None
