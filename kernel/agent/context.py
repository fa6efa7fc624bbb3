"""What goes into one request: prompt-cache breakpoints and context trimming.

Caching: `cache_control` marks the end of the tools, the system prompt and the newest turn
(three of the four breakpoints the API allows), so a run re-reads its stable prefix from the
cache each round.

Trimming: when the conversation nears its budget (the context window less the output
limit), the oldest tool results are replaced by a pointer to their full output on disk
(written there first if they were small enough to be inline), oldest first, never in the
newest turns; what trimming cannot free, compaction does (kernel.agent.compact). A
tool_result block stays in place (only its content shrinks), so a tool call is never
separated from its result. The stored history is not changed: trimming applies to the
request only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

EPHEMERAL = {"type": "ephemeral"}
CHARS_PER_TOKEN = 3.5
TRIM_AT = 0.75
"""Trim when the estimated request exceeds this share of the context window."""
KEEP_RECENT_MESSAGES = 4


def estimate_tokens(value: Any) -> int:
    """A conservative estimate (JSON characters / 3.5)."""
    return int(len(json.dumps(value, ensure_ascii=False)) / CHARS_PER_TOKEN) + 1


def cached_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = [dict(t) for t in tools]
    if out:
        out[-1]["cache_control"] = EPHEMERAL
    return out


def cached_system(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": EPHEMERAL}]


def with_cache_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark the newest user turn's last block (a copy; the history is not changed)."""
    if not messages or messages[-1]["role"] != "user":
        return messages
    last = dict(messages[-1])
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if not blocks:
        return messages
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    last["content"] = blocks
    return [*messages[:-1], last]


def pointer_text(call_id: str, path: str, size: int) -> str:
    return (f"[older tool result removed from the context to save space ({size} bytes); the "
            f"full output is at {path} — page through it with "
            f"read_tool_output(call_id={call_id!r}) if you need it again]")


def trim_tool_results(
    messages: Sequence[Mapping[str, Any]],
    *,
    budget_tokens: int,
    fixed_tokens: int,
    store_full: Callable[[str, str], str | None],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Replace the oldest tool results by pointers until the request fits the budget.

    `fixed_tokens` is the size of what is not trimmed (system prompt, tools);
    `store_full(call_id, text)` returns the path of the full output on disk (writing it if
    needed), or None when it cannot (then that result stays). Returns the messages to send
    and the ids of the trimmed calls.
    """
    out = [dict(m) for m in messages]
    total = fixed_tokens + estimate_tokens(out)
    limit = int(budget_tokens * TRIM_AT)
    trimmed: list[str] = []
    if total <= limit:
        return out, trimmed
    for index in range(max(0, len(out) - KEEP_RECENT_MESSAGES)):
        message = out[index]
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        blocks = copy.deepcopy(list(message["content"]))
        changed = False
        for block in blocks:
            if block.get("type") != "tool_result":
                continue
            text = _result_text(block.get("content"))
            if len(text) < 400:
                continue
            path = store_full(str(block.get("tool_use_id")), text)
            if path is None:
                continue
            size = len(text.encode("utf-8", "surrogateescape"))
            before = estimate_tokens(block.get("content"))
            block["content"] = pointer_text(str(block["tool_use_id"]), path, size)
            total -= before - estimate_tokens(block["content"])
            trimmed.append(str(block["tool_use_id"]))
            changed = True
            if total <= limit:
                break
        if changed:
            out[index] = {**message, "content": blocks}
        if total <= limit:
            break
    return out, trimmed


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""
