"""Fixtures shared by the whole suite."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernel.paths import AppPaths

if TYPE_CHECKING:
    from kernel.fakemodel import FakeAnthropicServer
    from tests.security.test_workspace_broad import Worker

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


def no_outside_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key or base URL from the environment and no system keyring: a test's kernel
    gets only what the test gives it."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")


@pytest.fixture
def quiet_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME under tmp_path (no XDG_CONFIG_HOME), and `no_outside_keys`: what a
    kernel or app started by the test finds of the user's is only what the test puts there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    no_outside_keys(monkeypatch)
    return home


@pytest.fixture
def worker_settings() -> dict[str, Any]:
    """settings.json of the `served` worker besides the fake model's base_url (a test file
    overrides this fixture to add its own)."""
    return {}


@pytest.fixture
def served(reins_home: AppPaths, monkeypatch: pytest.MonkeyPatch,
           worker_settings: dict[str, Any]) -> Iterator[tuple[FakeAnthropicServer, Worker]]:
    """The fake model and a real kernel worker process using it (`worker_settings`, its API
    key set over the pipe, `no_outside_keys`). Both end with the test: the fake's stalled
    replies are let go, and the worker is shut down unless the test closed it itself (to
    read all it wrote on stderr)."""
    from kernel import protocol as p
    from kernel.fakemodel import FakeAnthropicServer
    from tests.security.test_workspace_broad import Worker

    no_outside_keys(monkeypatch)
    with FakeAnthropicServer(api_key="test-key") as server:
        reins_home.settings_file.parent.mkdir(parents=True, exist_ok=True)
        reins_home.settings_file.write_text(json.dumps({"base_url": server.base_url,
                                                        **worker_settings}))
        worker = Worker()
        try:
            worker.send(p.SetApiKey("test-key"))
            yield server, worker
        finally:
            server.release()
            if worker.process.is_alive():
                worker.close()
