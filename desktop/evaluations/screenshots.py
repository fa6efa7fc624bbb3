"""Screenshots of the Evaluations window for docs/screenshots/.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python -m desktop.evaluations.screenshots \
        [OUTPUT_DIR]          (part of `make screenshots`)

Runs the many-tools set twice through the window, as a user would — `reins eval --scripted`
in a child process, without find_tools (`--set tool_search_threshold=1000`) and with it —
then writes evaluations.png (the second run: its table and a bar chart per metric) and
evaluations-compare.png (the two runs side by side: what changed per task and per metric).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

from desktop.evaluations.window import EvaluationsWindow
from kernel.eval.task import builtin_tasks_dir

RUN_TIMEOUT_MS = 300_000


def _run(window: EvaluationsWindow, extra: list[str]) -> None:
    loop = QEventLoop()
    outcome: list[str] = []

    def finished(path: str) -> None:
        outcome.append(path)
        loop.quit()

    def failed(why: str) -> None:
        outcome.append("failed: " + why)
        loop.quit()

    window.process.finished.connect(finished)
    window.process.failed.connect(failed)
    QTimer.singleShot(RUN_TIMEOUT_MS, loop.quit)
    window.run_suite(extra)
    loop.exec()
    window.process.finished.disconnect(finished)
    window.process.failed.disconnect(failed)
    if not outcome or outcome[0].startswith("failed"):
        raise SystemExit(f"reins eval did not finish: {outcome or 'timed out'}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    outdir = Path(args[0] if args else "docs/screenshots")
    outdir.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    window = EvaluationsWindow(Path(tempfile.mkdtemp(prefix="reins-eval-shots-")))
    window.resize(1400, 900)
    window.show()
    window.tasks_edit.setText(str(builtin_tasks_dir().parent / "many-tools"))
    _run(window, ["--set", "tool_search_threshold=1000"])
    _run(window, [])
    app.processEvents()
    window.grab().save(str(outdir / "evaluations.png"))
    for i in range(window.runs_list.count()):
        window.runs_list.item(i).setSelected(True)
    app.processEvents()
    window.grab().save(str(outdir / "evaluations-compare.png"))
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
