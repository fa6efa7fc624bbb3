"""The UI's side of the kernel: start the worker, talk protocol, never block the Qt thread.

A reader thread blocks on the pipe and queues each message's bytes; the Qt thread takes
them at most once per frame, in chunks that it decodes and hands out with consecutive
streamed text deltas of a session merged into one, so thousands of events per second cost a
few dozen slot calls per second. Decoding happens on the Qt thread, inside its budget, on
purpose: a reader thread busy decoding holds the GIL in bursts, and every Python callback
of a repaint (each table cell, each model lookup) then waits for it — measured, that made
cell painting 4× slower while streaming. A frame's work is bounded by time, not by count:
chunks are handed out until `BUDGET_MS` have passed, and what is left waits (in order) for
the next frame, so a backlog after a stall or a slow consumer never blocks the event loop in
one long piece.

A dead kernel shows as EOF on the pipe: `died` is emitted and a new kernel is started after
a back-off that grows with each consecutive failure (`RestartPolicy`); after `cap` of them,
or at once when the kernel says its session database cannot be used, no new one is started
and `failed` carries why: the exit code and the last lines the kernel wrote on stderr (the
worker's stderr comes through a pipe read by a thread of its own, which also copies it to
the UI's stderr). A kernel that ran for `stable_s` after it was ready starts the count anew.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from kernel import protocol as p
from kernel.events import AssistantDelta

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    Starter = Callable[[], tuple[BaseProcess, Connection]]

log = logging.getLogger(__name__)
FRAME_MS = 16
BUDGET_MS = 8.0
"""Chunks are handed to the UI until this much of a frame has passed; the rest wait a frame."""
CHUNK = 25
"""Messages decoded per `batch` emission (before deltas are merged)."""


STDERR_LINES = 40
"""How many of the kernel's last stderr lines are kept to say why it died."""


@dataclass(frozen=True)
class RestartPolicy:
    delays_s: tuple[float, ...] = (0.5, 2.0, 5.0)
    """The wait before the 1st, 2nd, 3rd … restart in a row (the last one repeats)."""
    cap: int = 3
    """Restarts in a row after which the client gives up."""
    stable_s: float = 30.0
    """A kernel that was ready for this long ends the row: its death is a first one."""

    def after_death(self, failures: int, ready_for_s: float | None,
                    exit_code: int | None) -> tuple[int, float | None]:
        """(failures in a row now, seconds to wait before the next start, or None: give
        up). `failures` is the count before this death; `ready_for_s` how long the kernel
        had been ready (None: it never was)."""
        if ready_for_s is not None and ready_for_s >= self.stable_s:
            failures = 0
        failures += 1
        if exit_code == p.EXIT_STORE_UNUSABLE or failures > self.cap:
            return failures, None
        return failures, self.delays_s[min(failures, len(self.delays_s)) - 1]


@dataclass(frozen=True)
class KernelFailure:
    """Why the kernel is down for good: shown to the user with what can be done."""

    reason: str
    stderr_tail: str
    """The last lines the kernel wrote on stderr (its traceback or error message)."""
    exit_code: int | None
    restarts: int

    @property
    def database_unusable(self) -> bool:
        return self.exit_code == p.EXIT_STORE_UNUSABLE


def start_kernel_worker(stderr: Connection | None = None) -> tuple[BaseProcess, Connection]:
    """The real kernel worker (its module is imported only when the kernel is started)."""
    from kernel.worker.service import start_worker

    return start_worker(stderr)


def _echo(chunk: bytes) -> None:
    """Copy the kernel's stderr to ours (none in a windowed app; gone at exit)."""
    out = sys.stderr
    if out is None:
        return
    try:
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            buffer.write(chunk)
        else:
            out.write(chunk.decode("utf-8", "replace"))
        out.flush()
    except (OSError, ValueError):
        log.debug("the UI's stderr is gone; the kernel's lines are still kept")


class _StderrTail:
    """Reads a kernel's stderr pipe on a thread: copies it to ours, keeps its last lines."""

    def __init__(self, reader: Connection) -> None:
        self._reader = reader
        self._lines: deque[str] = deque(maxlen=STDERR_LINES)
        self._partial = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="kernel-stderr", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        fd = self._reader.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            _echo(chunk)
            with self._lock:
                *done, self._partial = (self._partial + chunk).split(b"\n")
                self._lines.extend(line.decode("utf-8", "replace") for line in done)
        self._reader.close()

    def text(self, wait_s: float = 0.0) -> str:
        """The last lines; waits up to `wait_s` for the pipe to end first (the kernel's
        last words may still be in it)."""
        self._thread.join(wait_s)
        with self._lock:
            lines = list(self._lines)
            if self._partial:
                lines.append(self._partial.decode("utf-8", "replace"))
        return "\n".join(lines[-STDERR_LINES:])


def coalesce(messages: list[p.Message]) -> list[p.Message]:
    """Merge runs of AssistantDelta events of the same session into one delta each."""
    out: list[p.Message] = []
    for message in messages:
        previous = out[-1] if out else None
        if (isinstance(message, p.EventMessage) and isinstance(message.event, AssistantDelta)
                and isinstance(previous, p.EventMessage)
                and isinstance(previous.event, AssistantDelta)
                and previous.event.session_id == message.event.session_id):
            merged = AssistantDelta(message.event.session_id,
                                    previous.event.text + message.event.text)
            out[-1] = p.EventMessage(merged)
        else:
            out.append(message)
    return out


class KernelClient(QObject):
    batch = Signal(list)
    """A list of protocol messages from the kernel, in order, deltas merged."""
    ready = Signal(object)
    """KernelReady: a (new) kernel is up; configure it and reload the open session."""
    died = Signal(str)
    """The kernel stopped unexpectedly (the reason); a new one is being started (unless the
    client was made with restart=False)."""
    failed = Signal(object)
    """KernelFailure, instead of `died`: the kernel stopped and no new one will be started
    by itself (the cap was reached, or its database cannot be used); `restart_now()` tries
    again."""

    _wake = Signal()
    _eof = Signal(int)

    def __init__(self, parent: QObject | None = None, starter: Starter | None = None,
                 restart: bool = True, clock: Callable[[], float] = time.perf_counter,
                 policy: RestartPolicy = RestartPolicy()) -> None:
        super().__init__(parent)
        self._clock = clock
        self._starter: Starter = starter if starter is not None else self._start_worker
        self._restart = restart
        self.policy = policy
        self._failures = 0
        self._ready_at: float | None = None
        self._stderr: _StderrTail | None = None
        self.restarting = False
        """True between a death and the start of the kernel that replaces it."""
        self._restart_timer = QTimer(self)
        self._restart_timer.setSingleShot(True)
        self._restart_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._restart_timer.timeout.connect(self._restart_due)
        self._lock = threading.Lock()
        self._inbox: deque[bytes] = deque()
        self._scheduled = False
        self._last_flush = 0.0
        self._generation = 0
        self._ready_generation = -1
        self._stopping = False
        self.process: BaseProcess | None = None
        self._conn: Connection | None = None
        self.restarts = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush)
        self._wake.connect(self._on_wake, Qt.ConnectionType.QueuedConnection)
        self._eof.connect(self._on_eof, Qt.ConnectionType.QueuedConnection)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def _start_worker(self) -> tuple[BaseProcess, Connection]:
        """The real worker, its stderr through a pipe of ours (`_StderrTail`)."""
        from multiprocessing import get_context

        reader, writer = get_context("spawn").Pipe(duplex=False)
        try:
            started = start_kernel_worker(writer)
        except BaseException:
            reader.close()
            raise
        finally:
            writer.close()
        self._stderr = _StderrTail(reader)
        return started

    def start(self) -> None:
        self._stopping = False
        self.restarting = False
        self._restart_timer.stop()
        self._generation += 1
        self._ready_at = None
        self._stderr = None
        self.process, self._conn = self._starter()
        threading.Thread(target=self._read_loop, args=(self._conn, self._generation),
                         name="kernel-client-reader", daemon=True).start()

    def send(self, message: p.Message) -> bool:
        """Send a command; False when the kernel is gone (it is being restarted)."""
        conn = self._conn
        if conn is None:
            return False
        try:
            conn.send_bytes(p.encode(message))
            return True
        except (OSError, ValueError):
            return False

    def restart_now(self) -> None:
        """Start a kernel now (after `failed`, or during a back-off), the count anew."""
        self._failures = 0
        if not self.running:
            self.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the kernel to shut down (cancel runs, end tools); force it after `timeout`."""
        self._stopping = True
        self.restarting = False
        self._restart_timer.stop()
        process, conn = self.process, self._conn
        if process is None:
            return
        ready = self._ready_generation == self._generation
        if ready:
            self.send(p.Shutdown())
            process.join(max(0.0, timeout - 0.3))
        # A kernel that never said it was ready has no runs and no tools: nothing to wait for.
        if process.is_alive():
            if ready:
                log.warning("the kernel did not stop within %.1f s; terminating it", timeout)
            else:
                log.info("the kernel was still starting; ending it")
            process.terminate()
            process.join(0.2)
        if process.is_alive():
            process.kill()
            process.join(0.1)
        if conn is not None:
            conn.close()
        self._conn = None

    # ---- reader thread ------------------------------------------------------------------

    def _read_loop(self, conn: Connection, generation: int) -> None:
        while True:
            try:
                raw = conn.recv_bytes()
            except (EOFError, OSError):
                break
            self.receive(raw)
        self._emit_safely(self._eof, generation)

    def receive(self, raw: bytes) -> None:
        """Queue an encoded message from the kernel for the Qt thread (thread-safe; the
        reader thread calls it for every message it reads)."""
        with self._lock:
            self._inbox.append(raw)
            wake = not self._scheduled
            self._scheduled = True
        if wake:
            self._emit_safely(self._wake)

    @staticmethod
    def _emit_safely(signal: object, *args: object) -> None:
        """Emit from the reader thread; the client may already be gone (app exit)."""
        try:
            signal.emit(*args)  # type: ignore[attr-defined]
        except RuntimeError:
            log.debug("kernel client deleted before its reader thread ended")

    # ---- Qt thread ----------------------------------------------------------------------

    def _on_wake(self) -> None:
        wait = FRAME_MS - (self._clock() - self._last_flush) * 1000
        if wait <= 0:
            self.flush()
        elif not self._timer.isActive():
            self._timer.start(int(wait) + 1)

    def flush(self) -> None:
        """Decode waiting messages and hand them to the UI now, in chunks, until the frame's
        budget is spent (checked before each message); the rest stay queued in order for the
        next frame. Malformed messages are logged and dropped by the decoder."""
        started = self._last_flush = self._clock()
        while True:
            messages: list[p.Message] = []
            spent = False
            while len(messages) < CHUNK:
                spent = (self._clock() - started) * 1000 >= BUDGET_MS
                with self._lock:
                    if spent or not self._inbox:
                        break
                    raw = self._inbox.popleft()
                message = p.decode(raw)
                if message is not None:
                    messages.append(message)
            if messages:
                self._deliver(coalesce(messages))
            with self._lock:
                if not self._inbox:
                    self._scheduled = False
                    return
                if spent or (self._clock() - started) * 1000 >= BUDGET_MS:
                    self._scheduled = True
                    self._timer.start(FRAME_MS)
                    return

    def _deliver(self, messages: list[p.Message]) -> None:
        for message in messages:
            if isinstance(message, p.KernelReady):
                self._ready_generation = self._generation
                self._ready_at = self._clock()
                self.ready.emit(message)
        self.batch.emit(messages)

    def _on_eof(self, generation: int) -> None:
        if generation != self._generation or self._stopping:
            return
        self.flush()
        process = self.process
        code = None
        if process is not None:
            process.join(0.5)
            code = process.exitcode
        reason = f"The kernel stopped unexpectedly (exit code {code})."
        self._conn = None
        ready_for = None if self._ready_at is None else self._clock() - self._ready_at
        self._failures, delay = self.policy.after_death(self._failures, ready_for, code)
        if not self._restart or delay is not None:
            self.restarting = self._restart
            self.died.emit(reason)
            if delay is not None and self._restart:
                self._restart_timer.start(int(delay * 1000))
            return
        stderr = self._stderr.text(wait_s=0.5) if self._stderr is not None else ""
        if code == p.EXIT_STORE_UNUSABLE:
            reason = "The kernel cannot use the session database."
        elif self._failures > 1:
            reason = (f"The kernel stopped {self._failures} times in a row (last exit code "
                      f"{code}).")
        self.failed.emit(KernelFailure(reason, stderr, code, self.restarts))

    def _restart_due(self) -> None:
        if self._stopping or not self.restarting:
            return
        self.restarts += 1
        self.start()
