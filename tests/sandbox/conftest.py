"""Fixtures for the sandbox tests: a real executor over real bubblewrap.

Without bubblewrap these tests are skipped with a reason that names the fix, except in CI
(`CI` set), where `make test` installs it and a missing sandbox is a failure.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.executor import CommandExecutor, CommandOutcome
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.sandbox_helpers import MISSING

SESSION = "sandbox-tests"

RunCommand = Callable[..., tuple[CommandOutcome, str]]


@pytest.fixture(scope="session")
def sandbox_status() -> SandboxStatus:
    status = detect_sandbox()
    if not status.available:
        message = (
            f"the bubblewrap sandbox is not available here ({status.reason}); "
            f"install it: apt-get install bubblewrap"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return status


@pytest.fixture
def outputs(reins_home: AppPaths) -> OutputStore:
    return OutputStore.for_session(reins_home, SESSION)


def make_runner(
    executor: CommandExecutor, workspace: Path, outputs: OutputStore
) -> RunCommand:
    counter = itertools.count()

    def run(command: str, **kwargs: Any) -> tuple[CommandOutcome, str]:
        kwargs.setdefault("timeout_s", 60)
        kwargs.setdefault("workspace", workspace)
        with outputs.spool(f"call-{next(counter)}") as spool:
            outcome = asyncio.run(executor.run(command, spool=spool, **kwargs))
        return outcome, outcome.spool_path.read_text(errors="replace")

    return run


@pytest.fixture
def executor(reins_home: AppPaths, sandbox_status: SandboxStatus) -> Iterator[CommandExecutor]:
    ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5))
    yield ex
    ex.shutdown()


@pytest.fixture
def run_cmd(executor: CommandExecutor, workspace: Path, outputs: OutputStore) -> RunCommand:
    return make_runner(executor, workspace, outputs)


@pytest.fixture
def bare_executor(reins_home: AppPaths) -> Iterator[CommandExecutor]:
    """An executor that finds no sandbox (its bwrap path does not exist)."""
    ex = CommandExecutor(reins_home, ExecSettings(grace_s=0.5, bwrap=MISSING))
    yield ex
    ex.shutdown()


@pytest.fixture
def run_bare(bare_executor: CommandExecutor, workspace: Path, outputs: OutputStore) -> RunCommand:
    return make_runner(bare_executor, workspace, outputs)
