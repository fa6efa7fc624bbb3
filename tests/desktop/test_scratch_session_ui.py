"""A session without a folder, in the widgets: the new-session dialog's *No folder yet*
asks the kernel for a scratch folder (an empty workspace) and leaves the remembered folder
alone; the bar above the conversation says what a session is (a table)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from desktop.sessions.panel import SessionsPanel
from desktop.workspace_bar import WorkspaceBar, workspace_note


def test_no_folder_yet_asks_for_a_scratch_session(qtbot: QtBot, tmp_path) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)
    panel.default_workspace = str(tmp_path)
    panel.default_mode = "auto-edit"
    dialog = panel.ask_new()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    dialog.workspace_edit.clear()
    assert not ok.isEnabled() and "No folder yet" in dialog.problem.text()
    dialog.scratch_box.click()
    assert ok.isEnabled() and not dialog.problem.isVisibleTo(dialog)
    assert not dialog.workspace_edit.isEnabled()
    with qtbot.waitSignal(panel.new_requested) as asked:
        ok.click()
    assert asked.args == ["", "auto-edit", False]
    assert panel.default_workspace == str(tmp_path), "the folder remembered is kept"


@pytest.mark.parametrize(("scratch", "demo", "keyed", "words", "folder", "key"), [
    (False, False, False, None, False, False),
    (False, False, True, None, False, False),
    (False, True, True, ["Demo model", "A key is set now", "pick a real model"], False, False),
    (True, True, True, ["A key is set now", "scratch folder Reins made: /s/1"], True, False),
    (True, False, False, ["scratch folder Reins made: /s/1", "Choose a folder"], True, False),
    (False, True, False, ["Demo model", "not an AI", "Add a key"], False, True),
    (True, True, False, ["Demo model", "scratch folder Reins made: /s/1"], True, True),
])
def test_what_the_bar_says(qtbot: QtBot, scratch: bool, demo: bool, keyed: bool,
                           words: list[str] | None, folder: bool, key: bool) -> None:
    note = workspace_note("/s/1", scratch=scratch, demo=demo, keyed=keyed)
    bar = WorkspaceBar()
    qtbot.addWidget(bar)
    bar.show_note(note)
    if words is None:
        assert note is None and bar.isHidden()
        return
    assert note is not None and all(w in note.text for w in words)
    assert (note.choose_folder, note.add_key) == (folder, key)
    assert not bar.isHidden() and bar.label.text() == note.text
    assert bar.folder_button.isVisibleTo(bar) is folder and bar.key_button.isVisibleTo(bar) is key
