"""`reins --self-test`: the installed app proves it works — UI, kernel process, model round trip.

It starts the real UI (offscreen, unless QT_QPA_PLATFORM is set: run it under Xvfb with
QT_QPA_PLATFORM=xcb to load the real platform plugin), spawns the real kernel worker the
way the app does, types one prompt into the prompt box and presses Send. The model is a
loopback fake Anthropic server (kernel.fakemodel) that streams a scripted answer. It exits
0 when that answer came back through the kernel into the chat, and 1 with the reason
otherwise. Nothing of the user's is read or touched: REINS_HOME is a temporary folder, the
keyring is not asked, and no request leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import qasync
from PySide6.QtCore import QMessageLogContext, QtMsgType, qFormatLogMessage, qInstallMessageHandler
from PySide6.QtWidgets import QDialogButtonBox

from desktop.app import make_application, show_first_window
from desktop.chat.model import MessageItem, Role
from desktop.controller import AppController
from desktop.kernel_client import KernelClient
from desktop.main_window import MainWindow
from kernel import protocol as p
from kernel.events import AssistantDelta, AssistantText, ErrorEvent, Event, RunFinished
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.paths import AppPaths

PROMPT = "Reins self-test: please answer."
ANSWER = "Self-test answer: the UI, the kernel process and the model client all work."
API_KEY = "reins-self-test-key"
STEP_TIMEOUT_S = 60.0
# The kernel is spawned with this process's environment: none of these may point it
# elsewhere than the self-test's own folder and loopback model.
CLEARED_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
QUIET_QT_MESSAGES = frozenset({
    # The offscreen platform plugin has no window manager to hand size hints to.
    "This plugin does not support propagateSizeHints()",
})
"""Qt messages that say nothing about the app's health; every other one goes to stderr."""


class SelfTestFailed(Exception):
    """A step of the self-test did not do what it must; the message says which."""


@dataclass(frozen=True)
class SelfTestOutcome:
    platform: str
    kernel_pid: int
    seconds: float


def main(argv: Sequence[str] = ()) -> int:
    if list(argv):
        sys.stderr.write("usage: reins --self-test  (set QT_QPA_PLATFORM to use a display)\n")
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    for name in CLEARED_VARIABLES:
        os.environ.pop(name, None)
    logging.basicConfig(level=os.environ.get("REINS_LOG_LEVEL", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    previous_handler = qInstallMessageHandler(qt_message)
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="reins-self-test-") as home:
            os.environ["REINS_HOME"] = home
            outcome = run_self_test(Path(home), started)
    except SelfTestFailed as exc:
        sys.stderr.write(f"reins self-test: FAILED — {exc}\n")
        return 1
    except Exception as exc:  # the report boundary: a crash is a failure with its traceback
        traceback.print_exc()
        sys.stderr.write(f"reins self-test: FAILED — {type(exc).__name__}: {exc}\n")
        return 1
    finally:
        qInstallMessageHandler(previous_handler)
    sys.stdout.write(
        f"reins self-test: ok — {outcome.platform} UI, kernel process {outcome.kernel_pid}, "
        f"streamed reply in {outcome.seconds:.2f} s\n")
    return 0


def qt_message(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    if message not in QUIET_QT_MESSAGES:
        sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")


def run_self_test(home: Path, started: float) -> SelfTestOutcome:
    """The round trip, with the fake model serving from this process."""
    paths = AppPaths.from_env()
    workspace = home / "workspace"
    workspace.mkdir()
    app = make_application([sys.argv[0]])
    window = show_first_window()  # painted before the rest loads, as `reins` does
    with FakeAnthropicServer([reply(ANSWER, chunk_chars=8)], api_key=API_KEY) as fake:
        paths.config.mkdir(parents=True, exist_ok=True)
        paths.settings_file.write_text(json.dumps({"base_url": fake.base_url}))
        kernel_pid = qasync.run(round_trip(paths, workspace, window))
        if fake.problems:
            raise SelfTestFailed(f"the model server saw bad requests: {fake.problems}")
        if len(fake.requests) != 1:
            raise SelfTestFailed(f"expected 1 model request, the server got {len(fake.requests)}")
        body = fake.requests[0].body
        if not body.get("stream") or PROMPT not in json.dumps(body.get("messages")):
            raise SelfTestFailed("the model request was not the streamed prompt that was typed")
    return SelfTestOutcome(app.platformName(), kernel_pid, time.perf_counter() - started)


async def round_trip(paths: AppPaths, workspace: Path, window: MainWindow) -> int:
    """Wire the shown window, start the kernel, send the prompt, wait for the answer; the
    kernel's pid."""
    client = KernelClient(restart=False)
    controller = AppController(paths, client=client, api_key=API_KEY, window=window)
    controller.window.sessions.default_workspace = str(workspace)
    ready, finished = asyncio.Event(), asyncio.Event()
    events: list[Event] = []
    deaths: list[str] = []

    def on_batch(messages: list[p.Message]) -> None:
        for message in messages:
            if isinstance(message, p.EventMessage):
                events.append(message.event)
                if isinstance(message.event, RunFinished):
                    finished.set()

    def on_died(reason: str) -> None:
        deaths.append(reason)
        ready.set()
        finished.set()

    client.ready.connect(lambda _message: ready.set())
    client.batch.connect(on_batch)
    client.died.connect(on_died)
    controller.start()
    try:
        await within(ready, "the kernel worker did not start (no kernel_ready)")
        check_alive(deaths)
        window = controller.window
        if not window.isVisible():
            raise SelfTestFailed("the main window is not shown")
        if window.windowIcon().isNull():
            raise SelfTestFailed("the app icon did not load (resources missing from the app)")
        window.prompt.edit.setPlainText(PROMPT)
        if not window.prompt.send_button.isEnabled():
            raise SelfTestFailed("the Send button is disabled although a key is configured")
        window.prompt.send_button.click()  # no session yet: the new-session dialog asks
        dialog = window.sessions.new_dialog
        if dialog is None or not dialog.isVisible():
            raise SelfTestFailed("sending with no session open did not ask for a workspace")
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
        await within(finished, "the run did not finish (no run_finished event)")
        check_alive(deaths)
        check_reply(events)
        check_chat(controller)
        pid = client.process.pid if client.process is not None else 0
    finally:
        controller.shutdown()
    process = client.process
    if process is not None and process.exitcode != 0:
        raise SelfTestFailed(f"the kernel worker exited with {process.exitcode}, not 0")
    return int(pid or 0)


async def within(event: asyncio.Event, failure: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), STEP_TIMEOUT_S)
    except TimeoutError:
        raise SelfTestFailed(f"{failure} within {STEP_TIMEOUT_S:.0f} s") from None


def check_alive(deaths: list[str]) -> None:
    if deaths:
        raise SelfTestFailed(f"the kernel worker died: {deaths[0]}")


def check_reply(events: list[Event]) -> None:
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    if errors:
        raise SelfTestFailed(f"the kernel reported an error: {errors[0].code}: "
                             f"{errors[0].message}")
    if not any(isinstance(e, AssistantDelta) for e in events):
        raise SelfTestFailed("no streamed text reached the UI")
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    if texts != [ANSWER]:
        raise SelfTestFailed(f"the answer that arrived was {texts!r}, not {[ANSWER]!r}")
    finish = [e for e in events if isinstance(e, RunFinished)]
    if [f.stop_reason for f in finish] != ["end_turn"]:
        raise SelfTestFailed(f"the run ended with {[f.stop_reason for f in finish]!r}")


def check_chat(controller: AppController) -> None:
    """The answer is in the chat the window shows, after the prompt that was typed."""
    view = controller.views.get(controller.current or "")
    if view is None:
        raise SelfTestFailed("no session is shown in the window")
    said = [(item.role, item.text) for item in view.chat.items() if isinstance(item, MessageItem)]
    if said[-2:] != [(Role.USER, PROMPT), (Role.ASSISTANT, ANSWER)]:
        raise SelfTestFailed(f"the chat shows {said!r}, not the prompt and its answer")
