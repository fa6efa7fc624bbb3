"""How each kernel event shows in the chat: messages, streamed text, tool cards, notices."""

from __future__ import annotations

from desktop.chat.model import ChatModel, Role
from kernel import events as ev

_ERROR_STATUS = {
    "cancelled": "cancelled",
    "timeout": "timed out",
    "approval_denied": "denied",
    "permission_denied": "denied",
}
_FINISH_NOTES = {
    "end_turn": "",
    "cancelled": "Run stopped.",
    "max_rounds": "Run stopped: it reached the maximum number of rounds.",
    "loop_detected": "Run stopped: the model kept repeating the same call.",
}


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def result_status(event: ev.ToolResultEvent) -> tuple[str, str]:
    """The card's status and detail for a finished call."""
    detail = f"{event.duration_ms:.0f} ms"
    if event.output_bytes:
        detail += f", {_size(event.output_bytes)}"
    if not event.is_error:
        return "done", detail
    code = event.error_code or "error"
    return _ERROR_STATUS.get(code, "error"), f"{code}, {detail}"


def apply_event(model: ChatModel, event: ev.Event) -> None:
    if isinstance(event, ev.UserMessage):
        model.add_message(Role.USER, event.text)
    elif isinstance(event, ev.AssistantDelta):
        model.append_delta(event.text)
    elif isinstance(event, ev.AssistantText):
        model.finish_text(event.text)
    elif isinstance(event, ev.ToolCallStarted):
        model.add_tool_card(event.call_id, event.name, event.summary, "running")
    elif isinstance(event, ev.ApprovalRequest):
        model.add_tool_card(event.call_id, event.name, "", "awaiting approval")
    elif isinstance(event, ev.ApprovalDecision):
        if event.decision == "deny":
            model.update_tool_card(event.call_id, "denied", event.message)
        elif event.decision == "unavailable":
            model.update_tool_card(event.call_id, "error", "approval unavailable")
        else:
            model.update_tool_card(event.call_id, "running")
    elif isinstance(event, ev.ToolResultEvent):
        status, detail = result_status(event)
        model.update_tool_card(event.call_id, status, detail)
    elif isinstance(event, ev.RunFinished):
        model.finish_streaming()
        note = _FINISH_NOTES.get(event.stop_reason, f"Run stopped: {event.stop_reason}.")
        if note:
            model.add_message(Role.NOTICE, note)
    elif isinstance(event, ev.ErrorEvent):
        model.finish_streaming()
        model.add_message(Role.ERROR, f"{event.message} ({event.code})")
