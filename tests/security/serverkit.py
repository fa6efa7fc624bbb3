"""Running a shell script as a sandboxed MCP server through the kernel's own launch path
(kernel.mcp.launch.sandboxed_launch), as a chosen user (see confined.py); its output. The
script starts once its workspace is writable, as while a call is in flight
(kernel.sandbox.workspace_gate), and runs with it so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.security.conftest import ROOT

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
                             args=("-c", "read -r _ ; " + script), cwd=str(folder / "workspace"),
                             sandbox=True)
    launch = sandboxed_launch(config, {"PATH": "/usr/bin:/bin", "HOME": str(folder / "home")},
                              paths=AppPaths(data=folder / "data", config=folder / "config"),
                              bwrap=status.bwrap_path,
                              disable_userns=status.nested_userns_blocked, pasta=None)
    start = launch.start
    proc = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), cwd=launch.cwd, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        pass_fds=start.pass_fds)
    start.started()
    try:
        await start.connect()
        async with start.gate.writable():  # as while a call is in flight
            out, _ = await asyncio.wait_for(proc.communicate(b"go\\n"), 60)
    finally:
        await start.aclose()
    return out.decode("utf-8", "replace"), bool(start.stage.pins)

out, staged = asyncio.run(main()) if status.available else ("", False)
print(json.dumps({"available": status.available, "out": out, "staged": staged}))
"""


def run_as_server(who: str, folder: Path, script: str) -> dict[str, Any]:
    """Run `script` as a sandboxed server whose workspace is `folder/workspace` and home
    `folder/home`, as `who`: {"available": bool, "out": its output, "staged": whether it
    had links to pin (kernel.sandbox.pin)}."""
    done = subprocess.run([sys.executable, "-c", SERVER, who, str(folder), script],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
