"""The request rules the real Messages API enforces that a harness can break.

The fake server answers 400 `invalid_request_error` with the first broken rule, as the real
API does, so a harness bug (a tool_use without its tool_result, too many cache breakpoints)
fails a test instead of passing silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_CACHE_BREAKPOINTS = 4


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


def request_problem(body: Any) -> str | None:
    """The first rule the request breaks, or None when it is well formed."""
    if not isinstance(body, Mapping):
        return "request body must be a JSON object"
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
