"""Helpers for the tool tests: a real registry, dispatcher, output store and path policy."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel.paths import AppPaths
from kernel.tools.dispatch import Dispatcher, Gate, ResultLog
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import Progress, ToolCall, ToolResult, ToolSpec

SESSION = "session-1"


@dataclass
class RecordingObserver:
    """Remembers every notification, in order, with the thread it arrived on."""

    started: list[tuple[str, str | None]] = field(default_factory=list)
    progress_events: list[Progress] = field(default_factory=list)
    finished: list[ToolResult] = field(default_factory=list)

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        self.started.append((call.call_id, spec.name if spec else None))

    def progress(self, progress: Progress) -> None:
        self.progress_events.append(progress)

    def call_finished(self, call: ToolCall, result: ToolResult) -> None:
        self.finished.append(result)


@dataclass
class Env:
    paths: AppPaths
    workspace: Path
    outputs: OutputStore
    policy: PathPolicy

    def dispatcher(
        self,
        specs: Iterable[ToolSpec],
        *,
        gate: Gate | None = None,
        observer: Any = None,
        results: ResultLog | None = None,
        max_parallel: int = 4,
    ) -> Dispatcher:
        return Dispatcher(
            ToolRegistry(specs),
            session_id=SESSION,
            workspace=self.workspace,
            outputs=self.outputs,
            path_policy=self.policy,
            gate=gate,
            observer=observer,
            results=results,
            max_parallel=max_parallel,
            retry_base_s=0.001,
        )

    @staticmethod
    def call(dispatcher: Dispatcher, name: str, args: Any, call_id: str = "call-1") -> ToolResult:
        """One dispatch in a fresh event loop."""
        return asyncio.run(dispatcher.dispatch(ToolCall(call_id, name, args)))


@pytest.fixture
def env(reins_home: AppPaths, workspace: Path) -> Env:
    return Env(
        paths=reins_home,
        workspace=workspace,
        outputs=OutputStore.for_session(reins_home, SESSION),
        policy=PathPolicy(workspace, app_paths=reins_home),
    )


@pytest.fixture
def observer() -> RecordingObserver:
    return RecordingObserver()
