"""Fixtures for the sandbox tests: a real executor over real bubblewrap.

Without bubblewrap these tests are skipped with a reason that names the fix, except in CI
(`CI` set), where `make test` installs it and a missing sandbox is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.sandbox_helpers import MISSING, RunCommand, make_runner

SESSION = "sandbox-tests"



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
