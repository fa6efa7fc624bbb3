"""Answers that only a deliberate act can give: a button no keystroke presses, and a delay
before a freshly shown question can be answered at all.

A dialog that appears while the user types must not turn the next space or Enter into an
answer. So an allow button takes no keyboard focus, swallows Space and Enter even when they
reach it, is never a default button, and answers only to a mouse click or to the dialog's
chord (one not typed by habit while writing); and every answer button stays disabled for
ARM_DELAY_MS after the question is shown, so a click or chord already under way when it
appeared lands on nothing.
`QuietDialog` is a dialog that appears without taking the focus from where the user types.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QElapsedTimer, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QDialog, QPushButton, QWidget
from shiboken6 import isValid

ARM_DELAY_MS = 500
"""How long a newly shown question cannot be answered (Qt's double-click interval is
400 ms: a double click that began before the dialog appeared is over by then)."""

ALLOW_ONCE_KEYS = "Ctrl+Shift+Y"
"""The approval dialog's chord for "allow once", live in the whole app while a request is
shown: no key typed by habit while writing (Ctrl+Enter sends in many apps; Ctrl+Shift+Enter
is one slip from it; Ctrl+Y is only redo, and Shift is not held for it)."""

_KEYS_THAT_PRESS = (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Select)


class DeliberateButton(QPushButton):
    """A push button only a click (or an explicit shortcut of its dialog) can press."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAutoDefault(False)
        self.setDefault(False)

    def setDefault(self, _on: bool) -> None:
        super().setDefault(False)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _KEYS_THAT_PRESS:
            event.accept()  # swallowed: not passed on to the dialog's default button
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:
        if event.key() in _KEYS_THAT_PRESS:
            event.accept()  # swallowed: not passed on to the dialog's default button
            return
        super().keyReleaseEvent(event)


class Arming(QObject):
    """Keeps a set of buttons disabled for `delay_ms` after each `start()`.

    `enabled(button)` says whether a button may be enabled at all (a destructive call's
    allow buttons wait for their confirmation too); `refresh()` applies it."""

    def __init__(self, parent: QObject, delay_ms: int = ARM_DELAY_MS) -> None:
        super().__init__(parent)
        self.delay_ms = delay_ms
        self._buttons: tuple[QPushButton, ...] = ()
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self.refresh)
        self._allowed: dict[QPushButton, bool] = {}

    def watch(self, buttons: Iterable[QPushButton]) -> None:
        self._buttons = tuple(buttons)

    @property
    def armed(self) -> bool:
        return self._clock.isValid() and self._clock.elapsed() >= self.delay_ms

    def start(self) -> None:
        """A new question is shown: nothing can be answered for `delay_ms`."""
        self._clock.start()
        self.refresh()

    def allow(self, button: QPushButton, allowed: bool) -> None:
        self._allowed[button] = allowed
        self.refresh()

    def refresh(self) -> None:
        if self._clock.isValid() and not self.armed:
            self._timer.start(max(1, self.delay_ms - self._clock.elapsed()))
        for button in self._buttons:
            button.setEnabled(self.armed and self._allowed.get(button, True))


class QuietDialog(QDialog):
    """A non-modal dialog shown without taking the focus (unless the user asked for it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setModal(False)
        self.setWindowModality(Qt.WindowModality.NonModal)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self._give_back: tuple[QWidget | None, QWidget | None] | None = None
        self._give_back_clock = QElapsedTimer()

    def present(self, activate: bool) -> None:
        """Show the dialog. Unless `activate` (the user asked for it), it leaves the focus
        where it is: a window system that activates it anyway (some do for every new
        window) has the activation handed back to the window and widget that had it."""
        self._give_back = None if activate else (QApplication.activeWindow(),
                                                 QApplication.focusWidget())
        self._give_back_clock.start()
        self.show()
        self.raise_()
        if activate:
            self.activateWindow()

    def event(self, event: QEvent) -> bool:
        if (event.type() == QEvent.Type.WindowActivate and self._give_back is not None
                and self._give_back_clock.elapsed() < ARM_DELAY_MS):
            window, widget = self._give_back
            self._give_back = None
            if window is not None and isValid(window) and window is not self:
                window.activateWindow()
                if widget is not None and isValid(widget):
                    widget.setFocus(Qt.FocusReason.ActiveWindowFocusReason)
        return super().event(event)
