"""The context window's use next to tokens and cost: the run's end reports what its last
request held (the real loop against the fake server), the status bar says how full it is."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.model import ChatModel
from desktop.controller import SessionView
from desktop.main_window import MainWindow
from desktop.words import context_use
from kernel import protocol as p
from kernel.events import RunFinished
from kernel.fakemodel import ToolUse, reply
from tests.agent.conftest import Harness, fake, harness  # noqa: F401 (fixtures)


@pytest.mark.parametrize("tokens, window, shown", [
    (42_000, 200_000, "context 21% of 200k"), (0, 200_000, "context 0% of 200k"),
    (150, 200_000, "context <1% of 200k"), (16_384, 16_384, "context 100% of 16k"),
    (500_000, 1_000_000, "context 50% of 1M"), (9_000, 4_096, "context 220% of 4k"),
    (10, 0, ""),
])
def test_context_use_in_words(tokens: int, window: int, shown: str) -> None:
    assert context_use(tokens, window) == shown


def test_the_run_reports_its_last_requests_size(harness: Harness) -> None:  # noqa: F811
    harness.server.add(
        reply("Reading.", ToolUse("read_file", {"path": "a.txt"}, id="c1")),
        reply("Done.", cache_read_input_tokens=90, cache_creation_input_tokens=7),
    )
    _, finished = harness.run("read a")
    assert finished.rounds == 2
    assert finished.context_tokens == finished.usage["input_tokens"] // 2 + 90 + 7
    assert finished.context_window == harness.agent().provider.context_window > 0


def test_the_status_bar_shows_the_context_use(qtbot: QtBot) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    view = SessionView(p.SessionInfo("s", "t", "/w"), ChatModel())
    view.count(RunFinished("s", "end_turn", 2, {"input_tokens": 300, "output_tokens": 20},
                           0.01, context_tokens=42_000, context_window=200_000))
    view.count(RunFinished("s", "end_turn", 1, {"input_tokens": 100}, 0.0))
    assert view.context == (42_000, 200_000), "a run that did not say keeps the last figure"
    window.set_usage(view.input_tokens, view.output_tokens, view.cost, view.context)
    assert window.usage_label.text() == (
        "Tokens: 400 in / 20 out · $0.0100 · context 21% of 200k")
    window.set_usage(10, 1, 0.0)
    assert window.usage_label.text() == "Tokens: 10 in / 1 out · $0.0000"
