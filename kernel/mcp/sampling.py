"""A server's sampling request (`sampling/createMessage`), sent to the session's model.

Nothing goes to the model unless the user approved that very request, shown as it would be
sent (`shown_prompt`); `reins exec` approves only with `--approve allow`. The answer is the
text of the model's reply. A request that asks for tools is refused (Reins does not run a
second tool loop for a server); so is one beyond the run's token budget. Each request and
its outcome is an `mcp_sampling` event with the tokens it used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types

from kernel.agent.provider import ModelTurn, TurnCallbacks
from kernel.events import Event, McpSampling
from kernel.mcp.asks import DECLINED_SAMPLING, Sample
from kernel.mcp.tools import content_block

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
    for message in request["messages"]:
        text = " ".join(b["text"] if b["type"] == "text" else f"[{b['type']}]"
                        for b in message["content"])
        parts.append(f"{message['role']}: {text}")
    return "\n".join(parts)


@dataclass
class SamplingLedger:
    """Tokens sampling used in this run, against the run's token budget (None: none)."""

    budget: int | None = None
    used: dict[str, int] = field(default_factory=dict)

    @property
    def spent(self) -> bool:
        return self.budget is not None and sum(self.used.values()) >= self.budget

    def add(self, usage: Mapping[str, int]) -> None:
        for key, value in usage.items():
            self.used[key] = self.used.get(key, 0) + int(value)


def exec_sampler(session_id: str, approve: str | None, model: Model,
                 record: Callable[[Event], None], ledger: SamplingLedger) -> Sample:
    """`reins exec`'s answer to sampling: to the model with `--approve allow`, else declined."""

    async def sample(server: str, params: mcp_types.CreateMessageRequestParams
                     ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        request = sampling_request(params, model.model, model.max_tokens)
        shown = shown_prompt(request)

        def refuse(reason: str) -> mcp_types.ErrorData:
            record(McpSampling(session_id, server, shown, request["max_tokens"], "decline",
                               "cli", reason))
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST,
                                       message=f"{DECLINED_SAMPLING}: {reason}")

        if params.tools:
            return refuse("a sampling request with tools is not supported")
        if approve != "allow":
            return refuse("reins exec sends sampling requests to the model only with "
                          "--approve allow")
        if ledger.spent:
            return refuse(f"the run's token budget ({ledger.budget}) is spent")
        turn = await model.stream_turn(request, TurnCallbacks())
        ledger.add(turn.usage)
        if turn.error is not None:
            record(McpSampling(session_id, server, shown, request["max_tokens"], "accept",
                               "cli", f"the model request failed: {turn.error.message}",
                               dict(turn.usage)))
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR,
                                       message=f"the model request failed: "
                                               f"{turn.error.message}")
        text = "".join(str(b.get("text", "")) for b in turn.content if b.get("type") == "text")
        record(McpSampling(session_id, server, shown, request["max_tokens"], "accept", "cli",
                           "--approve allow", dict(turn.usage), text))
        return mcp_types.CreateMessageResult(
            role="assistant", content=mcp_types.TextContent(type="text", text=text),
            model=model.model,
            stop_reason=_STOP_REASONS.get(turn.stop_reason or "", turn.stop_reason))

    return sample
