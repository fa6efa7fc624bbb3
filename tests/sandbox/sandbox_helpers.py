"""Helpers shared by the sandbox tests (process-table scans, readiness waits)."""

from __future__ import annotations

import time
from pathlib import Path

import psutil

MISSING = "/nonexistent/reins-test/bwrap"
"""A bwrap path that does not exist: how the tests simulate a machine without a sandbox."""


def leftovers(marker: str) -> list[str]:
    """Command lines of live processes that contain `marker` (zombies excluded)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(proc.info["cmdline"] or ())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if marker in cmdline:
            found.append(f"{proc.pid}: {cmdline}")
    return found


def wait_for_text(path: Path, text: str, limit_s: float = 30.0) -> None:
    """Block until the spool file `path` contains `text` (a readiness wait, not a timing)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {path}")
