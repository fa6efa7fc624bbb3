"""What a command printed, through the whole app (real widgets, a real kernel worker,
bubblewrap, the fake model): stopped — by the run's Stop or by its row's — it keeps what it
printed, and its card and timeline row open it; a 5,000-line output's card makes up no line
count from the start it shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.chat.model import ToolCardItem
from desktop.controller import AppController
from kernel.events import ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import running_app
from tests.desktop.test_app_e2e import running, type_prompt

WAIT_MS = 60_000
KEY = "sk-stopped-output"
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as server:
        yield server
        server.release()


@pytest.fixture
def app(qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer) -> Iterator[AppController]:
    with running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-out",
                     mode="auto") as controller:
        yield controller


def session(qtbot: QtBot, app: AppController, workspace: Path) -> str:
    w = app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    w.sessions.new_requested.emit(str(workspace), "auto", False)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    return app.current or ""


def card(app: AppController, call_id: str) -> ToolCardItem:
    view = app.views[app.current or ""]
    return next(i for i in view.chat.items()
                if isinstance(i, ToolCardItem) and i.call_id == call_id)


def result(app: AppController, call_id: str) -> ToolResultEvent | None:
    view = app.views[app.current or ""]
    return next((e for e in view.events
                 if isinstance(e, ToolResultEvent) and e.call_id == call_id), None)


@pytest.mark.parametrize("stop", ["run", "call"])
def test_a_stopped_command_keeps_what_it_printed(
        qtbot: QtBot, app: AppController, fake: FakeAnthropicServer, workspace: Path,
        stop: str) -> None:
    session(qtbot, app, workspace)
    command = "seq 1 3000; echo printed-before-stop; sleep 1000.5151"
    fake.add(reply(ToolUse("run_command", {"command": command}, id="c1")),
             reply("Stopped, fine."))
    type_prompt(qtbot, app, "count then wait")
    w = app.window
    w.timeline_dock.show()

    def printed() -> bool:
        record = w.timeline.model.record("c1")
        return record is not None and "printed-before-stop" in (record.last_line or "")

    qtbot.waitUntil(printed, timeout=WAIT_MS)
    if stop == "run":
        qtbot.mouseClick(w.prompt.stop_button, Qt.MouseButton.LeftButton)
    else:
        w.timeline.stop_requested.emit("c1")  # what the row's Stop emits
    qtbot.waitUntil(lambda: result(app, "c1") is not None and not running(app),
                    timeout=WAIT_MS)
    stopped = result(app, "c1")
    assert stopped is not None and stopped.status == "stopped"
    assert stopped.externalized_path, "what it printed is kept"
    kept = Path(stopped.externalized_path).read_text()
    assert kept.splitlines()[:3] == ["1", "2", "3"] and "printed-before-stop" in kept
    assert card(app, "c1").output_path == stopped.externalized_path
    w.timeline.select_call("c1")
    qtbot.waitUntil(lambda: w.timeline.details.open_button.isEnabled(), timeout=WAIT_MS)


def test_a_long_outputs_card_makes_up_no_line_count(
        qtbot: QtBot, app: AppController, fake: FakeAnthropicServer, workspace: Path) -> None:
    session(qtbot, app, workspace)
    fake.add(reply(ToolUse("run_command", {"command": "seq 1 5000"}, id="c2")),
             reply("Counted."))
    type_prompt(qtbot, app, "count to 5000")
    qtbot.waitUntil(lambda: result(app, "c2") is not None and not running(app),
                    timeout=WAIT_MS)
    item = card(app, "c2")
    text = item.body_document(600).toPlainText()
    assert "more line" not in text, "a count made up from the preview's start"
    assert "the whole output is in the full output" in text
    done = result(app, "c2")
    assert done is not None and done.output_bytes > len(done.preview) > 0
