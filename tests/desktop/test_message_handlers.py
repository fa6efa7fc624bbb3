"""Every protocol message has one direction and a handler on the other side: each registered
kind is a Command (UI → kernel) or a Reply (kernel → UI), never both; the kernel worker's
table handles every Command; the app's typed handler table (desktop.handlers) handles every
Reply the kernel can send, but the ones listed below. A handled message reaches its handler,
and a kind nobody handles is said to be unhandled, not silently taken."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from desktop.controller import AppController
from desktop.handlers import Handlers
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.worker.service import _HANDLERS
from tests.desktop.test_main_window import make

OUTSIDE_THE_TABLE = {
    p.KernelReady: "the kernel client's `ready` signal (AppController.on_ready)",
}
"""Replies the app takes before its table."""
NOT_SHOWN_YET: set[type[p.Message]] = set()
"""Replies the app does not use yet; handling one must remove it from here."""


def test_each_kind_goes_one_way() -> None:
    registered = set(p.MESSAGE_KINDS.values())
    assert registered == p.COMMANDS | p.REPLIES
    assert not p.COMMANDS & p.REPLIES
    assert len(registered) == len(p.MESSAGE_KINDS), "one class per kind"


def test_the_kernel_handles_every_command() -> None:
    assert set(_HANDLERS) == p.COMMANDS


def test_the_app_handles_every_reply(qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, _client = make(qtbot, reins_home)
    handled = controller.handlers.kinds
    assert handled | set(OUTSIDE_THE_TABLE) | NOT_SHOWN_YET == p.REPLIES
    assert not handled & (set(OUTSIDE_THE_TABLE) | NOT_SHOWN_YET)
    assert handled <= p.REPLIES, "the app handles only what the kernel sends"
    assert isinstance(controller, AppController)


def test_a_message_reaches_its_handler_and_an_unknown_one_is_refused() -> None:
    seen: list[p.Message] = []
    table = Handlers().on(p.RunStatus, seen.append).on(p.SessionDeleted, seen.append)
    assert table.handle(p.RunStatus("s1", "idle"))
    assert table.handle(p.SessionDeleted("s1"))
    assert not table.handle(p.CommandFailed("x", "y"))
    assert seen == [p.RunStatus("s1", "idle"), p.SessionDeleted("s1")]
    with pytest.raises(ValueError, match="RunStatus already has a handler"):
        table.on(p.RunStatus, seen.append)
