"""Fixtures for the agent tests: a fake Messages API server and an Agent wired to it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel.agent.limits import LoopLimits
from kernel.agent.loop import Agent
from kernel.agent.ports import GateFactory
from kernel.agent.store import SessionStore
from kernel.events import AssistantDelta, Event, RunFinished
from kernel.fakemodel import FakeAnthropicServer
from kernel.model.provider import AnthropicProvider, ProviderConfig
from kernel.paths import AppPaths
from kernel.tools.builtin import builtin_tools
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolSpec

MODEL = "claude-sonnet-4-6"


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="test-key") as server:
        yield server


@dataclass
class Harness:
    """An Agent against the fake server, with a real store under REINS_HOME."""

    server: FakeAnthropicServer
    paths: AppPaths
    workspace: Path
    store: SessionStore
    registry: ToolRegistry
    seen: list[Event] = field(default_factory=list)

    def agent(self, *, limits: LoopLimits | None = None, gate_factory: GateFactory | None = None,
              **config: Any) -> Agent:
        settings = {"model": MODEL, "base_url": self.server.base_url, "max_retries": 2,
                    "read_timeout_s": 5.0, **config}
        provider = AnthropicProvider(ProviderConfig(**settings), api_key="test-key")
        return Agent(self.store, self.registry, provider, paths=self.paths, limits=limits,
                     gate_factory=gate_factory)

    def session(self, mode: str = "auto") -> str:
        return self.store.create_session(self.workspace, MODEL, mode)

    def run(self, prompt: str, *, session_id: str | None = None, agent: Agent | None = None,
            **kw: Any) -> tuple[str, RunFinished]:
        sid = session_id or self.session()
        agent = agent or self.agent(**kw)
        finished = asyncio.run(_closing(agent, agent.run(sid, prompt, self.seen.append)))
        return sid, finished

    def stored(self, session_id: str) -> list[Event]:
        return [e for _, e in self.store.events(session_id)]

    def reported(self) -> list[Event]:
        """What the sink got, without the streamed deltas (which are never stored)."""
        return [e for e in self.seen if not isinstance(e, AssistantDelta)]

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.seen if e.type == kind]


async def _closing(agent: Agent, coro: Any) -> Any:
    try:
        return await coro
    finally:
        await agent.provider.close()


@pytest.fixture
def harness(fake: FakeAnthropicServer, reins_home: AppPaths, workspace: Path
            ) -> Iterator[Harness]:
    (workspace / "a.txt").write_text("alpha file\n")
    (workspace / "b.txt").write_text("beta file\n")
    store = SessionStore(reins_home.database)
    registry = ToolRegistry(builtin_tools())
    yield Harness(fake, reins_home, workspace, store, registry)
    store.close()


def extra_tool(harness: Harness, spec: ToolSpec) -> ToolSpec:
    harness.registry.register(spec)
    return spec
