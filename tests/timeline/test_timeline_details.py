"""The details pane gives the result the room, keeps Stop in view, shows a running command's
last lines as its output file grows, and opens that output while it still runs."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QScrollArea
from pytestqt.qtbot import QtBot

from desktop.timeline.details import DetailsPane
from desktop.timeline.record import CallRecord, advance
from desktop.timeline.tail import TAIL_LINES, tail_lines
from kernel.events import Event, ToolCallStarted, ToolProgress, ToolResultEvent

S = "s1"


def play(*events: Event) -> CallRecord:
    record = None
    for i, event in enumerate(events):
        record = advance(record, event, 100.0 + i)
    assert record is not None
    return record


STARTED = ToolCallStarted(S, "c1", "run_command", {"command": "make test"}, "make test",
                          "execute")


def make_pane(qtbot: QtBot) -> DetailsPane:
    pane = DetailsPane()
    pane.resize(420, 700)
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitExposed(pane)
    return pane


def test_a_running_command_shows_its_last_lines_as_they_come(qtbot: QtBot,
                                                             tmp_path: Path) -> None:
    spool = tmp_path / "c1.txt"
    spool.write_text("".join(f"step {i}\n" for i in range(100)))
    pane = make_pane(qtbot)
    running = play(STARTED, ToolProgress(S, "c1", 800, "step 99", 2.0, output_path=str(spool)))
    pane.show_record(running)
    shown = pane.result_preview.toPlainText().split("\n")
    assert shown == [f"step {i}" for i in range(100 - TAIL_LINES, 100)]
    with spool.open("a") as f:
        f.write("step 100\n\x1b[31mred\x1b[0m \x1b]0;title\x07 \u202e\n")
    pane.show_record(play(STARTED, ToolProgress(S, "c1", 900, "red", 2.5, output_path=str(spool))))
    shown = pane.result_preview.toPlainText().split("\n")
    assert shown[-2:] == ["step 100", "red  \\u202e"], "colours dropped, hiding shown"
    assert len(shown) == TAIL_LINES
    assert f"last {TAIL_LINES} lines" in pane.result_info.text()
    pane.resize(420, 300)  # too low for 20 lines: the newest stay in view
    pane.show_record(play(STARTED, ToolProgress(S, "c1", 950, "red", 2.6, output_path=str(spool))))
    bar = pane.result_preview.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()


def test_without_its_file_a_running_call_shows_the_last_line(qtbot: QtBot,
                                                              tmp_path: Path) -> None:
    pane = make_pane(qtbot)
    pane.show_record(play(STARTED, ToolProgress(S, "c1", 10, "only line", 1.0,
                                                output_path=str(tmp_path / "missing.txt"))))
    assert pane.result_preview.toPlainText() == "only line"
    assert not pane.open_button.isEnabled()


def test_the_full_output_opens_while_running_and_after(qtbot: QtBot, tmp_path: Path) -> None:
    spool = tmp_path / "c1.txt"
    spool.write_text("partial\n")
    pane = make_pane(qtbot)
    pane.show_record(play(STARTED, ToolProgress(S, "c1", 8, "partial", 1.0,
                                                output_path=str(spool))))
    assert pane.open_button.isEnabled() and pane.stop_button.isEnabled()
    with qtbot.waitSignal(pane.follow_output) as opened:  # still running: follow it
        pane.open_button.click()
    assert opened.args == [str(spool)]
    kept = str(tmp_path / "kept.txt")
    pane.show_record(play(STARTED, ToolResultEvent(S, "c1", "run_command", False, None, 5.0,
                                                   9_000_000, kept, "head…tail")))
    assert not pane.stop_button.isEnabled()
    with qtbot.waitSignal(pane.open_output) as opened, \
            qtbot.assertNotEmitted(pane.follow_output):
        pane.open_button.click()
    assert opened.args == [kept]
    pane.show_record(play(STARTED, ToolResultEvent(S, "c1", "run_command", False, None, 5.0,
                                                   10, None, "small")))
    assert not pane.open_button.isEnabled()


def test_the_result_has_the_room_and_stop_stays_in_view(qtbot: QtBot, tmp_path: Path) -> None:
    pane = make_pane(qtbot)
    pane.show_record(play(STARTED, ToolResultEvent(
        S, "c1", "run_command", True, "execution_error", 5.0, 100, None,
        "exit code 2 · 0.01 s\n" + "\n".join(f"line {i}" for i in range(200)))))
    assert pane.title.text().startswith("run_command — exit code 2")
    assert pane.result_preview.height() > 2.5 * pane.arguments.height()
    assert pane.result_preview.height() > pane.height() / 3
    for button in (pane.stop_button, pane.open_button, pane.copy_output):
        assert button.isVisible()
        parent = button.parentWidget()
        while parent is not None and parent is not pane:
            assert not isinstance(parent, QScrollArea), "buttons never scroll away"
            parent = parent.parentWidget()


def test_tail_lines_reads_only_the_end_and_never_fails(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 5_000_000 + b"\n" + b"".join(b"l%d\n" % i for i in range(50)))
    assert tail_lines(big, 3) == "l47\nl48\nl49"
    assert tail_lines(big, 3, max_bytes=8) == "l49", "a line cut by the window is dropped"
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"ok\n\xff\xfe bad\n")
    assert tail_lines(broken) == "ok\n\ufffd\ufffd bad"
    assert tail_lines(tmp_path / "none.txt") is None
    assert tail_lines(tmp_path) is None
    (tmp_path / "empty.txt").write_bytes(b"")
    assert tail_lines(tmp_path / "empty.txt") == ""


def test_the_path_comes_from_the_progress_and_a_later_one_without_it_keeps_it(
        qtbot: QtBot, tmp_path: Path) -> None:
    spool = tmp_path / "c1.txt"
    spool.write_text("one\n")
    pane = make_pane(qtbot)
    pane.show_record(play(STARTED, ToolProgress(S, "c1", 4, "one", 1.0)))
    assert not pane.open_button.isEnabled(), "no path said: nothing to open"
    record = play(STARTED, ToolProgress(S, "c1", 4, "one", 1.0, output_path=str(spool)),
                  ToolProgress(S, "c1", 4, "one", 1.5))
    assert record.running_output == str(spool)
    pane.show_record(record)
    assert pane.open_button.isEnabled()
