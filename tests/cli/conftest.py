"""Fixtures for the CLI tests: the fake Messages API server and a real `reins` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernel.cli.main import main as cli_main
from kernel.fakemodel import FakeAnthropicServer
from kernel.paths import AppPaths

REINS = str(Path(sys.executable).with_name("reins"))


@dataclass
class Cli:
    server: FakeAnthropicServer
    paths: AppPaths
    workspace: Path
    env: dict[str, str]
    capsys: pytest.CaptureFixture[str]

    def call(self, *args: str) -> tuple[int, str, str]:
        """`reins ARGS` in this process (same code path as the console script, faster)."""
        code = cli_main(list(args))
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err

    def command(self, *args: str) -> list[str]:
        return [REINS, *args]

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), env=self.env, cwd=self.workspace,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.command(*args), env=self.env, cwd=self.workspace,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def types(items: Sequence[dict[str, Any]]) -> list[str]:
    """The event types, without the policy's automatic approval decisions."""
    return [e["type"] for e in items
            if not (e["type"] == "approval_decision" and e.get("decided_by") == "policy")]


@pytest.fixture
def cli(reins_home: AppPaths, workspace: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    """The fake server, and an environment (also applied to this process) pointing at it."""
    (workspace / "a.txt").write_text("alpha file\n")
    for name in [k for k in os.environ if k.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(name)
    with FakeAnthropicServer(api_key="test-key") as server:
        settings = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.base_url,
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(workspace)
        yield Cli(server, reins_home, workspace, dict(os.environ), capsys)
        server.release()
