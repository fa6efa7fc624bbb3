"""A protocol field with a closed vocabulary takes only its words: a message with any other
spelling is dropped when decoded (logged, never half-applied), and a mode, a risk or a
server's status arrives as the kernel's one enum member. Each vocabulary is defined once: the
protocol's tuples are the events'."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from kernel import events as ev
from kernel import protocol as p
from kernel.events import Risk, ServerStatus
from kernel.mcp import manager
from kernel.modes import MODES, Mode
from kernel.policy import channels, decide
from kernel.tools import spec


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
    assert spec.Risk is Risk
    assert manager.ServerStatus is ServerStatus
    assert set(typing.get_args(ev.ServerState)) == set(ServerStatus) - {ServerStatus.STARTING}


CALLS: list[ev.CallEvent] = [
    ev.ToolCallStarted("s", "c", "run_command", {"command": "ls"}, "ls", Risk.EXECUTE),
    ev.ApprovalRequest("s", "c", "run_command", {"command": "ls"}, Risk.DESTRUCTIVE, "rm"),
]
BAD_RISKS = ["dangerous", "Read", "EXECUTE", "write ", "", 0, None, ["read"]]


@pytest.mark.parametrize("event", CALLS)
@pytest.mark.parametrize("risk", list(Risk))
def test_a_risk_arrives_as_the_kernels_risk(event: ev.CallEvent, risk: Risk) -> None:
    decoded = p.decode(raw(p.EventMessage(event), event={**event.to_dict(), "risk": risk.value}))
    assert isinstance(decoded, p.EventMessage)
    assert isinstance(decoded.event, ev.ToolCallStarted | ev.ApprovalRequest)
    assert decoded.event.risk is risk


@pytest.mark.parametrize("event", CALLS)
@pytest.mark.parametrize("bad", BAD_RISKS)
def test_a_risk_outside_the_vocabulary_drops_the_event(event: ev.CallEvent, bad: Any) -> None:
    data = {**event.to_dict(), "risk": bad}
    with pytest.raises(ev.EventDecodeError):
        ev.event_from_dict(data)
    assert p.decode(raw(p.EventMessage(event))) == p.EventMessage(event)
    assert p.decode(raw(p.EventMessage(event), event=data)) is None


STATES = p.McpServerStates((p.McpServerInfo("git", ServerStatus.READY, "ready"),))


def _states(status: Any) -> str:
    server = STATES.to_dict()["servers"][0]
    return raw(STATES, servers=[{**server, "status": status}])


@pytest.mark.parametrize("status", list(ServerStatus))
def test_a_servers_status_arrives_as_the_kernels_status(status: ServerStatus) -> None:
    decoded = p.decode(_states(status.value))
    assert isinstance(decoded, p.McpServerStates)
    assert decoded.servers[0].status is status
    info = p.McpServerInfo.from_state({"name": "git", "status": status.value})
    assert info.status is status


@pytest.mark.parametrize("bad", ["running", "Ready", "READY", "ok", "stopped", "", 1, None])
def test_a_servers_status_outside_the_vocabulary_drops_the_message(bad: Any) -> None:
    assert p.decode(_states("ready")) == STATES
    assert p.decode(_states(bad)) is None
