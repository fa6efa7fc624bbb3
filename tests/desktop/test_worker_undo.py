"""Undo across the process boundary: a real kernel worker, the real anthropic client against
the loopback fake model, real commands applied as checkpoint steps to real files and a real
SQLite checkpoint index, driven through the protocol only. The step list says which calls
are undone; an undo puts the files back; one a later call or the user got in the way of is
refused with the path and why, and changes nothing; a rewind undoes every later step; the
diff shows what a call changed; nothing is undone while the session runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
from kernel import protocol as p
from kernel.events import ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, Silence, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.test_worker_grants import Kernel, new_session

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]  # (real kernel workers)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-undo") as server:
        yield server
        server.release()


@pytest.fixture
def kernel(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[Kernel]:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(
        {"base_url": fake.base_url, "model": "claude-undo"}))
    client = KernelClient(restart=False)
    k = Kernel(qtbot, client)
    client.start()
    k.wait(p.KernelReady)
    client.send(p.SetApiKey("sk-undo"))
    yield k
    client.stop()


def run_command(k: Kernel, fake: FakeAnthropicServer, sid: str, command: str) -> str:
    """Run one command as the model's call; its call id (it applied a change set)."""
    fake.add(reply(ToolUse("run_command", {"command": command})), reply("done"))
    mark = k.run(sid, command)
    k.wait_idle(sid, mark)
    [result] = k.events(ToolResultEvent, mark)
    assert isinstance(result, ToolResultEvent)
    assert not result.is_error, result.preview
    assert result.changes, "the command's change set is on its result"
    return result.call_id


ANSWERS: dict[type[p.Message], type[p.Message]] = {
    p.ListSteps: p.StepList, p.GetStepDiff: p.StepDiff, p.UndoCall: p.UndoOutcome,
    p.RewindTo: p.UndoOutcome}
"""The reply each request gets (or CommandFailed); the worker also pushes a StepList of its
own after an undo, which is no answer to an UndoCall."""


def ask(k: Kernel, message: p.Message) -> p.Message:
    mark = len(k.messages)
    assert k.client.send(message)
    kinds = (ANSWERS[type(message)], p.CommandFailed)
    return k.wait(p.Message, lambda m: isinstance(m, kinds), mark)  # type: ignore[type-abstract]


def steps(k: Kernel, sid: str) -> dict[str, tuple[bool, bool]]:
    answer = ask(k, p.ListSteps(sid))
    assert isinstance(answer, p.StepList) and answer.session_id == sid
    return {s.call_id: (s.undone, s.undoable) for s in answer.steps if not s.undoes}


def test_undo_rewind_and_diff_through_the_worker(kernel: Kernel, fake: FakeAnthropicServer,
                                                 workspace: Path) -> None:
    k = kernel
    (workspace / "a.txt").write_text("old\n")
    sid = new_session(k, workspace, mode="auto")
    first = run_command(k, fake, sid, "printf 'one\\n' > a.txt; printf 'n\\n' > b.txt")
    second = run_command(k, fake, sid, "printf 'two\\n' > a.txt")
    assert steps(k, sid) == {first: (False, True), second: (False, True)}

    diff = ask(k, p.GetStepDiff(sid, first))
    assert isinstance(diff, p.StepDiff) and not diff.error
    assert "-old" in diff.text and "+one" in diff.text and "+n" in diff.text

    # A later call changed a.txt: the first call's undo is refused, nothing changes.
    blocked = ask(k, p.UndoCall(sid, first))
    assert isinstance(blocked, p.UndoOutcome) and not blocked.ok
    assert blocked.stopped_at == first and not blocked.undone
    assert [(b.path, b.by_call) for b in blocked.blocked] == [("a.txt", second)]
    assert (workspace / "a.txt").read_text() == "two\n"
    assert (workspace / "b.txt").exists()

    undone = ask(k, p.UndoCall(sid, second))
    assert isinstance(undone, p.UndoOutcome) and undone.ok
    assert undone.undone == (second,) and undone.restored == ("a.txt",)
    assert (workspace / "a.txt").read_text() == "one\n"
    listed = k.wait(p.StepList, lambda m: m.session_id == sid)
    assert listed is not None
    assert steps(k, sid) == {first: (False, True), second: (True, False)}

    again = ask(k, p.UndoCall(sid, second))
    assert isinstance(again, p.UndoOutcome) and "already undone" in again.refused

    # A rewind to the first call undoes what came after it (nothing left), then the first.
    third = run_command(k, fake, sid, "printf 'three\\n' > c.txt")
    rewound = ask(k, p.RewindTo(sid, first))
    assert isinstance(rewound, p.UndoOutcome) and rewound.ok and rewound.undone == (third,)
    assert not (workspace / "c.txt").exists()
    assert (workspace / "a.txt").read_text() == "one\n"
    done = ask(k, p.UndoCall(sid, first))
    assert isinstance(done, p.UndoOutcome) and done.ok
    assert (workspace / "a.txt").read_text() == "old\n" and not (workspace / "b.txt").exists()


def test_a_file_changed_outside_reins_blocks_the_undo(kernel: Kernel,
                                                       fake: FakeAnthropicServer,
                                                       workspace: Path) -> None:
    k = kernel
    sid = new_session(k, workspace, mode="auto")
    call = run_command(k, fake, sid, "printf 'made\\n' > notes.txt")
    (workspace / "notes.txt").write_text("the user's own words\n")
    blocked = ask(k, p.UndoCall(sid, call))
    assert isinstance(blocked, p.UndoOutcome) and not blocked.ok
    assert [(b.path, b.reason, b.by_call) for b in blocked.blocked] == [
        ("notes.txt", "changed outside Reins", "")]
    assert (workspace / "notes.txt").read_text() == "the user's own words\n"


def test_nothing_is_undone_while_the_session_runs(kernel: Kernel, fake: FakeAnthropicServer,
                                                  workspace: Path) -> None:
    k = kernel
    sid = new_session(k, workspace, mode="auto")
    call = run_command(k, fake, sid, "printf 'x\\n' > x.txt")
    fake.add(Silence())
    mark = k.run(sid, "hold")
    k.wait(p.RunStatus, lambda m: m.session_id == sid and m.state == "running", mark)
    for message in (p.UndoCall(sid, call), p.RewindTo(sid, call)):
        failed = ask(k, message)
        assert isinstance(failed, p.CommandFailed) and failed.command == message.kind
        assert "a run is in progress" in failed.message
    assert (workspace / "x.txt").read_text() == "x\n"
    k.client.send(p.CancelRun(sid))
    fake.release()
    k.wait_idle(sid, mark)
    assert steps(k, sid) == {call: (False, True)}


def test_unknown_calls_and_sessions_are_said(kernel: Kernel, workspace: Path) -> None:
    k = kernel
    sid = new_session(k, workspace, mode="auto")
    failed = ask(k, p.UndoCall(sid, "toolu_nope"))
    assert isinstance(failed, p.CommandFailed) and "no step of call" in failed.message
    diff = ask(k, p.GetStepDiff(sid, "toolu_nope"))
    assert isinstance(diff, p.StepDiff) and "no step of call" in diff.error
    unknown = ask(k, p.ListSteps("no-such-session"))
    assert isinstance(unknown, p.CommandFailed)
