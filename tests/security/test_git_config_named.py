"""What a repository's git config names is protected like a protected name
(kernel.sandbox.git_named): `core.hooksPath`'s folder, an `include.path` file, an alias's
script. A sandboxed command can neither change what exists of them (read-only, cannot be
replaced) nor leave what it made there (undone after it), whatever the spelling; git run
afterwards outside the sandbox, by the user, runs none of it. As root and as nobody. The file
tools refuse to write there (`auto` mode asks; `--approve deny` writes nothing)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.git_named import NAMED_PREFIX
from kernel.sandbox.guard import WorkspaceGuards
from kernel.tools.pathpolicy import PathPolicy
from tests.cli.conftest import Cli, cli
from tests.security.conftest import Confined
from tests.security.execkit import write_is_asked_and_denied
from tests.security.serverkit import run_as_server

__all__ = ["cli"]

HOOK = "printf '#!/bin/sh\\ntouch ../../pwned-{name}\\n' > {path} && chmod +x {path}"
ATTACKS = {
    "write the hook": "cd app && " + HOOK.format(name="write", path=".githooks/pre-commit"),
    "replace the folder": "cd app && mv .githooks .gh-old; mkdir -p x && "
                          + HOOK.format(name="replace", path="x/pre-commit")
                          + " && mv x .githooks",
    "make the missing folder": "cd web && rm -rf .husky stage evil; mkdir -p .husky/_ && "
                               + HOOK.format(name="make", path=".husky/_/pre-commit"),
    "rename a folder into place": "cd web && rm -rf .husky stage evil; mkdir -p stage/_ && "
                                  + HOOK.format(name="rename", path="stage/_/pre-commit")
                                  + " && mv stage .husky",
    "link a folder into place": "cd web && rm -rf .husky stage evil; mkdir -p evil/_ && "
                                + HOOK.format(name="link", path="evil/_/pre-commit")
                                + " && ln -s evil .husky",
    "append to the included file": "cd app && printf '[core]\\n\\thooksPath = /tmp\\n' "
                                   ">> team.gitconfig",
    "replace the included file": "cd app && rm -f team.gitconfig; "
                                 "printf '[alias]\\n\\tx = !touch ../../pwned-inc\\n' "
                                 "> team.gitconfig",
    "write the alias's script": "cd app && mkdir -p tools && "
                                + HOOK.format(name="alias", path="tools/t.sh").replace(
                                    "../../", "../"),
}
LEGITIMATE = "cd app && echo hello > README && git -c safe.directory='*' status --short"


def _repo(path: Path, *config: str) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for pair in config:
        key, value = pair.split("=", 1)
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)


def _prepare(folder: Path) -> None:
    workspace = folder / "workspace"
    _repo(workspace / "app", "core.hooksPath=.githooks", "include.path=../team.gitconfig",
          "alias.t=!./tools/t.sh")
    (workspace / "app" / ".githooks").mkdir()
    (workspace / "app" / "team.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    _repo(workspace / "web", "core.hooksPath=.husky/_")
    (folder / "home").mkdir()


def _git(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "safe.directory=*", "-c", "user.name=u", "-c", "user.email=u@u", *args],
        cwd=cwd, env={"PATH": os.environ["PATH"], "HOME": str(home)}, capture_output=True,
        text=True, timeout=60, check=False)


def _check(folder: Path, report: dict[str, Any]) -> None:
    workspace, home = folder / "workspace", folder / "home"
    for repo in ("app", "web"):
        done = _git(workspace / repo, home, "commit", "-q", "--allow-empty", "-m", "look")
        assert done.returncode == 0, done.stderr
    _git(workspace / "app", home, "t")
    _git(workspace / "app", home, "x")
    pwned = sorted(p.name for p in folder.rglob("pwned-*"))
    assert pwned == [], report
    assert sorted(os.listdir(workspace / "app" / ".githooks")) == []
    assert (workspace / "app" / "team.gitconfig").read_text() == "[core]\n\tautocrlf = false\n"
    assert not os.path.lexists(workspace / "web" / ".husky" / "_")
    assert not (workspace / "app" / "tools" / "t.sh").exists()


def test_what_git_config_names_cannot_be_planted(confined: Confined) -> None:
    report = confined([*ATTACKS.values(), LEGITIMATE], prepare=_prepare, inspect=_check)
    by_command = {o["command"]: o for o in report["outcomes"]}
    legitimate = by_command[LEGITIMATE]
    assert legitimate["exit_code"] == 0 and not legitimate["reverted"], legitimate
    assert "README" in legitimate["output"]
    for name in ("write the hook", "append to the included file"):
        assert "Read-only file system" in by_command[ATTACKS[name]]["output"], name
    assert "busy" in by_command[ATTACKS["replace the folder"]]["output"].lower()
    reverted = {name: {r["path"] for r in by_command[ATTACKS[name]]["reverted"]}
                for name in ATTACKS}
    assert reverted["make the missing folder"] == {"web/.husky/_"}
    assert reverted["rename a folder into place"] == {"web/.husky/_"}
    assert reverted["link a folder into place"] == {"web/evil/_"}
    assert reverted["write the alias's script"] == {"app/tools/t.sh"}
    assert all(r["rule"].startswith(("core.hookspath in ", "alias.t in "))
               for o in report["outcomes"] for r in o["reverted"]), report


def test_a_link_into_a_secret_folder_leaves_it_hidden(confined: Confined) -> None:
    """Where a protected link or a git config leads inside a hidden secret folder is hidden
    with it (binding it read-only showed it again, or made bubblewrap fail every command)."""
    def prepare(folder: Path) -> None:
        workspace = folder / "workspace"
        (workspace / ".ssh" / "sub").mkdir(parents=True)
        (workspace / ".ssh" / "sub" / "id_x").write_text("SECRET-SUB\n")
        (workspace / ".ssh" / "top").write_text("SECRET-TOP\n")
        (workspace / ".ssh" / "hop").symlink_to("sub")
        (workspace / ".vscode").symlink_to(".ssh/hop")
        (workspace / ".idea").symlink_to(".ssh/sub")
        _repo(workspace, "alias.t=!./.ssh/top", "core.hooksPath=.ssh/sub")

    report = confined(["cat .ssh/sub/id_x .ssh/top .vscode/id_x .idea/id_x; ls -A .ssh"],
                      prepare=prepare)
    [outcome] = report["outcomes"]
    assert outcome["exit_code"] == 0, outcome
    assert "SECRET" not in outcome["output"] and "No such file" in outcome["output"], outcome


def test_the_file_tools_refuse_what_git_config_names(workspace: Path,
                                                     reins_home: AppPaths) -> None:
    _repo(workspace, "core.hooksPath=.husky/_", "include.path=../team.inc",
          "diff.conv.textconv=python3 tools/conv.py")
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace))
        for path, rule in [(".husky/_/pre-commit", "core.hookspath in .git/config"),
                           ("./.husky/_", "core.hookspath in .git/config"),
                           (".husky/x/../_/commit-msg", "core.hookspath in .git/config"),
                           ("team.inc", "include.path in .git/config"),
                           ("tools/conv.py", "diff.conv.textconv in .git/config")]:
            for spelling in (path, str(workspace / path)):
                assert policy.classify(spelling, write=True).protected == (
                    f"{NAMED_PREFIX}{rule}"), spelling
        for free in (".husky/other", "tools/other.py", "team.inc.bak"):
            assert policy.classify(free, write=True).protected is None, free
    finally:
        guards.close()


@pytest.mark.parametrize("path", [".githooks/pre-commit", ".githooks/../.githooks/post-merge",
                                  "team.inc"])
def test_auto_mode_asks_before_writing_there(cli: Cli, path: str) -> None:
    _repo(cli.workspace, "core.hooksPath=.githooks", "include.path=../team.inc")
    (cli.workspace / ".githooks").mkdir()
    write_is_asked_and_denied(cli, path, "add a hook")


def test_a_sandboxed_server_cannot_write_what_git_config_names(confined: Confined) -> None:
    """A server lives across calls and what it makes is undone only at a call's end, so what
    exists must be read-only in its sandbox too (the same marks as a command's)."""
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-named-", dir="/var/tmp"))
    folder.chmod(0o777)
    try:
        (folder / "workspace").mkdir()
        _prepare(folder)
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        attacks = [ATTACKS[name] for name in ("write the hook", "replace the folder",
                                              "append to the included file")]
        report = run_as_server(confined.who, folder,
                               " ; ".join(f"( {c} ) 2>&1" for c in attacks))
        if not report["available"]:
            pytest.skip("no sandbox for this user here")
        out = report["out"]
        assert out.count("Read-only file system") >= 2 and "busy" in out.lower(), out
        assert os.listdir(folder / "workspace" / "app" / ".githooks") == []
        assert (folder / "workspace" / "app" / "team.gitconfig").read_text() == (
            "[core]\n\tautocrlf = false\n")
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
