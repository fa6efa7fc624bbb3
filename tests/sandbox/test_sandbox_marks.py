"""The pure decisions of kernel.sandbox.marks, as tables."""

from __future__ import annotations

import pytest

from kernel.sandbox.marks import (
    GIT_DANGEROUS,
    classify,
    could_match_below,
    inert_git_config,
    inert_hooks,
    may_be_marked,
)

CLASSIFY = [
    # path, entry, git_dir, bare → (mark kind or None, rule, walk, git_dir below)
    (".git", "dir", None, False, ("git-dir", ".git", "descend", ".git")),
    ("a/b/.GIT", "dir", None, False, ("git-dir", ".git", "descend", "a/b/.GIT")),
    ("w/.git", "file", None, False, ("protected", ".git", "stop", None)),
    ("w/.git", "link", None, False, ("protected", ".git", "stop", None)),
    ("store", "dir", None, True, ("git-dir", "bare repository", "descend", "store")),
    (".git/config", "file", ".git", False, ("git-entry", "config", "stop", None)),
    (".git/hooks", "dir", ".git", False, ("git-entry", "hooks/**", "stop", None)),
    (".git/commondir", "file", ".git", False, ("git-entry", "commondir", "stop", None)),
    (".git/info", "dir", ".git", False, (None, "", "descend", ".git")),
    (".git/info/attributes", "file", ".git", False,
     ("git-entry", "info/attributes", "stop", None)),
    (".git/info/exclude", "file", ".git", False, (None, "", "stop", None)),
    (".git/objects", "dir", ".git", False, (None, "", "stop", None)),
    (".git/refs", "dir", ".git", False, (None, "", "stop", None)),
    (".git/refs/heads/config", "file", ".git", False, (None, "", "stop", None)),
    (".git/worktrees", "dir", ".git", False, (None, "", "descend", ".git")),
    (".git/worktrees/wt", "dir", ".git", False, (None, "", "descend", ".git")),
    (".git/worktrees/wt/gitdir", "file", ".git", False,
     ("git-entry", "worktrees/*/gitdir", "stop", None)),
    (".git/modules/a/b", "dir", ".git", False, (None, "", "descend", ".git")),
    (".git/modules/a/b/config", "file", ".git", False,
     ("git-entry", "modules/**/config", "stop", None)),
    (".git/config", "link", ".git", False, ("git-entry", "config", "stop", None)),
    (".git/hooks", "link", ".git", False, ("git-entry", "hooks/**", "stop", None)),
    ("s/.git/hooks", "dir", "s/.git", False, ("git-entry", "hooks/**", "stop", None)),
    (".env", "file", None, False, ("secret", ".env", "stop", None)),
    ("p/q/.env.local", "file", None, False, ("secret", ".env.*", "stop", None)),
    ("p/.env.example", "file", None, False, (None, "", "stop", None)),
    ("p/.ssh", "dir", None, False, ("secret", ".ssh/**", "stop", None)),
    ("p/.SSH", "dir", None, False, ("secret", ".ssh/**", "stop", None)),
    ("x/.config/gh", "dir", None, False, ("secret", ".config/gh/**", "stop", None)),
    ("x/.config", "dir", None, False, (None, "", "descend", None)),
    ("k/id_ed25519", "file", None, False, ("secret", "id_ed25519", "stop", None)),
    ("k/id_ed25519.pub", "file", None, False, (None, "", "stop", None)),
    ("pw.KDBX", "file", None, False, ("secret", "*.kdbx", "stop", None)),
    (".env", "link", None, False, (None, "", "stop", None)),
    (".envrc", "file", None, False, ("secret", ".envrc", "stop", None)),
    ("a/.vscode", "dir", None, False, ("protected", ".vscode/**", "stop", None)),
    ("a/.idea", "dir", None, False, ("protected", ".idea/**", "stop", None)),
    ("a/.devcontainer", "dir", None, False, ("protected", ".devcontainer/**", "stop", None)),
    ("a/b.code-workspace", "file", None, False,
     ("protected", "*.code-workspace", "stop", None)),
    ("a/.bashrc", "file", None, False, ("protected", ".bashrc", "stop", None)),
    ("a/.gitmodules", "file", None, False, ("protected", ".gitmodules", "stop", None)),
    ("a/.vscode", "link", None, False, ("protected", ".vscode/**", "stop", None)),
    ("a/.envrc", "link", None, False, ("protected", ".envrc", "stop", None)),
    ("src", "dir", None, False, (None, "", "descend", None)),
    ("src/main.py", "file", None, False, (None, "", "stop", None)),
    ("src/config", "file", None, False, (None, "", "stop", None)),
    ("hooks", "dir", None, False, (None, "", "descend", None)),
    # Spellings a file system that folds names opens for these (kernel.pathrules.fold_name).
    ("a/.g\u200cit", "dir", None, False, ("git-dir", ".git", "descend", "a/.g\u200cit")),
    (".git.", "dir", None, False, ("git-dir", ".git", "descend", ".git.")),
    ("w/.ＧＩＴ", "file", None, False, ("protected", ".git", "stop", None)),
    ("a/.envrc.", "file", None, False, ("secret", ".envrc", "stop", None)),
    ("a/.vsc\u200bode", "dir", None, False, ("protected", ".vscode/**", "stop", None)),
    ("a/.e\u200cnv", "file", None, False, ("secret", ".env", "stop", None)),
    ("a/.bashrc ", "file", None, False, ("protected", ".bashrc", "stop", None)),
]


@pytest.mark.parametrize(("path", "entry", "git_dir", "bare", "expected"), CLASSIFY)
def test_classify(path: str, entry: str, git_dir: str | None, bare: bool,
                  expected: tuple[str | None, str, str, str | None]) -> None:
    kind, rule, walk, below = expected
    seen = classify(path, entry, 7, git_dir=git_dir, bare=bare)  # type: ignore[arg-type]
    assert (seen.mark.kind if seen.mark else None) == kind
    assert (seen.mark.rule if seen.mark else "") == rule
    assert seen.walk == walk and seen.git_dir == below
    if seen.mark is not None:
        assert seen.mark.path == path and seen.mark.ino == 7 and seen.mark.entry == entry


@pytest.mark.parametrize(("folder", "expected"), [
    ("", True), ("info", True), ("INFO", True), ("hooks", True), ("worktrees", True),
    ("worktrees/x", True), ("worktrees/x/y", False), ("modules", True),
    ("modules/a/b/c/objects", True), ("objects", False), ("refs", False), ("logs", False),
    ("refs/heads", False), ("lfs", False), ("info/sub", False),
])
def test_could_match_below(folder: str, expected: bool) -> None:
    assert could_match_below(folder, GIT_DANGEROUS) is expected


INIT = ("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
        "\tlogallrefupdates = true\n")
CLONE = (INIT + '[remote "origin"]\n\turl = https://github.com/a/b.git\n'
         "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
         '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n')


@pytest.mark.parametrize(("text", "expected"), [
    (INIT, True),
    (CLONE, True),
    ("", True),
    ("# a comment\n; another\n" + INIT, True),
    ("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n", True),
    (INIT.replace('[core]', '[CORE]'), True),
    (CLONE.replace("https://github.com/a/b.git", "git@github.com:a/b.git"), True),
    (CLONE.replace("https://github.com/a/b.git", "/srv/repos/b"), True),
    (CLONE.replace("https://github.com/a/b.git", "../b"), True),
    (INIT + "\tfsmonitor = touch x\n", False),
    (INIT + "\tFsMonitor = true\n", False),
    (INIT + "\thooksPath = /tmp/h\n", False),
    (INIT + "\tsshCommand = evil\n", False),
    (INIT + "\tpager = less; touch x\n", False),
    (INIT + "\teditor = vim\n", False),
    (INIT + "\tworktree = /elsewhere\n", False),
    (INIT + "[include]\n\tpath = ../evil\n", False),
    (INIT + '[includeIf "gitdir:/"]\n\tpath = ../evil\n', False),
    (INIT + '[filter "lfs"]\n\tclean = touch x\n', False),
    (INIT + "[alias]\n\tst = !touch x\n", False),
    (INIT + '[diff "x"]\n\ttextconv = touch x\n', False),
    (CLONE.replace("https://github.com/a/b.git", "ext::sh -c touch% x"), False),
    (CLONE + "\tuploadpack = touch x\n", False),
    (CLONE.replace("\tremote = origin\n", "\tremote = origin\n\trebase = x\n"), False),
    (INIT + '[submodule "m"]\n\tupdate = !touch x\n', False),
    ('[core "x"]\n\tbare = false\n', False),
    ("[remote]\n\turl = https://a/b\n", False),
    (INIT + "\tbare = false \\\n\t\tfsmonitor = x\n", False),
    (INIT + '\tbare = "false"\n', False),
    (INIT + "\tbare = false # touch x\n", False),
    ("\tbare = false\n", False),
    ("[core\n", False),
    (INIT + "garbage\n", False),
    ("[core] bare = false\n", False),
])
def test_inert_git_config(text: str, expected: bool) -> None:
    assert inert_git_config(text) is expected


@pytest.mark.parametrize(("names", "expected"), [
    ({}, True),
    ({"pre-commit.sample": "file", "update.sample": "file"}, True),
    ({"pre-commit": "file"}, False),
    ({"pre-commit.sample": "file", "post-checkout": "file"}, False),
    ({"x.sample": "link"}, False),
    ({"x.sample": "dir"}, False),
    ({"pre-commit.SAMPLE": "file"}, False),
])
def test_inert_hooks(names: dict[str, str], expected: bool) -> None:
    assert inert_hooks(names) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "expected"), [
    (".env", True), (".ENV", True), ("prod.env", True), (".env.local", True), (".ssh", True),
    ("id_rsa", True), ("gh", True), (".git", True), (".vscode", True), ("x.code-workspace", True),
    ("credentials.toml", True), ("main.py", False), ("README.md", False), ("src", False),
    ("node_modules", False), ("index.js", False),
    (".g\u200cit", True), (".git.", True), (".envrc.", True), (".ｅnv", True),
    ("x.code-workspace.", True), ("mainpy.", False),
])
def test_may_be_marked(name: str, expected: bool) -> None:
    assert may_be_marked(name) is expected
