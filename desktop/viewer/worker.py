"""The viewer's worker process: indexes and searches one file away from the UI's GIL.

Why a process: scanning a 1 GB file is seconds of CPU in `bytes.count`, `bytes.find` and `re`,
none of which release the GIL; in a thread of the UI process that work stalls painting (a
measured 90 ms p99 event-loop gap while a thread indexed). In its own process it costs the
UI nothing. The process imports no Qt (this module, `blocks` and `search` only).

Parent side:
    worker = Worker(path, builder, on_message)   # starts the process and a reader thread
    worker.send(("search", search_id, text, regex, case)) / (("cancel", search_id))
    worker.close()

Messages from the worker (plain tuples, pickled over a multiprocessing Pipe), delivered to
`on_message` on the reader thread:
    ("index", generation, rows_before, lines_before, line_start, size, done)
        — the index entries added since the last message (array('q') bytes); a new
          generation means the file shrank and the entries start again from block 0
    ("search", search_id, SearchUpdate)
    ("closed",)  — the worker ended (quit, crash or killed)
The worker exits when told to, and on its own when the UI's end of the pipe closes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from array import array
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from desktop.viewer.blocks import IndexBuilder
from desktop.viewer.search import PatternError, SearchState, compile_pattern

FOLLOW_POLL_S = 0.2
INDEX_STEP_BLOCKS = 64
SEARCH_STEP_CHUNKS = 4

Message = tuple[Any, ...]


def serve(conn: Connection, path: str, block: int, cap: int,
          entries: tuple[bytes, bytes, bytes]) -> None:
    """The worker process's main loop."""
    if hasattr(os, "nice"):
        os.nice(10)  # background work: the UI process wins the CPU when both want it
    fd = os.open(path, os.O_RDONLY)
    builder = IndexBuilder(fd, block=block, cap=cap)
    builder.rows_before, builder.lines_before, builder.line_start = (
        array("q", data) for data in entries)
    sent, generation = len(builder.rows_before), builder.generation
    searches: dict[int, SearchState] = {}
    try:
        while True:
            while conn.poll(0):
                message = conn.recv()
                if message[0] == "quit":
                    return
                if message[0] == "search":
                    _, search_id, text, regex, case = message
                    searches.clear()
                    try:
                        pattern = compile_pattern(text, regex=regex, case=case)
                    except PatternError:
                        continue  # the UI checked it first; nothing to run
                    searches[search_id] = SearchState(fd, pattern)
                elif message[0] == "cancel":
                    searches.pop(message[1], None)
            worked = builder.step(INDEX_STEP_BLOCKS)
            if builder.generation != generation:
                generation, sent = builder.generation, 0
            if worked or len(builder.rows_before) > sent:
                conn.send(("index", generation, builder.rows_before[sent:].tobytes(),
                           builder.lines_before[sent:].tobytes(),
                           builder.line_start[sent:].tobytes(), builder.size, builder.done))
                sent = len(builder.rows_before)
            for search_id, state in list(searches.items()):
                for _ in range(SEARCH_STEP_CHUNKS):
                    update = state.step()
                    if update is None:
                        break
                    conn.send(("search", search_id, update))
                    worked = True
            if not worked:
                conn.poll(FOLLOW_POLL_S)
    except (EOFError, OSError, KeyboardInterrupt):
        return
    finally:
        os.close(fd)


class Worker:
    def __init__(self, path: Path, builder: IndexBuilder,
                 on_message: Callable[[Message], None]) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        entries = (builder.rows_before.tobytes(), builder.lines_before.tobytes(),
                   builder.line_start.tobytes())
        self.process = context.Process(
            target=serve, args=(child, str(path), builder.block, builder.cap, entries),
            name="reins-viewer-worker", daemon=True)
        self.process.start()
        child.close()
        self._on_message = on_message
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="viewer-worker-reader",
                                        daemon=True)
        self._reader.start()

    def send(self, message: Message) -> None:
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            self._conn.send(message)  # fails only when the worker is gone (reader reports it)

    def _read(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError, ValueError):
                self._on_message(("closed",))
                return
            self._on_message(message)

    def close(self) -> None:
        self.send(("quit",))
        self.process.join(timeout=2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=2)
        self._reader.join(timeout=2)  # the worker's end is closed: the reader sees EOF
        with self._send_lock:
            self._conn.close()
