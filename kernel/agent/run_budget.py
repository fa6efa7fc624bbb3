"""A session's active run as a budget that model requests made on its behalf are charged to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.agent.limits import StopReason

if TYPE_CHECKING:
    from kernel.agent.loop import Agent


@dataclass(frozen=True)
class RunBudget:
    """A session's active run as the budget of requests made on its behalf (an MCP server's
    sampling request: kernel.mcp.sampling.Budget)."""

    agent: Agent
    session_id: str

    def refusal(self) -> str | None:
        if not self.agent.is_running(self.session_id):
            return "the run it was made for has ended"
        stop = self.agent.spent(self.session_id)
        if stop is None:
            return None
        limits = self.agent.limits
        what = {StopReason.TOKEN_BUDGET: f"token budget ({limits.max_tokens} tokens)",
                StopReason.COST_BUDGET: f"cost budget (${limits.max_cost_usd})",
                StopReason.TIME_BUDGET: f"time budget ({limits.max_seconds} s)"}
        return f"the run's {what.get(stop, stop.value)} is spent"

    def charge(self, usage: Mapping[str, int]) -> None:
        self.agent.charge(self.session_id, usage)
