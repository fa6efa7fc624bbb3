"""The sampling approval dialog: what it shows (escaped), that only a deliberate click sends
the request to the model, and that Esc, closing and Decline decline."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from desktop.mcp_requests.queue import McpRequests
from kernel.protocol import McpSamplingAnswer, McpSamplingRequest, SampledMessage
from tests.desktop.conftest import click_answer


def _request(request_id: str = "sampling-1", session_id: str = "s1") -> McpSamplingRequest:
    return McpSamplingRequest(request_id, session_id, "every", "claude-x", 40,
                              "Be \x1b[8mbrief", (SampledMessage("user", "Tell\u202e a joke"),
                                                  SampledMessage("assistant", "Sure [image]")))


def _queue(qtbot: QtBot) -> tuple[McpRequests, list[Any]]:
    window = QWidget()
    qtbot.addWidget(window)
    queue = McpRequests(window, session_title=lambda s: f"Title of {s}")
    answers: list[Any] = []
    queue.answer.connect(answers.append)
    return queue, answers


def test_it_shows_what_would_be_sent_escaped(qtbot: QtBot) -> None:
    queue, answers = _queue(qtbot)
    queue.submit_sampling(_request())
    dialog = queue.sampling_dialog
    assert dialog.isVisible() and not dialog.isModal()
    assert dialog.server_label.text() == "The MCP server “every” asks the model to answer"
    assert dialog.session_label.text() == "For the run of the session “Title of s1”"
    assert dialog.details_label.text() == (
        "Model claude-x, at most 40 tokens of answer. The tokens and their cost count against "
        "this run's budgets.")
    assert dialog.system.toPlainText() == "Be \\x1b[8mbrief"
    assert dialog.messages.toPlainText() == ("── user ──\nTell\\u202e a joke\n\n"
                                             "── assistant ──\nSure [image]")
    assert dialog.system.isReadOnly() and dialog.messages.isReadOnly()
    assert answers == []


def test_no_system_prompt_no_box(qtbot: QtBot) -> None:
    queue, _ = _queue(qtbot)
    queue.submit_sampling(McpSamplingRequest("sampling-1", "s1", "every", "m", 5))
    assert not queue.sampling_dialog.system.isVisibleTo(queue.sampling_dialog)


def test_only_a_deliberate_click_sends_it(qtbot: QtBot) -> None:
    queue, answers = _queue(qtbot)
    queue.submit_sampling(_request())
    queue.submit_sampling(_request("sampling-2"))
    dialog = queue.sampling_dialog
    assert dialog.count_label.text() == "1 of 2 requests"
    dialog.arming.delay_ms = 5_000
    for button in (dialog.send_button, dialog.decline_button):
        assert not button.isEnabled() and not button.isDefault()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
        qtbot.keyClick(dialog.send_button, key)
    assert answers == []
    dialog.arming.delay_ms = 500
    dialog.arming.refresh()
    click_answer(qtbot, dialog, dialog.send_button)
    assert answers == [McpSamplingAnswer("sampling-1", True)]
    assert dialog.request is not None and dialog.request.request_id == "sampling-2"
    assert not dialog.send_button.isEnabled()  # a new question: inert again for a moment


@pytest.mark.parametrize("how", ["decline", "escape", "close"])
def test_decline_esc_and_close_decline(qtbot: QtBot, how: str) -> None:
    queue, answers = _queue(qtbot)
    queue.submit_sampling(_request())
    dialog = queue.sampling_dialog
    if how == "decline":
        click_answer(qtbot, dialog, dialog.decline_button)
    elif how == "escape":
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    else:
        dialog.close()
    assert answers == [McpSamplingAnswer("sampling-1", False)]
    assert not dialog.isVisible()


def test_a_run_that_ended_takes_its_requests_with_it(qtbot: QtBot) -> None:
    queue, answers = _queue(qtbot)
    queue.submit_sampling(_request("sampling-1", "s1"))
    queue.submit_sampling(_request("sampling-2", "s2"))
    queue.forget_session("s1")
    assert answers == [McpSamplingAnswer("sampling-1", False)]
    dialog = queue.sampling_dialog
    assert dialog.request is not None and dialog.request.session_id == "s2"
    assert dialog.session_label.text() == "For the run of the session “Title of s2”"
    queue.forget_session("s2")
    assert not dialog.isVisible() and len(queue) == 0
