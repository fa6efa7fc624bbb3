"""The chat view: a list view whose delegate paints each message's documents.

A list view with a delegate (not a widget per message) keeps 500+ message sessions smooth.
Links in messages never navigate the view: a click on one emits `link_activated`, and only
http(s) and mailto links are handed to the system browser.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRectF,
    QSize,
    Qt,
    QTimer,
    QUrl,
    Signal,
)
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QDesktopServices,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QPalette,
    QPixmap,
    QPixmapCache,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from desktop.chat.markdown import SafeDocument
from desktop.chat.model import ITEM_ROLE, ChatItem, ChatModel, MessageItem, Role, ToolCardItem
from kernel.visible import one_line

MARGIN = 8
PAD = 8
HEADER = 18
CARD_HEIGHT = 30
RELAYOUT_INTERVAL_MS = 100
LAYOUT_BATCH = 50
PIXMAP_CACHE_KB = 48 * 1024
"""Room for the rendered messages of a few screens (Qt's default is 10 MB)."""
OPENABLE_SCHEMES = frozenset({"http", "https", "mailto"})
STATUS_COLOURS = {
    "done": "#2da44e",
    "error": "#cf222e",
    "denied": "#bf8700",
    "cancelled": "#6e7781",
    "timed out": "#cf222e",
    "awaiting approval": "#bf8700",
    "running": "#0969da",
    "queued": "#6e7781",
}


def _label(item: MessageItem) -> str:
    return {Role.USER: "You", Role.ASSISTANT: "Assistant"}.get(item.role, item.role.title())


def _draw_document(painter: QPainter, doc: SafeDocument, x: float, y: float,
                   palette: QPalette) -> None:
    context = QAbstractTextDocumentLayout.PaintContext()
    context.palette = palette
    painter.save()
    painter.translate(x, y)
    doc.documentLayout().draw(painter, context)
    painter.restore()


def _document_pixmap(doc: SafeDocument, palette: QPalette, ratio: float) -> QPixmap:
    """A finished piece of a message, drawn once and then blitted: drawing text layouts is
    the costliest part of a repaint, and these no longer change (LRU in QPixmapCache)."""
    size = doc.size()
    key = f"reins-doc-{doc.serial}-{size.width():.0f}x{size.height():.0f}-" \
          f"{palette.cacheKey()}-{ratio}"
    pixmap = QPixmapCache.find(key)
    if pixmap is None or pixmap.isNull():
        pixmap = QPixmap((size * ratio).toSize())
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        canvas = QPainter(pixmap)
        _draw_document(canvas, doc, 0, 0, palette)
        canvas.end()
        QPixmapCache.insert(key, pixmap)
    return pixmap


def _item(index: QModelIndex | QPersistentModelIndex) -> ChatItem:
    model = index.model()
    if isinstance(model, ChatModel):
        return model.item(index.row())
    item: ChatItem = index.data(ITEM_ROLE)
    return item


class ChatDelegate(QStyledItemDelegate):
    """Paints a message (header + its documents) or a compact tool card."""

    def content_width(self, option: QStyleOptionViewItem) -> float:
        return max(60.0, option.rect.width() - 2 * (MARGIN + PAD))

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        item = _item(index)
        if isinstance(item, ToolCardItem):
            return QSize(option.rect.width(), CARD_HEIGHT + MARGIN)
        view = self.parent()
        width = view.viewport().width() if isinstance(view, QAbstractItemView) else 400
        item.layout(max(60.0, width - 2 * (MARGIN + PAD)))
        return QSize(width, int(item.height() + HEADER + 2 * PAD + MARGIN))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        item = _item(index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        box = QRectF(option.rect).adjusted(MARGIN, MARGIN / 2, -MARGIN, -MARGIN / 2)
        palette = option.palette
        if isinstance(item, ToolCardItem):
            self._paint_card(painter, box, item, option)
        else:
            self._paint_message(painter, box, item, palette)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box, 6, 6)
        painter.restore()

    def _paint_message(self, painter: QPainter, box: QRectF, item: MessageItem,
                       palette: QPalette) -> None:
        base = palette.color(QPalette.ColorRole.Base)
        shade = {
            Role.USER: palette.color(QPalette.ColorRole.AlternateBase),
            Role.ERROR: QColor("#cf222e"),
            Role.NOTICE: palette.color(QPalette.ColorRole.Midlight),
        }.get(item.role, base)
        background = QColor(shade)
        if item.role is Role.ERROR:
            background.setAlpha(40)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(background)
        painter.drawRoundedRect(box, 6, 6)
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        header = QRectF(box.left() + PAD, box.top() + 2, box.width() - 2 * PAD, HEADER)
        font = painter.font()
        font.setBold(True)
        painter.setFont(font)
        suffix = " …" if item.streaming else ""
        painter.drawText(header, Qt.AlignmentFlag.AlignVCenter, _label(item) + suffix)
        y = box.top() + HEADER + PAD / 2
        for doc in item.documents():
            if doc is item.tail:
                _draw_document(painter, doc, box.left() + PAD, y, palette)
            else:
                painter.drawPixmap(QPointF(box.left() + PAD, y), _document_pixmap(
                    doc, palette, painter.device().devicePixelRatioF()))
            y += doc.size().height()

    def _paint_card(self, painter: QPainter, box: QRectF, item: ToolCardItem,
                    option: QStyleOptionViewItem) -> None:
        palette = option.palette
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Button))
        painter.drawRoundedRect(box, 6, 6)
        colour = QColor(STATUS_COLOURS.get(item.status, "#6e7781"))
        painter.setBrush(colour)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(QPointF(box.left() + 12, box.center().y()), 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
        text_box = box.adjusted(24, 0, -PAD, 0)
        status = one_line(item.status + (f" · {item.detail}" if item.detail else ""))
        text = one_line(f"{item.name}  {item.summary}")
        metrics = painter.fontMetrics()
        status_width = min(metrics.horizontalAdvance(status) + 8, int(text_box.width() / 2))
        painter.drawText(text_box.adjusted(0, 0, -status_width, 0),
                         Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(text, Qt.TextElideMode.ElideRight,
                                            int(text_box.width() - status_width)))
        painter.setPen(colour)
        painter.drawText(text_box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                         metrics.elidedText(status, Qt.TextElideMode.ElideRight, status_width))

    def anchor_at(self, item: MessageItem, rect: QRectF, pos: QPointF) -> str:
        """The link under a point of the view, if any."""
        box = rect.adjusted(MARGIN, MARGIN / 2, -MARGIN, -MARGIN / 2)
        y = box.top() + HEADER + PAD / 2
        for doc in item.documents():
            height = doc.size().height()
            if y <= pos.y() < y + height:
                local = QPointF(pos.x() - box.left() - PAD, pos.y() - y)
                return doc.documentLayout().anchorAt(local)
            y += height
        return ""


class ChatView(QListView):
    """Shows a ChatModel; follows the end while the user is at the bottom."""

    link_activated = Signal(QUrl)
    tool_card_activated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Conversation")
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(False)
        # A long session is laid out a batch of rows per event-loop turn, never all at once.
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(LAYOUT_BATCH)
        self.setWordWrap(True)
        self.setMouseTracking(True)
        self.setFrameShape(QListView.Shape.NoFrame)
        QPixmapCache.setCacheLimit(max(QPixmapCache.cacheLimit(), PIXMAP_CACHE_KB))
        self._delegate = ChatDelegate(self)
        self.setItemDelegate(self._delegate)
        self.activated.connect(self._on_activated)
        self.open_links_in_browser = True
        self.link_activated.connect(self._open_link)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._context_menu)
        self._following = True
        self._grown_row = -1
        self._relayout = QTimer(self)
        self._relayout.setSingleShot(True)
        self._relayout.setInterval(RELAYOUT_INTERVAL_MS)
        self._relayout.timeout.connect(self._relayout_grown)
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    def setModel(self, model: ChatModel) -> None:
        """Show another session's chat (the previous model keeps streaming unseen)."""
        previous = self.model()
        if isinstance(previous, ChatModel):
            previous.item_grew.disconnect(self._on_item_grew)
            previous.rowsInserted.disconnect(self._on_rows_inserted)
        super().setModel(model)
        model.item_grew.connect(self._on_item_grew)
        model.rowsInserted.connect(self._on_rows_inserted)
        self._grown_row = -1

    def chat_model(self) -> ChatModel:
        model = self.model()
        assert isinstance(model, ChatModel)
        return model

    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _on_scrolled(self, _value: int) -> None:
        self._following = self.at_bottom()

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        """Content grew or shrank: stay at the end if the user was there."""
        if self._following:
            self.verticalScrollBar().setValue(maximum)

    def _on_rows_inserted(self, _parent: QModelIndex, _first: int, _last: int) -> None:
        if self._following:
            self.scheduleDelayedItemsLayout()

    def _on_item_grew(self, row: int) -> None:
        """A row changed height: relayout soon (a layout asks every row for its size, so
        growth while streaming is laid out at most every RELAYOUT_INTERVAL_MS)."""
        self._grown_row = row
        if not self._relayout.isActive():
            self._relayout.start()

    def _relayout_grown(self) -> None:
        model = self.model()
        if model is not None and 0 <= self._grown_row < model.rowCount():
            self._delegate.sizeHintChanged.emit(model.index(self._grown_row, 0))

    def scrollToBottom(self) -> None:
        self._following = True
        super().scrollToBottom()

    def resizeEvent(self, event: QEvent) -> None:
        super().resizeEvent(event)
        self.scheduleDelayedItemsLayout()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        index = self.indexAt(event.position().toPoint())
        if index.isValid() and event.button() == Qt.MouseButton.LeftButton:
            item = index.data(ITEM_ROLE)
            if isinstance(item, MessageItem):
                href = self._delegate.anchor_at(item, QRectF(self.visualRect(index)),
                                                event.position())
                if href:
                    self.link_activated.emit(QUrl(href))
            elif isinstance(item, ToolCardItem):
                self.tool_card_activated.emit(item.call_id)
        super().mouseReleaseEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        index = self.indexAt(event.position().toPoint())
        item = index.data(ITEM_ROLE) if index.isValid() else None
        over_link = isinstance(item, MessageItem) and bool(
            self._delegate.anchor_at(item, QRectF(self.visualRect(index)), event.position()))
        pointing = over_link or isinstance(item, ToolCardItem)
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if pointing
                                  else Qt.CursorShape.ArrowCursor)
        super().mouseMoveEvent(event)

    def _on_activated(self, index: QModelIndex) -> None:
        item = index.data(ITEM_ROLE)
        if isinstance(item, ToolCardItem):
            self.tool_card_activated.emit(item.call_id)

    def _open_link(self, url: QUrl) -> None:
        if self.open_links_in_browser and url.scheme().lower() in OPENABLE_SCHEMES:
            QDesktopServices.openUrl(url)

    def _context_menu(self, pos: object) -> None:
        index = self.indexAt(pos)
        if not index.isValid():
            return
        item = index.data(ITEM_ROLE)
        menu = QMenu(self)
        menu.setAccessibleName("Message actions")
        copy = menu.addAction("Copy text")
        text = item.text if isinstance(item, MessageItem) else index.data()
        copy.triggered.connect(lambda: QGuiApplication.clipboard().setText(text))
        menu.popup(self.viewport().mapToGlobal(pos))

    def scroll_to_card(self, call_id: str) -> bool:
        row = self.chat_model().card_row(call_id)
        if row is None:
            return False
        index = self.model().index(row, 0)
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        self.setCurrentIndex(index)
        return True
