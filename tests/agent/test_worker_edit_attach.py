"""Edit, regenerate and attachments through the real kernel worker process and its pipe,
against the fake model: what the model is sent, what a reload shows, and the refusals (a
run in progress, no prompt yet, a file that cannot be attached) as CommandFailed."""

from __future__ import annotations

import base64
from pathlib import Path

from kernel import protocol as p
from kernel.events import MessagesSuperseded, UserMessage
from kernel.fakemodel import FakeAnthropicServer, Silence, reply
from tests.security.test_workspace_broad import Worker


def attached(name: str, data: bytes) -> p.AttachmentData:
    return p.AttachmentData(name, base64.b64encode(data).decode("ascii"))


def restores(received: list[p.Message]) -> int:
    """How many events came before the restore's (the restore is the next one)."""
    return len([m for m in received if isinstance(m, p.EventMessage)])


def texts(body: dict) -> list[str]:
    return [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]


def test_edit_regenerate_and_attachments_through_the_worker(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path):
    server, worker = served
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    worker.send(p.RegenerateAnswer(session))
    assert "no message yet" in worker.wait_for(p.CommandFailed).message
    worker.send(p.StartRun(session, "look", (attached("prog", b"\x7fELF\x00"),)))
    failed = worker.wait_for(p.CommandFailed, 2)
    assert failed.command == "start_run" and "prog is not a text file" in failed.message
    server.add(reply("a note"), reply("a better note"), reply("the same note"), Silence())
    worker.send(p.StartRun(session, "read this", (attached("n.txt", b"buy milk"),)))
    worker.wait_for(p.RunStatus, 2)
    assert texts(server.requests[0].body) == [
        "read this", '<attachment name="n.txt">\nbuy milk\n</attachment>']
    worker.send(p.EditLastMessage(session, "read this, carefully", keep=(0,)))
    worker.wait_for(p.RunStatus, 4)
    assert texts(server.requests[1].body) == [
        "read this, carefully", '<attachment name="n.txt">\nbuy milk\n</attachment>']
    worker.send(p.RegenerateAnswer(session))
    worker.wait_for(p.RunStatus, 6)
    assert texts(server.requests[2].body) == texts(server.requests[1].body)
    worker.send(p.RestoreVersion(session, 1))  # the answer before the regenerate
    restored = worker.wait_for(p.EventMessage, restores(worker.received) + 1).event
    assert restored.reason == "restore" and restored.restores == 1
    worker.send(p.StartRun(session, "and now?"))
    worker.wait_for(p.RunStatus, 7)
    while not server.stalled.is_set():
        worker.conn.poll(0.02)
    assert "a better note" in texts(server.requests[3].body)
    assert "the same note" not in texts(server.requests[3].body)
    worker.send(p.EditLastMessage(session, "changed"))
    worker.send(p.RegenerateAnswer(session))
    refusals = [worker.wait_for(p.CommandFailed, n).message for n in (3, 4)]
    assert all("a run is in progress in this session: stop it" in m for m in refusals)
    worker.send(p.CancelRun(session))
    worker.wait_for(p.RunStatus, 8)
    worker.send(p.OpenSession(session))
    loaded = worker.wait_for(p.SessionLoaded, 2)
    kinds = [e.reason for e in loaded.events if isinstance(e, MessagesSuperseded)]
    assert kinds == ["edit", "regenerate", "restore"]
    worker.send(p.RestoreVersion(session, 2))
    assert "only an earlier answer to the last message" in worker.wait_for(
        p.CommandFailed, 5).message
    prompts = [e for e in loaded.events if isinstance(e, UserMessage)]
    assert [e.text for e in prompts] == ["read this", "read this, carefully", "and now?"]
    assert [a["name"] for a in prompts[1].attachments] == ["n.txt"]
