"""The chat's items (messages, tool cards, notices) as a Qt list model.

Each message owns its documents; a streaming message is a list of finished segments plus
an unfinished tail, and only the tail is re-rendered — at most ~30 times a second, however
fast deltas arrive.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)

from desktop.chat.markdown import SafeDocument, markdown_document, plain_document, split_stable
from kernel.visible import one_line, visible

ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
RENDER_INTERVAL_MS = 33
"""At most ~30 re-renders of the streaming tail per second."""


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    NOTICE = "notice"
    ERROR = "error"


@dataclass(eq=False)
class MessageItem:
    role: Role
    text: str = ""
    streaming: bool = False
    segments: list[SafeDocument] = field(default_factory=list)
    rendered_upto: int = 0
    tail: SafeDocument | None = None
    width: float = -1.0
    renders: int = 0
    """How many times a document of this message was (re)built; tests read it."""
    cached_height: float | None = None

    def documents(self) -> list[SafeDocument]:
        return [*self.segments, *([self.tail] if self.tail is not None else [])]

    def layout(self, width: float) -> None:
        if width == self.width and (self.segments or self.tail is not None):
            return
        self.width = width
        self.cached_height = None
        if not self.segments and self.tail is None:
            self.render_tail() if self.streaming else self.render_all()
            return
        for doc in self.documents():
            doc.setTextWidth(width)

    def render_all(self) -> None:
        """One document for the whole (finished or user) message."""
        build = plain_document if self.role is Role.USER else markdown_document
        self.segments = [build(self.text, max(self.width, 50.0))]
        self.rendered_upto = len(self.text)
        self.tail = None
        self.renders += 1
        self.cached_height = None

    def render_tail(self) -> None:
        """Freeze what can no longer change into a segment; re-render only the rest."""
        width = max(self.width, 50.0)
        cut = split_stable(self.text)
        if cut > self.rendered_upto:
            self.segments.append(markdown_document(self.text[self.rendered_upto:cut], width))
            self.rendered_upto = cut
            self.renders += 1
        rest = self.text[self.rendered_upto:]
        self.tail = markdown_document(rest, width) if rest else None
        self.renders += 1
        self.cached_height = None

    def seal(self) -> None:
        """The stream ended: render what is left of the tail once, keep every segment."""
        self.render_tail()
        if self.tail is not None:
            self.segments.append(self.tail)
            self.tail = None

    def height(self) -> float:
        """The laid-out height of the message's documents (cached until they change)."""
        if self.cached_height is None:
            self.cached_height = sum(doc.size().height() for doc in self.documents())
        return self.cached_height


@dataclass(eq=False)
class ToolCardItem:
    call_id: str
    name: str
    summary: str = ""
    status: str = "queued"
    detail: str = ""


ChatItem = MessageItem | ToolCardItem


class ChatModel(QAbstractListModel):
    """All items of one session's chat, in order."""

    item_grew = Signal(int)
    """A row's content changed size (streaming); the view relayouts and may follow the end."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._items: list[ChatItem] = []
        self._cards: dict[str, int] = {}
        self._streaming: MessageItem | None = None
        self._streaming_row = -1
        self._dirty = False
        self._timer = QTimer(self)
        self._timer.setInterval(RENDER_INTERVAL_MS)
        self._timer.timeout.connect(self._render_streaming)

    # -- Qt model API --------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._items)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> object:
        if not index.isValid() or index.row() >= len(self._items):
            return None
        item = self._items[index.row()]
        if role == ITEM_ROLE:
            return item
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return item_text(item)
        return None

    # -- content -------------------------------------------------------------------------
    def items(self) -> list[ChatItem]:
        return list(self._items)

    def item(self, row: int) -> ChatItem:
        """The item of a row, without the QVariant round trip of data() (the delegate asks
        for every row on each layout)."""
        return self._items[row]

    def clear(self) -> None:
        self.beginResetModel()
        self._items.clear()
        self._cards.clear()
        self._streaming = None
        self._timer.stop()
        self.endResetModel()

    def _append(self, item: ChatItem) -> None:
        row = len(self._items)
        self.beginInsertRows(QModelIndex(), row, row)
        self._items.append(item)
        self.endInsertRows()

    def add_message(self, role: Role, text: str) -> None:
        self.finish_streaming()
        self._append(MessageItem(role, text))

    def append_delta(self, text: str) -> None:
        """Streamed assistant text; rendering is throttled to the render interval."""
        if self._streaming is None:
            self._streaming = MessageItem(Role.ASSISTANT, "", streaming=True)
            self._streaming_row = len(self._items)
            self._append(self._streaming)
        self._streaming.text += text
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def finish_text(self, text: str) -> None:
        """A finished assistant text block: replaces the streamed one, or is added."""
        item, row = self._streaming, self._streaming_row
        self._streaming = None
        self._dirty = False
        self._timer.stop()
        if item is None:
            self._append(MessageItem(Role.ASSISTANT, text))
            return
        streamed_as_sent = item.text == text
        item.text = text
        item.streaming = False
        if item.width > 0 and streamed_as_sent:
            item.seal()
        elif item.width > 0:
            item.render_all()
        else:
            item.segments, item.tail, item.cached_height = [], None, None
        self._changed(row, grew=True)

    def finish_streaming(self) -> None:
        """Close an unfinished streamed message (a run stopped before its text block ended)."""
        if self._streaming is not None:
            self.finish_text(self._streaming.text)

    def add_tool_card(self, call_id: str, name: str, summary: str, status: str) -> None:
        self.finish_streaming()
        row = self._cards.get(call_id)
        if row is not None:
            card = self._items[row]
            assert isinstance(card, ToolCardItem)
            card.summary, card.status = summary or card.summary, status
            self._changed(row, grew=False)
            return
        self._cards[call_id] = len(self._items)
        self._append(ToolCardItem(call_id, name, summary, status))

    def update_tool_card(self, call_id: str, status: str, detail: str = "") -> None:
        row = self._cards.get(call_id)
        if row is None:
            return
        card = self._items[row]
        assert isinstance(card, ToolCardItem)
        card.status, card.detail = status, detail or card.detail
        self._changed(row, grew=False)

    def card_row(self, call_id: str) -> int | None:
        return self._cards.get(call_id)

    def _changed(self, row: int, *, grew: bool) -> None:
        """Repaint a row; relayout the view only when its height may have changed."""
        index = self.index(row)
        self.dataChanged.emit(index, index)
        if grew:
            self.item_grew.emit(row)

    def _render_streaming(self) -> None:
        item = self._streaming
        if item is None or not self._dirty:
            self._timer.stop()
            return
        self._dirty = False
        before = item.height()
        if item.width > 0:
            item.render_tail()
        self._changed(self._streaming_row, grew=item.height() != before)


def item_text(item: ChatItem) -> str:
    """What a row says as text (accessibility, copying a card): escaped like the display."""
    if isinstance(item, ToolCardItem):
        return one_line(f"Tool call {item.name}: {item.summary} — {item.status} "
                        f"{item.detail}".strip())
    label = {Role.USER: "You", Role.ASSISTANT: "Assistant"}.get(item.role, item.role.title())
    return f"{label}: {visible(item.text)}"
