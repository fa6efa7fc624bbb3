"""A sandboxed MCP server's workspace is writable only while a call to it is in flight.

A server lives as long as the kernel: before this, a thread of its own could write
`sub/.vscode/tasks.json`, an `.envrc` or a hook in the folder a git config names between
calls, and the next call's marks, read fresh, took them for the user's, so they were never
undone and the user's editor, direnv or git ran them outside the sandbox. Now its workspace
is read-only in its sandbox between calls (kernel.sandbox.workspace_gate). The kernel's own
manager runs a real server (stdlib only: any python3 runs it, as any user) over real
bubblewrap, as the user running the tests and as nobody (server_gate.py).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.security.conftest import ROOT, Confined
from tests.security.server_gate import BETWEEN

HERE = Path(__file__).parent


@functools.cache
def _ran(who: str) -> dict[str, Any]:
    """The scenario's report, run once per user for both tests."""
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-gate-", dir="/var/tmp"))
    folder.chmod(0o777)
    try:
        (folder / "home").mkdir()
        (folder / "workspace" / ".git" / "hooks").mkdir(parents=True)
        (folder / "workspace" / ".git" / "config").write_text("[core]\n\thooksPath = .githooks\n")
        shutil.copy(HERE / "gate_server.py", folder / "gate_server.py")
        if who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        done = subprocess.run([sys.executable, str(HERE / "server_gate.py"), who, str(folder)],
                              capture_output=True, text=True, timeout=240, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if "unavailable" in report:
            pytest.skip(report["unavailable"])
        assert report["started"].startswith("ready"), report
        return report
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_sandboxed_servers_workspace_is_writable_only_during_its_calls(
        confined: Confined) -> None:
    out = _ran(confined.who)
    # between calls its own thread cannot write, a protected spelling or any other
    assert out["begin"][0], out
    assert json.loads(out["between"][1]) == dict.fromkeys(BETWEEN, "EROFS"), out
    assert not any(out["between_exists"].values()), out
    assert json.loads(out["between_again"][1])["late.txt"] == "EROFS", out
    assert out["own_state"] == "written", out  # its own state folder stays writable
    # during a call it writes; a protected entry it makes is still undone after
    assert out["plain"] == [True, "wrote during.txt"], out
    ok, text = out["protected"]
    assert ok and "undone by Reins: the server made" in text, out
    assert out["during_exists"] == {"during.txt": True, "sub/.vscode/tasks.json": False}, out
    # the user's own edit between calls (a protected spelling too) is left alone
    assert out["after_user"] == [True, "wrote after.txt"], out
    assert out["user_exists"] == {"y/.envrc": True, "user.txt": True}, out
    # concurrent calls: the workspace stays writable until the last one ends
    assert out["concurrent"] == [[True, "wrote slow.txt"], [True, "wrote quick.txt"]], out
    assert out["concurrent_exists"] == {"slow.txt": True, "quick.txt": True}, out


def test_a_workspace_that_cannot_be_toggled_fails_closed(confined: Confined) -> None:
    out = _ran(confined.who)
    # the zygote killed between calls: the call is not sent, the workspace stays read-only
    ok, text = out["zygote_killed"]
    assert not ok and "could not be made writable" in text and "zygote" in text, out
    assert "the call was not sent" in text and out["zygote_killed_exists"] == {"z.txt": False}
    assert out["zygote_again"] == [True, "wrote z.txt"], out
    # a file held open for writing in the workspace (EBUSY): the server is stopped
    ok, text = out["hold"]
    assert not ok and "could not be made read-only again" in text, out
    assert "Device or resource busy" in text and "the server was stopped" in text, out
    assert out["hold_pid"] != out["restarted_pid"], out
    assert out["after_restart"] == [True, "wrote restarted.txt"], out
