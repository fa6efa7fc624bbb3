"""The timeline panel: filters and search, details pane, stop and open from a row, jumping."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QFontMetrics, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QLineEdit,
    QPushButton,
    QStyleOptionViewItem,
    QWidget,
)
from pytestqt.qtbot import QtBot

from desktop.timeline import TimelinePanel
from desktop.timeline.delegate import TimelineDelegate
from desktop.timeline.model import CALL_ID_ROLE, Column
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantText,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)

S = "s1"


def mixed_events() -> list:  # type: ignore[type-arg]
    return [
        AssistantText(S, "not a tool event"),
        ToolCallStarted(S, "read1", "read_file", {"path": "src/app.py"}, summary="src/app.py"),
        ToolResultEvent(S, "read1", "read_file", False, None, 3.0, 120, None, "print('hi')"),
        ToolCallStarted(S, "bash1", "bash", {"command": "make test", "timeout": 60},
                        summary="make test", risk="execute"),
        ApprovalRequest(S, "bash1", "bash", {"command": "make test"}, "execute",
                        "ask mode: commands need approval", preview="$ make test"),
        ApprovalDecision(S, "bash1", "allow_session", "user", "session"),
        ToolProgress(S, "bash1", 4096, "running tests…", 3.2),
        ToolCallStarted(S, "bash2", "bash", {"command": "rm -rf build"}, summary="rm -rf build",
                        risk="destructive"),
        ApprovalRequest(S, "bash2", "bash", {"command": "rm -rf build"}, "destructive",
                        "destructive command"),
        ApprovalDecision(S, "bash2", "deny", "user", "once", message="not now"),
        ToolResultEvent(S, "bash2", "bash", True, "approval_denied", 0.0, 40, None,
                        "The user denied this call: not now"),
        ToolCallStarted(S, "grep1", "grep", {"pattern": "TODO", "path": "."}, summary="TODO ."),
        ToolResultEvent(S, "grep1", "grep", True, "execution_error", 15.0, 60, None,
                        "grep: bad regex\nhint: escape the parenthesis"),
        ToolCallStarted(S, "bash3", "bash", {"command": "yes | head -c 2G"},
                        summary="yes | head -c 2G"),
        ApprovalDecision(S, "bash3", "allow_once", "mode", "once"),
        ToolResultEvent(S, "bash3", "bash", False, None, 9000.0, 2 << 30,
                        "/data/tool-results/bash3.txt", "y\ny\n[… omitted …]\ny\n"),
        ToolCallStarted(S, "web1", "fetch", {"url": "https://example.com"},
                        summary="https://example.com"),
    ]


def make_panel(qtbot: QtBot) -> TimelinePanel:
    panel = TimelinePanel(batch_ms=20)
    qtbot.addWidget(panel)
    panel.resize(1100, 700)
    panel.show()
    panel.apply_many(mixed_events())
    qtbot.waitUntil(lambda: panel.model.rowCount() == 6, timeout=3000)
    return panel


def shown_ids(panel: TimelinePanel) -> list[str]:
    proxy = panel.proxy
    return [proxy.index(r, 0).data(CALL_ID_ROLE) for r in range(proxy.rowCount())]


def test_filters_by_status_tool_and_text(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    assert shown_ids(panel) == ["read1", "bash1", "bash2", "grep1", "bash3", "web1"]
    assert panel.count.text() == "6 calls"

    panel.status_filter.setCurrentIndex(panel.status_filter.findData("failed"))
    assert shown_ids(panel) == ["bash2", "grep1"]
    panel.status_filter.setCurrentIndex(panel.status_filter.findData("running"))
    assert shown_ids(panel) == ["bash1"]
    panel.status_filter.setCurrentIndex(panel.status_filter.findData("all"))

    assert [panel.tool_filter.itemText(i) for i in range(panel.tool_filter.count())] == [
        "All tools", "bash", "fetch", "grep", "read_file"]
    panel.tool_filter.setCurrentIndex(panel.tool_filter.findData("bash"))
    assert shown_ids(panel) == ["bash1", "bash2", "bash3"]
    assert panel.count.text() == "3 of 6 calls"

    qtbot.keyClicks(panel.search, "RM -RF")  # search is case-insensitive, over arguments
    qtbot.waitUntil(lambda: shown_ids(panel) == ["bash2"], timeout=3000)
    panel.tool_filter.setCurrentIndex(0)
    panel.search.setText("timeout")  # an argument name, not in the summary
    qtbot.waitUntil(lambda: shown_ids(panel) == ["bash1"], timeout=3000)
    panel.search.setText("example.com")
    qtbot.waitUntil(lambda: shown_ids(panel) == ["web1"], timeout=3000)
    panel.search.clear()
    qtbot.waitUntil(lambda: len(shown_ids(panel)) == 6, timeout=3000)

    # A live update moves a row into a status filter (keyed by the kernel's status, shown in
    # its words).
    done = panel.status_filter.findData("ok")
    assert panel.status_filter.itemText(done) == "Done"
    panel.status_filter.setCurrentIndex(done)
    assert shown_ids(panel) == ["read1", "bash3"]
    panel.apply(ToolResultEvent(S, "web1", "fetch", False, None, 80.0, 900, None, "<html>"))
    qtbot.waitUntil(lambda: shown_ids(panel) == ["read1", "bash3", "web1"], timeout=3000)


def test_details_pane_shows_everything_and_copies(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    selected: list[str] = []
    panel.call_selected.connect(selected.append)
    row = panel.proxy.mapFromSource(panel.model.index(panel.model.row_of("grep1") or 0, 0))
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=panel.view.visualRect(row).center())
    assert selected == ["grep1"]
    details = panel.details
    assert json.loads(details.arguments.toPlainText()) == {"pattern": "TODO", "path": "."}
    assert details.error.text().startswith("Failed: ") and "_" not in details.error.text()
    assert "tool ran and failed" in details.error.text()
    assert details.model_text.toPlainText() == "grep: bad regex\nhint: escape the parenthesis"
    assert details.timing_fields["Duration"].text() == "15 ms"
    details.copy_arguments.click()
    assert json.loads(QGuiApplication.clipboard().text()) == {"pattern": "TODO", "path": "."}
    details.copy_output.click()
    assert QGuiApplication.clipboard().text().startswith("grep: bad regex")

    assert panel.select_call("bash2")
    assert selected == ["grep1"]  # jumping from a chat card does not echo back
    assert details.approval_fields["Decision"].text() == "denied"
    assert details.approval_fields["Message"].text() == "not now"
    assert details.approval_fields["Reason"].text() == "destructive command"
    assert details.approval_fields["Risk"].text() == "destructive"
    assert details.title.text().startswith("bash — denied")

    assert panel.select_call("bash1")
    assert details.approval_fields["Decided by"].text() == "you"
    assert details.approval_fields["Scope"].text() == "this session"
    assert details.approval_fields["Decision"].text() == "allowed for this session"
    assert details.result_info.text() == "Running: 4.0 KB so far"
    assert details.stop_button.isEnabled() and not details.open_button.isEnabled()
    # The pane follows live updates of the call it shows.
    panel.apply(ToolResultEvent(S, "bash1", "bash", False, None, 4100.0, 8000, None, "ok"))
    qtbot.waitUntil(lambda: details.title.text().startswith("bash — done"), timeout=3000)
    assert not details.stop_button.isEnabled()
    assert details.timing_fields["Duration"].text() == "4.1 s"


def test_untrusted_text_is_plain(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.apply(ToolCallStarted(S, "evil", "<b>x</b>", {"a": "<img src='file:///etc/x'>"}))
    panel.apply(ToolResultEvent(S, "evil", "<b>x</b>", True, "<i>code</i>", 1.0, 1, None,
                                "<h1>big</h1>"))
    qtbot.waitUntil(lambda: panel.model.rowCount() == 7, timeout=3000)
    assert panel.select_call("evil")
    assert panel.details.title.text().startswith("<b>x</b>")
    assert panel.details.title.textFormat() == Qt.TextFormat.PlainText
    assert panel.details.error.textFormat() == Qt.TextFormat.PlainText
    assert panel.details.model_text.toPlainText() == "<h1>big</h1>"


def test_stop_from_row_cell_key_and_details(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    stops: list[str] = []
    panel.stop_requested.connect(stops.append)
    view = panel.view
    index = panel.proxy.mapFromSource(panel.model.index(panel.model.row_of("bash1") or 0,
                                                        Column.ACTION))
    assert index.data() == "■ Stop"
    cell = view.visualRect(index)
    button = TimelineDelegate.button_rect(cell, view.fontMetrics(), "■ Stop")
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=button.center())
    assert stops == ["bash1"]
    # A finished row's action cell does not stop anything.
    done = panel.proxy.mapFromSource(panel.model.index(panel.model.row_of("read1") or 0,
                                                       Column.ACTION))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.visualRect(done).center())
    assert stops == ["bash1"]
    panel.select_call("bash1")
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    panel.details.stop_button.click()
    assert stops == ["bash1", "bash1", "bash1"]


def test_a_call_waiting_for_approval_can_be_stopped(qtbot: QtBot) -> None:
    """Stopping it withdraws the approval request (the kernel ends it as cancelled)."""
    panel = make_panel(qtbot)
    panel.apply_many([
        ToolCallStarted(S, "ask1", "write_file", {"path": "a.py"}, summary="a.py",
                        risk="write"),
        ApprovalRequest(S, "ask1", "write_file", {"path": "a.py"}, "write", "ask mode"),
    ])
    record = panel.model.record("ask1")
    assert record is not None and record.status == "awaiting_approval"
    stops: list[str] = []
    panel.stop_requested.connect(stops.append)
    index = panel.proxy.mapFromSource(panel.model.index(panel.model.row_of("ask1") or 0,
                                                        Column.ACTION))
    assert index.data() == "■ Stop"
    panel.select_call("ask1")
    assert panel.details.stop_button.isEnabled()
    panel.details.stop_button.click()
    assert stops == ["ask1"]


def test_open_output_from_row_and_details(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    opened: list[str] = []
    panel.open_output.connect(opened.append)
    view = panel.view
    index = panel.proxy.mapFromSource(panel.model.index(panel.model.row_of("bash3") or 0,
                                                        Column.ACTION))
    assert index.data() == "Open output"
    button = TimelineDelegate.button_rect(view.visualRect(index), view.fontMetrics(),
                                          "Open output")
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=button.center())
    tool_cell = view.visualRect(index.siblingAtColumn(Column.TOOL)).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=tool_cell)
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=tool_cell)
    panel.details.open_button.click()
    assert opened == ["/data/tool-results/bash3.txt"] * 3


def test_select_call_clears_filters_that_hide_it(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.search.setText("make test")
    qtbot.waitUntil(lambda: shown_ids(panel) == ["bash1"], timeout=3000)
    assert panel.select_call("web1")
    assert panel.search.text() == ""
    assert panel.selected_call() == "web1"
    assert not panel.select_call("no_such_call")
    # A call seen a moment ago but not yet inserted still gets its row at once.
    panel.apply(ToolCallStarted(S, "fresh", "bash", {}))
    assert panel.select_call("fresh")
    assert panel.selected_call() == "fresh"
    assert panel.model.record("fresh").status == "queued"  # type: ignore[union-attr]


def test_every_control_has_an_accessible_name(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    QApplication.processEvents()
    kinds = (QLineEdit, QComboBox, QPushButton)
    controls = [w for w in panel.findChildren(QWidget) if isinstance(w, kinds)]
    assert len(controls) >= 7
    unnamed = [type(w).__name__ for w in controls
               if not w.accessibleName() and not isinstance(w.parent(), QComboBox)]
    assert unnamed == []
    assert panel.view.accessibleName() == "Tool calls"
    assert QPoint(0, 0) == QPoint()  # sanity: QtCore usable


def test_delegate_elides_like_qt_and_starts_over_when_the_font_changes(qtbot: QtBot) -> None:
    delegate = TimelineDelegate()
    option = QStyleOptionViewItem()
    text = "make test " * 40
    small, large = QFont(option.font), QFont(option.font)
    small.setPointSize(8)
    large.setPointSize(20)
    for font in (small, large, small):
        option.font = font
        expected = QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, 200)
        assert delegate.elided(option, text, 200) == expected
        assert delegate.elided(option, text, 200) == expected  # from the cache
        assert expected.endswith("…") and len(expected) < len(text)
    assert delegate.elided(option, "short", 200) == "short"


def test_long_tool_names_keep_both_ends_and_show_in_full_on_hover(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    name = "mcp__filesystem_of_the_build_server__read_multiple_files"
    panel.apply(ToolCallStarted(S, "m1", name, {"paths": ["a"]}, summary="a"))
    index = panel.model.index(panel.model.row_of("m1") or 0, Column.TOOL)
    assert index.data(Qt.ItemDataRole.ToolTipRole) == f"<pre>{name}</pre>"
    option = QStyleOptionViewItem()
    shown = panel.delegate.elided(option, name, 120, Qt.TextElideMode.ElideMiddle)
    assert "…" in shown and shown.startswith("mcp") and shown.endswith("files")
    panel.view.setColumnWidth(Column.TOOL, 140)
    panel.view.scrollTo(panel.proxy.mapFromSource(index))
    panel.view.viewport().grab()  # paints the rows
    painted = [key for key in panel.delegate._elided if key[0] == name]
    assert painted and all(key[2] is Qt.TextElideMode.ElideMiddle for key in painted)


def test_the_filter_bar_fits_the_narrowest_dock(qtbot: QtBot) -> None:
    """In a 900 px window the timeline is a tab at its least width (about 300 px): the
    search, both filters and the count stay inside it, with a long MCP tool name among the
    tools and a filter on."""
    panel = make_panel(qtbot)
    name = "mcp__filesystem_of_the_build_server__read_multiple_files"
    panel.apply(ToolCallStarted(S, "m1", name, {"paths": ["a"]}, summary="a"))
    qtbot.waitUntil(lambda: panel.tool_filter.findData(name) >= 0, timeout=3000)
    panel.status_filter.setCurrentIndex(1)
    assert " of " in panel.count.text()
    narrowest = panel.minimumSizeHint().width()
    assert narrowest <= 310
    panel.resize(narrowest, 600)
    qtbot.waitUntil(lambda: panel.width() == narrowest, timeout=3000)
    for part in (panel.search, panel.status_filter, panel.tool_filter, panel.count):
        geometry = part.geometry()
        assert geometry.left() >= 0 and geometry.right() < panel.width(), (
            part.accessibleName(), geometry, panel.width())
        assert geometry.width() >= part.minimumSizeHint().width()
    count = panel.count
    assert count.fontMetrics().horizontalAdvance(count.text()) <= count.width()
    assert panel.search.width() >= panel.width() // 2, "the search keeps room to type in"
