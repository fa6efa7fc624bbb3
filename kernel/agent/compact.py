"""Compaction: the oldest turns of a conversation, summarized by the model, for the requests.

Trimming (kernel.agent.context) shortens old tool results only; a session that grows through
long answers or `write_file` inputs still outgrows the window. Then the oldest turns are
replaced, in the requests only, by a summary the model writes of them: the request is the
summary (a user message) followed by the stored history from an assistant turn on
(`choose_cut`), so every tool call in what is sent keeps its result next to it and the
roles still alternate. The stored history and the timeline keep every turn; the summary is
a `ContextCompacted` event that says from which message the history is sent as it is.

What is summarized is first written out as a plain transcript (each block clipped, head and
tail, so one huge block cannot crowd out the rest) and, if that is longer than the model
can read at once, summarized chunk by chunk, each request carrying the summary so far —
so it works for a model with a 16K window as for one with 200K. Everything here is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kernel.agent.context import CHARS_PER_TOKEN, estimate_tokens

SUMMARY_SYSTEM = ("You write the working notes an assistant continues from. You never call "
                  "tools; you answer with the summary only.")
SUMMARY_INSTRUCTION = """\
Below is the beginning of a conversation between a user and an assistant that works on the \
user's computer through tools. The assistant will continue the work from your summary \
alone: the transcript itself will be gone. Summarize it so nothing needed is lost:
- the user's requests and constraints (their own words where they matter);
- decisions made and why;
- files read, created or changed (paths) and what changed in them;
- commands run and what came of them; errors and how they were resolved;
- what was being done last and what is left to do.
Be concise and factual; no preamble."""
SUMMARY_INTRO = ("[Summary of the earlier part of this conversation, written when it grew too "
                 "long for the context window; the full history is kept by Reins.]\n\n")
BLOCK_HEAD = 1500
BLOCK_TAIL = 1000
KEEP_SHARE = 0.4
"""Of the room left after the fixed part (system prompt, tools), what the kept turns may use."""
COMPACT_AT = 0.9
"""Compact when the trimmed request still needs this share of the input budget."""


_OVER = re.compile(r"(\d+)\s*tokens?\s*>\s*(\d+)")


def budget_after_overflow(message: str, sent_tokens: int) -> int:
    """The input budget to keep to after the API said a request of `sent_tokens` (Reins'
    estimate) is too long: scaled by the API's own "X tokens > N maximum" when it says so,
    else 60% of what was sent."""
    found = _OVER.search(message)
    if found is not None and int(found.group(1)) > 0:
        return max(int(sent_tokens * int(found.group(2)) / int(found.group(1))) - 64, 256)
    return max(int(sent_tokens * 0.6), 256)


def summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_INTRO + summary}]}


def keep_tokens(input_budget: int, fixed_tokens: int) -> int:
    """How many tokens the turns kept after a compaction may take."""
    return max(int((input_budget - fixed_tokens) * KEEP_SHARE), 256)


def choose_cut(history: Sequence[Mapping[str, Any]], start: int, keep: int) -> int | None:
    """The index of the first message sent as it is after a compaction: an assistant turn
    that leaves at least one whole exchange since `start` (the previous cut) to summarize,
    the earliest whose tail fits `keep` tokens, else the newest one; None when there is no
    such turn."""
    candidates = [k for k in range(max(start, 0) + 2, len(history))
                  if history[k].get("role") == "assistant"]
    if not candidates:
        return None
    for k in candidates:
        if estimate_tokens(list(history[k:])) <= keep:
            return k
    return candidates[-1]


def _clip(text: str) -> str:
    if len(text) <= BLOCK_HEAD + BLOCK_TAIL + 100:
        return text
    left = len(text) - BLOCK_HEAD - BLOCK_TAIL
    return f"{text[:BLOCK_HEAD]}\n[… {left} characters left out …]\n{text[-BLOCK_TAIL:]}"


def _block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        args = json.dumps(block.get("input"), ensure_ascii=False, default=str)
        return f"[calls {block.get('name')} with {args}]"
    if kind == "tool_result":
        content = block.get("content")
        inner = content if isinstance(content, str) else "\n".join(
            _block_text(b) for b in content if isinstance(b, Mapping)) \
            if isinstance(content, list) else ""
        error = " (error)" if block.get("is_error") else ""
        return f"[result{error}: {inner}]"
    if kind in ("image", "document"):
        return f"[{kind}]"
    if kind in ("thinking", "redacted_thinking"):
        return ""
    return f"[{kind}]"


def transcript(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """One entry per message, `User:` / `Assistant:` and its blocks, each block clipped."""
    entries = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [
            b for b in (content or []) if isinstance(b, Mapping)]
        texts = [_clip(t) for t in (_block_text(b) for b in blocks) if t]
        if texts:
            who = "User" if message.get("role") == "user" else "Assistant"
            entries.append(f"{who}: " + "\n".join(texts))
    return entries


def chunks(entries: Sequence[str], max_chars: int) -> list[str]:
    """The entries joined into pieces of at most `max_chars` (an entry longer than that is
    cut into pieces of its own)."""
    out: list[str] = []
    current = ""
    for entry in entries:
        for start in range(0, max(len(entry), 1), max_chars):
            piece = entry[start:start + max_chars]
            if current and len(current) + len(piece) + 2 > max_chars:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def summary_max_tokens(context_window: int, max_tokens: int) -> int:
    return max(256, min(max_tokens, max(1024, context_window // 8), 8192))


def chunk_chars(context_window: int, summary_tokens: int) -> int:
    """How much transcript one summary request can carry (the summary so far included)."""
    room = context_window - summary_tokens - estimate_tokens(SUMMARY_INSTRUCTION) - 200
    return max(int(room * CHARS_PER_TOKEN * 0.6) - summary_tokens * 4, 2000)


def summary_params(model: str, max_tokens: int, previous: str, chunk: str) -> dict[str, Any]:
    """The request that summarizes `chunk`, going on from the summary `previous`."""
    so_far = (f"\n\nThe summary of what came before this part:\n<summary>\n{previous}\n"
              f"</summary>\nWrite one summary that covers both." if previous else "")
    text = f"{SUMMARY_INSTRUCTION}{so_far}\n\n<transcript>\n{chunk}\n</transcript>"
    return {"model": model, "max_tokens": max_tokens, "system": SUMMARY_SYSTEM,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
