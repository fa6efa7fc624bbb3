"""settings.json has one owner, the kernel: through the real worker process, spoken to over
its pipe only. A hand edit is honoured at the next run (the model and base URL the fake
server sees); changes are validated (every bad rule, the MCP entry's own words) and written
keeping every other key; a broken file names its line; the kernel says whether a run can
start (ANTHROPIC_BASE_URL counts); a Claude Desktop file is previewed, then imported; every
session's grants are listed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel import protocol as p
from kernel.events import ApprovalRequest
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from tests.security.test_workspace_broad import Worker

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="k-owner") as server:
        yield server


@pytest.fixture
def home(quiet_home: Path) -> Path:
    """tests/conftest.py's quiet HOME, with a project folder."""
    (quiet_home / "project").mkdir()
    return quiet_home


def write(paths: AppPaths, text: str) -> None:
    paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    paths.settings_file.write_text(text)


@pytest.fixture
def start(home: Path, reins_home: AppPaths) -> Iterator[list[Worker]]:
    workers: list[Worker] = []
    yield workers
    for worker in workers:
        worker.close()


def started(workers: list[Worker]) -> Worker:
    worker = Worker()
    workers.append(worker)
    worker.wait_for(p.KernelReady)
    return worker


def snapshot(worker: Worker, count: int) -> p.SettingsSnapshot:
    return worker.wait_for(p.SettingsSnapshot, count)  # type: ignore[no-any-return]


def count(worker: Worker, kind: type[p.Message]) -> int:
    return len([m for m in worker.received if isinstance(m, kind)])


def run(worker: Worker, session_id: str, prompt: str) -> None:
    """Start a run and wait for its end (RunStatus running, then idle)."""
    seen = count(worker, p.RunStatus)
    worker.send(p.StartRun(session_id, prompt))
    assert worker.wait_for(p.RunStatus, seen + 2).state == "idle"


def new_session(worker: Worker, workspace: Path) -> p.SessionInfo:
    worker.send(p.NewSession(str(workspace), "ask"))
    loaded = worker.wait_for(p.SessionLoaded, count(worker, p.SessionLoaded) + 1)
    return loaded.info  # type: ignore[no-any-return]


def test_a_hand_edit_of_model_and_base_url_is_honoured_at_the_next_run(
        start: list[Worker], reins_home: AppPaths, home: Path,
        fake: FakeAnthropicServer) -> None:
    write(reins_home, json.dumps({"base_url": fake.base_url, "model": "model-one",
                                  "exec": {"env": ["JAVA_HOME"]}}))
    worker = started(start)
    worker.send(p.SetApiKey("k-owner"))
    first = snapshot(worker, 1)
    assert (first.model, first.path, first.can_run) == (
        "model-one", str(reins_home.settings_file), True)
    assert first.values["exec"] == {"env": ["JAVA_HOME"]}
    one = new_session(worker, home / "project")
    assert one.model == "model-one"
    fake.add(reply("first answer"))
    run(worker, one.session_id, "hello")
    assert fake.requests[-1].body["model"] == "model-one"

    # By hand, with the kernel running: the next session gets the new model, and every
    # next run goes to the new base URL. Nothing the UI sent shadows the file.
    with FakeAnthropicServer(api_key="k-owner") as other:
        write(reins_home, json.dumps({"base_url": other.base_url, "model": "model-two",
                                      "exec": {"env": ["JAVA_HOME"]}}))
        seen = count(worker, p.SettingsSnapshot)
        two = new_session(worker, home / "project")
        assert two.model == "model-two"
        pushed = snapshot(worker, seen + 1)
        assert pushed.model == "model-two" and pushed.values["base_url"] == other.base_url
        other.add(reply("second answer"), reply("third answer"))
        run(worker, two.session_id, "hello again")
        assert other.requests[-1].body["model"] == "model-two"
        run(worker, one.session_id, "and you")  # a session keeps the model it was made with
        assert other.requests[-1].body["model"] == "model-one"
        assert len(fake.requests) == 1


def test_changes_are_validated_every_problem_named_and_other_keys_kept(
        start: list[Worker], reins_home: AppPaths, home: Path) -> None:
    original = json.dumps({"model": "m1", "base_url": "http://127.0.0.1:9",
                           "exec": {"env": ["JAVA_HOME"]},
                           "models": {"local*": {"context_window": 16384}},
                           "permissions": {"deny": ["read_file(~/.ssh/**)"]}}, indent=2)
    write(reins_home, original)
    worker = started(start)
    worker.send(p.UpdateSettings((
        p.SettingChange(("permissions", "allow"), ["run_command(git status)", "run_command(",
                                                   "write_file(docs/**)", "read_file(a"]),
        p.SettingChange(("model",), "m2")), "bad-rules"))
    answer = worker.wait_for(p.SettingsSnapshot, 2)
    assert answer.request_id == "bad-rules"
    assert [pr.path for pr in answer.problems] == [("permissions", "allow", "1"),
                                                   ("permissions", "allow", "3")]
    assert all(pr.message for pr in answer.problems)
    assert reins_home.settings_file.read_text() == original, "nothing is written"

    cases = [
        ((p.SettingChange(("default_mode",), "yolo"),), ("default_mode",), "'yolo'"),
        ((p.SettingChange(("base_url",), "ftp://x"),), ("base_url",), "does not match"),
        ((p.SettingChange(("mcpServers", "x"), {"command": "a", "url": "http://b"}),),
         ("mcpServers", "x"), "exactly one of"),
        ((p.SettingChange(("mcpServers", "y"), {"command": "a", "autoApprove": []}),),
         ("mcpServers", "y"), "'autoApprove'"),
        ((p.SettingChange(("mcpServers", "t"), {"url": "https://e/mcp",
                                                "tool_timeout_s": 0}),),
         ("mcpServers", "t"), "above 0"),
        ((p.SettingChange(("model", "deeper"), "x"),), (), "model is not an object"),
        ((p.SettingChange(("modle",), "x"),), ("modle",), "'modle'"),
    ]
    for i, (changes, path, words) in enumerate(cases):
        worker.send(p.UpdateSettings(changes, f"case-{i}"))
        got = worker.wait_for(p.SettingsSnapshot, 3 + i)
        assert got.request_id == f"case-{i}"
        assert [pr.path for pr in got.problems] == [path], got.problems
        assert words in got.problems[0].message, got.problems[0].message
    assert reins_home.settings_file.read_text() == original

    seen = count(worker, p.SettingsSnapshot)
    good = (p.SettingChange(("model",), "m2"), p.SettingChange(("base_url",), remove=True),
            p.SettingChange(("permissions", "allow"), ["run_command(git status)"]),
            p.SettingChange(("mcpServers", "time"), {"command": "/bin/true",
                                                     "disabled": True}))
    worker.send(p.UpdateSettings(good, "check", check_only=True))
    checked = worker.wait_for(p.SettingsSnapshot, seen + 1)
    assert (checked.request_id, checked.problems) == ("check", ())
    assert reins_home.settings_file.read_text() == original, "a check writes nothing"
    worker.send(p.UpdateSettings(good, "save"))
    saved = worker.wait_for(p.SettingsSnapshot, seen + 2)
    assert (saved.request_id, saved.problems, saved.model) == ("save", (), "m2")
    on_disk = json.loads(reins_home.settings_file.read_text())
    assert on_disk == {"model": "m2", "exec": {"env": ["JAVA_HOME"]},
                       "models": {"local*": {"context_window": 16384}},
                       "permissions": {"deny": ["read_file(~/.ssh/**)"],
                                       "allow": ["run_command(git status)"]},
                       "mcpServers": {"time": {"command": "/bin/true", "disabled": True}}}
    assert saved.values == on_disk
    worker.send(p.UpdateSettings((p.SettingChange(("mcpServers", "time"), remove=True),),
                                 "remove"))
    removed = worker.wait_for(p.SettingsSnapshot, seen + 3)
    assert removed.problems == () and removed.values["mcpServers"] == {}

    # A hand edit that breaks the file: its line is named, nothing runs, nothing is written.
    worker.send(p.SetApiKey("k"))
    assert snapshot(worker, seen + 4).can_run
    broken = '{\n  "model": "m1",\n  "default_mode": "yolo"\n}\n'
    write(reins_home, broken)
    worker.send(p.GetSettings())
    got = snapshot(worker, seen + 5)
    assert got.line == 3 and ":3: " in got.error and "yolo" in got.error
    assert not got.can_run and "cannot be used" in got.cannot_run and got.values == {}
    worker.send(p.UpdateSettings((p.SettingChange(("model",), "m2"),), "r"))
    refused = snapshot(worker, seen + 6)
    assert refused.problems[0].line == 3 and "cannot be used" in refused.problems[0].message
    assert reins_home.settings_file.read_text() == broken
    # A settings.json that cannot be read or written: said in the answer, nothing lost.
    reins_home.settings_file.unlink()
    reins_home.settings_file.mkdir()
    worker.send(p.UpdateSettings((p.SettingChange(("model",), "m3"),), "unwritable"))
    unwritable = snapshot(worker, seen + 7)
    assert unwritable.request_id == "unwritable"
    assert "could not be changed" in unwritable.problems[0].message
    assert "cannot be read" in unwritable.error
    reins_home.settings_file.rmdir()
    write(reins_home, broken)
    worker.send(p.NewSession(str(home / "project"), "ask"))
    session = worker.wait_for(p.SessionLoaded).info
    worker.send(p.StartRun(session.session_id, "hi"))
    failed = worker.wait_for(p.CommandFailed)
    assert "settings.json cannot be used" in failed.message and ":3:" in failed.message


def test_the_kernel_says_whether_a_run_can_start(start: list[Worker]) -> None:
    worker = started(start)
    first = snapshot(worker, 1)
    assert not first.can_run
    assert "API key" in first.cannot_run and "ANTHROPIC_BASE_URL" in first.cannot_run
    worker.send(p.SetApiKey("k"))
    assert (snapshot(worker, 2).can_run, snapshot(worker, 2).cannot_run) == (True, "")


def test_tools_the_registry_refuses_stop_runs_until_fixed(
        start: list[Worker], reins_home: AppPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    step = {"tool": "write_file", "args": {"path": "/input/path"}}
    tools = {"composites": {"save": {"description": "Save", "steps": [step]}}}
    write(reins_home, json.dumps({"tools": tools}))
    worker = started(start)
    first = snapshot(worker, 1)
    assert not first.can_run and "write_file requires ['content']" in first.error
    step["const"] = {"content": "x"}
    write(reins_home, json.dumps({"tools": tools}, indent=1))
    worker.send(p.GetSettings())
    fixed = snapshot(worker, 2)
    assert (fixed.can_run, fixed.error) == (True, "")


def test_anthropic_base_url_alone_lets_a_run_start(
        start: list[Worker], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    first = snapshot(started(start), 1)
    assert (first.can_run, first.cannot_run) == (True, "")


def test_a_claude_desktop_file_is_previewed_then_imported_never_overwriting(
        start: list[Worker], reins_home: AppPaths, home: Path) -> None:
    mine = {"command": "/bin/true", "args": ["mine"], "disabled": True}
    write(reins_home, json.dumps({"model": "m", "mcpServers": {"git": mine}}))
    claude = home / ".config" / "Claude" / "claude_desktop_config.json"
    claude.parent.mkdir(parents=True)
    claude.write_text(json.dumps({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"]},
        "time": {"command": "/bin/true", "args": ["--tz", "UTC"], "disabled": True},
        "web": {"url": "http://127.0.0.1:9/mcp", "disabled": True}}}))
    worker = started(start)
    assert snapshot(worker, 1).claude_config == str(claude)
    worker.send(p.ImportMcpServers(str(claude)))
    plan = worker.wait_for(p.McpImportPlan)
    assert (plan.added, plan.runs, plan.conflicts, plan.written, plan.error) == (
        ("time", "web"), ("/bin/true --tz UTC", "http://127.0.0.1:9/mcp"), ("git",), False, "")
    assert json.loads(reins_home.settings_file.read_text())["mcpServers"] == {"git": mine}

    worker.send(p.ImportMcpServers(str(claude), write=True))
    done = worker.wait_for(p.McpImportPlan, 2)
    assert done.written and done.added == ("time", "web")
    on_disk = json.loads(reins_home.settings_file.read_text())
    assert on_disk["model"] == "m" and on_disk["mcpServers"]["git"] == mine
    assert set(on_disk["mcpServers"]) == {"git", "time", "web"}
    worker.send(p.ImportMcpServers(str(claude)))
    again = worker.wait_for(p.McpImportPlan, 3)
    assert again.added == () and set(again.unchanged) == {"time", "web"}

    bad = home / "broken.json"
    for i, (text, words) in enumerate([
            ('{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}', "line 4"),
            ('{"mcpServers": {"x": {"args": []}}}', "mcpServers.x"),
            ('{"mcpServers": {"x": {"command": "a", "autoApprove": ["*"]}}}', "autoApprove")]):
        bad.write_text(text)
        worker.send(p.ImportMcpServers(str(bad), write=True))
        refused = worker.wait_for(p.McpImportPlan, 4 + i)
        assert words in refused.error and not refused.written, refused.error
    worker.send(p.ImportMcpServers(str(home / "missing.json")))
    assert "cannot read" in worker.wait_for(p.McpImportPlan, 7).error
    assert set(json.loads(reins_home.settings_file.read_text())["mcpServers"]) == {
        "git", "time", "web"}


def test_every_sessions_grants_are_listed_and_an_always_rule_revoked_without_a_session(
        start: list[Worker], reins_home: AppPaths, home: Path,
        fake: FakeAnthropicServer) -> None:
    write(reins_home, json.dumps({"base_url": fake.base_url,
                                  "permissions": {"allow": ["write_file(docs/**)"]}}))
    worker = started(start)
    worker.send(p.SetApiKey("k-owner"))
    sessions = [new_session(worker, home / "project") for _ in range(2)]
    for i, session in enumerate(sessions):
        worker.send(p.RenameSession(session.session_id, f"session {i}"))
        fake.add(reply(ToolUse("run_command", {"command": f"echo s{i}"})), reply("ok"))
        seen, runs = count(worker, p.EventMessage), count(worker, p.RunStatus)
        worker.send(p.StartRun(session.session_id, "go"))
        while not isinstance((request := worker.wait_for(p.EventMessage, seen + 1).event),
                             ApprovalRequest):
            seen += 1
        worker.send(p.ApprovalAnswer(session.session_id, request.call_id, "allow_session"))
        assert worker.wait_for(p.RunStatus, runs + 2).state == "idle"
    worker.send(p.ListAllGrants())
    listed = worker.wait_for(p.GrantList, count(worker, p.GrantList) + 1)
    rows = {(g.rule, g.scope, g.session_id, g.session_title) for g in listed.grants}
    assert rows == {
        ("run_command(echo s0)", "session", sessions[0].session_id, "session 0"),
        ("run_command(echo s1)", "session", sessions[1].session_id, "session 1"),
        ("write_file(docs/**)", "always", "", "")}
    worker.send(p.RevokeGrant("", "write_file(docs/**)", "always"))
    after = worker.wait_for(p.GrantList, count(worker, p.GrantList) + 1)
    assert after.session_id == "" and [g.scope for g in after.grants] == ["session", "session"]
    assert json.loads(reins_home.settings_file.read_text())["permissions"]["allow"] == []
