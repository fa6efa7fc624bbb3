"""The timeline in words and honest durations: statuses as a person says them, the run time
without the approval's wait (shown on its own), one duration format, "1 call"."""

from __future__ import annotations

import dataclasses

import pytest
from pytestqt.qtbot import QtBot

from desktop.timeline import TimelinePanel
from desktop.timeline.model import Column, TimelineModel, duration_tip
from desktop.timeline.record import CallRecord, advance, status_words
from desktop.words import STATUS_WORDS, count, decider_words, decision_words, scope_words
from kernel.events import (
    CALL_STATUSES,
    ApprovalDecision,
    ApprovalRequest,
    Event,
    ToolCallStarted,
    ToolResultEvent,
)

S = "s1"


def play(events: list[tuple[float, Event]]) -> CallRecord:
    record = None
    for now, event in events:
        record = advance(record, event, now)
    assert record is not None
    return record


def start(call: str = "c") -> ToolCallStarted:
    return ToolCallStarted(S, call, "run_command", {"command": "ls"}, "ls", "execute")


def result(is_error: bool = False, code: str | None = None, preview: str = "",
           ms: float = 30.0) -> ToolResultEvent:
    return ToolResultEvent(S, "c", "run_command", is_error, code, ms, 10, None, preview)


ASK = ApprovalRequest(S, "c", "run_command", {"command": "ls"}, "execute", "ask mode")


@pytest.mark.parametrize("events, words", [
    ([start(), result()], "done"),
    ([start(), result(True, "execution_error", "exit code 3 · 0.03 s · sandbox: bwrap")],
     "exit code 3"),
    ([start(), result(True, "execution_error", "exit code 1 · 2 s")], "exit code 1"),
    ([start(), result(True, "execution_error", "boom")], "failed"),
    ([start(), ASK, ApprovalDecision(S, "c", "deny", "ui", "once"),
      result(True, "approval_denied")], "denied by you"),
    ([start(), ApprovalDecision(S, "c", "deny", "policy", "once", rule="rule deny rm(*)")],
     "denied by the rules"),
    ([start(), result(True, "approval_denied")], "denied by you"),
    ([start(), result(True, "permission_denied")], "not allowed by the rules"),
    ([start(), result(True, "cancelled")], "stopped"),
    ([start(), result(True, "timeout")], "timed out"),
    ([start(), ApprovalDecision(S, "c", "unavailable", "ui")], "no answer to the approval"),
    ([start(), result(True, "invalid_arguments")], "invalid arguments"),
    ([start()], "queued"),
    ([start(), ASK], "awaiting approval"),
    ([start(), ASK, ApprovalDecision(S, "c", "allow_once")], "running"),
])
def test_statuses_are_words_not_codes(events: list[Event], words: str) -> None:
    record = play([(float(i), e) for i, e in enumerate(events)])
    assert status_words(record) == words
    assert "_" not in status_words(record) and "·" not in status_words(record)


def test_the_status_filter_offers_each_kernel_status_in_the_one_set_of_words(
        qtbot: QtBot) -> None:
    panel = TimelinePanel()
    qtbot.addWidget(panel)
    combo = panel.status_filter
    offered = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}
    assert {status: offered.get(status) for status in CALL_STATUSES} == {
        status: STATUS_WORDS[status].capitalize() for status in CALL_STATUSES}
    assert offered["awaiting_approval"] == "Awaiting approval" and offered["ok"] == "Done"


def test_the_duration_is_the_run_and_the_wait_is_shown_apart(qtbot: QtBot) -> None:
    clock = [1000.0]
    model = TimelineModel(batch_ms=0, clock=lambda: clock[0])
    for now, event in [(1000.0, start()), (1000.0, ASK),
                       (1008.9, ApprovalDecision(S, "c", "allow_once")),
                       (1008.93, result(ms=8930.0))]:
        clock[0] = now
        model.apply(dataclasses.replace(event, at=now))
    model.flush()
    index = model.index(0, Column.DURATION)
    assert model.data(index) == "30 ms", "an ls that ran 0.03 s after an 8.9 s wait"
    assert model.data(index, 3) == "Ran for 30 ms; waited 8.9 s for the approval"
    record = model.record("c")
    assert record is not None and record.waited_s == pytest.approx(8.9)


def test_a_call_without_approval_keeps_its_whole_duration() -> None:
    record = play([(0.0, start()), (20.5, result(ms=20_463.0))])
    assert record.waited_s == 0.0 and record.elapsed(99.0) == pytest.approx(20.463)
    assert duration_tip(record, 99.0) == "Ran for 20.5 s"


def test_the_count_says_call_or_calls(qtbot: QtBot) -> None:
    assert [count(n, "call") for n in (0, 1, 2, 1500)] == ["0 calls", "1 call", "2 calls",
                                                           "1,500 calls"]
    panel = TimelinePanel(batch_ms=0)
    qtbot.addWidget(panel)
    panel.apply(start("one"))
    panel.model.flush()
    qtbot.waitUntil(lambda: panel.count.text() == "1 call")
    panel.apply(start("two"))
    panel.model.flush()
    qtbot.waitUntil(lambda: panel.count.text() == "2 calls")


@pytest.mark.parametrize(("decision", "decided_by", "scope", "words"), [
    ("allow_once", "ui", "once", ("allowed once", "you, in the app", "this call")),
    ("allow_session", "terminal", "session",
     ("allowed for this session", "you, in the terminal", "this session")),
    ("allow_always", "ui", "always",
     ("allowed always (a rule in settings)", "you, in the app", "every session")),
    ("deny", "cli", "call", ("denied", "the --approve flag", "this call")),
    ("allow", "policy", "call", ("allowed", "the rules and the mode", "this call")),
    ("unavailable", "ui", "call", ("no answer (approval unavailable)", "you, in the app",
                                   "this call")),
    ("deny", "grant suspended run_command(ls *)", "call",
     ("denied", "grant suspended run_command(ls *)", "this call")),
])
def test_the_details_say_the_decision_in_words(decision: str, decided_by: str, scope: str,
                                               words: tuple[str, str, str]) -> None:
    assert (decision_words(decision), decider_words(decided_by), scope_words(scope)) == words
