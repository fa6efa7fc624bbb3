"""kernel.sandbox.git_named as tables: the config reader against git's own (`git config
--list` on the same text), what each key names, where relative paths lead, and which
workspace paths come out of a repository's configs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kernel.sandbox.git_named import (
    HOOK_NAMES,
    Entry,
    found_in,
    named,
    named_paths,
    parse,
    user_configs,
    with_named,
)
from kernel.sandbox.workspace_index import WorkspaceIndex

CONFIGS = [
    "[core]\n\thooksPath = .husky/_\n",
    '[core] hooksPath = "a b"  ; comment\n',
    "[Core]\nHooksPath=x#c\n",
    '[alias]\n\tx = "!./tools/x.sh \\"arg\\"" # c\n',
    '[diff "My Drv"]\n\ttextconv = python3 tools/conv.py\n',
    "[diff.Drv]\n\ttextconv = conv\n",
    "[core]\n\thooksPath = a\\\n  b\n",
    "[include]\n\tpath\n",
    "[core]\n\tbare\n\tfsmonitor = .git-fsm\n",
    '[includeIf "gitdir:~/w/"]\n\tpath = ../x.inc\n',
    '[sec "sub\\"q\\\\"]\n\tk = v\n',
    "  [core]  \n  hooksPath   =   spaced   value   \n",
    "[core]\n\tk = tab\\there\n",
    '[a]b=1\n[c] d = "x;y"#z\n',
    "\ufeff[core]\n\thooksPath = bom\n",
    "[core]\r\n\thooksPath = crlf\r\n",
    "[core]\n\thooksPath = x ; y\n\teditor = vim\n",
    "[core]hooksPath=x\n",
    '[core "x"]\n\thooksPath = y\n',
    "[core]\n\thooks-Path = y\n\thooksPath=\n",
    '[core]\n\thooksPath = "q"uo"ted"\n',
    "[core]\n\thooksPath = a\\\r\nb\n",
    "# c\n; c\n[core] ; c\n\thooksPath = z\n",
    "[core]\n\thooksPath = \\\n\n",
    '[core]\n\thooksPath = "a\\\nb"\n',
    "[alias] x = !sh -c './a'\n",
    "[core]\n hooksPath = 1\n[core]\n hooksPath = 2\n",
    '[filter "x"]\n\tsmudge = ./s %f\n',
    "[sub.DOT.ted]\nk=v\n",
    '[core]\n\thooksPath\t=\t\t"  lead"\n',
]
REFUSED_BY_GIT = [
    # git refuses the whole file; the reader skips the bad line and reads on (more is
    # protected, never less)
    ('[core]\n\tk = "unterminated\n[core]\n\thooksPath = h\n', [("core.hookspath", "h")]),
    ("[ core ]\n\thooksPath = y\n", []),
    ("[core]\n\thooksPath = a\\qb\n\teditor = ./e\n", [("core.editor", "./e")]),
    ('[a "b"c]\nk=v\n[core]\nhooksPath=h\n', [("core.hookspath", "h")]),
]


def _git_list(tmp_path: Path, text: str) -> list[tuple[str, str | None]] | None:
    config = tmp_path / "config"
    config.write_bytes(text.encode())
    done = subprocess.run(["git", "config", "-f", str(config), "--list", "-z"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        return None
    out: list[tuple[str, str | None]] = []
    for item in done.stdout.decode().split("\0"):
        if item:
            key, newline, value = item.partition("\n")
            out.append((key.lower(), value if newline else None))
    return out


@pytest.mark.parametrize("text", CONFIGS)
def test_the_reader_reads_what_git_reads(tmp_path: Path, text: str) -> None:
    git = _git_list(tmp_path, text)
    assert git is not None, "git accepts every one of these"
    assert [(e.key.lower(), e.value) for e in parse(text)] == git


@pytest.mark.parametrize(("text", "kept"), REFUSED_BY_GIT)
def test_a_file_git_refuses_is_read_line_by_line(tmp_path: Path, text: str,
                                                 kept: list[tuple[str, str]]) -> None:
    assert _git_list(tmp_path, text) is None
    assert [(e.key.lower(), e.value) for e in parse(text)] == kept


NAMED = [
    ("core.hookspath", ".husky/_", [("folder", ".husky/_")]),
    ("init.templatedir", "~/tpl", [("folder", "~/tpl")]),
    ("include.path", "../team.inc", [("config", "../team.inc")]),
    ("includeif.gitdir:~/w/.path", "x.inc", [("config", "x.inc")]),
    ("core.fsmonitor", "true", []),
    ("core.fsmonitor", "FALSE", []),
    ("core.fsmonitor", ".git/fsm.sh", [("program", ".git/fsm.sh")]),
    ("alias.t", "!./tools/t.sh --fast", [("program", "./tools/t.sh")]),
    ("alias.st", "status -sb", []),
    ("alias.x", '!sh -c "scripts/a b" && bin/c', [("program", "scripts/a b"),
                                                   ("program", "bin/c")]),
    ("diff.My Drv.textconv", "python3 tools/conv.py", [("program", "tools/conv.py")]),
    ("filter.lfs.smudge", "git-lfs smudge -- %f", []),
    ("filter.x.process", "PATH=bin/x ./proc", [("program", "bin/x"), ("program", "./proc")]),
    ("core.sshcommand", "ssh -i ./keys/id -F /etc/ssh/x", [("program", "./keys/id"),
                                                          ("program", "/etc/ssh/x")]),
    ("core.pager", "less", []),
    ("pager.log", "./pg", [("program", "./pg")]),
    ("credential.helper", "!f() { ./cred.sh; }; f", [("program", "./cred.sh")]),
    ("credential.https://x.example.helper", "/opt/h", [("program", "/opt/h")]),
    ("gpg.ssh.program", "bin/signer", [("program", "bin/signer")]),
    ("core.editor", "$HOME/bin/ed", []),
    ("remote.origin.url", "../upstream.git", []),
    ("user.name", "a/b", []),
    ("core.hookspath", None, []),
    ("core.x.hookspath", "h", []),
]


@pytest.mark.parametrize(("key", "value", "expected"), NAMED)
def test_what_a_key_names(key: str, value: str | None,
                          expected: list[tuple[str, str]]) -> None:
    assert list(named(Entry(key, value))) == expected


def test_relative_paths_lead_where_git_takes_them() -> None:
    texts = {
        "/ws/.git/config": "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../team.inc\n"
                           "[alias]\n\tt = !./t.sh\n",
        "/ws/team.inc": "[core]\n\tpager = ./pg\n[include]\n\tpath = /ws/.git/config\n"
                        "[includeIf \"onbranch:x\"]\n\tpath = ~/more.inc\n",
        "/home/u/more.inc": "[core]\n\thooksPath = ~/hooks\n",
    }
    found = found_in(["/ws/.git/config"], ["/ws"], "/home/u", read=texts)
    assert [(f.path, f.kind, f.key, f.config) for f in found] == [
        ("/ws/.githooks", "folder", "core.hookspath", "/ws/.git/config"),
        ("/ws/team.inc", "config", "include.path", "/ws/.git/config"),
        ("/ws/pg", "program", "core.pager", "/ws/team.inc"),
        ("/ws/.git/config", "config", "include.path", "/ws/team.inc"),  # read once
        ("/home/u/more.inc", "config", "includeif.onbranch:x.path", "/ws/team.inc"),
        ("/home/u/hooks", "folder", "core.hookspath", "/home/u/more.inc"),
        ("/ws/t.sh", "program", "alias.t", "/ws/.git/config"),
    ]


def test_includes_stop_at_gits_depth() -> None:
    texts = {f"/c{n}": f"[include]\n\tpath = /c{n + 1}\n" for n in range(30)}
    found = found_in(["/c0"], ["/"], "/h", read=texts)
    assert len(found) == 11


def test_the_users_configs_are_where_git_looks() -> None:
    assert user_configs({}, "/h") == ("/h/.gitconfig", "/h/.config/git/config",
                                      "/etc/gitconfig")
    assert user_configs({"XDG_CONFIG_HOME": "/x", "GIT_CONFIG_GLOBAL": "/g",
                         "GIT_CONFIG_SYSTEM": "/s"}, "/h") == ("/g", "/x/git/config", "/s")


def _repo(path: Path, *config: str) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for pair in config:
        key, value = pair.split("=", 1)
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)


def _named(workspace: Path, home: Path) -> dict[str, str]:
    index = WorkspaceIndex(str(workspace), watch=False)
    try:
        return named_paths(os.path.realpath(workspace), index.marks, home=str(home),
                           environ={})
    finally:
        index.close()


def test_the_workspaces_repositories_name_paths(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    _repo(workspace / "app", "core.hooksPath=.husky/_", "include.path=../../team.inc",
          "alias.t=!./tools/t.sh")
    (workspace / "team.inc").write_text("[core]\n\tfsmonitor = ./.fsm\n")
    _repo(workspace / "lib")  # nothing named
    subprocess.run(["git", "init", "-q", "--bare", str(workspace / "store.git")], check=True)
    subprocess.run(["git", "-C", str(workspace / "store.git"), "config", "core.hooksPath",
                    "myhooks"], check=True)
    (home / ".gitconfig").write_text("[core]\n\teditor = ./ed\n[alias]\n\tz = !/elsewhere/z\n")
    assert _named(workspace, home) == {
        "app/.husky/_": "core.hookspath in app/.git/config",
        "team.inc": "include.path in app/.git/config",
        "app/.fsm": "core.fsmonitor in team.inc",
        "app/tools/t.sh": "alias.t in app/.git/config",
        "app/ed": "core.editor in ~/.gitconfig",
        "lib/ed": "core.editor in ~/.gitconfig",
        "store.git/myhooks": "core.hookspath in store.git/config",
        "store.git/ed": "core.editor in ~/.gitconfig",
    }


@pytest.mark.parametrize("hooks", [".", "./", "..", "../app", "sub/.."])
def test_a_hooks_folder_holding_a_repository_is_named_by_hook(tmp_path: Path,
                                                              hooks: str) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    _repo(workspace / "app", f"core.hooksPath={hooks}")
    named_here = _named(workspace, home)
    folder = "" if hooks.startswith("..") and hooks != "../app" else "app/"
    assert set(named_here) == {f"{folder}{hook}" for hook in HOOK_NAMES}


def test_a_repository_above_the_workspace_counts(tmp_path: Path) -> None:
    _repo(tmp_path / "top", "core.hooksPath=sub/hooks")
    workspace = tmp_path / "top" / "sub"
    workspace.mkdir()
    assert _named(workspace, tmp_path / "home") == {"hooks": "core.hookspath in " + str(
        tmp_path / "top" / ".git" / "config")}


def test_a_linked_worktree_reads_its_main_repositorys_config(tmp_path: Path) -> None:
    _repo(tmp_path / "main", "core.hooksPath=.githooks")
    subprocess.run(["git", "-C", str(tmp_path / "main"), "-c", "user.name=t", "-c",
                    "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "main"), "worktree", "add", "-q",
                    str(tmp_path / "ws" / "wt")], check=True)
    named_here = _named(tmp_path / "ws", tmp_path / "home")
    assert named_here == {"wt/.githooks": "core.hookspath in " + str(
        tmp_path / "main" / ".git" / "config")}


def test_what_exists_is_marked_and_a_mark_of_the_walk_stays(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _repo(workspace, "core.hooksPath=.githooks", "alias.x=!./.git/hooks/x",
          "include.path=../shared")
    (workspace / ".githooks").mkdir()
    (workspace / "shared").symlink_to("real.inc")
    index = WorkspaceIndex(str(workspace), watch=False)
    try:
        marks = with_named(os.path.realpath(workspace), index.marks, home=str(tmp_path),
                           environ={})
    finally:
        index.close()
    assert (marks[".githooks"].kind, marks[".githooks"].entry) == ("protected", "dir")
    assert (marks["shared"].entry, marks["shared"].led) == ("link", "real.inc")
    assert marks[".git/hooks"].kind == "git-entry"  # the walk's own
    assert ".git/hooks/x" not in marks  # not there yet


def test_a_git_link_runs_its_hooks_from_where_the_link_is(tmp_path: Path) -> None:
    """`.git -> ../gitdirs/app` (a git directory elsewhere in the workspace): a relative
    `core.hooksPath` is taken from the link's folder, the worktree, as git takes it."""
    workspace = tmp_path / "ws"
    _repo(workspace / "gitdirs" / "real", "core.hooksPath=.githooks")
    (workspace / "app").mkdir()
    (workspace / "app" / ".git").symlink_to("../gitdirs/real/.git")
    assert _named(workspace, tmp_path / "home") == {
        "gitdirs/real/.githooks": "core.hookspath in gitdirs/real/.git/config",
        "app/.githooks": "core.hookspath in gitdirs/real/.git/config",
    }
