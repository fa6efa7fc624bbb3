"""`reins` with no arguments: the desktop app.

A QApplication runs under a qasync event loop (`qasync.run`). The API key is taken out of
this process's environment before the kernel is spawned, so the kernel's environment never
holds it; the keyring is read on a thread once the window shows, and its key wins.
Shutdown is explicit: when the main window closes, runs are
cancelled, tool processes ended and the kernel stopped (within 2 s) before the loop ends —
not from `aboutToQuit`.

Start-up shows the window first: the main window is built, shown and painted before the
rest of the app is loaded (the controller with the protocol and the approval dialog, the
settings, asyncio and qasync) and before the kernel starts — nothing on the first screen
needs them, and loading them is most of a cold start.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication

from desktop import theme
from desktop.resources import ResourceMissing, app_icon
from desktop.settings import keystore

if TYPE_CHECKING:
    from desktop.controller import AppController
    from desktop.main_window import MainWindow
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
    theme.install(app)
    try:
        app.setWindowIcon(app_icon())
    except ResourceMissing as exc:
        log.warning("%s", exc)
    return app


def show_first_window() -> MainWindow:
    """The main window as it first looks (the stored key is being read), shown and painted."""
    from desktop.main_window import MainWindow

    window = MainWindow()
    window.show_readiness(can_run=True, key_pending=True, has_session=False, running=False,
                          interrupted=False)
    window.set_kernel_state("Starting the kernel…")
    window.show()
    QApplication.processEvents()
    return window


def show_app(window: MainWindow, paths: AppPaths, api_key: str | None) -> AppController:
    """Wire the shown window to a controller; the kernel starts right after."""
    from desktop.controller import AppController

    controller = AppController(paths, api_key=api_key, read_keyring=True, window=window)
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
    # Start-up makes objects that live as long as the app (modules, classes, Qt's Python
    # enums, widgets): no collection walks them before the first window is painted, and
    # then they are frozen out of later collections.
    gc.disable()
    logging.basicConfig(level=os.environ.get("REINS_LOG_LEVEL", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    env_key = keystore.take_env_key()
    make_application()
    window = show_first_window()
    gc.freeze()
    gc.enable()
    from kernel.paths import AppPaths

    controller = show_app(window, AppPaths.from_env(), env_key)
    import qasync

    return int(qasync.run(run_app(controller)) or 0)
