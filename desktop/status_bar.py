"""The main window's status bar fits its width, from 900 px to a maximised window.

Each part has forms, its whole text first, then shorter ones (or none, ""). When the parts
do not fit, forms are given up in a fixed order, the least useful first (`LADDER`), until
they do; a label that still gets too little room draws its text elided with "…". A part's
tooltip always holds its whole text, and a label's text() stays the whole text.

    choose_forms(available, widths, ladder, spacing) -> {part: form}   # pure: the decision
    FitLabel, FitButton                                                 # parts with forms
    StatusFitter(bar, parts, fixed).refit()                             # applies it
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QPushButton, QStatusBar, QWidget

Ladder = Sequence[tuple[str, int]]

LADDER: Ladder = (
    ("compact", 1),  # the button goes (File → Compact conversation stays)
    ("mcp", 1),  # "⚠ MCP “docs” failed"
    ("sandbox", 1),  # "bwrap", "Sandbox: none"
    ("usage", 1),  # "1,200 in / 30 out · $0.0123 · context 21%"
    ("usage", 2),  # "$0.0123 · context 21%"
    ("sandbox", 2),  # a working sandbox unsaid; a missing one "No sandbox"
    ("mcp", 2),  # "⚠ MCP failed"
    ("approvals", 1),  # "⚠ 2 pending"
    ("usage", 3),  # "$0.0123"
)
"""The order in which parts give up their longer forms (step: part, form index)."""
BAR_MARGIN = 2
"""QStatusBar's layout: 2 px before the first widget…"""
BAR_END = 8
"""…and, set here, 8 px after the last (with no size grip it would touch the edge)."""
BAR_SPACING = 6
"""…and 6 px between two widgets (the stretch before the permanent widgets is one more)."""


def choose_forms(available: int, widths: Mapping[str, Sequence[int]], ladder: Ladder,
                 spacing: int) -> dict[str, int]:
    """The form of each part (`widths`: each form's width, the whole form first; 0 for a
    form that hides the part) for `available` pixels: the whole forms if they fit, else the
    ladder's steps in order until they do (a step to a form a part does not have, or has
    already passed, is skipped). It may still not fit: the labels elide then."""
    chosen = dict.fromkeys(widths, 0)

    def used() -> int:
        shown = [widths[name][form] for name, form in chosen.items() if widths[name][form]]
        return sum(shown) + spacing * max(0, len(shown) - 1)

    for name, form in ladder:
        if used() <= available:
            break
        if name in chosen and chosen[name] < form < len(widths[name]):
            chosen[name] = form
    return chosen


class Part(Protocol):
    """A widget of the status bar with forms (none while it has nothing to show)."""

    def form_widths(self) -> tuple[int, ...]: ...

    def show_form(self, index: int) -> None: ...

    def setVisible(self, visible: bool) -> None: ...


def _whole_tip(whole: str, tip: str) -> str:
    return "\n".join(part for part in (whole, tip) if part)


class FitLabel(QLabel):
    """A one-line label with forms: text() is the whole text (for tests and screen readers);
    it draws the form the status bar chose, elided with "…" if it gets less room still."""

    ELIDED_MIN = "Xxx…"
    """The narrowest it lets the layout make it."""

    def __init__(self, accessible_name: str, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setAccessibleName(accessible_name)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self._forms: tuple[str, ...] = ()
        self._form = 0
        self._sizes: tuple[tuple[int, ...], int, int] | None = None
        """Cached: each form's width, the narrowest width, the height (the layout asks
        for the size hints many times per change)."""

    def set_forms(self, forms: Sequence[str], tip: str = "") -> None:
        """Its forms, the whole text first (none: nothing to show); `tip` says more."""
        self._forms = tuple(forms)
        self._form = 0
        self._sizes = None
        self.setText(self._forms[0] if self._forms else "")
        self.setToolTip(_whole_tip(self.text(), tip))
        self.updateGeometry()

    def form_texts(self) -> tuple[str, ...]:
        return self._forms

    def form_widths(self) -> tuple[int, ...]:
        return self._measured()[0]

    def show_form(self, index: int) -> None:
        if index != self._form:
            self._form = index
            self.updateGeometry()
            self.update()

    def shown_text(self) -> str:
        """What it draws now: its chosen form, elided to its width."""
        if not self._forms:
            return ""
        return self.fontMetrics().elidedText(self._forms[self._form],
                                             Qt.TextElideMode.ElideRight,
                                             self.contentsRect().width())

    def _measured(self) -> tuple[tuple[int, ...], int, int]:
        """Whole pixels that hold each form (fractional advances rounded up, or it
        elides), the narrowest it lets itself be made, and its height."""
        if self._sizes is None:
            metrics = QFontMetricsF(self.font())
            margins = self.contentsMargins()

            def width(text: str) -> int:
                return (math.ceil(metrics.horizontalAdvance(text)) + margins.left()
                        + margins.right())

            self._sizes = (tuple(width(form) if form else 0 for form in self._forms),
                           width(self.ELIDED_MIN), super().sizeHint().height())
        return self._sizes

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._sizes = None
        super().changeEvent(event)

    def sizeHint(self) -> QSize:
        widths, _, height = self._measured()
        return QSize(widths[self._form] if widths else 0, height)

    def minimumSizeHint(self) -> QSize:
        widths, narrowest, height = self._measured()
        return QSize(min(widths[self._form] if widths else 0, narrowest), height)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), self.alignment(), self.shown_text())


class FitButton(QPushButton):
    """A push button with forms: it shows the chosen one; its tooltip holds the whole."""

    def __init__(self, accessible_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(accessible_name)
        self._forms: tuple[str, ...] = ()
        self._tip = ""

    def set_forms(self, forms: Sequence[str], tip: str = "") -> None:
        self._forms = tuple(forms)
        self._tip = tip
        self.show_form(0)

    def form_texts(self) -> tuple[str, ...]:
        return self._forms

    def form_widths(self) -> tuple[int, ...]:
        shown = self.text()
        widths = []
        for form in self._forms:
            self.setText(form)
            widths.append(self.sizeHint().width() if form else 0)
        self.setText(shown)
        return tuple(widths)

    def show_form(self, index: int) -> None:
        if self._forms:
            self.setText(self._forms[index])
            self.setToolTip(_whole_tip(self._forms[0] if index else "", self._tip))


class StatusFitter:
    """Gives the status bar's parts the forms that fit its width, and shows or hides each
    (a part with no forms is hidden). `fixed`: the bar's other widgets, always whole."""

    def __init__(self, bar: QStatusBar, parts: Mapping[str, Part],
                 fixed: Sequence[QWidget]) -> None:
        self.bar = bar
        self.parts = parts
        self.fixed = fixed
        bar.setSizeGripEnabled(False)  # (window managers resize from the edges)
        bar.setContentsMargins(0, 0, BAR_END, 0)

    def refit(self) -> None:
        widths = {name: part.form_widths() for name, part in self.parts.items()}
        wanted = {name: forms for name, forms in widths.items() if forms}
        fixed = [w.sizeHint().width() for w in self.fixed if not w.isHidden()]
        room = (self.bar.width() - BAR_MARGIN - BAR_END - BAR_SPACING  # the stretch
                - sum(width + BAR_SPACING for width in fixed))
        chosen = choose_forms(room, wanted, LADDER, BAR_SPACING)
        for name, part in self.parts.items():
            form = chosen.get(name)
            if form is not None:
                part.show_form(form)
            part.setVisible(form is not None and wanted[name][form] > 0)
