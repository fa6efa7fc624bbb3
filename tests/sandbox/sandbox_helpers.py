"""Helpers shared by the sandbox tests (a runner, process-table scans)."""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from kernel.sandbox.executor import CommandExecutor, CommandOutcome
from kernel.tools.externalize import OutputStore

MISSING = "/nonexistent/reins-test/bwrap"
"""A bwrap path that does not exist: how the tests simulate a machine without a sandbox."""

RunCommand = Callable[..., tuple[CommandOutcome, str]]


def make_runner(
    executor: CommandExecutor, workspace: Path, outputs: OutputStore
) -> RunCommand:
    counter = itertools.count()

    def run(command: str, **kwargs: Any) -> tuple[CommandOutcome, str]:
        kwargs.setdefault("timeout_s", 60)
        kwargs.setdefault("workspace", workspace)
        with outputs.spool(f"call-{next(counter)}") as spool:
            outcome = asyncio.run(executor.run(command, spool=spool, **kwargs))
        return outcome, outcome.spool_path.read_text(errors="replace")

    return run


def leftovers(marker: str) -> list[str]:
    """Command lines of live processes that contain `marker`, not as part of a longer
    word or number (`sleep 5` is not `sleep 540`); zombies excluded."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(marker)}(?![\w.])")
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(proc.info["cmdline"] or ())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if pattern.search(cmdline):
            found.append(f"{proc.pid}: {cmdline}")
    return found


def accepted(server: socket.socket) -> int:
    """How many connections a non-blocking listening socket has waiting (each is closed)."""
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1
