"""`reins` with no arguments: the desktop app.

A QApplication runs under a qasync event loop (`qasync.run`). The API key is taken out of
this process's environment before the kernel is spawned, so the kernel's environment never
holds it; the keyring is read on a thread once the window shows, and its key wins.
Shutdown is explicit: when the main window closes, runs are
cancelled, tool processes ended and the kernel stopped (within 2 s) before the loop ends —
not from `aboutToQuit`.

Start-up shows the window first: it is built, shown and given the pending events (its
first paint) before asyncio and qasync are imported and the loop starts — nothing on the
first screen needs them, and importing them is a good share of a cold start.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication

from desktop.resources import ResourceMissing, app_icon
from desktop.settings import keystore
from kernel.paths import AppPaths

if TYPE_CHECKING:
    from desktop.controller import AppController

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


def show_app(paths: AppPaths, api_key: str | None) -> AppController:
    """Build the main window and show it; the kernel starts once it has been painted."""
    from desktop.controller import AppController

    controller = AppController(paths, api_key=api_key, read_keyring=True)
    controller.start()
    return controller


async def run_app(controller: AppController) -> int:
    """Run until the main window is closed, then shut the controller down."""
    import asyncio

    closed = asyncio.Event()
    controller.window.closing.connect(closed.set)
    if controller.window.isVisible():
        await closed.wait()
    controller.shutdown()
    return 0


def main() -> int:
    logging.basicConfig(level=os.environ.get("REINS_LOG_LEVEL", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    env_key = keystore.take_env_key()
    app = make_application()
    controller = show_app(AppPaths.from_env(), env_key)
    app.processEvents()  # the first paint, before the event loop's modules are loaded
    import qasync

    return int(qasync.run(run_app(controller)) or 0)
