"""A protocol field with a closed vocabulary takes only its words: a message with any other
spelling is dropped when decoded (logged, never half-applied), and a mode arrives as the
kernel's one Mode. Each vocabulary is defined once: the protocol's tuples are the events'."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from kernel import events as ev
from kernel import protocol as p
from kernel.modes import MODES, Mode
from kernel.policy import channels, decide


def raw(message: p.Message, **changes: Any) -> str:
    return json.dumps({**message.to_dict(), **changes})


GOOD: list[tuple[p.Message, str, list[Any]]] = [
    (p.ApprovalAnswer("s", "c", "deny"), "decision",
     ["maybe", "allow", "unavailable", "Deny", "DENY", " deny", "", 0, None, True, ["deny"]]),
    (p.RevokeGrant("s", "r", "session"), "scope", ["forever", "once", "call", "Session", ""]),
    (p.McpServerAction("git", "restart"), "action", ["explode", "Restart", "stop", ""]),
    (p.McpFormAnswer("f1", "accept"), "action", ["allow", "ok", "Accept", ""]),
    (p.RunStatus("s", "idle"), "state", ["done", "Idle", "stopped", ""]),
    (p.SetMode("s", Mode.AUTO), "mode", ["yolo", "Auto", "auto ", "readonly", "read_only", ""]),
    (p.NewSession("/w", Mode.READ_ONLY), "mode", ["full", "ASK", 1, None]),
]


@pytest.mark.parametrize("message, field, bad", [(m, f, b) for m, f, bads in GOOD for b in bads])
def test_a_word_outside_the_vocabulary_drops_the_message(message: p.Message, field: str,
                                                         bad: Any) -> None:
    assert p.decode(raw(message)) == message
    assert p.decode(raw(message, **{field: bad})) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_arrives_as_the_kernels_mode(mode: str) -> None:
    decoded = p.decode(raw(p.SetMode("s", Mode(mode))))
    assert isinstance(decoded, p.SetMode) and decoded.mode is Mode(mode)
    info = p.decode(raw(p.SessionLoaded(p.SessionInfo("s", "t", "/w", Mode(mode)))))
    assert isinstance(info, p.SessionLoaded) and info.info.mode is Mode(mode)


def test_each_vocabulary_is_defined_once() -> None:
    assert p.DECISIONS is ev.CHOICES
    assert typing.get_args(ev.GrantScope) == p.GRANT_SCOPES
    assert channels.Choice is ev.Choice
    assert decide.Mode is Mode
    assert tuple(m.value for m in Mode) == MODES
    assert set(ev.CHOICES) <= set(ev.DECIDED)
    assert set(typing.get_args(ev.SamplingAction)) <= set(ev.FORM_ACTIONS)
