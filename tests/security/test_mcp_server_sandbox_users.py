"""The sandbox of a `"sandbox": true` MCP server holds for root and for an ordinary user:
no capability; of the machine only what a command sees (no home, no /run, /var, /srv, /opt:
neither a secret outside the home and the workspace, nor a host socket, nor, as root,
/etc/shadow); the workspace writable but not its secrets, git hooks and config, the
server's state folder writable, Reins' data hidden."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.security.conftest import ROOT, Confined

SERVER_CONFINED = Path(__file__).with_name("server_confined.py")


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-", dir="/var/tmp"))  # /tmp is private inside
    folder.chmod(0o777)
    home, workspace = folder / "home", folder / "workspace"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("canary-key-77")
    (home / ".gitconfig").write_text("[user] name = Real")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / ".env").write_text("canary-env-77")
    (folder / "data" / "sessions").mkdir(parents=True)
    (folder / "data" / "sessions" / "s.json").write_text("{}")
    (folder / "srv").mkdir()
    (folder / "srv" / ".env").write_text("canary-outside-77")
    return folder


def test_a_sandboxed_server_is_confined_for_every_user(confined: Confined) -> None:
    folder = _folder()
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(folder / "host.sock"))
        listener.listen()
        (folder / "host.sock").chmod(0o777)
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        done = subprocess.run([sys.executable, str(SERVER_CONFINED), confined.who, str(folder)],
                              capture_output=True, text=True, timeout=120, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if "unavailable" in report:
            pytest.skip(report["unavailable"])
        probe = report["probe"]
        assert probe["CapEff"] == probe["CapBnd"] == "0000000000000000", report
        assert probe["key"] == "" and probe["env"] == "", report
        assert probe["gitconfig"] == "" and probe["shadow"] == "", report
        assert probe["outside"] == "" and probe["socket"] != "0", report
        assert probe["run"] == "0", report
        # /var/tmp holds the test's folder: only the workspace in it is shown
        assert probe["var_tmp"].split() == [folder.name], report
        assert probe["home_write"] != "0" and probe["hook_write"] != "0", report
        assert probe["config_write"] != "0", report
        assert probe["state_write"] == "0" and probe["workspace_write"] == "0", report
        assert probe["own"] == "0", report
        assert (folder / "workspace" / "made").exists()
        assert (folder / "workspace" / ".git" / "config").read_text() == "[core]\n"
    finally:
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)
