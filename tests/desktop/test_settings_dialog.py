"""The settings dialog's own parts: the key in the keyring — or a clear message when there is
no keyring —, the kernel's snapshot shown, only changed keys sent, the kernel's problems
shown on the right line. Checking and saving through the real kernel worker:
test_settings_app.py."""

from __future__ import annotations

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
from desktop.settings.dialog import SavedSettings, SettingsDialog, rule_lines, sort_problems
from desktop.welcome import WelcomePanel
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.shared.keys import use_backend


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
    use_backend(backend)
    yield backend
    use_backend(previous)


SNAPSHOT = p.SettingsSnapshot(
    "/c/settings.json", {"model": "claude-file", "base_url": "http://127.0.0.1:8080",
                         "default_mode": "auto-edit", "exec": {"env": ["JAVA_HOME"]},
                         "permissions": {"allow": ["run_command(git status)"],
                                         "deny": ["read_file(~/.ssh/**)"]}},
    model="claude-file", default_mode="auto-edit", can_run=True)


def make_dialog(qtbot: QtBot, paths: AppPaths,
                settings: p.SettingsSnapshot | None = SNAPSHOT) -> SettingsDialog:
    dialog = SettingsDialog(paths, settings=settings)
    qtbot.addWidget(dialog)
    dialog.open()
    return dialog


@pytest.mark.parametrize(("text", "rules", "lines"), [
    ("", [], []),
    ("run_command(git status)", ["run_command(git status)"], [1]),
    ("\n  a  \n\n\tb\n", ["a", "b"], [2, 4]),
    ("a\r\nb\r\n", ["a", "b"], [1, 2]),
    ("   \n \t ", [], []),
])
def test_rule_lines_keep_the_line_each_rule_came_from(text: str, rules: list[str],
                                                      lines: list[int]) -> None:
    assert rule_lines(text) == (rules, lines)


@pytest.mark.parametrize(("problems", "by_list", "other"), [
    ((), {"allow": [], "deny": []}, []),
    ((p.SettingsProblem(("permissions", "allow", "1"), "bad"),),
     {"allow": ["line 4: bad"], "deny": []}, []),
    ((p.SettingsProblem(("permissions", "deny", "0"), "x"),
      p.SettingsProblem(("permissions", "allow", "0"), "y")),
     {"allow": ["line 2: y"], "deny": ["line 1: x"]}, []),
    ((p.SettingsProblem(("permissions", "allow", "9"), "beyond"),),
     {"allow": [], "deny": []}, ["beyond"]),
    ((p.SettingsProblem(("permissions", "ask", "0"), "unknown list"),),
     {"allow": [], "deny": []}, ["unknown list"]),
    ((p.SettingsProblem(("base_url",), "no ftp"), p.SettingsProblem((), "whole file", 3)),
     {"allow": [], "deny": []}, ["no ftp", "whole file"]),
])
def test_the_kernels_problems_go_to_the_line_they_name(
        problems: tuple[p.SettingsProblem, ...], by_list: dict[str, list[str]],
        other: list[str]) -> None:
    assert sort_problems(problems, {"allow": [2, 4], "deny": [1]}) == (by_list, other)


def test_the_kernels_reading_is_shown_and_only_changed_keys_are_sent(
        qtbot: QtBot, reins_home: AppPaths, memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    assert (dialog.model_edit.text(), dialog.base_url_edit.text(),
            dialog.mode_combo.currentText()) == ("claude-file", "http://127.0.0.1:8080",
                                                 "auto-edit")
    assert dialog.rule_edits["allow"].toPlainText() == "run_command(git status)"
    assert dialog.config_label.text() == "/c/settings.json"
    assert dialog.changes() == ()
    dialog.model_edit.setText("  claude-typed ")
    dialog.base_url_edit.clear()
    dialog.rule_edits["deny"].setPlainText("read_file(~/.ssh/**)\n\n")  # same rules
    dialog.rule_edits["ask"].setPlainText("\nmcp__git__*")
    assert dialog.changes() == (
        p.SettingChange(("model",), "claude-typed"),
        p.SettingChange(("base_url",), remove=True),
        p.SettingChange(("permissions", "ask"), ["mcp__git__*"]))
    sent: list[p.Message] = []
    dialog.command.connect(sent.append)
    with qtbot.waitSignal(dialog.command, timeout=5_000):
        pass  # the check waits for typing to pause
    check = sent[-1]
    assert isinstance(check, p.UpdateSettings) and check.check_only
    assert check.changes == dialog.changes()
    dialog.show_settings(p.SettingsSnapshot("/c/settings.json", request_id=check.request_id,
                                            problems=(p.SettingsProblem(
                                                ("permissions", "ask", "0"), "no such tool"),)))
    assert dialog.rule_errors["ask"].text() == "line 2: no such tool"
    assert not dialog.save_button.isEnabled()
    assert dialog.model_edit.text() == "  claude-typed ", "an answer never overwrites typing"
    # A push (another change, a hand edit) does not overwrite what is being typed either.
    dialog.show_settings(p.SettingsSnapshot("/c/settings.json", {"model": "pushed"}))
    assert dialog.model_edit.text() == "  claude-typed "


def test_save_sends_the_changes_and_closes_only_when_the_kernel_wrote_them(
        qtbot: QtBot, reins_home: AppPaths, memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    dialog.key_edit.setText("sk-test-123")
    dialog.model_edit.setText("claude-test")
    sent: list[p.Message] = []
    dialog.command.connect(sent.append)
    with qtbot.assertNotEmitted(dialog.saved):
        dialog.save_button.click()
    save = sent[-1]
    assert isinstance(save, p.UpdateSettings) and not save.check_only
    assert save.changes == (p.SettingChange(("model",), "claude-test"),)
    assert dialog.isVisible() and not dialog.save_button.isEnabled()
    assert keystore.stored_key() != "sk-test-123", "nothing is kept before the kernel wrote"
    dialog.show_settings(p.SettingsSnapshot("/c/settings.json", request_id=save.request_id,
                                            problems=(p.SettingsProblem(
                                                (), "settings.json cannot be used: :3: x", 3),)))
    assert dialog.isVisible() and dialog.save_button.isEnabled()
    assert dialog.error_label.text().startswith("Not saved: settings.json cannot be used")
    dialog.save_button.click()
    with qtbot.waitSignal(dialog.saved) as signal:
        dialog.show_settings(p.SettingsSnapshot("/c/settings.json",
                                                request_id=sent[-1].request_id))
    assert signal.args == [SavedSettings("sk-test-123")]
    assert keystore.stored_key() == "sk-test-123" and not dialog.isVisible()


def test_without_keyring_the_key_is_held_in_memory_and_it_says_so(
        qtbot: QtBot, reins_home: AppPaths, no_keyring: None) -> None:
    dialog = make_dialog(qtbot, reins_home)
    assert dialog.key_edit.isEnabled() and not dialog.key_edit.isReadOnly()
    assert keystore.ENV_VAR in dialog.key_status.text()
    assert "in memory for this run of Reins only" in dialog.key_status.text()
    assert "unless you tick the box below to keep it in a file" in dialog.key_status.text()
    assert dialog.key_file_box.isVisible() and not dialog.key_file_box.isChecked()
    assert str(reins_home.api_key_file) in dialog.key_file_note.text()
    assert "mode 0600" in dialog.key_file_note.text() and dialog.key_file_note.isVisible()
    with pytest.raises(keystore.KeyringUnavailable):
        keystore.save_key("sk-x")
    qtbot.keyClicks(dialog.key_edit, "sk-mem-1")
    with qtbot.waitSignal(dialog.saved) as signal:
        dialog.save_button.click()  # no setting changed: nothing to ask the kernel
    assert signal.args == [SavedSettings("sk-mem-1", key_in_memory=True)]
    again = SettingsDialog(reins_home, memory_key="sk-mem-1")
    qtbot.addWidget(again)
    assert again.key_edit.text() == "sk-mem-1", "the key held in memory is shown again"
    files = [p for p in reins_home.config.rglob("*") if p.is_file()]
    assert all("sk-" not in p.read_text(errors="replace") for p in files)
    assert not reins_home.api_key_file.exists(), "no file unless the box is ticked"


def test_without_keyring_the_user_may_keep_the_key_in_a_file_only_they_can_read(
        qtbot: QtBot, reins_home: AppPaths, no_keyring: None) -> None:
    dialog = make_dialog(qtbot, reins_home)
    qtbot.keyClicks(dialog.key_edit, "sk-file-1")
    dialog.key_file_box.click()
    with qtbot.waitSignal(dialog.saved) as signal:
        dialog.save_button.click()
    assert signal.args == [SavedSettings("sk-file-1", key_in_file=True)]
    kept = reins_home.api_key_file
    assert kept.read_text() == "sk-file-1\n"
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.parent == reins_home.config
    again = make_dialog(qtbot, reins_home)
    assert again.key_file_box.isChecked() and again.key_edit.text() == "sk-file-1"
    again.key_file_box.click()  # the user changes their mind: the file goes
    with qtbot.waitSignal(again.saved) as signal:
        again.save_button.click()
    assert signal.args == [SavedSettings("sk-file-1", key_in_memory=True)]
    assert not kept.exists()


def test_a_key_file_others_may_read_is_not_used_and_the_dialog_says_why(
        qtbot: QtBot, reins_home: AppPaths, no_keyring: None) -> None:
    reins_home.config.mkdir(parents=True)
    reins_home.api_key_file.write_text("sk-open\n")
    reins_home.api_key_file.chmod(0o644)
    dialog = make_dialog(qtbot, reins_home)
    assert dialog.key_edit.text() == "" and not dialog.key_file_box.isChecked()
    assert "others may read or change it (mode 0644)" in dialog.key_status.text()


def test_take_env_key_removes_it_from_the_environment() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-env", "PATH": "/bin"}
    assert keystore.take_env_key(env) == "sk-env"
    assert env == {"PATH": "/bin"}


def test_sandbox_and_data_tabs(qtbot: QtBot, reins_home: AppPaths,
                               memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    assert dialog.sandbox_text.toPlainText() == "Checking the sandbox…"
    dialog.show_diagnostics("bwrap: ok (test)")
    assert dialog.sandbox_text.toPlainText() == "bwrap: ok (test)"
    with qtbot.waitSignal(dialog.command) as asked:
        [button] = [b for b in dialog.findChildren(QPushButton)
                    if b.accessibleName() == "Check the sandbox again"]
        button.click()
    assert asked.args == [p.GetDiagnostics()]
    assert dialog.data_label.text() == str(reins_home.data)


def test_every_control_has_an_accessible_name(qtbot: QtBot, reins_home: AppPaths,
                                              memory_keyring: MemoryKeyring) -> None:
    dialog = make_dialog(qtbot, reins_home)
    controls = [w for kind in (QLineEdit, QPlainTextEdit, QPushButton)
                for w in dialog.findChildren(kind)]
    controls = [w for w in controls if w.parent() is not None and w.isVisibleTo(dialog)
                and not w.objectName().startswith("qt_")]
    assert controls
    assert [w for w in controls if not w.accessibleName()] == []
    form = dialog.mcp_panel.open_form(None)
    qtbot.addWidget(form)
    fields = [w for kind in (QLineEdit, QPlainTextEdit, QPushButton)
              for w in form.findChildren(kind) if not w.objectName().startswith("qt_")]
    assert len(fields) >= 10 and [w for w in fields if not w.accessibleName()] == []


def test_welcome_panel_opens_settings(qtbot: QtBot) -> None:
    panel = WelcomePanel()
    qtbot.addWidget(panel)
    assert "API key" in panel.findChild(QLabel).text()
    with qtbot.waitSignal(panel.open_settings):
        panel.button.click()


def test_keyring_entry_is_the_one_the_kernel_reads() -> None:
    from kernel.model import provider_config  # where the kernel resolves the key
    from kernel.shared import keys

    assert (keystore.KEYRING_SERVICE, keystore.KEYRING_USER, keystore.ENV_VAR) == (
        provider_config.KEYRING_SERVICE, provider_config.KEYRING_USER,
        provider_config.ENV_VAR) == (
        keys.KEYRING_SERVICE, keys.KEYRING_USER, keys.ENV_VAR)


def test_the_key_names_module_imports_nothing_heavy() -> None:
    code = ("import sys, kernel.shared.keys; "
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


def test_a_settings_file_the_kernel_cannot_use_locks_the_prompt_and_says_why(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    from tests.desktop.test_main_window import make

    controller, client = make(qtbot, reins_home)  # a key is there
    assert controller.can_run
    broken = p.SettingsSnapshot(str(reins_home.settings_file), {}, "/c/settings.json:3: "
                                "default_mode: 'yolo' is not one of …", 3, cannot_run="…")
    client.batch.emit([broken])
    w = controller.window
    assert not controller.can_run and w.prompt.edit.isReadOnly()
    assert not w.prompt.send_button.isEnabled()
    assert w.pages.currentWidget() is w.chat_page, "not the welcome page's 'add a key'"
    assert w.prompt.edit.placeholderText() == "Fix settings.json to send prompts"
    assert w.banner.isVisibleTo(w)
    assert w.banner.label.text() == ("settings.json cannot be used, so nothing runs until it "
                                     "is fixed: /c/settings.json:3: default_mode: 'yolo' is "
                                     "not one of …")
    client.batch.emit([p.SettingsSnapshot(str(reins_home.settings_file), {}, can_run=True)])
    assert controller.can_run and not w.banner.isVisibleTo(w)
