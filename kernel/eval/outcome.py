"""What one run of a task did, read from the `reins exec --json` event lines.

`outcome_from_lines` is pure: the lines (each `event.to_dict()` of kernel.events), the exit
code, the time taken, the workspace files the checks look at, and — in scripted runs —
what the fake model server saw (the tools offered, the size of each request, and the tool
results it was sent). `sent_results` reads those results out of the recorded request bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.agent.context import result_text
from kernel.events import (
    AssistantText,
    ErrorEvent,
    EventDecodeError,
    RunFinished,
    ToolCallStarted,
    ToolResultEvent,
    event_from_dict,
)

PROVIDER_ERRORS = frozenset({
    "overloaded", "rate_limited", "server_error", "auth_error", "permission_error",
    "not_found", "bad_request", "request_too_large", "connection_error", "timeout",
    "stream_broken",
})
"""The error codes the provider reports for a failed model request (kernel.model.provider)."""


@dataclass(frozen=True)
class ExecCall:
    name: str
    input: Any
    is_error: bool = False
    error_code: str | None = None
    id: str = ""
    result: str | None = None
    """The result's text as the model was sent it (scripted runs: read at the fake server;
    else the `tool_result` event's preview); None when it never reached the model."""


@dataclass(frozen=True)
class Requests:
    """What the fake model server saw, one entry per request (scripted runs only)."""

    offered: tuple[frozenset[str], ...] = ()
    sizes: tuple[int, ...] = ()
    results: Mapping[str, str] = field(default_factory=dict)
    """The text of every tool result the model was sent, by tool_use id."""


def sent_results(bodies: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The text of each `tool_result` block in these request bodies, by its tool_use id
    (a result sent again in a later request is the same text)."""
    out: dict[str, str] = {}
    for body in bodies:
        messages = body.get("messages")
        for message in messages if isinstance(messages, list) else ():
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else ():
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    out[str(block.get("tool_use_id"))] = result_text(block.get("content"))
    return out


@dataclass(frozen=True)
class Outcome:
    calls: tuple[ExecCall, ...] = ()
    answer: str = ""
    """The text the model wrote after its last tool call (its final answer)."""
    said: str = ""
    """Every text the model wrote in the run, before its tool calls too."""
    stop_reason: str | None = None
    """None when the run never finished (the process failed)."""
    rounds: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    errors: tuple[str, ...] = ()
    """The codes of the run's error events, in order."""
    exit_code: int = 0
    seconds: float = 0.0
    files: Mapping[str, str | None] = field(default_factory=dict)
    """Checked workspace files after the run: text, or None when missing."""
    requests: Requests | None = None
    problem: str = ""
    """Why the run produced no usable events (a crash, unreadable output)."""

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.calls)

    @property
    def scripted(self) -> bool:
        """The model was the fake server (its tokens and cost are not measured)."""
        return self.requests is not None


def outcome_from_lines(lines: Iterable[str], *, exit_code: int, seconds: float,
                       files: Mapping[str, str | None] | None = None,
                       requests: Requests | None = None, stderr: str = "") -> Outcome:
    calls: dict[str, ExecCall] = {}
    order: list[str] = []
    texts: list[str] = []
    said: list[str] = []
    errors: list[str] = []
    finished: RunFinished | None = None
    problem = ""
    for line in lines:
        if not line.strip():
            continue
        try:
            event = event_from_dict(json.loads(line))
        except (ValueError, EventDecodeError) as exc:
            problem = problem or f"unreadable event line ({exc}): {line[:200]}"
            continue
        if isinstance(event, ToolCallStarted):
            calls[event.call_id] = ExecCall(event.name, event.input, id=event.call_id)
            order.append(event.call_id)
            texts.clear()
        elif isinstance(event, ToolResultEvent):
            call = calls.get(event.call_id, ExecCall(event.name, None, id=event.call_id))
            if event.call_id not in calls:
                order.append(event.call_id)
            sent = (event.preview if requests is None
                    else requests.results.get(event.call_id))
            calls[event.call_id] = ExecCall(call.name, call.input, event.is_error,
                                              event.error_code, event.call_id, sent)
        elif isinstance(event, AssistantText):
            texts.append(event.text)
            said.append(event.text)
        elif isinstance(event, ErrorEvent):
            errors.append(event.code)
        elif isinstance(event, RunFinished):
            finished = event
    if finished is None and not problem:
        problem = (f"the run ended (exit code {exit_code}) without run_finished"
                   + (f": {stderr.strip()[-500:]}" if stderr.strip() else ""))
    return Outcome(
        calls=tuple(calls[i] for i in order), answer="\n".join(texts), said="\n".join(said),
        stop_reason=finished.stop_reason if finished else None,
        rounds=finished.rounds if finished else 0,
        tokens=sum(int(v) for v in finished.usage.values()) if finished else 0,
        cost_usd=finished.cost_usd if finished else 0.0,
        errors=tuple(errors), exit_code=exit_code, seconds=seconds,
        files=dict(files or {}), requests=requests, problem=problem,
    )
