"""Qt tests run offscreen, also when pytest is run directly; the whole-app helper."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QPushButton, QVBoxLayout, QWidget
from pytestqt.qtbot import QtBot

from kernel.fakemodel import FakeAnthropicServer
from kernel.paths import AppPaths
from kernel.shared.keys import use_backend


@pytest.fixture
def no_keyring() -> Iterator[None]:
    """No system keyring (the fail backend), for the test's length."""
    previous = keyring.get_keyring()
    use_backend(keyring.backends.fail.Keyring())
    yield
    use_backend(previous)


@contextmanager
def running_app(qtbot: QtBot, paths: AppPaths, fake: FakeAnthropicServer, *, api_key: str,
                model: str, mode: str, **settings: Any) -> Iterator[Any]:
    """The real app (controller, window, a real kernel worker process) with settings.json
    pointing at the fake Anthropic server; shut down afterwards."""
    from desktop.controller import AppController

    paths.config.mkdir(parents=True, exist_ok=True)
    content: Mapping[str, Any] = {"base_url": fake.base_url, "model": model,
                                  "default_mode": mode, **settings}
    paths.settings_file.write_text(json.dumps(content))
    controller = AppController(paths, api_key=api_key)
    qtbot.addWidget(controller.window)
    controller.start()
    try:
        yield controller
    finally:
        controller.shutdown()


ARMED_WAIT_MS = 30_000
"""How long a test waits for a dialog to be answerable: far beyond its delay (ARM_DELAY_MS),
for a machine loaded by other test processes."""


def wait_armed(qtbot: QtBot, dialog: QWidget, button: QPushButton) -> None:
    """Wait until `button` of an approval or form dialog can answer it: its delay is over
    (`armed`, by the clock) and the button is enabled (by the arming timer, which a loaded
    machine runs late: armed alone is not yet clickable)."""
    qtbot.waitUntil(lambda: getattr(dialog, "armed", False) and button.isEnabled(),
                    timeout=ARMED_WAIT_MS)


def shown_card(controller: Any, call_id: str | None = None) -> Any:
    """The approval card the conversation shows now (for `call_id`, else the oldest), or
    None."""
    chat = controller.window.chat
    chat.executeDelayedItemsLayout()
    cards = chat.approval_cards
    found = cards.first() if call_id is None else cards.cards.get(call_id)
    return found if found is not None and found.isVisible() else None


def approval_card(qtbot: QtBot, controller: Any, call_id: str | None = None,
                  timeout: int = ARMED_WAIT_MS) -> Any:
    """The approval card shown in the conversation (for `call_id`, else the oldest), once
    the chat has laid it out under its call's line."""
    qtbot.waitUntil(lambda: shown_card(controller, call_id) is not None, timeout=timeout)
    return shown_card(controller, call_id)


def click_answer(qtbot: QtBot, dialog: QWidget, button: QPushButton) -> None:
    """Click an approval or form dialog's button as a person does: once the request has
    been on screen long enough to be answered."""
    wait_armed(qtbot, dialog, button)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def typing_window(qtbot: QtBot) -> tuple[QWidget, QLineEdit]:
    """A shown, active window whose line edit has the focus, as when the user types in the
    prompt: a dialog shown now must take neither the focus nor the keys from it. (Keep the
    window: qtbot holds it only weakly.)"""
    window = QWidget()
    qtbot.addWidget(window)
    edit = QLineEdit(window)
    QVBoxLayout(window).addWidget(edit)
    window.show()
    window.activateWindow()
    edit.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is edit, timeout=ARMED_WAIT_MS)
    return window, edit
