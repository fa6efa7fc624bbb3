"""Runs the scenario of test_mcp_server_workspace_gate as a chosen user; prints JSON.

`python server_gate.py AS FOLDER` where AS is `current` or `nobody` (see confined.py) and
FOLDER holds `home/`, `workspace/` (a git repository whose hooks are `.githooks`) and
`gate_server.py`. The kernel's own manager starts that server sandboxed in the workspace;
each step's result (ok, text) is reported with what the files are after it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (asyncio.to_thread's pool, imported lazily)
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from kernel.mcp.launch import mcp_state_dir
from kernel.mcp.manager import Backoff
from kernel.mcp.startup import start_mcp_servers
from kernel.paths import AppPaths
from kernel.sandbox import zygote
from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.settings import ExecSettings
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall
from tests.sandbox.unprivileged_run import become_nobody

BETWEEN = ["sub/.vscode/tasks.json", "x/.envrc", ".githooks/pre-commit", "plain.txt"]


async def scenario(folder: Path) -> dict[str, Any]:
    workspace = folder / "workspace"
    paths = AppPaths(data=folder / "data", config=folder / "config")
    registry = ToolRegistry()
    manager = await start_mcp_servers(
        registry, paths, {"gate": {"command": "/usr/bin/python3",
                                   "args": [str(folder / "gate_server.py")],
                                   "sandbox": True, "cwd": str(workspace)}},
        exec_settings=ExecSettings(local_network=True), backoff=Backoff(base_s=0.2))
    out: dict[str, Any] = {}
    try:
        [state] = await manager.wait_settled(60)
        out["started"] = state.summary
        if not state.summary.startswith("ready"):
            out["stderr"] = list(state.stderr_tail)
            return out
        dispatcher = Dispatcher(registry, session_id="s", workspace=workspace,
                                outputs=OutputStore(folder / "out"),
                                path_policy=PathPolicy(workspace))
        count = iter(range(1000))

        async def call(tool: str, **args: Any) -> tuple[bool, str]:
            result = await dispatcher.dispatch(
                ToolCall(f"c{next(count)}", f"mcp__gate__{tool}", args))
            return not result.is_error, result.text

        def exists(*names: str) -> dict[str, bool]:
            return {name: (workspace / name).exists() for name in names}

        out["begin"] = await call("begin", paths=BETWEEN, after=0.5)
        await asyncio.sleep(1.5)
        out["between"] = await call("report")
        out["between_exists"] = exists(*BETWEEN)
        out["plain"] = await call("write", path="during.txt", text="d")
        out["protected"] = await call("write", path="sub/.vscode/tasks.json", text="t")
        out["during_exists"] = exists("during.txt", "sub/.vscode/tasks.json")
        (workspace / "y").mkdir()
        (workspace / "y" / ".envrc").write_text("the user's")
        (workspace / "user.txt").write_text("the user's")
        out["after_user"] = await call("write", path="after.txt", text="a")
        out["user_exists"] = exists("y/.envrc", "user.txt")
        out["concurrent"] = await asyncio.gather(call("write_after", path="slow.txt", seconds=1.0),
                                                 call("write", path="quick.txt", text="q"))
        out["concurrent_exists"] = exists("slow.txt", "quick.txt")
        own = str(mcp_state_dir(paths, "gate") / "state" / "idle.txt")
        out["begin_again"] = await call("begin", paths=["late.txt", own], after=0.3)
        await asyncio.sleep(1.0)
        out["between_again"] = await call("report")
        out["own_state"] = json.loads(out["between_again"][1]).get(own)
        running = zygote.start()
        os.kill(running.pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        out["zygote_killed"] = await call("write", path="z.txt", text="z")
        out["zygote_killed_exists"] = exists("z.txt")
        out["zygote_again"] = await call("write", path="z.txt", text="z")
        out["hold_pid"] = manager.state("gate").pid
        out["hold"] = await call("hold", path="held.txt")
        state = await manager.wait_for(
            "gate", lambda s: s.summary.startswith("ready") and s.pid != out["hold_pid"], 30)
        out["restarted_pid"] = state.pid
        out["after_restart"] = await call("write", path="restarted.txt", text="r")
        return out
    finally:
        await manager.aclose()


async def warm_up(folder: Path) -> None:
    """One call of a sandboxed server in a workspace of its own, so that everything the
    scenario loads is loaded before the switch to nobody (who may not read the
    interpreter's own folders)."""
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    manager = await start_mcp_servers(
        ToolRegistry(), AppPaths(data=folder / "data", config=folder / "config"),
        {"gate": {"command": "/usr/bin/python3", "args": [str(folder.parent / "gate_server.py")],
                  "sandbox": True, "cwd": str(workspace)}},
        exec_settings=ExecSettings(local_network=True))
    try:
        await manager.wait_settled(60)
        dispatcher = Dispatcher(manager.registry, session_id="s", workspace=workspace,
                                outputs=OutputStore(folder / "out"),
                                path_policy=PathPolicy(workspace))
        await dispatcher.dispatch(ToolCall("w", "mcp__gate__write", {"path": "w.txt"}))
    finally:
        await manager.aclose()


def main(who: str, folder: Path) -> None:
    if who == "nobody" and os.geteuid() == 0:
        asyncio.run(warm_up(folder / "warm"))
        become_nobody()
    status = detect_sandbox()
    if not status.available:
        sys.stdout.write(json.dumps({"unavailable": status.reason}) + "\n")
        return
    sys.stdout.write(json.dumps(asyncio.run(scenario(folder))) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
