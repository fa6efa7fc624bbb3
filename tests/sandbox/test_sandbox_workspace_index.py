"""The workspace index (kernel.sandbox.workspace_index) on a real file system with real
inotify: it finds marks at any depth, follows what changes, and agrees with a fresh walk."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernel.sandbox.inotify import Inotify
from kernel.sandbox.workspace_index import WorkspaceIndex


def _kinds(index: WorkspaceIndex) -> dict[str, str]:
    return {path: mark.kind for path, mark in index.marks.items()}


def _fresh(root: Path) -> dict[str, str]:
    fresh = WorkspaceIndex(str(root), watch=False)
    return _kinds(fresh)


def _tree(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root / "sub")], check=True)
    for rel in ("a/b/.env", "a/.vscode/settings.json", "deep/er/still/.ssh/id_rsa",
                "src/main.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")


def test_marks_are_found_at_any_depth(tmp_path: Path) -> None:
    _tree(tmp_path)
    index = WorkspaceIndex(str(tmp_path))
    assert index.watching
    assert _kinds(index) == {
        "a/b/.env": "secret", "a/.vscode": "protected", "deep/er/still/.ssh": "secret",
        "sub/.git": "git-dir", "sub/.git/config": "git-entry", "sub/.git/hooks": "git-entry",
    }
    index.close()


def test_changes_are_followed_and_agree_with_a_fresh_walk(tmp_path: Path) -> None:
    _tree(tmp_path)
    index = WorkspaceIndex(str(tmp_path))
    steps = [
        "mkdir -p n/.git/hooks && touch n/.git/hooks/pre-commit",
        "rm -rf sub/.git/info && mkdir sub/.git/info",  # replaced: a new inode, a new watch
        "touch sub/.git/info/attributes",
        "mv a a2",
        "rm a2/b/.env && touch a2/b/.env.local",
        "mkdir store && cd store && mkdir objects refs && touch HEAD config",
        "mkdir -p x/y/z && touch x/y/z/.npmrc x/y/z/id_ed25519",
        "rm -rf deep",
        "touch sub/.git/commondir && mkdir -p sub/.git/worktrees/w && touch "
        "sub/.git/worktrees/w/gitdir",
        "ln -s sub/.git lnk && mkdir m && ln -s ../sub m/.git",
    ]
    for step in steps:
        subprocess.run(step, shell=True, cwd=tmp_path, check=True)
        index.refresh()
        assert _kinds(index) == _fresh(tmp_path), step
    assert {"store", "store/config", "sub/.git/info/attributes", "a2/b/.env.local",
            "sub/.git/commondir", "sub/.git/worktrees/w/gitdir", "m/.git"} <= index.marks.keys()
    assert "a/b/.env" not in index.marks and not any(p.startswith("deep") for p in index.marks)
    index.close()


def test_an_unchanged_workspace_is_not_read_again(tmp_path: Path) -> None:
    _tree(tmp_path)
    index = WorkspaceIndex(str(tmp_path))
    shutil.rmtree(tmp_path / "src")  # the index follows by events: one read of the root
    before = dict(index.marks)
    assert index.refresh() == before
    (tmp_path / "new.env").write_text("x")
    assert "new.env" in index.refresh()
    index.close()


def test_a_flood_of_events_falls_back_to_a_walk(tmp_path: Path) -> None:
    probe = Inotify()
    probe.close()
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    index = WorkspaceIndex(str(tmp_path))
    flood = tmp_path / "flood"
    flood.mkdir()
    index.refresh()
    for n in range(limit + 100):
        (flood / f"f{n}").touch()
    os.makedirs(tmp_path / "late" / ".git" / "hooks")
    index.refresh()
    assert _kinds(index) == _fresh(tmp_path)
    assert "late/.git/hooks" in index.marks
    index.close()


def test_excluded_folders_are_left_out(tmp_path: Path) -> None:
    _tree(tmp_path)
    own = tmp_path / "reins-data" / "sandbox-home"
    own.mkdir(parents=True)
    (own / ".gitconfig").write_text("[core]\n")
    index = WorkspaceIndex(str(tmp_path), excluded=(str(tmp_path / "reins-data"),))
    assert not any(p.startswith("reins-data") for p in index.marks)
    (tmp_path / "reins-data" / ".env").write_text("x")
    assert not any(p.startswith("reins-data") for p in index.refresh())
    index.close()


def test_current_says_whether_anything_changed(tmp_path: Path) -> None:
    _tree(tmp_path)
    index = WorkspaceIndex(str(tmp_path))
    assert index.current
    (tmp_path / "src" / "new.py").write_text("x")
    assert not index.current
    index.refresh()
    assert index.current
    assert not WorkspaceIndex(str(tmp_path), watch=False).current
    index.close()


def test_a_link_made_again_leading_elsewhere_is_another_entry(tmp_path: Path) -> None:
    """ext4 gives the freed inode to the next new entry: a protected link removed and made
    again leading elsewhere often has the inode it had; what it holds tells them apart."""
    for name in ("shared", "evil"):
        (tmp_path / name).mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    shutil.rmtree(tmp_path / "r" / ".git" / "hooks")
    links = {".vscode": "shared", ".envrc": "shared", "r/.git/hooks": "../../shared"}
    for link, target in links.items():
        (tmp_path / link).symlink_to(target)
    for watch in (True, False):
        index = WorkspaceIndex(str(tmp_path), watch=watch)
        before = dict(index.marks)
        assert {p: before[p].led for p in links} == links
        for link in links:
            os.unlink(tmp_path / link)
            os.symlink("evil" if "/" not in link else "../../evil", tmp_path / link)
        index.refresh()
        for link in links:
            assert index.marks[link] != before[link], link
            assert index.marks[link].led.endswith("evil")
        for link, target in links.items():
            os.unlink(tmp_path / link)
            os.symlink(target, tmp_path / link)
        index.close()


@pytest.mark.parametrize("names", [frozenset({"p.sh"}), frozenset({"p.sh", "tools"})])
def test_the_index_notes_the_names_it_follows(tmp_path: Path, names: frozenset[str]) -> None:
    workspace = tmp_path / "ws"
    (workspace / "a" / "tools").mkdir(parents=True)
    for where in ("p.sh", "a/p.sh", "a/tools/p.sh"):
        (workspace / where).write_text("x")
    (workspace / "a" / "link").symlink_to("tools")
    (workspace / "a" / "p.shx").write_text("x")
    index = WorkspaceIndex(str(workspace))
    try:
        index.follow(names)
        expected = {"p.sh": "file", "a/p.sh": "file", "a/tools/p.sh": "file"}
        if "tools" in names:
            expected["a/tools"] = "dir"
        assert index.named == expected
        (workspace / "a" / "p.sh").unlink()
        (workspace / "a" / "new" / "deeper").mkdir(parents=True)
        (workspace / "a" / "new" / "deeper" / "p.sh").symlink_to("elsewhere")
        index.refresh()
        del expected["a/p.sh"]
        assert index.named == {**expected, "a/new/deeper/p.sh": "link"}
        index.follow(frozenset())
        assert index.named == {}
    finally:
        index.close()
