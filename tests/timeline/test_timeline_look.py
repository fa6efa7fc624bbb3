"""The timeline's and the settings' quiet look: readable in light and dark, following a
palette switch, and a hovered row shaded whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPalette
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from desktop import theme
from desktop.main_window import MainWindow
from desktop.settings.dialog import HELP, SettingsDialog
from desktop.timeline import TimelinePanel
from desktop.timeline.delegate import STATUS_COLOURS, TimelineDelegate
from kernel.events import ToolCallStarted
from kernel.paths import AppPaths

DARK = theme.flat_palette(*theme.DARK)
LIGHT = theme.flat_palette("#efefef", "#ffffff", "#f7f7f7", "#e8e8e8", "#1f1f1f")


@pytest.fixture
def restore_palette() -> Iterator[None]:
    before = QGuiApplication.palette()
    yield
    QGuiApplication.setPalette(before)


@pytest.mark.parametrize("palette", [LIGHT, DARK], ids=["light", "dark"])
def test_row_colours_are_soft_but_readable(qtbot: QtBot, palette: QPalette) -> None:
    """A selected row is a tint (closer to the page than the highlight itself), its text
    and the muted text stay readable (WCAG AA for text, 3:1 for the secondary columns)."""
    colours = TimelineDelegate().colours(palette)
    base = palette.color(QPalette.ColorRole.Base)
    highlight = palette.color(QPalette.ColorRole.Highlight)
    assert 1.05 < theme.contrast(colours.selected, base) < theme.contrast(highlight, base)
    assert 1.02 < theme.contrast(colours.hover, base) < theme.contrast(colours.selected, base)
    for fill in (base, colours.selected, colours.hover):
        assert theme.contrast(colours.text, fill) >= 4.5
        assert theme.contrast(colours.muted, fill) >= 3.0
    assert theme.contrast(colours.muted, base) < theme.contrast(colours.text, base)


def test_status_icons_stand_out_in_light_and_dark() -> None:
    """The icons keep their status colours: each is visible on both pages."""
    for palette in (LIGHT, DARK):
        base = palette.color(QPalette.ColorRole.Base)
        for status, colour in STATUS_COLOURS.items():
            assert theme.contrast(colour, base) >= 1.9, (status, palette)


def test_the_sheets_follow_a_palette_switch(qtbot: QtBot, tmp_path: Path,
                                            restore_palette: None) -> None:
    QGuiApplication.setPalette(LIGHT)
    panel = TimelinePanel(batch_ms=20)
    dialog = SettingsDialog(AppPaths(tmp_path / "data", tmp_path / "config"))
    qtbot.addWidget(panel)
    qtbot.addWidget(dialog)
    light = theme.panel_sheet(QGuiApplication.palette())
    assert QColor(LIGHT.color(QPalette.ColorRole.Base)).name() in light
    for widget in (panel, dialog):
        assert widget.styleSheet() == light
    QGuiApplication.setPalette(DARK)
    dark = theme.panel_sheet(QGuiApplication.palette())
    assert dark != light and QColor(DARK.color(QPalette.ColorRole.Base)).name() in dark
    for widget in (panel, dialog):
        qtbot.waitUntil(lambda w=widget: w.styleSheet() == dark, timeout=2000)


def test_help_text_is_muted(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = SettingsDialog(AppPaths(tmp_path / "data", tmp_path / "config"))
    qtbot.addWidget(dialog)
    helps = dialog.findChildren(QLabel, HELP)
    assert len(helps) == 2
    for label in (*helps, dialog.key_status, dialog.grants_panel.intro,
                  dialog.mcp_panel.intro):
        assert label.property("muted") is True
    assert dialog.connection_label.property("muted") is None  # a verdict, not help


def test_the_hovered_row_is_shaded_whole_until_the_mouse_leaves(qtbot: QtBot) -> None:
    panel = TimelinePanel(batch_ms=20)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    for n in range(3):
        panel.apply(ToolCallStarted("s", f"c{n}", "read_file", {"path": "a"}, summary="a"))
    qtbot.waitUntil(lambda: panel.proxy.rowCount() == 3, timeout=3000)
    panel.view.entered.emit(panel.proxy.index(1, 3))
    assert panel.delegate.hovered_row == 1
    QGuiApplication.sendEvent(panel.view.viewport(), QEvent(QEvent.Type.Leave))
    assert panel.delegate.hovered_row == -1


def _opaque_colours(path: str) -> set[int]:
    image = QImage(path)
    return {image.pixelColor(x, y).rgb() for x in range(image.width())
            for y in range(image.height()) if image.pixelColor(x, y).alpha() == 255}


@pytest.mark.parametrize("palette", [LIGHT, DARK], ids=["light", "dark"])
def test_the_sheet_names_tinted_icons_that_exist(palette: QPalette) -> None:
    """The combo arrow and the check box's tick are files of the icon in the palette's
    colour (a missing file would leave the control without its mark)."""
    sheet = theme.panel_sheet(palette)
    for name, colour in (("check", palette.color(QPalette.ColorRole.HighlightedText)),
                         ("chevron-down", theme.muted_text(palette))):
        path = theme.icon_file(name, colour)
        assert f"url({path})" in sheet
        assert colour.rgb() in _opaque_colours(path), name


def test_the_docked_timeline_turns_dark_with_the_window(qtbot: QtBot,
                                                        restore_palette: None) -> None:
    # Inside the main window's dock a styled panel got no PaletteChange of its own: its
    # result box stayed white in dark mode (seen in the README's dark screenshot).
    QGuiApplication.setPalette(LIGHT)
    window = MainWindow()
    qtbot.addWidget(window)
    window.resize(1200, 800)
    window.show()
    window.timeline_dock.show()
    box = window.timeline.details.result_preview

    def shade() -> str:
        image = window.grab().toImage()
        return image.pixelColor(box.mapTo(window, box.rect().center())).name()

    qtbot.waitUntil(lambda: shade() == "#ffffff", timeout=2000)
    QGuiApplication.setPalette(DARK)
    dark = QColor(DARK.color(QPalette.ColorRole.Base)).name()
    qtbot.waitUntil(lambda: shade() == dark, timeout=2000)
