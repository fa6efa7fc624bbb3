"""Fixtures of the adversarial tests: commands run through the real executor over real
bubblewrap, as the user running the tests (root in CI) and as an unprivileged user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernel.sandbox.detect import detect_sandbox

ROOT = Path(__file__).resolve().parents[2]
CONFINED = Path(__file__).with_name("confined.py")
USERS = ["current", "nobody"]


def run_confined(who: str, commands: list[str], *, processes: int = 512,
                 network: bool = False, prepare: Callable[[Path], None] | None = None,
                 settings: dict[str, Any] | None = None,
                 inspect: Callable[[Path, dict[str, Any]], None] | None = None,
                 script: Path = CONFINED, spec: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """Run `commands` one after another in one executor as `who`; the parsed report.

    `prepare(folder)` fills `folder/workspace` before; `inspect(folder, report)` looks at it
    after (as the user running the tests), before the folder is removed. `script` runs them
    (confined.py, or another taking the same arguments) with `spec` added to its SPEC."""
    folder = Path(tempfile.mkdtemp(prefix="reins-sec-"))
    folder.chmod(0o777)  # reachable by nobody
    try:
        if prepare is not None:
            (folder / "workspace").mkdir()
            prepare(folder)
            if who == "nobody":
                subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        done = subprocess.run(
            [sys.executable, str(script), who, str(folder),
             json.dumps({"commands": commands, "processes": processes, "network": network,
                         "settings": settings or {}, **(spec or {})})],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if not report["status"]["available"]:
            message = f"{who} cannot create the sandbox here: {report['status']['reason']}"
            if os.environ.get("CI") and who == "current":
                pytest.fail(message)
            pytest.skip(message)
        if inspect is not None:
            inspect(folder, report)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return report


@dataclass(frozen=True)
class Confined:
    """Runs commands as `who` (see `run_confined`)."""

    who: str

    def __call__(self, commands: list[str], **options: Any) -> dict[str, Any]:
        return run_confined(self.who, commands, **options)


@pytest.fixture(params=USERS)
def confined(request: pytest.FixtureRequest) -> Confined:
    """As the current user (root in CI), then as nobody (when the tests run as root)."""
    if not detect_sandbox().available:
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not available in CI")
        pytest.skip("bubblewrap is not available here: apt-get install bubblewrap")
    who = str(request.param)
    if who == "nobody" and os.geteuid() != 0:
        pytest.skip("already an unprivileged user: the 'current' run covers it")
    return Confined(who)
