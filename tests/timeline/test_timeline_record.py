"""The pure status rules of one call: every status reachable, finished calls never go back."""

from __future__ import annotations

import pytest

from desktop.timeline.record import Status, advance, one_line_summary
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantText,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)

S = "s1"


def started(call_id: str = "c1", **kw: object) -> ToolCallStarted:
    return ToolCallStarted(S, call_id, kw.pop("name", "bash"), kw.pop("input", {"cmd": "ls"}),
                           **kw)  # type: ignore[arg-type]


def run(*events):  # type: ignore[no-untyped-def]
    record = None
    for t, event in enumerate(events):
        record = advance(record, event, 1000.0 + t) or record
    return record


def test_queued_then_awaiting_then_running_then_done() -> None:
    r = run(started())
    assert r.status is Status.QUEUED
    r = run(started(), ApprovalRequest(S, "c1", "bash", {"cmd": "ls"}, "execute", "ask mode"))
    assert r.status is Status.AWAITING_APPROVAL
    assert r.approval.label == "pending"
    r = run(started(), ApprovalRequest(S, "c1", "bash", {}, "execute", "ask mode"),
            ApprovalDecision(S, "c1", "allow_session", "user", "session"))
    assert r.status is Status.RUNNING
    assert r.started_at == 1002.0
    assert r.approval.label == "user (session)"
    r = run(started(), ToolProgress(S, "c1", 2048, "line", 1.5))
    assert (r.status, r.bytes_so_far, r.last_line) == (Status.RUNNING, 2048, "line")
    r = run(started(), ToolResultEvent(S, "c1", "bash", False, None, 12.0, 10, None, "ok"))
    assert (r.status, r.duration_ms, r.preview) == (Status.DONE, 12.0, "ok")


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("execution_error", Status.ERROR),
        ("invalid_arguments", Status.ERROR),
        ("approval_denied", Status.DENIED),
        ("approval_unavailable", Status.DENIED),
        ("cancelled", Status.CANCELLED),
        ("timeout", Status.TIMED_OUT),
    ],
)
def test_error_codes_map_to_statuses(code: str, status: Status) -> None:
    r = run(started(), ToolResultEvent(S, "c1", "bash", True, code, 5.0, 3, None, "boom"))
    assert r.status is status
    assert r.error_code == code


def test_denied_decision_and_rule_label() -> None:
    r = run(started(), ApprovalDecision(S, "c1", "deny", "rule", "always", "Bash(rm *)"))
    assert r.status is Status.DENIED
    assert r.approval.label == "denied by rule Bash(rm *)"
    r = run(started(), ApprovalDecision(S, "c1", "allow_once", "mode", "once"))
    assert r.approval.label == "allowed by mode"


def test_finished_call_does_not_go_back_and_unknown_calls_are_ignored() -> None:
    r = run(started(), ToolResultEvent(S, "c1", "bash", False, None, 1.0, 0, None, ""),
            ToolProgress(S, "c1", 99, "late", 9.0),
            ApprovalDecision(S, "c1", "allow_once"))
    assert r.status is Status.DONE
    assert r.bytes_so_far == 0
    assert advance(None, ToolProgress(S, "nope", 1), 0.0) is None
    assert advance(None, AssistantText(S, "hi"), 0.0) is None


def test_summary_falls_back_to_compact_arguments_and_search_text() -> None:
    r = run(started(input={"path": "src/main.py", "n": 3}))
    assert r.summary == '{"path":"src/main.py","n":3}'
    assert "src/main.py" in r.search_text and "bash" in r.search_text
    assert one_line_summary({"x": "a" * 500}).endswith("…")
    assert len(one_line_summary({"x": "a" * 500})) == 120
    r = run(started(summary="ls -la"))
    assert r.summary == "ls -la"
    assert '"cmd": "ls"' in r.arguments_json
