"""The first screens and the errors, on the real widgets fed protocol messages: the key can
always be entered (without a keyring it is held in memory for this run, and the app says
so); a keyring that fails never leaves the prompt waiting; the welcome text fits and tells
the truth; the mode box shows the default mode; errors read in the app's words and an
overload or network error offers Retry."""

from __future__ import annotations

import keyring
import keyring.backend
import keyring.backends.fail
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role
from desktop.controller import AppController
from desktop.settings import keystore
from desktop.welcome import IN_MEMORY
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.shared.keys import use_backend
from tests.desktop.test_main_window import RecordingClient, load, make


class BrokenKeyring(keyring.backend.KeyringBackend):
    """A backend that fails the way some desktop keyrings do (not with a KeyringError)."""

    priority = 10  # type: ignore[assignment]
    viable = False  # type: ignore[assignment]
    """Set explicitly by the test only: a viable backend class is found by keyring's chainer
    for every later keyring use in this process (other tests' keys would fail)."""

    def get_password(self, service: str, username: str) -> str | None:
        raise LookupError("the secret service went away")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise LookupError("the secret service went away")

    def delete_password(self, service: str, username: str) -> None:
        raise LookupError("the secret service went away")


def started(qtbot: QtBot, reins_home: AppPaths, key: str | None
            ) -> tuple[AppController, RecordingClient]:
    client = RecordingClient()
    controller = AppController(reins_home, client=client, api_key=key,  # type: ignore[arg-type]
                               read_keyring=True)
    qtbot.addWidget(controller.window)
    controller.start()
    qtbot.waitUntil(lambda: not controller.key_pending, timeout=10_000)
    return controller, client


def test_without_a_keyring_the_key_is_entered_and_held_in_memory(
        qtbot: QtBot, reins_home: AppPaths, no_keyring: None) -> None:
    controller, client = started(qtbot, reins_home, None)
    w = controller.window
    assert w.pages.currentWidget() is w.welcome
    assert IN_MEMORY in w.welcome.text.text()
    assert "keyring, never" not in w.welcome.text.text()
    dialog = controller.open_settings()
    assert dialog.key_edit.isEnabled()
    qtbot.keyClicks(dialog.key_edit, "sk-typed-in")
    dialog.save_button.click()
    assert p.SetApiKey("sk-typed-in") in client.sent
    assert controller.can_run and w.pages.currentWidget() is w.chat_page
    assert "in memory for this run of Reins only" in w.statusBar().currentMessage()
    files = [f for f in reins_home.config.rglob("*") if f.is_file()]
    assert all("sk-typed-in" not in f.read_text(errors="replace") for f in files)
    # Settings opened again shows the key it holds.
    assert controller.open_settings().key_edit.text() == "sk-typed-in"


def test_a_failing_keyring_never_leaves_the_prompt_waiting(qtbot: QtBot,
                                                          reins_home: AppPaths) -> None:
    previous = keyring.get_keyring()
    use_backend(BrokenKeyring())
    try:
        assert keystore.keyring_state().available
        controller, _ = started(qtbot, reins_home, "sk-env")
    finally:
        use_backend(previous)
    edit = controller.window.prompt.edit
    assert not edit.isReadOnly()
    assert "keyring" not in edit.placeholderText()
    assert edit.placeholderText().startswith("Ask Reins")


def test_the_keyring_placeholder_goes_once_the_key_is_read(qtbot: QtBot, reins_home: AppPaths,
                                                           no_keyring: None) -> None:
    from desktop.app import show_first_window

    window = show_first_window()
    qtbot.addWidget(window)
    assert "keyring" in window.prompt.edit.placeholderText()
    controller = AppController(reins_home, client=RecordingClient(),  # type: ignore[arg-type]
                               api_key="sk-env", read_keyring=True, window=window)
    controller.start()
    qtbot.waitUntil(lambda: not controller.key_pending, timeout=10_000)
    assert "keyring" not in window.prompt.edit.placeholderText()
    controller.shutdown()


def test_the_welcome_text_is_shown_whole(qtbot: QtBot, reins_home: AppPaths,
                                         no_keyring: None) -> None:
    controller, _ = started(qtbot, reins_home, None)
    w = controller.window
    w.resize(1000, 700)
    w.show()
    QApplication.processEvents()
    label = w.welcome.text
    needed = label.heightForWidth(label.width())
    assert label.height() >= needed > 0, (label.height(), needed)
    assert label.visibleRegion().boundingRect().height() >= needed


def test_with_no_session_the_mode_box_shows_the_default_mode(qtbot: QtBot,
                                                             reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"default_mode": "auto-edit"}')
    controller, client = make(qtbot, reins_home)
    combo = controller.window.mode_combo
    assert combo.currentText() == "ask", "the UI never reads settings.json: the kernel does"
    client.batch.emit([p.SettingsSnapshot(str(reins_home.settings_file),
                                          {"default_mode": "auto-edit"},
                                          default_mode="auto-edit")])
    qtbot.waitUntil(lambda: combo.currentText() == "auto-edit", timeout=10_000)
    assert not combo.isEnabled()
    load(controller, client)
    assert combo.currentText() == "ask" and combo.isEnabled()


def test_a_fresh_profile_shows_ask(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, _ = make(qtbot, reins_home)
    assert controller.window.mode_combo.currentText() == "ask"


def test_an_overload_reads_in_the_apps_words_and_offers_retry(qtbot: QtBot,
                                                             reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    message = ("The model API is overloaded (HTTP 529: Overloaded), still after 3 attempts. "
               "Retry the run later (reins exec --session ID resumes the same turn).")
    client.batch.emit([p.RunStatus("s1", "running"),
                       p.EventMessage(ev.UserMessage("s1", "hi")),
                       p.EventMessage(ev.ErrorEvent("s1", "overloaded", message)),
                       p.EventMessage(ev.RunFinished("s1", "error")),
                       p.RunStatus("s1", "idle")])
    errors = [i.text for i in controller.views["s1"].chat.items()
              if isinstance(i, MessageItem) and i.role is Role.ERROR]
    assert errors and "reins exec" not in errors[0] and "--session" not in errors[0]
    assert "Press Retry to send the same turn again." in errors[0]
    banner = controller.window.banner
    assert banner.isVisible() and banner.button.text() == "&Retry"
    banner.button.click()
    assert client.of(p.ResumeRun) == [p.ResumeRun("s1")]
    client.batch.emit([p.RunStatus("s1", "running"),
                       p.EventMessage(ev.SessionStarted("s1", "/w", "m", "bwrap"))])
    assert not banner.isVisible()


def test_an_error_retrying_cannot_cure_offers_no_retry(qtbot: QtBot,
                                                      reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client,
         ev.UserMessage("s1", "hi"),
         ev.ErrorEvent("s1", "auth_error", "The API key was refused (HTTP 401: no)."),
         ev.RunFinished("s1", "error"))
    assert not controller.window.banner.isVisible()


def test_a_loaded_session_that_ended_in_a_network_error_offers_retry(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client,
         ev.UserMessage("s1", "hi"),
         ev.ErrorEvent("s1", "connection_error", "Could not reach the model API x."),
         ev.RunFinished("s1", "error"))
    assert controller.window.banner.isVisible()
    assert "could not answer" in controller.window.banner.label.text()
