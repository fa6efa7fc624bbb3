"""`reins` with no arguments: the desktop app.

A QApplication runs under a qasync event loop (`qasync.run`). The API key is taken out of
this process's environment before the kernel is spawned, so the kernel's environment never
holds it; the keyring is read on a thread once the window shows, and its key wins.
Shutdown is explicit: when the main window closes, runs are
cancelled, tool processes ended and the kernel stopped (within 2 s) before the loop ends —
not from `aboutToQuit`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import qasync
from PySide6.QtWidgets import QApplication

from desktop.controller import AppController
from desktop.resources import ResourceMissing, app_icon
from desktop.settings import keystore
from kernel.paths import AppPaths

log = logging.getLogger(__name__)


def make_application(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(
        argv if argv is not None else sys.argv)
    app.setApplicationName("Reins")
    app.setApplicationDisplayName("Reins")
    app.setDesktopFileName("reins")
    app.setQuitOnLastWindowClosed(False)
    try:
        app.setWindowIcon(app_icon())
    except ResourceMissing as exc:
        log.warning("%s", exc)
    return app


async def run_app(paths: AppPaths, api_key: str | None) -> int:
    controller = AppController(paths, api_key=api_key, read_keyring=True)
    closed = asyncio.Event()
    controller.window.closing.connect(closed.set)
    controller.start()
    await closed.wait()
    controller.shutdown()
    return 0


def main() -> int:
    logging.basicConfig(level=os.environ.get("REINS_LOG_LEVEL", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    env_key = keystore.take_env_key()
    make_application()
    return int(qasync.run(run_app(AppPaths.from_env(), env_key)) or 0)
