"""A composite call's one approval in the app's real dialog (offscreen): the request the
real PolicyGate makes lists every step with its risk, and the dialog shows them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pytestqt.qtbot import QtBot

from desktop.approval.dialog import ApprovalQueue
from kernel.paths import AppPaths
from tests.policy.test_composite_gate import CALL, Recorder, _kit


def test_the_dialog_lists_every_step_of_a_composite(qtbot: QtBot, workspace: Path,
                                                    reins_home: AppPaths) -> None:
    channel = Recorder("deny")
    kit, _ = _kit(workspace, reins_home, channel=channel)
    asyncio.run(kit.dispatcher.dispatch(CALL))
    [request] = channel.asked
    queue = ApprovalQueue(None, session_title=lambda s: s)
    queue.submit(request)
    dialog = queue.dialog
    qtbot.addWidget(dialog)
    assert dialog.isVisible() and dialog.tool_label.text() == "write_and_run"
    shown = dialog.preview.toPlainText()
    assert "1. write_file — risk ordinary (write), ask" in shown
    assert "2. run_command — risk ordinary (execute), ask" in shown
    assert "command ← /input/command" in shown and "cat out.txt; touch ran" in shown
    assert "EXECUTE" in dialog.risk_badge.text()
    assert not dialog.always_rule.isVisible()
