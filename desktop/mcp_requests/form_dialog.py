"""The dialog of a server's form (MCP elicitation), laid out like the approval dialog.

It says which server asks and shows its message through `kernel.visible` (a control
character is shown as an escape, never interpreted; every label is plain text). The fields
come from `desktop.mcp_requests.schema`. *Accept* sends the values only when every field is
valid (each wrong field says what is wrong under it); *Decline* and *Cancel* send no values;
Esc and closing the dialog cancel. No keystroke answers it: it appears without taking the
focus, *Accept* is a `DeliberateButton` (a click, or Ctrl+Enter once the dialog has the
focus), none of its buttons is a default, Enter in a field does nothing, and every answer
waits ARM_DELAY_MS after a form is shown (`desktop.approval.deliberate`).

A form whose URL the server wants opened (URL elicitation) shows the address; *Open the page*
opens it in the browser and answers accept. Only an http or https address can be opened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QCloseEvent, QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.mcp_requests.base import RequestDialog, plain_label
from desktop.mcp_requests.schema import FormField, initial_value, plain_number, read_values
from kernel.protocol import McpFormRequest
from kernel.visible import one_line, visible

_PLACEHOLDERS = {"email": "name@example.org", "uri": "https://…", "date": "YYYY-MM-DD",
                 "date-time": "YYYY-MM-DDTHH:MM:SS", "number": "a number",
                 "integer": "a whole number"}


def openable(url: str) -> bool:
    """A page the form may open in the browser: http or https only."""
    return QUrl(url).scheme().lower() in ("http", "https") and QUrl(url).isValid()


def _range(f: FormField) -> str:
    plain = plain_number
    if f.minimum is not None and f.maximum is not None:
        return f"from {plain(f.minimum)} to {plain(f.maximum)}"
    if f.minimum is not None:
        return f"at least {plain(f.minimum)}"
    if f.maximum is not None:
        return f"at most {plain(f.maximum)}"
    return ""


class FieldEditor(QWidget):
    """One field: its editor, its description and the error under it."""

    def __init__(self, field: FormField, parent: QWidget) -> None:
        super().__init__(parent)
        self.field = field
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        initial = initial_value(field)
        name = one_line(field.title)
        self._read: Callable[[], Any]
        if field.kind == "boolean":
            box = QCheckBox(name, self)
            box.setChecked(bool(initial))
            self._read = box.isChecked
            self.editor: QWidget = box
        elif field.kind == "choice":
            combo = QComboBox(self)
            combo.addItem("— choose —" if field.required else "— none —", None)
            for choice in field.choices:
                combo.addItem(one_line(choice.title), choice.value)
            combo.setCurrentIndex(max(0, combo.findData(initial)) if initial is not None else 0)
            self._read = combo.currentData
            self.editor = combo
        elif field.kind == "choices":
            group = QWidget(self)
            row = QHBoxLayout(group)
            row.setContentsMargins(0, 0, 0, 0)
            boxes = []
            for choice in field.choices:
                box = QCheckBox(one_line(choice.title), group)
                box.setChecked(choice.value in initial)
                box.setAccessibleName(f"{name}: {one_line(choice.title)}")
                row.addWidget(box)
                boxes.append((box, choice.value))
            row.addStretch(1)
            self._read = lambda: [value for box, value in boxes if box.isChecked()]
            self.editor = group
        else:
            edit = QLineEdit(str(initial), self)
            edit.setPlaceholderText(_PLACEHOLDERS.get(field.kind, ""))
            self._read = edit.text
            self.editor = edit
        self.editor.setAccessibleName(name)
        layout.addWidget(self.editor)
        notes = [visible(field.description)] if field.description else []
        bounds = _range(field)
        if bounds:
            notes.append(bounds.capitalize() + ".")
        self.note = plain_label(" ".join(notes), self, f"About {name}")
        self.note.setEnabled(False)  # drawn muted
        self.note.setVisible(bool(notes))
        layout.addWidget(self.note)
        self.error = plain_label("", self, f"Problem with {name}")
        self.error.setStyleSheet("QLabel { color: #cf222e; }")
        self.error.hide()
        layout.addWidget(self.error)

    def raw(self) -> Any:
        return self._read()

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))


class FormDialog(RequestDialog):
    """Shows one form; emits `answered(action, content)` (content None unless accepted)."""

    answered = Signal(str, object)
    noun = "forms"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, "MCP form")
        self.setWindowTitle("An MCP server asks you — Reins")
        self.resize(560, 520)
        self.request: McpFormRequest | None = None
        self.fields: tuple[FormField, ...] = ()
        self.editors: list[FieldEditor] = []

        self.message_label = plain_label("", self, "Message from the server")
        self.url_label = plain_label("", self, "Page the server wants opened")
        self.url_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.form_page = QWidget(self.scroll_area)
        self.form = QFormLayout(self.form_page)
        self.scroll_area.setWidget(self.form_page)
        self.problem_label = plain_label("", self, "Why the form cannot be sent")
        self.problem_label.setStyleSheet("QLabel { color: #cf222e; }")
        self.problem_label.hide()

        header, buttons, (self.accept_button, self.decline_button, self.cancel_button) = (
            self.answer_buttons((("Accept", "Accept and send the values"),
                                 ("Decline", "Decline"), ("Cancel", "Cancel")),
                                "Ctrl+Enter: accept · Esc: cancel", self._accept))
        self.accept_button.setToolTip("Click, or press Ctrl+Enter")
        self.decline_button.setToolTip("Tell the server you will not give these values")
        self.cancel_button.setToolTip("Dismiss the form without answering it (Esc)")
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.message_label)
        layout.addWidget(self.url_label)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.problem_label)
        layout.addLayout(buttons)

        self.accept_button.clicked.connect(self._accept)
        self.decline_button.clicked.connect(lambda: self._answer("decline"))
        self.cancel_button.clicked.connect(lambda: self._answer("cancel"))

    def show_form(self, request: McpFormRequest, fields: tuple[FormField, ...], position: int,
                  total: int) -> None:
        self.request, self.fields = request, fields
        self.server_label.setText(one_line(f"The MCP server “{request.server}” asks you"))
        self.message_label.setText(visible(request.message))
        self.url_label.setText(f"It asks you to open this page: {visible(request.url)}"
                               if request.url else "")
        self.url_label.setVisible(bool(request.url))
        self.accept_button.setText("Open the page" if request.url else "Accept")
        self.arming.allow(self.accept_button, not request.url or openable(request.url))
        while self.form.rowCount():
            self.form.removeRow(0)
        self.editors = [FieldEditor(f, self.form_page) for f in fields]
        for editor in self.editors:
            f = editor.field
            label = "" if f.kind == "boolean" else one_line(f.title) + (" *" if f.required
                                                                         else "")
            self.form.addRow(plain_label(label, self.form_page, f"Label of {f.title}",
                                         wrap=False), editor)
        self.scroll_area.setVisible(bool(fields))
        self.problem_label.hide()
        self.update_count(position, total)
        self.arming.start()

    def values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The fields' content and an error per wrong field (shown under it)."""
        content, errors = read_values(self.fields, {e.field.name: e.raw()
                                                    for e in self.editors})
        for editor in self.editors:
            editor.show_error(errors.get(editor.field.name, ""))
        return content, errors

    def _accept(self) -> None:
        if self.request is None or not self.armed or not self.isVisible():
            return
        if self.request.url:
            if not openable(self.request.url):
                return
            QDesktopServices.openUrl(QUrl(self.request.url))
            self.answered.emit("accept", None)
            return
        content, errors = self.values()
        if errors:
            count = len(errors)
            self.problem_label.setText(f"{count} field{'s' if count != 1 else ''} need"
                                       f"{'' if count != 1 else 's'} a change before the "
                                       "form can be sent.")
            self.problem_label.show()
            return
        self.answered.emit("accept", content)

    def _answer(self, action: str) -> None:
        if self.request is not None and self.armed and self.isVisible():
            self.answered.emit(action, None)

    def reject(self) -> None:
        """Esc or the close button: cancel the form (nothing is sent)."""
        if self.request is not None and self.isVisible():
            self.answered.emit("cancel", None)

    def closeEvent(self, event: QCloseEvent) -> None:
        event.ignore()
        self.reject()
