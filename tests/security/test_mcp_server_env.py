"""Nothing a sandboxed command can write is read as code or configuration by an MCP server.

A command's HOME is its workspace's sandbox home (`AppPaths.sandbox_home_for`), and it can
write there. The
payloads are planted there as a command would plant them: a Python user-site `.pth`,
`sitecustomize.py` and `usercustomize.py`; `~/.gitconfig` and `~/.config/git/config` with
`core.fsmonitor`; a fake `git` in `~/.local/bin`. Then real MCP servers
start through the kernel's own start-up (a plain Python server on the system interpreter,
whose user site is live; mcp-server-git; an SDK server whose `#!/usr/bin/env` interpreter
and another whose command exist only in the login PATH), and each makes git calls. No
payload may run; every server sees the user's real HOME and the PATH of the user's login
shell (a fake one that adds a folder, and also the planted `~/.local/bin`, which must be
dropped). A control at the end shows that every payload does run for a process whose HOME is
the sandbox home: the test cannot pass by planting something inert.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernel.mcp.manager import ServerStatus
from kernel.mcp.startup import start_mcp_servers
from kernel.paths import AppPaths
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall, ToolResult

PROJECT = Path("/srv/project")
"""A workspace whose sandbox home commands write (AppPaths.sandbox_home_for)."""

SERVERS = Path(__file__).parents[1] / "mcp" / "servers"
PLAIN = SERVERS / "plain.py"
EDGE = SERVERS / "edge.py"
SYSTEM_PYTHON = os.path.join(sys.base_prefix, "bin",
                             f"python{sys.version_info.major}.{sys.version_info.minor}")
"""The interpreter outside the virtualenv: its user site (under HOME) is on sys.path."""
VENV_BIN = Path(sys.executable).parent
WAIT = 60.0
PAYLOADS = ("pth", "sitecustomize", "usercustomize", "fsmonitor", "xdg-fsmonitor", "fake-git")
IDENTITY = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}


@dataclass(frozen=True)
class World:
    paths: AppPaths
    home: Path
    login_bin: Path
    markers: Path
    repo: Path
    servers: dict[str, Any]

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def plant(sandbox_home: Path, markers: Path) -> None:
    """What a sandboxed command can write into its HOME, each payload leaving a marker."""
    site = sandbox_home / ".local" / "lib" / (
        f"python{sys.version_info.major}.{sys.version_info.minor}") / "site-packages"
    site.mkdir(parents=True)
    (site / "x.pth").write_text(f"import os; open({str(markers / 'pth')!r}, 'w').close()\n")
    for name in ("sitecustomize", "usercustomize"):
        (site / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    hook = _script(sandbox_home / ".cache" / "hook.sh", f"#!/bin/sh\ntouch {markers}/$1\n")
    (sandbox_home / ".gitconfig").write_text(
        f'[core]\n\tfsmonitor = "{hook} fsmonitor"\n')
    xdg = sandbox_home / ".config" / "git" / "config"
    xdg.parent.mkdir(parents=True)
    xdg.write_text(f'[core]\n\tfsmonitor = "{hook} xdg-fsmonitor"\n')
    _script(sandbox_home / ".local" / "bin" / "git",
            f"#!/bin/sh\ntouch {markers}/fake-git\nexec /usr/bin/git \"$@\"\n")


def _git_repo(path: Path) -> Path:
    env = {**os.environ, **IDENTITY}
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    (path / "notes.txt").write_text("first\n")
    subprocess.run(["git", "-C", str(path), "add", "notes.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "first"], check=True, env=env)
    (path / "notes.txt").write_text("first\nsecond\n")
    return path


@pytest.fixture
def world(tmp_path: Path, reins_home: AppPaths, monkeypatch: pytest.MonkeyPatch) -> World:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"no system interpreter at {SYSTEM_PYTHON}")
    home = tmp_path / "realhome"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Real User\n\temail = real.user@example.com\n")
    markers = tmp_path / "markers"
    markers.mkdir()
    sandbox_home = reins_home.sandbox_home_for(PROJECT)
    plant(sandbox_home, markers)
    login_bin = tmp_path / "login-bin"
    _script(login_bin / "reins-login-python", f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    _script(login_bin / "reins-login-server", f"#!/bin/sh\nexec {sys.executable} {EDGE} \"$@\"\n")
    shebang = _script(tmp_path / "servers" / "edge-server",
                      "#!/usr/bin/env reins-login-python\nimport runpy\n"
                      f"runpy.run_path({str(EDGE)!r}, run_name='__main__')\n")
    shell = _script(tmp_path / "shell" / "login-sh",
                    "#!/bin/sh\n# a login shell whose profile adds folders to PATH\n"
                    f"PATH=\"{login_bin}:{sandbox_home}/.local/bin:$PATH\"; export PATH\n"
                    "for last; do :; done\nexec /bin/sh -c \"$last\"\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", str(shell))
    monkeypatch.setenv("PATH", f"{VENV_BIN}:/usr/bin:/bin")
    repo = _git_repo(tmp_path / "repo")
    servers = {
        "plain": {"command": SYSTEM_PYTHON, "args": [str(PLAIN)]},
        "git": {"command": str(VENV_BIN / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "shebang": {"command": str(shebang)},
        "byname": {"command": "reins-login-server"},
    }
    return World(reins_home, home, login_bin, markers, repo, servers)


async def _start(world: World, servers: dict[str, Any]) -> tuple[Any, Dispatcher]:
    registry = ToolRegistry()
    manager = await start_mcp_servers(registry, world.paths, servers)
    states = await manager.wait_settled(WAIT)
    assert all(s.status is ServerStatus.READY for s in states), [
        (s.name, s.summary, s.stderr_tail) for s in states]
    workspace = world.paths.data.parent / "workspace"
    workspace.mkdir(exist_ok=True)
    dispatcher = Dispatcher(registry, session_id="s", workspace=workspace,
                            outputs=OutputStore(workspace / ".out"),
                            path_policy=PathPolicy(workspace))
    return manager, dispatcher


async def _call(dispatcher: Dispatcher, name: str, **args: Any) -> ToolResult:
    result = await dispatcher.dispatch(ToolCall(f"c{time.monotonic_ns()}", name, args))
    assert not result.is_error, result.content
    return result


def _control(world: World) -> None:
    """The payloads are live: a process whose HOME is the sandbox home runs every one."""
    home = str(world.paths.sandbox_home_for(PROJECT))
    env = {"HOME": home, "PATH": f"{home}/.local/bin:/usr/bin:/bin"}
    subprocess.run([SYSTEM_PYTHON, "-c", "pass"], env=env, check=True)
    subprocess.run(["git", "status"], cwd=world.repo, env=env, check=True, capture_output=True)
    env.pop("HOME")
    subprocess.run(["git", "status"], cwd=world.repo, check=True, capture_output=True,
                   env={**env, "XDG_CONFIG_HOME": f"{home}/.config", "HOME": "/nonexistent"})
    assert world.ran() == sorted(PAYLOADS)


def test_planted_payloads_never_run_and_servers_see_the_real_home(world: World) -> None:
    servers = {"plain": world.servers["plain"], "git": world.servers["git"]}

    async def main() -> tuple[dict[str, Any], str]:
        manager, dispatcher = await _start(world, servers)
        try:
            facts = json.loads((await _call(dispatcher, "mcp__plain__environment")).text)
            status = (await _call(dispatcher, "mcp__plain__git_status",
                                  repo=str(world.repo))).text
            git = await _call(dispatcher, "mcp__git__git_status", repo_path=str(world.repo))
            assert "notes.txt" in git.text
            await _call(dispatcher, "mcp__git__git_add", repo_path=str(world.repo),
                        files=["notes.txt"])
            await _call(dispatcher, "mcp__git__git_commit", repo_path=str(world.repo),
                        message="second")
            await _call(dispatcher, "mcp__git__git_log", repo_path=str(world.repo))
            return facts, status
        finally:
            await manager.aclose()

    facts, status = asyncio.run(main())
    assert world.ran() == [], f"planted payloads ran outside the sandbox: {world.ran()}"
    sandbox_home = str(world.paths.sandbox_home_for(PROJECT))
    assert facts["env"]["HOME"] == str(world.home)
    assert facts["cwd"] == str(world.home)
    assert sandbox_home not in json.dumps(facts)
    assert "modified:   notes.txt" in status
    author = subprocess.run(["git", "-C", str(world.repo), "log", "-1", "--format=%an <%ae>"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert author == "Real User <real.user@example.com>"
    _control(world)


def test_servers_get_the_login_path_without_writable_folders(world: World) -> None:
    servers = {name: world.servers[name] for name in ("plain", "shebang", "byname")}

    async def main() -> dict[str, dict[str, str]]:
        manager, dispatcher = await _start(world, servers)
        try:
            plain = json.loads((await _call(dispatcher, "mcp__plain__environment")).text)
            await _call(dispatcher, "mcp__plain__git_status", repo=str(world.repo))
            seen = {"plain": plain["env"]}
            for server in ("shebang", "byname"):  # the edge server answers with the env alone
                result = await _call(dispatcher, f"mcp__{server}__environment")
                seen[server] = json.loads(result.text)
            return seen
        finally:
            await manager.aclose()

    seen = asyncio.run(main())
    for server, env in seen.items():
        assert env["PATH"] == f"{world.login_bin}:{VENV_BIN}:/usr/bin:/bin", server
        assert env["HOME"] == str(world.home), server
        assert str(world.paths.sandbox_home_for(PROJECT)) not in json.dumps(env), server
    assert world.ran() == []


def test_when_the_login_shell_hangs_servers_get_the_kernel_path_without_writable_folders(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "shell-pids"
    hanging = _script(tmp_path / "shell" / "hanging-sh",
                      f"#!/bin/sh\necho $$ >> {pids}\nsleep 60 &\necho $! >> {pids}\nwait\n")
    monkeypatch.setenv("SHELL", str(hanging))
    sandbox_bin = f"{world.paths.sandbox_home_for(PROJECT)}/.local/bin"
    monkeypatch.setenv("PATH", f"{sandbox_bin}:bin::.:{VENV_BIN}:/usr/bin:/bin")

    async def main() -> tuple[dict[str, Any], float]:
        started = time.monotonic()
        manager, dispatcher = await _start(world, {"plain": world.servers["plain"],
                                                   "git": world.servers["git"]})
        took = time.monotonic() - started
        try:
            facts = json.loads((await _call(dispatcher, "mcp__plain__environment")).text)
            await _call(dispatcher, "mcp__plain__git_status", repo=str(world.repo))
            await _call(dispatcher, "mcp__git__git_status", repo_path=str(world.repo))
            return facts, took
        finally:
            await manager.aclose()

    facts, took = asyncio.run(main())
    assert took < 15.0
    assert facts["env"]["PATH"] == f"{VENV_BIN}:/usr/bin:/bin"
    assert world.ran() == []
    for pid in map(int, pids.read_text().split()):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(
            f"/proc/{pid}/stat").read_text().split()[2], f"the login shell's {pid} lives on"
    _control(world)
