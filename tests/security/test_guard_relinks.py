"""What the guard undoes after a command or server changed a protected link anyway.

Inside the sandbox a marked link cannot be changed (kernel.sandbox.pin; see
test_sandbox_protected_links), but the guard does not rely on that: whatever changed a link
between the marks taken before and `undo` after (here a shell outside any sandbox, doing
what the attacks do), a link made again leading elsewhere is moved to the quarantine and
every protected link is made again as it was; the user's folder a retargeted link pointed at
stays. A link made again at once gets the freed inode back on ext4, so the link's text is
part of what is compared.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
from pathlib import Path
from typing import Any

from kernel.paths import AppPaths
from kernel.sandbox.guard import WorkspaceGuards
from tests.security.linkkit import ATTACKS, DANGLING, SAME, check, prepare


def _attack_each(folder: Path, commands: list[str]) -> list[dict[str, Any]]:
    workspace = folder / "workspace"
    guards = WorkspaceGuards(AppPaths(data=folder / "data", config=folder / "config"))

    async def run() -> list[dict[str, Any]]:
        outcomes = []
        for index, command in enumerate(commands):
            before = await guards.marks(workspace)
            subprocess.run(["/bin/sh", "-c", command], cwd=workspace, check=False,
                           capture_output=True, timeout=30)
            reverted = await guards.undo(workspace, before, f"c{index}")
            outcomes.append({"command": command,
                             "reverted": [dataclasses.asdict(r) for r in reverted]})
        return outcomes

    try:
        return asyncio.run(run())
    finally:
        guards.close()


def test_every_protected_link_is_made_again_as_it_was(tmp_path: Path) -> None:
    prepare(tmp_path)
    outcomes = _attack_each(tmp_path, [*ATTACKS.values(), *DANGLING.values(), SAME])
    check(tmp_path, {"outcomes": outcomes})
    named = dict(zip([*ATTACKS, *DANGLING, "same"], outcomes, strict=True))
    for name in ATTACKS:
        relinked = [r for r in named[name]["reverted"] if r["relinked"]]
        assert relinked and all(r["error"] == "" for r in relinked), (name, named[name])
    for name in DANGLING:
        moved = [r for r in named[name]["reverted"] if r["moved_to"]]
        assert moved and all(r["rule"].startswith("where ") for r in moved), named[name]
    same = named["same"]
    assert all(r["path"] == ".vscode" and r["error"] == "" and r["relinked"] in ("", "shared")
               for r in same["reverted"]), same
    moved = {r["path"] for o in outcomes for r in o["reverted"] if r["moved_to"]}
    assert {".vscode", "repo/.git/hooks", ".envrc", "deep/sub/.idea"} <= moved


def test_all_at_once_each_link_is_made_again_once(tmp_path: Path) -> None:
    prepare(tmp_path)
    every = [*ATTACKS.values(), *DANGLING.values()]
    [outcome] = _attack_each(tmp_path, [" ; ".join(f"( {c} )" for c in every)])
    check(tmp_path, {"outcomes": [outcome]})
    relinked = {r["path"] for r in outcome["reverted"] if r["relinked"]}
    assert relinked == {".vscode", ".envrc", "repo/.git/hooks", "deep/sub/.idea", "hop",
                        "dirlink"}, (
        outcome)
