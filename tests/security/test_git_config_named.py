"""What a repository's git config names is protected like a protected name
(kernel.sandbox.git_named): `core.hooksPath`'s folder, an `include.path` file, an alias's
script. A sandboxed command can neither change what exists of them (read-only, cannot be
replaced) nor leave what it made there (undone after it), whatever the spelling; git run
afterwards outside the sandbox, by the user, runs none of it. As root and as nobody. The file
tools refuse to write there (`auto` mode asks; `--approve deny` writes nothing)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.pathrules import NAMED_PREFIX
from kernel.paths import AppPaths
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
    "make the missing folder": "cd web && rm -rf .hooks stage evil; mkdir -p .hooks/_ && "
                               + HOOK.format(name="make", path=".hooks/_/pre-commit"),
    "rename a folder into place": "cd web && rm -rf .hooks stage evil; mkdir -p stage/_ && "
                                  + HOOK.format(name="rename", path="stage/_/pre-commit")
                                  + " && mv stage .hooks",
    "link a folder into place": "cd web && rm -rf .hooks stage evil; mkdir -p evil/_ && "
                                + HOOK.format(name="link", path="evil/_/pre-commit")
                                + " && ln -s evil .hooks",
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
    _repo(workspace / "web", "core.hooksPath=.hooks/_")
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
    assert not os.path.lexists(workspace / "web" / ".hooks" / "_")
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
    assert reverted["make the missing folder"] == {"web/.hooks/_"}
    assert reverted["rename a folder into place"] == {"web/.hooks/_"}
    assert reverted["link a folder into place"] == {"web/evil/_"}
    assert reverted["write the alias's script"] == {"app/tools/t.sh"}
    assert all(r["rule"].startswith(("core.hookspath in ", "alias.t in "))
               for o in report["outcomes"] for r in o["reverted"]), report


def _plant(folder: str, script: str, name: str) -> str:
    """A command making `folder/script` a script that leaves `pwned-<name>` in the home git
    runs with (the test's) when run."""
    return (f"mkdir -p {folder} && cd {folder} && printf '#!/bin/sh\\ntouch "
            f"\"$HOME/pwned-{name}\"\\ncat >/dev/null\\n' > {script} && chmod +x {script}")


ANYWHERE_ATTACKS = {
    # git -p version, git help and git's external commands start core.pager from the
    # user's folder; git run inside a git directory stays there
    "a pager below the top": _plant("pg/sub/deep", "p.sh", "pager"),
    "a pager in a new folder": _plant("pg/new/er", "p.sh", "new"),
    "overwrite a pager below the top": _plant("pg/sub", "p.sh", "old"),
    "an alias's script in the git directory": _plant("al/.git", "x.sh", "gitdir"),
    # $GIT_DIR/../g.sh from the git directory is the top's g.sh
    "a $GIT_DIR script": _plant("al", "g.sh", "var"),
    # alias.y = -c core.hooksPath=yh commit ...
    "a hook a git alias's -c names": _plant("al/yh", "pre-commit", "dashc"),
    # core.worktree = ../../wb: hooks run from wb
    "the worktree's hook": _plant("wb/h", "pre-commit", "worktree"),
    # receive-pack runs a non-bare repository's hooks from its git directory
    "a push hook in the git directory": _plant("rp/.git/h", "pre-receive", "push"),
    # core.hooksPath = tools/../.githooks: a link put in place of tools leads it elsewhere
    "a `..` hooks path through a new link": "mkdir -p other/er && "
                                            + _plant("other/.githooks", "pre-commit", "dotdot")
                                            + " && cd ../../lk && rm -rf tools && "
                                              "ln -s ../other/er tools",
}
LEGITIMATE_BELOW = "cd pg/sub/deep && echo notes > notes.txt && ls"


def _prepare_anywhere(folder: Path) -> None:
    workspace = folder / "workspace"
    _repo(workspace / "pg", "core.pager=sh p.sh")
    (workspace / "pg" / "sub" / "deep").mkdir(parents=True)
    (workspace / "pg" / "sub" / "p.sh").write_text("#!/bin/sh\ncat\n")
    _repo(workspace / "al", "alias.x=!./x.sh", "alias.g=!$GIT_DIR/../g.sh",
          "alias.y=-c core.hooksPath=yh commit -q --allow-empty -m y")
    (workspace / "wb" / "h").mkdir(parents=True)
    _repo(workspace / "wa", "core.worktree=../../wb", "core.hooksPath=h")
    _repo(workspace / "rp", "core.hooksPath=h", "receive.denyCurrentBranch=ignore")
    _repo(workspace / "lk", "core.hooksPath=tools/../.githooks")
    (workspace / "lk" / "tools").mkdir()
    (folder / "home").mkdir()


def _git_tty(cwd: Path, home: Path, *args: str) -> None:
    """git with a terminal as its output (a pager starts only then)."""
    main, side = os.openpty()
    try:
        subprocess.run(["git", "-c", "safe.directory=*", "-c", "user.name=u", "-c",
                        "user.email=u@u", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=side, stderr=side, timeout=60, check=False,
                       env={"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb"})
    finally:
        os.close(side)
        os.close(main)


def _check_anywhere(folder: Path, report: dict[str, Any]) -> None:
    workspace, home = folder / "workspace", folder / "home"
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")  # for the push's
    # upload-pack too (the workspace is nobody's in that run)
    for cwd in ("pg/sub/deep", "pg/sub", "pg/new/er"):
        if (workspace / cwd).is_dir():
            _git_tty(workspace / cwd, home, "-p", "version")
    _git_tty(workspace / "al" / ".git", home, "x")
    _git_tty(workspace / "al" / ".git", home, "g")
    _git_tty(workspace / "al", home, "y")
    _git_tty(workspace / "wa", home, "commit", "-q", "--allow-empty", "-m", "m")
    _git_tty(workspace / "lk", home, "commit", "-q", "--allow-empty", "-m", "m")
    source = folder / "src"
    done = _git(folder, home, "clone", "-q", str(workspace / "rp"), str(source))
    assert done.returncode == 0, (done.stderr, report)
    _git(source, home, "commit", "-q", "--allow-empty", "-m", "m")
    _git(source, home, "push", "-q", "origin", "HEAD:refs/heads/pushed")
    assert sorted(p.name for p in folder.rglob("pwned-*")) == [], report
    assert (workspace / "pg" / "sub" / "p.sh").read_text() == "#!/bin/sh\ncat\n"


def test_what_git_runs_from_any_folder_cannot_be_planted(confined: Confined) -> None:
    """A relative path a config names that git may take from the user's folder (a pager, an
    alias run in the git directory, hooks of a push or of `core.worktree`'s folder) is
    protected wherever it can lead: what exists is read-only, what a command makes there
    is undone."""
    report = confined([*ANYWHERE_ATTACKS.values(), LEGITIMATE_BELOW], prepare=_prepare_anywhere,
                      inspect=_check_anywhere)
    by_command = {o["command"]: o for o in report["outcomes"]}
    legitimate = by_command[LEGITIMATE_BELOW]
    assert legitimate["exit_code"] == 0 and not legitimate["reverted"], legitimate
    for name in ("overwrite a pager below the top", "the worktree's hook"):
        assert "Read-only file system" in by_command[ANYWHERE_ATTACKS[name]]["output"], name
    reverted = {name: {r["path"] for r in by_command[ANYWHERE_ATTACKS[name]]["reverted"]}
                for name in ANYWHERE_ATTACKS}
    assert reverted["a pager below the top"] == {"pg/sub/deep/p.sh"}
    assert reverted["a pager in a new folder"] == {"pg/new/er/p.sh"}
    assert reverted["an alias's script in the git directory"] == {"al/.git/x.sh"}
    assert reverted["a $GIT_DIR script"] == {"al/g.sh"}
    assert reverted["a hook a git alias's -c names"] == {"al/yh"}
    assert reverted["a push hook in the git directory"] == {"rp/.git/h"}
    assert reverted["a `..` hooks path through a new link"] == {"other/.githooks"}


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


def _file_tools_say(workspace: Path, reins_home: AppPaths, protected: dict[str, str],
                    free: tuple[str, ...]) -> None:
    """Writing each of `protected` (relative, and absolute) is protected as its value says;
    writing each of `free` is not protected."""
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace))
        for path, verdict in protected.items():
            for spelling in (path, str(workspace / path)):
                assert policy.classify(spelling, write=True).protected == verdict, spelling
        for path in free:
            assert policy.classify(path, write=True).protected is None, path
    finally:
        guards.close()


def test_the_file_tools_refuse_what_git_config_names(workspace: Path,
                                                     reins_home: AppPaths) -> None:
    _repo(workspace, "core.hooksPath=.hooks/_", "include.path=../team.inc",
          "diff.conv.textconv=python3 tools/conv.py")
    hooks = f"{NAMED_PREFIX}core.hookspath in .git/config"
    _file_tools_say(workspace, reins_home, {
        ".hooks/_/pre-commit": hooks, "./.hooks/_": hooks, ".hooks/x/../_/commit-msg": hooks,
        "team.inc": f"{NAMED_PREFIX}include.path in .git/config",
        "tools/conv.py": f"{NAMED_PREFIX}diff.conv.textconv in .git/config",
    }, (".hooks/other", "tools/other.py", "team.inc.bak"))


def test_the_file_tools_refuse_what_git_runs_from_any_folder(tmp_path: Path,
                                                             reins_home: AppPaths) -> None:
    _prepare_anywhere(tmp_path / "f")
    pager = f"{NAMED_PREFIX}core.pager in pg/.git/config"
    hooks = f"{NAMED_PREFIX}core.hookspath in wa/.git/config"
    _file_tools_say(tmp_path / "f" / "workspace", reins_home, {
        "pg/sub/deep/p.sh": pager, "pg/not/yet/made/p.sh": pager, "pg/sub/p.sh": pager,
        "al/g.sh": f"{NAMED_PREFIX}alias.g in al/.git/config",
        "al/lib/yh/pre-commit": f"{NAMED_PREFIX}alias.y in al/.git/config",
        "wb/h/pre-commit": hooks, "wb/deep/h/pre-commit": hooks,
        "al/.git/x.sh": ".git/**", "rp/.git/h/pre-receive": ".git/**",  # a git directory's
    }, ("pg/sub/deep/p.sh.bak", "pg/README", "wb/other/file", "p.sh", "al/x.sh.txt"))


@pytest.mark.parametrize("path", [".githooks/pre-commit", ".githooks/../.githooks/post-merge",
                                  "team.inc"])
def test_auto_mode_asks_before_writing_there(cli: Cli, path: str) -> None:
    _repo(cli.workspace, "core.hooksPath=.githooks", "include.path=../team.inc")
    (cli.workspace / ".githooks").mkdir()
    write_is_asked_and_denied(cli, path, "add a hook")


@contextlib.contextmanager
def _server_ran(confined: Confined, prepare: Callable[[Path], None], attacks: list[str]
                ) -> Iterator[tuple[Path, str]]:
    """Run `attacks` in a sandboxed server over the workspace `prepare` makes: (the
    workspace, the output), before it is removed."""
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-named-", dir="/var/tmp"))
    folder.chmod(0o777)
    try:
        (folder / "workspace").mkdir()
        prepare(folder)
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        report = run_as_server(confined.who, folder,
                               " ; ".join(f"( {c} ) 2>&1" for c in attacks))
        if not report["available"]:
            pytest.skip("no sandbox for this user here")
        yield folder / "workspace", report["out"]
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def test_a_sandboxed_server_cannot_write_what_git_config_names(confined: Confined) -> None:
    """A server lives across calls and what it makes is undone only at a call's end, so what
    exists must be read-only in its sandbox too (the same marks as a command's)."""
    attacks = [ATTACKS[name] for name in ("write the hook", "replace the folder",
                                          "append to the included file")]
    with _server_ran(confined, _prepare, attacks) as (workspace, out):
        assert out.count("Read-only file system") >= 2 and "busy" in out.lower(), out
        assert os.listdir(workspace / "app" / ".githooks") == []
        assert (workspace / "app" / "team.gitconfig").read_text() == (
            "[core]\n\tautocrlf = false\n")


def test_a_sandboxed_server_cannot_write_what_git_runs_from_any_folder(
        confined: Confined) -> None:
    """The same marks as a command's: a pager below the top and `core.worktree`'s hooks
    folder are read-only for a server too."""
    attacks = [ANYWHERE_ATTACKS[name] for name in ("overwrite a pager below the top",
                                                   "the worktree's hook")]
    with _server_ran(confined, _prepare_anywhere, attacks) as (workspace, out):
        assert out.count("Read-only file system") == 2, out
        assert os.listdir(workspace / "wb" / "h") == []
        assert (workspace / "pg" / "sub" / "p.sh").read_text() == "#!/bin/sh\ncat\n"
