"""PathPolicy: resolution (.., absolute, ~, symlinks), protection, fd-based writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.pathrules import PROTECTED_PATTERNS
from kernel.paths import AppPaths
from kernel.tools.pathpolicy import PathPolicy, PathRefused
from kernel.tools.spec import ErrorCode, ToolError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret")
    return folder.resolve()


@pytest.fixture
def policy(workspace: Path, reins_home: AppPaths) -> PathPolicy:
    return PathPolicy(workspace, app_paths=reins_home)


def test_relative_paths_resolve_against_the_workspace(policy: PathPolicy, workspace: Path) -> None:
    assert policy.resolve_read("a/b.txt") == workspace / "a" / "b.txt"
    assert policy.resolve_read(".") == workspace
    assert policy.resolve_write("new/deep/file.txt") == workspace / "new" / "deep" / "file.txt"


def test_dotdot_inside_stays_allowed(policy: PathPolicy, workspace: Path) -> None:
    assert policy.resolve_read("a/../b/./c.txt") == workspace / "b" / "c.txt"
    assert policy.resolve_write("a/b/../../c.txt") == workspace / "c.txt"


@pytest.mark.parametrize("raw", ["..", "../x", "a/../../x", "../workspace-other/x"])
def test_dotdot_escaping_is_refused(policy: PathPolicy, raw: str) -> None:
    for resolve in (policy.resolve_read, policy.resolve_write):
        with pytest.raises(PathRefused) as exc:
            resolve(raw)
        assert exc.value.code is ErrorCode.PERMISSION_DENIED
        assert "outside the workspace" in exc.value.message and raw in exc.value.message
        assert exc.value.hint


def test_prefix_sibling_is_not_inside(policy: PathPolicy, workspace: Path) -> None:
    sibling = workspace.parent / (workspace.name + "-evil")
    assert not policy.classify(str(sibling / "x"), write=False).inside_workspace


def test_absolute_paths(policy: PathPolicy, workspace: Path, outside: Path) -> None:
    assert policy.resolve_read(str(workspace / "x.txt")) == workspace / "x.txt"
    with pytest.raises(PathRefused, match=r"Reading .* outside the workspace"):
        policy.resolve_read(str(outside / "secret.txt"))
    with pytest.raises(PathRefused, match=r"Writing .* outside the workspace"):
        policy.resolve_write("/etc/passwd")


def test_tilde_is_expanded(
    policy: PathPolicy, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    verdict = policy.classify("~/notes.txt", write=False)
    assert verdict.resolved == home.resolve() / "notes.txt" and not verdict.inside_workspace
    with pytest.raises(PathRefused):
        policy.resolve_read("~/notes.txt")
    monkeypatch.setenv("HOME", str(workspace))
    assert policy.resolve_read("~/notes.txt") == workspace / "notes.txt"


def test_symlinks_are_resolved(policy: PathPolicy, workspace: Path, outside: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "real" / "f.txt").write_text("in")
    (workspace / "link-in").symlink_to(workspace / "real")
    (workspace / "link-out").symlink_to(outside)
    (workspace / "file-out").symlink_to(outside / "secret.txt")
    assert policy.resolve_read("link-in/f.txt") == workspace / "real" / "f.txt"
    assert policy.resolve_write("link-in/new.txt") == workspace / "real" / "new.txt"
    for raw in ("link-out/secret.txt", "file-out", "link-out/new.txt"):
        with pytest.raises(PathRefused):
            policy.resolve_read(raw)
        with pytest.raises(PathRefused):
            policy.resolve_write(raw)
    # ".." after a symlink goes up from the link's target, not from the link.
    assert policy.classify("link-out/../x", write=False).resolved == outside.parent / "x"


def test_symlink_from_outside_into_the_workspace(
    policy: PathPolicy, workspace: Path, outside: Path
) -> None:
    (workspace / "target.txt").write_text("t")
    (outside / "into-ws").symlink_to(workspace / "target.txt")
    assert policy.resolve_read(str(outside / "into-ws")) == workspace / "target.txt"


def test_symlink_loop_is_refused_or_resolved_safely(policy: PathPolicy, workspace: Path) -> None:
    (workspace / "loop").symlink_to(workspace / "loop")
    verdict = policy.classify("loop", write=True)
    assert verdict.resolved.is_relative_to(workspace)


@pytest.mark.parametrize(
    "raw",
    [
        ".git/hooks/pre-commit",
        ".git/config",
        ".bashrc",
        ".bash_profile",
        ".zshrc",
        ".zprofile",
        ".profile",
        ".gitconfig",
        ".gitmodules",
        ".mcp.json",
        ".vscode/settings.json",
        ".vscode/deep/tasks.json",
        ".idea/workspace.xml",
        "sub/.git/hooks/post-checkout",
        "sub/.git/config",
        ".GIT/Config",
        ".VSCode/settings.json",
        ".git",
        ".git/HEAD",
        ".git/commondir",
        "sub/.git",
        "sub/.git/worktrees/w/gitdir",
        ".devcontainer/devcontainer.json",
        "a/b/.idea/runConfigurations/x.xml",
    ],
)
def test_protected_files_are_refused_for_writes_only(policy: PathPolicy, raw: str) -> None:
    assert policy.classify(raw, write=True).protected is not None
    with pytest.raises(PathRefused, match="protected pattern"):
        policy.resolve_write(raw)
    assert policy.resolve_read(raw) == policy.workspace / raw
    assert policy.classify(raw, write=False).protected is None


@pytest.mark.parametrize(
    "raw", [".github/workflows/x.yml", "my.bashrc", "src/.profile.d/x", "vscode/x", ".gitignore",
            "git/config", ".gitattributes"]
)
def test_similar_names_are_not_protected(policy: PathPolicy, raw: str) -> None:
    assert policy.resolve_write(raw) == policy.workspace / raw


def test_default_protected_list_is_the_documented_one() -> None:
    assert ".git/**" in PROTECTED_PATTERNS and ".mcp.json" in PROTECTED_PATTERNS


def test_custom_patterns_and_absolute_protected_paths(
    workspace: Path, reins_home: AppPaths, outside: Path
) -> None:
    policy = PathPolicy(workspace, ["*.lock", "secrets/**", outside], app_paths=reins_home)
    with pytest.raises(PathRefused, match=r"'\*\.lock'"):
        policy.resolve_write("deps/poetry.lock")
    with pytest.raises(PathRefused):
        policy.resolve_write("secrets/a/b")
    verdict = policy.allowing([outside]).classify(str(outside / "x"), write=True)
    assert verdict.protected == str(outside)


def test_reins_own_folders_are_never_writable(workspace: Path, reins_home: AppPaths) -> None:
    policy = PathPolicy(workspace, app_paths=reins_home)
    target = reins_home.settings_file
    allowed = policy.allowing([reins_home.config, reins_home.data])
    for p in (policy, allowed):
        with pytest.raises(PathRefused, match="Reins' own"):
            p.resolve_write(str(target))
        with pytest.raises(PathRefused, match="Reins' own"):
            p.resolve_write(str(reins_home.data / "sessions" / "x"))
    assert allowed.resolve_read(str(target)) == Path(os.path.realpath(target))


def test_reins_folder_inside_the_workspace_is_protected(workspace: Path) -> None:
    paths = AppPaths(data=workspace / ".reins-data", config=workspace / ".reins-config")
    policy = PathPolicy(workspace, app_paths=paths)
    with pytest.raises(PathRefused, match="Reins' own"):
        policy.resolve_write(".reins-data/reins.sqlite3")


def test_allowing_extra_paths(policy: PathPolicy, outside: Path) -> None:
    raw = str(outside / "secret.txt")
    assert not policy.classify(raw, write=False).allowed
    allowed = policy.allowing([outside])
    assert allowed.resolve_read(raw) == outside / "secret.txt"
    assert allowed.resolve_write(str(outside / "deep" / "new.txt")) == outside / "deep" / "new.txt"
    verdict = allowed.classify(raw, write=False)
    assert verdict.approved and not verdict.inside_workspace and verdict.allowed
    assert policy.allowing([]) is policy
    with pytest.raises(PathRefused):
        policy.resolve_read(raw)  # the base policy is unchanged
    single = policy.allowing([outside / "secret.txt"])
    assert single.resolve_read(raw) == outside / "secret.txt"
    with pytest.raises(PathRefused):
        single.resolve_read(str(outside / "other.txt"))


def test_approval_overrides_a_protected_pattern(policy: PathPolicy, workspace: Path) -> None:
    target = workspace / ".vscode" / "settings.json"
    assert policy.allowing([target]).resolve_write(".vscode/settings.json") == target


@pytest.mark.parametrize("raw", ["", "   ", "a\x00b"])
def test_malformed_paths_are_invalid_arguments(policy: PathPolicy, raw: str) -> None:
    with pytest.raises(ToolError) as exc:
        policy.resolve_read(raw)
    assert exc.value.code is ErrorCode.INVALID_ARGUMENTS


def test_write_bytes_is_atomic_creates_parents_and_keeps_mode(
    policy: PathPolicy, workspace: Path
) -> None:
    target = policy.resolve_write("a/b/c.txt")
    assert policy.write_bytes(target, b"one") is False
    assert target.read_bytes() == b"one"
    target.chmod(0o640)
    assert policy.write_bytes(target, "二".encode()) is True
    assert target.read_text(encoding="utf-8") == "二"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(target.parent)) == ["c.txt"]  # no temporary file left behind
    assert policy.read_bytes(target) == "二".encode()


def test_swapped_directory_symlink_cannot_redirect_a_write(
    policy: PathPolicy, workspace: Path, outside: Path
) -> None:
    (workspace / "d").mkdir()
    target = policy.resolve_write("d/f.txt")  # checked while d is a real folder
    (workspace / "d").rmdir()
    (workspace / "d").symlink_to(outside)  # swapped after the check
    with pytest.raises(PathRefused, match="symlink"):
        policy.write_bytes(target, b"pwned")
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    with pytest.raises(PathRefused):
        policy.read_bytes(policy.workspace / "d" / "secret.txt")


def test_swapped_file_symlink_is_replaced_not_followed(
    policy: PathPolicy, workspace: Path, outside: Path
) -> None:
    (workspace / "f.txt").write_text("mine")
    target = policy.resolve_write("f.txt")
    (workspace / "f.txt").unlink()
    (workspace / "f.txt").symlink_to(outside / "secret.txt")  # swapped after the check
    with pytest.raises(PathRefused, match="became a symlink"):
        policy.read_bytes(target)
    policy.write_bytes(target, b"new")
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (workspace / "f.txt").is_symlink()
    assert (workspace / "f.txt").read_bytes() == b"new"


def test_write_into_an_approved_outside_folder_walks_from_its_root(
    policy: PathPolicy, outside: Path
) -> None:
    allowed = policy.allowing([outside])
    target = allowed.resolve_write(str(outside / "sub" / "new.txt"))
    allowed.write_bytes(target, b"ok")
    assert (outside / "sub" / "new.txt").read_bytes() == b"ok"


def test_patterns_also_flag_protected_files_outside_the_workspace(
    policy: PathPolicy, outside: Path
) -> None:
    folder = policy.allowing([outside])
    verdict = folder.classify(str(outside / ".bashrc"), write=True)
    assert verdict.protected == ".bashrc" and not verdict.allowed
    with pytest.raises(PathRefused, match="protected pattern"):
        folder.resolve_write(str(outside / ".bashrc"))
    exact = policy.allowing([outside / ".bashrc"])
    assert exact.resolve_write(str(outside / ".bashrc")) == outside / ".bashrc"


def test_approving_a_folder_does_not_lift_protection_inside_it(
    policy: PathPolicy, workspace: Path
) -> None:
    folder = policy.allowing([workspace / ".vscode"])
    with pytest.raises(PathRefused, match="protected pattern"):
        folder.resolve_write(".vscode/settings.json")
    verdict = policy.allowing([workspace / ".vscode" / "settings.json"]).classify(
        ".vscode/settings.json", write=True
    )
    assert verdict.approved_exactly and verdict.allowed


@pytest.mark.parametrize(("link", "target", "folder", "raw", "pattern"), [
    (".vscode", "shared", True, ".vscode/tasks.json", ".vscode/**"),
    (".vscode", "shared", True, "x/../.vscode/settings.json", ".vscode/**"),
    (".envrc", "env.sh", False, ".envrc", ".envrc"),
    ("sub/.git", "../gitdir", True, "sub/.git/config", ".git/**"),
    ("sub/.devcontainer", "../dc", True, "sub/.devcontainer/devcontainer.json",
     ".devcontainer/**"),
])
def test_a_protected_name_is_protected_through_a_link(
        policy: PathPolicy, workspace: Path, link: str, target: str, folder: bool, raw: str,
        pattern: str) -> None:
    """Editors and git open the name and follow the link: a write by that name asks."""
    real = (workspace / link).parent / target
    real.mkdir(parents=True) if folder else real.touch()
    (workspace / link).parent.mkdir(parents=True, exist_ok=True)
    (workspace / link).symlink_to(target)
    assert policy.classify(raw, write=True).protected == pattern
