"""The composer's model picker: the model the current session really sends, changeable
for that session. Its list is the endpoint's (`GET /v1/models`, asked by the kernel); a
name can always be typed, for an endpoint that lists none. With no session open it shows
the model new sessions get, not editable (its description says which it is). Models are
shown by their names as a person reads them ("Claude Sonnet 4.6": kernel.shared.model_names;
the id in each item's tooltip), the demo as what it is, never by its id alone."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from kernel.shared.demo import is_demo
from kernel.shared.model_names import friendly_name

CHARS, LEAST = 16, 90
"""Its box's width in characters, and the least it narrows to in a narrow window (px)."""


class ModelPicker(QWidget):
    chosen = Signal(str)
    """A model the user picked or typed for the current session."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox(self)
        self.combo.setAccessibleName("Model of this session")
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.combo.setMinimumContentsLength(CHARS)
        self.combo.setMinimumWidth(LEAST)
        self.combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo)
        self._model = ""
        self._listed_error = ""
        self.combo.textActivated.connect(self._activated)
        line = self.combo.lineEdit()  # (a typed name no item matches is not "activated")
        assert line is not None  # the combo box is editable
        line.setAccessibleName("Model name")
        line.returnPressed.connect(lambda: self._activated(line.text()))
        self.show_model("", session=False)

    @property
    def model(self) -> str:
        return self._model

    def set_models(self, models: tuple[str, ...], error: str = "") -> None:
        """The endpoint's list (empty, with why, when it gave none)."""
        self._listed_error = error
        self.combo.blockSignals(True)
        self.combo.clear()
        for model, shown in _names(models):
            self.combo.addItem(shown, model)
            self.combo.setItemData(self.combo.count() - 1, model, Qt.ItemDataRole.ToolTipRole)
        self.combo.setEditText(self._shown())
        self.combo.blockSignals(False)
        self._tooltip()

    def show_model(self, model: str, *, session: bool) -> None:
        """The current session's model (`session`), or the one new sessions get."""
        self._model = model
        self.combo.setEnabled(session)
        self.combo.setEditText(self._shown() or "—")
        line = self.combo.lineEdit()
        if line is not None:
            line.setCursorPosition(0)  # a name too long for the box shows its start
        self.combo.setAccessibleDescription("The model this session sends to" if session
                                            else "The model new sessions get")
        self._tooltip()

    def _shown(self) -> str:
        return friendly_name(self._model)

    def _tooltip(self) -> None:
        if is_demo(self._model):
            tip = ("The demo model: a script that shows what Reins does, not an AI. Add a key "
                   "in Settings, then pick or type a real model here")
        elif not self.combo.isEnabled():
            tip = "Set in Settings → Model; open a session to change its own model"
        elif self._listed_error:
            tip = (f"The model this session sends to. The endpoint listed no models "
                   f"({self._listed_error}): type a model name and press Enter")
        else:
            tip = "The model this session sends to: pick one, or type a name and press Enter"
        self.combo.setToolTip(tip)

    def _activated(self, text: str) -> None:
        model = self._model_named(text.strip())
        if not model or model == self._model:
            self.combo.setEditText(self._shown())
            return
        self._model = model
        self.combo.setEditText(self._shown())
        self.chosen.emit(model)

    def _model_named(self, text: str) -> str:
        """The model an item shows as `text`, the current one if it is shown so, or `text`
        itself: a name typed for an endpoint that lists none."""
        found = self.combo.findText(text)
        if found >= 0:
            return str(self.combo.itemData(found) or text)
        return self._model if text == self._shown() else text


def _names(models: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each model with the name it is listed by: its friendly name, or its id where two
    models would read the same (a dated id beside its alias)."""
    named = [(model, friendly_name(model)) for model in models]
    counts: dict[str, int] = {}
    for _model, shown in named:
        counts[shown] = counts.get(shown, 0) + 1
    return [(model, shown if counts[shown] == 1 else model) for model, shown in named]
