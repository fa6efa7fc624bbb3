"""Answer versions (‹ 1/2 ›) and the model named on each answer, on a real ChatModel and a
real ChatView offscreen: what a Retry or an Edit replaced stays reachable in place (its
prose and its tool cards as recorded), an earlier answer to the last message is continued
from through the kernel (`RestoreVersion`), an older turn's is only shown (and says so),
and a session loaded again from its events shows the same versions."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, MessageItem, ToolCardItem
from desktop.chat.overlays import TurnActions
from desktop.chat.view import ChatView
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.shared.demo import DEMO_MODEL, DEMO_SHORT
from kernel.shared.model_names import friendly_name
from tests.desktop.chat_views import shown_view
from tests.desktop.test_main_window import load, make

S = "s1"


def started(model: str) -> ev.SessionStarted:
    return ev.SessionStarted(S, workspace="/w", model=model, sandbox="none")


def answer(text: str) -> list[ev.Event]:
    return [ev.AssistantText(S, text), ev.RunFinished(S, "end_turn")]


def retried(model: str = "claude-opus-4-5-20251101") -> list[ev.Event]:
    """A prompt answered with a call and prose, then asked again (another model)."""
    return [
        started("claude-sonnet-4-6"), ev.UserMessage(S, "what is in a?"),
        ev.ToolCallStarted(S, call_id="c1", name="read_file", input={"path": "a.txt"},
                           summary="a.txt"),
        ev.ToolResultEvent(S, call_id="c1", name="read_file", is_error=False,
                           preview="alpha"),
        *answer("It says alpha."),
        started(model), ev.MessagesSuperseded(S, "regenerate", 1, 1), *answer("Alpha."),
    ]


def shown(model: ChatModel) -> list[str]:
    return [i.text if isinstance(i, MessageItem) else f"card {i.call_id}"
            for i in model.items()]


def fed(*events: ev.Event) -> ChatModel:
    model = ChatModel()
    for event in events:
        apply_event(model, event, at=event.at)
    return model


@pytest.mark.parametrize(("model_id", "name"), [
    ("claude-sonnet-4-6", "Claude Sonnet 4.6"),
    ("claude-opus-4-5-20251101", "Claude Opus 4.5"),
    ("claude-sonnet-4-20250514", "Claude Sonnet 4"),
    ("claude-3-5-haiku-latest", "Claude Haiku 3.5"),
    ("claude-3-7-sonnet-20250219", "Claude Sonnet 3.7"),
    ("claude-3-opus-20240229", "Claude Opus 3"),
    ("Claude-Haiku-4-5", "Claude Haiku 4.5"),
    ("qwen2.5-coder:7b", "qwen2.5-coder:7b"),
    ("claude-sonnet-4-6-my-finetune", "claude-sonnet-4-6-my-finetune"),
    (DEMO_MODEL, DEMO_SHORT),
    ("", ""),
])
def test_a_model_is_named_as_a_person_reads_it(model_id: str, name: str) -> None:
    assert friendly_name(model_id) == name


def test_an_earlier_answer_is_shown_in_place_with_its_cards_and_model(qtbot: QtBot) -> None:
    model = fed(*retried())
    assert shown(model) == ["what is in a?", "Alpha."]
    assert model.items()[1].model == "claude-opus-4-5-20251101"
    found = model.version_group(1)
    assert found is not None and found[0] == 1
    group = found[1]
    assert (group.shown, group.live, len(group.branches)) == (1, 1, 2)
    assert model.continuable(1) and not model.browsing()
    model.show_version(1, 0)
    assert shown(model) == ["what is in a?", "card c1", "It says alpha."]
    assert model.browsing() and model.card_row("c1") is None, "a card lookup goes live"
    model.show_version(1, 0)
    card = model.items()[1]
    assert isinstance(card, ToolCardItem) and card.status == "ok"
    assert card.model == "claude-sonnet-4-6"
    # The kernel's news belongs to the live versions: they are shown again.
    apply_event(model, ev.UserMessage(S, "and b?"))
    assert shown(model) == ["what is in a?", "Alpha.", "and b?"]
    assert not model.browsing()


def test_a_restore_makes_the_shown_version_live_and_a_reload_shows_the_same(
        qtbot: QtBot) -> None:
    events = [*retried(), ev.MessagesSuperseded(S, "restore", 1, 1, restores=0)]
    model = fed(*retried())
    model.show_version(1, 0)  # chosen with ‹: the kernel's event follows
    apply_event(model, events[-1])
    reloaded = fed(*events)  # (a restart: the same events, from the store)
    for chat in (model, reloaded):
        assert shown(chat) == ["what is in a?", "card c1", "It says alpha."]
        found = chat.version_group(2)
        assert found is not None
        group = found[1]
        assert (group.shown, group.live) == (0, 0) and not chat.browsing()
        assert [b.ordinal for b in group.branches] == [-1, 1]
    # Asked again from there: a third version, the restored one kept with the next ordinal.
    apply_event(reloaded, ev.MessagesSuperseded(S, "regenerate", 1, 1))
    apply_event(reloaded, ev.AssistantText(S, "Alpha, thrice."))
    found = reloaded.version_group(1)
    assert found is not None
    assert [b.ordinal for b in found[1].branches] == [2, 1, -1]
    reloaded.show_version(1, 1)
    assert shown(reloaded) == ["what is in a?", "Alpha."]


def test_an_edit_keeps_the_old_prompt_with_its_own_answer_versions(qtbot: QtBot) -> None:
    model = fed(started("claude-sonnet-4-6"), ev.UserMessage(S, "first"), *answer("one"),
                ev.MessagesSuperseded(S, "regenerate", 0, 1), *answer("two"),
                ev.MessagesSuperseded(S, "edit", 0, 0), ev.UserMessage(S, "first, edited"),
                *answer("three"))
    assert shown(model) == ["first, edited", "three"]
    found = model.version_group(1)
    assert found is not None and found[0] == 0, "the edit's versions start at the prompt"
    model.show_version(0, 0)
    assert shown(model) == ["first", "two"]
    inner = model.version_group(1)
    assert inner is not None and inner[0] == 1 and inner[1].shown == 1
    assert not model.continuable(1), "an older branch is only shown"
    model.show_version(1, 0)
    assert shown(model) == ["first", "one"]
    model.show_live()
    assert shown(model) == ["first, edited", "three"]
    model.show_version(0, 0)
    assert shown(model) == ["first", "one"], "each version keeps the one it showed"


def _strip_over_last_turn(qtbot: QtBot, view: ChatView) -> None:
    view.executeDelayedItemsLayout()
    qtbot.waitUntil(lambda: view.turn_actions.isVisible()
                    and view.turn_actions.row == view.chat_model().rowCount() - 1)


def _retried_view(qtbot: QtBot) -> tuple[ChatView, ChatModel, TurnActions]:
    """A shown chat of `retried()`, the pointer's strip over its last turn."""
    view = shown_view(qtbot, 720, 520)
    model = view.chat_model()
    for event in retried():
        apply_event(model, event, at=event.at)
    _strip_over_last_turn(qtbot, view)
    return view, model, view.turn_actions


def test_the_strip_offers_retry_again_once_the_kernel_made_the_chosen_answer_live(
        qtbot: QtBot) -> None:
    # Chosen with ‹, the earlier answer is shown for reading (no Retry) until the kernel's
    # event makes it live; then the strip offers Retry at once, with no pointer moved.
    _view, model, strip = _retried_view(qtbot)
    retry = strip.buttons[1]
    qtbot.mouseClick(strip.earlier, Qt.MouseButton.LeftButton)
    assert model.browsing() and not retry.isVisible()
    apply_event(model, ev.MessagesSuperseded(S, "restore", 1, 1, restores=0))
    assert not model.browsing() and strip.count.text() == "1/2"
    assert retry.isVisible(), "Retry is offered for the answer now live"


def test_the_answer_strip_steps_through_versions_by_mouse_and_keys(qtbot: QtBot) -> None:
    view, model, strip = _retried_view(qtbot)
    assert strip.count.text() == "2/2" and strip.earlier.isEnabled()
    assert not strip.later.isEnabled()
    assert strip.model.isVisible() and strip.model.text() == "Claude Opus 4.5"
    asked: list[int] = []
    view.restore_requested.connect(asked.append)
    qtbot.mouseClick(strip.earlier, Qt.MouseButton.LeftButton)
    assert shown(model)[-1] == "It says alpha." and asked == [0]
    _strip_over_last_turn(qtbot, view)
    assert strip.count.text() == "1/2" and strip.model.text() == "Claude Sonnet 4.6"
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert shown(model)[-1] == "Alpha." and asked == [0], "back to the live one: no ask"
    # A later prompt: the earlier turn's versions are only shown, and say so.
    apply_event(model, ev.UserMessage(S, "and b?"))
    for event in answer("Beta."):
        apply_event(model, event)
    view.executeDelayedItemsLayout()
    first_end = 1
    qtbot.mouseMove(view.viewport(), view.visualRect(model.index(first_end, 0)).center())
    qtbot.waitUntil(lambda: strip.row == first_end)
    qtbot.mouseClick(strip.earlier, Qt.MouseButton.LeftButton)
    assert shown(model) == ["what is in a?", "card c1", "It says alpha."] and asked == [0]
    _strip_over_last_turn(qtbot, view)
    assert "goes on from 2/2" in strip.model.text()
    assert not strip.buttons[1].isVisible(), "no Retry while an older version is shown"


def test_choosing_an_earlier_answer_asks_the_kernel_to_continue_from_it_when_idle(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, *[
        ev.SessionStarted("s1", workspace="/w", model="claude-test", sandbox="none"),
        ev.UserMessage("s1", "q"), *answer("one"),
        ev.MessagesSuperseded("s1", "regenerate", 0, 1), *answer("two")])
    chat = controller.window.chat
    _strip_over_last_turn(qtbot, chat)
    view = controller.views["s1"]
    view.running = True  # (a run's answer is not swapped under it)
    qtbot.mouseClick(chat.turn_actions.earlier, Qt.MouseButton.LeftButton)
    assert client.of(p.RestoreVersion) == [] and not view.chat.browsing()
    assert "Stop the run" in controller.window.statusBar().currentMessage()
    view.running = False
    qtbot.mouseClick(chat.turn_actions.earlier, Qt.MouseButton.LeftButton)
    assert client.of(p.RestoreVersion) == [p.RestoreVersion("s1", 0)]


def test_a_version_not_shown_is_rendered_again_for_a_new_palette(qtbot: QtBot) -> None:
    view = shown_view(qtbot, 600, 400)
    model = view.chat_model()
    for event in retried():
        apply_event(model, event, at=event.at)
    model.show_version(1, 0)
    view.executeDelayedItemsLayout()
    old = model.items()[-1]
    assert isinstance(old, MessageItem) and old.width > 0 and old.segments
    model.show_live()
    model.restyle()  # (the palette turned while the old answer was not shown)
    assert old.width == -1 and not old.segments, "its code chips were for the old palette"
    model.show_version(1, 0)
    view.executeDelayedItemsLayout()
    qtbot.waitUntil(lambda: old.width > 0 and bool(old.segments))


@pytest.mark.parametrize(("attempt", "asks"), [
    ([ev.ErrorEvent(S, code="overloaded", message="Overloaded")], False),
    ([ev.ToolCallStarted(S, call_id="c7", name="read_file", input={}, summary="a"),
      ev.RunFinished(S, "cancelled")], False),  # (a call a dead kernel left unfinished)
    ([ev.ToolCallStarted(S, call_id="c7", name="read_file", input={}, summary="a"),
      ev.ToolResultEvent(S, call_id="c7", name="read_file", is_error=True,
                         error_code="cancelled"), ev.RunFinished(S, "cancelled")], True),
    (answer("an answer"), True),
])
def test_only_an_answer_the_model_can_go_on_from_is_asked_for(
        qtbot: QtBot, attempt: list[ev.Event], asks: bool) -> None:
    model = fed(started("claude-sonnet-4-6"), ev.UserMessage(S, "q"), *attempt,
                ev.MessagesSuperseded(S, "regenerate", 0, 1), *answer("again"))
    assert model.continuable(1)
    assert model.choose_version(1, 0) == (0 if asks else -1)
    found = model.version_group(1)
    assert found is not None and model.reading(found[1]) is not asks


def test_no_other_version_is_shown_while_an_approval_waits(qtbot: QtBot) -> None:
    asked = ev.ApprovalRequest(S, "c2", "write_file", {"path": "x"}, "write", "asks")
    model = fed(*retried(), ev.UserMessage(S, "write x"),
                ev.ToolCallStarted(S, call_id="c2", name="write_file", input={}, summary="x"),
                asked)
    model.set_approval("c2", asked)
    assert not model.can_browse()
    assert model.choose_version(1, 0) == -1
    assert shown(model)[-1] == "card c2" and not model.browsing()
    model.set_approval("c2", None)
    assert model.can_browse() and model.choose_version(1, 0) == -1  # (an older turn's)
    assert model.browsing()
