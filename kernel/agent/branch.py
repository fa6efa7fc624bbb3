"""Editing the last prompt and asking for its answer again: where the history is cut.

The history is what the model is sent; an edit or a regeneration takes a tail of it out (the
agent stores that tail in a `messages_superseded` event, nothing is lost) and the run goes
on from the cut. Pure functions over the history and the last `user_message` event:

- `prompt_place` finds the prompt in the history (the event records where it went; older
  sessions are searched for its text);
- `cut` says what stays and what is superseded: for `edit`, the prompt (its text and
  attachments) and everything after it; for `regenerate`, everything after the prompt.

A prompt can share its history message with what came before it (the results of a stopped
turn's calls, an earlier prompt the model never answered): those blocks always stay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernel.events import UserMessage

REASONS = ("edit", "regenerate")


class NothingToChange(ValueError):
    """The session has no prompt to edit or answer again."""


@dataclass(frozen=True)
class Place:
    index: int
    """The history message holding the prompt."""
    block: int
    """The block its text is."""
    blocks: int
    """How many blocks the prompt is (its text and its attachments' blocks)."""


@dataclass(frozen=True)
class Cut:
    first_index: int
    first_block: int
    kept: Mapping[str, Any] | None
    """The message at `first_index` as it stays (None: it goes)."""
    superseded: list[dict[str, Any]]
    history: list[dict[str, Any]]
    """The history after the cut."""


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _is_text(block: Any, text: str) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "text" \
        and block.get("text") == text


def last_prompt(prompts: Sequence[UserMessage]) -> UserMessage:
    """The session's last prompt (of its user_message events, oldest first)."""
    if not prompts:
        raise NothingToChange("this session has no message yet: there is nothing to edit or "
                              "answer again")
    return prompts[-1]


def prompt_place(history: Sequence[Mapping[str, Any]], prompt: UserMessage) -> Place:
    """Where `prompt` (the session's last user_message) is in `history`."""
    size = 1 + sum(int(a.get("blocks", 1)) for a in prompt.attachments
                   if isinstance(a, Mapping))
    index, block = prompt.at_message, prompt.at_block
    if 0 <= index < len(history) and history[index].get("role") == "user":
        blocks = _blocks(history[index])
        if block < len(blocks) and _is_text(blocks[block], prompt.text):
            return Place(index, block, min(size, len(blocks) - block))
    for index in range(len(history) - 1, -1, -1):
        if history[index].get("role") != "user":
            continue
        blocks = _blocks(history[index])
        for block in range(len(blocks) - 1, -1, -1):
            if _is_text(blocks[block], prompt.text):
                return Place(index, block, min(size, len(blocks) - block))
    raise NothingToChange("the last message is no longer in the history the model is sent "
                          "(it was summarized away or changed)")


def cut(history: Sequence[Mapping[str, Any]], place: Place, reason: str) -> Cut:
    """The history with the prompt and its answer (`edit`) or only its answer
    (`regenerate`) taken out."""
    if reason not in REASONS:
        raise ValueError(f"unknown reason {reason!r}; reasons are {', '.join(REASONS)}")
    message = history[place.index]
    blocks = _blocks(message)
    block = place.block if reason == "edit" else place.block + place.blocks
    rest = [dict(m) for m in history[place.index + 1:]]
    kept = {**message, "content": blocks[:block]} if block > 0 else None
    superseded = ([{**message, "content": blocks[block:]}] if block < len(blocks) else [])
    before = [dict(m) for m in history[:place.index]]
    return Cut(first_index=place.index, first_block=block, kept=kept,
               superseded=[*superseded, *rest],
               history=[*before, *([dict(kept)] if kept is not None else [])])
