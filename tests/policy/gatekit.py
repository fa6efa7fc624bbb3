"""A real Dispatcher with the real file tools and a PolicyGate, for the gate tests.

`run_command` here is a stand-in with the real tool's name, schema and risk that starts a
real process (`/bin/sh -c`) and records what its context said (network, user_approved), so
"a denied command never starts" is checked against a real process leaving a trace.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.events import Event
from kernel.paths import AppPaths
from kernel.policy.approvals import PolicyGate
from kernel.policy.channels import ApprovalChannel
from kernel.policy.decide import Mode
from kernel.policy.settings import Settings, load_settings
from kernel.tools.builtin import builtin_tools
from kernel.tools.dispatch import Dispatcher, ResultLog
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import Risk, ToolContext, ToolSpec


@dataclass(frozen=True)
class Sandbox:
    available: bool = True

    def describe(self) -> str:
        return "bwrap" if self.available else "none (bubblewrap is not installed)"


CONTEXTS: list[ToolContext] = []


def _run_command(command: str, ctx: ToolContext, cwd: str | None = None) -> str:
    CONTEXTS.append(ctx)
    done = subprocess.run(["/bin/sh", "-c", command], cwd=ctx.workspace, capture_output=True,
                          text=True, timeout=30, check=False)
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


RUN_COMMAND = ToolSpec(
    name="run_command",
    description="Run a shell command in the workspace (test stand-in that really runs it).",
    input_schema={"type": "object", "additionalProperties": False, "required": ["command"],
                  "properties": {"command": {"type": "string"}, "cwd": {"type": "string"}}},
    handler=_run_command,
    risk=Risk.EXECUTE,
    path_params=("cwd",),
)


class Kit:
    def __init__(self, workspace: Path, paths: AppPaths, *, mode: Mode = Mode.ASK,
                 channel: ApprovalChannel | None = None, sandboxed: bool = True,
                 settings: Settings | None = None, history: Sequence[Event] = (),
                 session_id: str = "s1", results: ResultLog | None = None,
                 home: Path | None = None) -> None:
        self.events: list[Event] = []
        self.reported: list[Event] = []
        self.workspace = workspace
        self.policy = PathPolicy(workspace, app_paths=paths)
        self.gate = PolicyGate(
            session_id=session_id, mode=mode, path_policy=self.policy,
            settings=settings if settings is not None else load_settings(paths),
            sandbox=Sandbox(sandboxed), channel=channel, emit=self._emit,
            report=self.reported.append, app_paths=paths, history=history, home=home)
        self.registry = ToolRegistry([*builtin_tools(), RUN_COMMAND])
        self.dispatcher = Dispatcher(
            self.registry, session_id=session_id, workspace=workspace,
            outputs=OutputStore.for_session(paths, session_id), path_policy=self.policy,
            gate=self.gate, results=results)

    def _emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]
