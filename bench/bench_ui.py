"""The desktop UI stays fluid: event-loop stall while a kernel process streams 2,000 events/s
for 10 s into the real main window, and cold start to a shown window vs. a bare PySide6
window, both measured in this run.

The streaming kernel is a real spawned process speaking the real protocol over the real
pipe into the real KernelClient and AppController (chat, timeline, status bar); it plays a
busy run: text deltas with paragraph breaks, finished text blocks, and tool calls with
progress and results.
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

from bench.common import fmt_seconds, report, stats

RATE = 2_000
SECONDS = 10.0
TICK_MS = 2
SESSION = "bench-session"
ROOT = Path(__file__).resolve().parent.parent


def _stream(conn: Connection, rate: int, seconds: float) -> None:
    """A stand-in kernel process: announces a session, then streams events at `rate`/s."""
    from kernel import events as ev
    from kernel import protocol as p

    def send(message: p.Message) -> None:
        conn.send_bytes(p.encode(message))

    info = p.SessionInfo(SESSION, "Streaming benchmark", "/tmp", "ask", "bench-model", 0.0)
    send(p.KernelReady(p.PROTOCOL_VERSION, os.getpid(), "none", "benchmark", True, "bench"))
    send(p.SessionLoaded(info))
    send(p.RunStatus(SESSION, "running"))
    sent = 0
    text = ""
    start = time.perf_counter()
    step = 0.005
    per_step = max(1, round(rate * step)) if rate else 0
    while time.perf_counter() - start < seconds:
        for _ in range(per_step):
            sent += 1
            if sent % 100 == 0:
                call = f"call_{sent}"
                send(p.EventMessage(ev.ToolCallStarted(SESSION, call, "run_command",
                                                       {"command": f"make test {sent}"},
                                                       f"make test {sent}", "execute")))
                send(p.EventMessage(ev.ToolProgress(SESSION, call, sent * 10, "ok", 0.1)))
                send(p.EventMessage(ev.ToolResultEvent(SESSION, call, "run_command", False,
                                                       None, 12.0, sent * 10)))
                sent += 2
            elif sent % 400 == 0:
                send(p.EventMessage(ev.AssistantText(SESSION, text)))
                text = ""
            else:
                delta = f"word{sent} " + ("\n\n" if sent % 40 == 0 else "")
                text += delta
                send(p.EventMessage(ev.AssistantDelta(SESSION, delta)))
        target = start + step * (sent // per_step + 1) if per_step else start + seconds
        time.sleep(max(0.0, target - time.perf_counter()))
    send(p.EventMessage(ev.RunFinished(SESSION, "end_turn", 1, {"output_tokens": sent})))
    send(p.RunStatus(SESSION, "idle"))
    try:
        while not isinstance(p.decode(conn.recv_bytes()), p.Shutdown):
            pass
    except EOFError:
        return


def _measure_stall(rate: int, seconds: float, *,
                   feed_timeline: bool = True) -> tuple[list[float], int]:
    """Gaps (s) between 2 ms timer ticks of the UI thread while the kernel streams.
    `feed_timeline=False` leaves the timeline dock out (to attribute the stall)."""
    import multiprocessing

    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from desktop.controller import AppController
    from desktop.kernel_client import KernelClient
    from kernel.paths import AppPaths

    app = QApplication.instance() or QApplication([])
    ctx = multiprocessing.get_context("spawn")

    def starter():  # type: ignore[no-untyped-def]
        ui_end, kernel_end = ctx.Pipe()
        process = ctx.Process(target=_stream, args=(kernel_end, rate, seconds), daemon=True)
        process.start()
        kernel_end.close()
        return process, ui_end

    home = Path(tempfile.mkdtemp(prefix="reins-bench-ui-"))
    client = KernelClient(starter=starter, restart=False)
    received = [0]
    client.batch.connect(lambda batch: received.__setitem__(0, received[0] + len(batch)))
    controller = AppController(AppPaths(home / "data", home / "config"), client=client,
                               api_key="bench")
    if not feed_timeline:
        controller.window.timeline.apply = lambda _event: None  # type: ignore[method-assign]
    controller.start()
    loop = QEventLoop()
    wait_ready = QTimer()
    wait_ready.timeout.connect(lambda: controller.current and loop.quit())
    wait_ready.start(10)
    loop.exec()
    wait_ready.stop()
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(TICK_MS)
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()
    timer.stop()
    controller.window.close()
    app.processEvents()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    return [max(0.0, g - TICK_MS / 1000) for g in gaps], received[0]


def _cold_start(code: str, home: str) -> float:
    """Seconds from exec to the first paint. Bytecode is cached as in an installed app (an
    environment with PYTHONDONTWRITEBYTECODE would recompile Reins' modules every launch)."""
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
           "REINS_HOME": home, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.wait(timeout=60)
    if line.strip() != "shown":
        raise RuntimeError(f"no window was painted: {line!r}")
    return elapsed


FIRST_PAINT = """
import os
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class FirstPaint(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            print("shown", flush=True)
            os._exit(0)
        return False


watch = FirstPaint()
_show = QWidget.show


def show(self):
    self.installEventFilter(watch)
    _show(self)


QWidget.show = show
"""
"""Reports the first paint of the first window shown (as it starts). The filter sits
on the shown window only: an application-wide Python event filter would make PySide6 wrap
every object that receives an event, which costs the app (hundreds of widgets) far more than
a bare window and is not something `reins` does."""

BARE = FIRST_PAINT + """
from PySide6.QtWidgets import QApplication
app = QApplication([])
w = QWidget(); w.resize(1280, 800); w.setWindowTitle("bare")
w.show()
app.exec()
"""

APP = FIRST_PAINT + """
from desktop.app import main
main()
"""
"""Exactly what `reins` runs (desktop.app.main: keyring thread, qasync loop, controller),
stopped at the first paint of a window; the kernel is only started after that paint."""


def run() -> None:
    floor, _ = _measure_stall(0, 3.0)
    floor_stats = stats(floor)
    report("UI stall, idle kernel (floor) p99 / max", f"{fmt_seconds(floor_stats.p99)} / "
           f"{fmt_seconds(floor_stats.maximum)}")
    stalls, received = _measure_stall(RATE, SECONDS)
    s = stats(stalls)
    report(f"UI stall while streaming {RATE:,} events/s for {SECONDS:.0f} s: p99",
           fmt_seconds(s.p99), ratio=s.p99 / max(floor_stats.p99, 1e-4),
           goal="≤ 16 ms", ok=s.p99 <= 0.016)
    report("  … max", fmt_seconds(s.maximum), ratio=s.maximum / max(floor_stats.maximum, 1e-4),
           goal="≤ 50 ms", ok=s.maximum <= 0.050)
    report("  … messages handed to the UI (after merging deltas)", f"{received:,}")
    alone, _ = _measure_stall(RATE, SECONDS, feed_timeline=False)
    a = stats(alone)
    report("  … the same, timeline dock not fed (attribution): p99", fmt_seconds(a.p99),
           ratio=a.p99 / max(floor_stats.p99, 1e-4))
    report("  … … max", fmt_seconds(a.maximum),
           ratio=a.maximum / max(floor_stats.maximum, 1e-4))
    home = tempfile.mkdtemp(prefix="reins-bench-start-")
    bare, full = [], []
    _cold_start(BARE, home)  # warm-up: the disk cache, and the bytecode written once
    _cold_start(APP, home)
    for _ in range(5):
        bare.append(_cold_start(BARE, home))
        full.append(_cold_start(APP, home))
    b, f = statistics.median(bare), statistics.median(full)
    report("cold start: bare PySide6 window (floor), median of 5", fmt_seconds(b))
    report("cold start: Reins main window shown, median of 5", fmt_seconds(f), ratio=f / b,
           goal="≤ 2× floor", ok=f / b <= 2.0)


if __name__ == "__main__":
    run()
