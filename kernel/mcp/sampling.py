"""A server's sampling request (`sampling/createMessage`), sent to the session's model.

Nothing goes to the model unless the user approved that very request, shown as it would be
sent (`shown_prompt`); `reins exec` approves only with `--approve allow`. The answer is the
text of the model's reply. A request that asks for tools is refused (Reins does not run a
second tool loop for a server); so is one made when the run's token, cost or time budget
is spent. The tokens a request used are charged to that run (`Budget`): they count against
its budgets and are in its `run_finished` usage and cost. Each request and its outcome is an
`mcp_sampling` event with the tokens it used. `sampler` is the one way a request is answered;
`reins exec` approves by its flag (`exec_sampler`), the app by asking the user
(kernel.mcp.app.SamplingChannel).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types

from kernel.events import Event, McpSampling
from kernel.mcp.asks import DECLINED_SAMPLING, Sample
from kernel.mcp.tools import content_block
from kernel.model.provider import ModelTurn, TurnCallbacks

TARGET_WAIT_S = 2.0
"""How long a request waits to learn which run is calling its server (a host learns of a
call from its `tool_call` event, which is reported once stored: the server may ask first)."""
_STOP_REASONS = {"end_turn": "endTurn", "max_tokens": "maxTokens",
                 "stop_sequence": "stopSequence"}


class Model(Protocol):
    """What sampling needs of the session's provider."""

    @property
    def model(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...

    async def stream_turn(self, params: Mapping[str, Any],
                          callbacks: TurnCallbacks) -> ModelTurn: ...


def sampling_request(params: mcp_types.CreateMessageRequestParams, model: str,
                     max_tokens: int) -> dict[str, Any]:
    """The Messages API request for a sampling request (pure): its messages (text and
    images; other content described), its system prompt and stop sequences, at most
    `max_tokens` (a requested temperature is not passed on: the SDK Reins uses takes none)."""
    messages = []
    for message in params.messages:
        items = message.content if isinstance(message.content, list) else [message.content]
        messages.append({"role": message.role, "content": [content_block(i) for i in items]})
    request: dict[str, Any] = {"model": model, "messages": messages,
                               "max_tokens": max(1, min(params.max_tokens, max_tokens))}
    if params.system_prompt:
        request["system"] = params.system_prompt
    if params.stop_sequences:
        request["stop_sequences"] = list(params.stop_sequences)
    return request


def shown_prompt(request: Mapping[str, Any]) -> str:
    """The request as the user is shown it before approving: the system prompt and each
    message's text, role by role."""
    parts = [f"system: {request['system']}"] if request.get("system") else []
    parts.extend(f"{message['role']}: {message_text(message)}"
                 for message in request["messages"])
    return "\n".join(parts)


def message_text(message: Mapping[str, Any]) -> str:
    """One message's text blocks; any other block named in brackets (`[image]`)."""
    return " ".join(str(b["text"]) if b["type"] == "text" else f"[{b['type']}]"
                    for b in message["content"])


class Budget(Protocol):
    """The run a sampling request is made for: what it has left, and where its tokens go."""

    def refusal(self) -> str | None:
        """Why the run can spend no more (a budget of it is spent, it ended), else None."""

    def charge(self, usage: Mapping[str, int]) -> None:
        """Count tokens used on the run's behalf in its usage (and so in its cost)."""


@dataclass(frozen=True)
class SamplingTarget:
    """Where a server's sampling request goes: a session's model, billed to its run."""

    session_id: str
    model: Model
    budget: Budget


@dataclass(frozen=True)
class SamplingVerdict:
    approved: bool
    decided_by: str
    """user | cli"""
    reason: str = ""


Approve = Callable[[str, SamplingTarget, Mapping[str, Any]], Awaitable[SamplingVerdict]]
"""(server, target, the request as it would be sent) → whether it may be sent, and why."""


def sampler(target_of: Callable[[str], SamplingTarget | None], approve: Approve,
            record: Callable[[Event], None]) -> Sample:
    """The answer to servers' sampling requests: each goes to its target's model only when
    `approve` says so and its run's budgets are not spent; the tokens it used are charged to
    that run. Each request is an `mcp_sampling` event of that session."""

    async def sample(server: str, params: mcp_types.CreateMessageRequestParams
                     ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        target = target_of(server)
        deadline = asyncio.get_running_loop().time() + TARGET_WAIT_S
        while target is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)  # the run's tool_call may still be on its way
            target = target_of(server)
        if target is None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message=f"{DECLINED_SAMPLING}: it came while no run was calling one of this "
                        f"server's tools, so there is no run to ask and to bill")
        model = target.model
        request = sampling_request(params, model.model, model.max_tokens)
        shown = shown_prompt(request)

        def refuse(reason: str, decided_by: str) -> mcp_types.ErrorData:
            record(McpSampling(target.session_id, server, shown, request["max_tokens"],
                               "decline", decided_by, reason))
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST,
                                       message=f"{DECLINED_SAMPLING}: {reason}")

        if params.tools:
            return refuse("a sampling request with tools is not supported", "policy")
        spent = target.budget.refusal()
        if spent is not None:
            return refuse(spent, "policy")
        verdict = await approve(server, target, request)
        if not verdict.approved:
            return refuse(verdict.reason, verdict.decided_by)
        spent = target.budget.refusal()  # the run may have ended while the user decided
        if spent is not None:
            return refuse(spent, "policy")
        turn = await model.stream_turn(request, TurnCallbacks())
        target.budget.charge(turn.usage)
        if turn.error is not None:
            record(McpSampling(target.session_id, server, shown, request["max_tokens"],
                               "accept", verdict.decided_by,
                               f"the model request failed: {turn.error.message}",
                               dict(turn.usage)))
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR,
                                       message=f"the model request failed: "
                                               f"{turn.error.message}")
        text = "".join(str(b.get("text", "")) for b in turn.content if b.get("type") == "text")
        record(McpSampling(target.session_id, server, shown, request["max_tokens"], "accept",
                           verdict.decided_by, verdict.reason, dict(turn.usage), text))
        return mcp_types.CreateMessageResult(
            role="assistant", content=mcp_types.TextContent(type="text", text=text),
            model=model.model,
            stop_reason=_STOP_REASONS.get(turn.stop_reason or "", turn.stop_reason))

    return sample


def exec_sampler(target: SamplingTarget, approve: str | None, record: Callable[[Event], None]
                 ) -> Sample:
    """`reins exec`'s answer to sampling: to the model with `--approve allow`, else declined."""

    async def cli_approve(_server: str, _target: SamplingTarget, _request: Mapping[str, Any]
                          ) -> SamplingVerdict:
        if approve == "allow":
            return SamplingVerdict(True, "cli", "--approve allow")
        return SamplingVerdict(False, "cli", "reins exec sends sampling requests to the model only "
                                     "with --approve allow")

    return sampler(lambda _server: target, cli_approve, record)
