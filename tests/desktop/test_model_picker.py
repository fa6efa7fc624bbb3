"""The model a session really sends, shown and changeable per session: the picker lists the
endpoint's models (GET /v1/models, asked by the real kernel worker) or takes a typed name,
and the next run of that session sends to the model picked (whole app, fake model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.kernel_client import KernelClient
from desktop.model_picker import ModelPicker
from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import running_app
from tests.desktop.test_app_e2e import running, type_prompt
from tests.desktop.test_main_window import load, make

WAIT_MS = 90_000


def test_the_picker_shows_the_sessions_model_and_changes_it(qtbot: QtBot,
                                                           reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"model": "claude-from-settings"}')
    controller, client = make(qtbot, reins_home)
    picker = controller.window.model_picker
    client.batch.emit([p.SettingsSnapshot(str(reins_home.settings_file),  # the kernel's reading
                                          {"model": "claude-from-settings"},
                                          model="claude-from-settings", can_run=True)])
    qtbot.waitUntil(lambda: picker.combo.currentText() == "claude-from-settings",
                    timeout=10_000)
    assert not picker.combo.isEnabled()
    assert picker.combo.accessibleDescription() == "The model new sessions get"
    client.batch.emit([p.ModelList(("claude-a", "claude-b"), "claude-from-settings")])
    assert [picker.combo.itemText(i) for i in range(picker.combo.count())] == [
        "claude-a", "claude-b"]

    load(controller, client)  # INFO: the session sends to claude-test
    assert picker.combo.isEnabled() and picker.combo.currentText() == "claude-test"
    assert picker.combo.accessibleDescription() == "The model this session sends to"
    picker.combo.setCurrentIndex(1)
    picker.combo.textActivated.emit(picker.combo.currentText())
    assert client.of(p.SetSessionModel) == [p.SetSessionModel("s1", "claude-b")]
    # A name the endpoint does not list can be typed.
    picker.combo.lineEdit().selectAll()
    qtbot.keyClicks(picker.combo.lineEdit(), "my-local-model")
    qtbot.keyClick(picker.combo.lineEdit(), Qt.Key.Key_Return)
    assert client.of(p.SetSessionModel)[-1] == p.SetSessionModel("s1", "my-local-model")
    client.batch.emit([p.SessionList((p.SessionInfo("s1", "Fix the build", "/tmp/ws", "ask",
                                                    "my-local-model", 2.0),))])
    assert picker.combo.currentText() == "my-local-model"
    # Blank is not a model: nothing is sent, the session's model comes back.
    picker.combo.lineEdit().clear()
    qtbot.keyClick(picker.combo.lineEdit(), Qt.Key.Key_Return)
    assert len(client.of(p.SetSessionModel)) == 2
    assert picker.combo.currentText() == "my-local-model"


def test_an_endpoint_without_a_list_leaves_a_typed_name(qtbot: QtBot,
                                                        reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    client.batch.emit([p.ModelList((), "claude-test", "the endpoint answered HTTP 404")])
    picker = controller.window.model_picker
    assert picker.combo.count() == 0 and picker.combo.isEditable()
    assert "HTTP 404" in picker.combo.toolTip() and "type a model name" in picker.combo.toolTip()


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-models",
                             models=("claude-sonnet-4-6", "claude-haiku-4-5")) as server:
        yield server
        server.release()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_next_run_sends_to_the_model_picked(qtbot: QtBot, reins_home: AppPaths,
                                                fake: FakeAnthropicServer,
                                                workspace: Path) -> None:
    with running_app(qtbot, reins_home, fake, api_key="sk-models", model="claude-sonnet-4-6",
                     mode="ask") as app:
        w = app.window
        picker = w.model_picker
        qtbot.waitUntil(lambda: picker.combo.count() == 2, timeout=WAIT_MS)
        w.sessions.new_requested.emit(str(workspace), "ask", False)
        qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
        assert picker.combo.currentText() == "Claude Sonnet 4.6"
        fake.add(reply("first"), reply("second"))
        type_prompt(qtbot, app, "one")
        qtbot.waitUntil(lambda: not running(app) and len(fake.requests) == 1, timeout=WAIT_MS)
        assert fake.requests[0].body["model"] == "claude-sonnet-4-6"

        picker.combo.setCurrentIndex(picker.combo.findText("Claude Haiku 4.5"))
        picker.combo.textActivated.emit("Claude Haiku 4.5")
        qtbot.waitUntil(lambda: app.views[app.current or ""].info.model == "claude-haiku-4-5",
                        timeout=WAIT_MS)
        type_prompt(qtbot, app, "two")
        qtbot.waitUntil(lambda: not running(app) and len(fake.requests) == 2, timeout=WAIT_MS)
        assert fake.requests[1].body["model"] == "claude-haiku-4-5"
        assert picker.combo.currentText() == "Claude Haiku 4.5", "shown: what it sends"


@pytest.mark.timeout(120)
def test_the_worker_says_why_an_endpoint_lists_no_models(qtbot: QtBot,
                                                         reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"base_url": "http://127.0.0.1:9"}')
    client = KernelClient(restart=False)
    seen: list[p.Message] = []
    client.batch.connect(seen.extend)
    client.start()
    try:
        qtbot.waitUntil(lambda: any(isinstance(m, p.KernelReady) for m in seen),
                        timeout=WAIT_MS)
        client.send(p.SetApiKey("sk-x"))
        client.send(p.ListModels())
        qtbot.waitUntil(lambda: any(isinstance(m, p.ModelList) for m in seen), timeout=WAIT_MS)
        [answer] = [m for m in seen if isinstance(m, p.ModelList)]
        assert answer.models == () and "did not answer" in answer.error and answer.default
        client.send(p.NewSession(str(reins_home.data), "ask"))
        qtbot.waitUntil(lambda: any(isinstance(m, p.SessionLoaded) for m in seen),
                        timeout=WAIT_MS)
        [loaded] = [m for m in seen if isinstance(m, p.SessionLoaded)]
        for bad in ("", "   ", "two words", "tab\there"):
            client.send(p.SetSessionModel(loaded.info.session_id, bad))
        qtbot.waitUntil(lambda: len([m for m in seen if isinstance(m, p.CommandFailed)]) == 4,
                        timeout=WAIT_MS)
    finally:
        client.stop()


def test_models_are_listed_by_name_and_picked_or_typed_by_id(qtbot: QtBot) -> None:
    picker = ModelPicker()
    qtbot.addWidget(picker)
    chosen: list[str] = []
    picker.chosen.connect(chosen.append)
    picker.show_model("claude-sonnet-4-6", session=True)
    picker.set_models(("claude-sonnet-4-6", "claude-opus-4-5", "claude-opus-4-5-20251101",
                       "qwen2.5:7b"))
    shown = [picker.combo.itemText(i) for i in range(picker.combo.count())]
    assert shown == ["Claude Sonnet 4.6", "claude-opus-4-5", "claude-opus-4-5-20251101",
                     "qwen2.5:7b"], "two models reading the same are listed by id"
    assert picker.combo.currentText() == "Claude Sonnet 4.6"
    assert picker.combo.itemData(0, Qt.ItemDataRole.ToolTipRole) == "claude-sonnet-4-6"
    picker.combo.textActivated.emit("Claude Sonnet 4.6")
    assert chosen == [], "the current model, by its name, is no change"
    picker.combo.textActivated.emit("qwen2.5:7b")
    picker.combo.textActivated.emit("claude-opus-4-5-20251101")
    line = picker.combo.lineEdit()
    assert line is not None
    line.setText("claude-haiku-4-5")  # typed by id, not in the list
    line.returnPressed.emit()
    assert chosen == ["qwen2.5:7b", "claude-opus-4-5-20251101", "claude-haiku-4-5"]
    assert picker.model == "claude-haiku-4-5"
    assert picker.combo.currentText() == "Claude Haiku 4.5"
    picker.show_model("reins-demo", session=True)
    assert picker.combo.currentText() == "Demo model (scripted)"
