"""Which approval requests of a history still wait for a person (kernel.events, pure): a
request with no decision and no result; the latest request of a call asked again."""

from __future__ import annotations

import pytest

from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    Event,
    ToolCallStarted,
    ToolResultEvent,
    pending_requests,
)


def asked(call: str = "c") -> ApprovalRequest:
    return ApprovalRequest("s", call, "write_file", {}, "write", "writes ask")


def decided(decision: str, call: str = "c") -> ApprovalDecision:
    return ApprovalDecision("s", call, decision)  # type: ignore[arg-type]


def ended(code: str | None, call: str = "c") -> ToolResultEvent:
    return ToolResultEvent("s", call, "write_file", is_error=code is not None, error_code=code)


@pytest.mark.parametrize(("history", "pending"), [
    ([ToolCallStarted("s", "c", "write_file", {}), asked()], ["c"]),
    ([asked()], ["c"]),  # suspended at quit: asked again on the next start
    ([asked(), ended("cancelled")], []),  # stopped while asked (the zombie)
    ([asked(), ended(None)], []),
    ([asked(), ended("timeout")], []),
    ([asked(), decided("deny")], []),
    ([asked(), decided("allow_once")], []),
    ([asked(), decided("unavailable")], []),
    ([asked(), decided("allow_once"), asked()], ["c"]),  # interrupted, asked again
    ([asked("a"), asked("b"), ended("cancelled", "a")], ["b"]),
    ([asked(), ended("cancelled"), asked()], []),  # a finished call is never asked again
])
def test_pending_requests(history: list[Event], pending: list[str]) -> None:
    assert [r.call_id for r in pending_requests(history)] == pending
