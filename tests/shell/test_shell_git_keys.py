"""The git config keys whose value git runs or reads live in one place (kernel.pathrules,
issue 29 §5): `git -c KEY=VALUE` is judged from them, with the keys the reader's own copy
had missed (it had diverged from the sandbox's)."""

from __future__ import annotations

import pytest

from kernel.pathrules import git_key_kind
from kernel.shell.classify import classify


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
