"""The session store's sustained durable commit rate (events/s, fsynced before reported).

Floor, measured in the same run: plain sqlite3 in WAL mode with synchronous=FULL, one
transaction (one fsync) per event — what "commit each event before reporting it" costs
without group commit. Then the store one event at a time (append_event waits for each
commit), and pipelined (submit_event: the producer keeps going and the events queued
during one fsync share the next, each still reported only once on disk).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from concurrent.futures import wait
from pathlib import Path

from bench.common import report
from kernel.agent.store import SessionStore
from kernel.events import ToolCallStarted

N_ONE_BY_ONE = 1_000
"""Events for the one-commit-per-event figures (stopped after MAX_S on a slow disk)."""
MAX_S = 3.0
N_PIPELINED = 30_000
GOAL = 5_000


def _event(sid: str, i: int) -> ToolCallStarted:
    """An event the store keeps each of (progress events are coalesced, one per call)."""
    return ToolCallStarted(sid, call_id=f"toolu_bench_{i}", name="read_file",
                           input={"path": f"src/file_{i}.py"}, summary=f"src/file_{i}.py")


def _floor(path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, session_id TEXT, type TEXT,"
                 " data TEXT, created REAL)")
    started = time.perf_counter()
    done = 0
    while done < N_ONE_BY_ONE and time.perf_counter() - started < MAX_S:
        event = _event("s", done)
        done += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events(session_id, type, data, created) VALUES (?, ?, ?, ?)",
                     ("s", event.type, json.dumps(event.to_dict()), time.time()))
        conn.execute("COMMIT")
    rate = done / (time.perf_counter() - started)
    conn.close()
    return rate


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-store-") as tmp:
        floor = _floor(Path(tmp) / "floor.sqlite3")
        report("floor: sqlite WAL+FULL, one commit per event", f"{floor:,.0f} ev/s", ratio=1.0)
        with SessionStore(Path(tmp) / "store.sqlite3") as store:
            sid = store.create_session(tmp, "bench")
            started = time.perf_counter()
            synced = 0
            while synced < N_ONE_BY_ONE and time.perf_counter() - started < MAX_S:
                store.append_event(_event(sid, synced))
                synced += 1
            sync = synced / (time.perf_counter() - started)
            report("store.append_event, waiting for each commit", f"{sync:,.0f} ev/s",
                   ratio=sync / floor)
            started = time.perf_counter()
            futures = [store.submit_event(_event(sid, i)) for i in range(N_PIPELINED)]
            wait(futures)
            pipelined = N_PIPELINED / (time.perf_counter() - started)
            assert all(f.exception() is None for f in futures)
        check = sqlite3.connect(Path(tmp) / "store.sqlite3")
        (stored,) = check.execute("SELECT COUNT(*) FROM events").fetchone()
        check.close()
        assert stored == synced + N_PIPELINED, stored
        report("store.submit_event, group commit (sustained)", f"{pipelined:,.0f} ev/s",
               ratio=pipelined / floor, goal=f"≥ {GOAL:,} ev/s durable",
               ok=pipelined >= GOAL)
