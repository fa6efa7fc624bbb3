"""The approval card: a pending approval shown in the conversation, under the call it is
about, where the user reads (the dialog is for when the window is not in front).

It says what will run or change (the kernel's preview: a command with its folder, sandbox
and network, or a diff; a command's held changes as their diff), why it is asked, and
offers the request's choices as buttons — each choice the vocabulary has and this request
allows (`offered_choices`, a pure table: a new choice in `kernel.events.CHOICES` gets a
button without a change here) — and a message for the model if the user denies.

The card keeps the dialog's guarantees (`desktop.approval.deliberate`): no allow button
takes the focus or a key, every answer waits ARM_DELAY_MS after the card is shown, and the
chord (ALLOW_ONCE_KEYS, pressed wherever the focus is in the window: the chat view owns the
shortcut) answers the first choice. Model text is plain text shown through
`kernel.visible`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from desktop.approval.deliberate import ALLOW_ONCE_KEYS, Arming, DeliberateButton
from desktop.approval.dialog import (
    badge_style,
    preview_edit,
    reason_label,
    sentence,
    shown_preview,
)
from desktop.theme import mix
from kernel.events import HELD_RULE, ApprovalRequest, Choice
from kernel.visible import one_line

AMBER = {False: QColor("#d08a1c"), True: QColor("#e0a040")}
"""The card's tint (mixed into the page colour) for a light and a dark page."""
PREVIEW_LINES = 10
"""The preview's most lines before it scrolls (a long diff scrolls inside the card)."""

LABELS: dict[str, str] = {
    "allow_once": "Allow once",
    "allow_session": "Allow for this session",
    "allow_always": "Always allow",
    "deny": "Deny",
}
HELD_LABELS: dict[str, str] = {"allow_once": "Keep these changes", "deny": "Discard them"}


def choice_label(choice: str, held: bool = False) -> str:
    """A choice's button text; one the table does not know reads as its words."""
    if held and choice in HELD_LABELS:
        return HELD_LABELS[choice]
    return LABELS.get(choice) or choice.replace("_", " ").capitalize()


def offered_choices(request: ApprovalRequest) -> tuple[Choice, ...]:
    """The choices this request offers (`ApprovalRequest.offered`: what it carries, or for
    an older request what was offered then), deny last: "always" needs a rule to save and is
    never offered for a destructive call."""
    always = request.can_always and request.risk != "destructive" and bool(request.always_text())
    out = [choice for choice in request.offered() if choice != "deny"
           and not (choice == "allow_always" and not always)]
    return (*out, "deny")


def title_of(request: ApprovalRequest) -> str:
    """What the card asks, in words."""
    if request.rule == HELD_RULE:
        return "Keep the changes this command made?"
    if request.name == "run_command":
        return "Run this command?"
    if request.name in ("write_file", "edit_file"):
        return "Change this file?"
    return f"Allow {one_line(request.name)}?"


class ApprovalCard(QFrame):
    """One pending request; emits `decided(choice, message, confirmed)` once armed."""

    decided = Signal(str, str, bool)

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.setObjectName("approvalCard")
        self.setAccessibleName("Approval request")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAutoFillBackground(False)
        held = request.rule == HELD_RULE
        self.choices = offered_choices(request)

        self.title = QLabel(title_of(request), self)
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.tool_label = QLabel(one_line(request.name), self)
        self.tool_label.setAccessibleName("Tool")
        self.tool_label.setTextFormat(Qt.TextFormat.PlainText)
        self.risk_badge = QLabel(self)
        self.risk_badge.setAccessibleName("Risk")
        self.risk_badge.setTextFormat(Qt.TextFormat.PlainText)
        text, style = badge_style(request)
        self.risk_badge.setText(text)
        self.risk_badge.setStyleSheet(style)
        self.reason_label = reason_label(self)
        self.reason_label.setText(one_line(f"Why you are asked: {sentence(request.reason)}"))
        self.preview = preview_edit(self)
        self.preview.setFrameShape(QFrame.Shape.NoFrame)
        self.preview.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.preview.setPlainText(shown_preview(request))
        lines = min(PREVIEW_LINES, self.preview.document().blockCount())
        line = self.preview.fontMetrics().lineSpacing()
        margin = self.preview.document().documentMargin()
        self.preview.setFixedHeight(int(line * lines + 2 * margin + 2 * self.preview.frameWidth()
                                        + 10))
        self.confirm_box = QCheckBox(
            "I understand this call is destructive and want it to run", self)
        self.confirm_box.setAccessibleName("Confirm destructive call")
        self.confirm_box.setVisible(request.risk == "destructive")
        always = request.always_text()
        self.always_rule = QLabel(one_line(f"Always allow saves to settings: {always}"), self)
        self.always_rule.setAccessibleName("Rule that Always allow saves")
        self.always_rule.setTextFormat(Qt.TextFormat.PlainText)
        self.always_rule.setWordWrap(True)
        self.always_rule.setVisible("allow_always" in self.choices)
        self.deny_message = QLineEdit(self)
        self.deny_message.setAccessibleName("Message to the model when denying")
        self.deny_message.setPlaceholderText("Optional message for the model if you deny")

        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        row.setSpacing(6)
        for choice in self.choices:
            if choice == "deny":
                button = QPushButton(choice_label(choice, held), self)
                button.setAutoDefault(False)
            else:
                button = DeliberateButton(choice_label(choice, held), self)
            button.setAccessibleName(choice_label(choice, held))
            button.clicked.connect(lambda _c=False, choice=choice: self.decide(choice))
            self.buttons[choice] = button
        for choice in self.choices[:-1]:
            row.addWidget(self.buttons[choice])
        row.addStretch(1)
        row.addWidget(self.buttons["deny"])
        self.keys_hint = QLabel(
            f"{ALLOW_ONCE_KEYS}: {'keep them' if held else 'allow once'}, wherever you type · "
            "Esc keeps it waiting", self)
        self.keys_hint.setObjectName("keysHint")
        self.keys_hint.setAccessibleName("Keys of this approval")
        self.keys_hint.setTextFormat(Qt.TextFormat.PlainText)
        first = self.buttons[self.choices[0]]
        first.setToolTip(f"Click, or press {ALLOW_ONCE_KEYS}")
        first.setProperty("primary", True)

        header = QHBoxLayout()
        header.setSpacing(8)
        header.addWidget(self.title)
        header.addWidget(self.risk_badge)
        header.addStretch(1)
        header.addWidget(self.tool_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(8)
        layout.addLayout(header)
        layout.addWidget(self.reason_label)
        layout.addWidget(self.preview)
        layout.addWidget(self.confirm_box)
        layout.addWidget(self.always_rule)
        layout.addWidget(self.deny_message)
        layout.addLayout(row)
        layout.addWidget(self.keys_hint)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

        self.arming = Arming(self)
        self.arming.watch(tuple(self.buttons.values()))
        self.confirm_box.toggled.connect(self._update_buttons)
        self.deny_message.returnPressed.connect(lambda: self.decide("deny"))
        self.restyle()
        self._update_buttons()

    @property
    def armed(self) -> bool:
        """The card has been on screen long enough to be answered."""
        return self.arming.armed

    def button(self, choice: str) -> QPushButton | None:
        """The button of a choice, None when this request does not offer it."""
        return self.buttons.get(choice)

    @property
    def allow_once(self) -> QPushButton:
        button = self.buttons.get("allow_once")
        assert button is not None  # every request can be allowed once (or kept)
        return button

    @property
    def deny(self) -> QPushButton:
        return self.buttons["deny"]

    @property
    def primary(self) -> Choice:
        """The choice the chord gives: the first one (allow once, or keep the changes)."""
        return self.choices[0]

    def showEvent(self, event: QShowEvent) -> None:
        """Each time the card appears (a session shown again, the window restored), it
        cannot be answered for ARM_DELAY_MS."""
        super().showEvent(event)
        if not event.spontaneous():
            self.rearm()

    def restyle(self) -> None:
        """Colours from the palette, so the card reads as well in dark mode as in light: a
        warm tint of the page, a visible border, the preview on the page's own colour."""
        palette = QGuiApplication.palette()
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        dark = base.lightness() < 128
        amber = mix(base, AMBER[dark], 0.14 if dark else 0.10)
        border = mix(base, AMBER[dark], 0.55 if dark else 0.45)
        code = mix(base, text, 0.05)
        quiet = mix(text, base, 0.4)
        sheet = (
            f"#approvalCard {{ background: {amber.name()}; border: 1px solid {border.name()};"
            " border-radius: 12px; }"
            f" #approvalCard QPlainTextEdit {{ background: {code.name()}; color: {text.name()};"
            " border-radius: 6px; padding: 4px; }"
            f" #approvalCard QLabel {{ color: {text.name()}; background: transparent; }}"
            f" #approvalCard QLabel#keysHint {{ color: {quiet.name()}; }}")
        if sheet != self.styleSheet():  # (a new sheet is a palette change: once only)
            self.setStyleSheet(sheet)
            self.risk_badge.setStyleSheet(badge_style(self.request)[1])

    def rearm(self) -> None:
        """A new question again (another card was answered, or this one scrolled to): it
        cannot be answered for ARM_DELAY_MS."""
        self.arming.start()
        self._update_buttons()

    def _update_buttons(self) -> None:
        allowed = self.request.risk != "destructive" or self.confirm_box.isChecked()
        for choice, button in self.buttons.items():
            self.arming.allow(button, choice == "deny" or allowed)

    def decide(self, choice: Choice) -> bool:
        """Answer with `choice` if the card may be answered now (armed, shown, the choice
        offered, a destructive call confirmed); whether it was."""
        if not self.armed or not self.isVisible() or choice not in self.choices:
            return False
        allowing = choice != "deny"
        destructive = self.request.risk == "destructive"
        if allowing and destructive and not self.confirm_box.isChecked():
            return False
        message = "" if allowing else self.deny_message.text().strip()
        self.decided.emit(choice, message, allowing and destructive)
        return True
