"""A sandboxed MCP server's workspace hides another name (a hard link) of a secret and binds
one of a protected file read-only, as a command's sandbox does (kernel.sandbox.samefiles):
real bubblewrap, through the kernel's launch path, as the user running the tests and as
nobody."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.security.conftest import Confined
from tests.security.serverkit import run_as_server

COMMAND = ("cat notes.txt sub/deep/a.txt 2>&1; echo EVIL >> gitconfig.txt; "
           "echo EVIL >> rc.txt; echo EVIL >> plain-copy.txt && echo plain-written")


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-hl-", dir="/var/tmp"))
    folder.chmod(0o777)
    home, workspace = folder / "home", folder / "workspace"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("canary-key-hl")
    (home / ".bashrc").write_text("# rc\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / ".env").write_text("canary-env-hl")
    (workspace / "sub" / "deep").mkdir(parents=True)
    (workspace / "plain.txt").write_text("plain\n")
    for source, name in ((home / ".ssh/id_rsa", "notes.txt"),
                         (workspace / ".env", "sub/deep/a.txt"),
                         (workspace / ".git/config", "gitconfig.txt"),
                         (home / ".bashrc", "rc.txt"),
                         (workspace / "plain.txt", "plain-copy.txt")):
        os.link(source, workspace / name)
    return folder


def test_a_sandboxed_servers_workspace_hides_other_names(confined: Confined) -> None:
    folder = _folder()
    try:
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        report = run_as_server(confined.who, folder, COMMAND)
        if not report["available"]:
            pytest.skip("no sandbox for this user here")
        out = report["out"]
        assert "canary" not in out and "plain-written" in out, out
        assert (folder / "workspace/.git/config").read_text() == "[core]\n", out
        assert (folder / "home/.bashrc").read_text() == "# rc\n", out
        assert (folder / "workspace/plain.txt").read_text() == "plain\nEVIL\n"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
