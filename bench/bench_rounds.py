"""Harness time per model round, and whether it stays flat as a session grows.

Black box: `reins exec --json` runs a 420-round session against the fake model server
(kernel.fakemodel, loopback, in this process): each answer reads 20 lines of a file (about
1.7 KB per round), so from about round 250 the request nears the context window and old
tool results are trimmed from it. Floor: a bare SDK loop (anthropic's AsyncAnthropic, the
same streaming calls) that sends the very request bodies reins sent, in order, and runs the
same tool calls the plain way as read_file does them (skips the lines before, takes the
lines, counts the rest; reading lines 8,000-8,020 costs more than lines 1-20): so the
SDK's, the server's and the tool's own share of a round, which grow with the request or
the offset, are in both, and what is left is the harness (the loop, the policy, the store,
the printer).

A first run, not timed, records the bodies (comparing each with the previous one, which
would add to the server's time). Then reins and the floor run at the same time, in turns
(`_Turns`): each holds the other's next request at the server while it does its own round,
so round k of both is measured within a few milliseconds of each other, alone on the
machine, and a load that comes and goes on a shared machine falls on both alike. A round
is the time from the server letting the previous request's answer go to the next request
arriving; harness time per round = reins' round − the floor's round.

Reins encodes each message of a request once (kernel.model.request_body) where the SDK's
`messages.stream` copies and encodes the whole conversation every request, so late in the
session reins' round is shorter than the floor's: its harness time goes below zero. A
second floor tells what reins itself adds: the same bodies, encoded before the session
starts, sent with the SDK's `client.post(content=...)` and read with its
`AsyncMessageStream` (as reins does), the same reads; what is left over it is the loop, the
policy, the store, the printer and encoding what is new in each request.

Figures (medians over the trials):
- the harness time of the median round of the session over the bare SDK loop (goal: at
  most +3 ms), and the mean over its rounds beside it (the mean also takes the few rounds
  that another process on a shared machine held up: a commit that waited 70 ms for the
  disk, a core taken away);
- the harness time of rounds 390–410 against rounds 10–30 (goal: at most 1.2×), over the
  bare SDK loop and over the floor that sends the bodies already encoded.
"""

from __future__ import annotations

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
TRIALS = 5
"""Sessions of each against the bare SDK loop (in turns): the figures are medians over them;
with three, one session that a burst of load fell on moved the 390–410 / 10–30 ratio by
half of itself."""
ENCODED_TRIALS = 5
"""Sessions of each against the floor that sends the bodies already encoded."""
EARLY = range(10, 31)
LATE = range(390, 411)
PER_ROUND_GOAL_S = 0.003
FLAT_GOAL = 1.2
BIN = Path(sys.executable).parent
REINS, FLOOR = "reins", "floor"
REPLAY_SCRIPT = """
import asyncio, itertools, json, sys
import anthropic
from anthropic.lib.streaming import AsyncMessageStream

def load(path):
    with open(path) as f:
        table = json.loads(f.readline())
        bodies = [json.loads(line) for line in f]
    for body in bodies:
        body["messages"] = [table[i] for i in body["messages"]]
    return bodies

def run_tools(message, workspace):
    # the previous answer's read_file calls, done the plain way as read_file does them:
    # the lines before skipped, the lines asked for taken, the rest counted
    for block in message["content"]:
        if block.get("type") == "tool_use":
            args = block["input"]
            first = args["offset"]
            with open(workspace + "/" + args["path"], encoding="utf-8", newline="\\n") as f:
                for _ in itertools.islice(f, first - 1):
                    pass
                chosen = list(itertools.islice(f, args["limit"]))
                total = first - 1 + len(chosen) + f.read().count("\\n")
            f"[lines {first}-{first + len(chosen) - 1} of {total}]\\n" + "\\n".join(
                f"{n:6}\\t{line.rstrip()}" for n, line in enumerate(chosen, first))

async def sdk_stream(client, body, encoded):
    async with client.messages.stream(**body) as stream:
        async for _ in stream:
            pass
        await stream.get_final_message()

async def encoded_stream(client, body, encoded):
    raw = await client.post("/v1/messages", cast_to=anthropic.types.Message, content=encoded,
                            stream=True,
                            stream_cls=anthropic.AsyncStream[anthropic.types.RawMessageStreamEvent])
    async with AsyncMessageStream(raw, output_format=anthropic.NOT_GIVEN) as stream:
        async for _ in stream:
            pass
        await stream.get_final_message()

async def main():
    bodies = load(sys.argv[2])
    encoded = sys.argv[4] == "encoded"
    texts = [json.dumps({**body, "stream": True}, ensure_ascii=False,
                        separators=(",", ":")).encode() if encoded else None
             for body in bodies]
    send = encoded_stream if encoded else sdk_stream
    async with anthropic.AsyncAnthropic(api_key="bench", base_url=sys.argv[1],
                                        max_retries=0) as client:
        for body, text in zip(bodies, texts):
            if len(body["messages"]) > 1:
                run_tools(body["messages"][-2], sys.argv[3])
            await send(client, body, text)

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


def answer(body: Mapping[str, Any]) -> Reply:
    """The fake model's answer, by the number of answers already in the request."""
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if done >= ROUNDS - 1:
        return reply("Every part of the file is read.")
    offset = 1 + done * LINES_PER_READ
    return reply(f"Reading lines {offset}–{offset + LINES_PER_READ - 1}.",
                 ToolUse("read_file", {"path": "data.txt", "offset": offset,
                                       "limit": LINES_PER_READ}, id=f"toolu_{done:04}"))


class _Turns:
    """Two clients take turns: a client's request that arrives hands the turn to the other
    and is answered once the turn comes back, so only one of them works at a time and
    round k of one is next to round k of the other. For each client: when each request
    arrived and when its answer was let go (its round = next arrival − this release)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._turn = REINS
        self._finished: set[str] = set()
        self.arrived: dict[str, list[float]] = {REINS: [], FLOOR: []}
        self.released: dict[str, list[float]] = {REINS: [], FLOOR: []}

    def take(self, me: str) -> None:
        other = FLOOR if me == REINS else REINS
        with self._cond:
            self.arrived[me].append(time.perf_counter())
            self._turn = me if other in self._finished else other
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._turn == me)
            self.released[me].append(time.perf_counter())

    def finished(self, me: str) -> None:
        """`me` exited: the other no longer waits for it."""
        with self._cond:
            self._finished.add(me)
            self._turn = FLOOR if me == REINS else REINS
            self._cond.notify_all()

    def rounds(self, me: str) -> list[float]:
        arrived, released = self.arrived[me], self.released[me]
        if len(arrived) != ROUNDS:
            raise RuntimeError(f"expected {ROUNDS} requests from {me}, the server saw "
                               f"{len(arrived)}")
        return [arrived[i + 1] - released[i] for i in range(ROUNDS - 1)]


class _Responder:
    """The answers for one client; the server's own record of the requests is emptied as
    they come (a growing heap in this process would slow the server down as the session
    grows)."""

    def __init__(self, name: str, turns: _Turns | None = None,
                 bodies: _Bodies | None = None) -> None:
        self.name, self.turns, self.bodies = name, turns, bodies
        self.server: FakeAnthropicServer | None = None

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        if self.server is not None:
            self.server.requests.clear()
        if self.bodies is not None:
            self.bodies.add(body)
        if self.turns is not None:
            self.turns.take(self.name)
        return answer(body)


def _serve(responder: _Responder) -> FakeAnthropicServer:
    server = FakeAnthropicServer(responder=responder)
    responder.server = server
    return server


def _start(argv: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait(proc: subprocess.Popen[bytes]) -> str:
    """Its standard error once it exited (it is killed after 15 minutes)."""
    try:
        _, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err.decode(errors="replace")


def _check(proc: subprocess.Popen[bytes], err: str) -> None:
    if proc.returncode != 0:
        args = proc.args
        name = args[0] if isinstance(args, list) and args else args
        raise RuntimeError(f"{name!r} exited {proc.returncode}: {err[-400:]}")


def _window(rounds: Sequence[float], window: range) -> float:
    return statistics.median(rounds[r - 1] for r in window)


def _trial(reins_argv: list[str], floor_argv: list[str], env: Mapping[str, str],
           home: Path) -> tuple[list[float], list[float]]:
    """One session of each, in turns: reins' rounds and the floor's."""
    turns = _Turns()
    with _serve(_Responder(REINS, turns)) as reins_server, \
            _serve(_Responder(FLOOR, turns)) as floor_server:
        reins = _start(reins_argv, {**env, "REINS_HOME": str(home),
                                    "ANTHROPIC_BASE_URL": reins_server.base_url})
        floor = _start([*floor_argv[:2], floor_server.base_url, *floor_argv[2:]], env)
        errors: dict[str, str] = {}

        def follow(proc: subprocess.Popen[bytes], name: str) -> None:
            try:
                errors[name] = _wait(proc)
            finally:
                turns.finished(name)

        threads = [threading.Thread(target=follow, args=(proc, name))
                   for proc, name in ((reins, REINS), (floor, FLOOR))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _check(reins, errors.get(REINS, ""))
        _check(floor, errors.get(FLOOR, ""))
    return turns.rounds(REINS), turns.rounds(FLOOR)


class _Pairs:
    """The sessions of reins and one floor in turns: each round's harness time (reins' round
    − the floor's round)."""

    def __init__(self, trials: list[tuple[list[float], list[float]]]) -> None:
        self.floors = [floor for _, floor in trials]
        self.diffs = [[r - f for r, f in zip(reins, floor, strict=True)]
                      for reins, floor in trials]

    def floor_round(self) -> float:
        return statistics.median(statistics.mean(floor) for floor in self.floors)

    def floor_window(self, window: range) -> float:
        return statistics.median(_window(floor, window) for floor in self.floors)

    def median(self) -> float:
        return statistics.median(statistics.median(d) for d in self.diffs)

    def mean(self) -> float:
        return statistics.median(statistics.mean(d) for d in self.diffs)

    def window(self, window: range) -> float:
        return statistics.median(_window(d, window) for d in self.diffs)

    def flat(self) -> bool:
        """Rounds 390–410 cost at most 1.2× the harness time of rounds 10–30 (less is flat
        too, below zero as well)."""
        early, late = self.window(EARLY), self.window(LATE)
        return late <= early or late <= FLAT_GOAL * early

    def per_trial(self) -> str:
        return "; ".join(
            f"{statistics.median(d) * 1000:+.1f} / {statistics.mean(d) * 1000:+.1f} / "
            f"{_window(d, EARLY) * 1000:+.1f} / {_window(d, LATE) * 1000:+.1f} ms"
            for d in self.diffs)


def _flatness(pairs: _Pairs, over: str) -> None:
    early, late = pairs.window(EARLY), pairs.window(LATE)
    report(f"harness time over {over}, rounds {EARLY.start}–{EARLY.stop - 1}",
           fmt_seconds(early))
    report(f"harness time over {over}, rounds {LATE.start}–{LATE.stop - 1}",
           fmt_seconds(late),
           goal=f"≤ {FLAT_GOAL}× rounds {EARLY.start}–{EARLY.stop - 1}", ok=pairs.flat())
    ratio = f"{late / early:.2f}×" if early > 0 and late > 0 else \
        f"{(late - early) * 1000:+.2f} ms"
    print(f"     round {LATE.start}–{LATE.stop - 1} against round "
          f"{EARLY.start}–{EARLY.stop - 1}{ratio:>22}")


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
        env = {**os.environ, "ANTHROPIC_API_KEY": "bench"}
        reins_argv = [str(BIN / "reins"), "exec", "--json", "--mode", "auto", "--max-rounds",
                      str(ROUNDS + 10), "--workspace", str(workspace), "read data.txt"]
        started = time.perf_counter()
        bodies = _Bodies()  # a first run, not timed, gives the floor its bodies
        with _serve(_Responder(REINS, bodies=bodies)) as server:
            capture = _start(reins_argv, {**env, "ANTHROPIC_BASE_URL": server.base_url,
                                          "REINS_HOME": str(Path(tmp) / "capture")})
            _check(capture, _wait(capture))
        bodies.write(bodies_file)
        del bodies

        def floor(kind: str) -> list[str]:
            return [sys.executable, str(replay), str(bodies_file), str(workspace), kind]

        sdk = _Pairs([_trial(reins_argv, floor("sdk"), env, Path(tmp) / f"home{trial}")
                      for trial in range(TRIALS)])
        encoded = _Pairs([_trial(reins_argv, floor("encoded"), env,
                                 Path(tmp) / f"home-encoded{trial}")
                          for trial in range(ENCODED_TRIALS)])
        elapsed = time.perf_counter() - started
    floor_round, per_round = sdk.floor_round(), sdk.median()
    report("floor: bare SDK loop, same bodies, per round", fmt_seconds(floor_round),
           ratio=1.0)
    report(f"reins exec harness per round ({ROUNDS} rounds, median)",
           fmt_seconds(per_round), ratio=(floor_round + per_round) / floor_round,
           goal=f"≤ +{PER_ROUND_GOAL_S * 1000:.0f} ms", ok=per_round <= PER_ROUND_GOAL_S)
    report("  mean (with the rounds a slow disk or CPU held up)", fmt_seconds(sdk.mean()))
    report(f"  floor round, rounds {EARLY.start}–{EARLY.stop - 1}",
           fmt_seconds(sdk.floor_window(EARLY)))
    report(f"  floor round, rounds {LATE.start}–{LATE.stop - 1}",
           fmt_seconds(sdk.floor_window(LATE)))
    _flatness(sdk, "the SDK loop")
    print("   per trial (median, mean, rounds 10–30, 390–410): " + sdk.per_trial())
    report("floor 2: the bodies sent already encoded, per round",
           fmt_seconds(encoded.floor_round()), ratio=encoded.floor_round() / floor_round)
    report("reins exec over it, per round (median)", fmt_seconds(encoded.median()))
    _flatness(encoded, "floor 2")
    print("   per trial (median, mean, rounds 10–30, 390–410): " + encoded.per_trial())
    print(f"   ({TRIALS} + {ENCODED_TRIALS} trials, reins and a floor in turns, in "
          f"{elapsed:.0f} s)")
