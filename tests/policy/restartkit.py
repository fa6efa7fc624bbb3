"""One side of the restart test: an Agent run whose approvals are never answered.

Run as `python -m tests.policy.restartkit BASE_URL SESSION_ID` with REINS_HOME set. It prints
every reported event as a JSON line and waits on a queue channel nobody answers, until the
test kills it with SIGKILL. `agent_for` builds the same Agent for the resuming side.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from kernel.agent.loop import Agent
from kernel.agent.store import SessionStore
from kernel.events import Event
from kernel.model.provider import AnthropicProvider, ProviderConfig
from kernel.paths import AppPaths
from kernel.policy.approvals import gate_factory
from kernel.policy.channels import ApprovalChannel, QueueChannel
from kernel.tools.builtin import builtin_tools
from kernel.tools.registry import ToolRegistry
from kernel.tools.schema import tool
from kernel.tools.spec import Risk, ToolContext
from tests.policy.gatekit import Sandbox

MODEL = "claude-sonnet-4-6"


@tool(risk=Risk.READ)
def tick(ctx: ToolContext) -> str:
    """Append one line to ticks.txt in the workspace (counts how often it ran)."""
    with open(Path(ctx.workspace) / "ticks.txt", "a") as f:
        f.write(f"{ctx.call_id}\n")
    return "ticked"


def agent_for(store: SessionStore, paths: AppPaths, base_url: str,
              channel: ApprovalChannel | None) -> Agent:
    provider = AnthropicProvider(ProviderConfig(model=MODEL, base_url=base_url, max_retries=0,
                                                read_timeout_s=10.0), api_key="test-key")
    factory = gate_factory(app_paths=paths, sandbox=Sandbox(True), channel=channel)
    return Agent(store, ToolRegistry([*builtin_tools(), tick]), provider, paths=paths,
                 gate_factory=factory, sandbox="bwrap")


def _print(event: Event) -> None:
    sys.stdout.write(json.dumps(event.to_dict(), default=str) + "\n")
    sys.stdout.flush()


async def _main(base_url: str, session_id: str) -> None:
    paths = AppPaths.from_env()
    store = SessionStore(paths.database)
    agent = agent_for(store, paths, base_url, QueueChannel())
    await agent.run(session_id, "tick, then write two files", _print)


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2]))
