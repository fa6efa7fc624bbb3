"""A dead kernel is restarted with a back-off and a cap; then, or at once when its session
database cannot be used, the app says why (the kernel's own last stderr lines) and offers to
move the database aside: real kernel processes, a really corrupt database file and the real
window (pytest-qt). The policy and the rename as tables: test_kernel_restart.py."""

from __future__ import annotations

import os
import time

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient, KernelFailure, RestartPolicy
from desktop.kernel_failure import KernelFailureDialog
from kernel import protocol as p
from kernel.paths import AppPaths

WAIT_MS = 60_000
pytestmark = pytest.mark.timeout(180)


def _corrupt(paths: AppPaths) -> bytes:
    paths.data.mkdir(parents=True, exist_ok=True)
    content = b"SQLite format 3\x00" + os.urandom(64) + b"\x00garbage" * 600
    paths.database.write_bytes(content)
    return content


def test_a_corrupt_database_is_not_retried_and_the_failure_says_why(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    content = _corrupt(reins_home)
    client = KernelClient()
    failures: list[KernelFailure] = []
    deaths: list[str] = []
    client.failed.connect(failures.append)
    client.died.connect(deaths.append)
    client.start()
    try:
        qtbot.waitUntil(lambda: bool(failures), timeout=WAIT_MS)
        failure = failures[0]
        assert failure.database_unusable and failure.exit_code == p.EXIT_STORE_UNUSABLE
        assert "session database" in failure.reason
        assert str(reins_home.database) in failure.stderr_tail
        assert "cannot be opened" in failure.stderr_tail
        assert deaths == [] and client.restarts == 0 and not client.running
        assert reins_home.database.read_bytes() == content, "left as it was"
    finally:
        client.stop()


def test_a_kernel_that_keeps_dying_is_restarted_with_backoff_then_given_up(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    reins_home.data.parent.mkdir(parents=True, exist_ok=True)
    reins_home.data.write_text("a file where the data folder should be")
    client = KernelClient(policy=RestartPolicy(delays_s=(0.5,), cap=1))
    failures: list[KernelFailure] = []
    deaths: list[float] = []
    client.failed.connect(failures.append)
    client.died.connect(lambda _reason: deaths.append(time.monotonic()))
    starts: list[float] = []
    original = client.start

    def start() -> None:
        starts.append(time.monotonic())
        original()

    client.start = start  # type: ignore[method-assign]
    client.start()
    try:
        qtbot.waitUntil(lambda: bool(failures), timeout=WAIT_MS)
        assert len(starts) == 2 and len(deaths) == 1 and client.restarts == 1
        assert starts[1] - deaths[0] >= 0.5, "the back-off is waited"
        failure = failures[0]
        assert "2 times in a row" in failure.reason and not failure.database_unusable
        assert "FileExistsError" in failure.stderr_tail or "NotADirectoryError" in \
            failure.stderr_tail, failure.stderr_tail
        qtbot.wait(1500)
        assert len(starts) == 2, "nothing more is started after giving up"
    finally:
        client.stop()


def test_the_app_says_why_and_moving_the_database_aside_brings_it_back(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    from desktop.controller import AppController

    content = _corrupt(reins_home)
    controller = AppController(reins_home, api_key="sk-x")
    qtbot.addWidget(controller.window)
    ready: list[p.KernelReady] = []
    controller.client.ready.connect(ready.append)
    controller.start()
    try:
        qtbot.waitUntil(lambda: isinstance(getattr(controller, "failure_dialog", None),
                                           KernelFailureDialog)
                        and controller.failure_dialog.isVisible(), timeout=WAIT_MS)
        dialog = controller.failure_dialog
        assert "cannot use the session database" in dialog.summary.text()
        assert str(reins_home.database) in dialog.summary.text()
        assert "cannot be opened" in dialog.details.toPlainText()
        assert controller.window.kernel_label.text() == "Kernel stopped"
        assert ready == []
        qtbot.mouseClick(dialog.move_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: len(ready) == 1, timeout=WAIT_MS)
        assert not dialog.isVisible()
        kept = [f for f in reins_home.data.iterdir() if f.name.startswith("reins.sqlite3.broken-")]
        assert len(kept) == 1 and kept[0].read_bytes() == content
        assert reins_home.database.exists(), "the new kernel made an empty database"
        qtbot.waitUntil(lambda: controller.window.kernel_label.text() == "", timeout=WAIT_MS)
    finally:
        controller.shutdown()
