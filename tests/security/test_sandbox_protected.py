"""Nothing a command writes runs outside the sandbox when the user merely looks (issue 14 §3),
and no secret anywhere in the workspace is in a command's reach (§4).

Real bubblewrap, the real executor, as the user running the tests (root in CI) and as nobody.
Each attack plants a payload that touches `$REINS_CANARY`; afterwards, outside the sandbox,
git is run the ways a user runs it (status, commit, push) in every repository of the
workspace with that variable set: the canary must never appear, and every protected entry
the attacks made must be gone from the workspace (moved to Reins' quarantine). What a user
asks for must still work: a new repository with a commit, a clone, an `.env`, a commit in
an existing repository.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.security.conftest import Confined

PAYLOAD = "touch \\\"$REINS_CANARY\\\""
"""A shell line, as it must appear inside a single-quoted printf or git config value."""
HOOK = f"printf '#!/bin/sh\\n{PAYLOAD}\\n'"
IDENTITY = "-c user.email=agent@example.com -c user.name=agent"

ATTACKS: dict[str, str] = {
    "git init, then an fsmonitor in its config":
        f"git init -q fresh && git -C fresh config core.fsmonitor \"{PAYLOAD}\"",
    "replace the repository with a new one":
        f"mv .git .git-orig; mv .git/config .git/config.old; git init -q .; "
        f"git config core.fsmonitor \"{PAYLOAD}\"",
    "empty the repository and fill it again":
        "rm -rf sub/.git; git init -q sub",
    "a hook in an existing hooks folder":
        f"{HOOK} > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit",
    "a hook where there was no hooks folder":
        f"mkdir -p nohooks/.git/hooks; {HOOK} > nohooks/.git/hooks/pre-commit; "
        "chmod +x nohooks/.git/hooks/pre-commit",
    "an fsmonitor appended to a nested config":
        f"printf '[core]\\n\\tfsmonitor = {PAYLOAD}\\n' >> sub/.git/config",
    "a hooksPath in config.worktree":
        "printf '[core]\\n\\thooksPath = ../evilhooks\\n' > sub/.git/config.worktree",
    "a .git file pointing at a planted git directory":
        f"git init -q nested/x && mv nested/x/.git nested/.evil && "
        f"git --git-dir=nested/.evil config core.fsmonitor \"{PAYLOAD}\" && "
        "git --git-dir=nested/.evil config core.bare false && "
        "printf 'gitdir: .evil\\n' > nested/.git",
    "a commondir pointing at a planted config":
        f"git init -q evilsrc && git -C evilsrc config core.fsmonitor \"{PAYLOAD}\" && "
        "echo \"$PWD/evilsrc/.git\" > sub/.git/commondir",
    "a submodule's hook":
        f"mkdir -p .git/modules/m/hooks && {HOOK} > .git/modules/m/hooks/post-checkout",
    "attributes with a filter":
        "printf '* filter=evil\\n' > .git/info/attributes",
    "a .git that is a link":
        "mkdir linked && ln -s ../sub/.git linked/.git",
    "a new repository whose hooks folder is a link into the workspace":
        f"git init -q viahooks && mkdir myhooks && {HOOK} > myhooks/pre-commit && "
        "chmod +x myhooks/pre-commit && rm -rf viahooks/.git/hooks && "
        "ln -s ../../myhooks viahooks/.git/hooks",
    "an existing hooks link's target":
        f"{HOOK} > sharedhooks/pre-commit; chmod +x sharedhooks/pre-commit",
    "a new config that is a link to a planted one":
        f"printf '[core]\\n\\tfsmonitor = {PAYLOAD}\\n' > planted && git init -q vialink && "
        "rm vialink/.git/config && ln -s ../../planted vialink/.git/config",
    "editor settings through a link":
        "mkdir -p shared && echo '{}' > shared/tasks.json && ln -s ../shared lnk/.vscode",
    "rename the folder above a repository and start again":
        f"mv moved moved-old && git init -q moved && "
        f"git -C moved config core.fsmonitor \"{PAYLOAD}\"",
    "a new bare repository with a hook":
        f"git init -q --bare store.git && {HOOK} > store.git/hooks/pre-receive && "
        "chmod +x store.git/hooks/pre-receive",
    "editor folders and files that run on open or on cd, at any depth":
        "mkdir -p deep/a/.vscode && echo '{}' > deep/a/.vscode/tasks.json; "
        "mkdir -p deep/.idea && echo x > deep/.idea/workspace.xml; "
        "mkdir -p b/.devcontainer && echo '{}' > b/.devcontainer/devcontainer.json; "
        "echo '{}' > deep/x.code-workspace; echo '{}' > deep/.devcontainer.json; "
        f"echo '{PAYLOAD}' > deep/.envrc",
    "other spellings of the same names":
        "mkdir -p c/.VSCode && echo '{}' > c/.VSCode/settings.json; echo x > c/.EnvRC; "
        "mkdir -p c/.Idea && echo x > c/.Idea/x.xml",
    "an existing editor folder":
        "echo '{\"evil\": 1}' > .vscode/settings.json; rm -rf .vscode; mv .vscode .vscode-old",
    "shell start-up files at any depth":
        f"echo '{PAYLOAD}' > deep/.bashrc; echo x > .zshrc; "
        "mkdir -p h/.config/fish && echo x > h/.config/fish/config.fish",
    "credential folders other programs read as configuration":
        "mkdir -p deep/.ssh && echo 'ssh-ed25519 AAAA attacker' > deep/.ssh/authorized_keys; "
        f"mkdir -p .aws && printf '[default]\\ncredential_process = {PAYLOAD}\\n' > .aws/config",
}
MADE_BY_ATTACKS = [
    "fresh/.git/config", "sub/.git/hooks/pre-commit", "nohooks/.git/hooks/pre-commit",
    "sub/.git/config.worktree", "nested/.git", "nested/.evil/config", "sub/.git/commondir",
    "evilsrc/.git/config", ".git/modules/m/hooks", ".git/info/attributes", "linked/.git",
    "moved/.git/config", "store.git/hooks/pre-receive", "deep/a/.vscode", "deep/.idea",
    "b/.devcontainer", "deep/x.code-workspace", "deep/.devcontainer.json", "deep/.envrc",
    "c/.VSCode", "c/.EnvRC", "c/.Idea", "deep/.bashrc", ".zshrc", "h/.config/fish",
    "deep/.ssh", ".aws", "viahooks/.git/hooks", "sharedhooks/pre-commit",
    "vialink/.git/config", "lnk/.vscode",
]
LEGITIMATE: dict[str, str] = {
    "a new project with a commit":
        f"git init -q proj && cd proj && echo hi > a && git add a && "
        f"git {IDENTITY} commit -qm first",
    "a clone": "git clone -q \"$PWD/moved-old\" cloned",
    "an .env": "echo A=1 > proj/.env",
    "a commit in the existing repository":
        f"echo x > file && git add file && git {IDENTITY} commit -qm second",
}
REPOSITORIES = ["", "sub", "nohooks", "fresh", "nested", "evilsrc", "moved", "moved-old",
                "proj", "cloned", "linked", "viahooks", "vialink", "withlink"]


def _git(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _repository(path: Path, *, hooks: bool = True) -> None:
    env = {**os.environ, "HOME": str(path.parent)}
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    subprocess.run(["git", "-C", str(path), *IDENTITY.split(), "commit", "-q",
                    "--allow-empty", "-m", "start"], check=True, env=env)
    if not hooks:
        subprocess.run(["rm", "-rf", str(path / ".git" / "hooks")], check=True)


def _prepare(folder: Path) -> None:
    workspace = folder / "workspace"
    _repository(workspace)
    _repository(workspace / "sub")
    _repository(workspace / "nohooks", hooks=False)
    _repository(workspace / "moved")
    _repository(workspace / "withlink")
    (workspace / "sharedhooks").mkdir()
    subprocess.run(["rm", "-rf", str(workspace / "withlink" / ".git" / "hooks")], check=True)
    (workspace / "withlink" / ".git" / "hooks").symlink_to("../../sharedhooks")
    (workspace / "lnk").mkdir()
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text('{"editor.tabSize": 4}\n')


def _look_as_a_user(folder: Path) -> dict[str, str]:
    """Run git outside the sandbox where a user would; what each printed (for messages)."""
    workspace, home = folder / "workspace", folder / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "REINS_CANARY": str(folder / "pwned")}
    said: dict[str, str] = {}
    for name in REPOSITORIES:
        repo = workspace / name
        if not repo.is_dir():
            continue
        status = _git(repo, "status", env=env)
        commit = _git(repo, *IDENTITY.split(), "commit", "-q", "--allow-empty", "-m", "look",
                      env=env)
        said[name or "."] = status.stderr + commit.stderr
    if (workspace / "store.git").is_dir():
        push = _git(workspace, "push", "-q", "store.git", "HEAD:refs/heads/look", env=env)
        said["store.git"] = push.stderr
    return said


def _holds_something(path: Path) -> bool:
    """The entry exists and is not an empty folder (a later sandbox makes an empty, read-only
    `hooks/` in a repository that has none)."""
    if not os.path.lexists(path):
        return False
    return path.is_symlink() or not path.is_dir() or any(path.iterdir())


def _check(folder: Path, report: dict[str, Any]) -> None:
    said = _look_as_a_user(folder)
    workspace = folder / "workspace"
    assert not (folder / "pwned").exists(), f"a payload ran outside the sandbox: {said}"
    left = [rel for rel in MADE_BY_ATTACKS if _holds_something(workspace / rel)]
    assert not left, f"still in the workspace: {left}\n{report['outcomes']}"
    assert (workspace / ".vscode" / "settings.json").read_text() == '{"editor.tabSize": 4}\n'
    assert not (workspace / ".vscode-old").exists() and not (workspace / ".git-orig").exists()
    assert not (workspace / ".git" / "config.old").exists()
    reverted = {r["path"] for outcome in report["outcomes"] for r in outcome["reverted"]}
    assert {"fresh/.git/config", "deep/.envrc", ".aws", "store.git/hooks"} <= reverted
    assert all(r["moved_to"].startswith(str(folder / "data" / "quarantine"))
               for outcome in report["outcomes"] for r in outcome["reverted"]), report
    env = {"PATH": os.environ["PATH"], "HOME": str(folder / "home")}
    log = _git(workspace / "proj", "log", "--format=%s", env=env)
    assert log.stdout.split() == ["look", "first"], log.stderr
    assert (workspace / "proj" / ".git" / "config").is_file()
    assert (workspace / "proj" / ".env").read_text() == "A=1\n"
    assert _git(workspace / "cloned", "log", "--format=%s", env=env).stdout.split() == [
        "look", "start"]
    assert "url = " in (workspace / "cloned" / ".git" / "config").read_text()
    assert "second" in _git(workspace, "log", "--format=%s", env=env).stdout


def test_nothing_a_command_plants_runs_when_the_user_looks(confined: Confined) -> None:
    report = confined([*ATTACKS.values(), *LEGITIMATE.values()], prepare=_prepare,
                      inspect=_check)
    by_command = {o["command"]: o for o in report["outcomes"]}
    for name, command in LEGITIMATE.items():
        outcome = by_command[command]
        assert outcome["exit_code"] == 0 and not outcome["reverted"], (name, outcome)
