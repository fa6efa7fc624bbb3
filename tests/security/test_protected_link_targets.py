"""A protected name that is a link (`.vscode -> shared`, `.git/hooks -> ../hooks`) protects
where it leads for the file tools too: an editor or git reads `shared/tasks.json` as
`.vscode/tasks.json`, so writing it by its own name (any spelling) is a protected write —
in `auto` mode it asks (`reins exec --approve deny` denies it and nothing is written). The
links come from the workspace index (kernel.sandbox.guard), the same one the sandbox binds
them read-only from."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.guard import WorkspaceGuards
from kernel.tools.pathpolicy import LINK_PREFIX, PathPolicy, PathRefused
from tests.cli.conftest import Cli, cli
from tests.security.execkit import write_is_asked_and_denied

__all__ = ["cli"]


def _links(workspace: Path) -> None:
    (workspace / "shared").mkdir()
    (workspace / "shared" / "tasks.json").write_text("{}\n")
    (workspace / ".vscode").symlink_to("shared")
    subprocess.run(["git", "init", "-q", str(workspace / "repo")], check=True)
    (workspace / "myhooks").mkdir()
    hooks = workspace / "repo" / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    hooks.symlink_to("../../myhooks")
    (workspace / "deep" / "sub").mkdir(parents=True)
    (workspace / "cfg" / "real").mkdir(parents=True)
    (workspace / "cfg" / "hop").symlink_to("real")  # a link to a link
    (workspace / "deep" / "sub" / ".idea").symlink_to("../../cfg/hop")
    (workspace / "plain").mkdir()
    (workspace / "plain-link").symlink_to("plain")  # not a protected name


WRITES = [
    ("shared/tasks.json", ".vscode"),
    ("./shared/../shared/tasks.json", ".vscode"),
    ("shared/new/launch.json", ".vscode"),
    ("shared", ".vscode"),
    ("myhooks/pre-commit", "repo/.git/hooks"),
    ("cfg/real/workspace.xml", "deep/sub/.idea"),
    ("cfg/hop/workspace.xml", "deep/sub/.idea"),
    ("plain/x.txt", None),
    ("plain-link/x.txt", None),
    ("sharedx/tasks.json", None),  # a sibling with the same prefix is not inside
]


@pytest.mark.parametrize(("path", "link"), WRITES)
def test_where_a_protected_link_leads_is_protected_for_writes(
        workspace: Path, reins_home: AppPaths, path: str, link: str | None) -> None:
    _links(workspace)
    (workspace / "sharedx").mkdir()
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace))
        for spelling in (path, str(workspace / path)):
            verdict = policy.classify(spelling, write=True)
            assert verdict.protected == (None if link is None else f"{LINK_PREFIX}{link}")
            assert policy.classify(spelling, write=False).protected is None  # reads as before
    finally:
        guards.close()


def test_a_link_made_later_is_seen_and_one_removed_is_forgotten(
        workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "shared").mkdir()
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace))
        assert policy.classify("shared/tasks.json", write=True).protected is None
        (workspace / "sub").mkdir()
        (workspace / "sub" / ".envrc").symlink_to("../shared/tasks.json")
        assert policy.classify("shared/tasks.json", write=True).protected == \
            f"{LINK_PREFIX}sub/.envrc"
        os.unlink(workspace / "sub" / ".envrc")
        assert policy.classify("shared/tasks.json", write=True).protected is None
    finally:
        guards.close()


@pytest.mark.parametrize("path", ["shared/tasks.json", "shared/../shared/tasks.json",
                                  "myhooks/pre-commit"])
def test_in_auto_mode_writing_there_asks(cli: Cli, path: str) -> None:
    _links(cli.workspace)
    write_is_asked_and_denied(cli, path, "change the editor tasks")
    assert (cli.workspace / "shared" / "tasks.json").read_text() == "{}\n"


def test_the_refusal_says_which_link_leads_there(workspace: Path,
                                                 reins_home: AppPaths) -> None:
    _links(workspace)
    guards = WorkspaceGuards(reins_home)
    try:
        policy = PathPolicy(workspace, app_paths=reins_home,
                            links=lambda: guards.protected_links(workspace))
        with pytest.raises(PathRefused) as refused:
            policy.resolve_write("shared/tasks.json")
        assert "where the protected link .vscode leads" in str(refused.value)
    finally:
        guards.close()
