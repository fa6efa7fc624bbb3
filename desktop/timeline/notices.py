"""The run's notes under the timeline's calls: what happened besides tool calls (older turns
summarized, a model request retried, an empty answer, a server's sampling request), one line
each, in the words of `desktop.run_notices`. Hidden while there are none."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QListWidget, QWidget

from desktop.run_notices import notice_text
from kernel.events import Event


class RunNotes(QListWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Run notes")
        self.setToolTip("What happened in the run besides its tool calls")
        self.setWordWrap(True)
        self.setMaximumHeight(110)
        self.hide()

    def apply(self, event: Event) -> None:
        text = notice_text(event)
        if text is None:
            return
        self.addItem(text)
        self.scrollToBottom()
        self.show()

    def apply_many(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def texts(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]

    def clear(self) -> None:
        super().clear()
        self.hide()
