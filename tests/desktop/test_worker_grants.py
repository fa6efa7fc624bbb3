"""Grants across the process boundary: a real kernel worker, the real anthropic client against
the loopback fake model, driven through the protocol only. A session grant is listed in
words, matches an equivalent later call without asking, and once revoked the next
equivalent call asks again; an always rule is listed and revoking it removes it from
settings.json. The worker also runs commands with the settings' `exec` section."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
from kernel import protocol as p
from kernel.events import ApprovalRequest, Event, GrantRevoked, ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from kernel.policy.settings import load_settings

WAIT_MS = 60_000
pytestmark = pytest.mark.timeout(240)
M = TypeVar("M", bound=p.Message)


class Kernel:
    """A real worker and every message it sent, in order."""

    def __init__(self, qtbot: QtBot, client: KernelClient) -> None:
        self.qtbot = qtbot
        self.client = client
        self.messages: list[p.Message] = []
        client.batch.connect(self.messages.extend)

    def wait(self, kind: type[M], where: Callable[[M], bool] = lambda _m: True,
             after: int = 0) -> M:
        found: list[M] = []

        def seen() -> bool:
            found[:] = [m for m in self.messages[after:] if isinstance(m, kind) and where(m)]
            return bool(found)

        self.qtbot.waitUntil(seen, timeout=WAIT_MS)
        return found[0]

    def events(self, kind: type[Event], after: int = 0) -> list[Event]:
        return [m.event for m in self.messages[after:]
                if isinstance(m, p.EventMessage) and isinstance(m.event, kind)]

    def run(self, session_id: str, prompt: str) -> int:
        mark = len(self.messages)
        assert self.client.send(p.StartRun(session_id, prompt))
        return mark

    def wait_idle(self, session_id: str, after: int) -> None:
        self.wait(p.RunStatus, lambda m: m.session_id == session_id and m.state != "running",
                  after)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-grants") as server:
        yield server
        server.release()


@pytest.fixture
def kernel(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Kernel]:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(
        {"base_url": fake.base_url, "model": "claude-grants",
         "exec": {"env": ["REINS_GRANTS_PROBE"]}}))
    monkeypatch.setenv("REINS_GRANTS_PROBE", "passed-through")
    client = KernelClient(restart=False)
    k = Kernel(qtbot, client)
    client.start()
    k.wait(p.KernelReady)
    client.send(p.SetApiKey("sk-grants"))
    yield k
    client.stop()


def new_session(k: Kernel, workspace: Path, mode: str = "ask") -> str:
    mark = len(k.messages)
    k.client.send(p.NewSession(str(workspace), mode))
    return k.wait(p.SessionLoaded, after=mark).info.session_id


def answer_next(k: Kernel, session_id: str, decision: str, after: int) -> ApprovalRequest:
    request = k.wait(p.EventMessage, lambda m: isinstance(m.event, ApprovalRequest),
                     after).event
    assert isinstance(request, ApprovalRequest)
    k.client.send(p.ApprovalAnswer(session_id, request.call_id, decision))
    return request


def grants(k: Kernel, session_id: str, after: int) -> tuple[p.GrantInfo, ...]:
    return k.wait(p.GrantList, lambda m: m.session_id == session_id, after).grants


def test_session_grant_listed_revoked_and_asked_again(
        qtbot: QtBot, kernel: Kernel, fake: FakeAnthropicServer, workspace: Path) -> None:
    k = kernel
    sid = new_session(k, workspace)
    fake.add(reply(ToolUse("run_command", {"command": "echo granted"})), reply("done 1"),
             reply(ToolUse("run_command", {"command": "echo   'granted'"})), reply("done 2"),
             reply(ToolUse("run_command", {"command": "echo granted"})), reply("done 3"))

    mark = k.run(sid, "first")
    request = answer_next(k, sid, "allow_session", mark)
    assert request.always_rules == [{"rule": "run_command(echo granted)", "words": (
        "run_command: the command `echo granted` (any spacing or quoting), in every session")}]
    k.wait_idle(sid, mark)

    mark = len(k.messages)
    k.client.send(p.ListGrants(sid))
    listed = grants(k, sid, mark)
    assert [(g.rule, g.scope) for g in listed] == [("run_command(echo granted)", "session")]
    assert listed[0].words == ("run_command: the command `echo granted` (any spacing or "
                               "quoting) — in this session only")

    # The same command spelled differently runs without asking.
    mark = k.run(sid, "second")
    k.wait_idle(sid, mark)
    assert k.events(ApprovalRequest, mark) == []
    [result] = k.events(ToolResultEvent, mark)
    assert isinstance(result, ToolResultEvent) and not result.is_error

    # Revoke it: recorded, no longer listed, and the next equivalent call asks again.
    mark = len(k.messages)
    k.client.send(p.RevokeGrant(sid, "run_command(echo granted)", "session"))
    assert grants(k, sid, mark) == ()
    [revoked] = k.events(GrantRevoked, mark)
    assert isinstance(revoked, GrantRevoked)
    assert (revoked.rule, revoked.scope, revoked.revoked_by) == (
        "run_command(echo granted)", "session", "user")
    mark = k.run(sid, "third")
    again = answer_next(k, sid, "deny", mark)
    assert again.input == {"command": "echo granted"}
    k.wait_idle(sid, mark)

    # Revoking what is not granted is a clear failure, not a silent success.
    mark = len(k.messages)
    k.client.send(p.RevokeGrant(sid, "run_command(echo granted)", "session"))
    failed = k.wait(p.CommandFailed, after=mark)
    assert failed.command == "revoke_grant" and "nothing to revoke" in failed.message

    # The revocation is stored with the session (so a reloaded session keeps it).
    mark = len(k.messages)
    k.client.send(p.OpenSession(sid))
    loaded = k.wait(p.SessionLoaded, after=mark)
    assert any(isinstance(e, GrantRevoked) for e in loaded.events)


def test_always_rule_listed_and_revoked_from_settings(
        qtbot: QtBot, kernel: Kernel, fake: FakeAnthropicServer, workspace: Path,
        reins_home: AppPaths) -> None:
    k = kernel
    sid = new_session(k, workspace)
    fake.add(reply(ToolUse("run_command", {"command": "echo forever"})), reply("saved"),
             reply(ToolUse("run_command", {"command": "echo forever"})), reply("again"))
    mark = k.run(sid, "always")
    answer_next(k, sid, "allow_always", mark)
    k.wait_idle(sid, mark)
    rules = [r.text for r in load_settings(reins_home).permissions.allow.rules]
    assert rules == ["run_command(echo forever)"]

    mark = len(k.messages)
    k.client.send(p.ListGrants(sid))
    [always] = grants(k, sid, mark)
    assert (always.rule, always.scope) == ("run_command(echo forever)", "always")
    assert "in every session" in always.words

    mark = len(k.messages)
    k.client.send(p.RevokeGrant(sid, "run_command(echo forever)", "always"))
    assert grants(k, sid, mark) == ()
    assert load_settings(reins_home).permissions.allow.rules == ()
    [revoked] = k.events(GrantRevoked, mark)
    assert isinstance(revoked, GrantRevoked) and revoked.scope == "always"

    mark = k.run(sid, "again")
    answer_next(k, sid, "deny", mark)
    k.wait_idle(sid, mark)


def test_commands_get_the_settings_exec_section(
        qtbot: QtBot, kernel: Kernel, fake: FakeAnthropicServer, workspace: Path) -> None:
    k = kernel
    sid = new_session(k, workspace, mode="auto")
    fake.add(reply(ToolUse("run_command", {"command": "printenv REINS_GRANTS_PROBE"})),
             reply("ok"))
    mark = k.run(sid, "probe")
    answer = k.events  # the command may ask when no sandbox is available: allow it once
    k.qtbot.waitUntil(lambda: bool(answer(ToolResultEvent, mark))
                      or bool(answer(ApprovalRequest, mark)), timeout=WAIT_MS)
    if answer(ApprovalRequest, mark):
        answer_next(k, sid, "allow_once", mark)
    k.wait_idle(sid, mark)
    [result] = k.events(ToolResultEvent, mark)
    assert isinstance(result, ToolResultEvent)
    assert not result.is_error and "passed-through" in result.preview, result
