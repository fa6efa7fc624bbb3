"""Dark mode: with a dark system palette whose Disabled group is the Active one (so a
disabled button looked enabled), a disabled button's text is drawn in another colour, and
the user's bubble stands out from the page, in dark mode as in light."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QPushButton, QStyleOptionViewItem
from pytestqt.qtbot import QtBot

from desktop import theme
from desktop.call_status import STATUS_COLOURS
from desktop.chat.delegate import ChatDelegate, bubble_colour
from desktop.chat.geometry import SIDE
from desktop.chat.model import ChatModel, Role
from desktop.theme import (
    BORDER_CONTRAST,
    border_colour,
    contrast,
    disabled_roles,
    flat_palette,
    with_disabled_colours,
)
from tests.desktop.chat_views import shown_view

G, R = QPalette.ColorGroup, QPalette.ColorRole


DARK = flat_palette(*theme.DARK)
LIGHT = flat_palette("#efefef", "#ffffff", "#f7f7f7", "#e8e8e8", "#1f1f1f")


@pytest.fixture
def system_palette(qapp: QApplication) -> Iterator[None]:
    before = QGuiApplication.palette()
    yield
    QGuiApplication.setPalette(before)


@pytest.mark.parametrize("palette", [DARK, LIGHT], ids=["dark", "light"])
def test_disabled_texts_get_their_own_colour(palette: QPalette) -> None:
    assert disabled_roles(palette) == frozenset(theme.TEXT_ON)
    mended = with_disabled_colours(palette)
    assert disabled_roles(mended) == frozenset()
    for text, background in theme.TEXT_ON.items():
        enabled = mended.color(G.Active, text)
        disabled = mended.color(G.Disabled, text)
        assert contrast(enabled, disabled) >= theme.SAME, text
        ground = mended.color(G.Disabled, background)
        assert contrast(disabled, ground) < contrast(enabled, ground), "dimmer, not louder"
        assert contrast(disabled, ground) >= 1.5, "still readable"
    assert with_disabled_colours(mended) == mended, "a palette with disabled colours stays"


def brightest_text(button: QPushButton) -> QColor:
    """The colour of the button's text: its pixel that stands out most from the button."""
    image = button.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    ground = button.palette().color(G.Active, R.Button)
    pixels = (image.pixelColor(x, y) for y in range(4, image.height() - 4)
              for x in range(6, image.width() - 6))
    return max(pixels, key=lambda colour: contrast(colour, ground))


def test_a_disabled_button_looks_disabled_in_dark_mode(qtbot: QtBot,
                                                       system_palette: None) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.install(app)
    QGuiApplication.setPalette(DARK)  # the system switches to its dark palette
    palette = QGuiApplication.palette()
    assert palette.color(G.Disabled, R.ButtonText) != palette.color(G.Active, R.ButtonText)
    enabled, disabled = QPushButton("Send prompt"), QPushButton("Send prompt")
    disabled.setEnabled(False)
    for button in (enabled, disabled):
        qtbot.addWidget(button)
        button.resize(160, 32)
        button.show()
    qtbot.waitExposed(disabled)
    ground = palette.color(G.Active, R.Button)
    lit, dim = brightest_text(enabled), brightest_text(disabled)
    assert contrast(lit, ground) > 6, "the enabled text is drawn in its own colour"
    assert contrast(dim, ground) < contrast(lit, ground) / 1.5, (lit.name(), dim.name())
    # Back to light: the colours worked out for dark are not kept.
    QGuiApplication.setPalette(LIGHT)
    palette = QGuiApplication.palette()
    assert contrast(palette.color(G.Disabled, R.ButtonText),
                    palette.color(G.Active, R.ButtonText)) >= theme.SAME
    assert contrast(palette.color(G.Disabled, R.ButtonText), QColor("#e8e8e8")) < 9


@pytest.mark.parametrize("palette", [DARK, LIGHT], ids=["dark", "light"])
def test_borders_stand_out_from_every_fill(palette: QPalette) -> None:
    fills = [palette.color(R.Base), palette.color(R.AlternateBase), palette.color(R.Button),
             QColor(207, 34, 46, 40)]
    for fill in fills:
        border = border_colour(palette, fill, palette.color(R.Base))
        seen = theme.mix(palette.color(R.Base), fill, fill.alphaF())
        assert contrast(border, seen) >= BORDER_CONTRAST
        assert contrast(border, palette.color(R.Base)) >= BORDER_CONTRAST


@pytest.mark.parametrize("palette", [LIGHT, DARK], ids=["light", "dark"])
def test_the_bubble_stands_out_and_prose_and_calls_are_on_the_page(
        qtbot: QtBot, palette: QPalette) -> None:
    """The user's bubble is a fill of its own on the page, light or dark, its text as legible
    on it as on the page; the answer's prose and a call's line are drawn unboxed (the page
    up to the text), the call's status icon in its colour."""
    view = shown_view(qtbot, 500, 400)
    view.setPalette(palette)
    model = view.chat_model()
    assert isinstance(model, ChatModel)
    model.add_message(Role.USER, "hello")
    model.add_message(Role.ASSISTANT, "hi there")
    model.add_tool_card("c1", "run_command", "ls", "ok")
    delegate = view.itemDelegate()
    assert isinstance(delegate, ChatDelegate)
    base = palette.color(R.Base)
    images = []
    for row in range(3):
        index = model.index(row, 0)
        option = QStyleOptionViewItem()
        option.initFrom(view.viewport())
        option.palette = palette
        size = delegate.sizeHint(option, index)
        option.rect = QRect(0, 0, size.width(), size.height())
        image = QImage(size, QImage.Format.Format_RGB32)
        image.fill(base)
        painter = QPainter(image)
        delegate.paint(painter, option, index)
        painter.end()
        images.append(image)
    bubble = images[0].pixelColor(QPoint(images[0].width() - SIDE - 4,
                                         images[0].height() // 2))
    assert bubble.rgb() == bubble_colour(palette).rgb() != base.rgb()
    assert contrast(bubble, base) >= 1.08, "a soft bubble, but one that shows"
    assert contrast(palette.color(R.Text), bubble) >= 7.0
    for image in images[1:]:
        middle = image.height() // 2
        assert all(image.pixelColor(QPoint(x, middle)).rgb() == base.rgb()
                   for x in range(0, int(SIDE) - 1)), "no box around it"
    icon = [images[2].pixelColor(QPoint(x, y)) for x in range(int(SIDE), int(SIDE) + 16)
            for y in range(images[2].height())]
    green = QColor(STATUS_COLOURS["ok"])
    assert any(abs(c.hue() - green.hue()) < 12 and c.saturation() > 80 for c in icon)
