"""Servers' forms in the app: the schema → fields mapping and the values read back (pure
tables), the form dialog (what it shows, per-field errors, its three answers, no keystroke
or early click answers it), and the queue (one at a time, an unshowable form declined with
a note)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QCheckBox, QComboBox, QLineEdit, QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.deliberate import ARM_DELAY_MS
from desktop.mcp_requests.form_dialog import FieldEditor, FormDialog
from desktop.mcp_requests.queue import McpRequests
from desktop.mcp_requests.schema import (
    Choice,
    FormField,
    UnsupportedForm,
    form_fields,
    initial_value,
    read_value,
    read_values,
)
from kernel.protocol import McpFormAnswer, McpFormRequest
from tests.desktop.conftest import ARMED_WAIT_MS, click_answer, typing_window, wait_armed

EVERYTHING = {  # server-everything's trigger-elicitation-request form, as it sends it
    "type": "object", "required": ["name"], "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
        "check": {"title": "Boolean", "type": "boolean"},
        "firstLine": {"title": "String with default", "type": "string",
                      "default": "It was a dark and stormy night."},
        "email": {"title": "Email", "type": "string", "format": "email"},
        "homepage": {"type": "string", "format": "uri"},
        "birthdate": {"type": "string", "format": "date"},
        "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
        "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 3.14},
        "friend": {"type": "string", "enum": ["Monica", "Rachel"], "default": "Monica"},
        "tools": {"type": "array", "minItems": 1, "maxItems": 2,
                  "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]},
                  "default": ["Guitar"]},
        "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"},
                                             {"const": "hero-2", "title": "Wonder Woman"}]},
        "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"},
                                                      {"const": "f2", "title": "Trout"}]}},
        "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
    }}


# ---- the schema as fields ---------------------------------------------------------------


def _one(prop: dict[str, Any], required: bool = False) -> FormField:
    schema = {"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []}
    (field,) = form_fields(schema)
    return field


@pytest.mark.parametrize(("prop", "expected"), [
    ({"type": "string"}, {"kind": "text", "title": "x"}),
    ({"type": "string", "title": "Name", "description": "Yours"},
     {"kind": "text", "title": "Name", "description": "Yours"}),
    ({"type": "string", "minLength": 2, "maxLength": 5}, {"min_length": 2, "max_length": 5}),
    ({"type": "string", "format": "email"}, {"kind": "email"}),
    ({"type": "string", "format": "uri"}, {"kind": "uri"}),
    ({"type": "string", "format": "date"}, {"kind": "date"}),
    ({"type": "string", "format": "date-time"}, {"kind": "date-time"}),
    ({"type": "string", "default": "hi"}, {"default": "hi"}),
    ({"type": "integer", "minimum": 1, "maximum": 9}, {"kind": "integer", "minimum": 1.0,
                                                       "maximum": 9.0}),
    ({"type": "number", "minimum": -0.5}, {"kind": "number", "minimum": -0.5, "maximum": None}),
    ({"type": "boolean", "default": True}, {"kind": "boolean", "default": True}),
    ({"type": "string", "enum": ["a", "b"]},
     {"kind": "choice", "choices": (Choice("a", "a"), Choice("b", "b"))}),
    ({"enum": ["a"]}, {"kind": "choice", "choices": (Choice("a", "a"),)}),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["Ay", "Bee"]},
     {"choices": (Choice("a", "Ay"), Choice("b", "Bee"))}),
    ({"type": "string", "oneOf": [{"const": "a", "title": "Ay"}, {"const": "b"}]},
     {"kind": "choice", "choices": (Choice("a", "Ay"), Choice("b", "b"))}),
    ({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
     {"kind": "choices", "min_items": 1, "max_items": 2}),
    ({"type": "array", "items": {"anyOf": [{"const": 1, "title": "One"}]}},
     {"kind": "choices", "choices": (Choice(1, "One"),)}),
])
def test_each_kind_of_property_becomes_a_field(prop: dict[str, Any],
                                               expected: dict[str, Any]) -> None:
    field = _one(prop)
    for key, value in expected.items():
        assert getattr(field, key) == value, key


def test_a_whole_form_keeps_its_order_and_what_is_required() -> None:
    fields = form_fields(EVERYTHING)
    assert [f.name for f in fields] == list(EVERYTHING["properties"])
    assert [f.name for f in fields if f.required] == ["name"]
    assert {f.name: f.kind for f in fields}["fish"] == "choices"
    assert form_fields({"type": "object"}) == ()
    assert form_fields({"properties": {}}) == ()


@pytest.mark.parametrize(("schema", "why"), [
    ([], "not a JSON Schema object"),
    ("form", "not a JSON Schema object"),
    ({"type": "array"}, "of type 'array'"),
    ({"properties": []}, "'properties' is not an object"),
    ({"properties": {"x": {"type": "string"}}, "required": "x"}, "'required' is not a list"),
    ({"properties": {"x": {"type": "string"}}, "required": ["y"]}, "does not describe: y"),
    ({"properties": {"x": "string"}}, "'x' is not described by an object"),
    ({"properties": {"x": {"type": "object", "properties": {}}}}, "uses 'properties'"),
    ({"properties": {"x": {"$ref": "#/defs/a"}}}, "uses '$ref'"),
    ({"properties": {"x": {"allOf": []}}}, "uses 'allOf'"),
    ({"properties": {"x": {"type": "null"}}}, "of type 'null'"),
    ({"properties": {"x": {}}}, "of type None"),
    ({"properties": {"x": {"type": ["string", "null"]}}}, "of type ['string', 'null']"),
    ({"properties": {"x": {"type": "string", "format": "ipv4"}}}, "format 'ipv4'"),
    ({"properties": {"x": {"type": "array", "items": {"type": "string"}}}}, "offers no choices"),
    ({"properties": {"x": {"type": "array"}}}, "offers no choices"),
    ({"properties": {"x": {"type": "string", "enum": []}}}, "are not a list"),
    ({"properties": {"x": {"type": "string", "enum": "ab"}}}, "are not a list"),
    ({"properties": {"x": {"type": "string", "enum": ["a"], "enumNames": []}}}, "do not match"),
    ({"properties": {"x": {"type": "string", "oneOf": [{"title": "no const"}]}}},
     "not a list of const/title"),
    ({"properties": {"x": {"type": "integer", "minimum": "1"}}}, "minimum of 'x' is not a number"),
    ({"properties": {"x": {"type": "number", "maximum": True}}}, "maximum of 'x' is not a number"),
    ({"properties": {"x": {"type": "string", "maxLength": -1}}}, "maxLength of 'x' is not a"),
    ({"properties": {"x": {"type": "array", "items": {"enum": ["a"]}, "minItems": 1.5}}},
     "minItems of 'x' is not a count"),
])
def test_what_a_form_cannot_show_is_refused_whole(schema: Any, why: str) -> None:
    with pytest.raises(UnsupportedForm, match=why.replace("[", r"\[").replace("$", r"\$")):
        form_fields(schema)


# ---- values read back -------------------------------------------------------------------


TEXT = FormField("t", "text", "T")
NEEDED = FormField("t", "text", "T", required=True)


@pytest.mark.parametrize(("field", "raw", "value"), [
    (TEXT, "  hi  ", "hi"),
    (TEXT, "", None),
    (TEXT, None, None),
    (FormField("e", "email", "E"), "a@b.org", "a@b.org"),
    (FormField("u", "uri", "U"), "https://example.org/x?y=1", "https://example.org/x?y=1"),
    (FormField("u", "uri", "U"), "mailto:a@b.org", "mailto:a@b.org"),
    (FormField("d", "date", "D"), "2026-02-28", "2026-02-28"),
    (FormField("d", "date-time", "D"), "2026-02-28T10:00:00Z", "2026-02-28T10:00:00Z"),
    (FormField("i", "integer", "I", minimum=1, maximum=100), "42", 42),
    (FormField("i", "integer", "I", minimum=1, maximum=100), " 1 ", 1),
    (FormField("n", "number", "N", minimum=0, maximum=10), "3.5", 3.5),
    (FormField("n", "number", "N"), "7", 7),
    (FormField("n", "number", "N"), "-1e3", -1000.0),
    (FormField("b", "boolean", "B"), True, True),
    (FormField("b", "boolean", "B", required=True), False, False),
    (FormField("c", "choice", "C", choices=(Choice("a", "A"),)), "a", "a"),
    (FormField("c", "choice", "C", choices=(Choice("a", "A"),)), None, None),
    (FormField("m", "choices", "M", choices=(Choice("a", "A"), Choice("b", "B"))),
     ["b", "a"], ["a", "b"]),
    (FormField("m", "choices", "M", choices=(Choice("a", "A"),)), [], None),
    (FormField("s", "text", "S", min_length=2, max_length=3), "abc", "abc"),
])
def test_values_that_fit(field: FormField, raw: Any, value: Any) -> None:
    assert read_value(field, raw) == value


@pytest.mark.parametrize(("field", "raw", "error"), [
    (NEEDED, "", "Required."),
    (NEEDED, "   ", "Required."),
    (FormField("e", "email", "E"), "not an address", "An email address"),
    (FormField("e", "email", "E"), "a@b", "An email address"),
    (FormField("e", "email", "E"), "a b@c.org", "An email address"),
    (FormField("u", "uri", "U"), "example.org", "An address with its scheme"),
    (FormField("u", "uri", "U"), "https://exa mple.org", "An address with its scheme"),
    (FormField("u", "uri", "U"), "1http://x", "An address with its scheme"),
    (FormField("d", "date", "D"), "2026-02-30", "A date as YYYY-MM-DD."),
    (FormField("d", "date", "D"), "28.02.2026", "A date as YYYY-MM-DD."),
    (FormField("d", "date", "D"), "20260228", "A date as YYYY-MM-DD."),
    (FormField("d", "date-time", "D"), "tomorrow", "A date and time"),
    (FormField("i", "integer", "I"), "4.5", "A whole number."),
    (FormField("i", "integer", "I"), "forty", "A whole number."),
    (FormField("i", "integer", "I", minimum=1, maximum=100), "0", "At least 1."),
    (FormField("i", "integer", "I", minimum=1, maximum=100), "101", "At most 100."),
    (FormField("n", "number", "N"), "nan", "A number."),
    (FormField("n", "number", "N"), "inf", "A number."),
    (FormField("n", "number", "N"), "1,5", "A number."),
    (FormField("n", "number", "N", minimum=0.5), "0.25", "At least 0.5."),
    (FormField("c", "choice", "C", required=True, choices=(Choice("a", "A"),)), None,
     "Pick one."),
    (FormField("c", "choice", "C", choices=(Choice("a", "A"),)), "z", "Pick one of"),
    (FormField("m", "choices", "M", required=True, choices=(Choice("a", "A"),)), [],
     "Pick at least one."),
    (FormField("m", "choices", "M", min_items=2, choices=(Choice("a", "A"), Choice("b", "B"))),
     ["a"], "Pick at least 2."),
    (FormField("m", "choices", "M", max_items=1, choices=(Choice("a", "A"), Choice("b", "B"))),
     ["a", "b"], "Pick at most 1."),
    (FormField("m", "choices", "M", choices=(Choice("a", "A"),)), ["z"], "Pick from"),
    (FormField("s", "text", "S", min_length=2), "a", "At least 2 characters."),
    (FormField("s", "text", "S", max_length=3), "abcd", "At most 3 characters."),
])
def test_values_that_do_not_fit_say_why(field: FormField, raw: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        read_value(field, raw)


def test_the_whole_form_is_read_with_an_error_per_field() -> None:
    fields = form_fields(EVERYTHING)
    raw = {f.name: initial_value(f) for f in fields}
    content, errors = read_values(fields, raw)
    assert errors == {"name": "Required."}
    assert content == {"check": False, "firstLine": "It was a dark and stormy night.",
                       "integer": 42, "number": 3.14, "friend": "Monica",
                       "tools": ["Guitar"]}
    raw.update(name="Ada", email="ada@", integer="500")
    content, errors = read_values(fields, raw)
    assert set(errors) == {"email", "integer"} and content["name"] == "Ada"


@pytest.mark.parametrize(("field", "initial"), [
    (FormField("t", "text", "T", default=5), "5"),
    (FormField("t", "text", "T", default={"a": 1}), ""),
    (FormField("b", "boolean", "B", default="yes"), False),
    (FormField("c", "choice", "C", default="z", choices=(Choice("a", "A"),)), None),
    (FormField("m", "choices", "M", default=["z", "a"], choices=(Choice("a", "A"),)), ["a"]),
    (FormField("m", "choices", "M", default="a", choices=(Choice("a", "A"),)), []),
])
def test_a_default_is_shown_only_when_it_fits(field: FormField, initial: Any) -> None:
    assert initial_value(field) == initial


# ---- the dialog -------------------------------------------------------------------------


def _request(schema: Any = None, message: str = "Please fill this in", **kw: Any
             ) -> McpFormRequest:
    return McpFormRequest(kw.pop("request_id", "form-1"), kw.pop("server", "every"), message,
                          None, EVERYTHING if schema is None else schema, **kw)


def _queue(qtbot: QtBot) -> tuple[McpRequests, list[Any], list[str]]:
    window = QWidget()
    qtbot.addWidget(window)
    queue = McpRequests(window)
    answers: list[Any] = []
    notes: list[str] = []
    queue.answer.connect(answers.append)
    queue.note.connect(notes.append)
    return queue, answers, notes


def _editor(dialog: FormDialog, name: str) -> FieldEditor:
    return next(e for e in dialog.editors if e.field.name == name)


def test_the_dialog_shows_the_server_its_message_escaped_and_every_field(qtbot: QtBot) -> None:
    queue, _, _ = _queue(qtbot)
    queue.submit_form(_request(message="Fill\x1b[2J in\u202egnp.exe", server="ev\x1bil"))
    dialog = queue.form_dialog
    assert dialog.isVisible() and not dialog.isModal()
    assert dialog.server_label.text() == "The MCP server “ev\\x1bil” asks you"
    assert dialog.message_label.text() == "Fill\\x1b[2J in\\u202egnp.exe"
    assert dialog.message_label.textFormat() == Qt.TextFormat.PlainText
    assert [e.field.name for e in dialog.editors] == list(EVERYTHING["properties"])
    assert isinstance(_editor(dialog, "check").editor, QCheckBox)
    combo = _editor(dialog, "hero").editor
    assert isinstance(combo, QComboBox)
    assert [combo.itemText(i) for i in range(combo.count())] == [
        "— none —", "Superman", "Wonder Woman"]
    pet = _editor(dialog, "pet").editor
    assert isinstance(pet, QComboBox) and pet.itemText(1) == "Cats" and pet.itemData(1) == "p1"
    first = _editor(dialog, "firstLine").editor
    assert isinstance(first, QLineEdit) and first.text() == "It was a dark and stormy night."
    assert _editor(dialog, "name").note.text() == "Your full, legal name"
    assert _editor(dialog, "integer").note.text() == "From 1 to 100."
    labels = [dialog.form.itemAt(i, dialog.form.ItemRole.LabelRole).widget().text()
              for i in range(dialog.form.rowCount())]
    assert labels[0] == "String *" and labels[1] == ""  # a checkbox carries its own label


def test_accept_sends_only_a_valid_form_and_says_what_is_wrong(qtbot: QtBot) -> None:
    queue, answers, _ = _queue(qtbot)
    queue.submit_form(_request())
    dialog = queue.form_dialog
    email = _editor(dialog, "email")
    assert isinstance(email.editor, QLineEdit)
    email.editor.setText("not-an-address")
    click_answer(qtbot, dialog, dialog.accept_button)
    assert answers == [] and dialog.isVisible()
    assert _editor(dialog, "name").error.text() == "Required."
    assert email.error.text().startswith("An email address")
    assert dialog.problem_label.text() == "2 fields need a change before the form can be sent."
    name = _editor(dialog, "name").editor
    assert isinstance(name, QLineEdit)
    name.setText("Ada Lovelace")
    email.editor.setText("ada@example.org")
    tools = [b for b in _editor(dialog, "tools").editor.findChildren(QCheckBox)]
    tools[1].setChecked(True)
    qtbot.mouseClick(dialog.accept_button, Qt.MouseButton.LeftButton)
    (answer,) = answers
    assert isinstance(answer, McpFormAnswer) and answer.action == "accept"
    assert answer.content["name"] == "Ada Lovelace" and answer.content["integer"] == 42
    assert answer.content["tools"] == ["Guitar", "Piano"] and "hero" not in answer.content
    assert not dialog.isVisible() and len(queue) == 0


@pytest.mark.parametrize(("how", "action"), [("decline", "decline"), ("cancel", "cancel"),
                                             ("escape", "cancel"), ("close", "cancel")])
def test_decline_cancel_esc_and_close_send_no_values(qtbot: QtBot, how: str,
                                                     action: str) -> None:
    queue, answers, _ = _queue(qtbot)
    queue.submit_form(_request())
    dialog = queue.form_dialog
    # Armed by the clock is not yet clickable (the arming timer, late on a loaded machine,
    # enables the buttons): wait for the button itself, and for the answer it sends.
    buttons = {"decline": dialog.decline_button, "cancel": dialog.cancel_button}
    wait_armed(qtbot, dialog, dialog.cancel_button)
    with qtbot.waitSignal(queue.answer, timeout=ARMED_WAIT_MS):
        if how in buttons:
            click_answer(qtbot, dialog, buttons[how])
        elif how == "escape":
            qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        else:
            dialog.close()
    assert answers == [McpFormAnswer("form-1", action, None)]


def test_no_keystroke_or_early_click_answers_a_form(qtbot: QtBot) -> None:
    window, edit = typing_window(qtbot)
    queue = McpRequests(window)
    answers: list[Any] = []
    queue.answer.connect(answers.append)
    queue.submit_form(_request({"properties": {"x": {"type": "string", "default": "d"}}}))
    dialog = queue.form_dialog
    dialog.arming.delay_ms = 5_000
    for button in (dialog.accept_button, dialog.decline_button, dialog.cancel_button):
        assert not button.isEnabled() and not button.autoDefault() and not button.isDefault()
        assert button.focusPolicy() == Qt.FocusPolicy.NoFocus
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    for _ in range(3):  # typing on in the prompt: the keys stay there
        qtbot.keyClicks(QApplication.focusWidget(), "yes ")
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    assert QApplication.focusWidget() is edit and edit.text() == "yes " * 3
    dialog.arming.delay_ms = ARM_DELAY_MS
    dialog.arming.refresh()
    wait_armed(qtbot, dialog, dialog.accept_button)
    field = dialog.editors[0].editor
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
        qtbot.keyClick(field, key)  # Enter in a field is no answer
    assert answers == [] and dialog.isVisible()
    dialog.present(activate=True)  # the user turns to the form: its chord works there
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dialog)
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert answers == [McpFormAnswer("form-1", "accept", {"x": "d"})]


def test_forms_wait_their_turn_and_an_unshowable_one_is_declined_with_a_note(
        qtbot: QtBot) -> None:
    queue, answers, notes = _queue(qtbot)
    queue.submit_form(_request(request_id="form-1"))
    queue.submit_form(_request({"properties": {"y": {"type": "integer"}}}, request_id="form-2"))
    queue.submit_form(_request(request_id="form-2"))  # (the same request again: once)
    queue.submit_form(_request({"properties": {"n": {"type": "object", "properties": {}}}},
                               request_id="form-3", server="deep"))
    assert answers == [McpFormAnswer("form-3", "decline")]
    assert notes == ["The MCP server “deep” asked for a form Reins cannot show (the field "
                     "'n' uses 'properties', which a form cannot show), so it was declined."]
    dialog = queue.form_dialog
    assert len(queue) == 2 and dialog.count_label.text() == "1 of 2 forms"
    click_answer(qtbot, dialog, dialog.decline_button)
    assert dialog.request is not None and dialog.request.request_id == "form-2"
    assert [e.field.name for e in dialog.editors] == ["y"]
    assert not dialog.count_label.isVisibleTo(dialog)
    _editor(dialog, "y").editor.setText("7")  # type: ignore[attr-defined]
    click_answer(qtbot, dialog, dialog.accept_button)
    assert answers[-1] == McpFormAnswer("form-2", "accept", {"y": 7})
    assert not dialog.isVisible()
    queue.submit_form(_request(request_id="form-4"))
    queue.clear()
    assert len(queue) == 0 and not dialog.isVisible()


def test_a_url_form_opens_only_a_web_page(qtbot: QtBot) -> None:
    queue, answers, _ = _queue(qtbot)
    queue.submit_form(_request({}, url="javascript:alert(1)", request_id="u1"))
    dialog = queue.form_dialog
    assert dialog.url_label.text() == "It asks you to open this page: javascript:alert(1)"
    assert dialog.accept_button.text() == "Open the page" and not dialog.scroll_area.isVisible()
    wait_armed(qtbot, dialog, dialog.decline_button)
    assert not dialog.accept_button.isEnabled()
    qtbot.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert answers == []
    click_answer(qtbot, dialog, dialog.decline_button)
    assert answers == [McpFormAnswer("u1", "decline")]
