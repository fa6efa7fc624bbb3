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

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.security.conftest import ROOT, Confined
from tests.security.linkkit import ATTACKS, LINKS, check, prepare

SERVER = """
import asyncio, json, os, sys
from pathlib import Path
from kernel.mcp.config import McpServerConfig
from kernel.mcp.launch import sandboxed_launch
from kernel.paths import AppPaths
from kernel.sandbox.detect import detect_sandbox
from tests.sandbox.unprivileged_run import become_nobody
who, folder, script = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
if who == "nobody":
    become_nobody()
status = detect_sandbox()

async def main():
    config = McpServerConfig(name="boxed", transport="stdio", command="/bin/sh",
                             args=("-c", script), cwd=str(folder / "workspace"), sandbox=True)
    launch = sandboxed_launch(config, {"PATH": "/usr/bin:/bin", "HOME": str(folder / "home")},
                              paths=AppPaths(data=folder / "data", config=folder / "config"),
                              bwrap=status.bwrap_path,
                              disable_userns=status.nested_userns_blocked, pasta=None)
    assert launch.start is not None and launch.start.stage is not None, launch
    proc = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), cwd=launch.cwd, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, pass_fds=launch.start.pass_fds)
    launch.start.started()
    try:
        await launch.start.connect()
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await launch.start.aclose()
    return out.decode("utf-8", "replace")

out = asyncio.run(main()) if status.available else ""
print(json.dumps({"available": status.available, "out": out}))
"""


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
        done = subprocess.run(
            [sys.executable, "-c", SERVER, confined.who, str(folder), f"{every} ; {show}"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if not report["available"]:
            pytest.skip("no sandbox for this user here")
        out = report["out"]
        seen = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert seen == LINKS, out
        assert out.count("Device or resource busy") >= len(ATTACKS), out
        check(folder, {"outcomes": out})
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
