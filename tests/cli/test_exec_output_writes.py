"""`reins exec` and the full outputs of trimmed results: one written after the run's last
request is awaited before the run ends, and a failed write is told to the user."""

from __future__ import annotations

import json

from kernel.agent.store import SessionStore
from kernel.fakemodel import ToolUse, reply
from kernel.tools.externalize import OutputStore
from tests.cli.conftest import Cli


def test_a_full_output_that_fails_after_the_last_request_is_told_on_stderr(cli: Cli):
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({
        "model": "local-coder",
        "models": {"local-*": {"context_window": 9000, "max_tokens": 1000}}}))
    for i in range(3):
        (cli.workspace / f"big{i}.txt").write_text(f"file {i}\n" + ("x" * 99 + "\n") * 60)
    with SessionStore(cli.paths.database) as store:
        session_id = store.create_session(cli.workspace, "local-coder", "auto")
    root = OutputStore.for_session(cli.paths, session_id).root
    root.parent.mkdir(parents=True, exist_ok=True)
    root.write_text("a file where the output folder goes")  # fails for root too
    cli.server.add(*[reply(ToolUse("read_file", {"path": f"big{i}.txt"}, id=f"b{i}"))
                     for i in range(3)], reply("done"))
    code, out, err = cli.call("exec", "--mode", "auto", "--session", session_id,
                              "read them")
    assert code == 0, err
    assert "older tool result" in str(cli.server.requests[-1].body["messages"])
    lines = [line for line in err.splitlines() if line.startswith("error [")]
    assert len(lines) == 1 and lines[0].startswith("error [output_not_stored]: ")
    assert "b0" in lines[0] and str(root / "b0.txt") in lines[0]
    assert "File exists" in lines[0] or "Not a directory" in lines[0]
    assert out.rstrip().splitlines()[-1].startswith("── end_turn")
