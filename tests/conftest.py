"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.paths import AppPaths

# Qt widgets are tested offscreen, whichever test file first creates the QApplication.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SLOW = (
    "packaging/", "security/", "mcp/", "cli/", "eval/test_eval_suite.py",
    "eval/test_eval_window.py", "desktop/test_app_", "desktop/test_kernel_client.py",
    "desktop/test_worker_grants.py", "desktop/test_stop_one_call.py",
    "agent/test_worker_store_commands.py",
    "desktop/test_mcp", "policy/test_exec_approvals.py", "policy/test_restart.py",
    "sandbox/test_sandbox_limits.py", "sandbox/test_sandbox_output.py",
    "sandbox/test_sandbox_lifetime.py", "kernel/test_settings_owner.py",
    "desktop/test_settings_app.py", "desktop/test_session_export.py",
)
"""Test files (relative to tests/) that start whole apps, bundles, real MCP servers, `reins
exec` processes or many sandboxes: `make test-fast` (`-m "not slow"`) leaves them out."""
TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(item.path).relative_to(TESTS).as_posix()
        if relative.startswith(SLOW):
            item.add_marker(pytest.mark.slow)


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
