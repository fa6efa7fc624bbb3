"""The path policy refuses a secret location's content unless the user approved that location,
and protects git's code and configuration in bare repositories anywhere in the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.tools.pathpolicy import PathPolicy, PathRefused


@pytest.fixture
def policy(workspace: Path, reins_home: AppPaths) -> PathPolicy:
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "id_rsa").write_text("KEY")
    (workspace / ".aws").mkdir()
    (workspace / ".aws" / "credentials").write_text("[default]\n")
    (workspace / ".env").write_text("TOKEN=x\n")
    (workspace / "key-link").symlink_to(workspace / ".ssh" / "id_rsa")
    return PathPolicy(workspace, app_paths=reins_home)


SECRET_RAWS = [".ssh/id_rsa", "./.ssh/id_rsa", ".SSH/id_rsa", "x/../.ssh/id_rsa", ".env",
               ".aws/credentials", "key-link", "sub/.env.production", ".npmrc",
               ".config/gh/hosts.yml", ".bash_history", "~/.ssh/id_rsa"]


@pytest.mark.parametrize("raw", SECRET_RAWS)
def test_a_secret_is_refused_for_reading_and_writing(policy: PathPolicy, raw: str) -> None:
    for write in (False, True):
        verdict = policy.classify(raw, write=write)
        assert verdict.secret is not None and not verdict.allowed, verdict
    with pytest.raises(PathRefused, match="is a secret location") as exc:
        policy.resolve_read(raw)
    assert exc.value.hint


@pytest.mark.parametrize("raw", SECRET_RAWS)
def test_approving_the_secret_itself_opens_it_for_that_call(policy: PathPolicy, raw: str) -> None:
    resolved = policy.classify(raw, write=False).resolved
    opened = policy.allowing([resolved])
    assert opened.classify(raw, write=False).allowed
    assert opened.resolve_read(raw) == resolved


def test_approving_a_folder_above_a_secret_does_not_open_it(policy: PathPolicy,
                                                            workspace: Path) -> None:
    wide = policy.allowing([workspace, workspace.parent, Path("/")])
    for raw in (".ssh/id_rsa", ".env", ".aws/credentials"):
        assert not wide.classify(raw, write=False).allowed
    inside = policy.allowing([workspace / ".ssh"])
    assert inside.classify(".ssh/id_rsa", write=False).allowed
    assert not inside.classify(".aws/credentials", write=False).allowed


def test_names_of_a_secret_folder_may_be_listed(policy: PathPolicy, workspace: Path) -> None:
    assert policy.resolve_read(".ssh", names_only=True) == workspace / ".ssh"
    with pytest.raises(PathRefused, match="secret location"):
        policy.resolve_read(".ssh")
    with pytest.raises(PathRefused, match="outside the workspace"):
        policy.resolve_read("/etc", names_only=True)


@pytest.mark.parametrize("raw", [".envelope", "docs/ssh.md", ".env.example", "my.ssh.txt"])
def test_look_alikes_read_normally(policy: PathPolicy, raw: str) -> None:
    verdict = policy.classify(raw, write=False)
    assert verdict.secret is None and verdict.allowed


def _bare(path: Path) -> Path:
    (path / "objects").mkdir(parents=True)
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    return path


@pytest.mark.parametrize("entry", ["config", "hooks/pre-receive", "info/attributes", "commondir",
                                   "CONFIG", "worktrees/w/gitdir", "modules/m/config"])
@pytest.mark.parametrize("where", ["repo.git", "deep/er/mirror", "."])
def test_git_code_in_a_bare_repository_is_protected(workspace: Path, reins_home: AppPaths,
                                                    entry: str, where: str) -> None:
    _bare(workspace / where)
    policy = PathPolicy(workspace, app_paths=reins_home)
    raw = f"{where}/{entry}"
    verdict = policy.classify(raw, write=True)
    assert verdict.protected is not None and verdict.protected.startswith("git-dir:")
    with pytest.raises(PathRefused, match="what git runs"):
        policy.resolve_write(raw)
    assert policy.allowing([verdict.resolved]).resolve_write(raw) == verdict.resolved


@pytest.mark.parametrize("entry", ["HEAD", "objects/ab/cdef", "refs/heads/config", "index",
                                   "logs/HEAD", "packed-refs", "description"])
def test_the_rest_of_a_bare_repository_is_writable(workspace: Path, reins_home: AppPaths,
                                                   entry: str) -> None:
    _bare(workspace / "repo.git")
    policy = PathPolicy(workspace, app_paths=reins_home)
    assert policy.classify(f"repo.git/{entry}", write=True).protected is None


@pytest.mark.parametrize("marker", ["HEAD", "objects/x", "refs/heads/main"])
def test_completing_a_git_dir_that_holds_config_is_protected(workspace: Path,
                                                             reins_home: AppPaths,
                                                             marker: str) -> None:
    folder = workspace / "planted"
    folder.mkdir()
    (folder / "config").write_text("[core]\n\tfsmonitor = evil\n")
    for name in ("HEAD", "objects", "refs"):
        if not marker.startswith(name):
            if name == "HEAD":
                (folder / name).write_text("ref: refs/heads/main\n")
            else:
                (folder / name).mkdir()
    policy = PathPolicy(workspace, app_paths=reins_home)
    verdict = policy.classify(f"planted/{marker}", write=True)
    assert verdict.protected is not None and verdict.protected.startswith("git-dir:"), verdict
    plain = workspace / "plain"
    plain.mkdir()
    (plain / "objects").mkdir()
    (plain / "refs").mkdir()
    assert policy.classify("plain/HEAD", write=True).protected is None
    assert policy.classify("plain/config", write=True).protected is None
