"""Runs commands through the run_command tool with transactions on, as a chosen user; prints
JSON outcomes (for the transaction attack tests, tests/security/test_transaction_*.py).

`python txn_confined.py AS FOLDER SPEC`, as tests/security/confined.py (AS `current` or
`nobody`, the workspace FOLDER/workspace), with SPEC's `commands` a list of
{"command": str, "keep": bool, "timeout_s": int, "cancel_after_s": float, "review_all": bool
(the user chose Run and review), "undo": bool (undo the call's step after it)}: each runs through
the real tool (real bubblewrap, the real overlay, the real settle) with a real PathPolicy
and a real checkpoint store; the review callback records what it was shown and answers
`keep`. `probe` ({"at": INDEX, "after_s": S, "command": SHELL}) runs SHELL outside the
sandbox, as the same user, S seconds into command INDEX, in the workspace: what the user's
IDE or prompt would see while the command runs. `settings` (a settings.json object): its
write_file/edit_file permission rules judge the change sets (kernel.policy.write_rules).
Prints one JSON line: {"as": …, "status": {…}, "outcomes": [{"content", "is_error",
"error_code", "applied": [[kind, path], …], "reviews": [[reason, preview], …],
"full_previews": [path of a review's full diff, …], "undone": bool,
"transactions_left": [names]}, …], "probe": {"output", "code"}}.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (asyncio.to_thread's pool, imported lazily)
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kernel.paths import AppPaths
from kernel.policy.settings import parse_settings
from kernel.policy.write_rules import write_rule
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.settings import ExecSettings
from kernel.tools.builtin.command import make_run_command
from kernel.tools.errors import ToolError
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import Review, ToolContext
from kernel.transaction.checkpoints import Checkpoints
from tests.sandbox.unprivileged_run import become_nobody


async def _probe(workspace: Path, probe: dict[str, Any], report: dict[str, Any]) -> None:
    await asyncio.sleep(float(probe["after_s"]))
    done = await asyncio.to_thread(
        subprocess.run, ["/bin/sh", "-c", str(probe["command"])], cwd=workspace,
        capture_output=True, text=True, timeout=30, check=False)
    report["probe"] = {"output": done.stdout + done.stderr, "code": done.returncode}


async def _run_all(executor: CommandExecutor, paths: AppPaths, workspace: Path,
                   spec: dict[str, Any], report: dict[str, Any]) -> None:
    run_command = make_run_command(executor)
    checkpoints = Checkpoints(paths.data / "checkpoints")
    outcomes: list[dict[str, Any]] = []
    probe = spec.get("probe")
    permissions = parse_settings(json.dumps(spec.get("settings", {}))).permissions
    for index, item in enumerate(spec["commands"]):
        reviews: list[list[str]] = []
        full: list[str] = []
        keep = bool(item.get("keep", False))

        async def review(shown: Review, reviews: list[list[str]] = reviews,
                         keep: bool = keep, full: list[str] = full) -> bool:
            reviews.append([shown.reason, shown.preview])
            full.append(shown.full_preview)
            return keep

        ctx = ToolContext(session_id="s", call_id=f"c{index}", workspace=workspace,
                          path_policy=PathPolicy(workspace, app_paths=paths),
                          outputs=OutputStore.for_session(paths, "s"), review=review,
                          checkpoints=checkpoints, review_all=bool(item.get("review_all")),
                          write_rule=lambda path: write_rule(
                              permissions, os.path.normpath(path), str(workspace),
                              str(Path.home())))
        watcher = (asyncio.create_task(_probe(workspace, probe, report))
                   if probe is not None and probe["at"] == index else None)
        call = asyncio.create_task(run_command.handler(
            command=item["command"], ctx=ctx, timeout_s=int(item.get("timeout_s", 60))))
        outcome: dict[str, Any] = {"command": item["command"], "reviews": reviews,
                                   "full_previews": full}
        if "cancel_after_s" in item:
            await asyncio.sleep(float(item["cancel_after_s"]))
            call.cancel()
        try:
            result = await call
            outcome.update(content=result.content, is_error=result.is_error,
                           error_code=str(result.error_code),
                           applied=[[c.kind, c.path] for c in result.changes or ()])
        except asyncio.CancelledError:
            outcome.update(content="cancelled", is_error=True, error_code="cancelled",
                           applied=[])
        except ToolError as exc:
            outcome.update(content=str(exc), is_error=True, error_code=str(exc.code),
                           applied=[])
        if item.get("undo"):
            outcome["undone"] = checkpoints.undo("s", f"c{index}").ok
        if watcher is not None:
            with contextlib.suppress(Exception):
                await watcher
        folder = paths.data / "transactions"
        outcome["transactions_left"] = sorted(os.listdir(folder)) if folder.is_dir() else []
        outcomes.append(outcome)
    report["outcomes"] = outcomes


def main(who: str, folder: Path, spec: dict[str, Any]) -> None:
    if who == "nobody" and os.geteuid() == 0:
        become_nobody()
    paths = AppPaths(data=folder / "data", config=folder / "config")
    workspace = folder / "workspace"
    workspace.mkdir(exist_ok=True)
    executor = CommandExecutor(paths, ExecSettings(limits=ResourceLimits(processes=512),
                                                   grace_s=0.5), ahead=False,
                               transactions=True)
    status = executor.status()
    report: dict[str, Any] = {"as": who, "status": dataclasses.asdict(status)}
    if status.available:
        try:
            asyncio.run(_run_all(executor, paths, workspace, spec, report))
        finally:
            executor.shutdown()
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]))
