"""How each kernel event shows in the chat: messages, streamed text, tool cards, notices, and
what the run is doing meanwhile (thinking, running a tool, waiting for an approval)."""

from __future__ import annotations

import time

from desktop.chat.model import ChatModel, Role
from desktop.errors import in_app_words
from desktop.words import execution_seconds, format_bytes, format_duration, outcome
from kernel import events as ev

_STATUS = {
    "cancelled": "cancelled",
    "timeout": "timed out",
    "approval_denied": "denied",
    "permission_denied": "denied",
}
"""A failed call's card status (its colour); the words come from `desktop.words.outcome`."""
_FINISH_NOTES = {
    "end_turn": "",
    "cancelled": "Run stopped.",
    "max_rounds": "Run stopped: it reached the maximum number of rounds.",
    "loop_detected": "Run stopped: the model kept repeating the same call.",
}


def result_status(event: ev.ToolResultEvent, waited_s: float = 0.0) -> tuple[str, str]:
    """The card's status and detail for a finished call: what happened in words, how long it
    ran (an approval's wait not counted), how much it wrote."""
    parts = [format_duration(execution_seconds(event.duration_ms, waited_s))]
    if event.output_bytes:
        parts.append(format_bytes(event.output_bytes))
    if not event.is_error:
        return "done", " · ".join(parts)
    status = _STATUS.get(event.error_code or "", "error")
    words = outcome(True, event.error_code, event.preview)
    return status, " · ".join([words, *parts])


def apply_event(model: ChatModel, event: ev.Event, at: float | None = None) -> None:
    """Show `event`; `at` is when it arrived (None for history loaded from the store)."""
    now = at if at is not None else time.time()
    if isinstance(event, ev.UserMessage):
        model.add_message(Role.USER, event.text, at, event.attachments)
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.AssistantDelta):
        model.append_delta(event.text, at)
        model.set_activity(None)
    elif isinstance(event, ev.MessagesSuperseded):
        model.supersede(event.reason)
    elif isinstance(event, ev.AssistantText):
        model.finish_text(event.text, at)
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.ToolCallStarted):
        model.add_tool_card(event.call_id, event.name, event.summary, "running",
                            arguments=event.input, at=at)
        model.refresh_activity(now)
    elif isinstance(event, ev.ApprovalRequest):
        model.add_tool_card(event.call_id, event.name, "", "awaiting approval",
                            arguments=event.input, at=at)
        model.mark_asked(event.call_id, now)
        model.refresh_activity(now)
    elif isinstance(event, ev.ApprovalDecision):
        model.mark_decided(event.call_id, now)
        if event.decision == "deny":
            model.update_tool_card(event.call_id, "denied", "denied by you"
                                   if event.decided_by != "policy" else "denied by the rules")
        elif event.decision == "unavailable":
            model.update_tool_card(event.call_id, "error", "no answer to the approval")
        else:
            model.update_tool_card(event.call_id, "running")
        model.refresh_activity(now)
    elif isinstance(event, ev.ToolResultEvent):
        status, detail = result_status(event, model.approval_wait(event.call_id))
        model.update_tool_card(event.call_id, status, detail, preview=event.preview,
                               output_path=event.externalized_path)
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
        sizes = (f" (about {event.tokens_before:,} → {event.tokens_after:,} tokens)"
                 if event.tokens_before and event.tokens_after else "")
        model.add_message(Role.NOTICE, "Older turns were summarized to fit the context "
                          f"window{sizes}; the full history is kept.", at)
        model.set_activity("Thinking", now)
    elif isinstance(event, ev.RunFinished):
        model.finish_streaming()
        note = _FINISH_NOTES.get(event.stop_reason, f"Run stopped: {event.stop_reason}.")
        if note:
            model.add_message(Role.NOTICE, note, at)
    elif isinstance(event, ev.McpServerEvent) and event.state == "failed":
        model.add_message(Role.NOTICE, f"MCP server {event.server!r} failed: {event.reason}; "
                                       f"its tools are not available.", at)
    elif isinstance(event, ev.ErrorEvent):
        model.finish_streaming()
        model.add_message(Role.ERROR, f"{in_app_words(event.message)} ({event.code})", at)
