"""The main window's geometry: at 900×600 the chat keeps at least half the width (the side
panels become tabs of one dock); from 1160 px they are on both sides again, widths the user
chose kept while the chat has its half; in a wide window the chat's text is a centred column
of at most READABLE_WIDTH."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from pytestqt.qtbot import QtBot

from desktop.chat.geometry import (
    READABLE_WIDTH,
    SIDE,
    content_width,
    message_pieces,
    row_box,
)
from desktop.chat.model import MessageItem, Role
from desktop.main_window import (
    FULL_PANELS_MIN,
    SIDE_BY_SIDE_MIN,
    MainWindow,
    PanelLayout,
    panel_layout,
)
from desktop.status_bar import FitLabel


@pytest.mark.parametrize(("width", "layout"), [
    (700, PanelLayout(True, 315, 315)),
    (900, PanelLayout(True, 405, 405)),
    (1000, PanelLayout(True, 420, 420)),
    (SIDE_BY_SIDE_MIN - 1, PanelLayout(True, 420, 420)),
    (SIDE_BY_SIDE_MIN, PanelLayout(False, 260, 300)),
    (1280, PanelLayout(False, 260, 360)),
    (FULL_PANELS_MIN, PanelLayout(False, 260, 420)),
    (2560, PanelLayout(False, 260, 420)),
])
def test_panel_layout(width: int, layout: PanelLayout) -> None:
    assert panel_layout(width) == layout
    panels = layout.timeline if layout.tabbed else layout.sessions + layout.timeline
    assert panels <= width / 2


def settle(qtbot: QtBot, window: MainWindow, width: int, height: int) -> None:
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width)
    for _ in range(3):
        QApplication.processEvents()


@pytest.fixture
def window(qtbot: QtBot) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.timeline  # noqa: B018 - built, as the app does after the first paint
    w.show_page(welcome=False)
    return w


def chat_width(window: MainWindow) -> int:
    return window.centralWidget().width()


def test_at_900_by_600_the_chat_keeps_half_and_the_panels_are_tabs(qtbot: QtBot,
                                                                   window: MainWindow) -> None:
    settle(qtbot, window, 900, 600)
    assert chat_width(window) >= 450
    assert window.panels_tabbed
    assert window.tabifiedDockWidgets(window.timeline_dock) == [window.sessions_dock]
    assert window.timeline_dock.isVisible() and not window.timeline_dock.visibleRegion().isEmpty()
    assert window.sessions_dock.visibleRegion().isEmpty(), "behind its tab"
    window.sessions_dock.raise_()  # the Sessions tab
    qtbot.waitUntil(lambda: not window.sessions_dock.visibleRegion().isEmpty())
    assert chat_width(window) >= 450
    # Wider: the panels go back to both sides, the chat still has its half.
    for width in (1280, SIDE_BY_SIDE_MIN, 1500, 1024, 900, 2560):
        settle(qtbot, window, width, 800)
        assert chat_width(window) * 2 >= width, width
        assert window.panels_tabbed is (width < SIDE_BY_SIDE_MIN)
        area = window.dockWidgetArea(window.sessions_dock)
        assert (area == window.dockWidgetArea(window.timeline_dock)) is window.panels_tabbed


def test_widths_the_user_chose_are_kept_while_the_chat_has_half(qtbot: QtBot,
                                                                window: MainWindow) -> None:
    settle(qtbot, window, 1600, 900)
    window.resizeDocks([window.timeline_dock], [500], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: window.timeline_dock.width() >= 495)
    settle(qtbot, window, 1700, 900)
    assert window.timeline_dock.width() >= 495


def test_a_wide_window_shows_the_text_as_a_centred_column(qtbot: QtBot,
                                                          window: MainWindow) -> None:
    settle(qtbot, window, 2560, 1400)
    viewport = window.chat.viewport().width()
    assert viewport > READABLE_WIDTH + 200
    model = window.chat.chat_model()
    model.add_message(Role.ASSISTANT, "A long answer. " * 200)
    item = model.item(0)
    assert isinstance(item, MessageItem)
    rect = QRectF(0, 0, viewport, 2000)
    box = row_box(rect)
    assert box.width() == pytest.approx(READABLE_WIDTH)
    assert box.left() - rect.left() == pytest.approx(rect.right() - box.right(), abs=1)
    item.layout(content_width(viewport))
    pieces = message_pieces(item, rect)
    assert pieces and all(p.clip.width() <= READABLE_WIDTH for p in pieces)
    assert all(p.clip.left() >= box.left() for p in pieces)
    lines = pieces[0].doc.documentLayout().documentSize().width()
    assert lines <= READABLE_WIDTH + 1
    # Narrow: the rows take the width there is.
    assert row_box(QRectF(0, 0, 500, 100)).width() == 500 - 2 * SIDE
    assert content_width(500) == 500 - 2 * SIDE


def test_the_first_window_fits_the_screen(qtbot: QtBot) -> None:
    available = QApplication.primaryScreen().availableGeometry()
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.width() == min(1280, available.width())
    assert w.height() == min(800, available.height())


LONG_REASON = ("bubblewrap cannot create a user namespace here (kernel.unprivileged_userns_clone"
               " is 0); commands run unsandboxed")
STATES = {
    "a session, approvals waiting": dict(
        session=True, kernel="", approvals=2, grants=3, sandbox=("bwrap", ""),
        usage=(123_456, 7_890, 1.2345, (45_000, 200_000))),
    "no session, no sandbox, kernel restarting": dict(
        session=False, kernel="Database moved to /home/someone/.local/share/reins/old; "
                               "restarting…", approvals=0, grants=0,
        sandbox=("none", LONG_REASON), usage=(0, 0, 0.0, (0, 0))),
    "a session, no sandbox": dict(
        session=True, kernel="", approvals=1, grants=1, sandbox=("none", LONG_REASON),
        usage=(1_200, 30, 0.0123, (0, 0))),
}


def show_state(window: MainWindow, session: bool, kernel: str, approvals: int, grants: int,
               sandbox: tuple[str, str], usage: tuple[int, int, float, tuple[int, int]]) -> None:
    window.set_model("claude-sonnet-4-6", session=session)
    window.set_mode("ask" if session else None)
    window.set_kernel_state(kernel)
    window.set_pending_approvals(approvals)
    window.set_grants(grants)
    window.set_sandbox(*sandbox)
    window.set_usage(*usage)
    window.show_readiness(can_run=True, key_pending=False, has_session=session, running=False,
                          interrupted=False)


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize(("width", "height"), [(900, 600), (1600, 1000)])
def test_every_status_bar_text_is_whole_or_elided_with_a_tooltip(
        qtbot: QtBot, window: MainWindow, state: str, width: int, height: int) -> None:
    """Nothing in the status bar is cut off: each part lies inside the bar, apart from the
    others, and each text is drawn whole in the room it has, or (a label with too little)
    elided with "…"; a shorter form or an elided text has the whole text in its tooltip."""
    show_state(window, **STATES[state])  # type: ignore[arg-type]
    settle(qtbot, window, width, height)
    bar = window.statusBar()
    shown = sorted((w for w in bar.findChildren(QWidget) if w.isVisible() and w.parent() is bar
                    and w.width() > 0), key=lambda w: w.x())
    assert window.model_picker not in shown and window.mode_combo not in shown, "composer's"
    assert window.prompt.frame.isAncestorOf(window.model_picker)
    assert window.prompt.frame.isAncestorOf(window.mode_combo)
    for left, right in itertools.pairwise(shown):
        assert left.geometry().right() < right.x(), (left.accessibleName(), right.x())
    assert shown[0].x() >= 0 and shown[-1].geometry().right() < bar.width()
    for label in bar.findChildren(QLabel):
        if not label.isVisible():
            continue
        room = label.contentsRect().width()
        metrics = QFontMetricsF(label.font())
        if isinstance(label, FitLabel):
            drawn = label.shown_text()
            assert drawn, label.accessibleName()
            assert label.text() in label.toolTip(), label.accessibleName()
            if not drawn.endswith("…"):
                assert drawn in label.form_texts(), (drawn, label.form_texts())
        else:
            drawn = label.text()
        assert metrics.horizontalAdvance(drawn) <= room + 0.5, (drawn, room)
    for button in (window.approvals_button, window.grants_button, window.compact_button):
        if button.isVisible():
            assert button.width() >= button.sizeHint().width(), button.text()
            whole = button.form_texts()[0]
            assert button.text() == whole or whole in button.toolTip(), button.text()
    if width >= 1600 and state == "a session, approvals waiting":
        assert window.usage_label.shown_text() == window.usage_label.text(), "room for all"
        assert window.compact_button.isVisible() and window.sandbox_label.shown_text() == (
            "Sandbox: bwrap")
    # What must be seen stays at 900 px: waiting approvals, the kernel's state, a missing
    # sandbox (each in a form of its own words).
    assert window.approvals_button.isVisible() is (STATES[state]["approvals"] > 0)
    assert window.kernel_label.isVisible() is bool(STATES[state]["kernel"])
    if STATES[state]["sandbox"][0] == "none":
        assert window.sandbox_label.isVisible()
        assert "none" in window.sandbox_label.shown_text().lower() or (
            window.sandbox_label.shown_text() == "No sandbox")
