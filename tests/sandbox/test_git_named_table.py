"""kernel.sandbox.git_named as tables: the config reader against git's own (`git config
--list` on the same text), what each key names, where relative paths lead, and which
workspace paths come out of a repository's configs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePath

import pytest

from kernel.pathrules import at_any_depth
from kernel.sandbox.git_named import (
    HOOK_NAMES,
    Base,
    Entries,
    Entry,
    Found,
    Named,
    NamedPaths,
    Repository,
    found_in,
    named,
    named_paths,
    parse,
    peel,
    placed,
    places,
    user_configs,
    with_named,
    within,
)
from kernel.sandbox.marks import Mark
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
    ("alias.x", '!sh -c "scripts/a b" && bin/c', [("program", "scripts/a"),
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
    ("core.editor", "$HOME/bin/ed", [("program", "~/bin/ed")]),
    ("remote.origin.url", "../upstream.git", []),
    ("user.name", "a/b", []),
    ("core.hookspath", None, []),
    ("core.x.hookspath", "h", []),
    # spellings: a script without a `/` that an interpreter reads from git's folder
    ("core.pager", "sh p.sh", [("program", "p.sh")]),
    ("core.pager", "sh ./p.sh", [("program", "./p.sh")]),
    ("diff.x.textconv", "python3 -W ignore -u conv.py --fast", [("program", "conv.py")]),
    ("diff.x.textconv", "/usr/bin/perl -w conv.pl", [("program", "/usr/bin/perl"),
                                                    ("program", "conv.pl")]),
    ("alias.q", "!. ./env.sh && source more.sh", [("program", "./env.sh"),
                                                   ("program", "more.sh")]),
    ("core.pager", "exec env X=1 bash -e pg", [("program", "pg")]),
    ("core.editor", "bash -c 'sh ed.sh \"$@\"' x", [("program", "ed.sh")]),
    ("diff.x.textconv", "python3 -m conv", []),  # a module: out of reach (module notes)
    ("diff.x.textconv", "node -e 'x' conv.js", []),
    ("core.pager", "less -R", []),
    ("alias.f", "!f() { ./x.sh \"$1\"; }; f", [("program", "./x.sh")]),
    ("core.editor", "../x", [("program", "../x")]),
    ("core.editor", "sub/../x", [("program", "sub/../x")]),
    # variables git's shell expands to a known place; others are the user's environment
    ("alias.x", "!$GIT_DIR/../x", [("program", "$GIT_DIR/../x")]),
    ("alias.x", '!"${GIT_DIR}/hooks/x" a', [("program", "$GIT_DIR/hooks/x")]),
    ("core.pager", "${GIT_PREFIX}p.sh", [("program", "./p.sh")]),
    ("core.pager", "sh $GIT_PREFIX/p.sh", [("program", "./p.sh")]),
    ("alias.x", "!$PWD/x && $GIT_WORK_TREE/y", [("program", "./x"), ("program", "./y")]),
    ("core.editor", "${HOME}/ed", [("program", "~/ed")]),
    ("core.editor", "$EDITOR_HOME/ed", []),
    ("core.editor", "$HOMEDIR/ed", []),
    ("alias.x", "!$(git rev-parse --show-toplevel)/x.sh", [("program", "./x.sh")]),
    ("alias.x", "!`pwd`/x.sh $(cat ./list)", [("program", "./x.sh"), ("program", "./list")]),
    # git's own -c in a git alias, or in a shell command running git
    ("alias.y", "-c core.hooksPath=h commit", [("folder", "h")]),
    ("alias.y", "!git -c core.pager=./p.sh -c include.path=rel.inc log", [
        ("program", "./p.sh")]),
    ("alias.y", "-c include.path=~/team.inc log", [("config", "~/team.inc")]),
    ("alias.y", "-c 'diff.My Drv.textconv=sh conv' log", [("program", "conv")]),
]


@pytest.mark.parametrize(("key", "value", "expected"), NAMED)
def test_what_a_key_names(key: str, value: str | None,
                          expected: list[tuple[str, str]]) -> None:
    assert list(named(Entry(key, value))) == expected


def _texts(texts: dict[str, str]) -> Entries:
    return lambda path: parse(texts[path]) if path in texts else ()


def test_what_the_configs_name_and_from_where() -> None:
    texts = {
        "/ws/.git/config": "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../team.inc\n"
                           "[alias]\n\tt = !./t.sh\n\tg = !$GIT_DIR/../g.sh\n",
        "/ws/team.inc": "[core]\n\tpager = ./pg\n[include]\n\tpath = /ws/.git/config\n"
                        "[includeIf \"onbranch:x\"]\n\tpath = ~/more.inc\n",
        "/home/u/more.inc": "[core]\n\thooksPath = ~/hooks\n\teditor = ../ed\n",
    }
    found = found_in(["/ws/.git/config"], "/home/u", _texts(texts))
    assert [(f.path, f.kind, f.key, f.config, f.base) for f in found] == [
        (".githooks", "folder", "core.hookspath", "/ws/.git/config", "cwd"),
        ("/ws/team.inc", "config", "include.path", "/ws/.git/config", "absolute"),
        ("./pg", "program", "core.pager", "/ws/team.inc", "cwd"),
        ("/ws/.git/config", "config", "include.path", "/ws/team.inc", "absolute"),  # once
        ("/home/u/more.inc", "config", "includeif.onbranch:x.path", "/ws/team.inc",
         "absolute"),
        ("/home/u/hooks", "folder", "core.hookspath", "/home/u/more.inc", "absolute"),
        ("../ed", "program", "core.editor", "/home/u/more.inc", "cwd"),
        ("./t.sh", "program", "alias.t", "/ws/.git/config", "cwd"),
        ("../g.sh", "program", "alias.g", "/ws/.git/config", "git-dir"),
    ]


def test_includes_stop_at_gits_depth() -> None:
    texts = {f"/c{n}": f"[include]\n\tpath = /c{n + 1}\n" for n in range(30)}
    found = found_in(["/c0"], "/h", _texts(texts))
    assert len(found) == 11


PEELED = [("./x", (0, "x")), ("../x", (1, "x")), ("../../a/./b", (2, "a/b")), (".", (0, "")),
          ("..", (1, "")), ("a/../b", (0, "a/../b")), ("./../x/", (1, "x")), ("/x", (0, "x"))]


@pytest.mark.parametrize(("path", "expected"), PEELED)
def test_leading_ups_are_peeled(path: str, expected: tuple[int, str]) -> None:
    assert peel(path) == expected


WITHIN = [
    ("/ws", "/ws", (), ""),
    ("/ws/app", "/ws", (), "app"),
    ("/top", "/top/a/ws", ("/top", "/top/a"), ""),
    ("/", "/ws", ("/",), ""),
    ("/elsewhere", "/ws", (), None),
    ("/wsx", "/ws", (), None),
]


@pytest.mark.parametrize(("region", "root", "chain", "inside"), WITHIN)
def test_where_a_region_meets_the_workspace(region: str, root: str, chain: tuple[str, ...],
                                            inside: str | None) -> None:
    assert within(region, root) == (chain, inside)


APP = Repository("/ws/app/.git", ("/ws/app",), ("/ws/app",))
WORKTREE = Repository("/ws/a/.git", ("/ws/b",), ("/ws/a", "/ws/b"))
ABOVE = Repository("/top/.git", ("/top",), ("/top",))
BARE = Repository("/ws/s.git", ("/ws/s.git",), ())
USER = Repository("", (), ("/ws",))
PLACES = [
    # (found, base, kind), repository → paths to resolve, (folder, path) at any depth
    (("/ws/x", "absolute", "program"), APP, ["/ws/x"], []),
    (("./p.sh", "cwd", "program"), APP, ["/ws/app/.git/./p.sh", "/ws/app/./p.sh"],
     [("app", "p.sh")]),
    (("../p.sh", "cwd", "program"), APP,
     ["/ws/app/.git/../p.sh", "/ws/app/../p.sh", "/ws/app/../p.sh"], [("app", "p.sh")]),
    (("a/../b", "cwd", "program"), APP, ["/ws/app/.git/a/../b", "/ws/app/a/../b"],
     [("app", "a/../b"), ("app", "b")]),
    ((".", "cwd", "folder"), APP, ["/ws/app/.git/.", "/ws/app/."],
     [("app", hook) for hook in HOOK_NAMES]),
    ((".", "cwd", "program"), APP, ["/ws/app/.git/.", "/ws/app/."], []),
    (("h", "cwd", "folder"), WORKTREE, ["/ws/a/.git/h", "/ws/b/h"], [("a", "h"), ("b", "h")]),
    (("h", "cwd", "folder"), BARE, ["/ws/s.git/h"], []),
    (("../x", "git-dir", "program"), APP, ["/ws/app/.git/../x", "/../x"], []),
    (("../x", "git-dir", "program"), USER, ["/../x"], []),
    (("ed", "cwd", "program"), USER, [], [("", "ed")]),
]


@pytest.mark.parametrize(("found", "repo", "exact", "anywhere"), PLACES)
def test_where_a_named_path_may_lead(found: tuple[str, Base, Named], repo: Repository,
                                     exact: list[str], anywhere: list[tuple[str, str]]
                                     ) -> None:
    path, base, kind = found
    assert places(Found(path, kind, "k", "/c", base), repo, "/ws") == (
        tuple(dict.fromkeys(exact)), tuple(anywhere))


def test_the_folders_of_a_repository_above_the_workspace_are_each_taken() -> None:
    exact, anywhere = places(Found("../h", "folder", "k", "/c", "cwd"), ABOVE, "/top/a/ws")
    assert exact == ("/top/.git/../h", "/top/../h", "/top/a/../h", "/top/a/ws/../h")
    assert anywhere == (("", "h"),)


PLACED = [
    ("/ws/app/x", "program", ["app/x"]),
    ("/ws", "program", []),
    ("/elsewhere/x", "folder", []),
    ("/ws", "folder", list(HOOK_NAMES)),
    ("/ws/app", "folder", [f"app/{hook}" for hook in HOOK_NAMES]),  # holds app/.git
    ("/ws/app/.git", "folder", [f"app/.git/{hook}" for hook in HOOK_NAMES]),
    ("/ws/app/hooks", "folder", ["app/hooks"]),
]


@pytest.mark.parametrize(("real", "kind", "expected"), PLACED)
def test_what_protects_a_named_path(real: str, kind: Named, expected: list[str]) -> None:
    assert list(placed("/ws", real, kind, ["/ws/app/.git"])) == expected


AT_ANY_DEPTH = [
    ("/ws/p.sh", "/ws/**/p.sh", True),
    ("/ws/a/b/p.sh", "/ws/**/p.sh", True),
    ("/ws/a/p.sh/x", "/ws/**/p.sh", True),
    ("/ws/a/p.shx", "/ws/**/p.sh", False),
    ("/elsewhere/p.sh", "/ws/**/p.sh", False),
    ("/ws/app/lib/tools/t.sh", "/ws/app/**/tools/t.sh", True),
    ("/ws/app/lib/t.sh", "/ws/app/**/tools/t.sh", False),
    ("/ws/lib/tools/t.sh", "/ws/app/**/tools/t.sh", False),
    ("/ws/app/.husky/_/pre-commit", "/ws/app/**/.husky/_", True),
]


@pytest.mark.parametrize(("resolved", "key", "expected"), AT_ANY_DEPTH)
def test_a_path_named_at_any_depth(resolved: str, key: str, expected: bool) -> None:
    assert at_any_depth(PurePath(resolved), PurePath(key)) is expected


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


def _named(workspace: Path, home: Path) -> NamedPaths:
    index = WorkspaceIndex(str(workspace), watch=False)
    try:
        return named_paths(os.path.realpath(workspace), index.marks, home=str(home),
                           environ={})
    finally:
        index.close()


def _flat(named_here: NamedPaths) -> dict[str, str]:
    """`exact`, and each of `anywhere` as `folder/**/path`."""
    return {**named_here.exact, **{f"{a.folder}/**/{a.path}".lstrip("/"): a.rule
                                   for a in named_here.anywhere}}


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
    hooks, inc = "core.hookspath in app/.git/config", "include.path in app/.git/config"
    fsm, alias = "core.fsmonitor in team.inc", "alias.t in app/.git/config"
    editor = "core.editor in ~/.gitconfig"
    assert _flat(_named(workspace, home)) == {
        "app/.husky/_": hooks, "app/.git/.husky/_": hooks, "app/**/.husky/_": hooks,
        "team.inc": inc,
        "app/.fsm": fsm, "app/.git/.fsm": fsm, "app/**/.fsm": fsm,
        "app/tools/t.sh": alias, "app/.git/tools/t.sh": alias, "app/**/tools/t.sh": alias,
        "app/ed": editor, "app/.git/ed": editor, "app/**/ed": editor,
        "lib/ed": editor, "lib/.git/ed": editor, "lib/**/ed": editor,
        "store.git/myhooks": "core.hookspath in store.git/config",
        "store.git/ed": editor,
        "**/ed": editor,  # git run from a folder of no repository
    }


@pytest.mark.parametrize("hooks", [".", "./", "..", "../app", "sub/.."])
def test_a_hooks_folder_holding_a_repository_is_named_by_hook(tmp_path: Path,
                                                              hooks: str) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    _repo(workspace / "app", f"core.hooksPath={hooks}")
    exact = _named(workspace, home).exact
    folder = "" if hooks.startswith("..") and hooks != "../app" else "app/"
    assert {f"{folder}{hook}" for hook in HOOK_NAMES} <= set(exact)
    assert not {"app", "app/.git"} & set(exact)


def test_a_repository_above_the_workspace_counts(tmp_path: Path) -> None:
    _repo(tmp_path / "top", "core.hooksPath=sub/hooks")
    workspace = tmp_path / "top" / "sub"
    workspace.mkdir()
    rule = "core.hookspath in " + str(tmp_path / "top" / ".git" / "config")
    assert _flat(_named(workspace, tmp_path / "home")) == {"hooks": rule, "**/sub/hooks": rule}


def test_a_linked_worktree_reads_its_main_repositorys_config(tmp_path: Path) -> None:
    _repo(tmp_path / "main", "core.hooksPath=.githooks")
    subprocess.run(["git", "-C", str(tmp_path / "main"), "-c", "user.name=t", "-c",
                    "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "main"), "worktree", "add", "-q",
                    str(tmp_path / "ws" / "wt")], check=True)
    rule = "core.hookspath in " + str(tmp_path / "main" / ".git" / "config")
    assert _flat(_named(tmp_path / "ws", tmp_path / "home")) == {
        "wt/.githooks": rule, "wt/**/.githooks": rule}


def _marked(workspace: Path, home: Path) -> dict[str, Mark]:
    """The marks with what git configs name, the index following its names (as
    kernel.sandbox.guard does)."""
    root = os.path.realpath(workspace)
    index = WorkspaceIndex(root, watch=False)
    try:
        named_here = named_paths(root, index.marks, home=str(home), environ={})
        index.follow(named_here.names)
        return with_named(root, index.marks, named_here, index.named)
    finally:
        index.close()


def test_what_exists_is_marked_and_a_mark_of_the_walk_stays(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _repo(workspace, "core.hooksPath=.githooks", "alias.x=!./.git/hooks/x",
          "include.path=../shared")
    (workspace / ".githooks").mkdir()
    (workspace / "shared").symlink_to("real.inc")
    marks = _marked(workspace, tmp_path)
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
    rule = "core.hookspath in gitdirs/real/.git/config"
    assert _flat(_named(workspace, tmp_path / "home")) == {
        "gitdirs/real/.githooks": rule, "gitdirs/real/.git/.githooks": rule,
        "gitdirs/real/**/.githooks": rule, "app/.githooks": rule, "app/**/.githooks": rule,
    }


@pytest.mark.parametrize("where", ["config", "config.worktree", "dot-git-file"])
def test_core_worktree_is_where_hooks_and_commands_run(tmp_path: Path, where: str) -> None:
    """A repository whose `core.worktree` names another folder runs its hooks from there;
    the user may run git from where its `.git` is too (an alias then runs from there)."""
    workspace = tmp_path / "ws"
    (workspace / "b").mkdir(parents=True)
    if where == "dot-git-file":
        subprocess.run(["git", "init", "-q", "--separate-git-dir", str(tmp_path / "gd"),
                        str(workspace / "a")], check=True)
        config = str(tmp_path / "gd" / "config")
        _repo(workspace / "a", "core.worktree=../ws/b", "core.hooksPath=h")
    elif where == "config.worktree":
        _repo(workspace / "a", "extensions.worktreeConfig=true",
              "core.repositoryformatversion=1", "core.hooksPath=h")
        subprocess.run(["git", "-C", str(workspace / "a"), "config", "--worktree",
                        "core.worktree", "../../b"], check=True)
        config = "a/.git/config"
    else:
        _repo(workspace / "a", "core.worktree=../../b", "core.hooksPath=h")
        config = "a/.git/config"
    rule = f"core.hookspath in {config}"
    expected = {"b/h": rule, "a/**/h": rule, "b/**/h": rule}
    if where != "dot-git-file":
        expected["a/.git/h"] = rule
    assert _flat(_named(workspace, tmp_path / "home")) == expected


def test_core_worktree_in_an_included_file_is_not_gits(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _repo(workspace / "a", "include.path=../wt.inc", "core.hooksPath=h")
    (workspace / "a" / "wt.inc").write_text("[core]\n\tworktree = ../../b\n")
    assert "b/h" not in _named(workspace, tmp_path / "home").exact


def test_a_worktree_outside_the_workspace_names_only_what_leads_back(tmp_path: Path) -> None:
    """Outside the workspace is nothing a command can write; a path from there that leads
    back into it counts."""
    workspace, outside = tmp_path / "ws", tmp_path / "out"
    outside.mkdir()
    _repo(workspace / "a", f"core.worktree={outside}", "core.hooksPath=h",
          "alias.t=!../ws/t.sh")
    exact = _named(workspace, tmp_path / "home").exact
    assert "t.sh" in exact and not any(p.startswith("out") for p in exact)


def test_a_name_at_any_depth_is_marked_where_it_leads(tmp_path: Path) -> None:
    """`alias.t = !./tools/t.sh`: each `tools/t.sh` below the repository is marked, also
    through a link on the way (`x/tools -> ../evil`: where it leads)."""
    workspace = tmp_path / "ws"
    _repo(workspace, "alias.t=!./tools/t.sh")
    for folder in ("tools", "sub/tools", "evil"):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / "t.sh").write_text("x")
    (workspace / "x").mkdir()
    (workspace / "x" / "tools").symlink_to("../evil")
    (workspace / "sub" / "t.sh").write_text("not named")
    marks = _marked(workspace, tmp_path)
    named_here = {p for p, m in marks.items() if m.rule.startswith("alias.t")}
    assert named_here == {"tools/t.sh", "sub/tools/t.sh", "evil/t.sh"}


GIT_LOG = "ran.log"
SCRIPT = ('#!/bin/sh\necho "{rel}" >> {log}\n'
          'case "$1" in *EDITMSG) echo msg > "$1";; esac\ncat >/dev/null 2>&1\nexit 0\n')
INCLUDE_IF = {"ws/a/team.inc": "[core]\n\thooksPath = ../h\n"}
USERS_INCLUDE_IF = {"home/.gitconfig": '[includeIf "gitdir:ws/a/"]\n\tpath = ../ws/u.inc\n',
                    "ws/u.inc": "[core]\n\thooksPath = h\n"}
GIT_RUNS: list[tuple[list[tuple[str, str]], str, list[str], str, bool, dict[str, str]]] = [
    # config of repository a (worktree a/, or b/ with core.worktree); the script's name;
    # git's arguments; the folder it runs from; GIT_DIR set; files written first
    ([("core.pager", "./p.sh")], "p.sh", ["-p", "version"], "a/sub/deep", False, {}),
    ([("core.pager", "./p.sh")], "p.sh", ["log", "-1"], "a/sub/deep", False, {}),
    ([("pager.log", "sh p.sh")], "p.sh", ["log", "-1"], "a/sub", False, {}),
    ([("core.pager", "sh ${GIT_PREFIX}p.sh")], "p.sh", ["log", "-1"], "a/sub/deep", False, {}),
    ([("core.pager", "../p.sh")], "p.sh", ["-p", "version"], "a/sub/deep", False, {}),
    ([("core.editor", "./p.sh")], "p.sh", ["commit", "--allow-empty"], "a/sub/deep", False, {}),
    ([("core.editor", "sub/../p.sh")], "p.sh", ["commit", "--allow-empty"], "a/sub", False, {}),
    ([("alias.x", "!./p.sh")], "p.sh", ["x"], "a/sub/deep", False, {}),
    ([("alias.x", "!./p.sh")], "p.sh", ["x"], "a/.git", False, {}),
    ([("alias.x", "!f() { sh p.sh; }; f")], "p.sh", ["x"], "a/sub", False, {}),
    ([("alias.x", "!$GIT_DIR/../p.sh")], "p.sh", ["x"], "a/.git", False, {}),
    ([("alias.x", "-c core.hooksPath=h commit --allow-empty -m m")], "h/pre-commit", ["x"],
     "a/sub", False, {}),
    ([("core.hooksPath", "h")], "h/pre-commit", ["commit", "--allow-empty", "-m", "m"],
     "a/sub/deep", True, {}),
    ([("core.hooksPath", "../h")], "h/pre-commit", ["commit", "--allow-empty", "-m", "m"],
     "a/sub", False, {}),
    ([("core.worktree", "../../b"), ("core.hooksPath", "h")], "h/pre-commit",
     ["commit", "--allow-empty", "-m", "m"], "a/sub", False, {}),
    ([("core.worktree", "../../b"), ("core.editor", "./p.sh")], "p.sh",
     ["commit", "--allow-empty"], "a", False, {}),
    ([("core.worktree", "../../b"), ("alias.x", "!./p.sh")], "p.sh", ["x"], "a/sub", False, {}),
    ([("core.hooksPath", "h"), ("receive.denyCurrentBranch", "ignore")], "h/pre-receive",
     ["push", "-q", "../a", "HEAD:refs/heads/pushed"], "src", False, {}),
    ([("includeIf.gitdir:**/a/.path", "../team.inc")], "h/pre-commit",
     ["commit", "--allow-empty", "-m", "m"], "a/sub", False, INCLUDE_IF),
    ([], "h/pre-commit", ["commit", "--allow-empty", "-m", "m"], "a/sub", False,
     USERS_INCLUDE_IF),
]


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run git with a terminal as its output (it starts a pager only then)."""
    main, side = os.openpty()
    try:
        subprocess.run(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=side, stderr=side, timeout=60, check=False)
    finally:
        os.close(side)
        os.close(main)


@pytest.mark.parametrize(("config", "script", "args", "cwd", "git_dir", "files"), GIT_RUNS)
def test_what_git_runs_from_any_folder_is_marked(
        tmp_path: Path, config: list[tuple[str, str]], script: str, args: list[str], cwd: str,
        git_dir: bool, files: dict[str, str]) -> None:
    """Against real git: the configs name a script relative to the folder git runs it from;
    one is planted in every folder; whichever git runs must be marked."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    log = tmp_path / GIT_LOG
    _repo(workspace / "a", "user.name=u", "user.email=u@u")
    subprocess.run(["git", "-C", str(workspace / "a"), "commit", "-q", "--allow-empty", "-m",
                    "one"], check=True)
    subprocess.run(["git", "clone", "-q", str(workspace / "a"), str(workspace / "src")],
                   check=True)
    for folder in ("a/sub/deep", "b/sub/deep"):
        (workspace / folder).mkdir(parents=True)
    for key, value in config:
        subprocess.run(["git", "-C", str(workspace / "a"), "config", key, value], check=True)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    folders = [p for p in workspace.rglob("*") if p.is_dir() and "objects" not in p.parts]
    for folder in [workspace, *folders]:
        planted = folder / script
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text(SCRIPT.format(rel=planted.relative_to(workspace), log=log))
        planted.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_AUTHOR_NAME": "u",
           "GIT_AUTHOR_EMAIL": "u@u", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@u",
           "TERM": "dumb", "PAGER": "cat"}
    if git_dir:
        env["GIT_DIR"] = str(workspace / "a" / ".git")
    _git(args, workspace / cwd, env)
    ran = set(log.read_text().split()) if log.exists() else set()
    assert ran, "git ran none of the planted scripts"
    kept = [path for path, mark in _marked(workspace, home).items() if mark.kind != "git-dir"]
    for rel in ran:  # read-only itself or in a read-only folder (a git directory is not)
        assert any(rel == path or rel.startswith(path + "/") for path in kept), (rel, kept)
