"""The user's side of a run: a new prompt (its attachments fitted, a prompt left without an
answer closed first, so two prompts never merge) and a branch, where an edit or a
regeneration supersedes the last prompt's answer (kernel.agent.branch says where it cuts)
and closes the approvals still asked in what it took out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernel.agent.branch import cut, last_prompt, prompt_place
from kernel.agent.history import History, call_ids
from kernel.agent.limits import StopReason
from kernel.agent.media import Keep, fit_content
from kernel.agent.run_state import RunCore
from kernel.events import (
    ApprovalDecision,
    ErrorEvent,
    Event,
    MessagesSuperseded,
    RunFinished,
    UserMessage,
)
from kernel.shared.attachments import Attachment

SUPERSEDED_CALL = {
    "edit": "The message this call answered was edited and sent again; the call was not run.",
    "regenerate": "The answer this call was part of was asked for again; the call was not run.",
}
"""The decision that closes a pending approval of a call an edit or regeneration removed."""


@dataclass(frozen=True)
class KeptAttachments:
    """What an edited prompt keeps of the old one's attachments: summaries and blocks."""

    summaries: tuple[dict[str, Any], ...] = ()
    blocks: tuple[dict[str, Any], ...] = ()


def branch(core: RunCore, prompts: Sequence[UserMessage], unanswered: set[str],
           reason: str, keep: Sequence[int]) -> KeptAttachments:
    """Supersede the last prompt and its answer (`edit`) or its answer (`regenerate`);
    for an edit, the kept attachments (by position)."""
    history = core.history
    prompt = last_prompt(prompts)
    place = prompt_place(history.messages, prompt)
    blocks = history.messages[place.index]["content"]
    kept_summaries: list[dict[str, Any]] = []
    kept_blocks: list[dict[str, Any]] = []
    start = place.block + 1
    for position, summary in enumerate(prompt.attachments):
        count = int(summary.get("blocks", 1))
        if position in keep and isinstance(blocks, list):
            kept_summaries.append(dict(summary))
            kept_blocks += [dict(b) for b in blocks[start:start + count]]
        start += count
    change = cut(history.messages, place, reason)
    event = MessagesSuperseded(core.session_id, reason=reason,
                               first_index=change.first_index,
                               first_block=change.first_block,
                               messages=change.superseded)
    core.reporter.emit(event, write=core.store.submit_branch(event, change.first_index,
                                                             change.kept))
    for call_id in sorted(unanswered & call_ids(change.superseded)):
        core.emit(ApprovalDecision(
            core.session_id, call_id=call_id, decision="deny", decided_by="user",
            scope="call", message=SUPERSEDED_CALL[reason], decided_at=time.time()))
    history.messages = change.history
    return KeptAttachments(tuple(kept_summaries), tuple(kept_blocks))


def add_prompt(core: RunCore, prompt: str, attachments: Sequence[Attachment],
               kept: KeptAttachments, last_end: str, keep_media: Keep) -> None:
    """The prompt (after the kept attachments, then its own) as the history's newest user
    turn; `last_end` says why a prompt before it got no answer."""
    if not core.session.title:
        core.track(core.store.submit_rename_session(core.session_id, title_from(prompt)))
    summaries, blocks = list(kept.summaries), list(kept.blocks)
    for attachment in attachments:
        fitted, _ = fit_content(attachment.blocks(), keep=keep_media)
        summaries.append(attachment.summary(len(fitted)))
        blocks += [dict(b) for b in fitted]
    _close_unanswered_turn(core.history, last_end)
    at_message, at_block = _prompt_at(core.history.messages)
    core.emit(UserMessage(core.session_id, prompt, attachments=summaries,
                          at_message=at_message, at_block=at_block))
    core.history.add_user_blocks([{"type": "text", "text": prompt}, *blocks])


def _prompt_at(messages: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Where the next prompt's text goes: its history message and block."""
    if messages and messages[-1]["role"] == "user":
        content = messages[-1]["content"]
        return len(messages) - 1, 1 if isinstance(content, str) else len(content)
    return len(messages), 0


def _close_unanswered_turn(history: History, last_end: str) -> None:
    """A user turn that holds a prompt (text) and got no answer — its request failed,
    or the run was stopped first — is closed with a short assistant note saying so
    before a new prompt: the new prompt is its own turn, never silently merged into
    the old one (a turn of only tool results is still joined by the next prompt, as the
    API wants). Retry (resume) sends the unanswered turn again instead."""
    if not history.messages or history.messages[-1]["role"] != "user":
        return
    content = history.messages[-1]["content"]
    if not isinstance(content, str) and not any(
            isinstance(b, dict) and b.get("type") == "text" for b in content):
        return
    history.append({"role": "assistant", "content": [
        {"type": "text", "text": f"(No answer to this message: {last_end}.)"}]})


def why_unanswered(past: Sequence[Event]) -> str:
    """Why the last run left its prompt without an answer, in words for the model."""
    for event in reversed(past):
        if isinstance(event, ErrorEvent):
            return f"the request failed ({event.code})"
        if isinstance(event, RunFinished) and event.stop_reason != StopReason.ERROR.value:
            if event.stop_reason == StopReason.CANCELLED.value:
                return "the user stopped the run before it was answered"
            return f"the run ended first ({event.stop_reason})"
        if isinstance(event, UserMessage):
            break
    return "the run ended before it was answered"


def title_from(prompt: str) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= 60 else line[:59] + "…"
