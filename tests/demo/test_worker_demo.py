"""The demo and the scratch workspace through the real kernel worker process and its pipe:
with no key and no base URL, a demo session starts in a scratch folder the kernel made,
answers, lists the folder, asks before it writes, writes when allowed; the session can then
be moved to a real folder, where its next run works."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel import protocol as p
from kernel.demo.script import NOTES_FILE
from kernel.events import ApprovalRequest, AssistantText, ToolCallStarted, ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.modes import Mode
from kernel.paths import AppPaths
from kernel.shared.demo import DEMO_MODEL, DEMO_TITLE
from tests.security.test_workspace_broad import Worker


@pytest.fixture
def keyless(reins_home: AppPaths, quiet_home: Path) -> Iterator[Worker]:
    """A real kernel worker with no key, no base URL and no keyring."""
    worker = Worker()
    yield worker
    worker.close()


def _events(worker: Worker, kind: type) -> list:
    return [m.event for m in worker.received
            if isinstance(m, p.EventMessage) and isinstance(m.event, kind)]


def _tour(worker: Worker, session: str, prompt: str, runs_before: int) -> ApprovalRequest:
    """Type `prompt`; the tour lists the folder and asks to write: its request."""
    asked = len(_events(worker, ApprovalRequest))
    worker.send(p.StartRun(session, prompt))
    worker.wait_for(p.RunStatus, runs_before * 2 + 1)
    while len(_events(worker, ApprovalRequest)) == asked:
        worker.wait_for(p.EventMessage, len([m for m in worker.received
                                             if isinstance(m, p.EventMessage)]) + 1)
    return _events(worker, ApprovalRequest)[-1]


@pytest.mark.slow
def test_the_demo_runs_in_a_scratch_folder_without_a_key_then_moves_to_a_real_one(
        keyless: Worker, reins_home: AppPaths, workspace: Path) -> None:
    worker = keyless
    snapshot = worker.wait_for(p.SettingsSnapshot)
    assert not snapshot.can_run, "the premise: no key, no base URL"
    worker.send(p.NewSession("", Mode.ASK, title=DEMO_TITLE, scratch=True, model=DEMO_MODEL))
    info = worker.wait_for(p.SessionLoaded).info
    scratch = Path(info.workspace)
    assert scratch.parent == reins_home.scratch.resolve() and scratch.is_dir()
    assert reins_home.is_scratch(scratch) and not reins_home.is_scratch(workspace)
    assert scratch.stat().st_mode & 0o777 == 0o700
    assert info.model == DEMO_MODEL and info.title == DEMO_TITLE

    request = _tour(worker, info.session_id, "Please plan my week", 0)
    assert request.name == "write_file" and request.input["path"] == NOTES_FILE
    listed = [e for e in _events(worker, ToolResultEvent) if e.call_id != request.call_id]
    assert [e.status for e in listed] == ["ok"], "the listing ran without asking"
    worker.send(p.ApprovalAnswer(info.session_id, request.call_id, "allow_once"))
    assert worker.wait_for(p.RunStatus, 2).state == "idle"
    assert "Please plan my week" in (scratch / NOTES_FILE).read_text()
    answers = " ".join(e.text for e in _events(worker, AssistantText))
    assert "demo model" in answers and "written only because you allowed" in answers

    worker.send(p.SetWorkspace(info.session_id, str(workspace / "missing")))
    assert "not an existing folder" in worker.wait_for(p.CommandFailed).message
    worker.send(p.SetWorkspace(info.session_id, str(Path.home())))
    assert "home folder" in worker.wait_for(p.CommandFailed, 2).message
    worker.send(p.SetWorkspace(info.session_id, str(workspace)))
    listing = worker.wait_for(p.SessionList)
    [moved] = [s for s in listing.sessions if s.session_id == info.session_id]
    assert moved.workspace == str(workspace)

    request = _tour(worker, info.session_id, "again, here", 1)
    worker.send(p.ApprovalAnswer(info.session_id, request.call_id, "deny"))
    assert worker.wait_for(p.RunStatus, 4).state == "idle"
    assert not (workspace / NOTES_FILE).exists(), "denied: nothing written"
    assert (scratch / NOTES_FILE).is_file(), "the scratch folder keeps what was written"
    started = [e for e in _events(worker, ToolCallStarted) if e.name == "list_directory"]
    assert len(started) == 2
    assert "Nothing was written" in _events(worker, AssistantText)[-1].text


@pytest.mark.slow
def test_a_command_runs_in_a_scratch_workspace_and_writes_there(
        served: tuple[FakeAnthropicServer, Worker], reins_home: AppPaths) -> None:
    """The scratch folder is beside Reins' data folder, not in it: a command's sandbox shows
    it (Reins' own folders are hidden from commands) and its change is applied there."""
    server, worker = served
    worker.send(p.NewSession("", Mode.AUTO, scratch=True))
    info = worker.wait_for(p.SessionLoaded).info
    scratch = Path(info.workspace)
    server.add(reply("Making it.", ToolUse("run_command", {"command": "echo hi > made.txt; pwd"})),
               reply("Made."))
    worker.send(p.StartRun(info.session_id, "make a file"))
    assert worker.wait_for(p.RunStatus, 2).state == "idle"
    [result] = _events(worker, ToolResultEvent)
    assert result.status == "ok", result
    assert (scratch / "made.txt").read_text() == "hi\n"
    assert not any(reins_home.data.rglob("made.txt"))
