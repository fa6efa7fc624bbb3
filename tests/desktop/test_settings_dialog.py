"""The settings dialog: rules validated as you type, settings.json written through the
policy's writer, the key in the keyring — or a clear message when there is no keyring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import keyring
import keyring.backend
import keyring.backends.fail
import pytest
from PySide6.QtWidgets import QLabel, QLineEdit, QPlainTextEdit, QPushButton
from pytestqt.qtbot import QtBot

from desktop.settings import keystore
from desktop.settings.dialog import SavedSettings, SettingsDialog, rule_problems
from desktop.welcome import WelcomePanel
from kernel.paths import AppPaths
from kernel.policy.settings import load_settings


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An in-memory keyring backend (the OS keyring is a boundary we don't own)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def make_dialog(qtbot: QtBot, paths: AppPaths) -> SettingsDialog:
    dialog = SettingsDialog(paths, diagnostics=lambda: "bwrap: ok (test)")
    qtbot.addWidget(dialog)
    dialog.open()
    return dialog


def test_rule_problems_name_the_line() -> None:
    assert rule_problems("run_command(git status)\n\nwrite_file(docs/**)") == []
    problems = rule_problems("run_command(git status)\nrun_command(\n")
    assert len(problems) == 1 and problems[0].startswith("line 2:")


def test_rules_are_validated_as_you_type(qtbot: QtBot, reins_home: AppPaths,
                                         memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    allow = dialog.rule_edits["allow"]
    qtbot.keyClicks(allow, "run_command(git status")
    assert not dialog.save_button.isEnabled()
    assert "line 1" in dialog.rule_errors["allow"].text()
    qtbot.keyClicks(allow, ")")
    assert dialog.save_button.isEnabled()
    assert dialog.rule_errors["allow"].text() == ""


def test_save_writes_settings_and_keyring(qtbot: QtBot, reins_home: AppPaths,
                                          memory_keyring: MemoryKeyring) -> None:
    reins_home.config.mkdir(parents=True)
    reins_home.settings_file.write_text(json.dumps({"exec": {"env": ["JAVA_HOME"]}}))
    dialog = make_dialog(qtbot, reins_home)
    assert "system keyring" in dialog.key_status.text()
    dialog.key_edit.setText("sk-test-123")
    dialog.model_edit.setText("claude-test")
    dialog.base_url_edit.setText("http://127.0.0.1:9999")
    dialog.mode_combo.setCurrentText("auto-edit")
    dialog.rule_edits["deny"].setPlainText("read_file(~/.ssh/**)")
    with qtbot.waitSignal(dialog.saved) as signal:
        dialog.save_button.click()
    assert signal.args == [SavedSettings("sk-test-123", "claude-test", "http://127.0.0.1:9999")]
    settings = load_settings(reins_home)
    assert settings.model == "claude-test" and str(settings.default_mode) == "auto-edit"
    assert settings.raw["permissions"]["deny"] == ["read_file(~/.ssh/**)"]
    assert settings.raw["exec"] == {"env": ["JAVA_HOME"]}, "keys the dialog does not edit stay"
    assert keystore.stored_key() == "sk-test-123"
    assert "sk-test-123" not in reins_home.settings_file.read_text()


def test_bad_base_url_blocks_save(qtbot: QtBot, reins_home: AppPaths,
                                  memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    dialog.base_url_edit.setText("ftp://nope")
    assert not dialog.save_button.isEnabled()


def test_without_keyring_the_key_is_held_in_memory_and_it_says_so(
        qtbot: QtBot, reins_home: AppPaths, no_keyring: None) -> None:
    dialog = make_dialog(qtbot, reins_home)
    assert dialog.key_edit.isEnabled() and not dialog.key_edit.isReadOnly()
    assert keystore.ENV_VAR in dialog.key_status.text()
    assert "in memory for this run of Reins only" in dialog.key_status.text()
    assert "never written to a file" in dialog.key_status.text()
    with pytest.raises(keystore.KeyringUnavailable):
        keystore.save_key("sk-x")
    qtbot.keyClicks(dialog.key_edit, "sk-mem-1")
    with qtbot.waitSignal(dialog.saved) as signal:
        dialog.save_button.click()
    assert signal.args == [SavedSettings("sk-mem-1", "", "", key_in_memory=True)]
    again = SettingsDialog(reins_home, diagnostics=lambda: "", memory_key="sk-mem-1")
    qtbot.addWidget(again)
    assert again.key_edit.text() == "sk-mem-1", "the key held in memory is shown again"
    files = [p for p in reins_home.config.rglob("*") if p.is_file()]
    assert all("sk-" not in p.read_text(errors="replace") for p in files)


def test_take_env_key_removes_it_from_the_environment() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-env", "PATH": "/bin"}
    assert keystore.take_env_key(env) == "sk-env"
    assert env == {"PATH": "/bin"}


def test_sandbox_and_data_tabs(qtbot: QtBot, reins_home: AppPaths,
                               memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    qtbot.waitUntil(lambda: dialog.sandbox_text.toPlainText() == "bwrap: ok (test)",
                    timeout=10_000)
    assert dialog.data_label.text() == str(reins_home.data)


def test_sandbox_tab_shows_the_doctor_report(qtbot: QtBot, reins_home: AppPaths,
                                            memory_keyring: MemoryKeyring) -> None:
    from kernel.sandbox.doctor import report

    dialog = SettingsDialog(reins_home)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.sandbox_text.toPlainText().startswith("sandbox:"),
                    timeout=30_000)
    assert dialog.sandbox_text.toPlainText() == report()


def test_every_control_has_an_accessible_name(qtbot: QtBot, reins_home: AppPaths,
                                              memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    controls = [w for kind in (QLineEdit, QPlainTextEdit, QPushButton)
                for w in dialog.findChildren(kind)]
    controls = [w for w in controls if w.parent() is not None and w.isVisibleTo(dialog)
                and not w.objectName().startswith("qt_")]
    assert controls
    assert [w for w in controls if not w.accessibleName()] == []


def test_welcome_panel_opens_settings(qtbot: QtBot) -> None:
    panel = WelcomePanel()
    qtbot.addWidget(panel)
    assert "API key" in panel.findChild(QLabel).text()
    with qtbot.waitSignal(panel.open_settings):
        panel.button.click()


def test_keyring_entry_is_the_one_the_kernel_reads() -> None:
    from kernel import keys
    from kernel.agent import provider

    assert (keystore.KEYRING_SERVICE, keystore.KEYRING_USER, keystore.ENV_VAR) == (
        provider.KEYRING_SERVICE, provider.KEYRING_USER, provider.ENV_VAR) == (
        keys.KEYRING_SERVICE, keys.KEYRING_USER, keys.ENV_VAR)


def test_the_key_names_module_imports_nothing_heavy() -> None:
    code = ("import sys, kernel.keys; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('anthropic', 'keyring', 'PySide6', 'jsonschema')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_ui_process_never_loads_the_sdk() -> None:
    code = ("import sys, desktop.controller, desktop.app; "
            "print(any(m == 'anthropic' or m.startswith('anthropic.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.stdout.strip() == "False"
