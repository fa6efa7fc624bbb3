"""`reins exec` end to end (the real console script, the real SDK, the fake Messages API
server, the real store): in read-only mode a model that reads secret locations is asked
about, and with `--approve deny` the secrets' content reaches no event, no stored byte and no
request sent to the model; grep for the canary finds only plain files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths

REINS = Path(sys.executable).with_name("reins")
CANARY = "CANARY-d41d8cd98f-DO-NOT-LEAK"
SECRETS = {
    ".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}\n",
    ".env": f"API_TOKEN={CANARY}\n",
    ".aws/credentials": f"[default]\naws_secret_access_key = {CANARY}\n",
    "app/.env.production": f"DB_PASSWORD={CANARY}\n",
    ".git-credentials": f"https://u:{CANARY}@example.com\n",
}
READS = [".ssh/id_rsa", ".env", ".aws/credentials", "./.ssh/../.ssh/id_rsa", ".SSH/x/../id_rsa",
         "app/.env.production", "key.txt", ".git-credentials"]


def _plant(workspace: Path) -> None:
    for rel, text in SECRETS.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    (workspace / "notes.md").write_text("the canary is spelled CANARY-d41d8cd98f\n")
    (workspace / "key.txt").symlink_to(workspace / ".ssh" / "id_rsa")


def _exec(server: FakeAnthropicServer, workspace: Path, *args: str
          ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
    done = subprocess.run(
        [str(REINS), "exec", "--json", "--workspace", str(workspace), *args, "look around"],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        check=False)
    assert done.returncode == 0, done.stderr
    return done, [json.loads(line) for line in done.stdout.splitlines()]


def _calls() -> list[ToolUse]:
    reads = [ToolUse("read_file", {"path": p}, id=f"read{i}") for i, p in enumerate(READS)]
    return [*reads,
            ToolUse("grep", {"pattern": "CANARY-d41d8cd98f"}, id="grep1"),
            ToolUse("grep", {"pattern": "canary-d41d8cd98f", "case_insensitive": True,
                             "glob": "**/*"}, id="grep2"),
            ToolUse("glob", {"pattern": "**/*"}, id="glob1")]


def _stored_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


@pytest.mark.parametrize("mode", ["read-only", "ask", "auto"])
def test_secrets_never_reach_the_model_when_denied(workspace: Path, reins_home: AppPaths,
                                                   mode: str) -> None:
    _plant(workspace)
    with FakeAnthropicServer([reply("reading", *_calls()), reply("done")],
                             api_key="test-key") as server:
        done, events = _exec(server, workspace, "--mode", mode, "--approve", "deny")
        sent = json.dumps([r.body for r in server.requests])
    requests = [e for e in events if e["type"] == "approval_request"]
    assert [r["call_id"] for r in requests] == [f"read{i}" for i in range(len(READS))]
    for request in requests:
        assert "is a secret location" in request["reason"], request
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    for i in range(len(READS)):
        assert results[f"read{i}"]["error_code"] == "approval_denied"
    assert CANARY not in sent
    assert CANARY not in done.stdout and CANARY not in done.stderr
    assert CANARY.encode() not in _stored_bytes(Path(os.environ["REINS_HOME"]))
    back = json.dumps(server.requests[-1].body["messages"][-1])
    assert "notes.md" in back and "secret location(s) not searched" in back
    assert ".ssh/id_rsa  (secret)" in back


def test_an_allowed_read_is_the_only_way_a_secret_reaches_the_model(
        workspace: Path, reins_home: AppPaths) -> None:
    _plant(workspace)
    calls = [ToolUse("grep", {"pattern": "CANARY"}, id="g"),
             ToolUse("read_file", {"path": ".env"}, id="r")]
    with FakeAnthropicServer([reply("reading", *calls), reply("done")],
                             api_key="test-key") as server:
        _done, events = _exec(server, workspace, "--mode", "read-only", "--approve", "allow")
        back = server.requests[-1].body["messages"][-1]["content"]
    [request] = [e for e in events if e["type"] == "approval_request"]
    assert request["call_id"] == "r"
    grep_result, read_result = (b for b in back if b["type"] == "tool_result")
    assert CANARY not in json.dumps(grep_result)
    assert CANARY in json.dumps(read_result)
