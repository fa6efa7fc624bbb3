"""Screenshots of the timeline and the output viewer for docs/screenshots/.

    xvfb-run -a .venv/bin/python -m desktop.timeline.screenshots [OUTPUT_DIR]

Writes timeline.png (a mix of every status, the running call selected with its details) and
viewer.png (a command's output with ANSI colours, searched, on the current match), and
viewer-wrap.png (the same with a very long line wrapped). The data is made up here and fed
through the real widgets, exactly as the kernel's events and an externalized output would be.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from desktop.timeline.panel import TimelinePanel
from desktop.viewer.window import OutputViewer
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    Event,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)

S = "screenshot"


def timeline_events(output: Path) -> list[Event]:
    return [
        ToolCallStarted(S, "t1", "read_file", {"path": "src/app/main.py"},
                        summary="src/app/main.py"),
        ToolResultEvent(S, "t1", "read_file", False, None, 4.2, 8_412, None, "import sys…"),
        ToolCallStarted(S, "t2", "grep", {"pattern": "def load_", "path": "src"},
                        summary="'def load_' in src"),
        ToolResultEvent(S, "t2", "grep", False, None, 38.0, 1_204, None,
                        "src/app/config.py:12: def load_config(path):"),
        ToolCallStarted(S, "t3", "bash", {"command": "pytest -x -q tests", "timeout": 600},
                        summary="pytest -x -q tests", risk="execute"),
        ApprovalRequest(S, "t3", "bash", {"command": "pytest -x -q tests"}, "execute",
                        "ask mode: commands need approval", preview="$ pytest -x -q tests"),
        ApprovalDecision(S, "t3", "allow_session", "user", "session"),
        ToolResultEvent(S, "t3", "bash", True, "execution_error", 41_200.0, 2_811_904,
                        str(output),
                        "exit status 1\n[… 2811904 bytes omitted; full output at "
                        f"{output} …]\nFAILED tests/test_config.py::test_load_missing"),
        ToolCallStarted(S, "t4", "edit_file", {"path": "src/app/config.py",
                                                "old": "open(path)", "new": "open(path, "
                                                "encoding='utf-8')"},
                        summary="src/app/config.py", risk="write"),
        ApprovalDecision(S, "t4", "allow_always", "rule", "always", "Edit(src/**)"),
        ToolResultEvent(S, "t4", "edit_file", False, None, 6.0, 96, None, "1 change"),
        ToolCallStarted(S, "t5", "bash", {"command": "rm -rf ~/.cache/pip"},
                        summary="rm -rf ~/.cache/pip", risk="destructive"),
        ApprovalRequest(S, "t5", "bash", {"command": "rm -rf ~/.cache/pip"}, "destructive",
                        "destructive command outside the workspace"),
        ApprovalDecision(S, "t5", "deny", "user", "once", message="not needed"),
        ToolResultEvent(S, "t5", "bash", True, "approval_denied", 0.0, 52, None,
                        "The user denied this call: not needed"),
        ToolCallStarted(S, "t6", "fetch", {"url": "https://pypi.org/simple/requests/"},
                        summary="https://pypi.org/simple/requests/"),
        ApprovalDecision(S, "t6", "allow_once", "mode", "once"),
        ToolResultEvent(S, "t6", "fetch", True, "timeout", 30_000.0, 0, None,
                        "timed out after 30 s"),
        ToolCallStarted(S, "t7", "bash", {"command": "pip download numpy"},
                        summary="pip download numpy", risk="execute"),
        ApprovalDecision(S, "t7", "allow_session", "user", "session"),
        ToolResultEvent(S, "t7", "bash", True, "cancelled", 2_300.0, 3_100, None,
                        "cancelled by the user"),
        ToolCallStarted(S, "t8", "bash", {"command": "make -j4 build", "timeout": 900},
                        summary="make -j4 build", risk="execute"),
        ApprovalDecision(S, "t8", "allow_session", "user", "session"),
        ToolProgress(S, "t8", 734_003, "[ 62%] Building C object src/core/hash.c.o", 12.4),
        ToolCallStarted(S, "t9", "write_file", {"path": "docs/CHANGES.md", "content": "…"},
                        summary="docs/CHANGES.md", risk="write"),
        ApprovalRequest(S, "t9", "write_file", {"path": "docs/CHANGES.md"}, "write",
                        "ask mode: writes need approval", preview="+ ## 0.4.0"),
        ToolCallStarted(S, "t10", "list_dir", {"path": "tests"}, summary="tests"),
    ]


def test_run_output() -> bytes:
    lines = [b"\x1b[1m============ test session starts ============\x1b[0m",
             b"platform linux -- Python 3.11.7, pytest-8.3.3", b"collected 1412 items", b""]
    for i in range(1, 181):
        status = b"\x1b[32mPASSED\x1b[0m" if i % 37 else b"\x1b[31mFAILED\x1b[0m"
        lines.append(b"tests/test_module_%03d.py::test_case_%d %s [%3d%%]" % (
            i // 10, i, status, i * 100 // 180))
    lines.append(b"payload=" + b"0123456789abcdef" * 600)
    lines.append(b"\x1b[31m=========== 4 failed, 1408 passed in 41.2s ===========\x1b[0m")
    lines.append(b"invalid bytes here: \xff\xfe end")
    return b"\n".join(lines) + b"\n"


def settle(app: QApplication, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def shoot(widget: QWidget, path: Path) -> None:
    widget.grab().save(str(path))
    print(f"wrote {path}")  # noqa: T201 - this is a command-line script


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    with tempfile.TemporaryDirectory(prefix="reins-shots-") as tmp:
        output = Path(tmp) / "sessions" / "a1b2c3" / "tool-results" / "t3.txt"
        output.parent.mkdir(parents=True)
        output.write_bytes(test_run_output())

        panel = TimelinePanel()
        panel.resize(1180, 760)
        panel.show()
        panel.apply_many(timeline_events(output))
        panel.model.flush()
        panel.select_call("t8")
        settle(app, 0.5)
        shoot(panel, out / "timeline.png")

        viewer = OutputViewer()
        viewer.resize(1180, 640)
        viewer.show()
        viewer.open(output)
        settle(app, 0.5)
        viewer.search_for(r"FAILED|case_7\d", regex=True, case=True)
        deadline = time.monotonic() + 10
        while (viewer.scan is None or not viewer.scan.done) and time.monotonic() < deadline:
            settle(app, 0.05)
        for _ in range(4):
            viewer.find_next()
        settle(app, 0.3)
        shoot(viewer, out / "viewer.png")
        viewer.wrap.setChecked(True)
        viewer.go_to_line(182)
        settle(app, 0.3)
        shoot(viewer, out / "viewer-wrap.png")
        viewer.close_file()
        panel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
