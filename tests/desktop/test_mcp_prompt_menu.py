"""The prompt box's `/` menu of server prompts: what counts as a `/` command and what it
matches (pure tables), and the menu on the real prompt box: it lists, filters, picks with
the keys or a click, asks for arguments, fills the box — and never sends anything."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from desktop.chat.prompt import PromptBox
from desktop.chat.prompt_menu import PromptMenu, label, matching, typed_command
from kernel.protocol import McpPromptInfo

SIMPLE = McpPromptInfo("every", "simple-prompt", "A prompt without arguments")
ARGS = McpPromptInfo("every", "args-prompt", "A prompt with arguments", ("city", "state"),
                     ("city",))
REVIEW = McpPromptInfo("git", "review", "Review the diff")
PROMPTS = (SIMPLE, ARGS, REVIEW)


@pytest.mark.parametrize(("text", "typed"), [
    ("/", ""), ("/args", "args"), ("/every/args", "every/args"), ("/ARGS", "ARGS"),
    ("", None), ("hello", None), (" /args", None), ("/args ", None), ("/args now", None),
    ("/a\nb", None), ("/a\tb", None), ("x/args", None),
])
def test_what_counts_as_a_slash_command(text: str, typed: str | None) -> None:
    assert typed_command(text) == typed


@pytest.mark.parametrize(("typed", "names"), [
    ("", ["simple-prompt", "args-prompt", "review"]),
    ("args", ["args-prompt"]),
    ("ARGS", ["args-prompt"]),
    ("every/", ["simple-prompt", "args-prompt"]),
    ("git/rev", ["review"]),
    ("prompt", ["simple-prompt", "args-prompt"]),
    ("rev", ["review"]),
    ("e", ["simple-prompt", "args-prompt", "review"]),  # starts first, then contains
    ("view", ["review"]),
    ("nothing", []),
])
def test_what_a_command_matches(typed: str, names: list[str]) -> None:
    assert [p.name for p in matching(PROMPTS, typed)] == names


def test_a_line_names_the_arguments_and_escapes() -> None:
    assert label(ARGS) == "/every/args-prompt <city> [state] — A prompt with arguments"
    assert label(McpPromptInfo("s", "n\x1b[2J", "d\u202e")) == "/s/n\\x1b[2J — d\\u202e"


def _box(qtbot: QtBot) -> tuple[PromptBox, PromptMenu, list[str], list[Any], list[int]]:
    box = PromptBox()
    qtbot.addWidget(box)
    box.show()
    menu = PromptMenu(box.edit)
    sent: list[str] = []
    fetched: list[Any] = []
    wanted: list[int] = []
    box.send.connect(sent.append)
    menu.fetch.connect(lambda *args: fetched.append(args))
    menu.wanted.connect(lambda: wanted.append(1))
    return box, menu, sent, fetched, wanted


def test_typing_a_slash_lists_filters_and_enter_picks(qtbot: QtBot) -> None:
    box, menu, sent, fetched, wanted = _box(qtbot)
    qtbot.keyClicks(box.edit, "/")
    assert wanted == [1] and menu.open
    assert menu.texts() == ["Asking the MCP servers for their prompts…"]
    qtbot.keyClick(box.edit, Qt.Key.Key_Return)  # nothing to pick yet: nothing is sent
    assert sent == [] and fetched == []
    menu.set_prompts(PROMPTS)
    assert len(menu.texts()) == 3
    qtbot.keyClicks(box.edit, "e")
    assert wanted == [1], "listed once per command"
    assert [t.split()[0] for t in menu.texts()] == [
        "/every/simple-prompt", "/every/args-prompt", "/git/review"]
    qtbot.keyClick(box.edit, Qt.Key.Key_Down)
    qtbot.keyClick(box.edit, Qt.Key.Key_Down)
    qtbot.keyClick(box.edit, Qt.Key.Key_Up)
    assert menu.list.currentRow() == 1
    qtbot.keyClicks(box.edit, "very/s")
    assert menu.list.currentRow() == 0 and len(menu.texts()) == 1
    qtbot.keyClick(box.edit, Qt.Key.Key_Return)
    assert fetched == [("every", "simple-prompt", {})] and sent == [] and not menu.open
    menu.fill("Hello from the server.\nSecond line.")
    assert box.edit.toPlainText() == "Hello from the server.\nSecond line." and sent == []
    qtbot.keyClick(box.edit, Qt.Key.Key_Return)  # the user's own send
    assert sent == ["Hello from the server.\nSecond line."]


def test_no_match_esc_and_a_space_close_the_menu(qtbot: QtBot) -> None:
    box, menu, sent, fetched, _ = _box(qtbot)
    stops: list[int] = []
    box.escaped.connect(lambda: stops.append(1))
    box.set_running(True)
    qtbot.keyClicks(box.edit, "/zz")
    menu.set_prompts(PROMPTS)
    assert menu.texts() == ["No prompt matches"]
    qtbot.keyClick(box.edit, Qt.Key.Key_Escape)
    assert not menu.open and stops == [], "Esc closes the menu, it does not stop the run"
    qtbot.keyClick(box.edit, Qt.Key.Key_Escape)
    assert stops == [1]
    box.edit.clear()
    qtbot.keyClicks(box.edit, "/ar")
    menu.set_prompts(PROMPTS)
    assert menu.open
    qtbot.keyClicks(box.edit, " and more")
    assert not menu.open and box.edit.toPlainText() == "/ar and more"
    box.edit.clear()
    qtbot.keyClicks(box.edit, "/")
    menu.set_prompts(())
    assert menu.texts() == ["No ready MCP server offers prompts"]
    assert fetched == [] and sent == []


def test_a_click_picks_and_arguments_are_asked_for(qtbot: QtBot) -> None:
    box, menu, sent, fetched, _ = _box(qtbot)
    qtbot.keyClicks(box.edit, "/args")
    menu.set_prompts(PROMPTS)
    item = menu.list.item(0)
    qtbot.mouseClick(menu.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=menu.list.visualItemRect(item).center())
    dialog = menu.arguments
    assert dialog is not None and dialog.isVisible() and fetched == []
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled(), "city is required"
    dialog.edits["state"].setText("Texas")
    assert not ok.isEnabled()
    dialog.edits["city"].setText("Paris")
    assert ok.isEnabled()
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert fetched == [("every", "args-prompt", {"city": "Paris", "state": "Texas"})]
    assert sent == []


def test_a_cancelled_argument_form_fetches_nothing(qtbot: QtBot) -> None:
    box, menu, _, fetched, _ = _box(qtbot)
    qtbot.keyClicks(box.edit, "/")
    menu.set_prompts(PROMPTS)
    menu.pick(ARGS)
    assert menu.arguments is not None
    menu.arguments.edits["city"].setText("Rome")
    menu.arguments.reject()
    assert fetched == [] and box.edit.toPlainText() == "/"


def test_a_read_only_box_lists_nothing(qtbot: QtBot) -> None:
    box, menu, _, _, wanted = _box(qtbot)
    box.set_enabled_for_input(False, "no key")
    box.edit.setPlainText("/")
    assert wanted == [] and not menu.open
