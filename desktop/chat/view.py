"""The chat view: a list view whose delegate paints each message's documents, and what a
person does with it: select text with the mouse and copy it, copy a code block or a whole
message, scroll a wide code block sideways, expand a tool card, find (Ctrl+F), follow the end.

A list view with a delegate (not a widget per message) keeps 500+ message sessions smooth.
Links in messages never navigate the view: a click on one emits `link_activated`, and only
http(s) and mailto links are handed to the system browser.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QPointF, QRectF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPixmapCache,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QAbstractItemView, QListView, QMenu, QWidget

from desktop.chat import activity
from desktop.chat.activity import ActivityIndicator
from desktop.chat.approvals import ApprovalCards
from desktop.chat.attach import image_bytes, local_files
from desktop.chat.delegate import ChatDelegate
from desktop.chat.documents import CodeDocument, SafeDocument, is_dark
from desktop.chat.find import FindBar, Match, find_matches
from desktop.chat.geometry import (
    PieceBox,
    actions_box,
    card_box,
    content_width,
    message_frame,
    message_pieces,
    piece_at,
    scroll_for,
)
from desktop.chat.model import (
    ChatItem,
    ChatModel,
    MessageItem,
    Role,
    ToolCardItem,
    message_text,
    turn_model,
    turn_text,
)
from desktop.chat.overlays import EmptyState, JumpButton, message_actions, turn_actions
from desktop.chat.selection import TextSelection, point_at, selected_text, word_at
from kernel.shared.model_names import friendly_name

RELAYOUT_INTERVAL_MS = 100
LAYOUT_BATCH = 50
PIXMAP_CACHE_KB = 48 * 1024
"""Room for the rendered messages of a few screens (Qt's default is 10 MB)."""
OPENABLE_SCHEMES = frozenset({"http", "https", "mailto"})
COPIED_MS = 1500
WHEEL_STEP = 48.0
FIND_WIDTH = 380


class ChatView(QListView):
    """Shows a ChatModel; follows the end while the user is at the bottom."""

    link_activated = Signal(QUrl)
    tool_card_activated = Signal(str)
    open_output = Signal(str)
    """A tool card's "Open full output": the path of the output kept on disk."""
    edit_requested = Signal()
    """"Edit message" on the last message the user sent."""
    regenerate_requested = Signal()
    """"Regenerate answer" on the answer to the last message."""
    files_dropped = Signal(list)
    """Local files dropped on the chat: to attach to the prompt."""
    image_dropped = Signal(bytes)
    undo_requested = Signal(str)
    """A call's Undo on its line: undo the changes it made (its step)."""
    restore_requested = Signal(int)
    """An earlier answer to the last message chosen (‹ ›): continue from it (the number of
    the messages_superseded event keeping it, `RestoreVersion`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.approval_cards = ApprovalCards(self)
        # The overlays are the view's children, not the viewport's (NoFrame: the same
        # corner); the first viewport() call costs ~10 ms the first paint need not pay.
        self.empty_state = EmptyState(self)
        self.jump = JumpButton(self)
        self.jump.clicked.connect(self.scrollToBottom)
        self.turn_actions = turn_actions(self)
        copy, retry = self.turn_actions.buttons
        copy.clicked.connect(self._copy_turn)
        retry.clicked.connect(self.regenerate_requested)
        self.turn_actions.version_step.connect(self._step_version)
        self.message_actions = message_actions(self)
        copy, edit = self.message_actions.buttons
        copy.clicked.connect(self._copy_message)
        edit.clicked.connect(self.edit_requested)
        self._hover_row = -1
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
        self.setAcceptDrops(True)
        QPixmapCache.setCacheLimit(max(QPixmapCache.cacheLimit(), PIXMAP_CACHE_KB))
        self._selection: TextSelection | None = None
        self._selecting = False
        self._dragging_bar: PieceBox | None = None
        self._skip_release = False
        self._copied: tuple[int, float] = (-1, 0.0)
        self._matches: list[Match] = []
        self._match = 0
        self._delegate = ChatDelegate(self, self)
        self.setItemDelegate(self._delegate)
        self.open_links_in_browser = True
        self.link_activated.connect(self._open_link)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._context_menu)
        self.activity = ActivityIndicator(self)
        self.setViewportMargins(0, 0, 0, activity.HEIGHT)

        self.find_bar = FindBar(self)
        self.find_bar.search.connect(self.find_text)
        self.find_bar.step.connect(self.step_match)
        self.find_bar.closed.connect(self.close_find)
        self._following = True
        self._grown_row = -1
        self._relayout = QTimer(self)
        self._relayout.setSingleShot(True)
        self._relayout.setInterval(RELAYOUT_INTERVAL_MS)
        self._relayout.timeout.connect(self._relayout_grown)
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    # -- the model ---------------------------------------------------------------------------
    def setModel(self, model: ChatModel) -> None:  # type: ignore[override]
        """Show another session's chat (the previous model keeps streaming unseen)."""
        previous = self.model()
        if isinstance(previous, ChatModel):
            previous.item_grew.disconnect(self._on_item_grew)
            previous.rowsInserted.disconnect(self._on_rows_inserted)
            previous.rowsRemoved.disconnect(self._refresh_overlays)
            previous.modelReset.disconnect(self._refresh_overlays)
            previous.versions_changed.disconnect(self._refresh_overlays)
            previous.activity_changed.disconnect(self.activity.show_activity)
        self.approval_cards.clear()
        super().setModel(model)
        if model.dark != is_dark():  # rendered before the palette changed, while unseen
            model.restyle()
        model.item_grew.connect(self._on_item_grew)
        model.rowsInserted.connect(self._on_rows_inserted)
        model.rowsRemoved.connect(self._refresh_overlays)
        model.modelReset.connect(self._refresh_overlays)
        model.versions_changed.connect(self._refresh_overlays)
        model.activity_changed.connect(self.activity.show_activity)
        self.activity.show_activity(model.activity)
        self._grown_row = -1
        self._hover_row = -1
        self._selection = None
        self._matches = []
        self._refresh_overlays()

    def chat_model(self) -> ChatModel:
        model = self.model()
        assert isinstance(model, ChatModel)
        return model

    # -- what the delegate asks (RowState) -------------------------------------------------------
    def selection_in(self, row: int) -> TextSelection | None:
        selection = self._selection
        return selection if selection is not None and selection.row == row else None

    def copied(self, doc: SafeDocument) -> bool:
        serial, until = self._copied
        return serial == doc.serial and time.monotonic() < until

    def approval_height(self, item: ToolCardItem, width: float) -> float:
        return self.approval_cards.height(item, width)

    # -- the approval cards follow their rows ------------------------------------------------
    def updateGeometries(self) -> None:
        super().updateGeometries()
        self.approval_cards.place()
        self._place_actions()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self.approval_cards.place()
        self._place_actions()

    # -- following the end ---------------------------------------------------------------------
    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _on_scrolled(self, _value: int) -> None:
        self._following = self.at_bottom()
        self._refresh_overlays()

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        """Content grew or shrank: stay at the end if the user was there."""
        if self._following:
            self.verticalScrollBar().setValue(maximum)
        self._refresh_overlays()

    def _on_rows_inserted(self, _parent: QModelIndex, _first: int, _last: int) -> None:
        if self._following:
            self.scheduleDelayedItemsLayout()
        if self.empty_state.isVisible():
            self._refresh_overlays()

    # -- what floats on the conversation -----------------------------------------------------
    def _refresh_overlays(self) -> None:
        """The empty state while there is nothing, the jump button while the end is out of
        sight, the actions of the turn under the pointer (else of the last one)."""
        model = self.model()
        rows = model.rowCount() if model is not None else 0
        width, height = self.width(), self.height() - activity.HEIGHT
        self.empty_state.setVisible(rows == 0)
        if rows == 0:
            self.empty_state.setGeometry(24, 0, max(0, width - 48), height)
        self.jump.setVisible(rows > 0 and not self.at_bottom())
        self.jump.move((width - self.jump.width()) // 2, height - self.jump.height() - 12)
        if rows:
            self.jump.raise_()
            self._place_actions()

    def _actions_row(self) -> int:
        """The turn whose actions show: the one under the pointer, else the last one."""
        model = self.model()
        if not isinstance(model, ChatModel) or model.rowCount() == 0:
            return -1
        for row in (self._hover_row, model.rowCount() - 1):
            if 0 <= row < model.rowCount() and model.item(row).ends_turn:
                return row
        return -1

    def _place_actions(self) -> None:
        self._place_message_actions()
        row = self._actions_row()
        actions = self.turn_actions
        actions.row = row
        if row < 0:
            actions.hide()
            return
        model = self.chat_model()
        rect = QRectF(self.visualRect(model.index(row, 0)))
        box = actions_box(model.item(row), rect)
        actions.buttons[1].setVisible(row == model.rowCount() - 1 and not model.browsing()
                                      and model.last_user_row() is not None)
        found = model.version_group(row)
        if found is None:
            actions.set_versions(None)
        else:
            group = found[1]
            note = (f"For reading: the chat goes on from {group.live + 1}/"
                    f"{len(group.branches)}" if model.reading(group) else "")
            actions.set_versions((group.shown + 1, len(group.branches)), note,
                                 locked=not model.can_browse())
        actions.set_model(friendly_name(turn_model(model.items(), row)))
        actions.setGeometry(box.toRect())
        actions.setVisible(rect.isValid() and self.viewport().rect().intersects(box.toRect()))

    def _place_message_actions(self) -> None:
        """The pointer over one of the user's messages: its Copy (and Edit, the last one's)
        on the left of its bubble, at its foot."""
        actions = self.message_actions
        model = self.model()
        row = self._hover_row
        item = (model.item(row) if isinstance(model, ChatModel) and 0 <= row < model.rowCount()
                else None)
        if not isinstance(model, ChatModel) or not isinstance(item, MessageItem) \
                or item.role is not Role.USER:
            actions.row = -1
            actions.hide()
            return
        actions.row = row
        actions.buttons[1].setVisible(row == model.last_user_row())
        frame = message_frame(item, QRectF(self.visualRect(model.index(row, 0))))
        size = actions.sizeHint()
        actions.setGeometry(int(frame.left()) - size.width() - 6,
                            int(frame.bottom()) - size.height(), size.width(), size.height())
        actions.show()

    def _step_version(self, step: int) -> None:
        """‹ or › on a turn's versions: show the other version in place; an earlier answer
        to the last message becomes the one the conversation goes on from (the kernel is
        asked; its event makes it so, also after a restart)."""
        model = self.chat_model()
        row = self.turn_actions.row
        found = model.version_group(row) if row >= 0 else None
        if found is None:
            return
        anchor, group = found
        index = group.shown + step
        if not 0 <= index < len(group.branches):
            return
        ordinal = model.choose_version(anchor, index)
        if ordinal >= 0:
            self.restore_requested.emit(ordinal)
        self._place_actions()

    def _copy_turn(self) -> None:
        text = turn_text(self.chat_model().items(), self.turn_actions.row)
        if text:
            QGuiApplication.clipboard().setText(text)

    def _copy_message(self) -> None:
        row = self.message_actions.row
        if 0 <= row < self.chat_model().rowCount():
            QGuiApplication.clipboard().setText(message_text(self.chat_model().item(row)))

    def leaveEvent(self, event: QEvent) -> None:
        super().leaveEvent(event)
        if self.message_actions.underMouse():
            return  # (the pointer went onto the actions themselves)
        if self._hover_row != -1:
            self._hover_row = -1
            self._place_actions()

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

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.empty_state.restyle()
            self.jump.restyle()
            self.turn_actions.restyle()
            self.message_actions.restyle()
            for card in self.approval_cards.cards.values():
                card.restyle()
        model = self.model()
        if (event.type() == QEvent.Type.PaletteChange and isinstance(model, ChatModel)
                and model.dark != is_dark()):
            model.restyle()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.scheduleDelayedItemsLayout()
        self.activity.setGeometry(0, self.height() - activity.HEIGHT, self.width(),
                                  activity.HEIGHT)
        self._refresh_overlays()
        if self.find_bar.isVisible():
            self._place_find_bar()

    def _place_find_bar(self) -> None:
        """At the viewport's top right. Placed only while shown: the first call of
        viewport() makes PySide6 resolve the Python types of most widget classes (about
        10 ms), which the window's first paint need not wait for."""
        width = min(FIND_WIDTH, self.viewport().width() - 16)
        self.find_bar.setGeometry(self.viewport().width() - width - 8, 6, width,
                                  self.find_bar.sizeHint().height())

    # -- where the pointer is ------------------------------------------------------------------
    def _row_at(self, pos: QPointF) -> tuple[int, ChatItem, QRectF] | None:
        index = self.indexAt(pos.toPoint())
        if not index.isValid():
            return None
        return index.row(), self.chat_model().item(index.row()), QRectF(self.visualRect(index))

    def _pieces(self, row: int) -> list[PieceBox]:
        item = self.chat_model().item(row)
        if not isinstance(item, MessageItem):
            return []
        return message_pieces(item, QRectF(self.visualRect(self.model().index(row, 0))))

    def anchor_at(self, pos: QPointF) -> str:
        """The link under a point of the view, if any."""
        hit = self._row_at(pos)
        if hit is None or not isinstance(hit[1], MessageItem):
            return ""
        piece = piece_at(self._pieces(hit[0]), pos)
        if piece is None or not piece.clip.contains(pos):
            return ""
        return piece.doc.documentLayout().anchorAt(piece.local(pos))

    # -- mouse -----------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        hit = self._row_at(pos)
        if event.button() == Qt.MouseButton.LeftButton:
            self._selecting = False
            if hit is not None and isinstance(hit[1], MessageItem):
                row = hit[0]
                pieces = self._pieces(row)
                piece = piece_at(pieces, pos)
                if piece is not None and piece.copy is not None and piece.copy.contains(pos):
                    self.copy_code(piece.doc)
                    return
                if piece is not None and piece.bar is not None and piece.bar.contains(pos):
                    self._dragging_bar = piece
                    self._scroll_bar_to(piece, pos)
                    return
                point = point_at(pieces, pos)
                shift = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
                current = self._selection
                if shift and current is not None and current.row == row:
                    self._selection = TextSelection(row, current.anchor, point)
                else:
                    self._selection = TextSelection(row, point, point)
                self._selecting = True
            else:
                self._selection = None
            self.viewport().update()
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if self._dragging_bar is not None:
            self._scroll_bar_to(self._dragging_bar, pos)
            return
        if self._selecting and self._selection is not None:
            row = self._selection.row
            self._selection = TextSelection(row, self._selection.anchor,
                                            point_at(self._pieces(row), pos))
            self.viewport().update()
            return
        self.viewport().setCursor(self._cursor_shape(pos))
        index = self.indexAt(pos.toPoint())
        row = index.row() if index.isValid() else -1
        if row != self._hover_row:
            self._hover_row = row
            self._place_actions()
        super().mouseMoveEvent(event)

    def _cursor_shape(self, pos: QPointF) -> Qt.CursorShape:
        hit = self._row_at(pos)
        if hit is None:
            return Qt.CursorShape.ArrowCursor
        row, item, _rect = hit
        if isinstance(item, ToolCardItem):
            return Qt.CursorShape.PointingHandCursor
        piece = piece_at(self._pieces(row), pos)
        if piece is None:
            return Qt.CursorShape.ArrowCursor
        if (piece.copy is not None and piece.copy.contains(pos)) or self.anchor_at(pos):
            return Qt.CursorShape.PointingHandCursor
        return Qt.CursorShape.IBeamCursor

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        self._dragging_bar = None
        was_selecting, self._selecting = self._selecting, False
        if event.button() == Qt.MouseButton.LeftButton and not self._skip_release:
            if was_selecting and self._selection is not None and self._selection.empty:
                self._selection = None
                href = self.anchor_at(pos)
                if href:
                    self.link_activated.emit(QUrl(href))
            hit = self._row_at(pos)
            if hit is not None and isinstance(hit[1], ToolCardItem):
                self._click_card(hit[0], hit[1], hit[2], pos)
        self._skip_release = False
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        """A double click selects a word of a message; on a card it does not fold it back."""
        pos = event.position()
        hit = self._row_at(pos)
        self._skip_release = True
        if hit is not None and isinstance(hit[1], MessageItem):
            piece = piece_at(self._pieces(hit[0]), pos)
            if piece is not None:
                index, position = point_at([piece], pos)
                start, end = word_at(piece.doc, position)
                self._selection = TextSelection(hit[0], (index, start), (index, end))
                self.viewport().update()

    def _click_card(self, row: int, card: ToolCardItem, rect: QRectF, pos: QPointF) -> None:
        geometry = card_box(card, rect)
        if geometry.undo is not None and geometry.undo.contains(pos):
            self.undo_requested.emit(card.call_id)
            return
        if geometry.open_output is not None and geometry.open_output.contains(pos):
            if card.output_path:
                self.open_output.emit(card.output_path)
            return
        if geometry.header.contains(pos):
            self.chat_model().toggle_card(row)
            self.tool_card_activated.emit(card.call_id)

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Sideways wheel (or Shift+wheel) over a wide code block scrolls the block."""
        pos = event.position()
        delta = event.angleDelta()
        sideways = delta.x() or (delta.y() if event.modifiers()
                                 & Qt.KeyboardModifier.ShiftModifier else 0)
        hit = self._row_at(pos)
        if sideways and hit is not None and isinstance(hit[1], MessageItem):
            piece = piece_at(self._pieces(hit[0]), pos)
            if piece is not None and isinstance(piece.doc, CodeDocument) and piece.bar:
                piece.doc.scroll_x -= sideways / 120 * WHEEL_STEP
                piece.doc.clamp_scroll(piece.clip.width())
                self.viewport().update()
                event.accept()
                return
        super().wheelEvent(event)

    def _scroll_bar_to(self, piece: PieceBox, pos: QPointF) -> None:
        doc = piece.doc
        assert isinstance(doc, CodeDocument) and piece.bar is not None
        doc.scroll_x = scroll_for(piece, pos.x())
        self.viewport().update()

    # -- keys, copying, links, menu ---------------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_selection()
            return
        if event.matches(QKeySequence.StandardKey.Find):
            self.open_find()
            return
        if event.modifiers() == Qt.KeyboardModifier.AltModifier and \
                event.key() in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            self._step_version(-1 if event.key() == Qt.Key.Key_Left else 1)
            return
        index = self.currentIndex()
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space) and \
                index.isValid():
            card = self.chat_model().item(index.row())
            if isinstance(card, ToolCardItem):
                self.chat_model().toggle_card(index.row())
                self.tool_card_activated.emit(card.call_id)
                return
        super().keyPressEvent(event)

    def selected_text(self) -> str:
        selection = self._selection
        if selection is None or selection.empty:
            return ""
        item = self.chat_model().item(selection.row)
        if not isinstance(item, MessageItem):
            return ""
        return selected_text(item.documents(), selection)

    def copy_selection(self) -> None:
        """Ctrl+C: the selected text, or the current message when nothing is selected."""
        text = self.selected_text()
        if not text and self.currentIndex().isValid():
            text = message_text(self.chat_model().item(self.currentIndex().row()))
        if text:
            QGuiApplication.clipboard().setText(text)

    def copy_code(self, doc: SafeDocument) -> None:
        assert isinstance(doc, CodeDocument)
        QGuiApplication.clipboard().setText(doc.code())
        self._copied = (doc.serial, time.monotonic() + COPIED_MS / 1000)
        self.viewport().update()
        QTimer.singleShot(COPIED_MS + 50, self.viewport().update)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasImage():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        """Files (or an image) dropped on the chat are attached to the prompt."""
        data = event.mimeData()
        paths = local_files(data)
        if paths:
            self.files_dropped.emit(paths)
        elif data.hasImage():
            self.image_dropped.emit(image_bytes(data.imageData()))
        else:
            return
        event.acceptProposedAction()

    def _open_link(self, url: QUrl) -> None:
        if self.open_links_in_browser and url.scheme().lower() in OPENABLE_SCHEMES:
            QDesktopServices.openUrl(url)

    def _context_menu(self, pos: QPoint) -> None:
        point = QPointF(pos)
        hit = self._row_at(point)
        if hit is None:
            return
        row, item, _rect = hit
        menu = QMenu(self)
        menu.setAccessibleName("Message actions")
        selection = self.selected_text()
        clipboard = QGuiApplication.clipboard()
        if selection:
            menu.addAction("Copy").triggered.connect(lambda: clipboard.setText(selection))
        whole = message_text(item)
        menu.addAction("Copy message").triggered.connect(lambda: clipboard.setText(whole))
        piece = piece_at(self._pieces(row), point) if isinstance(item, MessageItem) else None
        if piece is not None and isinstance(piece.doc, CodeDocument):
            doc = piece.doc
            menu.addAction("Copy code").triggered.connect(lambda: self.copy_code(doc))
        last_user = self.chat_model().last_user_row()
        if isinstance(item, MessageItem) and last_user is not None:
            if row == last_user:
                menu.addAction("Edit message…").triggered.connect(self.edit_requested)
            elif row > last_user and item.role is Role.ASSISTANT:
                menu.addAction("Regenerate answer").triggered.connect(
                    self.regenerate_requested)
        if isinstance(item, ToolCardItem):
            menu.addAction("Fold details" if item.expanded else "Show details").triggered \
                .connect(lambda: self.chat_model().toggle_card(row))
            if item.output_path:
                path = item.output_path
                menu.addAction("Open full output").triggered.connect(
                    lambda: self.open_output.emit(path))
        menu.popup(self.viewport().mapToGlobal(pos))

    def scroll_to_card(self, call_id: str) -> bool:
        row = self.chat_model().card_row(call_id)
        if row is None:
            return False
        index = self.model().index(row, 0)
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        self.setCurrentIndex(index)
        return True

    # -- find ------------------------------------------------------------------------------------
    def open_find(self) -> None:
        self._place_find_bar()
        self.find_bar.open()

    def close_find(self) -> None:
        self.find_bar.hide()
        self._matches = []
        self._selection = None
        self.viewport().update()
        self.setFocus()

    def find_text(self, text: str) -> None:
        width = content_width(self.viewport().width())
        self._matches = find_matches(self.chat_model().items(), text, width)
        self._match = 0
        self._show_match()

    def step_match(self, delta: int) -> None:
        if self._matches:
            self._match = (self._match + delta) % len(self._matches)
            self._show_match()

    def matches(self) -> list[Match]:
        return list(self._matches)

    def _show_match(self) -> None:
        self.find_bar.show_count(self._match, len(self._matches))
        if not self._matches:
            self._selection = None
            self.viewport().update()
            return
        match = self._matches[self._match]
        self._selection = TextSelection(match.row, (match.piece, match.start),
                                        (match.piece, match.end))
        self._following = False
        self.executeDelayedItemsLayout()
        index = self.model().index(match.row, 0)
        self.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
        pieces = self._pieces(match.row)
        if match.piece < len(pieces):
            piece = pieces[match.piece]
            block = piece.doc.findBlock(match.start)
            top = piece.origin.y() + piece.doc.documentLayout().blockBoundingRect(block).top()
            line = block.layout().lineForTextPosition(match.start - block.position())
            if line.isValid():
                top += line.y()
            if not 0 <= top < self.viewport().height() - 30:
                bar = self.verticalScrollBar()
                bar.setValue(int(bar.value() + top - self.viewport().height() / 3))
        self.viewport().update()
