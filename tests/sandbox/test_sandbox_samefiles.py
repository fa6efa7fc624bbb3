"""Other names (hard links) of secret and protected files, piece by piece: where the lists'
entries are found (kernel.hardlinks.anchored), the verdict text the file tools read, which
mark wins (samefiles.with_same), the index's link counts (WorkspaceIndex.linked) as files
are linked, renamed, removed and replaced, when the workspace must be walked again
(SameFiles.current), and that revert never undoes another name. Real files, real inotify."""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from kernel.hardlinks import Named, anchored, at_home, parse_verdict, verdict_text
from kernel.pathrules import SECRET_PATTERNS, WORKTREE_PROTECTED
from kernel.sandbox.marks import Mark
from kernel.sandbox.revert import to_revert
from kernel.sandbox.samefiles import SameFiles, same_marks, with_same
from kernel.sandbox.workspace_index import WorkspaceIndex

HOME_ENTRIES = [".ssh/id_rsa", ".aws/credentials", ".config/gh/hosts.yml", ".netrc", "a.ppk",
                "client_secret_1.json", ".cargo/credentials.toml", "prod.env",
                ".var/app/org.x/config/chromium/Default/Cookies", ".env.local", ".bashrc",
                ".config/fish/config.fish", "x.code-workspace", "mise.dev.toml",
                "notes.txt", ".config/other/file", "projects/deep/.env"]


@pytest.mark.parametrize("patterns", [SECRET_PATTERNS, WORKTREE_PROTECTED])
def test_anchored_finds_what_glob_finds_and_hidden_names_too(tmp_path: Path,
                                                             patterns: tuple[str, ...]) -> None:
    for rel in HOME_ENTRIES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / ".hidden.env").write_text("x")  # glob's * skips a leading dot; the list does not
    globbed = {found for p in patterns
               for found in glob.glob(os.path.join(glob.escape(str(tmp_path)),
                                                   p.removesuffix("/**")))}
    found = set(anchored(str(tmp_path), patterns))
    assert globbed <= found
    assert found - globbed <= {str(tmp_path / ".hidden.env")}
    assert str(tmp_path / "notes.txt") not in found
    assert str(tmp_path / "projects/deep/.env") not in found  # anchored, not at any depth


NAMED = [Named("/h/.ssh/id_rsa", "secret", ".ssh/**", 2),
         Named("/w/repo/.git/config", "protected", "config", 3),
         Named("/w/a:b/with:colons", "protected", ".envrc", 2),
         Named("/w/.env", "secret", ".env", 2)]


@pytest.mark.parametrize("named", NAMED)
def test_the_verdict_text_reads_back(named: Named) -> None:
    back = parse_verdict(verdict_text(named))
    assert back is not None and (back.path, back.kind, back.rule) == (
        named.path, named.kind, named.rule)


@pytest.mark.parametrize("text", ["", ".vscode", "hard-link:other:x:/p", "link:.vscode",
                                  "hard-link:secret", "hard-link:secret:.env"])
def test_other_texts_are_no_verdict(text: str) -> None:
    assert parse_verdict(text) is None


def _mark(path: str, kind: str, same_as: str = "") -> Mark:
    return Mark(path, kind, "r", "file", 1, same_as=same_as)  # type: ignore[arg-type]


MERGES = [  # (by name, by inode, the kind kept)
    (None, "secret", "secret"),
    (None, "protected", "protected"),
    ("protected", "secret", "secret"),  # src/.bashrc that is ~/.pgpass: hidden
    ("secret", "protected", "secret"),  # .env that is .git/config: stays hidden
    ("secret", "secret", "secret"),
    ("protected", "protected", "protected"),
    ("git-entry", "secret", "secret"),
]


@pytest.mark.parametrize(("by_name", "by_inode", "kept"), MERGES)
def test_a_mark_that_hides_wins(by_name: str | None, by_inode: str, kept: str) -> None:
    marks = {} if by_name is None else {"x": _mark("x", by_name)}
    merged = with_same(marks, {"x": _mark("x", by_inode, "/elsewhere")})
    assert merged["x"].kind == kept
    assert bool(merged["x"].same_as) == (by_name is None or (
        by_inode == "secret" and by_name != "secret"))


def test_same_marks_name_other_names_only(tmp_path: Path) -> None:
    files = {(1, 10): Named(str(tmp_path / ".env"), "secret", ".env", 2),
             (1, 11): Named("/h/.bashrc", "protected", ".bashrc", 2)}
    linked = {".env": (1, 10), "copy": (1, 10), "rc": (1, 11), "venv/pkg.py": (1, 12),
              "other-device": (2, 10)}
    found = same_marks(str(tmp_path), files, linked)
    assert {p: (m.kind, m.rule, m.same_as) for p, m in found.items()} == {
        "copy": ("secret", ".env", str(tmp_path / ".env")),
        "rc": ("protected", ".bashrc", "/h/.bashrc")}


def test_revert_never_undoes_another_name(tmp_path: Path) -> None:
    new = {"notes.txt": _mark("notes.txt", "secret", "/h/.ssh/id_rsa"),
           "sub/.envrc": Mark("sub/.envrc", "protected", ".envrc", "file", 5)}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/.envrc").write_text("x")
    assert [m.path for m in to_revert(tmp_path, {}, new)] == ["sub/.envrc"]


def test_the_index_follows_link_counts(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    ws = tmp_path / "ws"
    (ws / "a/b").mkdir(parents=True)
    outside.mkdir()
    (outside / "f").write_text("x")
    (ws / "one").write_text("x")
    os.link(outside / "f", ws / "a/b/linked")
    os.link(outside / "f", ws / ".bashrc")  # a marked name counts too
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    os.link(outside / "f", ws / "repo/.git/description.bak")  # git's own: not walked
    index = WorkspaceIndex(str(ws))
    key = (os.stat(outside / "f").st_dev, os.stat(outside / "f").st_ino)
    assert index.linked == {"a/b/linked": key, ".bashrc": key}
    os.rename(ws / "a/b/linked", ws / "a/renamed")
    os.link(outside / "f", ws / "a/b/new")
    index.refresh()
    assert set(index.linked) == {"a/renamed", "a/b/new", ".bashrc"}
    os.unlink(ws / "a/b/new")
    os.unlink(ws / "a/renamed")
    (ws / "a/renamed").mkdir()  # a folder by that name now
    index.refresh()
    assert set(index.linked) == {".bashrc"}
    os.unlink(outside / "f")
    os.unlink(ws / "repo/.git/description.bak")
    os.chmod(ws / ".bashrc", 0o600)  # one name left; the count is read when its folder is
    index.rescan()
    assert index.linked == {}
    index.close()


def test_a_new_name_of_a_known_file_where_no_watch_sees_it_asks_for_a_walk(
        tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh/id_rsa").write_text("key")
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts/hook.sh").write_text("#!/bin/sh\n")
    (ws / "plain").write_text("x")
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    index = WorkspaceIndex(str(ws))
    same = SameFiles(str(home), str(ws))
    try:
        assert not same.current(index.marks, index.linked)  # the first look-up: just walked
        assert same.quiet(index.marks)
        os.link(ws / "scripts/hook.sh", ws / "repo/.git/hooks/pre-commit")  # hooks: unwalked
        index.refresh()
        assert index.linked == {}  # scripts/ saw no event
        assert not same.quiet(index.marks)  # the hooks folder is watched for the look-up
        assert same.current(index.marks, index.linked)
        index.rescan()
        assert not same.current(index.marks, index.linked)
        assert set(same.marks(index.linked)) == {"scripts/hook.sh"}
        os.link(home / ".ssh/id_rsa", ws / "notes.txt")  # a new name the index sees itself
        index.refresh()
        assert not same.current(index.marks, index.linked)
        assert set(same.marks(index.linked)) == {"scripts/hook.sh", "notes.txt"}
        os.link(ws / "plain", home / ".profile")  # a name in the home: watched there
        assert not same.quiet(index.marks)
        assert same.current(index.marks, index.linked)
        index.rescan()
        same.current(index.marks, index.linked)
        assert same.marks(index.linked)["plain"].same_as == str(home / ".profile")
    finally:
        same.close()
        index.close()


def test_at_home_keeps_every_file_of_a_folder_reached_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "cloud/aws").mkdir(parents=True)
    (tmp_path / "cloud/aws/credentials").write_text("k")
    (tmp_path / ".aws").symlink_to("cloud/aws")
    (tmp_path / ".bashrc").write_text("rc")
    found = {named.path: (named.kind, named.rule) for named in at_home(str(tmp_path)).values()}
    assert found == {str(tmp_path / ".aws/credentials"): ("secret", ".aws/**"),
                     str(tmp_path / ".bashrc"): ("protected", ".bashrc")}


@pytest.mark.parametrize(("name", "matters"), [
    (".claude.json", False), ("notes.txt", False), (".cache", False), ("Downloads", False),
    (".profile", True), (".bash_history", True), (".ssh", True), (".config", True),
    (".SSH", True), ("key.ppk", True), ("prod.env", True), ("mise.local.toml", True),
])
def test_only_entries_of_the_home_named_as_the_lists_begin_look_up_again(
        tmp_path: Path, name: str, matters: bool) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    same = SameFiles(str(home), str(ws))
    try:
        same.current({}, {})
        assert same.quiet({})
        (home / name).write_text("x")
        assert same.quiet({}) is not matters
        assert same.quiet({"a": Mark("a", "secret", ".env", "file", 1)}) is False
    finally:
        same.close()
