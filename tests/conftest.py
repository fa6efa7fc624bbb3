"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.paths import AppPaths

# Qt widgets are tested offscreen, whichever test file first creates the QApplication.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture
def reins_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppPaths:
    """A private REINS_HOME for one test: all data and settings live under tmp_path."""
    home = tmp_path / "reins-home"
    monkeypatch.setenv("REINS_HOME", str(home))
    return AppPaths.from_env()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws.resolve()
