"""Helpers of the transaction attack tests: commands run through the run_command tool with
transactions on (tests/security/txn_confined.py), as root and as nobody, in a workspace
that is a git repository with a secret, a husky folder and editor settings."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.security.conftest import Confined

TXN_CONFINED = Path(__file__).with_name("txn_confined.py")
ENV_CANARY = "canary-env-5f1c"
SSH_CANARY = "canary-ssh-9a2e"
GIT = "git -c user.email=a@b.c -c user.name=n"


def git_workspace(folder: Path) -> None:
    """A repository with one commit, a hook, husky's folder, editor settings and secrets."""
    ws = folder / "workspace"
    (ws / "a.txt").write_text("hello\n")
    (ws / "src").mkdir()
    (ws / "src/main.c").write_text("int main(void) { return 0; }\n")
    (ws / "package.json").write_text('{"name": "x", "dependencies": {"a": "1"}}\n')
    (ws / ".husky").mkdir()
    (ws / ".husky/pre-commit").write_text("npm test\n")
    (ws / ".vscode").mkdir()
    (ws / ".vscode/settings.json").write_text("{}\n")
    (ws / ".env").write_text(f"TOKEN={ENV_CANARY}\n")
    (ws / "sub/.ssh").mkdir(parents=True)
    (ws / "sub/.ssh/id_rsa").write_text(f"{SSH_CANARY}\n")
    subprocess.run(f"cd '{ws}' && git init -q -b main && git add a.txt src package.json "
                   f"&& {GIT} commit -qm init && printf '#!/bin/sh\\n' > .git/hooks/pre-commit",
                   shell=True, check=True)


@dataclass(frozen=True)
class Outcome:
    """One command's result through the tool, and what the reviewer was shown."""

    command: str
    content: str
    applied: list[tuple[str, str]]
    reviews: list[tuple[str, str]]
    transactions_left: list[str]
    full_previews: tuple[str, ...] = ()
    """Where each review's full diff was kept ('' when its diff was not cut)."""
    undone: bool | None = None
    """Whether undoing the call's step worked (None: not tried)."""

    @property
    def held(self) -> bool:
        return bool(self.reviews)

    def shown(self) -> str:
        return "\n".join(reason + "\n" + preview for reason, preview in self.reviews)


def run_txn(confined: Confined, commands: list[dict[str, Any]], *,
            prepare: Callable[[Path], None] = git_workspace,
            inspect: Callable[[Path, list[Outcome]], None] | None = None,
            probe: dict[str, Any] | None = None, settings: dict[str, Any] | None = None
            ) -> tuple[list[Outcome], dict[str, Any]]:
    """Run `commands` ({"command", "keep", "timeout_s", "cancel_after_s", "review_all",
    "undo"}: tests/security/txn_confined.py) as
    `confined.who`; `inspect(folder, outcomes)` looks at the real workspace after."""
    outcomes: list[Outcome] = []

    def parse(report: dict[str, Any]) -> list[Outcome]:
        return [Outcome(o["command"], o["content"], [tuple(a) for a in o["applied"]],
                        [tuple(r) for r in o["reviews"]], o["transactions_left"],
                        tuple(o.get("full_previews", ())), o.get("undone"))
                for o in report["outcomes"]]

    def look(folder: Path, report: dict[str, Any]) -> None:
        outcomes.extend(parse(report))
        if inspect is not None:
            inspect(folder, outcomes)

    report = confined([], prepare=prepare, inspect=look, script=TXN_CONFINED,
                      spec={"commands": commands, **({"probe": probe} if probe else {}),
                            **({"settings": settings} if settings else {})})
    return outcomes or parse(report), report
