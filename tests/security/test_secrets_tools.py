"""Secret locations through the real file tools, the real PolicyGate and the real Dispatcher:
read_file asks in every mode (read-only included) and says why; grep never returns their
content and says what it skipped; glob and list_directory list them, marked; writes ask and
the approval never shows the current content."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kernel.events import ApprovalRequest
from kernel.paths import AppPaths
from kernel.policy.channels import Answer, Choice, FixedChannel
from kernel.policy.decide import Mode
from kernel.tools.spec import ErrorCode, ToolCall, ToolResult
from tests.policy.gatekit import Kit

CANARY = "CANARY-7f3a9c-SECRET"
SECRETS = [".ssh/id_rsa", ".env", ".aws/credentials", "sub/.env.production", ".npmrc",
           ".git-credentials", ".config/gh/hosts.yml", ".bash_history", "deep/er/.ssh/key",
           ".envrc", "prod.env", ".kube/config", ".cargo/credentials.toml", ".vault-token",
           ".local/share/keyrings/login.keyring", ".mozilla/firefox/x/logins.json"]
PLAIN = ["README.md", "src/app.py", ".env.example", "docs/ssh.md", ".envelope"]
MODES = list(Mode)


@pytest.fixture
def planted(workspace: Path) -> Path:
    for rel in SECRETS:
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(f"token = {CANARY}\n")
    for rel in PLAIN:
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(f"plain text mentioning CANARY-7f3a9c in {rel}\n")
    (workspace / "innocent.txt").symlink_to(workspace / ".ssh" / "id_rsa")
    (workspace / "creds").symlink_to(workspace / ".aws")
    return workspace


class Always:
    """A person who answers every request with "Always allow" (the widest answer)."""

    name = "ui"

    def __init__(self, choice: Choice) -> None:
        self.choice = choice

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        return Answer(self.choice)


def _run(kit: Kit, *calls: ToolCall) -> list[ToolResult]:
    return asyncio.run(kit.dispatcher.dispatch_many(list(calls)))


def _everything(kit: Kit, results: list[ToolResult]) -> str:
    """Every event the gate recorded and every result, as the text a leak would be in."""
    events = [json.dumps(e.__dict__, default=str) for e in kit.events]
    return "\n".join([*events, *(json.dumps(r.__dict__, default=str) for r in results)])


@pytest.mark.parametrize("mode", MODES)
def test_read_file_of_a_secret_asks_in_every_mode_and_deny_keeps_it(
        planted: Path, reins_home: AppPaths, mode: Mode) -> None:
    kit = Kit(planted, reins_home, mode=mode, channel=FixedChannel("deny"))
    raws = [*SECRETS, "./.ssh/id_rsa", ".SSH/../.ssh/id_rsa", "innocent.txt",
            "creds/credentials", str(planted / ".env")]
    calls = [ToolCall(f"r{i}", "read_file", {"path": raw}) for i, raw in enumerate(raws)]
    results = _run(kit, *calls)
    assert [r.error_code for r in results] == [ErrorCode.APPROVAL_DENIED] * len(raws), results
    requests = kit.of_type("approval_request")
    assert [r.call_id for r in requests] == [c.call_id for c in calls]
    for request in requests:
        assert "is a secret location: " in request.reason and "every mode" in request.reason
        assert request.can_always is False and request.always_rules == []
    assert CANARY not in _everything(kit, results)


@pytest.mark.parametrize("choice", ["allow_session", "allow_always"])
@pytest.mark.parametrize("mode", MODES)
def test_an_approved_read_shows_the_secret_once_and_grants_nothing(
        planted: Path, reins_home: AppPaths, mode: Mode, choice: Choice) -> None:
    kit = Kit(planted, reins_home, mode=mode, channel=Always(choice))
    [first] = _run(kit, ToolCall("a1", "read_file", {"path": ".ssh/id_rsa"}))
    assert not first.is_error and CANARY in first.text
    [decision] = [d for d in kit.of_type("approval_decision") if d.call_id == "a1"]
    assert decision.decision == "allow_once" and kit.gate.grants == ()
    _run(kit, ToolCall("a2", "read_file", {"path": ".ssh/id_rsa"}))
    assert [r.call_id for r in kit.of_type("approval_request")] == ["a1", "a2"]
    assert not reins_home.settings_file.exists() or "id_rsa" not in \
        reins_home.settings_file.read_text()


def test_the_approval_reason_names_the_path_and_what_it_holds(planted: Path,
                                                              reins_home: AppPaths) -> None:
    kit = Kit(planted, reins_home, mode=Mode.READ_ONLY, channel=FixedChannel("deny"))
    _run(kit, ToolCall("k", "read_file", {"path": ".ssh/id_rsa"}),
         ToolCall("e", "read_file", {"path": ".env"}))
    key, env = kit.of_type("approval_request")
    assert key.reason.startswith(f"{planted}/.ssh/id_rsa is a secret location: SSH private")
    assert "environment files" in env.reason


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", [".", "sub", "deep", "creds/..", "<absolute workspace>"])
def test_grep_never_returns_a_secrets_content(planted: Path, reins_home: AppPaths,
                                              mode: Mode, path: str) -> None:
    kit = Kit(planted, reins_home, mode=mode, channel=FixedChannel("allow_once"))
    args = {"pattern": "CANARY-7f3a9c", "path": str(planted) if path.startswith("<") else path}
    for extra in ({}, {"glob": "*"}, {"case_insensitive": True}, {"glob": "**/*"}):
        [result] = _run(kit, ToolCall("g", "grep", {**args, **extra}))
        assert not result.is_error, result
        assert CANARY not in result.text
        assert "secret location(s) not searched" in result.text
        assert "read_file one of them" in result.text
    assert kit.of_type("approval_request") == []


def test_grep_says_how_many_it_skipped_and_still_finds_plain_files(
        planted: Path, reins_home: AppPaths) -> None:
    kit = Kit(planted, reins_home, mode=Mode.READ_ONLY)
    [result] = _run(kit, ToolCall("g", "grep", {"pattern": "CANARY-7f3a9c"}))
    found = {line.split(":", 1)[0] for line in result.text.splitlines()[1:]
             if line.count(":") >= 2 and not line.startswith("[")}
    assert found == set(PLAIN)
    assert CANARY not in result.text
    folders = [".aws/", ".config/gh/", "creds/", "deep/er/.ssh/", ".kube/",
               ".local/share/keyrings/", ".mozilla/", ".ssh/"]
    files = [".bash_history", ".cargo/credentials.toml", ".env", ".envrc", ".git-credentials",
             ".npmrc", ".vault-token", "innocent.txt", "prod.env", "sub/.env.production"]
    assert f"[{len(folders) + len(files)} secret location(s) not searched: " in result.text


def test_grep_of_a_secret_itself_asks_and_an_approved_grep_searches_it(
        planted: Path, reins_home: AppPaths) -> None:
    denied = Kit(planted, reins_home, mode=Mode.READ_ONLY, channel=FixedChannel("deny"))
    [no] = _run(denied, ToolCall("g", "grep", {"pattern": "token", "path": ".aws"}))
    assert no.error_code is ErrorCode.APPROVAL_DENIED and CANARY not in _everything(denied, [no])
    allowed = Kit(planted, reins_home, mode=Mode.READ_ONLY,
                  channel=FixedChannel("allow_once"))
    [yes] = _run(allowed, ToolCall("g", "grep", {"pattern": "token", "path": ".aws"}))
    assert CANARY in yes.text
    [one] = _run(allowed, ToolCall("g2", "grep", {"pattern": "token", "path": ".env"}))
    assert CANARY in one.text


@pytest.mark.parametrize("mode", MODES)
def test_glob_and_list_directory_list_secrets_marked_without_asking(
        planted: Path, reins_home: AppPaths, mode: Mode) -> None:
    kit = Kit(planted, reins_home, mode=mode, channel=FixedChannel("deny"))
    glob, listing, inside = _run(kit, ToolCall("g", "glob", {"pattern": "**/*"}),
                                 ToolCall("l", "list_directory", {"path": "."}),
                                 ToolCall("s", "list_directory", {"path": ".ssh"}))
    assert not (glob.is_error or listing.is_error or inside.is_error)
    assert kit.of_type("approval_request") == []
    lines = glob.text.splitlines()
    for rel in SECRETS:
        assert f"{rel}  (secret)" in lines, rel
    for rel in PLAIN:
        assert rel in lines, rel
    assert "secret locations" in glob.text
    assert ".env  (" in listing.text and "(secret)" in listing.text
    assert "README.md  (" in listing.text and "README.md  (secret)" not in listing.text
    assert "id_rsa" in inside.text
    assert CANARY not in _everything(kit, [glob, listing, inside])


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.AUTO_EDIT, Mode.AUTO])
def test_writing_a_secret_asks_without_showing_its_content(planted: Path, reins_home: AppPaths,
                                                           mode: Mode) -> None:
    kit = Kit(planted, reins_home, mode=mode, channel=FixedChannel("deny"))
    results = _run(
        kit,
        ToolCall("w1", "write_file", {"path": ".env", "content": "TOKEN=new\n"}),
        ToolCall("w2", "edit_file", {"path": ".aws/credentials", "old_string": "token",
                                     "new_string": "key"}),
        ToolCall("w3", "write_file", {"path": ".ssh/authorized_keys", "content": "ssh-ed25519"}),
    )
    assert [r.error_code for r in results] == [ErrorCode.APPROVAL_DENIED] * 3
    requests = kit.of_type("approval_request")
    assert len(requests) == 3
    for request in requests:
        assert "secret location" in request.reason and "current content is not shown" in \
            request.preview
    assert "TOKEN=new" in requests[0].preview
    assert CANARY not in _everything(kit, results)
    assert (planted / ".env").read_text() == f"token = {CANARY}\n"
    assert not (planted / ".ssh" / "authorized_keys").exists()


def test_an_approved_write_of_a_secret_is_written(planted: Path, reins_home: AppPaths) -> None:
    kit = Kit(planted, reins_home, mode=Mode.AUTO_EDIT, channel=FixedChannel("allow_once"))
    [result] = _run(kit, ToolCall("w", "write_file", {"path": ".env", "content": "A=1\n"}))
    assert not result.is_error, result
    assert (planted / ".env").read_text() == "A=1\n"
