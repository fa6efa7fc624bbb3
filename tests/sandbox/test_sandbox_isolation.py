"""What a sandboxed command can see and change: real bubblewrap, real files, real sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from tests.sandbox.sandbox_helpers import MISSING, accepted


def test_writes_outside_the_workspace_fail(run_cmd, workspace: Path, tmp_path: Path) -> None:
    outside = Path.cwd() / f"reins-probe-{uuid.uuid4().hex}"
    in_host_tmp = tmp_path / "outside.txt"
    outcome, text = run_cmd(
        f"touch {outside}; echo a=$?; touch /usr/reins-probe; echo b=$?; "
        f"touch inside.txt; echo c=$?; echo x > {in_host_tmp}; echo d=$?"
    )
    assert "a=1" in text and "b=1" in text and "c=0" in text
    assert "Read-only file system" in text
    assert not outside.exists() and not Path("/usr/reins-probe").exists()
    assert "d=0" in text and not in_host_tmp.exists()  # /tmp inside is a private tmpfs
    assert (workspace / "inside.txt").exists()
    assert outcome.sandbox == "bwrap"


def test_the_real_home_is_absent_and_unchanged(
    run_cmd, reins_home: AppPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-of-ada"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-CANARY")
    (home / ".netrc").write_text("NETRC-CANARY")
    project = home / "src" / "project"
    project.mkdir(parents=True)
    (project / "README").write_text("visible")
    monkeypatch.setenv("HOME", str(home))
    outcome, text = run_cmd(
        f"cat {home}/.ssh/id_ed25519; cat {home}/.netrc; ls -A {home}; "
        f"touch {home}/.bashrc; echo w=$?; cat README; touch made-here; "
        f"echo home=$HOME; touch $HOME/cache; echo h=$?",
        workspace=project,
    )
    assert "CANARY" not in text
    # the home is absent but for the path to the workspace; this one lies in /tmp, the
    # sandbox's private tmpfs, so a write there lands nowhere (a home outside /tmp lies on
    # the sealed root: tests/security/test_sandbox_view.py)
    assert f"{home}/.netrc: No such file" in text
    assert not (home / ".bashrc").exists()
    assert "visible" in text and (project / "made-here").exists()
    assert f"home={reins_home.sandbox_home_for(project)}" in text and "h=0" in text
    assert outcome.exit_code == 0


def test_credentials_inside_a_workspace_that_is_the_home_stay_hidden(
    run_cmd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-as-workspace"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("AWS-CANARY")
    (home / "notes.txt").write_text("notes")
    monkeypatch.setenv("HOME", str(home))
    _outcome, text = run_cmd("cat .aws/credentials; cat notes.txt", workspace=home)
    assert "AWS-CANARY" not in text and "notes" in text


def test_reins_own_folders_are_hidden(run_cmd, reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"canary": "SETTINGS-CANARY"}')
    (reins_home.data / "reins.sqlite3").parent.mkdir(parents=True, exist_ok=True)
    (reins_home.data / "reins.sqlite3").write_text("DB-CANARY")
    settings = reins_home.settings_file
    _outcome, text = run_cmd(
        f"cat {settings}; cat {reins_home.data}/reins.sqlite3; "
        f"ls -A {reins_home.data}; touch {reins_home.config}/x; echo w=$?; "
        f"echo '{{}}' > {settings}; echo '{{}}' | tee {settings}; cp /dev/null {settings}; "
        f"printf x | dd of={settings}; sed -i s/CANARY/x/ {settings}; ln -sf /tmp {settings}"
    )
    assert "CANARY" not in text
    assert "reins.sqlite3: No such file" in text and "w=1" in text
    assert not (reins_home.config / "x").exists()
    assert settings.read_text() == '{"canary": "SETTINGS-CANARY"}'


def test_git_hooks_and_config_are_read_only(run_cmd, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    _outcome, text = run_cmd(
        "echo evil >> .git/config; echo c=$?; printf '#!/bin/sh\\necho pwned' > "
        ".git/hooks/pre-commit; echo h=$?; echo ok > .git/HEAD; echo head=$?"
    )
    assert "c=0" not in text and "h=0" not in text and "head=0" in text
    assert text.count("Read-only file system") == 2
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


def test_tmp_is_private(run_cmd, tmp_path: Path) -> None:
    probe = Path("/tmp") / f"reins-host-{uuid.uuid4().hex}"
    probe.write_text("host")
    try:
        _outcome, text = run_cmd(f"cat {probe}; echo made > /tmp/inside-only; echo $TMPDIR")
    finally:
        probe.unlink()
    assert "No such file" in text and "\n/tmp\n" in text
    assert not Path("/tmp/inside-only").exists()


def test_fresh_proc_shows_only_the_sandbox(run_cmd) -> None:
    _outcome, text = run_cmd("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
    assert sys.executable not in text and "-m pytest" not in text
    assert len([line for line in text.splitlines() if line.strip()]) <= 6


def _server() -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    return server


CONNECT = (
    "python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", {port}), "
    "timeout=10); print(\"connected\")'"
)


def test_no_network_by_default(run_cmd) -> None:
    """What a command allowed the network reaches: tests/security/test_sandbox_network.py."""
    server = _server()
    try:
        port = server.getsockname()[1]
        outcome, text = run_cmd(CONNECT.format(port=port))
        assert outcome.exit_code != 0 and "connected" not in text
        assert accepted(server) == 0
        assert outcome.network_scope == "none"
    finally:
        server.close()


WALK = r"""
pid=$PPID
n=0
while [ -n "$pid" ] && [ "$pid" -gt 0 ] && [ "$pid" != "{stop}" ]; do
  echo "== $pid"
  if tr '\0' '\n' < /proc/$pid/environ; then n=$((n+1)); fi
  echo; echo "cmdline: $(tr '\0' ' ' < /proc/$pid/cmdline)"
  pid=$(sed -n 's/.*) [A-Za-z] \([0-9]*\) .*/\1/p' /proc/$pid/stat)
done
echo "environs-read=$n"
"""

CHILD = """
import asyncio, sys
from pathlib import Path
from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore

command, out_dir, workspace, bwrap = sys.argv[1:5]
executor = CommandExecutor(AppPaths.from_env(), ExecSettings(bwrap=bwrap))
with OutputStore(Path(out_dir)).spool("walk") as spool:
    outcome = asyncio.run(executor.run(command, workspace=Path(workspace), spool=spool,
                                       timeout_s=60, allow_unsandboxed=True))
print(outcome.sandbox, outcome.exit_code)
"""


def _walk_from_child(tmp_path: Path, workspace: Path, canary: str, bwrap: str) -> str:
    """Run the ancestor walk from a child kernel whose own environment holds the canary."""
    script = tmp_path / "reins_proc_child.py"
    script.write_text(textwrap.dedent(CHILD))
    out_dir = tmp_path / f"out-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if "canary" not in v.lower()}
    env["ANTHROPIC_API_KEY"] = canary
    env["REINS_PARENT_SECRET"] = canary
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, str(script), WALK.replace("{stop}", str(os.getpid())), str(out_dir),
         str(workspace), bwrap],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    return (out_dir / "walk.txt").read_text(errors="replace")


def test_no_route_to_the_parents_secrets_through_proc(
    sandbox_status, workspace: Path, tmp_path: Path
) -> None:
    canary = f"sk-ant-canary-{uuid.uuid4().hex}"
    text = _walk_from_child(tmp_path, workspace, canary, "bwrap")
    assert canary not in text
    assert "HOME=" in text and "environs-read=" in text
    assert int(text.rsplit("environs-read=", 1)[1].split()[0]) >= 1
    assert "reins_proc_child" not in text


def test_the_walk_does_reach_the_kernel_when_unsandboxed(
    workspace: Path, tmp_path: Path
) -> None:
    """Control: the same walk, run without a sandbox (approved), does see the kernel process,
    so the sandboxed walk above could have found the canary had it been reachable."""
    canary = f"sk-ant-canary-{uuid.uuid4().hex}"
    text = _walk_from_child(tmp_path, workspace, canary, MISSING)
    assert "reins_proc_child" in text
