"""The `world` fixture: a workspace, a home folder (HOME points there) and a PathPolicy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.worldkit import PolicyWorld


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PolicyWorld:
    """HOME points at the world's home folder, so `~` resolves there."""
    made = PolicyWorld(tmp_path)
    monkeypatch.setenv("HOME", str(made.home))
    return made
