"""The main window and the controller's routing, fed protocol messages directly (the real
kernel process is exercised in test_kernel_client.py and test_app_e2e.py)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLineEdit, QPlainTextEdit
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role, ToolCardItem
from desktop.controller import AppController
from desktop.main_window import window_title
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.conftest import approval_card, wait_armed


class RecordingClient(QObject):
    """Stands in for KernelClient: records commands; the test plays the kernel."""

    batch = Signal(list)
    ready = Signal(object)
    died = Signal(str)
    failed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[p.Message] = []
        self.stopped = False
        self.alive = True

    def start(self) -> None:
        return None

    def send(self, message: p.Message) -> bool:
        if not self.alive:
            return False
        self.sent.append(message)
        return True

    def stop(self, timeout: float = 2.0) -> None:
        self.stopped = True

    def of(self, kind: type[p.Message]) -> list[p.Message]:
        return [m for m in self.sent if isinstance(m, kind)]


INFO = p.SessionInfo("s1", "Fix the build", "/tmp/ws", "ask", "claude-test", 1.0)
READY = p.KernelReady(p.PROTOCOL_VERSION, 42, "none", "bubblewrap is not installed", True,
                      "claude-test")


def make(qtbot: QtBot, reins_home: AppPaths, key: str | None = "sk-x"
         ) -> tuple[AppController, RecordingClient]:
    client = RecordingClient()
    controller = AppController(reins_home, client=client, api_key=key)  # type: ignore[arg-type]
    qtbot.addWidget(controller.window)
    controller.start()
    client.ready.emit(READY)
    client.batch.emit([READY])
    return controller, client


def load(controller: AppController, client: RecordingClient, *events: ev.Event,
         interrupted: bool = False) -> None:
    controller.open_session("s1")
    client.batch.emit([p.SessionLoaded(INFO, tuple(events), interrupted)])


def test_ready_configures_the_kernel_and_shows_sandbox_state(qtbot: QtBot,
                                                              reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    assert client.of(p.SetApiKey) == [p.SetApiKey("sk-x")]
    assert client.of(p.ListModels) and client.of(p.ListSessions)
    w = controller.window
    assert "none — bubblewrap is not installed" in w.sandbox_label.text()
    assert w.sandbox_label.toolTip() == "Sandbox: none — bubblewrap is not installed"
    assert w.windowTitle() == "Reins"


def test_loaded_session_shows_history_title_mode_and_usage(qtbot: QtBot,
                                                            reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client,
         ev.UserMessage("s1", "hi"), ev.AssistantText("s1", "**hello**"),
         ev.ToolCallStarted("s1", "c1", "read_file", {"path": "a"}, "a"),
         ev.ToolResultEvent("s1", "c1", "read_file", False, None, 3.0, 10),
         ev.RunFinished("s1", "end_turn", 1, {"input_tokens": 1200, "output_tokens": 30},
                        0.0123))
    w = controller.window
    assert w.windowTitle() == window_title("Fix the build") == "Fix the build — Reins"
    items = controller.views["s1"].chat.items()
    assert [type(i).__name__ for i in items] == ["MessageItem", "MessageItem", "ToolCardItem"]
    assert isinstance(items[2], ToolCardItem) and items[2].status == "ok"
    assert w.mode_combo.currentText() == "ask" and w.mode_combo.isEnabled()
    assert "1,200 in" in w.usage_label.text() and "$0.0123" in w.usage_label.text()
    w.mode_combo.textActivated.emit("auto-edit")
    assert client.of(p.SetMode) == [p.SetMode("s1", "auto-edit")]


def test_prompt_streaming_and_stop(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    qtbot.keyClicks(w.prompt.edit, "do it")
    w.prompt.edit.submitted.emit()
    assert client.of(p.StartRun) == [p.StartRun("s1", "do it")]
    client.batch.emit([p.RunStatus("s1", "running"),
                       p.EventMessage(ev.UserMessage("s1", "do it")),
                       p.EventMessage(ev.AssistantDelta("s1", "partial"))])
    assert w.prompt.stop_button.isEnabled()
    w.prompt.stop_button.click()
    assert client.of(p.CancelRun) == [p.CancelRun("s1")]
    client.batch.emit([p.EventMessage(ev.RunFinished("s1", "cancelled")),
                       p.RunStatus("s1", "idle")])
    items = controller.views["s1"].chat.items()
    assert isinstance(items[-1], MessageItem) and items[-1].text == "Run stopped."
    assert not w.prompt.stop_button.isEnabled()


def test_approval_request_shows_a_card_in_the_chat_and_answers_go_to_the_kernel(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    """In front, a request is a card in the conversation (not a dialog too)."""
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    controller.window.activateWindow()
    qtbot.waitUntil(controller.window.isActiveWindow)
    request = ev.ApprovalRequest("s1", "c9", "write_file", {"path": "x"}, "write",
                                 "mode ask asks before writes", "--- a\n+++ b\n")
    client.batch.emit([p.EventMessage(request)])
    card = approval_card(qtbot, controller, "c9")
    assert card.request is request and not controller.approvals.dialog.isVisible()
    assert controller.window.approvals_button.isVisible()
    wait_armed(qtbot, card, card.buttons["allow_session"])
    qtbot.mouseClick(card.buttons["allow_session"], Qt.MouseButton.LeftButton)
    assert client.of(p.ApprovalAnswer) == [p.ApprovalAnswer("s1", "c9", "allow_session")]
    assert not controller.window.approvals_button.isVisible()
    controller.window.chat.executeDelayedItemsLayout()
    assert controller.window.chat.approval_cards.cards == {}, "an answered card goes"


def test_unanswered_request_from_before_a_restart_is_asked_again(qtbot: QtBot,
                                                                  reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    request = ev.ApprovalRequest("s1", "c1", "write_file", {}, "write", "asks")
    load(controller, client, request, interrupted=True)
    assert approval_card(qtbot, controller, "c1").request is request
    assert controller.window.banner.isVisible()
    assert "interrupted" in controller.window.banner.label.text()
    controller.window.banner.button.click()
    assert client.of(p.ResumeRun) == [p.ResumeRun("s1")]


def test_kernel_death_is_shown_and_the_session_reloaded(qtbot: QtBot,
                                                        reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage("s1", "hi"))
    client.batch.emit([p.RunStatus("s1", "running")])
    client.died.emit("The kernel stopped unexpectedly (exit code -9).")
    items = controller.views["s1"].chat.items()
    assert isinstance(items[-1], MessageItem) and items[-1].role is Role.ERROR
    assert "stopped unexpectedly" in items[-1].text
    assert controller.window.kernel_label.text() == "Kernel restarting…"
    client.sent.clear()
    client.ready.emit(READY)
    assert p.OpenSession("s1") in client.sent
    client.batch.emit([p.SessionLoaded(INFO, (ev.UserMessage("s1", "hi"),), True)])
    assert controller.window.banner.isVisible()


def test_without_a_key_the_welcome_panel_shows_and_sessions_stay_browsable(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home, key=None)
    w = controller.window
    assert w.pages.currentWidget() is w.welcome
    load(controller, client, ev.UserMessage("s1", "old question"))
    assert w.pages.currentWidget() is w.chat_page
    assert w.prompt.edit.isReadOnly()
    assert controller.views["s1"].chat.items()[0].text == "old question"


def test_closing_the_window_cancels_runs_and_stops_the_kernel(qtbot: QtBot,
                                                              reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    client.batch.emit([p.RunStatus("s1", "running")])
    controller.window.close()
    box = controller.window.quit_box
    assert box is not None and box.isVisible() and "quitting stops it" in box.text()
    assert p.CancelRun("s1") not in client.sent and not client.stopped
    next(b for b in box.buttons() if b.text() == "&Quit anyway").click()
    assert p.CancelRun("s1") in client.sent and client.stopped


def test_every_control_has_an_accessible_name(qtbot: QtBot, reins_home: AppPaths,
                                              tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    mine = [w.sessions, w.chat, w.prompt, w.banner, w.welcome, w.statusBar()]
    controls = [c for parent in mine
                for kind in (QAbstractButton, QLineEdit, QPlainTextEdit, QComboBox)
                for c in parent.findChildren(kind)
                if c.metaObject().className() != "QLineEditIconButton"]  # Qt's clear button
    controls += [w.mode_combo, w.approvals_button]
    missing = [(c.metaObject().className(), c.objectName(), type(c.parent()).__name__)
               for c in controls if not c.accessibleName()]
    assert missing == []


def test_search_asks_the_kernel_which_also_searches_message_text(qtbot: QtBot,
                                                                  reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    qtbot.keyClicks(controller.window.sessions.search, "parser")
    assert client.of(p.ListSessions)[-1] == p.ListSessions("parser")
    found = p.SessionInfo("s7", "Untitled", "/w", "ask", "m", 2.0)
    client.batch.emit([p.SessionList((found,), "parser")])
    proxy = controller.window.sessions.proxy
    assert proxy.rowCount() == 1, "a match inside the messages is not filtered out again"


def test_tool_cards_and_timeline_rows_lead_to_each_other_and_to_the_output(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    from desktop.viewer.window import OutputViewer

    output = tmp_path / "call_out.txt"
    output.write_text("line 1\nline 2\n")
    controller, client = make(qtbot, reins_home)
    load(controller, client,
         ev.ToolCallStarted("s1", "c1", "run_command", {"command": "ls"}, "ls", "execute"),
         ev.ToolResultEvent("s1", "c1", "run_command", False, None, 5.0, 14, str(output)),
         ev.ToolCallStarted("s1", "c2", "read_file", {"path": "a"}, "a"))
    w = controller.window
    w.chat.tool_card_activated.emit("c2")
    qtbot.waitUntil(lambda: w.timeline.selected_call() == "c2", timeout=5_000)
    w.timeline.call_selected.emit("c1")
    assert w.chat.currentIndex().row() == controller.views["s1"].chat.card_row("c1")
    w.timeline.open_output.emit(str(output))
    viewers = [v for v in w.findChildren(OutputViewer) if v.isVisible()]
    assert len(viewers) == 1
    w.timeline.stop_requested.emit("c2")
    assert client.of(p.CancelRun) == [], "nothing is running, nothing to stop"


def test_a_prompt_sent_while_the_kernel_restarts_is_kept(qtbot: QtBot,
                                                         reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    client.alive = False
    controller.send_prompt("are you there?")
    view = controller.views["s1"]
    assert not view.running and controller.window.prompt.edit.toPlainText() == "are you there?"
    assert "restarting" in view.chat.items()[-1].text


def test_attach_opens_in_the_shown_sessions_workspace(qtbot: QtBot, reins_home: AppPaths,
                                                     tmp_path: Path) -> None:
    from PySide6.QtWidgets import QFileDialog

    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("a note")
    controller, client = make(qtbot, reins_home)
    controller.open_session("s1")
    client.batch.emit([p.SessionLoaded(
        p.SessionInfo("s1", "Notes", str(workspace), "ask", "claude-test", 1.0), (), False)])
    prompt = controller.window.prompt

    def dialog_shown() -> QFileDialog:
        prompt.attach_button.click()
        dialog = prompt.findChild(QFileDialog, "attachDialog")
        assert isinstance(dialog, QFileDialog)
        return dialog

    dialog = dialog_shown()
    assert Path(dialog.directory().absolutePath()) == workspace
    assert Path(os.getcwd()) != workspace
    dialog.selectFile(str(workspace / "notes.txt"))
    dialog.accept()
    assert [c.name for c in prompt.tray.chips()] == ["notes.txt"]
    qtbot.waitUntil(lambda: prompt.findChild(QFileDialog, "attachDialog") is None)

    # A workspace that is gone: the home folder, not the process's folder.
    controller.open_session("s2")
    client.batch.emit([p.SessionLoaded(
        p.SessionInfo("s2", "Gone", str(tmp_path / "gone"), "ask", "claude-test", 1.0), (),
        False)])
    dialog = dialog_shown()
    assert Path(dialog.directory().absolutePath()) == Path.home()
    dialog.reject()


def test_the_first_window_is_painted_before_the_rest_loads_then_wired(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    """`reins` paints the main window first (the stored key still being read), then hands
    that same window to the controller, which starts the kernel and builds the approvals."""
    from desktop.app import show_first_window

    window = show_first_window()
    qtbot.addWidget(window)
    assert window.isVisible() and window.painted
    assert window.pages.currentWidget() is window.chat_page
    assert window.prompt.edit.isReadOnly() and not window.prompt.send_button.isEnabled()
    assert "keyring" in window.prompt.edit.placeholderText()
    assert window.kernel_label.text() == "Starting the kernel…"
    client = RecordingClient()
    controller = AppController(reins_home, client=client, api_key="sk-x",  # type: ignore[arg-type]
                               window=window)
    controller.start()
    assert controller.window is window
    qtbot.waitUntil(lambda: controller._kernel_started)
    assert controller._approvals is not None  # built once the window was on screen
    assert not window.prompt.edit.isReadOnly() and window.prompt.send_button.isEnabled()
    controller.shutdown()


def test_the_first_window_needs_neither_the_protocol_nor_the_dialogs() -> None:
    """What start-up loads before the first paint (the rest waits until the window shows):
    no module the empty first window does not run, and none of the Qt classes only those
    use. PySide6 makes a Qt class's Python type, with all its enums, when it is first
    touched (QStyle's take ~10 ms); a Python event filter on the application, or the first
    widget pointer of a class Python has not met (viewport()), makes it resolve most of
    QtWidgets (QWizard, QGraphicsView, …) at once."""
    code = ("import sys; from desktop.app import make_application, show_first_window; "
            "make_application(); show_first_window(); "
            "import PySide6.QtWidgets as W, PySide6.QtGui as G; "
            "print(sorted(m for m in sys.modules if m.startswith(('kernel.', 'desktop.')))); "
            "print(sorted(n for n in (*vars(W), *vars(G)) if n.startswith('Q')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    modules, classes = out.stdout.strip().splitlines()
    loaded, made = set(ast.literal_eval(modules)), set(ast.literal_eval(classes))
    assert {"desktop.main_window", "desktop.chat.view", "desktop.sessions.panel"} <= loaded
    for heavy in ("kernel.protocol", "kernel.events", "desktop.controller",
                  "desktop.approval.dialog", "desktop.settings.dialog", "desktop.kernel_client",
                  "kernel.paths", "desktop.chat.markdown", "desktop.chat.card",
                  "desktop.chat.highlight", "desktop.help.about", "desktop.help.shortcuts",
                  "desktop.sessions.new_dialog", "desktop.timeline.panel", "markdown_it",
                  "pygments"):
        assert heavy not in loaded
    assert {"QMainWindow", "QListView", "QPlainTextEdit", "QComboBox"} <= made
    for unneeded in ("QStyle", "QWizard", "QGraphicsView", "QTabWidget", "QTableWidget",
                     "QFileDialog", "QFormLayout", "QTextTable", "QTextBlockFormat"):
        assert unneeded not in made
