"""The main window's geometry: at 900×600 the chat keeps at least half the width (the side
panels become tabs of one dock); from 1160 px they are on both sides again, widths the user
chose kept while the chat has its half; in a wide window the chat's text is a centred column
of at most READABLE_WIDTH."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.chat.geometry import READABLE_WIDTH, content_width, message_pieces, row_box
from desktop.chat.model import MessageItem, Role
from desktop.main_window import (
    FULL_PANELS_MIN,
    SIDE_BY_SIDE_MIN,
    MainWindow,
    PanelLayout,
    panel_layout,
)


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
    assert box.width() == pytest.approx(READABLE_WIDTH + 16)
    assert box.left() - rect.left() == pytest.approx(rect.right() - box.right(), abs=1)
    item.layout(content_width(viewport))
    pieces = message_pieces(item, rect)
    assert pieces and all(p.clip.width() <= READABLE_WIDTH for p in pieces)
    assert all(p.clip.left() >= box.left() for p in pieces)
    lines = pieces[0].doc.documentLayout().documentSize().width()
    assert lines <= READABLE_WIDTH + 1
    # Narrow: the rows take the width there is.
    assert row_box(QRectF(0, 0, 500, 100)).width() == 500 - 16
    assert content_width(500) == 500 - 32


def test_the_first_window_fits_the_screen(qtbot: QtBot) -> None:
    available = QApplication.primaryScreen().availableGeometry()
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.width() == min(1280, available.width())
    assert w.height() == min(800, available.height())
