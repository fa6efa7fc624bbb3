"""Screenshots of the timeline and the output viewer for docs/screenshots/.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python -m desktop.timeline.screenshots \
        [OUTPUT_DIR]          (part of `make screenshots`)

Writes timeline.png (a mix of every status, the running call selected with the last lines of
its output as they come and its details down to its approval and rule), viewer.png (a
command's output with ANSI colours, searched, on the current match), and viewer-wrap.png
(the same with a very long line wrapped), and timeline-undo.png (a call's changes with
its diff, a later call undone, and an undo stopped by a file changed since). The session is
made up here but uses Reins' own tools (run_command, read_file, grep, …, an MCP tool),
rule syntax (`write_file(src/**)`, `run_command(npm test *)`) and the approval records the
PolicyGate writes (decided by `policy` or by the app's `ui` channel); it is fed through the
real widgets, exactly as the kernel's events and an externalized output would be.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QApplication, QSplitter, QWidget

from desktop.timeline.panel import TimelinePanel
from desktop.viewer.window import OutputViewer
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    Choice,
    DecisionScope,
    Event,
    Risk,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)
from kernel.protocol import BlockedPath, StepInfo, UndoOutcome

S = "screenshot"


def _policy(call_id: str, rule: str, why: str) -> ApprovalDecision:
    """An allow taken by the permission policy (a mode or a rule), as PolicyGate records it."""
    return ApprovalDecision(S, call_id, "allow", "policy", "call", rule, why)


def _user(call_id: str, decision: Choice, scope: DecisionScope, rule: str = "",
          message: str = "") -> ApprovalDecision:
    """The user's answer in the app's approval dialog (channel `ui`)."""
    return ApprovalDecision(S, call_id, decision, "ui", scope, rule, message)


def _command_preview(command: str, network: str = "off") -> str:
    return f"$ {command}\ncwd: ~/src/webapp\nsandbox: bubblewrap\nnetwork: {network}"


def timeline_events(output: Path, spool: Path | None = None) -> list[Event]:
    """A session in ask mode with Reins' own tools, rule syntax and approval records; the
    summaries are what each tool's ToolSpec.summarize gives."""
    edit = {"path": "src/app/config.ts", "old_string": "readFileSync(path)",
            "new_string": "readFileSync(path, 'utf8')"}
    return [
        ToolCallStarted(S, "t1", "read_file", {"path": "src/app/main.ts"},
                        summary="src/app/main.ts"),
        _policy("t1", "mode ask", "reads inside the workspace run"),
        ToolResultEvent(S, "t1", "read_file", False, None, 4.2, 8_412, None, "import { load…"),
        ToolCallStarted(S, "t2", "grep", {"pattern": "export function load", "path": "src"},
                        summary="/export function load/ in src"),
        _policy("t2", "mode ask", "reads inside the workspace run"),
        ToolResultEvent(S, "t2", "grep", False, None, 38.0, 1_204, None,
                        "src/app/config.ts:12: export function loadConfig(path) {"),
        ToolCallStarted(S, "t3", "run_command", {"command": "npm test", "timeout_s": 600},
                        summary="npm test", risk=Risk.EXECUTE),
        ApprovalRequest(S, "t3", "run_command", {"command": "npm test", "timeout_s": 600},
                        Risk.EXECUTE, "execute tools ask in ask mode",
                        preview=_command_preview("npm test"), rule="mode ask"),
        _user("t3", "allow_session", "session", "run_command(npm test *)"),
        ToolResultEvent(S, "t3", "run_command", True, "execution_error", 41_200.0, 2_811_904,
                        str(output),
                        "exit status 1\n[… 2811904 bytes omitted; full output at "
                        f"{output} …]\nFAIL tests/config.test.ts › loads a missing file"),
        ToolCallStarted(S, "t4", "read_tool_output", {"call_id": "t3", "offset": 2_790_000},
                        summary="t3 from byte 2790000"),
        _policy("t4", "mode ask", "reads inside the workspace run"),
        ToolResultEvent(S, "t4", "read_tool_output", False, None, 2.1, 21_904, None,
                        "Expected: 'utf8' Received: undefined"),
        ToolCallStarted(S, "t5", "edit_file", edit, summary="src/app/config.ts",
                        risk=Risk.WRITE),
        ApprovalRequest(S, "t5", "edit_file", edit, Risk.WRITE, "writes ask in ask mode",
                        preview="-readFileSync(path)\n+readFileSync(path, 'utf8')",
                        rule="mode ask"),
        _user("t5", "allow_always", "always", "edit_file(src/**)"),
        ToolResultEvent(S, "t5", "edit_file", False, None, 6.0, 96, None, "1 change",
                        changes=[{"path": "src/app/config.ts", "kind": "modified",
                                  "entry": "file", "added": 1, "removed": 1}]),
        ToolCallStarted(S, "t6", "write_file", {"path": "src/app/defaults.ts",
                                                "content": "export const ENCODING = 'utf8'\n"},
                        summary="src/app/defaults.ts (31 chars)", risk=Risk.WRITE),
        _policy("t6", "rule allow write_file(src/**)", "allowed by the rule write_file(src/**)"),
        ToolResultEvent(S, "t6", "write_file", False, None, 3.0, 40, None,
                        "wrote 31 characters to src/app/defaults.ts",
                        changes=[{"path": "src/app/defaults.ts", "kind": "created",
                                  "entry": "file", "added": 1}]),
        ToolCallStarted(S, "t7", "mcp__git__git_status", {"repo_path": "."},
                        summary='{"repo_path": "."}', risk=Risk.READ),
        ApprovalRequest(S, "t7", "mcp__git__git_status", {"repo_path": "."}, Risk.READ,
                        "mcp__git__git_status comes from mcp:git; outside tools ask first",
                        rule="mode ask"),
        _user("t7", "allow_session", "session", "mcp__git__git_status"),
        ToolResultEvent(S, "t7", "mcp__git__git_status", False, None, 212.0, 318, None,
                        "On branch main\nChanges not staged for commit: src/app/config.ts"),
        ToolCallStarted(S, "t8", "run_command", {"command": "rm -rf ~/.npm/_cacache"},
                        summary="rm -rf ~/.npm/_cacache", risk=Risk.EXECUTE),
        ApprovalRequest(S, "t8", "run_command", {"command": "rm -rf ~/.npm/_cacache"},
                        Risk.DESTRUCTIVE, "destructive command (rm -rf)",
                        preview=_command_preview("rm -rf ~/.npm/_cacache"), rule="always ask",
                        can_always=False),
        _user("t8", "deny", "call", message="not needed, leave the cache"),
        ToolResultEvent(S, "t8", "run_command", True, "approval_denied", 0.0, 74, None,
                        "The user denied this call: not needed, leave the cache"),
        ToolCallStarted(S, "t9", "run_command", {"command": "npm install --no-audit"},
                        summary="npm install --no-audit", risk=Risk.EXECUTE),
        ApprovalRequest(S, "t9", "run_command", {"command": "npm install --no-audit"},
                        Risk.EXECUTE, "the command needs the network",
                        preview=_command_preview("npm install --no-audit", "on"),
                        rule="mode ask"),
        _user("t9", "allow_once", "once"),
        ToolResultEvent(S, "t9", "run_command", True, "timeout", 120_000.0, 48_113, None,
                        "The call to 'run_command' did not finish within its 120 s time limit"),
        ToolCallStarted(S, "t10", "run_command", {"command": "npm test -- --watch"},
                        summary="npm test -- --watch", risk=Risk.EXECUTE),
        _policy("t10", "session grant run_command(npm test *)",
                "allowed for this session (run_command(npm test *))"),
        ToolResultEvent(S, "t10", "run_command", True, "cancelled", 9_300.0, 3_100, None,
                        "The user stopped the call to 'run_command' while it was running"),
        ToolCallStarted(S, "t11", "run_command", {"command": "npm run build",
                                                  "timeout_s": 900},
                        summary="npm run build", risk=Risk.EXECUTE),
        ApprovalRequest(S, "t11", "run_command", {"command": "npm run build",
                                                  "timeout_s": 900},
                        Risk.EXECUTE, "execute tools ask in ask mode",
                        preview=_command_preview("npm run build"), rule="mode ask"),
        _user("t11", "allow_session", "session", "run_command(npm run *)"),
        ToolProgress(S, "t11", 734_003, "vite v5.4.2 building for production… 1287 modules",
                     12.4, output_path=str(spool or "")),
        ToolCallStarted(S, "t12", "write_file", {"path": "CHANGELOG.md", "content": "…"},
                        summary="CHANGELOG.md (1 chars)", risk=Risk.WRITE),
        ApprovalRequest(S, "t12", "write_file", {"path": "CHANGELOG.md", "content": "…"},
                        Risk.WRITE, "writes ask in ask mode", preview="+## 0.4.0",
                        rule="mode ask"),
        ToolCallStarted(S, "t13", "list_directory", {"path": "tests"}, summary="tests"),
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


def build_output() -> str:
    """What `npm run build` (t11, still running) has written so far: its last lines show
    in the details pane as they come."""
    lines = ["> web@2.3.0 build", "> vite build", "",
             "vite v5.4.2 building for production..."]
    lines += [f"transforming src/components/{name}.tsx" for name in (
        "App", "Header", "Sidebar", "SessionList", "Timeline", "Details", "Viewer", "Search",
        "Settings", "Grants", "McpServers", "Approval", "Prompt", "Markdown", "CodeBlock")]
    lines += ["✓ 1287 modules transformed.", "rendering chunks (3)...",
              "computing gzip size (1)...",
              "vite v5.4.2 building for production… 1287 modules"]
    return "\n".join(lines) + "\n"


def settle(app: QApplication, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def shoot(widget: QWidget, path: Path) -> None:
    widget.grab().save(str(path))
    print(f"wrote {path}")  # noqa: T201 - this is a command-line script


UNDO_DIFF = """# src/app/config.ts: modified
--- a/src/app/config.ts
+++ b/src/app/config.ts
@@ -3,3 +3,3 @@
 export function load(path: string) {
-  return readFileSync(path)
+  return readFileSync(path, 'utf8')
 }"""


def shoot_undo(app: QApplication, panel: TimelinePanel, path: Path) -> None:
    """The write_file call undone; the edit selected with its diff, its undo stopped."""
    panel.set_steps((StepInfo("t5"), StepInfo("t6", undone=True, undoable=False),
                     StepInfo("t6", undoable=False, undoes="t6")))
    panel.select_call("t5")
    panel.show_diff("t5", UNDO_DIFF)
    panel.show_undo_outcome(UndoOutcome(
        S, "t5", "undo", blocked=(BlockedPath("src/app/config.ts", "changed outside Reins"),),
        stopped_at="t5"))
    splitter = panel.findChild(QSplitter)
    if splitter is not None:
        splitter.setSizes([500, 500])
    settle(app, 0.3)
    shoot(panel, path)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    with tempfile.TemporaryDirectory(prefix="reins-shots-") as tmp:
        output = Path(tmp) / "sessions" / "a1b2c3" / "tool-results" / "t3.txt"
        output.parent.mkdir(parents=True)
        output.write_bytes(test_run_output())

        spool = Path(tmp) / "sessions" / "a1b2c3" / "tool-results" / "t11.txt"
        spool.write_text(build_output())
        QCursor.setPos(0, 0)  # off the table: no row shaded as hovered in the picture
        panel = TimelinePanel()
        panel.resize(1180, 1000)
        panel.show()
        panel.apply_many(timeline_events(output, spool))
        panel.model.flush()
        panel.select_call("t11")
        splitter = panel.findChild(QSplitter)
        if splitter is not None:  # every row in view, and the details down to the approval
            splitter.setSizes([500, 500])
        settle(app, 0.3)
        panel.details.more.ensureWidgetVisible(panel.details.approval_fields["Rule"], 0, 8)
        settle(app, 0.3)
        shoot(panel, out / "timeline.png")
        shoot_undo(app, panel, out / "timeline-undo.png")

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
