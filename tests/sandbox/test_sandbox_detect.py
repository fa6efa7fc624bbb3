"""Sandbox detection, the fail-closed refusal, the doctor report, hardening, bwrap argv."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.bwrap import bwrap_argv
from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.doctor import report, view_lines
from kernel.sandbox.executor import CommandExecutor, SandboxUnavailable
from kernel.sandbox.settings import ExecSettings
from kernel.sandbox.workspace_index import WorkspaceIndex
from kernel.tools.builtin.command import refused
from kernel.tools.externalize import OutputStore
from kernel.tools.spec import ErrorCode
from tests.sandbox.sandbox_helpers import MISSING

PROJECT = Path("/srv/project")
"""A workspace whose sandbox home commands write (AppPaths.sandbox_home_for)."""


def test_missing_bwrap_is_reported_with_the_fix() -> None:
    status = detect_sandbox(MISSING)
    assert status.kind == "none" and not status.available
    assert MISSING in status.reason and "apt-get install bubblewrap" in status.fix


def test_a_bwrap_that_reports_no_sandbox_process_is_not_trusted(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    status = detect_sandbox(str(fake))
    assert not status.available and status.kind == "none"
    assert "cannot limit the sandbox" in status.reason
    assert "setuid" in status.fix


def test_a_bwrap_that_cannot_create_namespaces_is_not_trusted(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    status = detect_sandbox(str(fake))
    assert not status.available and status.kind == "none"
    assert "No permissions to create new namespace" in status.reason
    assert "user namespaces" in status.fix


def test_the_real_sandbox_is_detected(sandbox_status) -> None:
    assert sandbox_status.kind == "bwrap" and sandbox_status.available
    assert sandbox_status.bwrap_path and "resource limits" in sandbox_status.reason


def test_executor_refuses_without_sandbox_and_runs_nothing(
    reins_home: AppPaths, workspace: Path
) -> None:
    executor = CommandExecutor(reins_home, ExecSettings(bwrap=MISSING))
    outputs = OutputStore.for_session(reins_home, "s")
    with outputs.spool("c") as spool, pytest.raises(SandboxUnavailable) as info:
        asyncio.run(executor.run("touch ran.txt", workspace=workspace, spool=spool,
                                 timeout_s=10))
    assert info.value.kind == "sandbox_unavailable"
    assert refused(info.value).code is ErrorCode.SANDBOX_UNAVAILABLE
    assert "apt-get install bubblewrap" in info.value.hint
    assert not (workspace / "ran.txt").exists()
    assert executor.running == 0


def test_doctor_report_names_state_reason_and_fix(sandbox_status) -> None:
    good = report()
    assert good.startswith("sandbox: bwrap") and "reason:" in good and "limits:" in good
    bad = report(ExecSettings(bwrap=MISSING))
    assert bad.startswith("sandbox: none") and "NOT sandboxed" in bad
    assert "fix: apt-get install bubblewrap" in bad and MISSING in bad


def test_make_non_dumpable_in_a_child_kernel() -> None:
    code = (
        "from kernel.sandbox.hardening import is_dumpable, make_non_dumpable\n"
        "before = is_dumpable(); applied = make_non_dumpable()\n"
        "print(before, applied, is_dumpable())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["True", "True", "False"]


def test_bwrap_argv_layers(tmp_path: Path, reins_home: AppPaths) -> None:
    home = tmp_path / "home"
    workspace = home / "project"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("")
    (home / ".pyenv").mkdir()
    reins_home.data.mkdir(parents=True)
    reins_home.config.mkdir(parents=True)
    argv = bwrap_argv(
        "bwrap", program=("/bin/sh", "-s"), cwd=workspace, workspace=workspace, network=False,
        paths=reins_home, sandbox_home=reins_home.sandbox_home_for(PROJECT), real_home=home,
        read_only_paths=(home / ".pyenv",), handshake_fds=(7, 9),
        marks=WorkspaceIndex(str(workspace), watch=False).marks.values(),
    )
    text = " ".join(argv)
    for flag in ("--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
                 "--unshare-uts", "--unshare-net"):
        assert flag in argv
    assert "--ro-bind / /" not in text and f"--tmpfs {home} " not in text  # built from nothing
    assert text.index("--ro-bind /usr /usr") < text.index(f"--bind {workspace} {workspace}")
    assert f"--ro-bind {home / '.pyenv'} {home / '.pyenv'}" in text
    assert text.index(f"--ro-bind {home / '.pyenv'}") < text.index(f"--bind {workspace} ")
    assert text.index(f"--bind {workspace / '.git'} {workspace / '.git'} ") < text.index(
        f"--ro-bind {workspace / '.git/hooks'} {workspace / '.git/hooks'}")
    assert f"--ro-bind {workspace / '.git/config'} {workspace / '.git/config'}" in text
    # Reins' folders lie in nothing shown: absent, with the sandbox home bound among them
    assert f"--tmpfs {reins_home.data}" not in text and f"--tmpfs {reins_home.config}" not in text
    assert text.index(f"--bind {workspace} {workspace}") < text.index(
        f"--bind {reins_home.sandbox_home_for(PROJECT)}")
    assert text.index(f"--bind {reins_home.sandbox_home_for(PROJECT)}") < text.index(
        "--remount-ro / ")
    assert "--info-fd 7 --block-fd 9" in text
    assert argv[-7:] == ["--remount-ro", "/", "--chdir", str(workspace), "--", "/bin/sh", "-s"]
    with_net = bwrap_argv(
        "bwrap", program=("/bin/sh", "-s"), cwd=workspace, workspace=workspace, network=True,
        paths=reins_home, sandbox_home=reins_home.sandbox_home_for(PROJECT), real_home=home,
        handshake_fds=(7, 9),
    )
    assert "--unshare-net" not in with_net


def test_reins_folders_under_the_hidden_home_are_hidden_once(tmp_path: Path) -> None:
    """Reins' default layout (its folders in the home) needs no mounts of its own, unless
    something shown (a read-only path, the workspace) holds them."""
    home = tmp_path / "home"
    paths = AppPaths(data=home / ".local/share/reins", config=home / ".config/reins")
    paths.data.mkdir(parents=True)
    paths.config.mkdir(parents=True)
    project = home / "project"
    project.mkdir()

    def argv_text(workspace: Path, read_only: tuple[Path, ...] = ()) -> str:
        return " ".join(bwrap_argv(
            "bwrap", program=("/bin/sh", "-s"), cwd=workspace, workspace=workspace, network=False,
            paths=paths, sandbox_home=paths.sandbox_home_for(PROJECT), real_home=home,
            read_only_paths=read_only, handshake_fds=(7, 9)))

    default = argv_text(project)
    assert f"--tmpfs {home} " not in default and f"--ro-bind {home} " not in default
    assert f"--tmpfs {paths.data}" not in default and f"--tmpfs {paths.config}" not in default
    assert f"--bind {paths.sandbox_home_for(PROJECT)} {paths.sandbox_home_for(PROJECT)}" in default
    shown_again = argv_text(project, (home / ".local",))
    assert f"--ro-bind {home / '.local'} {home / '.local'}" in shown_again
    assert f"--tmpfs {paths.data}" in shown_again and f"--remount-ro {paths.data}" in shown_again
    whole_home = argv_text(home)
    assert f"--tmpfs {paths.data}" in whole_home and f"--tmpfs {paths.config}" in whole_home


def test_doctor_prints_the_view(tmp_path: Path) -> None:
    """`reins doctor` lists what a command sees, each path with how and why, from the same
    view the argv is made of (a folder of the user's settings among them)."""
    data = tmp_path / "data"
    data.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lines = view_lines(ExecSettings(read_only_paths=(str(data),)), str(workspace))
    text = "\n".join(lines)
    assert lines[0].startswith(f"  commands see (in a workspace at {workspace})")
    assert re.search(rf"\n    {re.escape(str(workspace))} +writable +the workspace", text)
    assert re.search(rf"\n    {re.escape(str(data))} +read-only +named in exec.read_only_paths",
                     text)
    assert re.search(r"\n    /usr +read-only", text) and re.search(r"\n    / +sealed", text)
    if os.path.exists("/etc/shadow"):
        assert re.search(r"\n    /etc/shadow +hidden +others may not read it", text)
    assert "\n    /run " not in text and "\n    /var " not in text
