"""A session written out: its trace as JSON lines (`reins export`, the app's Export trace)
and its conversation as Markdown (the app's Export conversation).

    trace_text(store, session_id) -> str        # a `session` line, then one line per round
    conversation_markdown(info, events) -> str  # pure: the stored events, in order

The Markdown is for reading: the prompts and answers as they were written, each tool call
as one line (name, what it did, its status as the kernel decided it (`call_status`, with
the error code when that says more), how long it ran) with the start of its output
in a code block (never cut inside a line of the fence), and where an edit or a regenerate
replaced what followed a prompt.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from kernel.agent.store import SessionStore, StoredSession
from kernel.events import (
    AssistantText,
    ErrorEvent,
    Event,
    MessagesSuperseded,
    ToolCallStarted,
    ToolResultEvent,
    UserMessage,
    json_text,
)
from kernel.visible import one_line

OUTPUT_LINES = 20
OUTPUT_CHARS = 4_000


def trace_header(info: StoredSession) -> dict[str, object]:
    return {"type": "session", "session_id": info.session_id, "title": info.title,
            "workspace": info.workspace, "model": info.model, "mode": info.mode,
            "created": info.created, "updated": info.updated,
            "run_state": info.run_state.value, "run": dict(info.run_info)}


def trace_text(store: SessionStore, session_id: str) -> str:
    """The session's trace: its `session` line, then a `round` line per model round
    (request id, tool calls, arguments, results, durations, error codes, the answer)."""
    lines = [json_text(trace_header(store.get_session(session_id)))]
    lines += [json_text({"type": "round", **record}) for record in store.trace(session_id)]
    return "\n".join(lines) + "\n"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def _fenced(text: str) -> str:
    """`text` in a code block whose fence is longer than any run of backticks in it."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _output(preview: str) -> str:
    lines = preview[:OUTPUT_CHARS].splitlines()
    shown = lines[:OUTPUT_LINES]
    more = len(preview.splitlines()) - len(shown)
    text = "\n".join(shown)
    return _fenced(text) + (f"\n\n*… {more:,} more lines*" if more > 0 else "")


def _duration(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def conversation_markdown(info: StoredSession, events: Iterable[Event]) -> str:
    """The conversation of `info`'s session as Markdown, from its stored `events`."""
    parts = [f"# {one_line(info.title) or 'Untitled session'}",
             f"- Workspace: `{one_line(info.workspace)}`\n- Model: {one_line(info.model)}\n"
             f"- Mode: {info.mode}\n- Started: {_when(info.created)}"]
    calls: dict[str, ToolCallStarted] = {}
    for event in events:
        if isinstance(event, UserMessage):
            names = [one_line(str(a.get("name", ""))) for a in event.attachments
                     if isinstance(a, dict)]
            attached = f"\n\n*Attached: {', '.join(names)}*" if names else ""
            parts.append(f"## You · {_when(event.at)}\n\n{event.text}{attached}")
        elif isinstance(event, AssistantText) and event.text.strip():
            parts.append(f"## Reins · {_when(event.at)}\n\n{event.text}")
        elif isinstance(event, ToolCallStarted):
            calls[event.call_id] = event
        elif isinstance(event, ToolResultEvent):
            started = calls.get(event.call_id)
            what = one_line(started.summary) if started is not None and started.summary else ""
            code = event.error_code if event.error_code not in (None, event.status) else None
            ended = event.status + (f" ({code})" if code else "")
            line = (f"**Tool call** `{one_line(event.name)}`" + (f" — {what}" if what else "")
                    + f" · {ended} · {_duration(event.duration_ms)}")
            if event.externalized_path:
                line += f" · full output: `{one_line(event.externalized_path)}`"
            parts.append(line + ("\n\n" + _output(event.preview) if event.preview else ""))
        elif isinstance(event, MessagesSuperseded) and event.reason == "restore":
            parts.append("*— An earlier answer to the last prompt above was chosen again: "
                         "the conversation goes on from it. —*")
        elif isinstance(event, MessagesSuperseded):
            what = "edited" if event.reason == "edit" else "answered again"
            parts.append(f"*— The last prompt above was {what}; what follows replaces what "
                         "came after it. —*")
        elif isinstance(event, ErrorEvent):
            parts.append(f"> **Error:** {one_line(' '.join(event.message.split()))}")
    return "\n\n".join(parts) + "\n"
