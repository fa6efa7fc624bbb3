"""The approval cards of the chat shown: real widgets on the view's viewport, each under its
call's line, placed again whenever the rows move (layout, scrolling, resizing).

The chord the cards name (ALLOW_ONCE_KEYS) is a window shortcut owned here, so it works
wherever the focus is in the window — the prompt above all — and answers the oldest
pending card, only if it is on screen (else it is scrolled into view, and its half-second
guard starts again). Once one card is answered, the others start their guard again: the
next request is a new question, a chord held or pressed on answers only one. While the
approval dialog shows (the window was not in front), its own chord is the live one and
this one stands aside (two live shortcuts on one chord would both be dead).

Widgets and the approval modules are made only when the first card is: the window's first
paint needs none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QRect, QRectF, Signal

from desktop.chat.geometry import approval_top, content_width, row_box
from desktop.chat.model import ChatModel, ToolCardItem

if TYPE_CHECKING:
    from PySide6.QtGui import QShortcut
    from PySide6.QtWidgets import QListView

    from desktop.approval.card import ApprovalCard
    from kernel.events import ApprovalRequest

CARD_GAP = 6.0
"""Between a call's line and its approval card."""


class ApprovalCards(QObject):
    decided = Signal(object, str, str, bool)
    """(ApprovalRequest, choice, message to the model, destructive call confirmed)."""

    def __init__(self, view: QListView) -> None:
        super().__init__(view)
        self._view = view
        self.cards: dict[str, ApprovalCard] = {}
        self._shortcut: QShortcut | None = None
        self._dialog_showing = False

    def _model(self) -> ChatModel | None:
        model = self._view.model()
        return model if isinstance(model, ChatModel) else None

    def height(self, item: ToolCardItem, width: float) -> float:
        """The room a call's approval card takes under its line (0 without one)."""
        if item.approval is None:
            return 0.0
        card = self._card(item)
        return card.heightForWidth(int(width)) + CARD_GAP if card.hasHeightForWidth() \
            else card.sizeHint().height() + CARD_GAP

    def _card(self, item: ToolCardItem) -> ApprovalCard:
        request = item.approval
        assert request is not None
        card = self.cards.get(item.call_id)
        if card is not None and card.request is request:
            return card
        if card is not None:
            card.deleteLater()
        from desktop.approval.card import ApprovalCard

        card = ApprovalCard(request, self._view.viewport())
        card.decided.connect(lambda choice, message, confirmed, request=request:
                             self.decided.emit(request, choice, message, confirmed))
        self.cards[item.call_id] = card
        self._ensure_shortcut()
        return card

    def clear(self) -> None:
        """Another chat is shown: its cards are made anew when its rows are laid out."""
        for card in self.cards.values():
            card.hide()
            card.deleteLater()
        self.cards.clear()
        self._enable()

    def place(self) -> None:
        """Put each pending card under its call's line; drop the cards answered."""
        model = self._model()
        if model is None:
            return
        pending = {item.call_id: item for item in model.approvals()}
        if not pending and not self.cards:
            return
        for call_id in [c for c in self.cards if c not in pending]:
            self.cards.pop(call_id).deleteLater()
        width = content_width(self._view.viewport().width())
        for call_id, item in pending.items():
            row = model.card_row(call_id)
            if row is None:
                continue
            card = self._card(item)
            rect = self._view.visualRect(model.index(row, 0))
            if not rect.isValid():
                card.hide()
                continue
            box = row_box(QRectF(rect))
            top = approval_top(item, QRectF(rect), width) + CARD_GAP
            height = int(self.height(item, box.width()) - CARD_GAP)
            card.setGeometry(QRect(int(box.left()), int(top), int(box.width()), height))
            if card.isHidden():
                card.show()
        self._enable()

    def rearm(self) -> None:
        """A card was answered: every other one is a new question again."""
        for card in self.cards.values():
            card.rearm()

    def set_dialog_showing(self, showing: bool) -> None:
        self._dialog_showing = showing
        self._enable()

    def _ensure_shortcut(self) -> None:
        if self._shortcut is not None:
            return
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QKeySequence, QShortcut

        from desktop.approval.deliberate import ALLOW_ONCE_KEYS

        self._shortcut = QShortcut(QKeySequence(ALLOW_ONCE_KEYS), self._view)
        self._shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        self._shortcut.setAutoRepeat(False)
        self._shortcut.activated.connect(self.chord)
        self._enable()

    def _enable(self) -> None:
        if self._shortcut is not None:
            self._shortcut.setEnabled(bool(self.cards) and not self._dialog_showing)

    def first(self) -> ApprovalCard | None:
        """The oldest pending card of the chat shown."""
        model = self._model()
        for item in model.approvals() if model is not None else []:
            card = self.cards.get(item.call_id)
            if card is not None:
                return card
        return None

    def chord(self) -> bool:
        """ALLOW_ONCE_KEYS: the oldest card's first choice, if it is on screen and armed;
        one out of sight is scrolled to instead (and answers nothing yet)."""
        card = self.first()
        if card is None:
            return False
        if not self.on_screen(card):
            self.reveal(card.request)
            return False
        return card.decide(card.primary)

    def on_screen(self, card: ApprovalCard) -> bool:
        viewport = self._view.viewport().rect()
        return card.isVisible() and viewport.contains(card.geometry().topLeft()) and \
            card.geometry().bottom() <= viewport.bottom() + 1

    def reveal(self, request: ApprovalRequest) -> bool:
        """Scroll the chat to a request's card (its guard starts again); False if this chat
        has no card for it."""
        from PySide6.QtWidgets import QAbstractItemView

        model = self._model()
        row = model.card_row(request.call_id) if model is not None else None
        if model is None or row is None:
            return False
        item = model.item(row)
        if not isinstance(item, ToolCardItem) or item.approval is None:
            return False
        self._view.scrollTo(model.index(row, 0),
                            QAbstractItemView.ScrollHint.EnsureVisible)
        self.place()
        card = self.cards.get(request.call_id)
        if card is None:
            return False
        bar = self._view.verticalScrollBar()
        overflow = card.geometry().bottom() - self._view.viewport().height() + 12
        if overflow > 0:
            bar.setValue(bar.value() + overflow)
            self.place()
        card.rearm()
        return True
