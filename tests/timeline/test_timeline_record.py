"""The pure status rules of one call: every status reachable, finished calls never go back."""

from __future__ import annotations

import pytest

from desktop.timeline.record import advance, one_line_summary
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantText,
    CallStatus,
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
    assert r.status == "queued"
    r = run(started(), ApprovalRequest(S, "c1", "bash", {"cmd": "ls"}, "execute", "ask mode"))
    assert r.status == "awaiting_approval"
    assert r.approval.label == "pending"
    r = run(started(), ApprovalRequest(S, "c1", "bash", {}, "execute", "ask mode"),
            ApprovalDecision(S, "c1", "allow_session", "user", "session"))
    assert r.status == "running"
    assert r.started_at == 1002.0
    assert r.approval.label == "user (session)"
    r = run(started(), ToolProgress(S, "c1", 2048, "line", 1.5))
    assert (r.status, r.bytes_so_far, r.last_line) == ("running", 2048, "line")
    r = run(started(), ToolResultEvent(S, "c1", "bash", False, None, 12.0, 10, None, "ok"))
    assert (r.status, r.duration_ms, r.preview) == ("ok", 12.0, "ok")


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("execution_error", "error"),
        ("invalid_arguments", "error"),
        ("approval_denied", "denied"),
        ("approval_unavailable", "error"),
        ("cancelled", "stopped"),
        ("timeout", "timeout"),
    ],
)
def test_error_codes_map_to_statuses(code: str, status: CallStatus) -> None:
    r = run(started(), ToolResultEvent(S, "c1", "bash", True, code, 5.0, 3, None, "boom"))
    assert r.status is status
    assert r.error_code == code


@pytest.mark.parametrize(
    ("decision", "label", "status"),
    [
        # The shapes the kernel's PolicyGate records (kernel/policy/approvals.py).
        (ApprovalDecision(S, "c1", "deny", "policy", "call", "rule deny run_command(rm *)"),
         "denied by rule run_command(rm *)", "denied"),
        (ApprovalDecision(S, "c1", "allow", "policy", "call", "rule allow write_file(src/**)"),
         "allowed by rule write_file(src/**)", "running"),
        (ApprovalDecision(S, "c1", "allow", "policy", "call", "mode auto"),
         "allowed by mode auto", "running"),
        (ApprovalDecision(S, "c1", "allow", "policy", "call", "session grant read_file(x)"),
         "allowed by session grant read_file(x)", "running"),
        (ApprovalDecision(S, "c1", "allow_always", "ui", "always", "write_file(docs/**)"),
         "user (always)", "running"),
        (ApprovalDecision(S, "c1", "allow_once", "cli", "once"), "user (once)", "running"),
        (ApprovalDecision(S, "c1", "deny", "terminal", "call", message="not now"),
         "denied by user", "denied"),
        # A broken channel is not a denial by the user.
        (ApprovalDecision(S, "c1", "unavailable", "none", "call"),
         "no answer (approval unavailable)", "error"),
    ],
)
def test_decision_labels_name_who_decided(decision: ApprovalDecision, label: str,
                                          status: CallStatus) -> None:
    r = run(started(), decision)
    assert r.approval.label == label
    assert r.status is status


def test_finished_call_does_not_go_back_and_unknown_calls_are_ignored() -> None:
    r = run(started(), ToolResultEvent(S, "c1", "bash", False, None, 1.0, 0, None, ""),
            ToolProgress(S, "c1", 99, "late", 9.0),
            ApprovalDecision(S, "c1", "allow_once"))
    assert r.status == "ok"
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
