"""What the agent loop needs from outside it, as types: a model provider that streams turns
(AnthropicProvider, the fake and demo models) and a gate for each run (the app's and
`reins exec`'s approvals), so the loop depends on no one implementation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kernel.model.catalog import ModelLimits
from kernel.model.provider import ModelTurn, TurnCallbacks
from kernel.policy.gate_context import GateContext
from kernel.tools.dispatch import Gate


class Provider(Protocol):
    """What the loop needs from a model provider (AnthropicProvider implements it)."""

    @property
    def model(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def limits(self) -> ModelLimits: ...

    @property
    def read_timeout_s(self) -> float: ...

    @property
    def forced_tool(self) -> str | None: ...

    def request_params(self, *, system: Any, tools: Sequence[Mapping[str, Any]],
                       messages: Sequence[Mapping[str, Any]],
                       first_round: bool = True) -> dict[str, Any]: ...

    async def stream_turn(self, params: Mapping[str, Any],
                          callbacks: TurnCallbacks) -> ModelTurn: ...

    async def close(self) -> None: ...


GateFactory = Callable[[GateContext], Gate | None]
"""Makes a run's gate from what the run gives it (None: every call is allowed)."""
