"""A sandboxed MCP server cannot change a protected link of its workspace either.

A server lives as long as the kernel and what it makes is not undone after it as a
command's is, so before this a server could replace `.git/hooks -> ../../myhooks` with its
own hooks (git ran them at the user's next commit) or `.vscode -> shared` with its own
settings, for good. Now its launch (kernel.mcp.launch.sandboxed_launch, the path the
kernel takes) pins every marked link in its sandbox before it starts, as for a command
(kernel.sandbox.pin): every attack fails with EBUSY and the links read inside are the user's.
Real bubblewrap, as the user running the tests and as nobody; git runs outside afterwards
with a canary a planted hook would touch.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.security.conftest import Confined
from tests.security.linkkit import ATTACKS, LINKS, check, prepare
from tests.security.serverkit import run_as_server


def test_a_sandboxed_server_cannot_change_a_protected_link(confined: Confined) -> None:
    folder = Path(tempfile.mkdtemp(prefix="reins-srv-pin-", dir="/var/tmp"))
    folder.chmod(0o777)
    try:
        (folder / "workspace").mkdir()
        (folder / "home").mkdir()
        prepare(folder)
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        every = " ; ".join(f"( {c} ) 2>&1" for c in ATTACKS.values())
        show = " ; ".join(f"printf '%s=%s\\n' {link} \"$(readlink {link})\"" for link in LINKS)
        report = run_as_server(confined.who, folder, f"{every} ; {show}")
        if not report["available"]:
            pytest.skip("no sandbox for this user here")
        assert report["staged"], report
        out = report["out"]
        seen = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert seen == LINKS, out
        assert out.count("Device or resource busy") >= len(ATTACKS), out
        check(folder, {"outcomes": out})
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
