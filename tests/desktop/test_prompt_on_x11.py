"""The prompt on a real X server (Xvfb, Qt's xcb platform), where Qt repaints less than
offscreen: when the prompt's reason changes ("Reading the API key from the keyring…" to
"Ask Reins…"), the new placeholder is painted. Offscreen repaints the box anyway, so only
X shows the fault (found trying the app under Xvfb)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import time
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication
from desktop.chat.prompt import PromptBox

app = QApplication([])
paints = [0]


class Count(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            paints[0] += 1
        return False


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()


box = PromptBox()
box.set_enabled_for_input(False, "Reading the API key from the keyring…")
box.resize(500, 120)
counter = Count()
box.edit.viewport().installEventFilter(counter)
box.show()
deadline = time.monotonic() + 10
while not paints[0] and time.monotonic() < deadline:
    spin(0.05)
spin(0.2)
before = paints[0]
box.set_enabled_for_input(True, "Ask Reins… (Enter to send, Shift+Enter for a new line)")
deadline = time.monotonic() + 2
while paints[0] == before and time.monotonic() < deadline:
    spin(0.02)
print(before, paints[0], box.edit.placeholderText())
"""


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs Xvfb (xvfb-run)")
def test_a_new_reason_is_painted_in_the_prompt_on_x11() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["xvfb-run", "-a", sys.executable, "-c", SCRIPT], env=env,
                          capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    before, after, text = done.stdout.split(maxsplit=2)
    assert int(before) >= 1, "the box was painted when shown"
    assert int(after) > int(before), "the new placeholder was painted"
    assert text.strip().startswith("Ask Reins…")
