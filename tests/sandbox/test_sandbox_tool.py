"""run_command through the real registry and dispatcher, over real bubblewrap."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.builtin.command import make_run_command
from kernel.tools.dispatch import Dispatcher, GateOutcome
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ErrorCode, Progress, Risk, ToolCall, ToolResult, ToolSpec
from tests.sandbox.sandbox_helpers import MISSING

SESSION = "tool-tests"


class FixedGate:
    """Answers every call the same way (standing in for the user's decision)."""

    def __init__(self, outcome: GateOutcome) -> None:
        self.outcome = outcome

    async def authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any]
    ) -> GateOutcome:
        return self.outcome


class Progresses:
    def __init__(self) -> None:
        self.seen: list[Progress] = []

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        return None

    def progress(self, progress: Progress) -> None:
        self.seen.append(progress)

    def call_finished(self, call: ToolCall, result: ToolResult) -> None:
        return None


def dispatch(
    paths: AppPaths,
    workspace: Path,
    arguments: dict[str, Any],
    *,
    settings: ExecSettings | None = None,
    gate: GateOutcome | None = None,
    observer: Progresses | None = None,
    call_id: str = "call-1",
) -> ToolResult:
    executor = CommandExecutor(paths, settings or ExecSettings(grace_s=0.5))
    dispatcher = Dispatcher(
        ToolRegistry([make_run_command(executor)]),
        session_id=SESSION,
        workspace=workspace,
        outputs=OutputStore.for_session(paths, SESSION),
        path_policy=PathPolicy(workspace, app_paths=paths),
        gate=FixedGate(gate or GateOutcome(allowed=True)),
        observer=observer,
    )
    try:
        return asyncio.run(dispatcher.dispatch(ToolCall(call_id, "run_command", arguments)))
    finally:
        executor.shutdown()


@pytest.fixture
def run_tool(reins_home: AppPaths, workspace: Path, sandbox_status):
    def run(arguments: dict[str, Any], **kwargs: Any) -> ToolResult:
        return dispatch(reins_home, workspace, arguments, **kwargs)

    return run


def test_spec_shape(reins_home: AppPaths) -> None:
    spec = make_run_command(CommandExecutor(reins_home))
    assert spec.name == "run_command" and spec.risk is Risk.EXECUTE
    assert not spec.concurrent_safe and spec.timeout_s > 600
    props = spec.input_schema["properties"]
    assert spec.input_schema["required"] == ["command"]
    assert props["timeout_s"]["minimum"] == 1 and props["timeout_s"]["maximum"] == 600
    assert props["timeout_s"]["default"] == 120
    assert spec.input_schema["additionalProperties"] is False
    assert spec.summarize({"command": "git   status"}) == "git status"


def test_success_starts_with_exit_code_and_duration(run_tool) -> None:
    result = run_tool({"command": "echo hello"})
    assert not result.is_error and result.error_code is None
    first, *rest = result.text.splitlines()
    assert first.startswith("exit code 0 · ") and " s · sandbox: bwrap · network: off" in first
    assert "hello" in rest


def test_non_zero_exit_is_an_error_with_the_output(run_tool) -> None:
    result = run_tool({"command": "echo oops >&2; exit 3"})
    assert result.is_error and result.error_code is ErrorCode.EXECUTION_ERROR
    assert result.text.startswith("exit code 3 · ") and "oops" in result.text


def test_unparsable_command_is_refused_and_never_run(run_tool, workspace: Path) -> None:
    result = run_tool({"command": 'touch ran.txt; echo "unclosed'})
    assert result.is_error and result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "cannot be parsed" in result.text
    assert not (workspace / "ran.txt").exists()


@pytest.mark.parametrize(
    "arguments",
    [{"command": ""}, {"command": "ls", "timeout_s": 0}, {"command": "ls", "timeout_s": 601},
     {"command": "ls", "extra": 1}, {}],
)
def test_schema_violations(run_tool, arguments: dict[str, Any]) -> None:
    result = run_tool(arguments)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS


def test_cwd_is_resolved_by_the_path_policy(run_tool, workspace: Path) -> None:
    (workspace / "sub" / "dir").mkdir(parents=True)
    result = run_tool({"command": "pwd", "cwd": "sub/dir"})
    assert str(workspace / "sub" / "dir") in result.text and not result.is_error
    outside = run_tool({"command": "pwd", "cwd": "/etc"})
    assert outside.is_error and outside.error_code is ErrorCode.PERMISSION_DENIED
    missing = run_tool({"command": "pwd", "cwd": "nope"})
    assert missing.is_error


def test_timeout_keeps_partial_output(run_tool) -> None:
    result = run_tool({"command": "echo before; sleep 30; echo AFTER", "timeout_s": 1})
    assert result.is_error and result.error_code is ErrorCode.TIMEOUT
    assert "timed out after 1 s" in result.text and "before" in result.text
    assert "AFTER" not in result.text


def test_large_output_is_previewed_with_a_pointer(run_tool, reins_home: AppPaths) -> None:
    result = run_tool({"command": "seq 1 300000"})
    assert not result.is_error and result.externalized_path is not None
    full = Path(result.externalized_path)
    assert full == reins_home.tool_results_dir(SESSION) / "call-1.txt"
    assert full.read_text().splitlines()[-1] == "300000"
    assert "omitted; full output at" in result.text
    assert result.text.rstrip().endswith("300000")
    assert len(result.text) <= 30_000
    assert result.output_bytes == full.stat().st_size


def test_preview_strips_ansi_and_replaces_invalid_utf8(run_tool) -> None:
    result = run_tool({"command": "printf '\\033[31mred\\033[0m \\377 ok\\n'"})
    assert "red" in result.text and "\x1b" not in result.text
    assert "\ufffd ok" in result.text


def test_withheld_variables_are_named(run_tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-canary")
    result = run_tool({"command": "echo token=$GITHUB_TOKEN"})
    assert "token=\n" in result.text + "\n" and "ghp-canary" not in result.text
    assert "withheld environment variables" in result.text and "GITHUB_TOKEN" in result.text


def test_progress_is_emitted_while_running(run_tool, reins_home: AppPaths) -> None:
    observer = Progresses()
    run_tool({"command": "echo first; sleep 1.2; echo second"}, observer=observer)
    assert observer.seen and all(p.call_id == "call-1" for p in observer.seen)
    assert any(p.last_line == "first" for p in observer.seen)
    spool = OutputStore.for_session(reins_home, SESSION).path_for("call-1")
    assert {p.output_path for p in observer.seen} == {str(spool)}  # what the UI opens


def test_network_only_when_allowed(run_tool) -> None:
    result = run_tool({"command": "true"}, gate=GateOutcome(allowed=True, network=True))
    assert "network: internet" in result.text.splitlines()[0]


def test_no_sandbox_refuses_unless_the_user_approved_the_call(
    reins_home: AppPaths, workspace: Path
) -> None:
    settings = ExecSettings(bwrap=MISSING, grace_s=0.5)
    refused = dispatch(reins_home, workspace, {"command": "touch ran.txt"}, settings=settings)
    assert refused.is_error and refused.error_code is ErrorCode.SANDBOX_UNAVAILABLE
    assert "sandbox: none" in refused.text and "apt-get install bubblewrap" in refused.text
    assert not (workspace / "ran.txt").exists()
    approved = dispatch(
        reins_home, workspace, {"command": "touch ran.txt; echo done"}, settings=settings,
        gate=GateOutcome(allowed=True, user_approved=True), call_id="call-2",
    )
    assert not approved.is_error and "sandbox: none · network: host" in approved.text
    assert (workspace / "ran.txt").exists()


@pytest.mark.parametrize("command", ["touch ran.txt; echo \ud800", "touch ran.txt\x00"],
                         ids=["lone-surrogate", "nul"])
def test_a_command_that_is_not_text_is_refused_and_never_run(
        run_tool, workspace: Path, command: str) -> None:
    """JSON can carry a lone surrogate (`"\\ud800"`); no shell can receive it."""
    result = run_tool({"command": command})
    assert result.is_error and result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "was not run" in result.text
    assert not (workspace / "ran.txt").exists()


def test_the_model_is_told_what_was_undone(run_tool, workspace: Path,
                                          reins_home: AppPaths) -> None:
    result = run_tool({"command": "mkdir -p a/.vscode && echo '{}' > a/.vscode/tasks.json "
                                  "&& for n in $(seq 20); do mkdir -p d$n && "
                                  "echo x > d$n/.envrc; done; echo made"})
    assert not result.is_error and "made" in result.text
    header = result.text.rsplit("\nmade", 1)[0]
    assert "undone by Reins" in header and "write_file" in header
    assert "a/.vscode (.vscode/**): moved to " in header
    assert "… and 9 more" in header
    assert not (workspace / "a" / ".vscode").exists() and not (workspace / "d1/.envrc").exists()
    quarantined = list((reins_home.data / "quarantine").glob("*/a/.vscode/tasks.json"))
    assert len(quarantined) == 1 and quarantined[0].read_text() == "{}\n"


def test_the_model_is_told_which_links_are_fixed_in_place(run_tool, workspace: Path) -> None:
    """A command cannot remove or replace a protected link (it is a mount point in the
    sandbox); the model is told why `rm` said 'Device or resource busy'."""
    (workspace / "shared").mkdir()
    (workspace / ".vscode").symlink_to("shared")
    (workspace / "envrc-real").write_text("A=1\n")
    (workspace / ".envrc").symlink_to("envrc-real")
    result = run_tool({"command": "mkdir evil; rm .vscode; ln -sfn evil .vscode; "
                                  "mv .envrc gone; test -L .vscode && test -L .envrc && exit 3"})
    assert result.is_error and result.text.startswith("exit code 3 ")
    assert ("fixed in place by Reins while the command ran (links git or an editor follows; "
            "removing, renaming or replacing them fails with 'Device or resource busy'): "
            ".envrc, .vscode\n") in result.text
    assert "undone by Reins" not in result.text
    assert os.readlink(workspace / ".vscode") == "shared"
    assert os.readlink(workspace / ".envrc") == "envrc-real"
    quiet = run_tool({"command": "echo fine"})
    assert not quiet.is_error and "fixed in place" not in quiet.text


def test_a_cancelled_command_is_undone_too(reins_home: AppPaths, workspace: Path,
                                           sandbox_status) -> None:
    async def main() -> None:
        executor = CommandExecutor(reins_home, ExecSettings(grace_s=0.2))
        cancel = asyncio.Event()
        outputs = OutputStore.for_session(reins_home, SESSION)
        with outputs.spool("c1") as spool:
            task = asyncio.ensure_future(executor.run(
                "mkdir -p x/.git/hooks; echo evil > x/.git/hooks/pre-commit; echo .; sleep 30",
                workspace=workspace, spool=spool, timeout_s=60, cancel=cancel))
            while not spool.path.exists() or not spool.path.read_text():
                await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        executor.shutdown()

    asyncio.run(main())
    assert not (workspace / "x" / ".git" / "hooks").exists()
