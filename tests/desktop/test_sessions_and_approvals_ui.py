"""The controller's sessions and approvals flow on the real widgets, fed protocol messages
(the kernel's side of each is tested with the real worker in test_app_approvals_e2e.py):
sending with no session asks for a workspace (never the home folder on its own; a broad
one needs a confirmation that says what it exposes), a new session is selected and shown,
a pending approval is a card in the chat that its call's line, its timeline row and the
pending button bring into view, another session's shows in the dialog, and out of sight the
tray and the notification lead to it, and the window's state comes back."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QSystemTrayIcon
from pytestqt.qtbot import QtBot

from desktop.controller import AppController
from desktop.timeline.model import CALL_ID_ROLE, Column
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.conftest import approval_card, click_answer
from tests.desktop.test_main_window import INFO, RecordingClient, load, make

HOME_REASON = "is your home folder"


def ok_button(controller: AppController) -> object:
    dialog = controller.window.sessions.new_dialog
    assert dialog is not None
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)


def test_sending_with_no_session_opens_the_new_session_dialog(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    w = controller.window
    qtbot.keyClicks(w.prompt.edit, "fix the parser")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    dialog = w.sessions.new_dialog
    assert dialog is not None and dialog.isVisible()
    assert client.of(p.NewSession) == [] and client.of(p.StartRun) == []
    assert w.prompt.edit.toPlainText() == "fix the parser", "the prompt is kept meanwhile"
    assert dialog.workspace_edit.text() == "", "no workspace is chosen for the user"
    assert not ok_button(controller).isEnabled()  # type: ignore[attr-defined]

    dialog.workspace_edit.setText(str(tmp_path))
    assert ok_button(controller).isEnabled()  # type: ignore[attr-defined]
    assert not dialog.broad_box.isVisibleTo(dialog)
    dialog.buttons.accepted.emit()
    assert client.of(p.NewSession) == [p.NewSession(str(tmp_path), "ask")]
    info = p.SessionInfo("s9", "", str(tmp_path), "ask", "m", 3.0)
    client.batch.emit([p.SessionLoaded(info, created=True)])
    assert controller.current == "s9"
    assert client.of(p.StartRun) == [p.StartRun("s9", "fix the parser")]
    assert w.prompt.edit.toPlainText() == ""


def test_cancelling_the_dialog_sends_nothing_and_keeps_the_prompt(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    w = controller.window
    controller.send_prompt("keep me")
    dialog = w.sessions.new_dialog
    assert dialog is not None
    dialog.reject()
    assert w.prompt.edit.toPlainText() == "keep me"
    # A session made later (New) does not send the abandoned prompt.
    w.sessions.new_requested.emit(str(tmp_path), "ask", False)
    client.batch.emit([p.SessionLoaded(p.SessionInfo("s2", "", str(tmp_path)), created=True)])
    assert client.of(p.StartRun) == []


def test_a_broad_workspace_needs_a_confirmation_that_says_what_it_exposes(
        qtbot: QtBot, reins_home: AppPaths, tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    dialog = controller.window.sessions.ask_new()
    for folder, words in ((str(Path.home()), HOME_REASON), ("~", HOME_REASON),
                          ("/", "the root of the file system"), ("/etc", "system folder"),
                          ("/usr", "system or shared folder"),
                          (str(Path.home()) + "/", HOME_REASON)):
        dialog.workspace_edit.setText(folder)
        assert dialog.broad_box.isVisibleTo(dialog), folder
        assert words in dialog.broad_label.text(), folder
        assert dialog.broad_label.text().startswith("I understand: "), folder
        assert not dialog.broad_box.isChecked()
        assert not ok_button(controller).isEnabled(), folder  # type: ignore[attr-defined]
        dialog.buttons.accepted.emit()
        assert client.of(p.NewSession) == []
    dialog.workspace_edit.setText(str(Path.home()))
    dialog.broad_box.setChecked(True)
    assert ok_button(controller).isEnabled()  # type: ignore[attr-defined]
    # Changing the folder takes the confirmation back.
    dialog.workspace_edit.setText("/")
    assert not dialog.broad_box.isChecked()
    dialog.workspace_edit.setText(str(Path.home()))
    assert not ok_button(controller).isEnabled()  # type: ignore[attr-defined]
    dialog.broad_box.setChecked(True)
    dialog.buttons.accepted.emit()
    assert client.of(p.NewSession) == [
        p.NewSession(str(Path.home()), "ask", confirm_broad_workspace=True)]
    # A project folder needs no confirmation, and none is sent.
    dialog = controller.window.sessions.ask_new()
    dialog.workspace_edit.setText(str(tmp_path))
    assert not dialog.broad_box.isVisibleTo(dialog)
    dialog.buttons.accepted.emit()
    assert client.of(p.NewSession)[-1] == p.NewSession(str(tmp_path), "ask")


def test_a_new_session_is_selected_and_shown(qtbot: QtBot, reins_home: AppPaths,
                                             tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage("s1", "old"))
    w = controller.window
    assert controller.current == "s1"
    w.new_action.trigger()
    dialog = w.sessions.new_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.workspace_edit.setText(str(tmp_path))
    dialog.buttons.accepted.emit()
    info = p.SessionInfo("s2", "", str(tmp_path), "auto-edit", "m", 5.0)
    client.batch.emit([p.SessionLoaded(info, created=True)])
    assert controller.current == "s2"
    assert w.chat.model() is controller.views["s2"].chat
    assert w.sessions.selected_id() == "s2"
    assert w.mode_combo.currentText() == "auto-edit"
    controller.send_prompt("next")
    assert client.of(p.StartRun) == [p.StartRun("s2", "next")]
    # Another session loaded in the background (not created here) does not take over.
    client.batch.emit([p.SessionLoaded(p.SessionInfo("s3", "bg", str(tmp_path)))])
    assert controller.current == "s2"


REQUEST = ev.ApprovalRequest("s1", "c1", "run_command", {"command": "make"}, "execute",
                             "commands ask in ask mode", "$ make")


def _asked(qtbot: QtBot, reins_home: AppPaths) -> tuple[AppController, RecordingClient]:
    """A session whose call waits for an approval: a card in the chat, no dialog (the
    window is in front), the chat scrolled away from it."""
    controller, client = make(qtbot, reins_home)
    controller.window.activateWindow()
    qtbot.waitUntil(controller.window.isActiveWindow)
    load(controller, client,
         ev.ToolCallStarted("s1", "c0", "read_file", {"path": "a"}, "a"),
         ev.ToolResultEvent("s1", "c0", "read_file", False),
         ev.ToolCallStarted("s1", "c1", "run_command", {"command": "make"}, "make",
                            "execute"),
         REQUEST, *[ev.AssistantText("s1", f"line {n}\n" * 8) for n in range(12)])
    approval_card(qtbot, controller, "c1")
    assert not controller.approvals.dialog.isVisible() and len(controller.approvals) == 1
    controller.window.chat.scrollToBottom()
    return controller, client


def revealed(qtbot: QtBot, controller: AppController) -> None:
    """The card of c1 was brought into view, its half-second guard started again, and no
    dialog shows it twice."""
    cards = controller.window.chat.approval_cards
    card = cards.cards["c1"]
    assert cards.on_screen(card) and not card.armed
    assert not controller.approvals.dialog.isVisible()


def test_a_pending_approval_is_revealed_from_its_call_in_the_chat(qtbot: QtBot,
                                                                  reins_home: AppPaths) -> None:
    controller, _ = _asked(qtbot, reins_home)
    w = controller.window
    chat = w.chat
    model = controller.views["s1"].chat
    assert not chat.approval_cards.on_screen(chat.approval_cards.cards["c1"])
    chat.setCurrentIndex(model.index(model.card_row("c0"), 0))
    qtbot.keyClick(chat, Qt.Key.Key_Return)
    assert not controller.approvals.dialog.isVisible(), "a finished call has no approval"
    chat.setCurrentIndex(model.index(model.card_row("c1"), 0))
    qtbot.keyClick(chat, Qt.Key.Key_Return)
    revealed(qtbot, controller)


def test_a_pending_approval_is_revealed_from_its_timeline_row(qtbot: QtBot,
                                                              reins_home: AppPaths) -> None:
    controller, _ = _asked(qtbot, reins_home)
    timeline = controller.window.timeline
    view = timeline.view
    qtbot.waitUntil(lambda: timeline.proxy.rowCount() == 2)
    row = next(r for r in range(2) if timeline.proxy.index(r, 0).data(CALL_ID_ROLE) == "c1")
    index = timeline.proxy.index(row, Column.TOOL)
    controller.window.timeline_dock.show()
    controller.window.show()
    rect = view.visualRect(index)
    assert rect.isValid()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    revealed(qtbot, controller)
    controller.window.chat.scrollToBottom()
    view.selectionModel().setCurrentIndex(
        index, QItemSelectionModel.SelectionFlag.ClearAndSelect
        | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.keyClick(view, Qt.Key.Key_Return)
    revealed(qtbot, controller)


def test_the_pending_count_is_a_button_that_reveals_the_approval(qtbot: QtBot,
                                                                 reins_home: AppPaths) -> None:
    controller, _ = _asked(qtbot, reins_home)
    button = controller.window.approvals_button
    assert button.isVisibleTo(controller.window) and not button.isFlat()
    assert button.text() == "⚠ 1 approval pending — show"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    revealed(qtbot, controller)


def test_another_sessions_approval_shows_in_the_dialog(qtbot: QtBot,
                                                       reins_home: AppPaths) -> None:
    """A request of a session not shown has no card in front of the user: the dialog
    shows it (with its session), and its answer goes to the kernel."""
    controller, client = _asked(qtbot, reins_home)
    other = ev.ApprovalRequest("s2", "c7", "write_file", {"path": "x"}, "write", "asks")
    client.batch.emit([p.SessionLoaded(p.SessionInfo("s2", "Other", "/tmp/o")),
                       p.EventMessage(other)])
    dialog = controller.approvals.dialog
    assert controller.current == "s1"
    assert dialog.isVisible() and dialog.request is other
    click_answer(qtbot, dialog, dialog.deny)
    assert client.of(p.ApprovalAnswer) == [p.ApprovalAnswer("s2", "c7", "deny")]
    assert len(controller.approvals) == 1 and not dialog.isVisible()


def test_tray_icon_and_notification_when_the_window_is_not_active(qtbot: QtBot,
                                                                  reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    _ = controller.approvals  # built once the window is on screen
    notifier = controller.notifier
    assert notifier is not None and not notifier.tray.isVisible()
    controller.window.hide()  # the user works elsewhere: Reins is not the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is not controller.window)
    client.batch.emit([p.EventMessage(REQUEST)])
    assert notifier.tray.isVisible() and "1 approval pending" in notifier.tray.toolTip()
    assert notifier.last_message == ("Reins — approval needed",
                                     "run_command: commands ask in ask mode")
    second = ev.ApprovalRequest("s1", "c2", "write_file", {"path": "x"}, "write", "writes ask")
    client.batch.emit([p.EventMessage(second)])
    assert "2 approvals pending" in notifier.tray.toolTip()
    assert controller.approvals.dialog.isVisible(), "out of sight, the dialog asks"
    controller.approvals.dialog.hide()
    # Clicking the notification (or the tray icon) brings the window up, on the card.
    notifier.tray.messageClicked.emit()
    assert controller.window.isVisible() and not controller.approvals.dialog.isVisible()
    assert approval_card(qtbot, controller, "c1").request == REQUEST
    notifier.tray.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is controller.window)
    assert not controller.approvals.dialog.isVisible()
    client.batch.emit([p.EventMessage(ev.ApprovalDecision("s1", "c1", "deny")),
                       p.EventMessage(ev.ApprovalDecision("s1", "c2", "deny"))])
    assert not notifier.tray.isVisible()


def test_no_notification_while_reins_is_the_active_window(qtbot: QtBot,
                                                          reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    controller.window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is controller.window)
    client.batch.emit([p.EventMessage(REQUEST)])
    assert controller.notifier is not None and controller.notifier.last_message == ("", "")
    assert controller.notifier.tray.isVisible()


def test_window_state_and_last_session_come_back(qtbot: QtBot, reins_home: AppPaths,
                                                 tmp_path: Path) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    w.resize(w.width(), 603)  # above the least the tabbed docks allow (531); the offscreen
    # screen is narrower than the window
    w.move(37, 41)
    assert w.height() != 800  # the default
    w.timeline.splitter.setSizes([300, 123])
    w.sessions.default_workspace = str(tmp_path)
    sizes = w.timeline.splitter.sizes()
    w.close()
    assert client.stopped

    again, client2 = make(qtbot, reins_home)
    assert again.window.height() == 603 and again.window.y() == 41  # (x: clamped to the screen)
    client2.batch.emit([p.SessionList((INFO,))])
    assert client2.of(p.OpenSession) == [p.OpenSession("s1")]
    client2.batch.emit([p.SessionLoaded(INFO)])
    assert again.current == "s1"
    qtbot.waitUntil(lambda: again.window.timeline_created)
    assert again.window.timeline.splitter.sizes() == sizes
    assert again.window.sessions.ask_new().workspace_edit.text() == str(tmp_path)


def test_a_last_session_that_is_gone_is_not_opened(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    controller.window.close()
    again, client2 = make(qtbot, reins_home)
    client2.batch.emit([p.SessionList(())])
    assert client2.of(p.OpenSession) == [] and again.current is None


def test_quitting_with_a_pending_approval_asks_first_and_keeps_it(qtbot: QtBot,
                                                                  reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    client.batch.emit([p.RunStatus("s1", "running"), p.EventMessage(REQUEST)])
    w = controller.window
    w.close()
    box = w.quit_box
    assert box is not None and box.isVisible() and w.isVisible()
    assert "1 call waits for your approval" in box.text()
    assert "asked again when Reins starts next" in box.text()
    assert "quitting stops it" not in box.text(), "the run only waits for the answer"
    cancel = box.button(box.StandardButton.Cancel)
    assert box.defaultButton() is cancel
    cancel.click()
    assert w.isVisible() and not client.stopped
    w.close()
    next(b for b in w.quit_box.buttons() if b.text() == "&Quit anyway").click()
    assert client.stopped and client.of(p.CancelRun) == [], "the waiting run is suspended"


def test_quitting_with_nothing_going_on_asks_nothing(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    controller.window.close()
    assert controller.window.quit_box is None and client.stopped
