"""The chat's items (messages, tool cards, notices) as a Qt list model.

Each message owns its documents; a streaming message is a list of finished segments plus
an unfinished tail, and only the tail is re-rendered — at most ~30 times a second, however
fast deltas arrive. A code block being written grows in place instead, and a long paragraph
is frozen in pieces (`split_stable`), so a render stays small however long the answer. The
model also says what the run is doing (`Activity`) for the chat's activity line.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QTextCursor

from desktop.chat.attach import attached_line
from desktop.chat.documents import CodeDocument, SafeDocument, is_dark, plain_document
from desktop.chat.versions import Branch, VersionGroup, hidden_items, nested
from desktop.words import STATUS_WORDS
from kernel.visible import one_line, visible

# desktop.chat.markdown and desktop.chat.card are imported where a message is first
# rendered or a card first expanded: the first window shows an empty chat, and loading them
# (with the Qt classes they use) would only delay its first paint.

if TYPE_CHECKING:
    from kernel.events import ApprovalRequest, CallStatus

ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
BUBBLE_SHARE = 0.8
"""The widest a message of the user's gets: this share of the column (a bubble on the
right, the answers' prose on the page below it)."""
BUBBLE_PAD = 14.0
"""The room inside a bubble (or an error's box) on each side of its text."""
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
    at: float | None = None
    """When it was sent or received (Unix time; for stored history, when it was stored)."""
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """A user message's attachments (their user_message summaries), named under its text."""
    edited: bool = False
    """A user message that replaced the one sent before it (Edit message)."""
    pictures: tuple[Hashable, ...] = ()
    """A user message's attached images, by their pictures' keys (desktop.chat.thumbs),
    shown above its text."""
    segments: list[SafeDocument] = field(default_factory=list)
    rendered_upto: int = 0
    tail: list[SafeDocument] = field(default_factory=list)
    tail_text: str = ""
    """The text the tail was rendered from."""
    width: float = -1.0
    renders: int = 0
    """How many times a piece of this message was (re)built; tests read it."""
    cached_height: float | None = None
    ends_turn: bool = False
    """The last row of an agent turn: the room for its actions and the gap to the next."""
    model: str = ""
    """The model of the run that wrote it (its `session_started`; "" for the user's)."""

    @property
    def boxed(self) -> bool:
        """Drawn in a box of its own (the user's bubble, an error) rather than on the page."""
        return self.role in (Role.USER, Role.ERROR)

    def text_width(self, column: float) -> float:
        """How wide its text is laid out in a column this wide."""
        if self.role is Role.USER:
            return max(60.0, column * BUBBLE_SHARE - 2 * BUBBLE_PAD)
        return max(60.0, column - 2 * BUBBLE_PAD) if self.boxed else column

    def documents(self) -> list[SafeDocument]:
        return [*self.segments, *self.tail]

    def layout(self, width: float) -> None:
        if width == self.width and (self.segments or self.tail):
            return
        self.width = width
        self.cached_height = None
        if not self.segments and not self.tail:
            self.render_tail() if self.streaming else self.render_all()
            return
        for doc in self.documents():
            doc.fit(self.text_width(width))

    def render_all(self) -> None:
        """The pieces of the whole (finished or user) message, rendered once."""
        from desktop.chat.markdown import render_markdown

        width = max(self.text_width(self.width), 50.0)
        self.segments = ([plain_document(self.text, width)] if self.role is Role.USER
                         else render_markdown(self.text, width))
        named = [a for a in self.attachments if not self.pictures or a.get("kind") != "image"]
        below = [attached_line(named)] if named else []  # (pictures show the images)
        if self.edited:
            below.append("edited")
        if below:
            self.segments.append(plain_document(" · ".join(below), width))
        self.rendered_upto = len(self.text)
        self.tail = []
        self.renders += 1
        self.cached_height = None

    def render_tail(self, *, final: bool = False) -> None:
        """Freeze what can no longer change into segments; re-render only the rest (its code
        uncoloured until `final`)."""
        from desktop.chat.markdown import render_markdown, split_stable

        width = max(self.text_width(self.width), 50.0)
        cut = split_stable(self.text)
        if cut > self.rendered_upto:
            frozen = render_markdown(self.text[self.rendered_upto:cut], width)
            frozen[0].join(above=_line_cut(self.text, self.rendered_upto))
            frozen[-1].join(below=_line_cut(self.text, cut))
            self.segments.extend(frozen)
            self.rendered_upto = cut
            self.renders += 1
        rest = self.text[self.rendered_upto:]
        if final or not self._grow_code_tail(rest):
            self.tail = render_markdown(rest, width, highlight=final) if rest else []
            if self.tail:
                self.tail[0].join(above=_line_cut(self.text, self.rendered_upto))
            self.renders += 1
        self.tail_text = rest
        self.cached_height = None

    def _grow_code_tail(self, rest: str) -> bool:
        """A code block still being written only grows: append the new code to its
        document instead of rebuilding it (a long block would cost more each time)."""
        if len(self.tail) != 1 or not rest.startswith(self.tail_text):
            return False
        from desktop.chat.markdown import open_fence

        doc = self.tail[0]
        opened = open_fence(rest)
        if not isinstance(doc, CodeDocument) or opened is None:
            return False
        info, code = opened
        shown, new = doc.code(), visible(code)
        if one_line(info.strip()) != doc.language or not new.startswith(shown):
            return False
        cursor = QTextCursor(doc)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(new[len(shown):])
        return True

    def seal(self) -> None:
        """The stream ended: render what is left of the tail once, keep every segment."""
        self.render_tail(final=True)
        self.segments.extend(self.tail)
        self.tail = []

    def height(self) -> float:
        """The laid-out height of the message's pieces (cached until they change)."""
        if self.cached_height is None:
            self.cached_height = sum(doc.extent(self.width) for doc in self.documents())
        return self.cached_height


@dataclass(eq=False)
class ToolCardItem:
    call_id: str
    name: str
    summary: str = ""
    status: CallStatus = "queued"
    """The kernel's status of the call (its latest event's, `kernel.events.next_status`)."""
    detail: str = ""
    at: float | None = None
    arguments: object = None
    preview: str = ""
    """The start of the result the model got."""
    output_path: str | None = None
    """The full output kept on disk, when there is more than the preview."""
    asked_at: float | None = None
    """When the approval was asked (its wait is not the call's run time)."""
    waited_s: float = 0.0
    ends_turn: bool = False
    """The last row of an agent turn (a run that ended on a call)."""
    changes: str = ""
    """What the call changed in the workspace, in words ("2 files changed, +10 −2")."""
    undo: str = "none"
    """Its step: "none" (nothing changed), "undoable", "undone" or "kept" (for good)."""
    expanded: bool = False
    body: SafeDocument | None = None
    """Arguments and result preview, built when the card is first expanded."""
    approval: ApprovalRequest | None = None
    """The call's pending approval, shown as a card under its line (the view's widget)."""
    model: str = ""
    """The model of the run that made the call."""
    depth: int = 0
    """How deep a step it is: 0 for the model's own call, 1 for a step Reins took for it (a
    composite's step, a fallback), and so on; drawn indented under the call it serves."""

    def body_document(self, width: float) -> SafeDocument:
        if self.body is None:
            from desktop.chat.card import card_document

            self.body = card_document(self.arguments, self.preview, self.output_path)
        self.body.fit(width)
        return self.body


def answered(items: list[ChatItem]) -> bool:
    """Whether rows are an answer the model can go on from: some prose or a call, and
    every call finished (an attempt that only failed, or a call a dead kernel left without
    a result, is only shown)."""
    from kernel.events import FINISHED_STATUSES  # (not before the first paint)

    calls = [item.status for item in items if isinstance(item, ToolCardItem)]
    return all(status in FINISHED_STATUSES for status in calls) and (bool(calls) or any(
        isinstance(item, MessageItem) and item.role is Role.ASSISTANT for item in items))


def _is_prompt(item: ChatItem) -> bool:
    return isinstance(item, MessageItem) and item.role is Role.USER


def _line_cut(text: str, cut: int) -> bool:
    """Whether streaming cut `text` at `cut` inside a paragraph (not at a blank line)."""
    return cut > 0 and bool(text[:cut].rstrip("\n").rsplit("\n", 1)[-1].strip()) and \
        not text[:cut].endswith("\n\n")


ChatItem = MessageItem | ToolCardItem


MAX_DEPTH = 4
"""Steps of steps deeper than this are drawn at this depth (the column stays readable)."""


@dataclass(frozen=True)
class Activity:
    """What the run is doing while no text arrives: thinking, running a tool, waiting."""

    label: str
    since: float


class ChatModel(QAbstractListModel):
    """All items of one session's chat, in order, and what its run is doing now."""

    item_grew = Signal(int)
    """A row's content changed size (streaming); the view relayouts and may follow the end."""
    activity_changed = Signal(object)
    """The run's `Activity` changed, or None: it is idle, or text is arriving."""
    versions_changed = Signal()
    """Which version is live changed with no row added or removed (the one shown became
    the live one): what the turn's actions offer may have changed."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._items: list[ChatItem] = []
        self._cards: dict[str, int] = {}
        self._asking: set[str] = set()
        """The calls whose approval card shows."""
        self._streaming: MessageItem | None = None
        self._streaming_row = -1
        self._dirty = False
        self._edited_next = False
        """The next user message replaces an edited one."""
        self.run_model = ""
        """The model of the run whose events arrive now (its `session_started`)."""
        self._groups: dict[int, VersionGroup] = {}
        """The version groups of the rows shown, by the row they start at."""
        self._ordinals = 0
        """How many messages_superseded events came so far (the next one's ordinal)."""
        self.restoring = -1
        """The version the kernel was asked to continue from (shown meanwhile), or -1."""
        self.activity: Activity | None = None
        self.dark = is_dark()
        """Whether its messages were rendered for a dark palette (code colours differ)."""
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
        if role == Qt.ItemDataRole.ToolTipRole:
            return timestamp_text(item)
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
        self._asking.clear()
        self._groups.clear()
        self._ordinals = 0
        self._streaming = None
        self._timer.stop()
        self.endResetModel()
        self.set_activity(None)

    def _append(self, item: ChatItem) -> None:
        if not isinstance(item, MessageItem) or item.role is not Role.USER:
            item.model = self.run_model
        row = len(self._items)
        self.beginInsertRows(QModelIndex(), row, row)
        self._items.append(item)
        self.endInsertRows()

    def end_turn(self) -> None:
        """The agent's turn is over: its last row gets the room for its actions and the gap
        before the next turn."""
        if not self._items:
            return
        last = self._items[-1]
        if not last.ends_turn and not (isinstance(last, MessageItem) and last.role is Role.USER):
            last.ends_turn = True
            self._changed(len(self._items) - 1, grew=True)

    def add_message(self, role: Role, text: str, at: float | None = None,
                    attachments: list[dict[str, Any]] | None = None,
                    pictures: tuple[Hashable, ...] = ()) -> None:
        self.show_live()
        self.close_stream()
        edited = role is Role.USER and self._edited_next
        if role is Role.USER:
            self._edited_next = False
            self.end_turn()
        self._append(MessageItem(role, text, at=at, attachments=list(attachments or []),
                                 edited=edited, pictures=pictures))

    def last_user_row(self) -> int | None:
        """The row of the last message the user sent (the one that can be edited)."""
        for row in range(len(self._items) - 1, -1, -1):
            item = self._items[row]
            if isinstance(item, MessageItem) and item.role is Role.USER:
                return row
        return None

    def supersede(self, reason: str) -> None:
        """The last prompt was edited (`edit`: it and what followed go) or its answer is
        asked for again (`regenerate`: what followed it goes): the chat shows the current
        branch, and what went is kept as an older version of the rows from the cut on."""
        self.show_live()
        ordinal = self._ordinals
        self._ordinals += 1
        row = self.last_user_row()
        if row is None:
            return
        first = row if reason == "edit" else row + 1
        self._edited_next = reason == "edit"
        self.close_stream()
        if first >= len(self._items):
            return
        kept = Branch(self._items[first:], nested(self._groups, first), ordinal)
        group = self._groups.get(first)
        if group is None:
            self._groups[first] = VersionGroup([kept, Branch()], shown=1, live=1)
        else:
            group.branches[group.live] = kept
            group.branches.append(Branch())
            group.shown = group.live = len(group.branches) - 1
        self._show_rows(first, [])

    def restore(self, restores: int) -> None:
        """The version kept by the `restores`-th messages_superseded event is the live one
        again (`RestoreVersion`): the live one is kept in its place, with this event's
        ordinal. Already shown (chosen with ‹ ›), it only becomes the live one."""
        self.restoring = -1
        ordinal = self._ordinals
        self._ordinals += 1
        shown = next(((a, g) for a, g in self._groups.items()
                      if g.browsing and g.branches[g.shown].ordinal == restores), None)
        if shown is None:
            self.show_live()
            found = self._branch_of(restores)
            if found is None:
                return
            anchor, group, index = found
            self.close_stream()
            self._show(anchor, group, index)
        else:
            group = shown[1]
        group.branches[group.live].ordinal = ordinal
        group.branches[group.shown].ordinal = -1
        group.live = group.shown
        self.show_live()
        self.versions_changed.emit()

    def _branch_of(self, ordinal: int) -> tuple[int, VersionGroup, int] | None:
        """Where the version kept by the `ordinal`-th event is, among the rows shown."""
        for anchor, group in self._groups.items():
            for index, branch in enumerate(group.branches):
                if branch.ordinal == ordinal and index != group.shown:
                    return anchor, group, index
        return None

    def version_group(self, row: int) -> tuple[int, VersionGroup] | None:
        """The version group a turn's row belongs to: the last group starting at or before
        it and after the turn's prompt (an answer's), else the prompt's own (an edit's)."""
        start = row
        while start >= 0 and not _is_prompt(self._items[start]):
            start -= 1
        for anchor in (max((a for a in self._groups if start < a <= row), default=None),
                       start if start >= 0 else None):
            if anchor is not None and anchor in self._groups:
                return anchor, self._groups[anchor]
        return None

    def continuable(self, anchor: int) -> bool:
        """Whether a version of the group at `anchor` can become the live one (the kernel's
        `RestoreVersion`): the versions of the last prompt's answer."""
        row = self.last_user_row()
        return row is not None and anchor == row + 1 and not self.browsing()

    def browsing(self) -> bool:
        """An older version of some turn is shown (the model sees the live ones)."""
        return any(group.browsing for group in self._groups.values())

    def show_version(self, anchor: int, index: int) -> None:
        """Show the `index`-th version of the group at `anchor` in place (only shown: the
        conversation goes on from the live one)."""
        group = self._groups.get(anchor)
        if group is not None and 0 <= index < len(group.branches) and index != group.shown:
            self.close_stream()
            self._show(anchor, group, index)

    def choose_version(self, anchor: int, index: int) -> int:
        """A person chose the `index`-th version of the group at `anchor` (‹ ›): it is shown
        in place; an earlier answer to the last message is also to become the live one: the
        ordinal to ask the kernel for (`RestoreVersion`), else -1."""
        group = self._groups.get(anchor)
        if group is None or not 0 <= index < len(group.branches) or self._asking:
            return -1
        chosen = group.branches[index]
        ordinal = chosen.ordinal if self.continuable(anchor) and answered(chosen.items) else -1
        self.show_version(anchor, index)
        self.restoring = ordinal
        return ordinal

    def can_browse(self) -> bool:
        """Whether other versions may be shown: not while an approval waits (its card is in
        the live version, and stays in sight until it is answered)."""
        return not self._asking

    def reading(self, group: VersionGroup) -> bool:
        """An older version of `group` is shown only to be read (the conversation goes on
        from another; none asked for)."""
        return group.browsing and group.branches[group.shown].ordinal != self.restoring

    def show_live(self) -> None:
        """Show the live version of every turn again (new rows belong after them)."""
        self.restoring = -1
        while True:
            behind = sorted(a for a, g in self._groups.items() if g.browsing)
            if not behind:
                return
            group = self._groups[behind[0]]
            self._show(behind[0], group, group.live)

    def _show(self, anchor: int, group: VersionGroup, index: int) -> None:
        shown = group.branches[group.shown]
        shown.items, shown.groups = self._items[anchor:], nested(self._groups, anchor)
        chosen = group.branches[index]
        self._groups.update(chosen.groups)
        items, chosen.items, chosen.groups = chosen.items, [], {}
        group.shown = index
        self._show_rows(anchor, items)

    def _show_rows(self, first: int, items: list[ChatItem]) -> None:
        """Replace the rows from `first` on with `items` (their cards found again)."""
        if first < len(self._items):
            self.beginRemoveRows(QModelIndex(), first, len(self._items) - 1)
            del self._items[first:]
            self.endRemoveRows()
        if items:
            self.beginInsertRows(QModelIndex(), first, first + len(items) - 1)
            self._items.extend(items)
            self.endInsertRows()
        self._cards = {item.call_id: row for row, item in enumerate(self._items)
                       if isinstance(item, ToolCardItem)}
        self._asking = {item.call_id for item in self._items
                        if isinstance(item, ToolCardItem) and item.approval is not None}

    def append_delta(self, text: str, at: float | None = None) -> None:
        """Streamed assistant text; rendering is throttled to the render interval."""
        self.show_live()
        if self._streaming is None:
            self._streaming = MessageItem(Role.ASSISTANT, "", streaming=True, at=at)
            self._streaming_row = len(self._items)
            self._append(self._streaming)
        self._streaming.text += text
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def finish_text(self, text: str, at: float | None = None) -> None:
        """A finished assistant text block: replaces the streamed one, or is added."""
        self.show_live()
        item, row = self._streaming, self._streaming_row
        self._streaming = None
        self._dirty = False
        self._timer.stop()
        if item is None:
            self._append(MessageItem(Role.ASSISTANT, text, at=at))
            return
        streamed_as_sent = item.text == text
        item.text = text
        item.streaming = False
        if item.width > 0 and streamed_as_sent:
            item.seal()
        elif item.width > 0:
            item.render_all()
        else:
            item.segments, item.tail, item.cached_height = [], [], None
        self._changed(row, grew=True)

    def close_stream(self) -> None:
        """Finish the streamed message as it stands (what was shown stays shown)."""
        if self._streaming is not None:
            self.finish_text(self._streaming.text)

    def finish_streaming(self) -> None:
        """The run ended or stopped: close an unfinished streamed message, and nothing is
        being worked on any more."""
        self.close_stream()
        self.set_activity(None)

    def set_activity(self, label: str | None, since: float = 0.0) -> None:
        """What the run does now (`label`, since when), or None. The same label keeps its
        start: the elapsed time counts on."""
        if label is not None and self.activity is not None and self.activity.label == label:
            return
        activity = Activity(label, since) if label is not None else None
        if activity != self.activity:
            self.activity = activity
            self.activity_changed.emit(activity)

    def add_tool_card(self, call_id: str, name: str, summary: str, status: CallStatus, *,
                      arguments: object = None, at: float | None = None,
                      parent: str = "") -> None:
        """A call's line, new or brought up to date; `parent`: the call it is a step of."""
        self.show_live()
        self.close_stream()
        row = self._cards.get(call_id)
        if row is not None:
            card = self._items[row]
            assert isinstance(card, ToolCardItem)
            card.summary, card.status = summary or card.summary, status
            if arguments is not None:
                card.arguments, card.body = arguments, None
            self._changed(row, grew=card.expanded)
            return
        above = self._card(parent) if parent else None
        depth = min(above.depth + 1, MAX_DEPTH) if above is not None else 0
        self._cards[call_id] = len(self._items)
        self._append(ToolCardItem(call_id, name, summary, status, at=at, arguments=arguments,
                                  depth=depth))

    def update_tool_card(self, call_id: str, status: CallStatus, detail: str = "", *,
                         preview: str | None = None, output_path: str | None = None) -> None:
        card = self._card(call_id)
        if card is None:
            return
        row = self._cards[call_id]
        card.status, card.detail = status, detail or card.detail
        if preview is not None:
            card.preview, card.output_path, card.body = preview, output_path, None
        self._changed(row, grew=card.expanded)

    def toggle_card(self, row: int) -> None:
        """Show a card's arguments and result in place, or fold them again."""
        card = self._items[row]
        if isinstance(card, ToolCardItem):
            card.expanded = not card.expanded
            self._changed(row, grew=True)

    def set_approval(self, call_id: str, request: ApprovalRequest | None) -> None:
        """A call's approval is pending (`request`) or no longer is (None)."""
        card = self._card(call_id)
        if card is not None and card.approval is not request:
            card.approval = request
            (self._asking.add if request is not None else self._asking.discard)(call_id)
            self._changed(self._cards[call_id], grew=True)

    def approvals(self) -> list[ToolCardItem]:
        """The cards whose approval is pending, in the order of the conversation."""
        out: list[ToolCardItem] = []
        if not self._asking:
            return out
        for row in sorted(self._cards[call_id] for call_id in self._asking):
            card = self._items[row]
            if isinstance(card, ToolCardItem) and card.approval is not None:
                out.append(card)
        return out

    def set_changes(self, call_id: str, changes: str) -> None:
        """What a finished call changed (its step can be undone until the kernel says)."""
        card = self._card(call_id)
        if card is not None and changes:
            card.changes, card.undo = changes, "undoable"
            self._changed(self._cards[call_id], grew=False)

    def set_undo(self, call_id: str, state: str) -> None:
        """A call's step as the kernel's step list says: undoable, undone or kept."""
        card = self._card(call_id)
        if card is not None and card.changes and card.undo != state:
            card.undo = state
            self._changed(self._cards[call_id], grew=False)

    def card_row(self, call_id: str) -> int | None:
        self.show_live()
        return self._cards.get(call_id)

    def _card(self, call_id: str) -> ToolCardItem | None:
        """A call's card (the live versions shown again: the kernel's news is theirs)."""
        self.show_live()
        row = self._cards.get(call_id)
        card = self._items[row] if row is not None else None
        return card if isinstance(card, ToolCardItem) else None

    def card_status(self, call_id: str) -> CallStatus | None:
        card = self._card(call_id)
        return card.status if card is not None else None

    def mark_asked(self, call_id: str, now: float) -> None:
        card = self._card(call_id)
        if card is not None:
            card.asked_at = now

    def mark_decided(self, call_id: str, now: float) -> None:
        card = self._card(call_id)
        if card is not None and card.asked_at is not None:
            card.waited_s = max(0.0, now - card.asked_at)

    def approval_wait(self, call_id: str) -> float:
        card = self._card(call_id)
        return card.waited_s if card is not None else 0.0

    def refresh_activity(self, now: float) -> None:
        """The activity the cards imply: an approval to answer, tools running, or thinking."""
        cards = [item for item in self._items if isinstance(item, ToolCardItem)]
        waiting = [c for c in cards if c.status == "awaiting_approval"]
        running = [c for c in cards if c.status in ("queued", "running")]
        if waiting:
            self.set_activity("Waiting for your approval", now)
        elif len(running) == 1:
            self.set_activity(f"Running {one_line(running[0].name)}", now)
        elif running:
            self.set_activity(f"Running {len(running)} tools", now)
        else:
            self.set_activity("Thinking", now)

    def restyle(self) -> None:
        """The palette turned light or dark: render the finished messages again (their code
        colours are chosen for one or the other); a message still streaming follows as it
        is sealed."""
        self.dark = is_dark()
        for item in self._items:
            if isinstance(item, MessageItem) and not item.streaming and item.width > 0:
                item.render_all()
        for item in hidden_items(self._groups):
            if isinstance(item, MessageItem):
                item.segments, item.tail, item.width = [], [], -1.0  # (rendered when shown)
        if self._items:
            self.layoutChanged.emit()

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


def message_text(item: ChatItem) -> str:
    """What "Copy message" copies: the message as written (escaped like the display), with
    no "You:"/"Assistant:" before it; a card's one-line description."""
    if isinstance(item, ToolCardItem):
        return item_text(item)
    return visible(item.text)


def turn_text(items: list[ChatItem], row: int) -> str:
    """What a turn's Copy copies: the answer's prose of the turn ending at `row` (from the
    user's message before it), its pieces in order, as written."""
    texts: list[str] = []
    for item in reversed(items[:row + 1]):
        if isinstance(item, MessageItem) and item.role is Role.USER:
            break
        if isinstance(item, MessageItem) and item.role is Role.ASSISTANT:
            texts.append(visible(item.text))
    return "\n\n".join(reversed(texts))


def turn_model(items: list[ChatItem], row: int) -> str:
    """The model that wrote the turn ending at `row` (its answer's last piece; "" when none
    says)."""
    for item in reversed(items[:row + 1]):
        if isinstance(item, MessageItem) and item.role is Role.USER:
            break
        if item.model:
            return item.model
    return ""


def item_text(item: ChatItem) -> str:
    """What a row says as text (accessibility): escaped like the display."""
    if isinstance(item, ToolCardItem):
        return one_line(f"Tool call {item.name}: {item.summary} — {STATUS_WORDS[item.status]} "
                        f"{item.detail}".strip())
    label = {Role.USER: "You", Role.ASSISTANT: "Assistant"}.get(item.role, item.role.title())
    return f"{label}: {visible(item.text)}"


def timestamp_text(item: ChatItem) -> str | None:
    """The hover text of a row: when it was sent or received (nothing for stored history)."""
    if item.at is None:
        return None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item.at))
    if isinstance(item, ToolCardItem):
        return f"Called at {when}"
    if item.role is Role.USER:
        return f"Sent at {when}" + (" (edited)" if item.edited else "")
    return f"Received at {when}"
