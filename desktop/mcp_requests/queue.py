"""Servers' forms and sampling requests waiting for the user, each kind shown one at a time
in its dialog (with a count), like approvals.

`McpRequests.answer` carries the protocol answer to send (McpFormAnswer, McpSamplingAnswer);
`note` carries a sentence for the chat. A form the app cannot show (`UnsupportedForm`) is
declined at once, and the note says which server asked and why it was declined.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QWidget

from desktop.mcp_requests.form_dialog import FormDialog
from desktop.mcp_requests.sampling_dialog import SamplingDialog
from desktop.mcp_requests.schema import FormField, UnsupportedForm, form_fields
from kernel.events import FormAction
from kernel.protocol import McpFormAnswer, McpFormRequest, McpSamplingAnswer, McpSamplingRequest
from kernel.visible import one_line

T = TypeVar("T")


class _Line(Generic[T]):
    """Requests of one kind, the oldest shown in the dialog."""

    def __init__(self, show: Callable[[T, int], None], update: Callable[[int], None],
                 hide: Callable[[], None]) -> None:
        self.items: deque[T] = deque()
        self._show, self._update, self._hide = show, update, hide

    def add(self, item: T) -> None:
        self.items.append(item)
        if len(self.items) == 1:
            self._show(item, 1)
        else:
            self._update(len(self.items))

    def pop(self) -> T | None:
        item = self.items.popleft() if self.items else None
        self.refresh()
        return item

    def drop(self, keep: Callable[[T], bool]) -> list[T]:
        head = self.items[0] if self.items else None
        dropped = [i for i in self.items if not keep(i)]
        self.items = deque(i for i in self.items if keep(i))
        if not self.items or self.items[0] is not head:
            self.refresh()
        return dropped

    def refresh(self) -> None:
        if self.items:
            self._show(self.items[0], len(self.items))
        else:
            self._hide()


class McpRequests(QObject):
    answer = Signal(object)
    """A protocol message to send to the kernel (McpFormAnswer, McpSamplingAnswer)."""
    note = Signal(str)
    """A sentence for the chat (a form that could not be shown)."""
    count_changed = Signal(int)

    def __init__(self, window: QWidget | None = None,
                 session_title: Callable[[str], str] = lambda _s: "") -> None:
        super().__init__(window)
        self._window = window
        self._session_title = session_title
        self.form_dialog = FormDialog(window)
        self.sampling_dialog = SamplingDialog(window)
        self.forms: _Line[tuple[McpFormRequest, tuple[FormField, ...]]] = _Line(
            self._show_form, lambda n: self.form_dialog.update_count(1, n),
            self.form_dialog.hide)
        self.samplings: _Line[McpSamplingRequest] = _Line(
            self._show_sampling, lambda n: self.sampling_dialog.update_count(1, n),
            self.sampling_dialog.hide)
        self.form_dialog.answered.connect(self._form_answered)
        self.sampling_dialog.answered.connect(self._sampling_answered)

    def __len__(self) -> int:
        return len(self.forms.items) + len(self.samplings.items)

    # ---- arriving -------------------------------------------------------------------------

    def submit_form(self, request: McpFormRequest) -> None:
        try:
            fields = () if request.url else form_fields(request.schema or {})
        except UnsupportedForm as exc:
            self.answer.emit(McpFormAnswer(request.request_id, "decline"))
            self.note.emit(one_line(f"The MCP server “{request.server}” asked for a form "
                                    f"Reins cannot show ({exc}), so it was declined."))
            return
        if any(r.request_id == request.request_id for r, _ in self.forms.items):
            return
        self.forms.add((request, fields))
        self._changed()

    def submit_sampling(self, request: McpSamplingRequest) -> None:
        if any(r.request_id == request.request_id for r in self.samplings.items):
            return
        self.samplings.add(request)
        self._changed()

    def forget_session(self, session_id: str) -> None:
        """The session's run ended: its sampling requests are declined (the kernel refuses
        them anyway once the run has ended)."""
        for request in self.samplings.drop(lambda r: r.session_id != session_id):
            self.answer.emit(McpSamplingAnswer(request.request_id, False))
        self._changed()

    def clear(self) -> None:
        """The kernel is gone: nothing it asked can be answered any more."""
        self.forms.drop(lambda _r: False)
        self.samplings.drop(lambda _r: False)
        self._changed()

    # ---- shown and answered ---------------------------------------------------------------

    def _show_form(self, item: tuple[McpFormRequest, tuple[FormField, ...]], total: int) -> None:
        request, fields = item
        if self.form_dialog.request is not request or not self.form_dialog.isVisible():
            self.form_dialog.show_form(request, fields, 1, total)
        self._present(self.form_dialog.present)

    def _show_sampling(self, request: McpSamplingRequest, total: int) -> None:
        if self.sampling_dialog.request is not request or not self.sampling_dialog.isVisible():
            self.sampling_dialog.show_request(request, 1, total,
                                              self._session_title(request.session_id))
        self._present(self.sampling_dialog.present)

    def _present(self, present: Callable[[bool], None]) -> None:
        present(False)
        if self._window is not None and not self._window.isActiveWindow():
            QApplication.alert(self._window)

    def _form_answered(self, action: FormAction, content: Any) -> None:
        item = self.forms.pop()
        if item is not None:
            self.answer.emit(McpFormAnswer(item[0].request_id, action, content))
        self._changed()

    def _sampling_answered(self, approve: bool) -> None:
        request = self.samplings.pop()
        if request is not None:
            self.answer.emit(McpSamplingAnswer(request.request_id, approve))
        self._changed()

    def _changed(self) -> None:
        self.count_changed.emit(len(self))
