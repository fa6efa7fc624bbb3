"""Helpers shared by the sandbox tests (process-table scans, readiness waits)."""

from __future__ import annotations

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
