"""The git config keys whose value git runs or reads live in one place (kernel.pathrules,
issue 29 §5): `git -c KEY=VALUE` is judged from them, with the keys the reader's own copy
had missed (it had diverged from the sandbox's)."""

from __future__ import annotations

import pytest

from kernel.pathrules import GIT_CONFIG_KEYS, GIT_FOLDER_KEYS, GIT_PROGRAM_KEYS, git_key_kind
from kernel.sandbox import git_named
from kernel.shell.classify import classify


def test_the_sandbox_reads_the_same_keys() -> None:
    """Until kernel.sandbox.git_named imports them, its tables must not drift from these."""
    assert git_named.FOLDER_KEYS == GIT_FOLDER_KEYS
    assert git_named.CONFIG_KEYS == GIT_CONFIG_KEYS
    assert git_named.PROGRAM_KEYS == GIT_PROGRAM_KEYS


@pytest.mark.parametrize("key, kind", [
    ("core.fsmonitor", "program"), ("Core.SSHCommand", "program"), ("alias.x", "program"),
    ("filter.lfs.smudge", "program"), ("remote.origin.uploadpack", "program"),
    ("core.hooksPath", "folder"), ("init.templateDir", "folder"),
    ("includeIf.gitdir:~/w/.path", "config"), ("user.name", None), ("core.autocrlf", None),
])
def test_key_kinds(key: str, kind: str | None) -> None:
    assert git_key_kind(key) == kind


@pytest.mark.parametrize("line", [
    "git -c core.sshCommand='rm -rf ~' fetch",
    "git -c core.gitProxy='rm -rf ~' fetch",  # missed by the reader's old copy
    "git -c difftool.x.cmd='rm -rf ~' difftool",
    "git -c remote.origin.uploadpack='rm -rf ~' fetch",
    "git -c sendemail.sendmailCmd='rm -rf ~' send-email x",
    "git -c init.templateDir=t init",
    "git -c core.hooksPath=h commit",
    "git --config-env=core.fsmonitor=X status",
])
def test_git_c_with_a_key_git_runs_asks(line: str) -> None:
    assert classify(line).destructive, line


@pytest.mark.parametrize("line", ["git -c user.name=x commit -m y",
                                  "git -c core.autocrlf=false status"])
def test_git_c_with_a_plain_key_does_not(line: str) -> None:
    assert not classify(line).destructive
