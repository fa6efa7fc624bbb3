"""`python -m desktop.screenshots OUTDIR` (run under `xvfb-run -a` by `make screenshots`).

Drives the real app — a real kernel worker against the loopback fake model — through a
short session (a streamed Markdown answer with code, a read, a write that asks for
approval), then saves the main window: a new session's empty state, the approval as a card
in the conversation (light and dark), the finished turn (also 700 px narrow, 2200 px wide
and in dark mode), and the settings dialog as PNG files. Nothing here is staged: the
widgets show what the kernel sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

from desktop.app import make_application
from desktop.controller import AppController
from desktop.theme import DARK, flat_palette
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths

ANSWER = """The failing test is `test_parse_dates`: the parser assumes **ISO dates**, but the
fixture uses `DD/MM/YYYY`. A fix that accepts both:

```python
from datetime import datetime

def parse_date(text: str) -> datetime:
    for fmt in ("%Y-%m-%d", "%d/%m/%Y"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ValueError(f"not a date: {text!r}")
```

I'll write it to `dates.py` — you will be asked first."""

SOURCE = "def parse_date(text):\n    return datetime.fromisoformat(text)\n"
FIXED = ("from datetime import datetime\n\n\ndef parse_date(text: str) -> datetime:\n"
         "    for fmt in (\"%Y-%m-%d\", \"%d/%m/%Y\"):\n        try:\n"
         "            return datetime.strptime(text, fmt)\n        except ValueError:\n"
         "            continue\n    raise ValueError(f\"not a date: {text!r}\")\n")


async def _wait(condition: Callable[[], bool], timeout: float = 90.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app did not reach the expected state")
        await asyncio.sleep(0.05)


async def _settle(seconds: float = 0.6) -> None:
    await asyncio.sleep(seconds)
    QApplication.processEvents()


def _save(widget: QWidget, path: Path) -> None:
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")


async def take(outdir: Path) -> list[Path]:
    home = Path(tempfile.mkdtemp(prefix="reins-shots-"))
    workspace = home / "dates-project"
    workspace.mkdir()
    (workspace / "dates.py").write_text(SOURCE)
    (workspace / "test_dates.py").write_text("def test_parse_dates():\n    ...\n")
    # The kernel process finds its data through REINS_HOME, like every Reins process.
    os.environ["REINS_HOME"] = str(home / "reins-home")
    paths = AppPaths.from_env()
    paths.config.mkdir(parents=True)
    saved: list[Path] = []
    with FakeAnthropicServer(api_key="sk-screenshots") as fake:
        paths.settings_file.write_text(json.dumps(
            {"base_url": fake.base_url, "model": "claude-sonnet-4-6", "default_mode": "ask",
             "permissions": {"allow": ["run_command(git status)"],
                             "deny": ["read_file(~/.ssh/**)"]}}))
        fake.add(
            reply("Let me look at the parser first.",
                  ToolUse("read_file", {"path": "dates.py"}), chunk_chars=12),
            reply(ANSWER, ToolUse("write_file", {"path": "dates.py", "content": FIXED}),
                  chunk_chars=24),
            reply("Done: `dates.py` now accepts ISO and `DD/MM/YYYY` dates."),
        )
        controller = AppController(paths, api_key="sk-screenshots")
        window = controller.window
        window.resize(1440, 900)
        controller.start()
        await _wait(lambda: window.kernel_label.text() == "")
        window.sessions.new_requested.emit(str(workspace), "ask", False)
        await _wait(lambda: controller.current is not None)
        await _settle()
        saved.append(outdir / "main-window-empty.png")
        _save(window, saved[-1])
        window.prompt.edit.setPlainText("Why does test_parse_dates fail? Fix it.")
        window.prompt.edit.submitted.emit()
        cards = window.chat.approval_cards
        await _wait(lambda: cards.first() is not None)
        card = cards.first()
        assert card is not None
        await _wait(lambda: card.armed)
        await _settle()
        saved.append(outdir / "approval-inline.png")
        _save(window, saved[-1])
        light = QGuiApplication.palette()
        QGuiApplication.setPalette(flat_palette(*DARK))  # as a dark system theme gives it
        await _settle()
        saved.append(outdir / "approval-inline-dark.png")
        _save(window, saved[-1])
        QGuiApplication.setPalette(light)
        await _settle()
        card.rearm()
        await _wait(lambda: card.armed)
        card.allow_once.click()
        view = controller.views[controller.current or ""]
        await _wait(lambda: not view.running and any(
            "Done:" in getattr(i, "text", "") for i in view.chat.items()))
        window.chat.scrollToBottom()
        await _settle()
        saved.append(outdir / "main-window.png")
        _save(window, saved[-1])
        # Narrow, the panels are tabs and the chat keeps half; wide, the text is a column.
        for name, width, height in (("main-window-narrow.png", 700, 640),
                                    ("main-window-wide.png", 2200, 1000)):
            window.resize(width, height)
            await _settle()
            window.resize(width, height)  # (once the panels are tabs, it may be narrower)
            await _settle()
            window.chat.scrollToBottom()
            await _settle(0.3)
            saved.append(outdir / name)
            _save(window, saved[-1])
        window.resize(1440, 900)
        await _settle()
        window.resize(1440, 900)  # (the panels were tabs: once beside the chat, it may be wider)
        QGuiApplication.setPalette(flat_palette(*DARK))
        await _settle()
        window.chat.scrollToBottom()
        await _settle(0.3)
        saved.append(outdir / "main-window-dark.png")
        _save(window, saved[-1])
        QGuiApplication.setPalette(light)
        await _settle()
        controller.open_settings()
        settings = controller.settings_dialog
        assert settings is not None
        await _wait(lambda: settings.loaded)  # the kernel's reading of settings.json
        settings.tabs.setCurrentIndex(1)
        await _settle()
        saved.append(outdir / "settings-dialog.png")
        _save(settings, saved[-1])
        settings.reject()
        window.close()
        controller.shutdown()
    return saved


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    outdir = Path(args[0] if args else "docs/screenshots")
    outdir.mkdir(parents=True, exist_ok=True)
    make_application()
    saved = qasync.run(take(outdir))
    for path in saved:
        print(path)  # noqa: T201 (the script reports what it wrote)
    return 0


if __name__ == "__main__":
    sys.exit(main())
