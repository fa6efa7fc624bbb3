"""The sandbox made ahead (kernel.sandbox.standby): used when nothing changed, never otherwise.

Real bubblewrap, real processes. Between two commands the event loop idles, as it does in
Reins while the model writes its next turn; the host then changes what the second sandbox
would be made from, and the second command must see the change (and the protections it
implies) exactly as if no sandbox had been made ahead.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from kernel.sandbox import executor as executor_module
from kernel.sandbox import standby
from kernel.sandbox.executor import CommandExecutor, CommandOutcome
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore

IDLE_S = 0.1
"""The untimed pause between two commands (the model's turn)."""


def waiting_sandboxes(workspace: Path) -> list[psutil.Process]:
    """Our bubblewrap children made for `workspace` that wait for a command."""
    found = []
    for child in psutil.Process().children():
        try:
            cmdline = child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if cmdline and cmdline[0].endswith("bwrap") and str(workspace) in cmdline:
            found.append(child)
    return found


def two_commands(
    executor: CommandExecutor, workspace: Path, outputs: OutputStore, first: str, second: str,
    between: Callable[[], None] = lambda: None, **second_kwargs: Any,
) -> tuple[CommandOutcome, CommandOutcome, str]:
    """Run `first`, idle, call `between`, run `second`: (outcomes, output of the second)."""

    async def run() -> tuple[CommandOutcome, CommandOutcome]:
        with outputs.spool("first") as spool:
            one = await executor.run(first, workspace=workspace, spool=spool, timeout_s=30)
        await asyncio.sleep(IDLE_S)
        between()
        second_kwargs.setdefault("workspace", workspace)
        with outputs.spool("second") as spool:
            two = await executor.run(second, spool=spool, timeout_s=30, **second_kwargs)
        return one, two

    one, two = asyncio.run(run())
    return one, two, two.spool_path.read_text()


def test_the_next_command_runs_in_the_sandbox_made_ahead_and_gets_a_fresh_one(
        executor: CommandExecutor, workspace: Path, outputs: OutputStore) -> None:
    one, two, text = two_commands(
        executor, workspace, outputs,
        "echo left > /tmp/left-over; echo kept > in-workspace",
        'test -e /tmp/left-over && echo old-tmp || echo fresh-tmp; cat in-workspace; '
        'echo "$PWD|$HOME"')
    assert not one.made_ahead and two.made_ahead
    assert two.exit_code == 0
    assert text.splitlines() == [  # the first command's /tmp is not this one's
        "fresh-tmp", "kept", f"{workspace}|{executor.paths.sandbox_home_for(workspace).resolve()}"]


@pytest.mark.parametrize("change", [
    "git-config-replaced", "git-created", "workspace-replaced", "settings-changed",
    "other-cwd", "network", "sandbox-died",
])
def test_a_sandbox_made_ahead_is_not_used_once_what_it_was_made_from_changed(
        change: str, executor: CommandExecutor, workspace: Path, outputs: OutputStore,
        monkeypatch: pytest.MonkeyPatch) -> None:
    git = workspace / ".git"
    if change == "git-config-replaced":
        (git / "hooks").mkdir(parents=True)
        (git / "config").write_text("[core]\n")
    (workspace / "sub").mkdir()
    monkeypatch.setenv("REINS_TEST_SETTING", "on")
    kwargs: dict[str, Any] = {}
    second = "echo ran"

    def between() -> None:
        assert len(waiting_sandboxes(workspace)) == 1  # one was made: the change must matter
        if change == "git-config-replaced":  # how git writes it: a new file renamed over
            (git / "config.lock").write_text("[core]\n\tbare = false\n")
            os.replace(git / "config.lock", git / "config")
        elif change == "git-created":
            (git / "hooks").mkdir(parents=True)
            (git / "config").write_text("[core]\n")
        elif change == "workspace-replaced":
            shutil.rmtree(workspace)
            workspace.mkdir()
            (workspace / "new-file").write_text("")
        elif change == "settings-changed":
            executor.settings = ExecSettings(grace_s=0.5, env_passthrough=("REINS_TEST_SETTING",))
        elif change == "sandbox-died":
            for waiting in waiting_sandboxes(workspace):
                waiting.send_signal(signal.SIGKILL)
                waiting.wait(5)

    if change in ("git-config-replaced", "git-created"):
        second = ("echo evil >> .git/config; mkdir -p .git/hooks; "
                  "echo evil > .git/hooks/pre-commit; echo ran")
    elif change == "workspace-replaced":
        second = "ls; echo ran"
    elif change == "settings-changed":
        second = 'echo "setting=$REINS_TEST_SETTING"; echo ran'
    elif change == "other-cwd":
        kwargs["cwd"] = workspace / "sub"
        second = "pwd; echo ran"
    elif change == "network":
        kwargs["network"] = True
    _one, two, text = two_commands(executor, workspace, outputs, "true", second, between,
                                   **kwargs)
    assert not two.made_ahead, text
    assert "ran" in text.splitlines()
    if change in ("git-config-replaced", "git-created"):
        assert "evil" not in (git / "config").read_text()
        assert not (git / "hooks" / "pre-commit").exists()
        assert "Read-only file system" in text
    elif change == "workspace-replaced":
        assert "new-file" in text.splitlines()
    elif change == "settings-changed":
        assert "setting=on" in text.splitlines()
    elif change == "other-cwd":
        assert str(workspace / "sub") in text.splitlines()
    elif change == "network":
        assert two.network


def test_a_fingerprint_changes_with_the_mount_table_and_with_a_replaced_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "mountinfo"
    table.write_text("22 27 0:21 / /proc rw - proc proc rw\n")
    monkeypatch.setattr(standby, "MOUNT_TABLE", str(table))
    protected = tmp_path / "config"
    protected.write_text("a")
    argv = ["/usr/bin/bwrap", "--ro-bind", str(protected), str(protected), "--", "/bin/sh"]
    env = {"PATH": "/usr/bin"}
    made = standby.fingerprint(argv, env)
    assert standby.fingerprint(argv, env) == made
    assert standby.fingerprint(argv, {"PATH": "/bin"}) != made
    table.write_text(table.read_text() + "90 27 8:1 / /media/usb rw - ext4 /dev/sdb1 rw\n")
    assert standby.fingerprint(argv, env) != made
    table.write_text("22 27 0:21 / /proc rw - proc proc rw\n")
    replacement = tmp_path / "config.new"
    replacement.write_text("a")
    os.replace(replacement, protected)
    assert standby.fingerprint(argv, env) != made


def test_a_sandbox_made_ahead_runs_nothing_and_ends_with_its_executor(
        reins_home, sandbox_status, workspace: Path, outputs: OutputStore,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def made_ahead() -> CommandExecutor:
        ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5))

        async def one_then_the_models_turn() -> None:
            with outputs.spool("first") as spool:
                await ex.run("true", workspace=workspace, spool=spool, timeout_s=30)
            await asyncio.sleep(IDLE_S)

        asyncio.run(one_then_the_models_turn())
        [waiting] = waiting_sandboxes(workspace)
        below = [p.name() for p in waiting.children(recursive=True)]
        assert below == ["bwrap"]  # its sandbox's init, still waiting: no shell, no command
        return ex

    ex = made_ahead()
    ex.shutdown()
    assert waiting_sandboxes(workspace) == []
    ex = made_ahead()
    del ex
    gc.collect()
    assert waiting_sandboxes(workspace) == []

    monkeypatch.setattr(executor_module, "IDLE_S", 0.05)
    ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5))

    async def idle_too_long() -> None:
        with outputs.spool("first") as spool:
            await ex.run("true", workspace=workspace, spool=spool, timeout_s=30)
        made: list[psutil.Process] = []
        for _ in range(400):  # made once the quick command has ended: a few turns later
            made = waiting_sandboxes(workspace)
            if made:
                break
            await asyncio.sleep(0.005)
        [waiting] = made
        await asyncio.sleep(0.3)
        assert not waiting.is_running()  # ended (and reaped) after its idle time
        assert waiting_sandboxes(workspace) == []

    asyncio.run(idle_too_long())
    ex.shutdown()


def test_prepare_makes_the_first_commands_sandbox_ahead(
        executor: CommandExecutor, workspace: Path, outputs: OutputStore) -> None:
    async def run() -> CommandOutcome:
        executor.prepare(workspace)
        await asyncio.sleep(IDLE_S)
        with outputs.spool("first") as spool:
            return await executor.run("echo first", workspace=workspace, spool=spool,
                                      timeout_s=30)

    outcome = asyncio.run(run())
    assert outcome.made_ahead and outcome.exit_code == 0
    assert outcome.spool_path.read_text() == "first\n"


TRICKY = "printf '%s|' \"$0\" \"$#\" 'it'\"'\"'s' \"a\\\\b\" $((6*7)); cat; echo\nexit 3"
"""$0 and $# as under `sh -c`, nested quotes, a backslash, two lines, stdin at its end."""


@pytest.mark.parametrize("how", ["made-ahead", "on-demand", "unsandboxed"])
def test_a_command_reaches_the_shell_exactly_as_written(
        how: str, executor: CommandExecutor, bare_executor: CommandExecutor, workspace: Path,
        outputs: OutputStore, reins_home) -> None:
    ex = {"made-ahead": executor, "unsandboxed": bare_executor}.get(how) or CommandExecutor(
        reins_home, ExecSettings(grace_s=0.5), ahead=False)
    kwargs = {"allow_unsandboxed": True} if how == "unsandboxed" else {}
    long_word = "x" * 100_000

    async def run() -> list[CommandOutcome]:
        outcomes = []
        for index, command in enumerate((TRICKY, f"echo {long_word} | wc -c")):
            if how == "made-ahead":
                with outputs.spool(f"warm-{index}") as spool:
                    await ex.run("true", workspace=workspace, spool=spool, timeout_s=30)
                await asyncio.sleep(IDLE_S)
            with outputs.spool(f"call-{index}") as spool:
                outcomes.append(await ex.run(command, workspace=workspace, spool=spool,
                                             timeout_s=30, **kwargs))
        return outcomes

    tricky, long = asyncio.run(run())
    assert tricky.made_ahead == long.made_ahead == (how == "made-ahead")
    assert tricky.exit_code == 3
    assert tricky.spool_path.read_text() == "/bin/sh|0|it's|a\\b|42|\n"
    assert long.exit_code == 0 and long.spool_path.read_text().strip() == "100001"


def test_a_sandbox_made_ahead_holds_the_process_limit_and_leaves_no_cgroup(
        reins_home, workspace: Path, sandbox_status) -> None:
    """Where the process limit is a pids cgroup (root), a sandbox made ahead joins it while it
    waits; the limit holds for its command, and every cgroup is gone with the executor."""
    from kernel.sandbox.limits import ResourceLimits
    from kernel.sandbox.pids import usable_hierarchy

    hierarchy = usable_hierarchy() if sandbox_status.process_limit == "cgroup" else None
    if hierarchy is None:
        pytest.skip("the process limit here is RLIMIT_NPROC (tests/sandbox/test_sandbox_limits.py)")
    executor = CommandExecutor(reins_home, ExecSettings(
        limits=ResourceLimits(processes=16), grace_s=0.5))
    outputs = OutputStore.for_session(reins_home, "s")
    storm = "for i in $(seq 40); do sleep 5 & done; wait; echo all-started"
    try:
        _one, two, text = two_commands(executor, workspace, outputs, "true", storm)
    finally:
        executor.shutdown()
    assert two.made_ahead, two
    assert two.stopped == "stopped: process limit 16 reached", two
    assert "all-started" not in text
    mine = [e.name for e in hierarchy.root.iterdir()
            if e.is_dir() and e.name.startswith(f"{os.getpid()}-")]
    assert mine == []


@pytest.mark.parametrize(("command", "ahead_after_s", "made_while_it_runs"), [
    ("sleep 0.6", 0.05, True),  # a long command: its successor's sandbox is ready when it ends
    ("true", 5.0, False),       # a quick one: made after it (not while it starts and ends)
    ("sleep 0.01", 5.0, False),
])
def test_when_the_next_sandbox_is_made(executor: CommandExecutor, workspace: Path,
                                       outputs: OutputStore, command: str, ahead_after_s: float,
                                       made_while_it_runs: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """What is "quick" is set far from the command's length either way: under load a
    `sleep 0.01` ran past the 50 ms mark and its successor was (rightly) made meanwhile."""
    monkeypatch.setattr("kernel.sandbox.executor.AHEAD_AFTER_S", ahead_after_s)

    async def run() -> tuple[int, int]:
        with outputs.spool("first") as spool:
            task = asyncio.ensure_future(executor.run(command, workspace=workspace,
                                                      spool=spool, timeout_s=30))
            during = 0
            while not task.done():
                running = {live.proc.pid for live in executor._live}
                during = max(during, len([p for p in waiting_sandboxes(workspace)
                                          if p.pid not in running]))
                await asyncio.sleep(0.01)
            assert (await task).exit_code == 0
        for _ in range(400):
            if waiting_sandboxes(workspace):
                break
            await asyncio.sleep(0.005)
        return during, len(waiting_sandboxes(workspace))

    during, after = asyncio.run(run())
    assert (during, after) == (int(made_while_it_runs), 1)


def test_a_sandbox_made_ahead_with_pinned_links_is_used_and_only_where_it_fits(
        executor: CommandExecutor, workspace: Path, outputs: OutputStore,
        tmp_path: Path) -> None:
    """A workspace with protected links gets a sandbox with the pin stage (kernel.sandbox.pin),
    made ahead like any; one made for a workspace without links does not fit it, nor the
    other way round (that raised in the fit check before)."""
    (workspace / "shared").mkdir()
    (workspace / ".vscode").symlink_to("shared")
    plain = tmp_path / "plain"
    plain.mkdir()

    async def run() -> list[tuple[int | None, bool, str]]:
        done = []
        for index, where in enumerate([workspace, workspace, plain, workspace, plain, plain]):
            await asyncio.sleep(IDLE_S)
            with outputs.spool(f"c{index}") as spool:
                outcome = await executor.run("rm .vscode 2>/dev/null; readlink .vscode || true",
                                             workspace=where, spool=spool, timeout_s=30)
            done.append((outcome.exit_code, outcome.made_ahead,
                         outcome.spool_path.read_text().strip()))
        return done

    done = asyncio.run(run())
    assert [code for code, _, _ in done] == [0] * 6, done
    assert [text for _, _, text in done] == ["shared", "shared", "", "shared", "", ""], done
    assert [ahead for _, ahead, _ in done] == [False, True, False, False, False, True], done
    assert os.readlink(workspace / ".vscode") == "shared"


def _limits(text: str) -> dict[str, tuple[str, str]]:
    """/proc/self/limits' rows: name → (soft, hard)."""
    return {line[:26].strip(): tuple(line[26:].split()[:2])  # type: ignore[misc]
            for line in text.splitlines()[1:]}


def test_a_transaction_made_ahead_is_staged_before_its_command_with_the_calls_limits(
        reins_home, sandbox_status, workspace: Path, outputs: OutputStore) -> None:
    """A transaction's sandbox made ahead has its overlay mounted and its stage waiting
    before the command comes; the command still gets its own call's CPU limit (from its
    timeout) and every other limit, and writes only to its upper layer."""
    ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5), transactions=True)

    async def run() -> tuple[CommandOutcome, list[str], CommandOutcome]:
        with outputs.spool("first") as spool:
            first = await ex.run("true", workspace=workspace, spool=spool, timeout_s=30)
        await asyncio.sleep(IDLE_S * 3)
        [waiting] = waiting_sandboxes(workspace)
        below = [p.name() for p in waiting.children(recursive=True)]
        with outputs.spool("second") as spool:
            second = await ex.run("cat /proc/self/limits; echo new > made-here", spool=spool,
                                  workspace=workspace, timeout_s=17)
        return first, below, second

    try:
        first, below, second = asyncio.run(run())
    finally:
        ex.shutdown()
    assert below == ["bwrap", "sh"]  # init, and the stage waiting (the overlay mounted)
    assert second.made_ahead and second.exit_code == 0
    rows = _limits(second.spool_path.read_text())
    assert rows["Max cpu time"] == ("17", "22")
    assert rows["Max processes"] == ("512", "512")
    assert rows["Max file size"][0] == rows["Max file size"][1] != "unlimited"
    assert not (workspace / "made-here").exists()
    assert second.transaction is not None
    assert (second.transaction / "upper" / "made-here").read_text() == "new\n"
    for outcome in (first, second):
        if outcome.transaction is not None:
            executor_module.remove_transaction(outcome.transaction)


def test_a_staged_sandbox_made_ahead_with_other_limits_is_not_used(
        reins_home, sandbox_status, workspace: Path, outputs: OutputStore) -> None:
    """Its limits were set before its command came: a change of them since ends it."""
    ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5), transactions=True)

    def fewer() -> None:
        ex.settings = ExecSettings(grace_s=0.5, limits=ResourceLimits(processes=77))

    try:
        one, two, text = two_commands(ex, workspace, outputs, "true",
                                      "grep 'Max processes' /proc/self/limits", fewer)
    finally:
        ex.shutdown()
    assert not two.made_ahead
    assert text.split()[2:4] == ["77", "77"]
    for outcome in (one, two):
        if outcome.transaction is not None:
            executor_module.remove_transaction(outcome.transaction)
