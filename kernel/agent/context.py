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

A run keeps one `ContextTrimmer`: it gives the same request as `trim_tool_results` on the
whole history, but keeps what it measured (each message's size, the trimmable results,
where their full output is) for the messages that are still the same objects, so a round
costs the same at round 400 as at round 20 (the history grows by appending; a message that
is replaced is a new object, measured again from there on).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


def with_cache_breakpoint(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Mark the newest user turn's last block (a copy; the history is not changed)."""
    if not messages or messages[-1]["role"] != "user":
        return list(messages)
    last = dict(messages[-1])
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if not blocks:
        return list(messages)
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    last["content"] = blocks
    return [*messages[:-1], last]


def same_objects(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items of `new` are the very objects of `old` (by identity)."""
    if len(new) >= len(old) and all(map(operator.is_, old, new)):
        return len(old)
    same = 0
    for a, b in zip(old, new, strict=False):
        if a is not b:
            break
        same += 1
    return same


def pointer_text(call_id: str, path: str, size: int) -> str:
    return (f"[older tool result removed from the context to save space ({size} bytes); the "
            f"full output is at {path} — page through it with "
            f"read_tool_output(call_id={call_id!r}) if you need it again]")


@dataclass(frozen=True)
class Trimmed:
    messages: list[Mapping[str, Any]]
    """The messages to send: the history's own objects, except those with trimmed results
    (new objects; the history is not changed)."""
    trimmed: list[str]
    """The call ids whose results were replaced by a pointer, oldest first."""
    tokens: int
    """The estimated size of the request: `fixed_tokens` + `estimate_tokens(messages)`."""


def trim_tool_results(
    messages: Sequence[Mapping[str, Any]],
    *,
    budget_tokens: int,
    fixed_tokens: int,
    store_full: Callable[[str, str], str | None],
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """Replace the oldest tool results by pointers until the request fits the budget.

    `fixed_tokens` is the size of what is not trimmed (system prompt, tools);
    `store_full(call_id, text)` returns the path of the full output on disk (writing it if
    needed), or None when it cannot (then that result stays). Returns the messages to send
    and the ids of the trimmed calls. One request on its own; a run uses a ContextTrimmer.
    """
    done = ContextTrimmer(store_full).trim(messages, budget_tokens=budget_tokens,
                                           fixed_tokens=fixed_tokens)
    return done.messages, done.trimmed


@dataclass
class _Candidate:
    """A tool result that may be trimmed: block `block` of message `message`."""

    message: int
    block: int
    call_id: str
    text: str
    path: str | None = None
    """Where its full output is, once `store_full` said so."""
    tokens_saved: int = 0
    chars_saved: int = 0


def _tokens(chars: int) -> int:
    return int(chars / CHARS_PER_TOKEN) + 1


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


@dataclass
class _Walk:
    """How far one budget's trimming went: the first `position` candidates were walked,
    `chosen` of them trimmed; `out` is the request it made (private: copies are handed out)."""

    limit: int
    fixed: int
    position: int = 0
    chosen: list[_Candidate] = field(default_factory=list)
    tokens_saved: int = 0
    chars_saved: int = 0
    skipped: bool = False
    """A walked result could not be stored: the next request walks again from the start."""
    out: list[Mapping[str, Any]] = field(default_factory=list)
    by_message: dict[int, list[_Candidate]] = field(default_factory=dict)


class ContextTrimmer:
    """`trim_tool_results` for the successive requests of one run, each costing what is new
    since the previous request, not the whole history again.

    It relies on the history's messages not being changed in place (a changed message is a
    new object): by identity it finds the first message that is not the one it measured and
    measures again from there. The JSON of a list is its items' JSON joined by ", " within
    brackets, so the size of the whole is the sum of the messages' sizes, exactly. When the
    history only grew since the previous request (and the budget is the same), the trimming
    goes on from where it stopped: a longer history never needs fewer results trimmed, so
    the oldest-first walk from the start would take the same ones first."""

    def __init__(self, store_full: Callable[[str, str], str | None]) -> None:
        self._store_full = store_full
        self._seen: list[Mapping[str, Any]] = []
        self._chars: list[int] = []
        self._candidates: list[_Candidate] = []
        self._scanned = 0
        """Messages searched for candidates (all before the newest KEEP_RECENT_MESSAGES)."""
        self._walk: _Walk | None = None

    def trim(self, messages: Sequence[Mapping[str, Any]], *, budget_tokens: int,
             fixed_tokens: int) -> Trimmed:
        grew = self._follow(messages)
        chars = 2 + sum(self._chars) + 2 * max(len(messages) - 1, 0)
        limit = int(budget_tokens * TRIM_AT)
        walk = self._walk
        if walk is None or not grew or walk.skipped or (walk.limit, walk.fixed) != (
                limit, fixed_tokens):
            walk = self._walk = _Walk(limit, fixed_tokens, out=list(messages))
        else:
            walk.out.extend(messages[len(walk.out):])
        total = fixed_tokens + _tokens(chars) - walk.tokens_saved
        while total > limit:
            candidate = self._candidate(walk.position, len(messages))
            if candidate is None:
                break
            walk.position += 1
            if candidate.path is None and not self._locate(candidate):
                walk.skipped = True
                continue
            total -= candidate.tokens_saved
            walk.tokens_saved += candidate.tokens_saved
            walk.chars_saved += candidate.chars_saved
            walk.chosen.append(candidate)
            self._point(walk, candidate)
        return Trimmed(list(walk.out), [c.call_id for c in walk.chosen],
                       fixed_tokens + _tokens(chars - walk.chars_saved))

    def unlocated(self, call_id: str) -> None:
        """The full output of this call is not where `store_full` said after all (it could
        not be written): the next request does not point to it (store_full is asked again
        when it is trimmed)."""
        for candidate in self._candidates:
            if candidate.call_id == call_id and candidate.path is not None:
                candidate.path = None
                if self._walk is not None:
                    self._walk.skipped = True

    def _follow(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Forget what was measured from the first message that changed and measure the
        rest; True when the history only grew (every message measured is still there)."""
        seen = self._seen
        same = same_objects(seen, messages)
        grew = same == len(seen)
        if not grew:
            del seen[same:], self._chars[same:]
            valid = min(same, max(0, len(messages) - KEEP_RECENT_MESSAGES))
            self._candidates = [c for c in self._candidates if c.message < valid]
            self._scanned = min(self._scanned, valid)
        for message in messages[same:]:
            seen.append(message)
            self._chars.append(_json_chars(message))
        return grew

    def _candidate(self, position: int, count: int) -> _Candidate | None:
        """The position-th trimmable result, oldest first, searching further if needed."""
        searchable = max(0, count - KEEP_RECENT_MESSAGES)
        while position >= len(self._candidates) and self._scanned < searchable:
            self._scan(self._scanned)
            self._scanned += 1
        return self._candidates[position] if position < len(self._candidates) else None

    def _scan(self, index: int) -> None:
        message = self._seen[index]
        if message["role"] != "user" or isinstance(message["content"], str):
            return
        for number, block in enumerate(message["content"]):
            if block.get("type") != "tool_result":
                continue
            text = result_text(block.get("content"))
            if len(text) >= 400:
                self._candidates.append(
                    _Candidate(index, number, str(block.get("tool_use_id")), text))

    def _locate(self, candidate: _Candidate) -> bool:
        """Ask where the full output is (kept once known; asked again while it is not)."""
        path = self._store_full(candidate.call_id, candidate.text)
        if path is None:
            return False
        content = self._seen[candidate.message]["content"][candidate.block].get("content")
        pointer = _pointer(candidate, path)
        candidate.path = path
        candidate.tokens_saved = estimate_tokens(content) - estimate_tokens(pointer)
        candidate.chars_saved = _json_chars(content) - _json_chars(pointer)
        return True

    def _point(self, walk: _Walk, candidate: _Candidate) -> None:
        """Put the message with this result trimmed (and those before it) in the request."""
        trimmed = walk.by_message.setdefault(candidate.message, [])
        trimmed.append(candidate)
        message = self._seen[candidate.message]
        blocks = list(message["content"])
        for done in trimmed:
            blocks[done.block] = {**blocks[done.block],
                                  "content": _pointer(done, str(done.path))}
        walk.out[candidate.message] = {**message, "content": blocks}


def _pointer(candidate: _Candidate, path: str) -> str:
    size = len(candidate.text.encode("utf-8", "surrogateescape"))
    return pointer_text(candidate.call_id, path, size)


def result_text(content: Any) -> str:
    """The text of a tool_result block's content (a string, or its text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""
