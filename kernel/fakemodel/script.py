"""What the fake model says: scripted turns, one per request.

A script is a sequence of turns; each request to the server takes the next one. A turn is a
`Reply` (a message, sent as JSON or as an SSE stream, optionally cut, stalled or ended by an
`error` event part-way), a `Failure` (an HTTP error such as 529 overloaded), `Silence` (the
response headers never come), or a callable that builds one from the request body (for
replies that depend on what was asked).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str = "fake-signature"


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Any
    id: str = ""
    """Empty: the server makes one (`toolu_fake_<request>_<index>`)."""


Block = Text | Thinking | ToolUse


@dataclass(frozen=True)
class Reply:
    content: tuple[Block, ...]
    stop_reason: str = ""
    """Empty: `tool_use` when the content has a ToolUse, else `end_turn`."""
    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cut_after: int | None = None
    """Drop the connection (no stream terminator) after this many SSE events."""
    stall_after: int | None = None
    """Stop sending after this many SSE events and hold the connection open."""
    delay_s: float = 0.0
    """Pause between SSE events."""
    error_after: int | None = None
    """After this many SSE events, send an `error` event (`error_type`) and end the stream,
    as the real API does when it is overloaded in the middle of an answer."""
    error_type: str = "overloaded_error"
    chunk_chars: int = 16
    """Text and tool input are streamed in deltas of this many characters."""

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.content) else "end_turn"


@dataclass(frozen=True)
class Failure:
    status: int = 529
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    retry_after_ms: int | None = 5
    """Sent as `retry-after-ms`, which the SDK honours: keeps test back-off short."""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Silence:
    """Read the request, never send the response headers; hold the connection until the
    server is released or stopped."""


Turn = Reply | Failure | Silence | Callable[[Mapping[str, Any]], "Reply | Failure | Silence"]


def reply(*blocks: Block | str, **kwargs: Any) -> Reply:
    """Shorthand: strings become Text blocks."""
    return Reply(tuple(Text(b) if isinstance(b, str) else b for b in blocks), **kwargs)


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the newest user message of a request (for responders)."""
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def block_dicts(turn: Reply, request_no: int) -> list[dict[str, Any]]:
    """The content blocks of a reply as the API returns them."""
    blocks: list[dict[str, Any]] = []
    for index, block in enumerate(turn.content):
        if isinstance(block, Text):
            blocks.append({"type": "text", "text": block.text, "citations": None})
        elif isinstance(block, Thinking):
            blocks.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        else:
            blocks.append({
                "type": "tool_use",
                "id": block.id or f"toolu_fake_{request_no}_{index}",
                "name": block.name,
                "input": block.input,
            })
    return blocks


def chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse_events(turn: Reply, request_no: int, model: str) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of a streamed reply, in order: (event name, data)."""
    events: list[tuple[str, dict[str, Any]]] = [(
        "message_start",
        {"type": "message_start", "message": {
            "id": f"msg_fake_{request_no}", "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {
                "input_tokens": turn.input_tokens, "output_tokens": 1,
                "cache_creation_input_tokens": turn.cache_creation_input_tokens,
                "cache_read_input_tokens": turn.cache_read_input_tokens,
            },
        }},
    )]
    for index, block in enumerate(block_dicts(turn, request_no)):
        kind = block["type"]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c}
                      for c in chunks(block["text"], turn.chunk_chars)]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c}
                      for c in chunks(block["thinking"], turn.chunk_chars)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": c}
                      for c in chunks(json.dumps(block["input"]), turn.chunk_chars)]
        events.append(("content_block_start",
                       {"type": "content_block_start", "index": index, "content_block": start}))
        events.extend(("content_block_delta",
                       {"type": "content_block_delta", "index": index, "delta": d})
                      for d in deltas)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": turn.final_stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": turn.output_tokens},
    }))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def message_json(turn: Reply, request_no: int, model: str) -> dict[str, Any]:
    """A non-streamed reply: the whole Message object."""
    return {
        "id": f"msg_fake_{request_no}", "type": "message", "role": "assistant", "model": model,
        "content": block_dicts(turn, request_no), "stop_reason": turn.final_stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens,
            "cache_creation_input_tokens": turn.cache_creation_input_tokens,
            "cache_read_input_tokens": turn.cache_read_input_tokens,
        },
    }
