"""`reins exec --attach PATH` (repeatable): the files go to the fake model as blocks after
the prompt, are stored with the prompt, and a file that cannot be attached stops the command
with a clear message before anything runs or is stored (in-process, the console script's
code path)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from kernel.agent.store import SessionStore
from kernel.fakemodel import reply
from tests.cli.conftest import Cli, events


def test_attached_files_and_images_reach_the_model_and_the_store(cli: Cli):
    (cli.workspace / "notes.txt").write_text("the meeting is at noon\n")
    out = io.BytesIO()
    Image.new("RGB", (9500, 12), (0, 0, 255)).save(out, format="PNG")
    (cli.workspace / "wide.png").write_bytes(out.getvalue())
    cli.server.add(reply("Noon, and a blue bar."))
    code, stdout, stderr = cli.call("exec", "--json", "--attach", "notes.txt", "--attach",
                                    str(cli.workspace / "wide.png"), "what do these say?")
    assert code == 0, stderr
    content = cli.server.requests[0].body["messages"][0]["content"]
    assert [b["type"] for b in content] == ["text", "text", "image", "text"]
    assert content[0]["text"] == "what do these say?"
    assert "the meeting is at noon" in content[1]["text"]
    assert "downscaled from 9500x12" in content[3]["text"]
    prompt = next(e for e in events(stdout) if e["type"] == "user_message")
    assert [(a["name"], a["kind"]) for a in prompt["attachments"]] == [
        ("notes.txt", "text"), ("wide.png", "image")]
    with SessionStore(cli.paths.database) as store:
        (session,) = store.list_sessions()
        stored = store.messages(session.session_id)[0]["content"]
    assert [b["type"] for b in stored] == ["text", "text", "image", "text"]


def test_the_human_output_lists_the_attachments(cli: Cli):
    (cli.workspace / "n.md").write_text("# hi\n")
    cli.server.add(reply("ok"))
    code, stdout, stderr = cli.call("exec", "--attach", "n.md", "read it")
    assert code == 0, stderr
    assert "> read it\n  + n.md (text, 5 B)" in stdout


@pytest.mark.parametrize(("make", "says"), [
    (lambda ws: ws / "missing.txt", "missing.txt cannot be read"),
    (lambda ws: ws, "is a folder"),
    (lambda ws: (ws / "prog.bin").write_bytes(b"\x7fELF\x00\x01") and ws / "prog.bin",
     "prog.bin is not a text file"),
    (lambda ws: (ws / "pic.bmp").write_bytes(b"BM" + bytes(60)) and ws / "pic.bmp",
     "BMP image"),
    (lambda ws: (ws / "big.log").write_bytes(b"x" * 300_000) and ws / "big.log",
     "text files up to 256 KB"),
    (lambda ws: (ws / "empty").write_bytes(b"") or ws / "empty", "is empty"),
])
def test_a_file_that_cannot_be_attached_stops_before_anything_runs(cli: Cli, make, says):
    path = make(cli.workspace)
    code, stdout, stderr = cli.call("exec", "--attach", str(path), "look")
    assert code == 2 and says in stderr and stderr.startswith("reins exec: --attach: ")
    assert cli.server.requests == [] and stdout == ""
    with SessionStore(cli.paths.database) as store:
        assert store.list_sessions() == []


def test_attach_needs_a_prompt(cli: Cli):
    (cli.workspace / "n.txt").write_text("x")
    code, _, stderr = cli.call("exec", "--session", "20260101-000000-abcdef12", "--attach",
                               "n.txt")
    assert code == 2 and "--attach goes with a PROMPT" in stderr
