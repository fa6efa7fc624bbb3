"""The composer's model picker: the model the current session really sends, changeable
for that session. Its list is the endpoint's (`GET /v1/models`, asked by the kernel); a
name can always be typed, for an endpoint that lists none. With no session open it shows
the model new sessions get, not editable. Its forms (`show_form`) are a labelled box and an
unlabelled narrower one, which the composer shows."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

FORMS = ((True, 22), (True, 14), (False, 14))
"""Its forms for the status bar: label shown, and the box's width in characters."""


class ModelPicker(QWidget):
    chosen = Signal(str)
    """A model the user picked or typed for the current session."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("Model:", self)
        self.combo = QComboBox(self)
        self.combo.setAccessibleName("Model of this session")
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.combo.setMinimumContentsLength(FORMS[0][1])
        self.combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.label.setBuddy(self.combo)
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.addWidget(self.label)
        self._row.addWidget(self.combo)
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

    def form_widths(self) -> tuple[int, ...]:
        """Its width in each of FORMS (the box is as wide as that many "x"s, as Qt sizes
        it, and the label its text and the layout's spacing)."""
        box = self.combo.sizeHint().width()
        per_char = self.combo.fontMetrics().horizontalAdvance("x")
        now = self.combo.minimumContentsLength()
        label = self.label.sizeHint().width() + self._row.spacing()
        return tuple(box + (chars - now) * per_char + (label if labelled else 0)
                     for labelled, chars in FORMS)

    def show_form(self, index: int) -> None:
        labelled, chars = FORMS[index]
        self.label.setVisible(labelled)
        if self.combo.minimumContentsLength() != chars:
            self.combo.setMinimumContentsLength(chars)
            # Its size hint follows; its minimum size hint, which a layout also heeds, is
            # never worked out again: the width is set.
            self.combo.setFixedWidth(self.combo.sizeHint().width())

    def set_models(self, models: tuple[str, ...], error: str = "") -> None:
        """The endpoint's list (empty, with why, when it gave none)."""
        self._listed_error = error
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItems(list(models))
        self.combo.setEditText(self._model)
        self.combo.blockSignals(False)
        self._tooltip()

    def show_model(self, model: str, *, session: bool) -> None:
        """The current session's model (`session`), or the one new sessions get."""
        self._model = model
        self.combo.setEnabled(session)
        self.combo.setEditText(model or "—")
        line = self.combo.lineEdit()
        if line is not None:
            line.setCursorPosition(0)  # a name too long for the box shows its start
        self.label.setText("Model:" if session else "Model for new sessions:")
        self._tooltip()

    def _tooltip(self) -> None:
        if not self.combo.isEnabled():
            tip = "Set in Settings → Model; open a session to change its own model"
        elif self._listed_error:
            tip = (f"The model this session sends to. The endpoint listed no models "
                   f"({self._listed_error}): type a model name and press Enter")
        else:
            tip = "The model this session sends to: pick one, or type a name and press Enter"
        self.combo.setToolTip(tip)

    def _activated(self, text: str) -> None:
        model = text.strip()
        if not model or model == self._model:
            self.combo.setEditText(self._model)
            return
        self._model = model
        self.chosen.emit(model)
