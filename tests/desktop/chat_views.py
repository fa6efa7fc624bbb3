"""A real chat view with an empty model, shown offscreen (for the chat's tests)."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from desktop.chat.model import ChatModel
from desktop.chat.view import ChatView


def shown_view(qtbot: QtBot, width: int = 600, height: int = 400) -> ChatView:
    view = ChatView()
    view.open_links_in_browser = False
    view.setModel(ChatModel(view))
    view.resize(width, height)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    return view
