"""Start-up: `reins exec` to its first model request, `reins --help` and `reins doctor`.

Black box, each a fresh process, runs interleaved, medians:
- first request: the time from starting the process to its first request arriving at the
  fake model server (kernel.fakemodel, loopback, in this process). Floor: a bare
  anthropic-SDK script (import the SDK, make an AsyncAnthropic client, stream one message)
  started the same way. Goal: `reins exec` within 1.15× the floor.
- `reins --help` and `reins doctor` to their exit, doctor both with no settings file (a
  first start) and with one that has rules, an `exec` section and an MCP server (what a
  user who changed settings has: it is validated, jsonschema included). Floor: `python -c
  pass` with the same interpreter. Goal: within 0.3 s of the floor.
Each round runs every variant once, starting with a different one each round, so that none
always runs first or right after another. Bytecode is cached as in an installed app (pip
compiles it, the bundle carries it; the SDK's is in site-packages): an environment with
PYTHONDONTWRITEBYTECODE would have Reins compile its modules every start, which the floor
never does; each command runs once before it is measured, to write it.
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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.common import fmt_seconds, report
from kernel.fakemodel import FakeAnthropicServer, Reply, reply
from kernel.paths import AppPaths

FIRST_REQUEST_RUNS = 9
CLI_RUNS = 15
BIN = Path(sys.executable).parent
FIRST_REQUEST_GOAL = 1.15
CLI_GOAL_S = 0.3
BARE_SCRIPT = """
import asyncio, sys
import anthropic

async def main():
    async with anthropic.AsyncAnthropic(api_key="bench", base_url=sys.argv[1]) as client:
        async with client.messages.stream(
                model="claude-sonnet-4-6", max_tokens=1024,
                messages=[{"role": "user", "content": "hello"}]) as stream:
            await stream.get_final_message()

asyncio.run(main())
"""
SETTINGS = {
    "model": "claude-sonnet-4-6",
    "default_mode": "ask",
    "permissions": {"allow": ["run_command(git status)", "run_command(npm test *)",
                              "write_file(docs/**)"],
                    "ask": ["mcp__git__*"], "deny": ["read_file(~/.ssh/**)"]},
    "exec": {"env": ["JAVA_HOME"], "limits": {"memory_mb": 4096}},
    "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}},
}


class _Arrivals:
    """The fake server's responder: the perf_counter time each request arrived."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.seen = threading.Condition()

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        with self.seen:
            self.times.append(time.perf_counter())
            self.seen.notify_all()
        return reply("Hello.")

    def wait_first(self, after: int, timeout: float) -> float:
        with self.seen:
            if not self.seen.wait_for(lambda: len(self.times) > after, timeout):
                raise RuntimeError("no request reached the fake model server")
            return self.times[after]


def _first_request(argv: list[str], env: Mapping[str, str], arrivals: _Arrivals,
                   cwd: Path) -> float:
    before = len(arrivals.times)
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        arrived = arrivals.wait_first(before, 120)
    finally:
        _, err = process.communicate(timeout=120)
    if process.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {process.returncode}: {err.decode()[-400:]}")
    return arrived - started


def _wall(argv: list[str], env: Mapping[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False, timeout=120)
    return time.perf_counter() - started


def _interleaved(runs: int, **measures: Callable[[], float]) -> dict[str, float]:
    """The median of each measure over `runs` rounds; round i starts with the i-th."""
    samples: dict[str, list[float]] = {name: [] for name in measures}
    names = list(measures)
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            samples[name].append(measures[name]())
    return {name: statistics.median(values) for name, values in samples.items()}


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-startup-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "workspace"
        workspace.mkdir()
        bare_script = Path(tmp) / "bare.py"
        bare_script.write_text(BARE_SCRIPT)
        arrivals = _Arrivals()
        with FakeAnthropicServer(responder=arrivals) as server:
            env = {**os.environ, "REINS_HOME": str(home), "ANTHROPIC_API_KEY": "bench",
                   "ANTHROPIC_BASE_URL": server.base_url}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            reins = str(BIN / "reins")
            exec_argv = [reins, "exec", "--json", "--mode", "auto", "--workspace",
                         str(workspace), "say hello"]
            _wall(exec_argv, env)  # the database and folders exist from the first run on
            first = _interleaved(
                FIRST_REQUEST_RUNS,
                bare=lambda: _first_request([sys.executable, str(bare_script),
                                             server.base_url], env, arrivals, workspace),
                reins=lambda: _first_request(exec_argv, env, arrivals, workspace))
            configured = {**env, "REINS_HOME": str(Path(tmp) / "configured")}
            settings_file = AppPaths.from_env(configured).settings_file
            settings_file.parent.mkdir(parents=True)
            settings_file.write_text(json.dumps(SETTINGS))
            for warm in (env, configured):
                _wall([reins, "doctor"], warm)
            cli = _interleaved(
                CLI_RUNS,
                floor=lambda: _wall([sys.executable, "-c", "pass"], env),
                help=lambda: _wall([reins, "--help"], env),
                doctor=lambda: _wall([reins, "doctor"], env),
                configured=lambda: _wall([reins, "doctor"], configured))
    ratio = first["reins"] / first["bare"]
    report("first request: bare SDK script (floor)", fmt_seconds(first["bare"]), ratio=1.0)
    report("first request: reins exec", fmt_seconds(first["reins"]), ratio=ratio,
           goal=f"≤ {FIRST_REQUEST_GOAL}× floor", ok=ratio <= FIRST_REQUEST_GOAL)
    report("python -c pass (floor)", fmt_seconds(cli["floor"]), ratio=1.0)
    for name, label in (("help", "reins --help"), ("doctor", "reins doctor"),
                        ("configured", "reins doctor (a settings file with rules)")):
        extra = cli[name] - cli["floor"]
        report(label, fmt_seconds(cli[name]), ratio=cli[name] / cli["floor"],
               goal=f"≤ floor + {CLI_GOAL_S} s", ok=extra <= CLI_GOAL_S)
    print(f"   (medians of {FIRST_REQUEST_RUNS} and {CLI_RUNS} interleaved runs, each a new "
          f"process; load average {os.getloadavg()[0]:.1f})")
