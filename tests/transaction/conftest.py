"""Fixtures of the transaction tests: a folder nobody can reach too, and running a test
script's scenario as the current user or as nobody."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.transaction.overlaykit import run_as_nobody

USERS = ["current", "nobody"]


@pytest.fixture
def folder() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="reins-txn-"))
    made.chmod(0o777)  # reachable by nobody
    yield made
    for base, dirs, _files in os.walk(made):
        for name in dirs:
            if not os.path.islink(os.path.join(base, name)):
                os.chmod(os.path.join(base, name), 0o755)
    shutil.rmtree(made, ignore_errors=True)


def run_as(who: str, script: Path, run: Callable[[str, Path], dict[str, Any]], name: str,
           folder: Path) -> dict[str, Any]:
    """`run(name, folder)` in this process as the current user, or `script` run as nobody."""
    if who == "current":
        return run(name, folder)
    if os.geteuid() != 0:
        pytest.skip("already an unprivileged user: the 'current' run covers it")
    return run_as_nobody(script, folder, name)
