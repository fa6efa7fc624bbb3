"""A server's sampling request reaches the session's model only once approved, and its tokens
and cost are the run's: against the fake model (kernel.fakemodel), through `reins exec`
(its budgets) and through the real kernel worker (the app's approval, McpSamplingRequest /
McpSamplingAnswer)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from kernel import protocol as p
from kernel.events import Event, McpSampling
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.mcp.app import SamplingChannel, sampled_messages
from kernel.mcp.asks import DECLINED_SAMPLING
from kernel.mcp.sampling import SamplingTarget, SamplingVerdict, sampler
from kernel.model.pricing import cost_usd, price_for
from kernel.model.provider import AnthropicProvider, ProviderConfig
from tests.cli.conftest import Cli, cli, events
from tests.security.test_workspace_broad import Worker

__all__ = ["cli"]
MODEL = "claude-sonnet-4-6"
SAMPLE = "mcp__every__trigger-sampling-request"


@dataclass
class Ledger:
    """A run's budget of tokens, as `kernel.mcp.sampling.Budget`."""

    limit: int
    used: dict[str, int] = field(default_factory=dict)
    ended: bool = False

    def refusal(self) -> str | None:
        if self.ended:
            return "the run it was made for has ended"
        return "the run's token budget is spent" if sum(self.used.values()) >= self.limit \
            else None

    def charge(self, usage: Mapping[str, int]) -> None:
        for key, value in usage.items():
            self.used[key] = self.used.get(key, 0) + value


def _params(**extra: Any) -> mcp_types.CreateMessageRequestParams:
    return mcp_types.CreateMessageRequestParams(messages=[mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text="Say hi"))],
        max_tokens=50, system_prompt="Be kind.", **extra)


@pytest.mark.parametrize(("case", "limit", "approved", "extra", "sent", "reason"), [
    ("approved", 1000, True, {}, True, "approved"),
    ("declined", 1000, False, {}, False, "no thanks"),
    ("over budget before", 0, True, {}, False, "token budget is spent"),
    ("budget spent while asking", 1000, "spend", {}, False, "token budget is spent"),
    ("run ended while asking", 1000, "end", {}, False, "has ended"),
    ("tools", 1000, True, {"tools": [mcp_types.Tool(name="t", input_schema={
        "type": "object"})]}, False, "with tools is not supported"),
])
def test_sampling_reaches_the_model_only_approved_and_within_budget(
        case: str, limit: int, approved: Any, extra: dict[str, Any], sent: bool,
        reason: str) -> None:
    async def main(server: FakeAnthropicServer) -> tuple[Any, list[Event], Ledger]:
        provider = AnthropicProvider(ProviderConfig.for_model(
            MODEL, base_url=server.base_url), api_key="test-key")
        ledger = Ledger(limit)
        recorded: list[Event] = []

        async def approve(_server: str, _target: SamplingTarget, _request: Mapping[str, Any]
                          ) -> SamplingVerdict:
            if approved == "spend":
                ledger.charge({"input_tokens": limit})
            ledger.ended = approved == "end"
            return SamplingVerdict(approved is not False, "user",
                           "approved" if approved is not False else "no thanks")

        sample = sampler(lambda _s: SamplingTarget("s1", provider, ledger), approve,
                         recorded.append)
        try:
            return await sample("every", _params(**extra)), recorded, ledger
        finally:
            await provider.close()

    with FakeAnthropicServer(api_key="test-key") as server:
        server.add(reply("Hi!", input_tokens=30, output_tokens=7))
        result, recorded, ledger = asyncio.run(main(server))
        assert len(server.requests) == (1 if sent else 0), case
    (event,) = recorded
    assert isinstance(event, McpSampling) and event.session_id == "s1"
    assert event.prompt == "system: Be kind.\nuser: Say hi" and event.max_tokens == 50
    assert reason in event.reason
    if sent:
        assert isinstance(result, mcp_types.CreateMessageResult)
        assert result.content.text == "Hi!" and event.answer == "Hi!"
        assert event.action == "accept" and event.usage["input_tokens"] == 30
        assert ledger.used["input_tokens"] == 30 and ledger.used["output_tokens"] == 7
    else:
        assert isinstance(result, mcp_types.ErrorData) and DECLINED_SAMPLING in result.message
        assert event.action == "decline" and reason in result.message


def test_a_request_outside_any_run_is_declined_without_asking() -> None:
    async def approve(*_args: Any) -> SamplingVerdict:
        raise AssertionError("nobody is asked")

    recorded: list[Event] = []
    result = asyncio.run(sampler(lambda _s: None, approve, recorded.append)("every",
                                                                          _params()))
    assert isinstance(result, mcp_types.ErrorData) and "no run" in result.message
    assert recorded == []


def test_a_request_waits_a_moment_to_learn_which_run_calls_its_server() -> None:
    """The host hears of a call from its reported tool_call event, which the server's
    request can overtake: the target found a little later is used."""
    asks: list[str] = []

    async def approve(server: str, _target: SamplingTarget, _request: Mapping[str, Any]
                      ) -> SamplingVerdict:
        raise AssertionError("the budget refuses first")

    async def main() -> Any:
        provider = AnthropicProvider(ProviderConfig.for_model(
            MODEL, base_url="http://127.0.0.1:9"), api_key="never-used")
        target = SamplingTarget("s1", provider, Ledger(0))

        def target_of(server: str) -> SamplingTarget | None:
            asks.append(server)
            return target if len(asks) > 3 else None

        try:
            return await sampler(target_of, approve, recorded.append)("every", _params())
        finally:
            await provider.close()

    recorded: list[Event] = []
    result = asyncio.run(main())
    assert isinstance(result, mcp_types.ErrorData) and "token budget is spent" in result.message
    assert len(asks) == 4 and [e.session_id for e in recorded] == ["s1"]


def test_the_channel_shows_the_request_and_waits_for_the_user() -> None:
    request = {"model": "m", "max_tokens": 9, "system": "S", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "b\x1b[2J"}]}]}
    assert sampled_messages(request) == (p.SampledMessage("user", "a [image]"),
                                         p.SampledMessage("assistant", "b\x1b[2J"))

    async def main() -> list[SamplingVerdict]:
        sent: list[p.McpSamplingRequest] = []
        channel = SamplingChannel(sent.append, timeout_s=5)
        target = SamplingTarget("s7", None, Ledger(10))  # type: ignore[arg-type]
        asked = asyncio.ensure_future(channel.approve("every", target, request))
        while not sent:
            await asyncio.sleep(0)
        shown = sent[0]
        assert (shown.session_id, shown.server, shown.model, shown.max_tokens,
                shown.system) == ("s7", "every", "m", 9, "S")
        with pytest.raises(ValueError, match="no sampling request 'sampling-9'"):
            channel.answer("sampling-9", True)
        channel.answer(shown.request_id, False)
        declined = await asked
        again = asyncio.ensure_future(channel.approve("every", target, request))
        while len(sent) < 2:
            await asyncio.sleep(0)
        channel.answer(sent[1].request_id, True)
        approved = await again
        late = await SamplingChannel(sent.append, timeout_s=0.05).approve("every", target,
                                                                         request)
        closing = SamplingChannel(sent.append, timeout_s=5)
        pending = asyncio.ensure_future(closing.approve("every", target, request))
        await asyncio.sleep(0.01)
        closing.close()
        return [declined, approved, late, await pending]

    declined, approved, late, closed = asyncio.run(main())
    assert (declined.approved, declined.decided_by) == (False, "user")
    assert (approved.approved, approved.decided_by) == (True, "user")
    assert not late.approved and "within 10 minutes" in late.reason
    assert not closed.approved and "closed" in closed.reason


# ---- reins exec: the run's budgets --------------------------------------------------------


def _exec_settings(cli: Cli, everything: dict[str, Any]) -> None:
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"mcpServers": {"every": everything}}))


def test_sampling_tokens_and_cost_are_the_runs(cli: Cli, everything: dict[str, Any]) -> None:
    """Round one (120 tokens) calls the tool twice; the first sampling uses 120 more, so with
    a budget of 200 the second is refused and the run stops before round two (without the
    sampling's tokens both would be sent and the run would go on)."""
    _exec_settings(cli, everything)
    calls = [ToolUse(SAMPLE, {"prompt": f"joke {i}", "maxTokens": 40}, id=f"c{i}")
             for i in (1, 2)]
    cli.server.add(reply(*calls), reply("A sampled joke."), reply("Never sent."))
    done = cli.run("exec", "--json", "--mode", "auto", "--approve", "allow", "--model", MODEL,
                   "--max-tokens-budget", "200", "sample")
    assert done.returncode == 3, done.stderr
    out = events(done.stdout)
    first, second = [e for e in out if e["type"] == "mcp_sampling"]
    assert first["action"] == "accept" and first["usage"]["input_tokens"] == 100
    assert second["action"] == "decline" and second["decided_by"] == "policy"
    assert "token budget (200 tokens) is spent" in second["reason"]
    (finished,) = [e for e in out if e["type"] == "run_finished"]
    assert finished["stop_reason"] == "token_budget" and finished["rounds"] == 1
    assert finished["usage"]["input_tokens"] == 200 and finished["usage"]["output_tokens"] == 40
    price = price_for(MODEL)
    assert price is not None
    assert finished["cost_usd"] == pytest.approx(cost_usd(finished["usage"], price), abs=1e-6)
    assert len(cli.server.requests) == 2


# ---- the app, through the real kernel worker ----------------------------------------------


@pytest.fixture
def worker_settings(everything: dict[str, Any]) -> dict[str, Any]:
    """For the `served` worker (tests/conftest.py)."""
    return {"permissions": {"allow": [SAMPLE]}, "mcpServers": {"every": everything}}


def _ready(worker: Worker) -> None:
    while True:
        states = [m for m in worker.received if isinstance(m, p.McpServerStates)]
        if states and states[-1].servers and all(s.status == "ready"
                                                 for s in states[-1].servers):
            return
        worker.wait_for(p.McpServerStates, len(states) + 1)


def _events(worker: Worker, kind: str) -> list[Any]:
    return [m.event for m in worker.received
            if isinstance(m, p.EventMessage) and m.event.type == kind]


def test_the_app_asks_before_sampling_and_bills_the_run(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path) -> None:
    server, worker = served
    _ready(worker)
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    server.add(reply(ToolUse(SAMPLE, {"prompt": "a joke", "maxTokens": 40}, id="c1")),
               reply("A sampled joke."), reply("It told one."))
    worker.send(p.StartRun(session, "sample"))
    asked = worker.wait_for(p.McpSamplingRequest)
    assert (asked.session_id, asked.server, asked.model, asked.max_tokens) == (
        session, "every", MODEL, 40)
    assert asked.system == "You are a helpful test server."
    assert asked.messages == (p.SampledMessage(
        "user", "Resource trigger-sampling-request context: a joke"),)
    assert len(server.requests) == 1  # nothing went to the model before the answer
    worker.send(p.McpSamplingAnswer("sampling-99", True))
    assert "no sampling request 'sampling-99'" in worker.wait_for(p.CommandFailed).message
    worker.send(p.McpSamplingAnswer(asked.request_id, True))
    worker.wait_for(p.RunStatus, 2)
    (sampling,) = _events(worker, "mcp_sampling")
    assert (sampling.action, sampling.decided_by, sampling.answer) == (
        "accept", "user", "A sampled joke.")
    (finished,) = _events(worker, "run_finished")
    assert finished.usage["input_tokens"] == 300 and finished.usage["output_tokens"] == 60
    assert server.requests[1].body["messages"][0]["content"][0]["text"].endswith("a joke")

    server.add(reply(ToolUse(SAMPLE, {"prompt": "the secret", "maxTokens": 40}, id="c2")),
               reply("Declined."))
    worker.send(p.StartRun(session, "again"))
    second = worker.wait_for(p.McpSamplingRequest, 2)
    worker.send(p.McpSamplingAnswer(second.request_id, False))
    worker.wait_for(p.RunStatus, 4)
    declined = _events(worker, "mcp_sampling")[-1]
    assert (declined.action, declined.decided_by) == ("decline", "user")
    assert len(server.requests) == 5  # 3 + the tool round + the answer: no sampling
    assert "the secret" not in json.dumps(server.requests[4].body["system"])
    assert DECLINED_SAMPLING in json.dumps(server.requests[4].body["messages"][-1])
