"""The command that runs is byte for byte the command that was approved: the real `reins exec`
asks, the answer allows it, and the shell in the sandbox prints the bytes it was given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from tests.security.execkit import json_lines, run_json

PAYLOADS = {
    "escape and carriage return": "x #\x1b[2K\r$ ls -la",
    "bidi and zero width": "abc\u202edcba\u2066\u2069 \u200b\u200d\ufeff\u2028\u2029 end",
    "unicode, tab, backspace, DEL and C1": "中文 ü 😀\t\b\x7f\x85\x9b end",
    "backslashes and lookalike escapes": "\\x1b \\u202e \\\\ \\n",
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_the_shell_gets_exactly_the_approved_bytes(payload: str, workspace: Path,
                                                   reins_home: AppPaths) -> None:
    command = f"printf '%s' '{payload}' | od -An -tx1 -v"
    script = [reply(ToolUse("run_command", {"command": command}, id="call_exact")),
              reply("done")]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        done = run_json(server, workspace, "--mode", "ask", "--approve", "allow")
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    [request] = [e for e in events if e["type"] == "approval_request"]
    assert request["input"] == {"command": command}
    assert request["preview"].startswith(f"$ {command}\ncwd: ")
    [decision] = [e for e in events if e["type"] == "approval_decision"
                  and e["decided_by"] != "policy"]
    assert decision["decision"] == "allow_once"
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert not result["is_error"], result
    output = result["preview"].split("--- output", 1)[1].split("\n", 1)[1]
    printed = bytes(int(h, 16) for h in re.findall(r"\b[0-9a-f]{2}\b", output))
    assert printed == payload.encode("utf-8")
