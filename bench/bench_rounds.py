"""Harness time per model round, and whether it stays flat as a session grows.

Black box: `reins exec --json` runs a 420-round session against the fake model server
(kernel.fakemodel, loopback, in this process): each answer reads 20 lines of a file (about
1.7 KB per round), so from about round 250 the request nears the context window and old
tool results are trimmed from it. The server notes when each request arrives; the gap
between two consecutive requests is what one round costs. Floor, in the same run: a script
that replays the very request bodies reins sent, in order, through the anthropic SDK
against the same server (so the SDK's and the server's share of a round, which grows with
the request, is in both). Harness time per round = reins' gap − the floor's gap.

A first run, not timed, records the bodies (comparing each with the previous one, which
would add to the server's time). Figures (medians over the trials, trials interleaved):
- the harness time per round over the whole session (goal: at most +3 ms);
- the harness time of rounds 390–410 against rounds 10–30 (goal: at most 1.2×).
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.common import fmt_seconds, report
from kernel.fakemodel import FakeAnthropicServer, Reply, ToolUse, reply

ROUNDS = 420
LINES_PER_READ = 20
TRIALS = 1
EARLY = range(10, 31)
LATE = range(390, 411)
PER_ROUND_GOAL_S = 0.003
FLAT_GOAL = 1.2
BIN = Path(sys.executable).parent
REPLAY_SCRIPT = """
import asyncio, json, sys
import anthropic

def load(path):
    with open(path) as f:
        table = json.loads(f.readline())
        bodies = [json.loads(line) for line in f]
    for body in bodies:
        body["messages"] = [table[i] for i in body["messages"]]
    return bodies

async def main():
    bodies = load(sys.argv[2])
    async with anthropic.AsyncAnthropic(api_key="bench", base_url=sys.argv[1],
                                        max_retries=0) as client:
        for body in bodies:
            async with client.messages.stream(**body) as stream:
                async for _ in stream:
                    pass
                await stream.get_final_message()

asyncio.run(main())
"""


class _Bodies:
    """The request bodies as JSON lines, each message once in a table written first (a
    message is in every later request: written out in full each time they would take
    130 MB), kept as they arrive so that no body stays in memory."""

    def __init__(self) -> None:
        self.table: list[Any] = []
        self.lines: list[str] = []
        self._previous: list[Any] = []
        self._ids: list[int] = []

    def add(self, body: Mapping[str, Any]) -> None:
        ids = []
        for index, message in enumerate(body["messages"]):
            if index < len(self._previous) and self._previous[index] == message:
                ids.append(self._ids[index])
            else:
                self.table.append(message)
                ids.append(len(self.table) - 1)
        self._previous, self._ids = list(body["messages"]), ids
        rest = {k: v for k, v in body.items() if k not in ("messages", "stream")}
        self.lines.append(json.dumps({**rest, "messages": ids}))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.table) + "\n" + "\n".join(self.lines) + "\n")


class _Script:
    """The fake model's answers (by the number of answers in the request) and the time
    each request arrived; the server's own record of the requests is emptied as they come
    (a growing heap in this process would slow the server down as the session grows)."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.lock = threading.Lock()
        self.server: FakeAnthropicServer | None = None
        self.bodies: _Bodies | None = None

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        with self.lock:
            self.arrivals.append(time.perf_counter())
        if self.server is not None:
            self.server.requests.clear()
        if self.bodies is not None:
            self.bodies.add(body)
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done >= ROUNDS - 1:
            return reply("Every part of the file is read.")
        offset = 1 + done * LINES_PER_READ
        return reply(f"Reading lines {offset}–{offset + LINES_PER_READ - 1}.",
                     ToolUse("read_file", {"path": "data.txt", "offset": offset,
                                           "limit": LINES_PER_READ}, id=f"toolu_{done:04}"))

    def take(self) -> list[float]:
        with self.lock:
            taken, self.arrivals = self.arrivals, []
        return taken


def _gaps(arrivals: Sequence[float]) -> list[float]:
    if len(arrivals) != ROUNDS:
        raise RuntimeError(f"expected {ROUNDS} requests, the server saw {len(arrivals)}")
    return [b - a for a, b in itertools.pairwise(arrivals)]


def _run(argv: list[str], env: Mapping[str, str]) -> None:
    done = subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.decode()[-400:]}")


def _window(diffs: Sequence[float], rounds: range) -> float:
    return statistics.median(diffs[r - 1] for r in rounds)


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-rounds-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "data.txt").write_text("".join(
            f"{i:06} the quick brown fox jumps over the lazy dog, line {i} of the data\n"
            for i in range(ROUNDS * LINES_PER_READ)))
        bodies_file = Path(tmp) / "bodies.jsonl"
        replay = Path(tmp) / "replay.py"
        replay.write_text(REPLAY_SCRIPT)
        script = _Script()
        reins_gaps: list[list[float]] = []
        floor_gaps: list[list[float]] = []
        started = time.perf_counter()
        with FakeAnthropicServer(responder=script) as server:
            script.server = server
            env = {**os.environ, "ANTHROPIC_API_KEY": "bench",
                   "ANTHROPIC_BASE_URL": server.base_url}
            argv = [str(BIN / "reins"), "exec", "--json", "--mode", "auto", "--max-rounds",
                    str(ROUNDS + 10), "--workspace", str(workspace), "read data.txt"]
            script.bodies = _Bodies()  # a first run, not timed, gives the floor its bodies
            _run(argv, {**env, "REINS_HOME": str(Path(tmp) / "capture")})
            script.bodies.write(bodies_file)
            script.bodies = None
            script.take()
            for trial in range(TRIALS):
                _run(argv, {**env, "REINS_HOME": str(Path(tmp) / f"home{trial}")})
                reins_gaps.append(_gaps(script.take()))
                _run([sys.executable, str(replay), server.base_url, str(bodies_file)], env)
                floor_gaps.append(_gaps(script.take()))
        elapsed = time.perf_counter() - started
    diffs = [[r - f for r, f in zip(rg, fg, strict=True)] for rg, fg in zip(
        reins_gaps, floor_gaps, strict=True)]
    floor_round = statistics.median(statistics.mean(g) for g in floor_gaps)
    per_round = statistics.median(statistics.mean(d) for d in diffs)
    early = statistics.median(_window(d, EARLY) for d in diffs)
    late = statistics.median(_window(d, LATE) for d in diffs)
    floor_early = statistics.median(_window(g, EARLY) for g in floor_gaps)
    floor_late = statistics.median(_window(g, LATE) for g in floor_gaps)
    report("floor: SDK replaying the same bodies, per round", fmt_seconds(floor_round),
           ratio=1.0)
    report(f"reins exec harness per round ({ROUNDS} rounds)", fmt_seconds(per_round),
           ratio=(floor_round + per_round) / floor_round,
           goal=f"≤ +{PER_ROUND_GOAL_S * 1000:.0f} ms", ok=per_round <= PER_ROUND_GOAL_S)
    report(f"  floor round, rounds {EARLY.start}–{EARLY.stop - 1}", fmt_seconds(floor_early))
    report(f"  floor round, rounds {LATE.start}–{LATE.stop - 1}", fmt_seconds(floor_late))
    report(f"harness time, rounds {EARLY.start}–{EARLY.stop - 1}", fmt_seconds(early))
    flat = late / early if early > 0 else float("inf")
    report(f"harness time, rounds {LATE.start}–{LATE.stop - 1}", fmt_seconds(late),
           goal=f"≤ {FLAT_GOAL}× rounds {EARLY.start}–{EARLY.stop - 1}", ok=flat <= FLAT_GOAL)
    print(f"     round {LATE.start}–{LATE.stop - 1} / round {EARLY.start}–{EARLY.stop - 1}"
          f"{flat:26.2f}×")
    print(f"   ({TRIALS} trials, interleaved, in {elapsed:.0f} s)")
