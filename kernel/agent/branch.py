"""Editing the last prompt and asking for its answer again: where the history is cut.

The history is what the model is sent; an edit or a regeneration takes a tail of it out (the
agent stores that tail in a `messages_superseded` event, nothing is lost) and the run goes
on from the cut. Pure functions over the history and the last `user_message` event:

- `prompt_place` finds the prompt in the history (the event records where it went; older
  sessions are searched for its text);
- `cut` says what stays and what is superseded: for `edit`, the prompt (its text and
  attachments) and everything after it; for `regenerate`, everything after the prompt.
- `restore` makes an earlier answer to the last prompt current again (the app's ‹ 1/2 ›):
  the answer now current is superseded at the same cut, and the one the chosen
  `messages_superseded` event keeps goes back in its place.

A prompt can share its history message with what came before it (the results of a stopped
turn's calls, an earlier prompt the model never answered): those blocks always stay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernel.events import Event, MessagesSuperseded, UserMessage

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


@dataclass(frozen=True)
class Restore:
    cut: Cut
    """The answer now current, taken out (`regenerate`'s cut of the last prompt)."""
    tail: list[dict[str, Any]]
    """The history from `cut.first_index` on once the chosen answer is back."""


def _unanswered_uses(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tool calls of `messages` with no result among them."""
    used: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        for block in _blocks(message):
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                used.add(str(block.get("id")))
            elif isinstance(block, Mapping) and block.get("type") == "tool_result":
                answered.add(str(block.get("tool_use_id")))
    return used - answered


def restore(history: Sequence[Mapping[str, Any]], events: Sequence[Event],
            ordinal: int) -> Restore:
    """The history with the answer kept by the session's `ordinal`-th messages_superseded
    event made the last prompt's answer again. NothingToChange (said to the person) when
    that is not an earlier answer to the last prompt, or cannot be sent as it stands."""
    supersedes = [(at, e) for at, e in enumerate(events) if isinstance(e, MessagesSuperseded)]
    if not 0 <= ordinal < len(supersedes):
        raise NothingToChange(f"this session has no version {ordinal}")
    at, version = supersedes[ordinal]
    prompts = [(n, e) for n, e in enumerate(events) if isinstance(e, UserMessage)]
    asked_at, prompt = prompts[-1] if prompts else (-1, last_prompt([]))
    place = prompt_place(history, prompt)
    answer = (place.index, place.block + place.blocks)
    if at < asked_at or (version.first_index, version.first_block) != answer:
        raise NothingToChange("only an earlier answer to the last message can be made "
                              "current again")
    if any(e.reason == "restore" and e.restores == ordinal for _, e in supersedes[ordinal + 1:]):
        raise NothingToChange("that version is already the current one")
    if not version.messages or _unanswered_uses(version.messages):
        raise NothingToChange("that version cannot be continued from (it is empty, or a "
                              "call of it has no result)")
    change = cut(history, place, "regenerate")
    kept = [dict(m) for m in change.history[place.index:]]
    back = [dict(m) for m in version.messages]
    if kept and back[0].get("role") == kept[-1].get("role"):
        kept[-1] = {**kept[-1], "content": [*_blocks(kept[-1]), *_blocks(back.pop(0))]}
    return Restore(change, [*kept, *back])
