"""What one run carries from round to round, and what its parts share.

`Counters` (rounds, usage, elapsed time, …) are saved in the session's run_info after
every round, so a resumed run keeps its budgets. `RunCore` is the one object the loop, a
round and a batch of calls all hold: the session, its store and reporter, the history,
the counters and the clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.agent.history import History
from kernel.agent.limits import LoopLimits
from kernel.agent.ports import GateFactory, Provider
from kernel.agent.reporter import Reporter
from kernel.agent.store import RunState, SessionStore, StoredSession
from kernel.events import ApprovalDecision, ApprovalRequest, Event
from kernel.model.pricing import Price, cost_usd
from kernel.model.provider import USAGE_KEYS
from kernel.paths import AppPaths
from kernel.tools.registry import ToolRegistry
from kernel.transaction.checkpoints import Checkpoints


@dataclass(frozen=True)
class RunSetup:
    """What an Agent gives each of its runs (kernel.agent.loop.Agent says what each is)."""

    store: SessionStore
    registry: ToolRegistry
    provider: Provider
    paths: AppPaths
    limits: LoopLimits
    gate_factory: GateFactory | None
    sandbox: str
    system_extra: str
    max_parallel: int
    price: Price | None
    clock: Callable[[], float]
    prepare: Callable[[Path], None] | None
    tool_search_threshold: int
    protected_links: Callable[[Path], Mapping[Path, str]] | None
    checkpoints: Checkpoints | None


@dataclass
class Counters:
    """Progress of one run, persisted in the session's run_info after every round."""

    rounds: int = 0
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    continued_max_tokens: bool = False
    told_tool_interface: bool = False
    """The model was told once that a tool call written as text is not run."""
    elapsed_s: float = 0.0
    """Wall-clock seconds the run had used when it was last saved (kept across a resume,
    so the time budget covers the whole run, not each process)."""
    context_tokens: int = 0
    """What the last request held (reported with the run's end, for the context bar)."""
    empty_answer: bool = False
    """The final answer had no text (flagged in run_finished)."""

    def add_usage(self, usage: Mapping[str, Any]) -> None:
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value)

    def to_info(self, cost: float | None, elapsed_s: float,
                stop_reason: str = "") -> dict[str, Any]:
        return {"rounds": self.rounds, "usage": dict(self.usage), "cost_usd": cost,
                "continued_max_tokens": self.continued_max_tokens,
                "told_tool_interface": self.told_tool_interface,
                "elapsed_s": round(elapsed_s, 3), "stop_reason": stop_reason}

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Counters:
        state = cls()
        state.rounds = int(info.get("rounds", 0))
        usage = info.get("usage") or {}
        state.usage.update({k: int(usage.get(k, 0)) for k in USAGE_KEYS})
        state.continued_max_tokens = bool(info.get("continued_max_tokens", False))
        state.told_tool_interface = bool(info.get("told_tool_interface", False))
        try:
            state.elapsed_s = max(0.0, float(info.get("elapsed_s", 0.0)))
        except (TypeError, ValueError):
            state.elapsed_s = 0.0
        return state


@dataclass(frozen=True)
class StoredRun:
    """What a run starts from: read and decoded in a thread, not on the event loop (a long
    session's whole history takes a while)."""

    session: StoredSession
    history: list[dict[str, Any]]
    past: list[Event]

    @classmethod
    def read(cls, store: SessionStore, session_id: str) -> StoredRun:
        return cls(store.get_session(session_id), store.messages(session_id),
                   [e for _, e in store.events(session_id)])


class RunCore:
    """One run's shared state: what it reports through, what it has said, what it used."""

    def __init__(self, setup: RunSetup, session_id: str, stored: StoredRun,
                 reporter: Reporter) -> None:
        self.setup = setup
        self.session_id = session_id
        self.session = stored.session
        self.workspace = Path(self.session.workspace)
        self.store = setup.store
        self.reporter = reporter
        self.history = History(stored.history, setup.store, session_id, reporter.track)
        self.counters = Counters()
        self.started = setup.clock()
        self.awaiting_approval: set[str] = set()
        """Calls whose approval request has no decision yet."""

    def emit(self, event: Event) -> None:
        """Commit, then report (asynchronously, in order). Streamed deltas are not stored."""
        self._note_approval(event)
        self.reporter.emit(event)

    def report(self, event: Event) -> None:
        """Report an event that is already stored (in order with the others)."""
        self._note_approval(event)
        self.reporter.emit(event, store=False)

    def _note_approval(self, event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            self.awaiting_approval.add(event.call_id)
        elif isinstance(event, ApprovalDecision):
            self.awaiting_approval.discard(event.call_id)

    def track(self, future: Future[Any]) -> None:
        """Follow a store write: a failure stops the run at the next emit or flush."""
        self.reporter.track(future)

    def resumed(self) -> None:
        """Go on from the counters the interrupted run saved (its time budget too)."""
        self.counters = Counters.from_info(self.session.run_info)
        self.started = self.setup.clock() - self.counters.elapsed_s

    def cost(self) -> float | None:
        return cost_usd(self.counters.usage, self.setup.price)

    def elapsed(self) -> float:
        return self.setup.clock() - self.started

    def info(self, stop_reason: str = "") -> dict[str, Any]:
        """The counters as the session's run_info stores them."""
        return self.counters.to_info(self.cost(), self.elapsed(), stop_reason)

    def save_state(self, state: RunState, stop_reason: str = "") -> None:
        self.track(self.store.submit_run_state(self.session_id, state, self.info(stop_reason)))

    def save_progress(self, trace: Mapping[str, Any]) -> None:
        """A round's trace, and the counters after it."""
        self.track(self.store.submit_trace(self.session_id, trace))
        self.save_state(RunState.RUNNING)


def request_tokens(usage: Mapping[str, Any]) -> int:
    """The tokens one request sent: its input, cache reads and cache writes."""
    return sum(int(usage.get(key, 0) or 0) for key in
               ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
