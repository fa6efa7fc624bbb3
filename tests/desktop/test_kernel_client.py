"""The kernel client against a real kernel worker process and the fake Anthropic server:
batches with merged deltas, the key kept out of the kernel's environment, restart after
kill -9 with the history intact, and a clean shutdown in the middle of a run."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.kernel_client import BUDGET_MS, CHUNK, KernelClient, coalesce
from desktop.settings import keystore
from kernel import events as ev
from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.paths import AppPaths

WAIT_MS = 60_000
ANSWER = "Streaming works: " + " ".join(f"w{i}" for i in range(60))


def test_coalesce_merges_deltas_per_session_in_order() -> None:
    msgs: list[p.Message] = [
        p.EventMessage(ev.AssistantDelta("a", "x")),
        p.EventMessage(ev.AssistantDelta("a", "y")),
        p.EventMessage(ev.AssistantDelta("b", "z")),
        p.RunStatus("a", "running"),
        p.EventMessage(ev.AssistantDelta("a", "1")),
        p.EventMessage(ev.AssistantDelta("a", "2")),
    ]
    out = coalesce(msgs)
    assert out == [
        p.EventMessage(ev.AssistantDelta("a", "xy")),
        p.EventMessage(ev.AssistantDelta("b", "z")),
        p.RunStatus("a", "running"),
        p.EventMessage(ev.AssistantDelta("a", "12")),
    ]


class SlowUI:
    """A consumer that takes `cost_ms` of a fake clock per batch it is handed."""

    def __init__(self, client: KernelClient, clock: list[float], cost_ms: float) -> None:
        self.batches: list[list[p.Message]] = []
        self._clock, self._cost = clock, cost_ms / 1000
        client.batch.connect(self.take)

    def take(self, batch: list[p.Message]) -> None:
        self.batches.append(batch)
        self._clock[0] += self._cost

    @property
    def messages(self) -> list[p.Message]:
        return [m for b in self.batches for m in b]


def _statuses(n: int) -> list[p.Message]:
    return [p.RunStatus(f"s{i}", "running") for i in range(n)]


def test_a_frame_stops_handing_out_messages_when_its_time_budget_is_spent(
        qtbot: QtBot) -> None:
    clock = [0.0]
    client = KernelClient(starter=None, restart=False,  # type: ignore[arg-type]
                          clock=lambda: clock[0])
    ui = SlowUI(client, clock, cost_ms=BUDGET_MS * 0.6)
    sent = _statuses(CHUNK * 5 + 7)
    for message in sent:
        client.receive(p.encode(message))
    client.flush()
    assert ui.messages == sent[:CHUNK * 2], "two chunks fit in one frame's budget, no more"
    qtbot.waitUntil(lambda: len(ui.messages) == len(sent), timeout=WAIT_MS)
    assert ui.messages == sent, "the rest came in later frames, in order"
    assert [len(b) for b in ui.batches] == [CHUNK] * 5 + [7]


def test_a_fast_consumer_gets_a_large_backlog_in_one_frame(qtbot: QtBot) -> None:
    clock = [0.0]
    client = KernelClient(starter=None, restart=False,  # type: ignore[arg-type]
                          clock=lambda: clock[0])
    ui = SlowUI(client, clock, cost_ms=0.0)
    sent = _statuses(CHUNK * 40 + 1)
    for message in sent:
        client.receive(p.encode(message))
    client.flush()
    assert ui.messages == sent, "no count limit: the budget is time"


class Recorder:
    def __init__(self, client: KernelClient) -> None:
        self.batches: list[list[p.Message]] = []
        self.readies: list[p.KernelReady] = []
        self.deaths: list[str] = []
        client.batch.connect(self.batches.append)
        client.ready.connect(self.readies.append)
        client.died.connect(self.deaths.append)

    @property
    def messages(self) -> list[p.Message]:
        return [m for b in self.batches for m in b]

    def of(self, kind: type[p.Message]) -> list[p.Message]:
        return [m for m in self.messages if isinstance(m, kind)]

    def events(self, kind: type[ev.Event]) -> list[ev.Event]:
        return [m.event for m in self.of(p.EventMessage) if isinstance(m.event, kind)]


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-test-key") as server:
        yield server


@pytest.fixture
def client(qtbot: QtBot, reins_home: AppPaths) -> Iterator[KernelClient]:
    kc = KernelClient()
    yield kc
    kc.stop()


def start(qtbot: QtBot, client: KernelClient, fake: FakeAnthropicServer) -> Recorder:
    paths = AppPaths.from_env()  # the test's REINS_HOME: the kernel reads the file itself
    paths.config.mkdir(parents=True, exist_ok=True)
    paths.settings_file.write_text(json.dumps({"model": "claude-test",
                                               "base_url": fake.base_url}))
    rec = Recorder(client)
    client.start()
    qtbot.waitUntil(lambda: len(rec.readies) == 1, timeout=WAIT_MS)
    client.send(p.SetApiKey("sk-test-key"))
    return rec


def new_session(qtbot: QtBot, client: KernelClient, rec: Recorder, workspace: Path) -> str:
    client.send(p.NewSession(str(workspace), "ask"))
    qtbot.waitUntil(lambda: bool(rec.of(p.SessionLoaded)), timeout=WAIT_MS)
    return rec.of(p.SessionLoaded)[-1].info.session_id


def test_streamed_run_arrives_in_merged_batches_and_survives_kill(
        qtbot: QtBot, client: KernelClient, fake: FakeAnthropicServer, workspace: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-secret-123")
    assert keystore.take_env_key() == "sk-env-secret-123"
    fake.add(reply(ANSWER, chunk_chars=3))
    rec = start(qtbot, client, fake)
    environ = Path(f"/proc/{client.process.pid}/environ").read_bytes()
    assert b"sk-env-secret-123" not in environ and b"sk-test-key" not in environ

    session_id = new_session(qtbot, client, rec, workspace)
    client.send(p.StartRun(session_id, "hello"))
    qtbot.waitUntil(lambda: any(m.state == "idle" for m in rec.of(p.RunStatus)),
                    timeout=WAIT_MS)
    deltas = rec.events(ev.AssistantDelta)
    assert "".join(d.text for d in deltas) == ANSWER
    assert [t.text for t in rec.events(ev.AssistantText)] == [ANSWER]
    assert rec.events(ev.RunFinished)[-1].stop_reason == "end_turn"
    headers = fake.requests[0].headers
    assert "sk-test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")

    old_pid = client.process.pid
    os.kill(old_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: len(rec.deaths) == 1 and len(rec.readies) == 2, timeout=WAIT_MS)
    assert "stopped unexpectedly" in rec.deaths[0]
    assert client.process.pid != old_pid and client.restarts == 1
    loaded_before = len(rec.of(p.SessionLoaded))
    client.send(p.OpenSession(session_id))
    qtbot.waitUntil(lambda: len(rec.of(p.SessionLoaded)) > loaded_before, timeout=WAIT_MS)
    history = rec.of(p.SessionLoaded)[-1].events
    assert [e.text for e in history if isinstance(e, ev.UserMessage)] == ["hello"]
    assert [e.text for e in history if isinstance(e, ev.AssistantText)] == [ANSWER]


def test_malformed_bytes_from_the_kernel_are_dropped(qtbot: QtBot, reins_home: AppPaths) -> None:
    import multiprocessing

    ui_end, kernel_end = multiprocessing.Pipe()

    class Dummy:
        pid = 0

        def is_alive(self) -> bool:
            return False

        def join(self, _timeout: float | None = None) -> None:
            return None

        exitcode = 0

    client = KernelClient(starter=lambda: (Dummy(), ui_end), restart=False)  # type: ignore[arg-type, return-value]
    rec = Recorder(client)
    client.start()
    kernel_end.send_bytes(b"\xff garbage")
    kernel_end.send_bytes(b'{"v": 1, "kind": "nope"}')
    kernel_end.send_bytes(p.encode(p.RunStatus("s", "idle")))
    qtbot.waitUntil(lambda: bool(rec.messages), timeout=WAIT_MS)
    assert rec.messages == [p.RunStatus("s", "idle")]
    kernel_end.close()
    qtbot.waitUntil(lambda: bool(rec.deaths), timeout=WAIT_MS)


def test_shutdown_mid_run_is_clean(qtbot: QtBot, client: KernelClient,
                                   fake: FakeAnthropicServer, workspace: Path) -> None:
    fake.add(reply("this reply stalls " * 20, chunk_chars=4, stall_after=6))
    rec = start(qtbot, client, fake)
    session_id = new_session(qtbot, client, rec, workspace)
    client.send(p.StartRun(session_id, "go"))
    qtbot.waitUntil(lambda: bool(rec.events(ev.AssistantDelta)), timeout=WAIT_MS)
    process = client.process
    client.stop()
    fake.release()
    assert process is not None and not process.is_alive()
    assert process.exitcode == 0, "the kernel was killed instead of shutting down"


def test_pending_approval_survives_a_kernel_crash(qtbot: QtBot, client: KernelClient,
                                                  fake: FakeAnthropicServer,
                                                  workspace: Path) -> None:
    from kernel.fakemodel import ToolUse

    fake.add(reply("Writing it.", ToolUse("write_file", {"path": "kept.txt", "content": "ok"})),
             reply("Written after the restart."))
    rec = start(qtbot, client, fake)
    session_id = new_session(qtbot, client, rec, workspace)
    client.send(p.StartRun(session_id, "write kept.txt"))
    qtbot.waitUntil(lambda: bool(rec.events(ev.ApprovalRequest)), timeout=WAIT_MS)
    request = rec.events(ev.ApprovalRequest)[0]

    os.kill(client.process.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: len(rec.readies) == 2, timeout=WAIT_MS)
    client.send(p.SetApiKey("sk-test-key"))
    client.send(p.OpenSession(session_id))
    qtbot.waitUntil(lambda: len(rec.of(p.SessionLoaded)) == 2, timeout=WAIT_MS)
    loaded = rec.of(p.SessionLoaded)[-1]
    assert loaded.interrupted
    assert request in loaded.events, "the pending request is part of the stored session"
    assert not (workspace / "kept.txt").exists()

    # Answering it resumes the run from exactly that call.
    client.send(p.ApprovalAnswer(session_id, request.call_id, "allow_once"))
    qtbot.waitUntil(lambda: any(t.text == "Written after the restart."
                                for t in rec.events(ev.AssistantText)), timeout=WAIT_MS)
    assert (workspace / "kept.txt").read_text() == "ok"
    decisions = [d for d in rec.events(ev.ApprovalDecision) if d.call_id == request.call_id]
    assert [d.decision for d in decisions] == ["allow_once"]
    assert len(fake.requests) == 2, "the model was not asked again for the same turn"


def _processes_with(marker: str) -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if marker in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def test_stopping_the_kernel_ends_running_tool_processes(
        qtbot: QtBot, client: KernelClient, fake: FakeAnthropicServer, workspace: Path) -> None:
    from kernel.fakemodel import ToolUse

    marker = "31.4159"
    fake.add(reply("Running it.", ToolUse("run_command", {"command": f"sleep {marker}"})))
    rec = start(qtbot, client, fake)
    client.send(p.NewSession(str(workspace), "auto"))
    qtbot.waitUntil(lambda: bool(rec.of(p.SessionLoaded)), timeout=WAIT_MS)
    session_id = rec.of(p.SessionLoaded)[-1].info.session_id
    client.send(p.StartRun(session_id, "sleep a while"))
    qtbot.waitUntil(lambda: bool(_processes_with(f"sleep {marker}")), timeout=WAIT_MS)
    process = client.process
    client.stop()
    assert process is not None and process.exitcode == 0
    assert _processes_with(f"sleep {marker}") == []
