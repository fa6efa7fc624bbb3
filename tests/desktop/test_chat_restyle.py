"""Code blocks follow the palette: a message rendered while the system was light gets its
code colours for dark when the system turns dark (and back), in the chat on screen and in a
session's chat that was out of sight when the palette changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop import theme
from desktop.chat.documents import CodeDocument
from desktop.chat.highlight import DARK as DARK_CODE
from desktop.chat.highlight import LIGHT as LIGHT_CODE
from desktop.chat.model import ChatModel, MessageItem, Role
from desktop.theme import flat_palette
from tests.desktop.chat_views import shown_view

DARK = flat_palette(*theme.DARK)
LIGHT = flat_palette("#efefef", "#ffffff", "#f7f7f7", "#e8e8e8", "#1f1f1f")
ANSWER = "Here:\n\n```python\ndef f(x):\n    return 'text' + str(x)  # note\n```\n"


@pytest.fixture
def system_palette(qapp: QApplication) -> Iterator[None]:
    before = QGuiApplication.palette()
    QGuiApplication.setPalette(LIGHT)
    yield
    QGuiApplication.setPalette(before)


def code_colours(model: ChatModel) -> set[str]:
    """The foreground colours used in the code blocks of the model's messages."""
    found: set[str] = set()
    for item in model.items():
        if not isinstance(item, MessageItem):
            continue
        for doc in item.segments:
            if isinstance(doc, CodeDocument):
                cursor = QTextCursor(doc)
                while not cursor.atEnd():
                    cursor.movePosition(QTextCursor.MoveOperation.NextCharacter)
                    brush = cursor.charFormat().foreground()
                    if brush.style() != Qt.BrushStyle.NoBrush:
                        found.add(brush.color().name())
    return found


def test_code_colours_follow_the_palette(qtbot: QtBot, system_palette: None) -> None:
    view = shown_view(qtbot, 600, 400)
    model = view.chat_model()
    assert isinstance(model, ChatModel)
    model.add_message(Role.ASSISTANT, ANSWER)
    qtbot.waitUntil(lambda: bool(code_colours(model)))
    light = code_colours(model)
    assert light <= {c.lower() for c in LIGHT_CODE.values()}
    QGuiApplication.setPalette(DARK)
    qtbot.waitUntil(lambda: code_colours(model) != light)
    assert code_colours(model) <= {c.lower() for c in DARK_CODE.values()}
    QGuiApplication.setPalette(LIGHT)
    qtbot.waitUntil(lambda: code_colours(model) == light)


def test_a_chat_out_of_sight_is_restyled_when_shown(qtbot: QtBot,
                                                     system_palette: None) -> None:
    view = shown_view(qtbot, 600, 400)
    shown = view.chat_model()
    hidden = ChatModel()
    view.setModel(hidden)
    hidden.add_message(Role.ASSISTANT, ANSWER)
    qtbot.waitUntil(lambda: bool(code_colours(hidden)))
    light = code_colours(hidden)
    assert isinstance(shown, ChatModel)
    view.setModel(shown)
    QGuiApplication.setPalette(DARK)
    qtbot.waitUntil(lambda: shown.dark)
    assert code_colours(hidden) == light  # not rendered again while unseen
    view.setModel(hidden)
    assert code_colours(hidden) <= {c.lower() for c in DARK_CODE.values()}
    assert code_colours(hidden) != light
