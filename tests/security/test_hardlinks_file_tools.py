"""Hard links through the file tools: a file that is another name (the same inode) of a
secret is read as that secret (refused unless the user approves that very path, with a
message naming the secret it is), and one that is another name of a protected file is
written as that file (refused; in `auto` mode it asks). Names in the workspace come from the
workspace index (kernel.sandbox.guard, as `reins exec` and the app use it); a file outside
the workspace, or a policy without an index, is compared with the home's secret and
protected files directly. A hard link of nothing secret or protected (uv's `.venv`, a local
clone) stays an ordinary file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.fakemodel import ToolUse, reply
from kernel.hardlinks import SAME_FILE_PREFIX
from kernel.paths import AppPaths
from kernel.sandbox.guard import WorkspaceGuards
from kernel.tools.pathpolicy import PathPolicy, PathRefused
from tests.cli.conftest import Cli, cli, events
from tests.security.conftest import ROOT

__all__ = ["cli"]

CANARY = "CANARY-hardlink-5e1d"
HOME_SECRETS = [".ssh/id_ed25519", "cloud/aws/credentials", ".config/gh/hosts.yml", ".pgpass"]
SECRET_NAMES = {  # another name in the workspace -> the secret it is (home- or workspace-)
    "notes.txt": "~/.ssh/id_ed25519",
    "a/b/c/d/e/README.md": "~/.aws/credentials",  # ~/.aws -> cloud/aws: the secret's name
    "config.yml": "~/.config/gh/hosts.yml",  # only kernel.pathrules' list names it
    "src/.bashrc": "~/.pgpass",  # a protected name: readable, but this one is a secret
    "env.sample": ".env",
    "key.txt": "deploy/.ssh/id_rsa",
}
PROTECTED_NAMES = {
    "gitconfig.txt": "repo/.git/config",
    "scripts/pre-commit.sh": "repo/.git/hooks/pre-commit",
    "dotfiles/bashrc": "~/.bashrc",
    "tasks.json.bak": ".vscode/tasks.json",
    "copy-of-envrc": "sub/.envrc",  # secret AND protected
}


def _where(home: Path, workspace: Path, location: str) -> Path:
    return home / location[2:] if location.startswith("~/") else workspace / location


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for rel in HOME_SECRETS:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"token = {CANARY}\n")
    (home / ".aws").symlink_to("cloud/aws")
    (home / ".bashrc").write_text("# the user's bashrc\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def _plant(home: Path, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace / "repo")], check=True)
    (workspace / "repo/.git/hooks/pre-commit").write_text("#!/bin/sh\n")
    for rel in (".env", "deploy/.ssh/id_rsa", "sub/.envrc"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(f"export T={CANARY}\n")
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode/tasks.json").write_text("{}\n")
    for name, location in {**SECRET_NAMES, **PROTECTED_NAMES}.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        os.link(_where(home, workspace, location), workspace / name)
    (workspace / "alias.txt").symlink_to("notes.txt")
    cache = workspace.parent / "uv-cache"
    cache.mkdir()
    (cache / "pkg.py").write_text("print('a package')\n")
    (workspace / ".venv/lib").mkdir(parents=True)
    os.link(cache / "pkg.py", workspace / ".venv/lib/pkg.py")
    (workspace / "plain.sh").write_text("echo plain\n")


@pytest.fixture
def policy(home: Path, workspace: Path, reins_home: AppPaths) -> Iterator[PathPolicy]:
    _plant(home, workspace)
    guards = WorkspaceGuards(reins_home)
    try:
        yield PathPolicy(workspace, app_paths=reins_home,
                         links=lambda: guards.protected_links(workspace))
    finally:
        guards.close()


def _spellings(workspace: Path, name: str) -> list[str]:
    head, _, tail = name.rpartition("/")
    last = head.rpartition("/")[2]
    return [name, f"./{name}", str(workspace / name), f"{workspace}//{name}",
            f"{head}/../{last}/./{tail}" if head else f"sub/../{name}"]


@pytest.mark.parametrize("name", list(SECRET_NAMES))
def test_another_name_of_a_secret_is_read_as_that_secret(
        policy: PathPolicy, home: Path, workspace: Path, name: str) -> None:
    where = str(_where(home, workspace, SECRET_NAMES[name]))
    for spelling in _spellings(workspace, name):
        for write in (False, True):
            verdict = policy.classify(spelling, write=write)
            assert verdict.secret is not None and verdict.same_file in (where, os.path.realpath(
                where)), (spelling, verdict)
            assert not verdict.allowed
        with pytest.raises(PathRefused) as refused:
            policy.resolve_read(spelling)
        assert "another name (a hard link) of the secret location" in str(refused.value)
        assert os.path.realpath(where) in str(refused.value) or where in str(refused.value)
        exact = policy.allowing([workspace / name])
        assert exact.classify(spelling, write=False).allowed  # the user approved this path
        broad = policy.allowing([workspace])
        assert not broad.classify(spelling, write=False).allowed


def test_a_link_to_a_link_of_a_secret_is_refused(policy: PathPolicy) -> None:
    with pytest.raises(PathRefused, match="hard link"):
        policy.resolve_read("alias.txt")


@pytest.mark.parametrize("name", list(PROTECTED_NAMES))
def test_another_name_of_a_protected_file_is_written_as_that_file(
        policy: PathPolicy, home: Path, workspace: Path, name: str) -> None:
    where = str(_where(home, workspace, PROTECTED_NAMES[name]))
    for spelling in _spellings(workspace, name):
        verdict = policy.classify(spelling, write=True)
        if name == "copy-of-envrc":  # .envrc is also a secret: refused as one
            assert verdict.secret == ".envrc" and verdict.same_file == where
            continue
        assert verdict.protected == f"{SAME_FILE_PREFIX}{where}", (spelling, verdict)
        assert policy.classify(spelling, write=False).allowed  # reading it is no secret
        with pytest.raises(PathRefused) as refused:
            policy.resolve_write(spelling)
        assert f"another name (a hard link) of the protected file {where}" in str(
            refused.value)
        assert policy.allowing([workspace / name]).classify(spelling, write=True).allowed


def test_hard_links_of_nothing_secret_or_protected_stay_ordinary(policy: PathPolicy) -> None:
    for path in (".venv/lib/pkg.py", "plain.sh"):
        assert policy.classify(path, write=False).allowed
        assert policy.classify(path, write=True).allowed
        assert policy.classify(path, write=True).same_file == ""


def test_links_made_renamed_and_removed_during_the_session(
        policy: PathPolicy, home: Path, workspace: Path) -> None:
    assert policy.classify("plain.sh", write=True).protected is None
    os.link(home / ".ssh/id_ed25519", workspace / "later-todo.md")
    (workspace / "deep/er").mkdir(parents=True)
    os.rename(workspace / "notes.txt", workspace / "deep/er/renamed.txt")
    os.link(workspace / "plain.sh", workspace / "repo/.git/hooks/post-merge")  # no event
    os.link(workspace / ".venv/lib/pkg.py", home / ".profile")  # in its folder: a new name
    for name in ("later-todo.md", "deep/er/renamed.txt"):
        with pytest.raises(PathRefused, match=f"hard link.*{home}/.ssh/id_ed25519"):
            policy.resolve_read(name)
    assert policy.classify("plain.sh", write=True).protected == \
        f"{SAME_FILE_PREFIX}{workspace}/repo/.git/hooks/post-merge"
    assert policy.classify(".venv/lib/pkg.py", write=True).protected == \
        f"{SAME_FILE_PREFIX}{home}/.profile"
    os.unlink(workspace / "later-todo.md")
    os.unlink(home / ".ssh/id_ed25519")  # the secret's other name is gone: one name left
    assert policy.classify("deep/er/renamed.txt", write=False).allowed


def test_names_the_walk_does_not_meet_are_compared_by_inode(
        home: Path, workspace: Path, reins_home: AppPaths, tmp_path: Path) -> None:
    _plant(home, workspace)
    os.link(home / ".ssh/id_ed25519", workspace / "repo/.git/description.bak")  # inside .git
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(home / ".config/gh/hosts.yml", outside / "hosts-backup.yml")
    os.link(workspace / "repo/.git/config", outside / "config-copy")
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace)).allowing([outside])
        inside = policy.classify("repo/.git/description.bak", write=False)
        assert inside.secret == ".ssh/**" and not inside.allowed
        assert inside.same_file == str(home / ".ssh/id_ed25519")
        backup = policy.classify(str(outside / "hosts-backup.yml"), write=False)
        assert backup.secret == ".config/gh/**" and not backup.allowed
        assert policy.classify(str(outside / "config-copy"), write=True).protected == \
            f"{SAME_FILE_PREFIX}{workspace}/repo/.git/config"
        assert policy.classify(str(home / ".ssh/id_ed25519"), write=False).same_file == ""
    finally:
        guards.close()


def test_without_an_index_and_outside_the_workspace_the_home_is_compared(
        home: Path, workspace: Path, reins_home: AppPaths, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(home / ".ssh/id_ed25519", outside / "backup.txt")
    os.link(home / ".bashrc", workspace / "rc.txt")
    policy = PathPolicy(workspace, app_paths=reins_home).allowing([outside])
    verdict = policy.classify(str(outside / "backup.txt"), write=False)
    assert verdict.secret == ".ssh/**" and not verdict.allowed
    assert verdict.same_file == str(home / ".ssh/id_ed25519")
    assert policy.classify("rc.txt", write=True).protected == f"{SAME_FILE_PREFIX}{home}/.bashrc"


def test_in_auto_mode_reading_and_writing_through_another_name_asks(
        cli: Cli, home: Path) -> None:
    _plant(home, cli.workspace)
    config = (cli.workspace / "repo/.git/config").read_text()
    cli.server.add(reply(ToolUse("read_file", {"path": "notes.txt"}, id="r1"),
                         ToolUse("write_file", {"path": "gitconfig.txt",
                                                "content": "[core]\n\tfsmonitor = evil\n"},
                                 id="w1"),
                         ToolUse("write_file", {"path": ".venv/lib/pkg.py", "content": "x\n"},
                                 id="w2"),
                         ToolUse("grep", {"pattern": "CANARY"}, id="g1")),
                   reply("Done."))
    code, text, err = cli.call("exec", "--json", "--mode", "auto", "--approve", "deny",
                               "look at my notes")
    assert code == 0, err
    out = events(text)
    asked = {e["call_id"] for e in out if e["type"] == "approval_request"}
    assert asked == {"r1", "w1"}, out
    results = {e["call_id"]: e for e in out if e["type"] == "tool_result"}
    assert results["r1"]["error_code"] == results["w1"]["error_code"] == "approval_denied"
    assert not results["w2"]["is_error"], results["w2"]
    skipped = [".env", "sub/.envrc", "deploy/.ssh/", *SECRET_NAMES, "alias.txt", "copy-of-envrc"]
    assert f"[{len(skipped)} secret location(s) not searched" in results["g1"]["preview"]
    assert CANARY not in text
    assert (cli.workspace / "repo/.git/config").read_text() == config


NOBODY_PROBE = """
import json, os, sys
from pathlib import Path
from kernel.paths import AppPaths
from kernel.sandbox.guard import WorkspaceGuards
from kernel.tools.pathpolicy import PathPolicy
from tests.sandbox.unprivileged_run import become_nobody
folder = Path(sys.argv[1])
become_nobody()
os.environ["HOME"] = str(folder / "home")
paths = AppPaths(data=folder / "data", config=folder / "config")
guards = WorkspaceGuards(paths)
workspace = folder / "workspace"
policy = PathPolicy(workspace, app_paths=paths, links=lambda: guards.protected_links(workspace))
print(json.dumps({"uid": os.getuid(), "reads": {n: policy.classify(n, write=False).same_file
                                                for n in sys.argv[2].split(",")},
                  "writes": {n: policy.classify(n, write=True).protected
                             for n in sys.argv[3].split(",")}}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: the tests above cover it")
def test_as_nobody_the_other_names_are_found_too() -> None:
    folder = Path(tempfile.mkdtemp(prefix="reins-hl-", dir="/var/tmp"))
    try:
        home, workspace = folder / "home", folder / "workspace"
        for rel in HOME_SECRETS:
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(f"token = {CANARY}\n")
        (home / ".aws").symlink_to("cloud/aws")
        (home / ".bashrc").write_text("# the user's bashrc\n")
        workspace.mkdir()
        _plant(home, workspace)
        subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        done = subprocess.run(
            [sys.executable, "-c", NOBODY_PROBE, str(folder), ",".join(SECRET_NAMES),
             ",".join(n for n in PROTECTED_NAMES if n != "copy-of-envrc")],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["uid"] == 0  # uid 0 of a user namespace that is kernel uid 65534
        for name, location in SECRET_NAMES.items():
            assert report["reads"][name] == str(_where(home, workspace, location)), report
        for name, protected in report["writes"].items():
            where = _where(home, workspace, PROTECTED_NAMES[name])
            assert protected == f"{SAME_FILE_PREFIX}{where}", report
    finally:
        shutil.rmtree(folder, ignore_errors=True)
