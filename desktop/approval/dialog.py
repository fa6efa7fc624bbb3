"""The approval dialog and its queue: one pending request shown at a time, with a count.

The dialog is not application-modal and is never run with `exec()`: it is shown, and the
answer resolves a future (and emits `answered`), so the rest of the window — other sessions,
the timeline, the event stream — keeps running while the user decides. Closing the dialog
without answering postpones the request; it never counts as a denial.

It never takes a keystroke meant for something else (`deliberate`): it appears without
taking the focus from the prompt (it is activated only when the user asks for it: the
pending button, a call's row, the tray), no allow button is a default or takes the focus,
an allow is a click or ALLOW_ONCE_KEYS, and every answer waits ARM_DELAY_MS after a request
is shown. Deny is the default button. The chord works from wherever the keyboard is in the
app (an application shortcut, live only while the dialog shows a request), and it is none a
person types by habit while writing: not Ctrl+Enter, which sends in many apps. Esc in the
dialog decides later; in the prompt too while a request waits (the controller), so the
hint's words are true where the user types.

Everything the request carries came from the model: every label is plain text (never rich
text) and shows it through `kernel.visible`, so an ESC, CR or bidirectional override in a
command is shown as an escape and cannot hide or reorder what the preview says; the preview
wraps long lines, so none can push the end of a command out of sight.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QColor,
    QFontDatabase,
    QKeySequence,
    QShortcut,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextOption,
)
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.approval.deliberate import ALLOW_ONCE_KEYS, Arming, DeliberateButton, QuietDialog
from kernel.events import CHOICE_WORDS, HELD_RULE, ApprovalRequest, Choice
from kernel.protocol import ApprovalAnswer
from kernel.visible import one_line, visible

KEYS_HINT = f"{ALLOW_ONCE_KEYS}: allow once · Esc: decide later"
HELD_KEYS_HINT = f"{ALLOW_ONCE_KEYS}: keep them · Esc: decide later"

RISK_COLOURS = {
    "read": "#3a6e4f",
    "write": "#35608f",
    "execute": "#7d5a1e",
    "destructive": "#cf222e",
}
"""The risk badge's background (white bold text on each, legible on a light or a dark
window): a muted green for reads, a muted blue for a file change (its diff is shown), a
calm amber for an ordinary command, and the only saturated red for a destructive one."""
UNKNOWN_RISK_COLOUR = "#57606a"


class DiffHighlighter(QSyntaxHighlighter):
    """Colours unified-diff lines in the preview."""

    def highlightBlock(self, text: str) -> None:
        colour = None
        if text.startswith(("+++", "---")):
            colour = "#6e7781"
        elif text.startswith("+"):
            colour = "#2da44e"
        elif text.startswith("-"):
            colour = "#cf222e"
        elif text.startswith("@@"):
            colour = "#0969da"
        if colour:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            self.setFormat(0, len(text), fmt)


def badge_style(request: ApprovalRequest) -> tuple[str, str]:
    """The risk badge's text and style sheet (the dialog's and the inline card's)."""
    colour = RISK_COLOURS.get(request.risk, UNKNOWN_RISK_COLOUR)
    return (f" {one_line(request.risk.upper())} ",
            f"QLabel {{ background: {colour}; color: white; border-radius: 4px;"
            " padding: 2px 6px; font-weight: bold; }")


def reason_label(parent: QWidget) -> QLabel:
    """The label saying why the user is asked (plain text, wrapped)."""
    label = QLabel(parent)
    label.setAccessibleName("Reason")
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def preview_edit(parent: QWidget) -> QPlainTextEdit:
    """The read-only preview of what will run or change: monospaced, diff lines coloured,
    wrapped so that no end of a long line hides behind a horizontal scroll bar."""
    preview = QPlainTextEdit(parent)
    preview.setAccessibleName("Preview")
    preview.setReadOnly(True)
    preview.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    preview.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    preview.setProperty("highlighter", DiffHighlighter(preview.document()))
    return preview


def sentence(text: str) -> str:
    """The policy's reason as a sentence: a full stop at its end, nothing added to it."""
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?", ":")) else f"{text}."


def shown_preview(request: ApprovalRequest) -> str:
    """The policy's preview for a person, else the exact arguments (escaped for display)."""
    if request.preview.strip():
        return visible(request.preview)
    return visible(json.dumps(request.input, indent=2, ensure_ascii=False, default=str))


class ApprovalDialog(QuietDialog):
    """Shows one request; emits `decided(decision, message, confirmed)` or `postponed`."""

    decided = Signal(str, str, bool)
    postponed = Signal()
    visibility = Signal(bool)
    """Shown or hidden: the chat's card chord stands aside while the dialog's is live."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Approval needed — Reins")
        self.setAccessibleName("Approval request")
        self.resize(640, 460)
        self.request: ApprovalRequest | None = None

        self.count_label = QLabel(self)
        self.count_label.setAccessibleName("Pending approvals")
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        self.session_label = QLabel(self)
        self.session_label.setAccessibleName("Session")
        self.session_label.setTextFormat(Qt.TextFormat.PlainText)
        self.tool_label = QLabel(self)
        self.tool_label.setAccessibleName("Tool")
        self.tool_label.setTextFormat(Qt.TextFormat.PlainText)
        font = self.tool_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.tool_label.setFont(font)
        self.risk_badge = QLabel(self)
        self.risk_badge.setAccessibleName("Risk")
        self.risk_badge.setTextFormat(Qt.TextFormat.PlainText)
        self.reason_label = reason_label(self)
        self.preview = preview_edit(self)
        self.confirm_box = QCheckBox(
            "I understand this call is &destructive and want it to run", self)
        self.confirm_box.setAccessibleName("Confirm destructive call")
        self.deny_message = QLineEdit(self)
        self.deny_message.setAccessibleName("Message to the model when denying")
        self.deny_message.setPlaceholderText("Optional message for the model if you deny")

        self.allow_once = DeliberateButton("Allow once", self)
        self.allow_once.setAccessibleName("Allow once")
        self.allow_once.setToolTip(f"Click, or press {ALLOW_ONCE_KEYS}")
        self.allow_session = DeliberateButton("Allow for this session", self)
        self.allow_session.setAccessibleName("Allow for this session")
        self.allow_always = DeliberateButton("Always allow", self)
        self.allow_always.setAccessibleName("Always allow")
        self.run_review = DeliberateButton(CHOICE_WORDS["allow_review"], self)
        self.run_review.setAccessibleName(CHOICE_WORDS["allow_review"])
        self.run_review.setToolTip("It runs without the network; you are shown every change "
                                   "it made, and none is applied until you keep them")
        self.full_diff = QPushButton("Open the full diff", self)
        self.full_diff.setAccessibleName("Open the full diff")
        self.full_diff.setAutoDefault(False)
        self.always_rule = QLabel(self)
        self.always_rule.setAccessibleName("Rule that Always allow saves")
        self.always_rule.setTextFormat(Qt.TextFormat.PlainText)
        self.always_rule.setWordWrap(True)
        self.deny = QPushButton("&Deny", self)
        self.deny.setAccessibleName("Deny")
        self.deny.setDefault(True)
        self.arming = Arming(self)
        self.arming.watch((self.allow_once, self.allow_session, self.allow_always,
                           self.run_review, self.deny))

        header = QHBoxLayout()
        header.addWidget(self.tool_label)
        header.addWidget(self.risk_badge)
        header.addStretch(1)
        header.addWidget(self.count_label)
        buttons = QHBoxLayout()
        for button in (self.allow_once, self.allow_session, self.allow_always, self.run_review):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.keys_hint = QLabel(KEYS_HINT, self)
        self.keys_hint.setTextFormat(Qt.TextFormat.PlainText)
        self.keys_hint.setAccessibleName("Keys of this dialog")
        self.keys_hint.setEnabled(False)  # drawn muted
        buttons.addWidget(self.keys_hint)
        buttons.addWidget(self.deny)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.session_label)
        layout.addWidget(self.reason_label)
        layout.addWidget(self.preview, 1)
        layout.addWidget(self.full_diff, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.confirm_box)
        layout.addWidget(self.always_rule)
        layout.addWidget(self.deny_message)
        layout.addLayout(buttons)

        self.allow_once.clicked.connect(lambda: self._decide("allow_once"))
        self.allow_session.clicked.connect(lambda: self._decide("allow_session"))
        self.allow_always.clicked.connect(lambda: self._decide("allow_always"))
        self.run_review.clicked.connect(lambda: self._decide("allow_review"))
        self.full_diff.clicked.connect(self._open_full_diff)
        self.deny.clicked.connect(lambda: self._decide("deny"))
        self.confirm_box.toggled.connect(self._update_buttons)
        self.deny_message.returnPressed.connect(lambda: self._decide("deny"))
        self.allow_key = QShortcut(QKeySequence(ALLOW_ONCE_KEYS), self,
                                   lambda: self._decide("allow_once"))
        self.allow_key.setContext(Qt.ShortcutContext.ApplicationShortcut)  # (PySide6 drops
        # the constructor's context argument)
        self.allow_key.setAutoRepeat(False)  # a held chord answers once, never the next one

    @property
    def armed(self) -> bool:
        """The request has been on screen long enough to be answered."""
        return self.arming.armed

    @property
    def destructive(self) -> bool:
        return self.request is not None and self.request.risk == "destructive"

    def show_request(self, request: ApprovalRequest, position: int, total: int,
                     session_title: str = "") -> None:
        self.request = request
        self.tool_label.setText(one_line(request.name))
        text, style = badge_style(request)
        self.risk_badge.setText(text)
        self.risk_badge.setStyleSheet(style)
        self.count_label.setText(f"{position} of {total} pending" if total > 1 else "")
        self.count_label.setVisible(total > 1)
        self.session_label.setText(f"Session: {one_line(session_title)}" if session_title else "")
        self.session_label.setVisible(bool(session_title))
        held = request.rule == HELD_RULE
        offered = request.offered()
        self.setWindowTitle("Keep these changes? — Reins" if held else "Approval needed — Reins")
        self.allow_once.setText(request.choice_words("allow_once"))
        self.deny.setText("&" + request.choice_words("deny"))
        self.allow_session.setVisible("allow_session" in offered)
        self.run_review.setVisible("allow_review" in offered)
        self.full_diff.setVisible(bool(request.full_preview))
        self.keys_hint.setText(HELD_KEYS_HINT if held else KEYS_HINT)
        self.reason_label.setText(one_line(f"Why you are asked: {sentence(request.reason)}"))
        self.reason_label.setToolTip(one_line(f"Rule: {request.rule}") if request.rule else "")
        always = request.always_text()
        self.preview.setPlainText(shown_preview(request))
        self.confirm_box.setChecked(False)
        self.confirm_box.setVisible(self.destructive)
        self.deny_message.clear()
        can_always = "allow_always" in offered and not self.destructive and bool(always)
        self.allow_always.setVisible(can_always)
        self.always_rule.setVisible(can_always)
        self.always_rule.setText(one_line(f"Always allow saves to settings: {always}")
                                 if can_always else "")
        self.arming.start()
        self._update_buttons()
        (self.confirm_box if self.destructive else self.preview).setFocus()

    def update_count(self, position: int, total: int) -> None:
        self.count_label.setText(f"{position} of {total} pending" if total > 1 else "")
        self.count_label.setVisible(total > 1)

    def _update_buttons(self) -> None:
        enabled = not self.destructive or self.confirm_box.isChecked()
        for button in (self.allow_once, self.allow_session, self.allow_always, self.run_review):
            self.arming.allow(button, enabled)

    def _decide(self, decision: Choice) -> None:
        if self.request is None or not self.armed or not self.isVisible():
            return
        allowing = decision != "deny"
        if allowing and decision not in self.request.offered():
            return
        if allowing and decision == "allow_always" and not self.allow_always.isVisible():
            return
        if allowing and self.destructive and not self.confirm_box.isChecked():
            return
        message = self.deny_message.text().strip() if not allowing else ""
        self.decided.emit(decision, message, allowing and self.destructive)

    def _open_full_diff(self) -> None:
        """The whole diff the preview shows cut, in the output viewer."""
        if self.request is not None and self.request.full_preview:
            from desktop.viewer.window import show_output

            show_output(self.request.full_preview, self)
    def setVisible(self, visible: bool) -> None:
        changed = visible != self.isVisible()
        super().setVisible(visible)
        if changed:
            self.visibility.emit(visible)

    def reject(self) -> None:
        """Esc or the close button: postpone (the request stays pending), never deny."""
        self.hide()
        self.postponed.emit()

    def closeEvent(self, event: QCloseEvent) -> None:
        event.ignore()
        self.reject()


@dataclass(eq=False)
class _Pending:
    request: ApprovalRequest
    future: Future[ApprovalAnswer] = field(default_factory=Future)


class ApprovalQueue(QObject):
    """Pending approvals of every session. Each is shown as a card in its session's chat
    (`desktop.approval.card`); the dialog shows one when the window is not in front or the
    request is another session's (`inline` says which are in the chat now), one by one."""

    answered = Signal(object)
    """An ApprovalAnswer (protocol command) to send to the kernel."""
    count_changed = Signal(int)
    arrived = Signal(object)
    """A new ApprovalRequest was queued (not one already pending)."""
    withdrawn = Signal(str, str)
    """(session id, call id): no longer pending here (answered, decided elsewhere, gone)."""

    def __init__(self, window: QWidget | None = None,
                 session_title: Callable[[str], str] = lambda _s: "") -> None:
        super().__init__(window)
        self._window = window
        self._session_title = session_title
        self._pending: deque[_Pending] = deque()
        self.dialog = ApprovalDialog(window)
        self.dialog.decided.connect(self._on_decided)
        self.inline: Callable[[ApprovalRequest], bool] = lambda _r: False
        """Whether a request is in front of the user as a card now (the window active and
        its session shown): then the dialog does not show it too."""
        self.reveal: Callable[[ApprovalRequest], bool] = lambda _r: False
        """Bring a request's card into view when the user asks for it; False when it has
        none to show (then the dialog shows it)."""

    def __len__(self) -> int:
        return len(self._pending)

    def requests(self, session_id: str) -> list[ApprovalRequest]:
        """A session's pending requests, oldest first."""
        return [q.request for q in self._pending if q.request.session_id == session_id]

    def submit(self, request: ApprovalRequest) -> Future[ApprovalAnswer]:
        """Queue a request; the future resolves with the user's answer.

        A request already queued (the kernel re-sends pending approvals after a restart) is
        not queued twice: the existing future is returned."""
        for pending in self._pending:
            if (pending.request.session_id, pending.request.call_id) == (
                    request.session_id, request.call_id):
                return pending.future
        pending = _Pending(request)
        self._pending.append(pending)
        self.count_changed.emit(len(self._pending))
        self.arrived.emit(request)
        if self.dialog.isVisible():
            self.dialog.update_count(self._position(self.dialog.request), len(self._pending))
        else:
            self.show_current()
        return pending.future

    def _position(self, request: ApprovalRequest | None) -> int:
        for number, pending in enumerate(self._pending, 1):
            if pending.request is request:
                return number
        return 1

    def show_current(self, activate: bool = False) -> None:
        """Show the oldest pending request: as its card when the user asks (`activate`) and
        it has one, else in the dialog — without taking the focus unless `activate`. Not
        asked for, the dialog shows the oldest request that is not a card in front now."""
        if not self._pending:
            self.dialog.hide()
            return
        head = self._pending[0].request
        if activate and self.reveal(head):
            self.dialog.hide()
            return
        target = head if activate else next(
            (q.request for q in self._pending if not self.inline(q.request)), None)
        if target is None:
            self.dialog.hide()
            return
        position = self._position(target)
        if self.dialog.isVisible() and self.dialog.request is target:
            self.dialog.update_count(position, len(self._pending))
        else:
            self.dialog.show_request(target, position, len(self._pending),
                                     self._session_title(target.session_id))
        self.dialog.present(activate)
        if not activate and self._window is not None and not self._window.isActiveWindow():
            QApplication.alert(self._window)

    def in_front(self) -> None:
        """The window came in front: a request the dialog shows that is a card now is left
        to the card (one place to answer it, one chord)."""
        request = self.dialog.request
        if self.dialog.isVisible() and request is not None and self.inline(request):
            self.dialog.hide()

    def show_call(self, session_id: str, call_id: str) -> bool:
        """Bring the pending request of this call to the front and show it, activated;
        False when that call waits for no approval."""
        for pending in self._pending:
            if (pending.request.session_id, pending.request.call_id) == (session_id, call_id):
                self._pending.remove(pending)
                self._pending.appendleft(pending)
                self.show_current(activate=True)
                return True
        return False

    def postpone(self) -> None:
        """Decide later: hide the dialog; every request stays pending."""
        if self.dialog.isVisible():
            self.dialog.reject()

    def waiting_in(self, session_id: str) -> bool:
        """Some call of this session waits for an answer."""
        return any(q.request.session_id == session_id for q in self._pending)

    def discard(self, session_id: str, call_id: str | None = None) -> None:
        """Drop requests decided elsewhere, or all of a session's (run cancelled, restart)."""
        keep: deque[_Pending] = deque()
        gone: list[ApprovalRequest] = []
        for pending in self._pending:
            request = pending.request
            if request.session_id == session_id and call_id in (None, request.call_id):
                pending.future.cancel()
                gone.append(request)
            else:
                keep.append(pending)
        self._pending = keep
        self.count_changed.emit(len(self._pending))
        for request in gone:
            self.withdrawn.emit(request.session_id, request.call_id)
        if not self.dialog.isVisible():
            return
        if self.dialog.request in gone:
            self.show_current()
        else:
            self.dialog.update_count(self._position(self.dialog.request), len(self._pending))

    def answer(self, session_id: str, call_id: str, decision: Choice, message: str = "",
               confirmed: bool = False) -> bool:
        """Answer one pending request (its card's button or chord); False if it waits no
        more."""
        for pending in self._pending:
            if (pending.request.session_id, pending.request.call_id) == (session_id, call_id):
                self._resolve(pending, decision, message, confirmed)
                return True
        return False

    def _on_decided(self, decision: Choice, message: str, confirmed: bool) -> None:
        pending = next((q for q in self._pending if q.request is self.dialog.request), None)
        if pending is not None:
            self._resolve(pending, decision, message, confirmed)

    def _resolve(self, pending: _Pending, decision: Choice, message: str,
                 confirmed: bool) -> None:
        self._pending.remove(pending)
        request = pending.request
        answer = ApprovalAnswer(request.session_id, request.call_id, decision, message,
                                confirmed)
        pending.future.set_result(answer)
        self.count_changed.emit(len(self._pending))
        self.answered.emit(answer)
        self.withdrawn.emit(request.session_id, request.call_id)
        if self.dialog.request is request or not self.dialog.isVisible():
            self.show_current()
        else:
            self.dialog.update_count(self._position(self.dialog.request), len(self._pending))
