"""Harness overhead per model round trip: `reins exec` machinery vs a bare SDK loop.

Both drive the same fake Messages API server (loopback, streamed SSE) with the same
script: ROUNDS rounds, each a streamed answer with one read_file call, then a final answer.
The bare loop is the least a program can do with the anthropic SDK: stream, append the
message, read the file, send the result. Reins runs the same script through everything
`reins exec --json` runs (in this process, so both sides pay the same start-up once):
the SessionStore (every event, message, result and trace durably committed before it is
reported), the policy gate, the dispatcher with validation, loop detection, prompt-cache
breakpoints, context check, and JSON-lines printing. Figures are medians of interleaved trials.
"""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anthropic

from bench.common import fmt_seconds, report
from kernel.agent.context import cached_system, cached_tools
from kernel.agent.limits import LoopLimits
from kernel.agent.prompt import system_prompt
from kernel.agent.provider import AnthropicProvider, ProviderConfig
from kernel.agent.runtime import open_kernel
from kernel.cli_exec import JsonPrinter, cli_gate_factory
from kernel.fakemodel import FakeAnthropicServer, Reply, ToolUse, reply
from kernel.paths import AppPaths

ROUNDS = 20
TRIALS = 5
MODEL = "claude-sonnet-4-6"
GOAL = 1.3


def responder(body: Mapping[str, Any]) -> Reply:
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if done >= ROUNDS - 1:
        return reply("All lines read; the file says alpha.")
    return reply(f"Reading line {done + 1}.",
                 ToolUse("read_file", {"path": "a.txt", "offset": done + 1, "limit": 1},
                         id=f"toolu_{done}"))


async def bare_loop(base_url: str, workspace: Path, tools: list[dict[str, Any]]) -> None:
    lines = (workspace / "a.txt").read_text().splitlines()
    async with anthropic.AsyncAnthropic(api_key="bench", base_url=base_url) as client:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "read a.txt"}]
        system = cached_system(system_prompt(workspace))
        while True:
            async with client.messages.stream(model=MODEL, max_tokens=8192, system=system,
                                              tools=tools, messages=messages) as stream:
                async for _ in stream:
                    pass
                message = await stream.get_final_message()
            content = [b.model_dump(mode="json", exclude_none=True) for b in message.content]
            messages.append({"role": "assistant", "content": content})
            if message.stop_reason != "tool_use":
                return
            results = []
            for block in message.content:
                if block.type == "tool_use":
                    offset = int(block.input["offset"])
                    text = f"{offset:6}\t{lines[offset - 1]}"
                    results.append({"type": "tool_result", "tool_use_id": block.id,
                                    "content": text, "is_error": False})
            messages.append({"role": "user", "content": results})


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-loop-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "a.txt").write_text("".join(f"alpha line {i}\n" for i in range(ROUNDS)))
        paths = AppPaths.from_env({"REINS_HOME": str(home)})
        kernel = open_kernel(paths)
        tools = cached_tools(kernel.registry.schemas())
        bare_times: list[float] = []
        reins_times: list[float] = []
        with FakeAnthropicServer(responder=responder) as server:
            config = ProviderConfig(model=MODEL, base_url=server.base_url)

            async def reins_once() -> None:
                provider = AnthropicProvider(config, api_key="bench", environ=os.environ)
                agent = kernel.agent(provider, limits=LoopLimits(max_rounds=ROUNDS + 1),
                                     gate_factory=cli_gate_factory(kernel, "deny"))
                session_id = kernel.store.create_session(workspace, MODEL, "auto")
                finished = await agent.run(session_id, "read a.txt", JsonPrinter(io.StringIO()))
                await provider.close()
                assert finished.stop_reason == "end_turn" and finished.rounds == ROUNDS, finished

            asyncio.run(bare_loop(server.base_url, workspace, tools))
            asyncio.run(reins_once())
            for _ in range(TRIALS):
                started = time.perf_counter()
                asyncio.run(bare_loop(server.base_url, workspace, tools))
                bare_times.append((time.perf_counter() - started) / ROUNDS)
                started = time.perf_counter()
                asyncio.run(reins_once())
                reins_times.append((time.perf_counter() - started) / ROUNDS)
        kernel.close()
    bare = statistics.median(bare_times)
    reins = statistics.median(reins_times)
    report("floor: bare SDK loop, per round trip", fmt_seconds(bare), ratio=1.0)
    report("reins exec machinery, per round trip", fmt_seconds(reins), ratio=reins / bare,
           goal=f"≤ {GOAL}× floor", ok=reins / bare <= GOAL)
    report("harness overhead per round trip", fmt_seconds(reins - bare))
