"""A call's status is decided once, in the kernel (`kernel.events.call_status`), and carried
by each tool-call event: a table over every event kind, every decision and every error code;
what a view shows after a sequence (`next_status`: a finished call changes only with its
result); and the status survives encoding (a decoded event decides it anew, never takes a
stored one)."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from kernel import events as ev
from kernel import protocol as p
from kernel.tools.errors import ErrorCode

S = "s1"
CALL = "c1"

RESULT_BY_CODE: dict[str | None, ev.CallStatus] = {
    None: "error",
    "unknown_tool": "error",
    "invalid_arguments": "error",
    "permission_denied": "denied",
    "approval_denied": "denied",
    "approval_unavailable": "error",
    "timeout": "timeout",
    "execution_error": "error",
    "cancelled": "stopped",
    "loop_detected": "error",
    "rate_limited": "error",
    "sandbox_unavailable": "error",
    "a_code_from_a_newer_kernel": "error",
}


def result(is_error: bool, code: str | None = None) -> ev.ToolResultEvent:
    return ev.ToolResultEvent(S, CALL, "run_command", is_error, code)


def decision(word: ev.Decided, by: str = "user") -> ev.ApprovalDecision:
    return ev.ApprovalDecision(S, CALL, word, decided_by=by)


def test_every_error_code_has_a_decided_status() -> None:
    assert {c.value for c in ErrorCode} <= set(RESULT_BY_CODE)


@pytest.mark.parametrize("code, status", sorted(RESULT_BY_CODE.items(), key=str))
def test_a_failed_result_by_its_code(code: str | None, status: ev.CallStatus) -> None:
    assert result(True, code).status == status
    assert ev.call_status(result(True, code)) == status


@pytest.mark.parametrize("code", [None, "execution_error", "timeout"])
def test_a_result_that_is_no_error_is_ok_whatever_its_code(code: str | None) -> None:
    assert result(False, code).status == "ok"


@pytest.mark.parametrize("word, status", [
    ("allow", "running"), ("allow_once", "running"), ("allow_session", "running"),
    ("allow_always", "running"), ("allow_review", "running"), ("deny", "denied"),
    ("unavailable", "error"),
])
@pytest.mark.parametrize("by", ["user", "policy", "ui", "terminal", "cli"])
def test_a_decision_by_its_word_whoever_decided(word: ev.Decided, status: ev.CallStatus,
                                                by: str) -> None:
    assert decision(word, by).status == status


def test_the_decision_table_covers_every_decision() -> None:
    assert set(ev.DECIDED) == {"allow", "allow_once", "allow_session", "allow_always",
                               "allow_review", "deny", "unavailable"}
    assert set(ev.CHOICES) < set(ev.DECIDED) and "ask" not in ev.DECIDED


@pytest.mark.parametrize("event, status", [
    (ev.ToolCallStarted(S, CALL, "read_file", {"path": "a"}), "queued"),
    (ev.ApprovalRequest(S, CALL, "write_file", {}, "write", "asks"), "awaiting_approval"),
    (ev.ToolProgress(S, CALL, 10, "line", 0.5), "running"),
])
def test_the_other_call_events(event: ev.CallEvent, status: ev.CallStatus) -> None:
    assert event.status == status


DENIED_BY_RULES = [ev.ToolCallStarted(S, CALL, "write_file", {}), decision("deny", "policy"),
                   result(True, "permission_denied")]
DENIED_BY_YOU = [ev.ToolCallStarted(S, CALL, "write_file", {}),
                 ev.ApprovalRequest(S, CALL, "write_file", {}, "write", "asks"),
                 decision("deny"), result(True, "approval_denied")]
STOPPED_WHILE_ASKED = [ev.ToolCallStarted(S, CALL, "run_command", {}),
                       ev.ApprovalRequest(S, CALL, "run_command", {}, "execute", "asks"),
                       decision("deny"), result(True, "cancelled")]
TIMED_OUT = [ev.ToolCallStarted(S, CALL, "run_command", {}), decision("allow", "policy"),
             ev.ToolProgress(S, CALL, 1, "", 0.5), result(True, "timeout")]
LATE_PROGRESS = [ev.ToolCallStarted(S, CALL, "run_command", {}), decision("allow", "policy"),
                 result(False), ev.ToolProgress(S, CALL, 1, "", 0.5)]
ASKED_AGAIN_AFTER_A_RESULT = [ev.ToolCallStarted(S, CALL, "run_command", {}),
                              result(True, "execution_error"),
                              ev.ApprovalRequest(S, CALL, "run_command", {}, "execute", "x"),
                              ev.ToolCallStarted(S, CALL, "run_command", {})]
NO_ANSWER = [ev.ToolCallStarted(S, CALL, "run_command", {}),
             ev.ApprovalRequest(S, CALL, "run_command", {}, "execute", "asks"),
             decision("unavailable", "none"), result(True, "approval_unavailable")]


@pytest.mark.parametrize("events, shown", [
    (DENIED_BY_RULES, ["queued", "denied", "denied"]),
    (DENIED_BY_YOU, ["queued", "awaiting_approval", "denied", "denied"]),
    (STOPPED_WHILE_ASKED, ["queued", "awaiting_approval", "denied", "stopped"]),
    (TIMED_OUT, ["queued", "running", "running", "timeout"]),
    (LATE_PROGRESS, ["queued", "running", "ok", "ok"]),
    (ASKED_AGAIN_AFTER_A_RESULT, ["queued", "error", "error", "error"]),
    (NO_ANSWER, ["queued", "awaiting_approval", "error", "error"]),
])
def test_what_a_view_shows_after_each_event(events: list[ev.CallEvent],
                                            shown: list[ev.CallStatus]) -> None:
    status: ev.CallStatus | None = None
    seen = []
    for event in events:
        status = ev.next_status(status, event)
        seen.append(status)
    assert seen == shown


@pytest.mark.parametrize("event", [*DENIED_BY_YOU, *TIMED_OUT, *STOPPED_WHILE_ASKED])
def test_the_status_travels_with_the_event_and_is_decided_anew(event: ev.CallEvent) -> None:
    data = json.loads(ev.json_text(event.to_dict()))
    assert data["status"] == event.status and data["at"] == event.at
    assert ev.event_from_dict(data) == event
    forged = {**data, "status": "ok"}
    assert ev.event_from_dict(forged).status == event.status
    message = p.decode(p.encode(p.EventMessage(event)))
    assert isinstance(message, p.EventMessage) and message.event.status == event.status  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        ev.ToolProgress(S, CALL, status="ok")  # type: ignore[call-arg]


def test_an_event_carries_when_it_happened() -> None:
    event = ev.AssistantText(S, "hi", at=1234.5)
    assert event.to_dict()["at"] == 1234.5
    assert ev.event_from_dict(event.to_dict()).at == 1234.5
    assert event == dataclasses.replace(event, at=99.0), "the time is not part of equality"
    assert ev.AssistantText(S, "hi").at > 1_700_000_000


@pytest.mark.parametrize("field, value", [
    ("decision", "maybe"), ("decision", "ask"), ("decision", "Deny"), ("decision", 1),
    ("scope", "forever"), ("scope", ""), ("decision", None),
])
def test_a_word_outside_a_vocabulary_does_not_decode(field: str, value: object) -> None:
    data = {**decision("deny").to_dict(), field: value}
    with pytest.raises(ev.EventDecodeError, match=field):
        ev.event_from_dict(data)


def test_the_union_of_event_types_is_every_registered_type() -> None:
    members = typing.get_args(ev.AnyEvent)
    assert len(members) == len(set(members))
    assert set(members) == set(ev.EVENT_TYPES.values())
    assert all(ev.EVENT_TYPES[cls.type] is cls for cls in members)
