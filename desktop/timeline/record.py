"""What the timeline knows about one tool call, and how each event changes it (pure).

`CallRecord` is a frozen snapshot; `advance(record, event, now)` returns the next snapshot for
one of the five tool-call events of `kernel.events` (ToolCallStarted, ApprovalRequest,
ApprovalDecision, ToolProgress, ToolResultEvent). Nothing here touches Qt, so the rules for
statuses are tested without a widget. Times are wall-clock seconds (`time.time()`): when each
event happened (`Event.at`, stored with it), so a reloaded session shows the same times.

A call's status is the kernel's (`kernel.events.next_status`: the status each event carries,
and a finished call changes only with its result): a record carries that `CallStatus` itself,
and `desktop.words.STATUS_WORDS` says it in words.

A result's change set (what the call changed in the workspace, applied as one undoable step)
is decoded here; one that cannot be decoded is kept as its error, never raised. Whether the
step is undone or can still be undone comes from the kernel's step list (`with_step`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from desktop.words import STATUS_WORDS, arguments_json, execution_seconds, outcome
from kernel.events import (
    FINISHED_STATUSES,
    ApprovalDecision,
    ApprovalRequest,
    CallEvent,
    CallStatus,
    Event,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
    allows,
    next_status,
)
from kernel.transaction.changeset import ChangeSet, ChangeSetError
from kernel.visible import one_line

TOOL_EVENTS = (ToolCallStarted, ApprovalRequest, ApprovalDecision, ToolProgress, ToolResultEvent)
"""The event types the timeline reads; every other event is ignored."""


@dataclass(frozen=True)
class Approval:
    """How a call was approved or refused: the request's reason and the decision."""

    risk: str = ""
    reason: str = ""
    preview: str = ""
    requested_rule: str = ""
    decision: str = ""
    decided_by: str = ""
    scope: str = ""
    rule: str = ""
    message: str = ""

    @property
    def label(self) -> str:
        """One line for the table: who approved it, and with which scope or rule.

        The kernel records the policy's own decisions as decided_by "policy" with the basis
        in `rule` ("mode auto", "rule allow write_file(src/**)", "session grant …"), and a
        person's answers with the channel that carried them ("ui", "terminal", "cli")."""
        if not self.decision:
            return "pending" if self.reason else ""
        if self.decision == "unavailable":
            return "no answer (approval unavailable)"
        verb = "denied" if self.decision == "deny" else "allowed"
        if self.decided_by == "policy" or self.decided_by.startswith("grant suspended"):
            return f"{verb} by {_basis(self.rule) or 'policy'}"
        if verb == "allowed":
            return f"user ({self.scope or 'once'})"
        return "denied by user"


def status_words(record: CallRecord) -> str:
    """The call's status as a person says it: "done", "exit code 3", "denied by you",
    "stopped", "timed out", "awaiting approval" — never an error code."""
    if record.status == "denied" and record.approval.decision == "deny":
        by_policy = record.approval.decided_by == "policy"
        return "denied by the rules" if by_policy else "denied by you"
    if record.status in FINISHED_STATUSES:
        code = record.error_code
        if code is None and record.status == "denied":
            code = "approval_denied"
        elif code is None and record.approval.decision == "unavailable":
            code = "approval_unavailable"
        return outcome(record.status != "ok", code, record.preview)
    return STATUS_WORDS[record.status]


def _basis(rule: str) -> str:
    """`rule allow X` → `rule X`; `mode auto`, `session grant X`, … unchanged."""
    for kind in ("allow", "ask", "deny"):
        prefix = f"rule {kind} "
        if rule.startswith(prefix):
            return "rule " + rule.removeprefix(prefix)
    return rule


NO_CHANGES = ChangeSet()
UndoState = Literal["none", "undoable", "undone", "kept"]
"""none: the call changed nothing; undoable: its step can be undone; undone: it was;
kept: it cannot be undone (its kept bytes were dropped, or it is itself an undo)."""


@dataclass(frozen=True)
class CallRecord:
    call_id: str
    name: str
    input: Any
    summary: str
    risk: str
    status: CallStatus
    queued_at: float
    approval: Approval = Approval()
    approval_requested_at: float | None = None
    decided_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    bytes_so_far: int = 0
    last_line: str = ""
    elapsed_s: float = 0.0
    running_output: str = ""
    """Where the kernel writes the output while the call runs (its progress events say)."""
    duration_ms: float | None = None
    output_bytes: int | None = None
    externalized_path: str | None = None
    error_code: str | None = None
    preview: str = ""
    """The exact text the model received as the result."""
    changes: ChangeSet = NO_CHANGES
    """What the call changed in the workspace (its result's change set)."""
    changes_error: str = ""
    """Why the result's change set could not be read (then `changes` is empty)."""
    undo: UndoState = "none"
    parent_call_id: str = ""
    """The call this one was made for (a step of a composite call, a fallback): the
    timeline shows it under that call."""

    @property
    def undoable(self) -> bool:
        return self.undo == "undoable"

    @property
    def stoppable(self) -> bool:
        """The user can stop the call now: it runs, or waits for an approval (which the
        stop withdraws). A queued call has not started and cannot be stopped alone."""
        return self.status in ("running", "awaiting_approval")

    def with_step(self, undone: bool, undoable: bool) -> CallRecord:
        """The record as the kernel's step list says its step is."""
        state: UndoState = "undone" if undone else "undoable" if undoable else "kept"
        return self if state == self.undo else replace(self, undo=state)

    @property
    def arguments_json(self) -> str:
        return arguments_json(self.input)

    @cached_property
    def shown_name(self) -> str:
        """The tool's name as a row shows it: one line, hiding characters escaped."""
        return one_line(self.name)

    @cached_property
    def shown_summary(self) -> str:
        """The arguments' summary as a row shows it: one line, hiding characters escaped."""
        return one_line(self.summary)

    @cached_property
    def search_text(self) -> str:
        """Lower-case text the filter's search matches: name, summary, argument names and
        values (computed once per record, on the first search)."""
        return "\n".join((self.name, self.summary, *_words(self.input))).lower()

    @property
    def waited_s(self) -> float:
        """Seconds the call waited for its approval (0 when none was asked)."""
        if self.approval_requested_at is None or self.decided_at is None:
            return 0.0
        return max(0.0, self.decided_at - self.approval_requested_at)

    def elapsed(self, now: float) -> float:
        """Seconds the call has run — its execution, the wait for an approval not counted:
        its final duration, or the time since it started."""
        if self.duration_ms is not None:
            return execution_seconds(self.duration_ms, self.waited_s)
        if self.started_at is None:
            return 0.0
        end = self.finished_at if self.finished_at is not None else now
        return max(self.elapsed_s, end - self.started_at)


def _words(value: Any, depth: int = 0) -> list[str]:
    """Keys and scalar values of JSON-like arguments, depth-first (cheaper than json.dumps)."""
    if isinstance(value, str):
        return [value]
    if depth > 8:
        return []
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            out.append(str(key))
            out.extend(_words(item, depth + 1))
        return out
    if isinstance(value, list | tuple):
        return [word for item in value for word in _words(item, depth + 1)]
    return [str(value)]


def compact_arguments(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def one_line_summary(value: Any, limit: int = 120) -> str:
    text = compact_arguments(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _next(record: CallRecord, event: CallEvent) -> CallStatus:
    return next_status(record.status, event)


def advance(record: CallRecord | None, event: Event, now: float) -> CallRecord | None:
    """The record after `event`, which happened at `now`; None when the event says nothing
    about a known call."""
    if isinstance(event, ToolCallStarted):
        if record is not None:
            return replace(record, name=event.name, input=event.input,
                           summary=event.summary or one_line_summary(event.input),
                           risk=event.risk, status=_next(record, event))
        return CallRecord(
            call_id=event.call_id,
            name=event.name,
            input=event.input,
            summary=event.summary or one_line_summary(event.input),
            risk=event.risk,
            status=event.status,
            queued_at=now,
            parent_call_id=event.parent_call_id,
        )
    if isinstance(event, ApprovalRequest):
        base = record or CallRecord(
            call_id=event.call_id, name=event.name, input=event.input,
            summary=one_line_summary(event.input), risk=event.risk,
            status="queued", queued_at=now,
        )
        approval = replace(base.approval, risk=event.risk, reason=event.reason,
                           preview=event.preview, requested_rule=event.rule)
        return replace(base, approval=approval, approval_requested_at=now,
                       status=_next(base, event))
    if record is None:
        return None
    if isinstance(event, ApprovalDecision):
        approval = replace(record.approval, decision=event.decision,
                           decided_by=event.decided_by, scope=event.scope, rule=event.rule,
                           message=event.message)
        allowed = allows(event.decision)
        started = record.started_at if record.started_at is not None or not allowed else now
        return replace(record, approval=approval, decided_at=now, status=_next(record, event),
                       started_at=started)
    if isinstance(event, ToolProgress):
        if record.status in FINISHED_STATUSES:
            return record
        return replace(record, status=_next(record, event), bytes_so_far=event.bytes_so_far,
                       last_line=event.last_line, elapsed_s=event.elapsed_s,
                       running_output=event.output_path or record.running_output,
                       started_at=record.started_at if record.started_at is not None
                       else now - event.elapsed_s)
    if isinstance(event, ToolResultEvent):
        changes, error = _changes(event.changes)
        return replace(record, status=_next(record, event), finished_at=now,
                       changes=changes, changes_error=error,
                       undo="undoable" if changes else record.undo,
                       started_at=record.started_at if record.started_at is not None
                       else now - event.duration_ms / 1000,
                       duration_ms=event.duration_ms, output_bytes=event.output_bytes,
                       externalized_path=event.externalized_path,
                       error_code=event.error_code, preview=event.preview)
    return None


def _changes(data: list[dict[str, Any]]) -> tuple[ChangeSet, str]:
    """A result's change set, or an empty one and why it could not be read."""
    if not data:
        return NO_CHANGES, ""
    try:
        return ChangeSet.from_json({"changes": data}), ""
    except (ChangeSetError, TypeError) as exc:
        return NO_CHANGES, f"the change set could not be read: {exc}"
