"""Runs sandboxed commands through the real executor as a chosen user; prints JSON outcomes.

`python confined.py AS FOLDER SPEC` where AS is `current` (whoever runs the tests: root in
CI) or `nobody` (started as root: the helper of tests/sandbox/unprivileged_run.py switches
to uid 0 of a user namespace that is kernel uid 65534 first), FOLDER a folder nobody can
reach, SPEC a JSON object: {"processes": N, "network": bool, "commands": [COMMAND, ...],
"settings": {ExecSettings field: value}, "in": [FOLDER NAME, ...]}. The workspace is
FOLDER/workspace, or for each command the folder of FOLDER its "in" names.
Prints one JSON line: {"as": …, "uid_map": …, "status": {…}, "outcomes": [{…}, …]}.
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
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.pids import usable_hierarchy
from kernel.sandbox.refusal import CommandRefused
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.unprivileged_run import become_nobody


async def _run_all(executor: CommandExecutor, workspaces: list[Path], outputs: OutputStore,
                   commands: list[str], network: bool) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    for index, (command, workspace) in enumerate(zip(commands, workspaces, strict=True)):
        workspace.mkdir(exist_ok=True)
        with outputs.spool(f"c{index}") as spool:
            try:
                outcome = await executor.run(command, workspace=workspace, spool=spool,
                                             timeout_s=60, network=network)
            except CommandRefused as exc:
                results.append({"command": command, "exit_code": None, "output": "",
                                "error": f"{exc} {exc.hint}"})
                continue
        results.append({"command": command, "exit_code": outcome.exit_code,
                        "network_scope": outcome.network_scope,
                        "reverted": [dataclasses.asdict(r) for r in outcome.reverted],
                        "stopped": outcome.stopped, "sandbox": outcome.sandbox,
                        "output": outcome.spool_path.read_text(errors="replace")[-4000:]})
    return results


def children_named(name: str) -> list[int]:
    """Live processes called `name` started by the executor (pasta daemonizes, so it is not
    a child: it is found by its pid file's folder, `reins-pasta-…`, on its command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if comm == name and b"reins-pasta-" in cmdline:
            found.append(int(entry.name))
    return found


def main(who: str, folder: Path, spec: dict[str, object]) -> None:
    if who == "nobody" and os.geteuid() == 0:
        become_nobody()
    paths = AppPaths(data=folder / "data", config=folder / "config")
    workspace = folder / "workspace"
    workspace.mkdir(exist_ok=True)
    processes = spec.get("processes", 512)
    assert isinstance(processes, int)
    options = spec.get("settings", {})
    assert isinstance(options, dict)
    executor = CommandExecutor(paths, ExecSettings(limits=ResourceLimits(processes=processes),
                                                   grace_s=0.5, **options), ahead=False)
    status = executor.status()
    report: dict[str, object] = {"as": who, "status": dataclasses.asdict(status),
                                 "uid_map": Path("/proc/self/uid_map").read_text().split()}
    if status.available:
        commands = spec["commands"]
        assert isinstance(commands, list)
        names = spec.get("in") or ["workspace"] * len(commands)
        assert isinstance(names, list)
        try:
            report["outcomes"] = asyncio.run(_run_all(
                executor, [folder / str(name) for name in names],
                OutputStore.for_session(paths, "s"), commands,
                bool(spec.get("network", False))))
        finally:
            executor.shutdown()
        report["pastas_left"] = children_named("pasta")
        hierarchy = usable_hierarchy() if status.process_limit == "cgroup" else None
        report["cgroups_left"] = [] if hierarchy is None else [
            entry.name for entry in hierarchy.root.iterdir()
            if entry.is_dir() and entry.name.startswith(f"{os.getpid()}-")]
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]))
