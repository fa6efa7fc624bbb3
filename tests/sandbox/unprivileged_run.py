"""Runs one sandboxed command as an ordinary user and prints its outcome as JSON.

`python unprivileged_run.py FOLDER PROCESSES COMMAND`. Started as root: RLIMIT_NPROC does not
apply to root, so the process limit can only be seen from another user. The script forks; the
child enters a new user namespace whose uid 0 is kernel uid 65534 (nobody), which the parent
(still root) maps, then runs the real executor there. Everything is imported before the
switch (nobody may not be able to read the interpreter's own folders).
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (asyncio.to_thread's pool, imported lazily)
import ctypes
import json
import os
import sys
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore

CLONE_NEWUSER = 0x10000000
NOBODY = 65534


def become_nobody() -> None:
    """Fork; the parent maps the child's new user namespace and waits for it."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid:
        os.read(ready_r, 1)
        Path(f"/proc/{pid}/setgroups").write_text("deny")
        Path(f"/proc/{pid}/uid_map").write_text(f"0 {NOBODY} 1")
        Path(f"/proc/{pid}/gid_map").write_text(f"0 {NOBODY} 1")
        os.write(go_w, b"1")
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER) failed")
    os.write(ready_w, b"1")
    os.read(go_r, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)


def main(folder: Path, processes: int, command: str) -> None:
    if os.geteuid() == 0:
        become_nobody()
    paths = AppPaths(data=folder / "data", config=folder / "config")
    workspace = folder / "workspace"
    workspace.mkdir()
    executor = CommandExecutor(
        paths, ExecSettings(limits=ResourceLimits(processes=processes), grace_s=0.5))
    status = executor.status()
    if not status.available:  # e.g. unprivileged user namespaces are switched off here
        sys.stdout.write(json.dumps({"unavailable": status.reason}) + "\n")
        return
    with OutputStore.for_session(paths, "s").spool("c") as spool:
        outcome = asyncio.run(executor.run(command, workspace=workspace, spool=spool,
                                           timeout_s=30))
    sys.stdout.write(json.dumps({
        "uid_map": Path("/proc/self/uid_map").read_text().split(), "sandbox": outcome.sandbox,
        "exit_code": outcome.exit_code, "stopped": outcome.stopped,
        "output": outcome.spool_path.read_text(errors="replace")[-2000:]}) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
