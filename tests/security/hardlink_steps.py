"""Runs sandboxed commands through the real executor as a chosen user, with steps done
OUTSIDE the sandbox between them (hard links made, renamed, removed by the user during the
session); prints JSON outcomes as tests/security/confined.py does.

`python hardlink_steps.py AS FOLDER SPEC`: AS and FOLDER as for confined.py; SPEC a JSON
object {"home": FOLDER-relative path used as HOME, "commands": [STEP, ...]}, where a STEP is
a command (a string) or ["link" | "rename", SOURCE, TARGET] with FOLDER-relative paths.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.unprivileged_run import become_nobody

Step = str | list[str]


async def _run_all(executor: CommandExecutor, folder: Path, steps: list[Step]
                   ) -> list[dict[str, object]]:
    outputs = OutputStore.for_session(executor.paths, "s")
    workspace = folder / "workspace"
    results: list[dict[str, object]] = []
    for index, step in enumerate(steps):
        if not isinstance(step, str):
            action, source, target = step
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            (os.link if action == "link" else os.rename)(folder / source, folder / target)
            results.append({"outside": step})
            continue
        with outputs.spool(f"c{index}") as spool:
            outcome = await executor.run(step, workspace=workspace, spool=spool, timeout_s=60)
        results.append({"command": step, "exit_code": outcome.exit_code,
                        "reverted": [dataclasses.asdict(r) for r in outcome.reverted],
                        "output": outcome.spool_path.read_text(errors="replace")[-4000:]})
    return results


def main(who: str, folder: Path, spec: dict[str, object]) -> None:
    if who == "nobody" and os.geteuid() == 0:
        become_nobody()
    os.environ["HOME"] = str(folder / str(spec["home"]))
    executor = CommandExecutor(AppPaths(data=folder / "data", config=folder / "config"),
                               ExecSettings(grace_s=0.5), ahead=False)
    status = executor.status()
    report: dict[str, object] = {"as": who, "status": dataclasses.asdict(status)}
    if status.available:
        steps = spec["commands"]
        assert isinstance(steps, list)
        try:
            report["outcomes"] = asyncio.run(_run_all(executor, folder, steps))
        finally:
            executor.shutdown()
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]))
