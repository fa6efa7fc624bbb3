"""The agent loop: a prompt becomes model rounds and tool calls until the model ends its
turn or a limit (LoopLimits) does; every fact is an event stored before it is reported.

    agent = Agent(store, registry, provider, paths=AppPaths.from_env())
    finished = await agent.run(session_id, "fix the test", sink)   # -> RunFinished
    agent.cancel(session_id)               # from another task: stops stream and tools at once
    agent.cancel_call(session_id, call_id) # stops one running tool call; the run goes on
    agent.suspend(session_id)              # stops the run to be resumed later (app quits)
    finished = await agent.resume(session_id, sink)   # after a crash or a pending approval

The CLI (`reins exec`) and the desktop worker drive it the same way, each with its own sink
and gate. Here: the Agent and its runs' lifetimes (one per session at a time). The parts:
run (one run, start to end), run_state (what it carries), reporter (stored, then reported),
round (one request and its answer), calls (a batch of tool calls), request (fitting the
window), user_turn (prompts, edits). Resume goes on from the history: calls without
results are dispatched (stored results reused, none run twice), a last user turn is asked
again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from kernel.agent.limits import LoopLimits, StopReason, budget_stop
from kernel.agent.ports import GateFactory, Provider
from kernel.agent.reporter import Sink
from kernel.agent.run import Run
from kernel.agent.run_state import RunSetup, StoredRun
from kernel.agent.runlock import session_lock
from kernel.agent.store import RunState, SessionStore
from kernel.events import ContextCompacted, RunFinished
from kernel.model.pricing import Price, price_for
from kernel.paths import AppPaths
from kernel.shared.attachments import Attachment
from kernel.tools.find_tools import DEFAULT_THRESHOLD
from kernel.tools.registry import ToolRegistry
from kernel.transaction.checkpoints import Checkpoints


class RunBusy(RuntimeError):
    """A run is already active for this session in this Agent (SessionLocked: in another
    process)."""


class Agent:
    """Runs sessions stored in `store` with the tools of `registry` and one provider."""

    def __init__(
        self,
        store: SessionStore,
        registry: ToolRegistry,
        provider: Provider,
        *,
        paths: AppPaths,
        limits: LoopLimits | None = None,
        gate_factory: GateFactory | None = None,
        sandbox: str = "none",
        system_extra: str = "",
        max_parallel: int = 4,
        prices: Mapping[str, Price] | None = None,
        clock: Callable[[], float] = time.monotonic,
        prepare: Callable[[Path], None] | None = None,
        tool_search_threshold: int = DEFAULT_THRESHOLD,
        protected_links: Callable[[Path], Mapping[Path, str]] | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        """`prepare(workspace)` is called as a run starts, so what its tools need can be
        made while the model writes (the command sandbox: kernel.sandbox.standby);
        `protected_links(workspace)` says where its protected links lead (PathPolicy);
        `checkpoints` keep what each call changed, to undo it (kernel.transaction)."""
        self.store = store
        self.registry = registry
        self.provider = provider
        self.paths = paths
        self.limits = limits or LoopLimits()
        self.gate_factory = gate_factory
        self.sandbox = sandbox
        self.system_extra = system_extra
        self.max_parallel = max_parallel
        self.clock = clock
        self.prepare = prepare
        self.protected_links = protected_links
        self.checkpoints = checkpoints
        self.tool_search_threshold = tool_search_threshold
        """More tools on offer than this: find_tools searches the rest (kernel.tools.find_tools)."""
        self.price = price_for(provider.model) if prices is None else price_for(provider.model,
                                                                                  prices)
        self._active: dict[str, Run] = {}

    def check_can_run(self) -> None:
        """Raise ValueError when the limits cannot be enforced for this provider's model."""
        if self.limits.max_cost_usd is not None and self.price is None:
            raise ValueError(
                f"a cost budget needs the model's price, and no price is known for "
                f"{self.provider.model!r}; remove the cost budget or use a priced model")

    async def run(self, session_id: str, prompt: str, sink: Sink,
                  attachments: Sequence[Attachment] = ()) -> RunFinished:
        """Settle anything left from an interrupted run, then run `prompt` (with its
        attachments after its text) to its end."""
        async with self._running(session_id, sink) as run:
            return await run.execute(prompt, attachments=attachments)

    async def edit(self, session_id: str, prompt: str, sink: Sink,
                   attachments: Sequence[Attachment] = (), keep: Sequence[int] = (),
                   ) -> RunFinished:
        """Replace the session's last prompt with `prompt` and run it: the old prompt and
        everything after it are superseded (kept in a `messages_superseded` event, no
        longer sent). `keep`: the old prompt's attachments (by position) that stay, before
        the new `attachments`. NothingToChange when there is no prompt to edit."""
        async with self._running(session_id, sink) as run:
            run.check_branch()
            return await run.execute(prompt, attachments=attachments,
                                     branch_reason="edit", keep=keep)

    async def regenerate(self, session_id: str, sink: Sink) -> RunFinished:
        """Ask for the last prompt's answer again: what followed the prompt is superseded
        (kept in a `messages_superseded` event, no longer sent). NothingToChange when the
        session has no prompt."""
        async with self._running(session_id, sink) as run:
            run.check_branch()
            return await run.execute(None, branch_reason="regenerate")

    async def compact(self, session_id: str, sink: Sink) -> ContextCompacted | None:
        """Summarize the session's oldest turns for its next requests now (the app's Compact,
        `reins exec --compact`); None when there is nothing to summarize or it failed (an
        `error` event says which)."""
        async with self._running(session_id, sink) as run:
            return await run.compact_now()

    async def resume(self, session_id: str, sink: Sink) -> RunFinished | None:
        """Continue an interrupted run; None when the session has nothing left to do."""
        async with self._running(session_id, sink) as run:
            if not run.has_work():
                await asyncio.wrap_future(run.core.store.submit_run_state(session_id,
                                                                          RunState.FINISHED))
                return None
            return await run.execute(None)

    def cancel(self, session_id: str) -> bool:
        """Stop the session's active run now (stream closed, running tools cancelled)."""
        run = self._active.get(session_id)
        return run.cancel() if run is not None else False

    def suspend(self, session_id: str) -> bool:
        """Stop the session's active run now and leave it `interrupted`, as a crash would:
        unlike `cancel`, the calls of its last turn that had not started executing get no
        result, so `resume` dispatches them again and a pending approval is asked again
        (the desktop kernel does this when the app quits while a call waits for one)."""
        run = self._active.get(session_id)
        return run.suspend() if run is not None else False

    def cancel_call(self, session_id: str, call_id: str) -> bool:
        """Stop one running (or approval-waiting) tool call of the session's active run; it
        ends as a `cancelled` result the model receives, and the run goes on. False when the
        session has no active run or that call is not running."""
        run = self._active.get(session_id)
        return run.cancel_call(call_id) if run is not None else False

    def is_running(self, session_id: str) -> bool:
        return session_id in self._active

    def charge(self, session_id: str, usage: Mapping[str, int]) -> None:
        """Count tokens used on behalf of the session's active run outside its own requests
        (an MCP server's sampling request) in its usage: they count against its budgets and
        are in its run_finished usage and cost."""
        run = self._active.get(session_id)
        if run is not None:
            run.core.counters.add_usage(usage)

    def spent(self, session_id: str) -> StopReason | None:
        """The token, cost or time budget of the session's active run that is spent."""
        run = self._active.get(session_id)
        if run is None:
            return None
        counters = run.core.counters
        return budget_stop(replace(self.limits, max_rounds=counters.rounds + 1),
                           rounds=counters.rounds, usage=counters.usage, cost=run.core.cost(),
                           elapsed_s=run.core.elapsed())

    def _running(self, session_id: str, sink: Sink) -> _Running:
        return _Running(self, session_id, sink)

    def _setup(self) -> RunSetup:
        return RunSetup(self.store, self.registry, self.provider, self.paths, self.limits,
                        self.gate_factory, self.sandbox, self.system_extra,
                        self.max_parallel, self.price, self.clock, self.prepare,
                        self.tool_search_threshold, self.protected_links, self.checkpoints)


class _Running:
    """An active run of one session: its lock held, then its stored start read (in a
    thread), for as long as it runs."""

    def __init__(self, agent: Agent, session_id: str, sink: Sink) -> None:
        self.agent, self.session_id, self.sink = agent, session_id, sink

    async def __aenter__(self) -> Run:
        self.agent.check_can_run()
        if self.session_id in self.agent._active:
            raise RunBusy(f"session {self.session_id} already has an active run")
        self.lock = session_lock(self.agent.paths, self.session_id)
        self.lock.acquire()
        try:
            stored = await asyncio.to_thread(StoredRun.read, self.agent.store, self.session_id)
            run = Run(self.agent._setup(), self.session_id, self.sink, stored)
        except BaseException:
            self.lock.release()
            raise
        self.agent._active[self.session_id] = run
        return run

    async def __aexit__(self, *exc: object) -> None:
        self.agent._active.pop(self.session_id, None)
        self.lock.release()
