"""Every window of the app says its name at most once in its title bar, and no label,
button or group box shows a stray `&` (a mnemonic on a QLabel without a buddy is drawn as
a literal "API &key:"). The windows are the real ones, opened as the app opens them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QGroupBox,
    QLabel,
    QMessageBox,
    QTabWidget,
    QWidget,
)
from pytestqt.qtbot import QtBot

from desktop.app import make_application
from desktop.main_window import APP_NAME, MainWindow
from kernel.events import ApprovalRequest
from kernel.paths import AppPaths

SEPARATOR = " \u2014 "


def shown_title(title: str, display_name: str) -> str:
    """The title bar's text: Qt's platform windows (xcb, windows) append the application's
    display name unless the title already ends with it (QPlatformWindow::formatWindowTitle)."""
    if not display_name or title.endswith(display_name):
        return title
    return f"{title}{SEPARATOR}{display_name}" if title else display_name


def strip_mnemonic(text: str) -> str:
    return re.sub(r"&(.)", r"\1", text)


def rendered(widget: QWidget) -> str:
    """The text a person sees on a label, button or group box."""
    if isinstance(widget, QLabel):
        text = widget.text()
        rich = widget.textFormat() == Qt.TextFormat.RichText or (
            widget.textFormat() == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text))
        if rich:
            doc = QTextDocument()
            doc.setHtml(text)
            return doc.toPlainText()
        return strip_mnemonic(text) if widget.buddy() is not None else text
    if isinstance(widget, QAbstractButton):
        return strip_mnemonic(widget.text())
    if isinstance(widget, QGroupBox):
        return strip_mnemonic(widget.title())
    raise TypeError(widget)


def stray_ampersands(window: QWidget) -> list[str]:
    """Texts that show an `&` stuck to a word: a mnemonic drawn as a literal."""
    texts = [rendered(w) for w in window.findChildren(QWidget)
             if isinstance(w, QLabel | QAbstractButton | QGroupBox)]
    if isinstance(window, QLabel | QAbstractButton | QGroupBox):
        texts.append(rendered(window))
    for tabs in window.findChildren(QTabWidget):
        texts += [strip_mnemonic(tabs.tabText(i)) for i in range(tabs.count())]
    return [text for text in texts if re.search(r"&\S", text)]


@pytest.mark.parametrize(("title", "shown"), [
    ("Reins", "Reins"),
    ("Settings", "Settings — Reins"),
    ("Settings — Reins", "Settings — Reins"),
    ("Reins — Settings", "Reins — Settings — Reins"),  # the bug: the name twice
    ("About Reins", "About Reins"),
    ("", "Reins"),
])
def test_shown_title_is_qts_rule(title: str, shown: str) -> None:
    assert shown_title(title, "Reins") == shown


@pytest.mark.parametrize(("widget_text", "buddy", "stray"), [
    ("API &key:", False, True),
    ("API &key:", True, False),
    ("Fish && chips", False, True),  # without a buddy && is drawn as it is written
    ("Q & A", False, False),
])
def test_a_label_shows_a_mnemonic_only_with_a_buddy(qtbot: QtBot, widget_text: str,
                                                    buddy: bool, stray: bool) -> None:
    holder = QWidget()
    qtbot.addWidget(holder)
    label = QLabel(widget_text, holder)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if buddy:
        label.setBuddy(QWidget(holder))
    assert bool(stray_ampersands(holder)) is stray


def every_window(qtbot: QtBot, paths: AppPaths) -> Iterator[QWidget]:
    """The app's windows and dialogs, each built and shown as the app shows it."""
    from desktop.approval.dialog import ApprovalDialog
    from desktop.evaluations.window import EvaluationsWindow
    from desktop.help.about import AboutDialog
    from desktop.help.shortcuts import ShortcutsDialog
    from desktop.mcp_requests.form_dialog import FormDialog
    from desktop.mcp_requests.sampling_dialog import SamplingDialog
    from desktop.sessions.new_dialog import NewSessionDialog
    from desktop.settings.dialog import SettingsDialog
    from desktop.viewer.window import show_output

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    window.timeline  # noqa: B018 - built, as after the first paint
    window.show_readiness(can_run=False, key_pending=False, has_session=False,
                          running=False, interrupted=False)
    yield window
    window.show_session("Fix the build", window.empty_model)
    yield window
    settings = SettingsDialog(paths, window)
    qtbot.addWidget(settings)
    yield settings
    yield NewSessionDialog(window, str(paths.data), "ask")
    yield AboutDialog(window)
    yield ShortcutsDialog(window.menuBar(), window)
    approval = ApprovalDialog(window)
    approval.show_request(ApprovalRequest(
        session_id="s1", call_id="c1", name="run_command", input={"command": "make"},
        risk="execute", reason="commands ask in ask mode", preview="make",
        rule="mode ask", always_rules=[]), 1, 2, "A session")
    yield approval
    yield EvaluationsWindow(paths.data / "eval", window)
    yield FormDialog(window)
    yield SamplingDialog(window)
    output = paths.data / "out.txt"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("some output\n")
    yield show_output(output, window)
    window.quit_question = lambda: "A run is still going."
    window.close()
    assert isinstance(window.quit_box, QMessageBox)
    yield window.quit_box


def test_every_window_names_the_app_once_and_shows_no_stray_ampersand(
        qtbot: QtBot, tmp_path: Path) -> None:
    app = make_application([])
    display_name = app.applicationDisplayName()
    assert display_name == APP_NAME
    paths = AppPaths(tmp_path / "data", tmp_path / "config")
    problems: list[str] = []
    seen = 0
    for widget in every_window(qtbot, paths):
        seen += 1
        widget.show()
        QApplication.processEvents()
        for top in {widget.window(), *(w for w in QApplication.topLevelWidgets()
                                       if w.isVisible())}:
            title = shown_title(top.windowTitle(), display_name)
            if title.count(APP_NAME) > 1:
                problems.append(f"title {title!r} ({type(top).__name__})")
            problems += [f"{text!r} in {type(top).__name__}" for text in stray_ampersands(top)]
    assert seen == 12
    assert sorted(set(problems)) == []
