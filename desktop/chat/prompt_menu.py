"""The prompt box's `/` menu: the ready MCP servers' prompts.

Typing `/` at the start of an empty prompt asks for the prompts (`wanted`; the controller
sends ListMcpPrompts and hands the answer to `set_prompts`) and lists them above the box;
what follows the `/` filters them (`matching`, pure). Up/Down move, Enter or Tab or a click
picks one, Esc closes the list — while it is open those keys belong to it (an event filter
on the editor; the editor itself is unchanged), so Enter never sends the `/` text. A prompt
with arguments asks for them in a small form (`PromptArguments`); then `fetch(server, name,
arguments)` asks the kernel for its messages, and `fill(text)` puts them into the box.
Nothing is sent: the user reads the text, edits it, and sends it as any prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from kernel.protocol import McpPromptInfo
from kernel.visible import one_line

_ROLE = int(Qt.ItemDataRole.UserRole) + 1


def typed_command(text: str) -> str | None:
    """What follows a `/` that starts the prompt, while it is still one word; else None."""
    if not text.startswith("/"):
        return None
    rest = text[1:]
    return None if any(c.isspace() for c in rest) else rest


def matching(prompts: Sequence[McpPromptInfo], typed: str) -> list[McpPromptInfo]:
    """The prompts `typed` names, best first: those whose name or `server/name` starts with
    it, then those that contain it (case-insensitive); all of them for nothing typed."""
    needle = typed.lower()
    starts, contains = [], []
    for prompt in prompts:
        name, full = prompt.name.lower(), f"{prompt.server}/{prompt.name}".lower()
        if name.startswith(needle) or full.startswith(needle):
            starts.append(prompt)
        elif needle in full:
            contains.append(prompt)
    return starts + contains


def label(prompt: McpPromptInfo) -> str:
    """One line of the menu: server/name, its arguments, its description."""
    args = " ".join(f"<{a}>" if a in prompt.required else f"[{a}]" for a in prompt.arguments)
    text = f"/{prompt.server}/{prompt.name}" + (f" {args}" if args else "")
    return one_line(text + (f" — {prompt.description}" if prompt.description else ""))


class PromptArguments(QDialog):
    """A prompt's arguments: one line each, the required ones marked; OK needs them."""

    def __init__(self, prompt: McpPromptInfo, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.prompt = prompt
        self.setWindowTitle(f"{one_line(prompt.server)}/{one_line(prompt.name)} — Reins")
        self.setAccessibleName("Arguments of the prompt")
        intro = QLabel(one_line(prompt.description or f"The prompt {prompt.name} asks for:"),
                       self)
        intro.setTextFormat(Qt.TextFormat.PlainText)
        intro.setWordWrap(True)
        form = QFormLayout()
        self.edits: dict[str, QLineEdit] = {}
        for name in prompt.arguments:
            edit = QLineEdit(self)
            edit.setAccessibleName(name)
            edit.textChanged.connect(self._update)
            self.edits[name] = edit
            shown = QLabel(one_line(name) + (" *" if name in prompt.required else ""), self)
            shown.setTextFormat(Qt.TextFormat.PlainText)
            form.addRow(shown, edit)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Get the prompt")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self._update()

    def values(self) -> dict[str, str]:
        """The arguments given (an optional one left empty is left out)."""
        return {name: edit.text() for name, edit in self.edits.items() if edit.text()}

    def _update(self) -> None:
        ready = all(self.edits[name].text().strip() for name in self.prompt.required
                    if name in self.edits)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ready)


class PromptMenu(QObject):
    """The `/` menu of one prompt editor (see the module docstring)."""

    wanted = Signal()
    """The user began a `/` command: the prompts should be listed (ListMcpPrompts)."""
    fetch = Signal(str, str, object)
    """(server, name, arguments): get that prompt's text (GetMcpPrompt)."""

    def __init__(self, edit: QPlainTextEdit) -> None:
        super().__init__(edit)
        self.edit = edit
        self.prompts: tuple[McpPromptInfo, ...] = ()
        self.listed = False
        """The prompts were asked for, for the `/` command being typed."""
        self.received = False
        """Their answer came."""
        self.list = QListWidget(edit.window())
        self.list.setAccessibleName("Server prompts")
        self.list.setWindowFlags(Qt.WindowType.ToolTip | Qt.WindowType.FramelessWindowHint)
        self.list.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.itemClicked.connect(self._pick_item)
        self.arguments: PromptArguments | None = None
        edit.textChanged.connect(self._typed)
        edit.installEventFilter(self)

    @property
    def open(self) -> bool:
        return self.list.isVisible()

    def set_prompts(self, prompts: Sequence[McpPromptInfo]) -> None:
        """The ready servers' prompts (McpPromptList)."""
        self.prompts = tuple(prompts)
        self.received = True
        if self.listed:
            self._typed()

    def fill(self, text: str) -> None:
        """A fetched prompt's text into the box, for the user to read and send (McpPromptText)."""
        self.close()
        self.edit.setPlainText(text)
        self.edit.setFocus()

    def close(self) -> None:
        self.list.hide()

    def texts(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def _typed(self) -> None:
        typed = typed_command(self.edit.toPlainText())
        if typed is None or self.edit.isReadOnly():
            self.listed = False
            self.close()
            return
        if not self.listed:
            self.listed, self.received, self.prompts = True, False, ()
            self.wanted.emit()
        self._show(matching(self.prompts, typed))

    def _show(self, prompts: list[McpPromptInfo]) -> None:
        self.list.clear()
        for prompt in prompts:
            item = QListWidgetItem(label(prompt))
            item.setToolTip(item.text())
            item.setData(_ROLE, prompt)
            self.list.addItem(item)
        if not prompts:
            note = ("No prompt matches" if self.prompts else
                    "No ready MCP server offers prompts" if self.received else
                    "Asking the MCP servers for their prompts…")
            item = QListWidgetItem(note)
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.addItem(item)
        if prompts:
            self.list.setCurrentRow(0)
        rows = min(self.list.count(), 8)
        height = rows * max(self.list.sizeHintForRow(0), 18) + 6
        width = max(self.edit.width(), 320)
        self.list.resize(width, height)
        self.list.move(self.edit.mapToGlobal(QPoint(0, -height - 2)))
        self.list.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.edit and event.type() == QEvent.Type.KeyPress and self.open:
            assert isinstance(event, QKeyEvent)
            key = event.key()
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
                step = -1 if key == Qt.Key.Key_Up else 1
                row = self.list.currentRow() + step
                if 0 <= row < self.list.count() and self.list.item(row).data(_ROLE):
                    self.list.setCurrentRow(row)
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab):
                item = self.list.currentItem()
                if item is not None and item.data(_ROLE) is not None:
                    self._pick_item(item)
                return True
            if key == Qt.Key.Key_Escape:
                self.close()
                return True
        return False

    def _pick_item(self, item: QListWidgetItem) -> None:
        prompt = item.data(_ROLE)
        if isinstance(prompt, McpPromptInfo):
            self.pick(prompt)

    def pick(self, prompt: McpPromptInfo) -> None:
        """Use `prompt`: ask for its arguments if it has any, then fetch it."""
        self.close()
        if not prompt.arguments:
            self.fetch.emit(prompt.server, prompt.name, {})
            return
        dialog = PromptArguments(prompt, self.edit.window())
        dialog.accepted.connect(lambda: self.fetch.emit(prompt.server, prompt.name,
                                                        dialog.values()))
        self.arguments = dialog
        dialog.open()
