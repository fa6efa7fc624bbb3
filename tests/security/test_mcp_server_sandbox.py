"""A stdio MCP server with `"sandbox": true` runs under real bubblewrap: its tools work (its
program and script shown because its entry names them), it holds no capability, it sees
nothing of the home, it can write its state folder (its HOME) and its workspace (but not
the workspace's git hooks)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel.mcp.launch import mcp_state_dir
from kernel.mcp.startup import start_mcp_servers
from kernel.paths import AppPaths
from kernel.sandbox.detect import detect_sandbox
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall
from tests.mcp.conftest import EDGE
from tests.mcp.everything import everything_entry, install

Calls = dict[str, tuple[str, dict[str, object]]]


def _called(reins_home: AppPaths, folder: Path, entry: dict[str, object], calls: Calls,
            before: Callable[[], None] = lambda: None) -> dict[str, tuple[bool, str]]:
    """Start the sandboxed server `entry` as "boxed", make each call (key: tool, arguments)
    through the dispatcher once it is ready (`before` first), and say how each went."""
    async def main() -> dict[str, tuple[bool, str]]:
        registry = ToolRegistry()
        manager = await start_mcp_servers(registry, reins_home, {"boxed": {
            **entry, "sandbox": True}})
        try:
            [s] = await manager.wait_settled(60)
            assert s.summary.startswith("ready"), (s.summary, s.stderr_tail)
            d = Dispatcher(registry, session_id="s", workspace=folder,
                           outputs=OutputStore(folder / "out"), path_policy=PathPolicy(folder))
            before()
            out = {}
            for key, (tool, args) in calls.items():
                r = await d.dispatch(ToolCall(f"c-{key}", f"mcp__boxed__{tool}", args))
                out[key] = (not r.is_error, r.text)
            return out
        finally:
            await manager.aclose()

    return asyncio.run(main())


def test_a_sandboxed_server_works_and_is_confined(
        tmp_path: Path, reins_home: AppPaths, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    if not detect_sandbox().available:
        pytest.skip(detect_sandbox().reason)
    home = Path(tempfile.mkdtemp(prefix="reins-home-", dir="/var/tmp"))  # /tmp is private inside
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY canary-5d1")
    (home / ".gitconfig").write_text("[user]\n\tname = Real User\n")
    workspace = tmp_path / "ws"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/nonexistent")
    state = mcp_state_dir(reins_home, "boxed")

    calls: Calls = {
        "echo": ("echo", {"text": "hi"}),
        "status": ("read", {"path": "/proc/self/status"}),
        "gitconfig": ("read", {"path": str(home / ".gitconfig")}),
        "secret": ("read", {"path": str(home / ".ssh" / "id_rsa")}),
        "home": ("touch", {"path": str(home / "planted")}),
        "state": ("touch", {"path": str(state / "cache.db")}),
        "workspace": ("touch", {"path": str(workspace / "out.txt")}),
        "hook": ("touch", {"path": str(workspace / ".git" / "hooks" / "pre-commit")}),
        "sandbox_home": ("touch", {"path": str(reins_home.sandbox_homes / "x.pth")}),
        "envrc": ("touch", {"path": str(workspace / "deep" / ".envrc")}),
        "editor": ("touch", {"path": str(workspace / ".vscode")}),
    }
    out = _called(reins_home, tmp_path, {"command": sys.executable, "args": [str(EDGE)],
                                         "cwd": str(workspace)}, calls,
                  before=lambda: (workspace / "deep").mkdir())
    assert out["echo"] == (True, "hi")
    assert "CapEff:\t0000000000000000" in out["status"][1]
    assert not out["gitconfig"][0] and "Real User" not in out["gitconfig"][1]
    assert "canary-5d1" not in out["secret"][1]
    assert not out["home"][0] and not (home / "planted").exists()
    assert out["state"][0] and (state / "cache.db").exists()
    assert out["workspace"][0] and (workspace / "out.txt").exists()
    assert not out["hook"][0] and not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (reins_home.sandbox_homes / "x.pth").exists()
    for key, made in (("envrc", workspace / "deep" / ".envrc"), ("editor", workspace / ".vscode")):
        ok, text = out[key]
        assert ok and "undone by Reins: the server made" in text, (key, text)
        assert not made.exists() and "moved to " in text


def test_a_sandboxed_server_without_pasta_is_not_started(
        tmp_path: Path, reins_home: AppPaths) -> None:
    """Its network would be the host's (loopback services, X11 and D-Bus sockets): fail
    closed, saying what to install, unless the user's own exec.local_network says so."""
    if not detect_sandbox().available:
        pytest.skip(detect_sandbox().reason)
    from kernel.sandbox.settings import ExecSettings

    async def state(settings: ExecSettings) -> tuple[str, str]:
        manager = await start_mcp_servers(ToolRegistry(), reins_home, {"boxed": {
            "command": sys.executable, "args": [str(EDGE)], "sandbox": True,
            "cwd": str(tmp_path)}}, exec_settings=settings)
        try:
            [s] = await manager.wait_settled(60)
            return s.summary, s.error
        finally:
            await manager.aclose()

    summary, error = asyncio.run(state(ExecSettings(pasta="/nonexistent/pasta")))
    assert not summary.startswith("ready") and "apt-get install passt" in error, (summary, error)
    summary, _ = asyncio.run(state(ExecSettings(pasta="/nonexistent/pasta",
                                                local_network=True)))
    assert summary.startswith("ready"), summary


def test_the_reference_server_installed_in_a_folder_runs_sandboxed(
        tmp_path: Path, reins_home: AppPaths) -> None:
    """`node …/node_modules/@modelcontextprotocol/server-everything/dist/index.js`, as an
    npm install in a folder of its own leaves it: its dependencies lie in the install's
    `node_modules` above the script, which the sandbox shows because the entry names it
    (the outermost project above the script: kernel.sandbox.server.entry_path)."""
    if not detect_sandbox().available:
        pytest.skip(detect_sandbox().reason)
    problem = install()
    if problem:
        pytest.skip(f"@modelcontextprotocol/server-everything: {problem}")

    out = _called(reins_home, tmp_path, everything_entry(),
                  {"echo": ("echo", {"message": "boxed hi"})})
    assert out["echo"][0] and "boxed hi" in out["echo"][1], out


def test_a_project_an_entry_names_is_shown_without_its_secrets_at_any_depth(
        tmp_path: Path, reins_home: AppPaths) -> None:
    """A server whose script lies in a project is shown the project read-only (it imports
    from it), minus the secret locations in it at any depth, as a workspace's are hidden."""
    if not detect_sandbox().available:
        pytest.skip(detect_sandbox().reason)
    project = tmp_path / "proj"
    (project / "server").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copy(EDGE, project / "server" / "edge.py")
    (project / "notes.txt").write_text("plain notes")
    (project / "apps" / "web").mkdir(parents=True)
    (project / "apps" / "web" / ".env").write_text("TOKEN=canary-deep-91")
    (project / "apps" / "web" / ".ssh").mkdir()
    (project / "apps" / "web" / ".ssh" / "id_ed25519").write_text("canary-key-91")
    os.link(project / "apps" / "web" / ".env", project / "linked.txt")  # another name

    web = project / "apps" / "web"
    out = _called(reins_home, tmp_path, {"command": sys.executable,
                                         "args": [str(project / "server" / "edge.py")]},
                  {"notes": ("read", {"path": str(project / "notes.txt")}),
                   "env": ("read", {"path": str(web / ".env")}),
                   "key": ("read", {"path": str(web / ".ssh" / "id_ed25519")}),
                   "linked": ("read", {"path": str(project / "linked.txt")})})
    assert out["notes"] == (True, "plain notes")
    assert "canary-deep-91" not in out["env"][1] and "canary-key-91" not in out["key"][1]
    assert "canary-deep-91" not in out["linked"][1]
