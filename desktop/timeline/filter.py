"""Filtering the timeline: by status, by tool, and by text over names and arguments.

    proxy = TimelineFilter()
    proxy.setSourceModel(model)
    proxy.set_statuses({"running", "error"})   # the kernel's CallStatus; empty set = every status
    proxy.set_tool("bash")                     # None = every tool
    proxy.set_text("src/main")                 # case-insensitive, "" = no search

The text search matches the lower-cased tool name, the one-line summary and the compact JSON
of the arguments (cached per record, so filtering 10,000 rows is one pass of `in` checks).
Rows keep their source order; the proxy re-checks a row when its data changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
)

from desktop.timeline.model import RECORD_ROLE, TimelineModel
from desktop.timeline.record import CallRecord

if TYPE_CHECKING:
    from kernel.events import CallStatus


class TimelineFilter(QSortFilterProxyModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._statuses: frozenset[CallStatus] = frozenset()
        self._tool: str | None = None
        self._text = ""
        self._timeline: TimelineModel | None = None
        self.setDynamicSortFilter(True)

    @property
    def active(self) -> bool:
        return bool(self._statuses or self._tool or self._text)

    def set_statuses(self, statuses: Iterable[CallStatus]) -> None:
        self.beginFilterChange()
        self._statuses = frozenset(statuses)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_tool(self, tool: str | None) -> None:
        self.beginFilterChange()
        self._tool = tool or None
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self._text = text.strip().lower()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def clear_filters(self) -> None:
        self.beginFilterChange()
        self._statuses = frozenset()
        self._tool = None
        self._text = ""
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def accepts(self, record: CallRecord) -> bool:
        if self._statuses and record.status not in self._statuses:
            return False
        if self._tool is not None and record.name != self._tool:
            return False
        return not self._text or self._text in record.search_text

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        if self._timeline is not None:  # direct: no Qt call, QModelIndex or QVariant per row
            return self.accepts(self._timeline.record_at(source_row))
        model = self.sourceModel()
        record = model.data(model.index(source_row, 0, source_parent), RECORD_ROLE)
        return isinstance(record, CallRecord) and self.accepts(record)

    def setSourceModel(self, model: QAbstractItemModel) -> None:
        self._timeline = model if isinstance(model, TimelineModel) else None
        super().setSourceModel(model)
