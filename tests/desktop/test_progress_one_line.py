"""A running command's progress (every 0.5 s) is kept as one live line per call in the app,
as in the store: the session's events hold the latest progress of each call, live and when
a session is loaded, and the timeline shows that line; the result still comes after it."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.test_main_window import INFO, load, make

S = "s1"


def _progress(call: str, n: int) -> ev.ToolProgress:
    return ev.ToolProgress(S, call, bytes_so_far=n * 100, last_line=f"{call} line {n}",
                           elapsed_s=n * 0.5)


def _kept(events: list[ev.Event]) -> list[tuple[str, str, str]]:
    return [(e.type, getattr(e, "call_id", ""), getattr(e, "last_line", "")) for e in events]


def test_live_progress_keeps_one_line_per_call(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage(S, "build it"))
    client.batch.emit([p.EventMessage(ev.ToolCallStarted(S, "a", "run_command", {})),
                       p.EventMessage(ev.ToolCallStarted(S, "b", "run_command", {}))])
    for n in range(1, 120):
        client.batch.emit([p.EventMessage(_progress("a", n)), p.EventMessage(_progress("b", n))])
    client.batch.emit([p.EventMessage(ev.ToolResultEvent(S, "a", "run_command", False))])
    client.batch.emit([p.EventMessage(_progress("b", 500))])
    assert _kept(controller.views[S].events) == [
        ("user_message", "", ""), ("tool_call", "a", ""), ("tool_call", "b", ""),
        ("tool_progress", "a", "a line 119"), ("tool_progress", "b", "b line 500"),
        ("tool_result", "a", "")]
    qtbot.waitUntil(lambda: controller.window.timeline_created, timeout=10_000)
    model = controller.window.timeline.model
    qtbot.waitUntil(lambda: model.record("b") is not None, timeout=5000)
    record = model.record("b")
    assert record is not None and record.last_line == "b line 500"


def test_a_loaded_session_keeps_the_latest_progress_of_each_call(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    stored = (ev.ToolCallStarted(S, "a", "run_command", {}), _progress("a", 1),
              _progress("a", 2), ev.ToolResultEvent(S, "a", "run_command", True, "timeout"),
              ev.ToolCallStarted(S, "c", "run_command", {}), _progress("c", 7))
    controller.open_session(S)
    client.batch.emit([p.SessionLoaded(INFO, stored, False)])
    assert _kept(controller.views[S].events) == [
        ("tool_call", "a", ""), ("tool_progress", "a", "a line 2"), ("tool_result", "a", ""),
        ("tool_call", "c", ""), ("tool_progress", "c", "c line 7")]
    client.batch.emit([p.EventMessage(_progress("c", 8))])
    assert _kept(controller.views[S].events)[-1] == ("tool_progress", "c", "c line 8")
    assert len(controller.views[S].events) == 5
