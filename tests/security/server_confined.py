"""Runs a probe in the sandbox of a `"sandbox": true` MCP server as a chosen user; prints JSON.

`python server_confined.py AS FOLDER [COMMANDS]` where AS is `current` or `nobody` (see
confined.py) and FOLDER holds `home/` (the user's home), `workspace/`, Reins' folders, and
outside them a secret (`srv/.env`) and a listening Unix socket (`host.sock`).
Without COMMANDS the probe, run as a server with its workspace writable as while a call is
in flight, reports capabilities and what it could read and write, one `name=value` line
each. With COMMANDS (a JSON list of shell commands) each runs as a server
with the internet through pasta (kernel.sandbox.server_start); their outputs are reported,
and the pastas left running after.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.network import find_pasta, resolv_conf
from kernel.sandbox.pin import PinStage, links_to_pin
from kernel.sandbox.server import server_bwrap_argv, server_marks
from kernel.sandbox.server_start import ServerStart
from tests.sandbox.unprivileged_run import become_nobody
from tests.security.confined import children_named

PROBE = """
read -r _
grep -E '^Cap(Eff|Bnd)' /proc/self/status | tr -d '\\t' | sed 's/:/=/'
echo "key=$(cat "$H/.ssh/id_rsa" 2>/dev/null)"
echo "env=$(cat "$W/.env" 2>/dev/null)"
echo "gitconfig=$(cat "$H/.gitconfig" 2>/dev/null)"
echo "shadow=$(head -c 16 /etc/shadow 2>/dev/null)"
echo "outside=$(cat "$O/srv/.env" 2>/dev/null; cat /srv/.reins-canary 2>/dev/null)"
python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])" \
    "$O/host.sock" 2>/dev/null; echo "socket=$?"
echo "run=$(ls -A /run /home /opt /srv 2>/dev/null | wc -l)"
echo "var_tmp=$(ls -A /var/tmp 2>/dev/null | tr '\n' ' ')"
touch "$H/planted" 2>/dev/null; echo "home_write=$?"
touch "$S/cache" 2>/dev/null; echo "state_write=$?"
touch "$W/made" 2>/dev/null; echo "workspace_write=$?"
echo x > "$W/.git/hooks/pre-commit" 2>/dev/null; echo "hook_write=$?"
echo x >> "$W/.git/config" 2>/dev/null; echo "config_write=$?"
echo "own=$(ls "$D" 2>/dev/null | wc -l)"
"""


async def _served(status: SandboxStatus, folder: Path, command: str) -> str:
    """`command` run as a sandboxed server with the internet; its output."""
    paths = AppPaths(data=folder / "data", config=folder / "config")
    state = folder / "data" / "mcp-state" / "net"
    state.mkdir(parents=True, exist_ok=True)
    pasta = find_pasta()
    assert pasta is not None
    network = ServerStart(pasta)
    argv = server_bwrap_argv(status.bwrap_path, program=("/bin/sh", "-c", command),
                             state=state, workspace=None, real_home=folder / "home",
                             paths=paths, disable_userns=status.nested_userns_blocked,
                             handshake_fds=network.child_fds,
                             resolv_conf=resolv_conf(folder / "data" / "net"))
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        pass_fds=network.pass_fds, env={"PATH": "/usr/bin:/bin"})
    network.started()
    try:
        await network.connect()
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await network.aclose()
    return out.decode("utf-8", "replace")


def main(who: str, folder: Path, commands: list[str] | None) -> None:
    if who == "nobody" and os.geteuid() == 0:
        become_nobody()
    status = detect_sandbox()
    if not status.available:
        sys.stdout.write(json.dumps({"unavailable": status.reason}) + "\n")
        return
    if commands is not None:
        outputs = [asyncio.run(_served(status, folder, c)) for c in commands]
        sys.stdout.write(json.dumps({"outputs": outputs,
                                     "pastas_left": children_named("pasta")}) + "\n")
        return
    paths = AppPaths(data=folder / "data", config=folder / "config")
    state, workspace, home = folder / "data" / "mcp-state" / "boxed", folder / "workspace", \
        folder / "home"
    state.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "H": str(home), "W": str(workspace), "S": str(state),
           "D": str(folder / "data" / "sessions"), "O": str(folder)}
    out, err = asyncio.run(_probed(status, paths, state, workspace, home, env))
    found = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    sys.stdout.write(json.dumps({"probe": found, "stderr": err[-2000:]}) + "\n")


async def _probed(status: SandboxStatus, paths: AppPaths, state: Path, workspace: Path,
                  home: Path, env: dict[str, str]) -> tuple[str, str]:
    """PROBE run as a server with its workspace, its links pinned and the workspace
    writable as while a call is in flight (kernel.sandbox.workspace_gate)."""
    marks = server_marks(workspace, home, paths)
    start = ServerStart(None, PinStage(links_to_pin(os.path.realpath(workspace),
                                                    marks.values())),
                        (os.path.realpath(workspace), os.path.realpath(state)))
    argv = server_bwrap_argv(status.bwrap_path, program=("/bin/sh", "-c", PROBE), state=state,
                             workspace=workspace, real_home=home, paths=paths,
                             disable_userns=status.nested_userns_blocked,
                             handshake_fds=start.child_fds, own_network=False, marks=marks,
                             stage_fds=start.stage.child_fds if start.stage else None)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, pass_fds=start.pass_fds, env=env)
    start.started()
    try:
        await start.connect()
        assert start.gate is not None
        async with start.gate.writable():  # the probe starts once it is
            out, err = await asyncio.wait_for(proc.communicate(b"go\n"), 60)
    finally:
        await start.aclose()
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) > 3 else None)
