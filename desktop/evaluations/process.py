"""`reins eval --json OUT` as a child process (QProcess): the window's only way to the kernel.

Progress comes from the child's stderr (`[done/total] task passed|failed CAUSE`, one line a
run), the results from the file it writes. Exit codes 0 (all passed) and 1 (some failed)
both mean a finished run; anything else is a failure, reported with the end of stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, Signal

from desktop.evaluations.runs import progress_of

STDERR_KEPT = 4000


def eval_command() -> list[str]:
    """How to start `reins eval` from this app (frozen: the app binary is `reins`)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "eval"]
    return [sys.executable, "-m", "desktop.entry", "eval"]


class EvalProcess(QObject):
    progress = Signal(int, int, str, bool)
    """done, total, task name, passed"""
    finished = Signal(str)
    """The results file of a run that finished."""
    failed = Signal(str)
    """Why the run produced no results."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._process: QProcess | None = None
        self._out: Path | None = None
        self._buffer = ""
        self._stderr = ""
        self._stopped = False

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self, args: Sequence[str], out: Path) -> None:
        if self._process is not None:
            raise RuntimeError("an evaluation is already running")
        command = [*eval_command(), "--json", str(out), *args]
        self._out, self._buffer, self._stderr, self._stopped = out, "", "", False
        process = QProcess(self)
        process.setProgram(command[0])
        process.setArguments(command[1:])
        process.setStandardOutputFile(QProcess.nullDevice())
        process.readyReadStandardError.connect(self._read)
        process.finished.connect(self._done)
        process.errorOccurred.connect(self._error)
        self._process = process
        process.start()

    def stop(self) -> None:
        """End the run (its child processes end with it: the pool's workers are its own)."""
        if self._process is not None:
            self._stopped = True
            self._process.terminate()

    def _read(self) -> None:
        if self._process is None:
            return
        text = bytes(self._process.readAllStandardError().data()).decode("utf-8", "replace")
        self._stderr = (self._stderr + text)[-STDERR_KEPT:]
        self._buffer += text
        *lines, self._buffer = self._buffer.replace("\r", "\n").split("\n")
        for line in lines:
            parsed = progress_of(line)
            if parsed is not None:
                self.progress.emit(*parsed)

    def _done(self, code: int, status: QProcess.ExitStatus) -> None:
        self._read()
        out, stopped = self._out, self._stopped
        process, self._process = self._process, None
        if process is not None:
            process.deleteLater()
        if stopped:
            self.failed.emit("stopped")
        elif status == QProcess.ExitStatus.NormalExit and code in (0, 1) and out is not None \
                and out.exists():
            self.finished.emit(str(out))
        else:
            self.failed.emit(f"reins eval ended with exit code {code}: "
                             f"{self._stderr.strip()[-600:] or '(no message)'}")

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._process is not None:
            process, self._process = self._process, None
            process.deleteLater()
            self.failed.emit(f"reins eval could not start: {process.errorString()}")
