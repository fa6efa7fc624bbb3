"""How each kernel event shows in the chat: messages, streamed text, tool cards, notices, and
what the run is doing meanwhile (thinking, running a tool, waiting for an approval)."""

from __future__ import annotations

import time
from typing import Any

from desktop.chat.model import ChatModel, Role
from desktop.chat.thumbs import prompt_pictures
from desktop.errors import in_app_words
from desktop.run_notices import notice_text
from desktop.words import execution_seconds, format_bytes, format_duration, outcome
from kernel import events as ev
from kernel.transaction.changeset import ChangeSet, ChangeSetError

_FINISH_NOTES = {
    "end_turn": "",
    "cancelled": "Run stopped.",
    "max_rounds": "Run stopped: it reached the maximum number of rounds.",
    "loop_detected": "Run stopped: the model kept repeating the same call.",
}


def result_detail(event: ev.ToolResultEvent, waited_s: float = 0.0) -> str:
    """A finished call's card detail: what happened in words, how long it ran (an approval's
    wait not counted), how much it wrote. Its status is the event's."""
    parts = [format_duration(execution_seconds(event.duration_ms, waited_s))]
    if event.output_bytes:
        parts.append(format_bytes(event.output_bytes))
    if not event.is_error:
        return " · ".join(parts)
    return " · ".join([outcome(True, event.error_code, event.preview), *parts])


def changes_words(changes: list[dict[str, Any]]) -> str:
    """A result's change set in words ("" for none); one that cannot be read says so."""
    if not changes:
        return ""
    try:
        return ChangeSet.from_json({"changes": changes}).summary()
    except (ChangeSetError, TypeError):
        return "changes that could not be read"


def _decision_detail(event: ev.ApprovalDecision) -> str:
    if event.decision == "deny":
        return "denied by the rules" if event.decided_by == "policy" else "denied by you"
    return "no answer to the approval" if event.decision == "unavailable" else ""


def apply_event(model: ChatModel, event: ev.Event, at: float | None = None) -> None:
    """Show `event`; `at` is when it happened (the event's own time for history loaded from
    the store), shown on hover."""
    now = at if at is not None else time.time()
    if isinstance(event, ev.UserMessage):
        model.add_message(Role.USER, event.text, at, event.attachments, prompt_pictures(
            event.session_id, event.at_message, event.at_block, event.attachments))
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.AssistantDelta):
        model.append_delta(event.text, at)
        model.set_activity(None)
    elif isinstance(event, ev.MessagesSuperseded) and event.reason == "restore":
        model.restore(event.restores)
    elif isinstance(event, ev.MessagesSuperseded):
        model.supersede(event.reason)
    elif isinstance(event, ev.SessionStarted):
        model.run_model = event.model
    elif isinstance(event, ev.AssistantText):
        model.finish_text(event.text, at)
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.ToolCallStarted | ev.ApprovalRequest):
        status = ev.next_status(model.card_status(event.call_id), event)
        summary = event.summary if isinstance(event, ev.ToolCallStarted) else ""
        model.add_tool_card(event.call_id, event.name, summary, status,
                            arguments=event.input, at=at,
                            parent=event.parent_call_id
                            if isinstance(event, ev.ToolCallStarted) else "")
        if isinstance(event, ev.ApprovalRequest):
            model.mark_asked(event.call_id, now)
        model.refresh_activity(now)
    elif isinstance(event, ev.ApprovalDecision):
        model.mark_decided(event.call_id, now)
        model.update_tool_card(event.call_id,
                               ev.next_status(model.card_status(event.call_id), event),
                               _decision_detail(event))
        model.refresh_activity(now)
    elif isinstance(event, ev.ToolResultEvent):
        detail = result_detail(event, model.approval_wait(event.call_id))
        model.update_tool_card(event.call_id, event.status, detail, preview=event.preview,
                               output_path=event.externalized_path)
        model.set_changes(event.call_id, changes_words(event.changes))
        model.refresh_activity(now)
    elif isinstance(event, ev.ModelWaiting):
        model.set_activity("Waiting for the model", now - event.waited_s)
    elif isinstance(event, ev.ModelRetry):
        if event.discarded:
            model.close_stream()
            model.add_message(Role.NOTICE, f"The answer above broke off ({event.reason}); "
                              "the model answers again.", at)
        model.set_activity(f"Retrying in {format_duration(event.delay_s)}: {event.reason} "
                           f"(attempt {event.attempt + 1} of {event.of})", now)
    elif isinstance(event, ev.ContextCompacted):
        model.add_message(Role.NOTICE, notice_text(event) or "", at)
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.McpSampling):
        model.add_message(Role.NOTICE, notice_text(event) or "", at)
    elif isinstance(event, ev.RunFinished):
        model.finish_streaming()
        note = _FINISH_NOTES.get(event.stop_reason, f"Run stopped: {event.stop_reason}.")
        if note:
            model.add_message(Role.NOTICE, note, at)
        if event.empty_answer:
            model.add_message(Role.NOTICE, notice_text(event) or "", at)
        model.end_turn()
    elif isinstance(event, ev.Notice):
        model.add_message(Role.NOTICE, event.message, at)
    elif isinstance(event, ev.ErrorEvent):
        model.finish_streaming()
        model.add_message(Role.ERROR, f"{in_app_words(event.message)} ({event.code})", at)
        model.end_turn()
