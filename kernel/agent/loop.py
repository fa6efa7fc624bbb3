"""The agent loop: a prompt becomes model turns and tool calls, every fact stored first.

    agent = Agent(store, registry, provider, paths=AppPaths.from_env())
    finished = await agent.run(session_id, "fix the test", sink)   # -> RunFinished
    agent.cancel(session_id)               # from another task: stops stream and tools at once
    agent.cancel_call(session_id, call_id) # stops one running tool call; the run goes on
    agent.suspend(session_id)              # stops the run to be resumed later (app quits)
    finished = await agent.resume(session_id, sink)   # after a crash or a pending approval

`sink(event)` is called for every event, in order, on the event loop thread, only after the
event is committed to the SessionStore (AssistantDelta, streamed text, is never stored: the
finished block follows as AssistantText; deltas still keep their place in the order). The
loop does not wait for each commit: events are submitted to the store's writer, which
commits what is queued together (group commit), and each is reported when its commit is
done; `run`/`resume` return only after every event of the run has been reported. A failed
commit stops the run (nothing unstored is reported as stored). The loop does no
terminal I/O; the CLI (`reins exec`) and the desktop kernel worker drive it the same way,
each with its own sink and, for approvals, its own gate (`gate_factory`).

An unexpected failure (a bug, a store that can no longer write) still ends the stream the
way every run ends: an `error` event (code `internal_error`) and `run_finished` (stop
reason `error`) — stored when the store still works, else only reported — and the session
is left `interrupted`, to be resumed. Only a sink that fails cannot be told anything: then
the run raises StoreFailed.

One round: the request (system prompt + tools with prompt-cache breakpoints, history
trimmed if near the context window) is streamed; the finished assistant message is stored
in the history; its tool_use blocks go, after the loop-detection and rate-limit checks, to
the dispatcher's `dispatch_many` (concurrency, ordering, approvals and idempotency are the
registry's); all results go back in one user message of tool_result blocks. A call stopped
with `cancel_call` is answered with its `cancelled` result and the run continues; if it was
waiting for approval, its request is answered (a stored ApprovalDecision `deny` by the user)
so every approval dialog showing it closes. Stop reasons
end_turn, tool_use, max_tokens (continued once), pause_turn and refusal are handled; every
limit (LoopLimits) ends the run with its own stop_reason. A final answer that is only a
tool call written as text (kernel.agent.textcall) is answered once and the run goes on; an
empty final answer is flagged in run_finished.

The context (kernel.agent.compact, kernel.agent.media): results' images and documents are
fitted to the API's limits as they enter the history (and a loaded history once); a
request near the window — the window less max_tokens — is trimmed, then compacted (the
oldest turns summarized, a stored ContextCompacted; the history itself is never cut); a
request the API refuses as too long is compacted and sent once more, one refused because of
a media block has that block replaced for good and is sent once more. `Agent.compact`
summarizes on request (the app's Compact, `reins exec --compact`).

Resume: the history tells where a run stopped. An assistant turn whose tool calls have no
results yet has them dispatched (the dispatcher returns stored results for calls that had
already finished, through the store's ResultLog, so no call runs twice and none is
skipped); a history that ends with a user turn asks the model again (this is also how a
turn that failed with an API error is retried).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernel.agent.branch import cut, last_prompt, prompt_place
from kernel.agent.compact import (
    COMPACT_AT,
    budget_after_overflow,
    choose_cut,
    chunk_chars,
    chunks,
    keep_tokens,
    summary_max_tokens,
    summary_message,
    summary_params,
    transcript,
)
from kernel.agent.context import (
    CHARS_PER_TOKEN,
    ContextTrimmer,
    cached_system,
    cached_tools,
    estimate_tokens,
    with_cache_breakpoint,
)
from kernel.agent.limits import (
    LoopLimits,
    RateLimiter,
    Repeat,
    RepeatDetector,
    StopReason,
    budget_stop,
    rate_message,
    repeat_message,
)
from kernel.agent.media import fit_content, fit_messages, replace_at, saver
from kernel.agent.ports import GateFactory, Provider
from kernel.agent.prompt import system_prompt
from kernel.agent.reporter import Reporter, Sink, StoreFailed
from kernel.agent.runlock import session_lock
from kernel.agent.store import RunState, SessionStore, StoredSession
from kernel.agent.textcall import TOOL_INTERFACE_PROMPT, text_tool_call
from kernel.events import (
    RESULT_PREVIEW_CHARS,
    ApprovalDecision,
    ApprovalRequest,
    AssistantDelta,
    AssistantText,
    ContextCompacted,
    ErrorEvent,
    Event,
    MessagesSuperseded,
    ModelRetry,
    ModelWaiting,
    RunFinished,
    SessionStarted,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
    UserMessage,
)
from kernel.model.catalog import max_tokens_advice
from kernel.model.pricing import Price, cost_usd, price_for
from kernel.model.provider import (
    USAGE_KEYS,
    ModelTurn,
    ProviderError,
    RetryNotice,
    TurnCallbacks,
)
from kernel.paths import AppPaths, UnsafeIdentifier, check_call_id
from kernel.policy.decide import Mode, offered_tools
from kernel.policy.gate_context import GateContext
from kernel.shared.attachments import Attachment
from kernel.tools.dispatch import Dispatcher, error_result
from kernel.tools.externalize import OutputStore
from kernel.tools.find_tools import DEFAULT_THRESHOLD, tools_on_offer
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ErrorCode, Progress, Risk, ToolCall, ToolResult, ToolSpec
from kernel.transaction.checkpoints import Checkpoints

log = logging.getLogger(__name__)
CONTINUE_PROMPT = ("Your previous answer was cut off by the output token limit. Continue "
                   "exactly where it stopped, without repeating what you already wrote.")


def request_tokens(usage: Mapping[str, Any]) -> int:
    """The tokens one request sent: its input, cache reads and cache writes."""
    return sum(int(usage.get(key, 0) or 0) for key in
               ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))




class RunBusy(RuntimeError):
    """A run is already active for this session in this Agent (SessionLocked: in another
    process)."""


@dataclass
class _RunState:
    """Progress of one run, persisted in the session's run_info after every round."""

    rounds: int = 0
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    continued_max_tokens: bool = False
    told_tool_interface: bool = False
    """The model was told once that a tool call written as text is not run."""
    elapsed_s: float = 0.0
    """Wall-clock seconds the run had used when it was last saved (kept across a resume,
    so the time budget covers the whole run, not each process)."""

    def to_info(self, cost: float | None, elapsed_s: float,
                stop_reason: str = "") -> dict[str, Any]:
        return {"rounds": self.rounds, "usage": dict(self.usage), "cost_usd": cost,
                "continued_max_tokens": self.continued_max_tokens,
                "told_tool_interface": self.told_tool_interface,
                "elapsed_s": round(elapsed_s, 3), "stop_reason": stop_reason}

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> _RunState:
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
        self._active: dict[str, _Run] = {}

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
            return await run.execute(prompt, attachments=attachments, branch="edit",
                                     keep=keep)

    async def regenerate(self, session_id: str, sink: Sink) -> RunFinished:
        """Ask for the last prompt's answer again: what followed the prompt is superseded
        (kept in a `messages_superseded` event, no longer sent). NothingToChange when the
        session has no prompt."""
        async with self._running(session_id, sink) as run:
            run.check_branch()
            return await run.execute(None, branch="regenerate")

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
                await asyncio.wrap_future(run.store.submit_run_state(session_id,
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
            for key, value in usage.items():
                run.state.usage[key] = run.state.usage.get(key, 0) + int(value)

    def spent(self, session_id: str) -> StopReason | None:
        """The token, cost or time budget of the session's active run that is spent."""
        run = self._active.get(session_id)
        if run is None:
            return None
        return budget_stop(replace(self.limits, max_rounds=run.state.rounds + 1),
                           rounds=run.state.rounds, usage=run.state.usage, cost=run._cost(),
                           elapsed_s=run._elapsed())

    def _running(self, session_id: str, sink: Sink) -> _RunContext:
        return _RunContext(self, session_id, sink)


@dataclass(frozen=True)
class _Stored:
    """What a run starts from: read and decoded in a thread, not on the event loop (a long
    session's whole history takes a while)."""

    session: StoredSession
    history: list[dict[str, Any]]
    past: list[Event]

    @classmethod
    def read(cls, store: SessionStore, session_id: str) -> _Stored:
        return cls(store.get_session(session_id), store.messages(session_id),
                   [e for _, e in store.events(session_id)])


class _RunContext:
    def __init__(self, agent: Agent, session_id: str, sink: Sink) -> None:
        self.agent, self.session_id, self.sink = agent, session_id, sink

    async def __aenter__(self) -> _Run:
        self.agent.check_can_run()
        if self.session_id in self.agent._active:
            raise RunBusy(f"session {self.session_id} already has an active run")
        self.lock = session_lock(self.agent.paths, self.session_id)
        self.lock.acquire()
        try:
            stored = await asyncio.to_thread(_Stored.read, self.agent.store, self.session_id)
            run = _Run(self.agent, self.session_id, self.sink, stored)
        except BaseException:
            self.lock.release()
            raise
        self.agent._active[self.session_id] = run
        return run

    async def __aexit__(self, *exc: object) -> None:
        self.agent._active.pop(self.session_id, None)
        self.lock.release()


class _Run:
    """One run of one session: the state and the steps of the loop."""

    def __init__(self, agent: Agent, session_id: str, sink: Sink, stored: _Stored) -> None:
        self.agent = agent
        self.store = agent.store
        self.session = stored.session
        self.session_id = session_id
        self.sink = sink
        self.workspace = Path(self.session.workspace)
        self.outputs = OutputStore.for_session(agent.paths, session_id)
        self._keep_media = saver(self.outputs.root / "media")
        """Where images and documents not sent as they were are kept."""
        links = agent.protected_links
        workspace = self.workspace
        self.path_policy = PathPolicy(self.workspace, app_paths=agent.paths,
                                      links=None if links is None else lambda: links(workspace))
        self.reporter = Reporter(self.store, sink)
        self.results = self.store.result_log(session_id, pipeline=self.reporter.track)
        self.history = stored.history
        self.state = _RunState()
        self.started = agent.clock()
        self.repeats = RepeatDetector(agent.limits)
        self.rates = RateLimiter(agent.limits.rate_limits)
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._suspend_requested = False
        self._awaiting_approval: set[str] = set()
        self.empty_answer = False
        self.context_tokens = 0
        """What the last request held (reported with the run's end, for the context bar)."""
        past = stored.past
        self._past_prompts = [e for e in past if isinstance(e, UserMessage)]
        self._last_end = _why_unanswered(past)
        """Why the previous run ended (for a prompt of it left without an answer)."""
        self._unanswered = ({e.call_id for e in past if isinstance(e, ApprovalRequest)}
                            - {e.call_id for e in past if isinstance(e, ApprovalDecision)})
        """Approval requests without a decision (of a run interrupted while asking)."""
        self.compaction = next((e for e in reversed(past) if isinstance(e, ContextCompacted)
                                and 0 < e.first_kept < len(self.history)
                                and self.history[e.first_kept]["role"] == "assistant"), None)
        """The latest summary of the oldest turns, when it still fits the history."""
        self._budget_cap: int | None = None
        self._asked: Future[None] | None = None
        """A store barrier taken as the last request was made (`_round`)."""
        self._fixed: tuple[tuple[int, tuple[str, ...]], list[dict[str, Any]],
                           list[dict[str, Any]], int] | None = None
        """The tools and system prompt of the last request (`_fixed_part`), by what made
        them."""
        self._trimmer = ContextTrimmer(self._store_full)
        self._writing: list[tuple[str, Path, asyncio.Future[Any]]] = []
        """Full outputs of trimmed results being written (`_store_full`)."""
        self._unwritten: set[str] = set()
        """Calls whose full output could not be written in a thread."""
        """Trims each request, measuring only what is new since the previous one."""
        self._summary: tuple[ContextCompacted, dict[str, Any]] | None = None
        """The summary message of `compaction`, made once (the same object every round)."""
        self._reported_results = {e.call_id for e in past if isinstance(e, ToolResultEvent)}
        self._reported_calls = {e.call_id for e in past if isinstance(e, ToolCallStarted)}
        gate = None
        if agent.gate_factory is not None:
            gate = agent.gate_factory(GateContext(
                self.session.session_id, self.session.mode, self.path_policy, self.emit,
                self.report, past))
        self.dispatcher = Dispatcher(
            agent.registry, session_id=session_id, workspace=self.workspace,
            outputs=self.outputs, path_policy=self.path_policy, gate=gate,
            observer=_Observer(self), results=self.results, max_parallel=agent.max_parallel,
            checkpoints=agent.checkpoints,
        )
        self._replay_repeats()
        self._fit_history()

    def _fit_history(self) -> None:
        """Images and documents of the stored history made sendable, for good (a session
        stored with one the API refuses is not stuck with it)."""
        fitted, changed = fit_messages(self.history, self._keep_media)
        for index in changed:
            self.history[index] = dict(fitted[index])
            self._track(self.store.submit_replace_message(self.session_id, index,
                                                          self.history[index]))

    # ---- events -----------------------------------------------------------------------

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
            self._awaiting_approval.add(event.call_id)
        elif isinstance(event, ApprovalDecision):
            self._awaiting_approval.discard(event.call_id)

    def cancel(self) -> bool:
        if self._task is None or self._task.done():
            return False
        self._cancel_requested = True
        self._task.cancel()
        return True

    def suspend(self) -> bool:
        if self._task is None or self._task.done():
            return False
        self._suspend_requested = True
        self.dispatcher.suspend()
        self._task.cancel()
        return True

    def cancel_call(self, call_id: str) -> bool:
        """Stop one call; a pending approval request of it is answered, so it closes."""
        if not self.dispatcher.cancel_call(call_id):
            return False
        if call_id in self._awaiting_approval:
            self.emit(ApprovalDecision(
                self.session_id, call_id=call_id, decision="deny", decided_by="user",
                scope="call", message="The user stopped the call before answering; it was "
                "not run.", decided_at=time.time()))
        return True

    # ---- the run ----------------------------------------------------------------------

    def has_work(self) -> bool:
        if not self.history:
            return False
        last = self.history[-1]
        return last["role"] == "user" or bool(self._pending_calls())

    def check_branch(self) -> None:
        """NothingToChange when there is no last prompt to edit or answer again here."""
        prompt_place(self.history, last_prompt(self._past_prompts))

    def _branch(self, reason: str, keep: Sequence[int]) -> tuple[list[dict[str, Any]],
                                                                  list[dict[str, Any]]]:
        """Supersede the last prompt and its answer (`edit`) or its answer (`regenerate`);
        for an edit, the kept attachments' summaries and blocks."""
        prompt = last_prompt(self._past_prompts)
        place = prompt_place(self.history, prompt)
        blocks = self.history[place.index]["content"]
        kept_summaries: list[dict[str, Any]] = []
        kept_blocks: list[dict[str, Any]] = []
        start = place.block + 1
        for position, summary in enumerate(prompt.attachments):
            count = int(summary.get("blocks", 1))
            if position in keep and isinstance(blocks, list):
                kept_summaries.append(dict(summary))
                kept_blocks += [dict(b) for b in blocks[start:start + count]]
            start += count
        change = cut(self.history, place, reason)
        event = MessagesSuperseded(self.session_id, reason=reason,
                                   first_index=change.first_index,
                                   first_block=change.first_block,
                                   messages=change.superseded)
        self.reporter.emit(event, write=self.store.submit_branch(event, change.first_index,
                                                                 change.kept))
        for call_id in sorted(self._unanswered & _call_ids(change.superseded)):
            self.emit(ApprovalDecision(
                self.session_id, call_id=call_id, decision="deny", decided_by="user",
                scope="call", message=_SUPERSEDED_CALL[reason], decided_at=time.time()))
        self.history = change.history
        if self.compaction is not None and self.compaction.first_kept >= len(self.history):
            self.compaction = None
        self.repeats = RepeatDetector(self.agent.limits)
        self._replay_repeats()
        return kept_summaries, kept_blocks

    def _prompt_at(self) -> tuple[int, int]:
        """Where the next prompt's text goes: its history message and block."""
        if self.history and self.history[-1]["role"] == "user":
            content = self.history[-1]["content"]
            return len(self.history) - 1, 1 if isinstance(content, str) else len(content)
        return len(self.history), 0

    def _close_unanswered_turn(self) -> None:
        """A user turn that holds a prompt (text) and got no answer — its request failed,
        or the run was stopped first — is closed with a short assistant note saying so
        before a new prompt: the new prompt is its own turn, never silently merged into
        the old one (a turn of only tool results is still joined by the next prompt, as the
        API wants). Retry (resume) sends the unanswered turn again instead."""
        if not self.history or self.history[-1]["role"] != "user":
            return
        content = self.history[-1]["content"]
        if not isinstance(content, str) and not any(
                isinstance(b, dict) and b.get("type") == "text" for b in content):
            return
        self._append_message({"role": "assistant", "content": [
            {"type": "text", "text": f"(No answer to this message: {self._last_end}.)"}]})

    def _add_prompt(self, prompt: str, attachments: Sequence[Attachment],
                    kept: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
        summaries, blocks = list(kept[0]), list(kept[1])
        for attachment in attachments:
            fitted, _ = fit_content(attachment.blocks(), keep=self._keep_media)
            summaries.append(attachment.summary(len(fitted)))
            blocks += [dict(b) for b in fitted]
        self._close_unanswered_turn()
        at_message, at_block = self._prompt_at()
        self.emit(UserMessage(self.session_id, prompt, attachments=summaries,
                              at_message=at_message, at_block=at_block))
        self._add_user_blocks([{"type": "text", "text": prompt}, *blocks])

    async def execute(self, prompt: str | None, *, attachments: Sequence[Attachment] = (),
                      branch: str | None = None, keep: Sequence[int] = ()) -> RunFinished:
        self._task = asyncio.current_task()
        info = self.session.run_info
        resuming = self.session.run_state in (RunState.RUNNING, RunState.INTERRUPTED)
        if prompt is None and resuming and branch is None:
            self.state = _RunState.from_info(info)
            self.started = self.agent.clock() - self.state.elapsed_s
        try:
            self.emit(SessionStarted(self.session_id, workspace=str(self.workspace),
                                     model=self.agent.provider.model,
                                     sandbox=self.agent.sandbox, mode=Mode(self.session.mode)))
            if self.agent.prepare is not None:
                self.agent.prepare(self.workspace)
            self._track(self.store.submit_run_state(self.session_id, RunState.RUNNING,
                                                    self.state.to_info(self._cost(),
                                                                       self._elapsed())))
            kept: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
            if branch is not None:
                kept = self._branch(branch, keep)
            await self._settle_pending_calls()
            if prompt is not None:
                if not self.session.title:
                    self._track(self.store.submit_rename_session(self.session_id,
                                                                 _title_from(prompt)))
                self._add_prompt(prompt, attachments, kept)
            stop = await self._loop()
            await self._outputs_written()
            finished = self._finish(stop)
            await self.reporter.flush()
            return finished
        except asyncio.CancelledError:
            with contextlib.suppress(StoreFailed):  # the flush below says so
                await self._outputs_written()
            if self._suspend_requested:
                self._track(self.store.submit_run_state(
                    self.session_id, RunState.INTERRUPTED,
                    self.state.to_info(self._cost(), self._elapsed())))
                await self.reporter.flush()
                raise
            self._after_cancel()
            finished = self._finish(StopReason.CANCELLED)
            if self._cancel_requested and self._task is not None:
                self._task.uncancel()
                try:
                    await self.reporter.flush()
                except StoreFailed as exc:
                    return await self._crashed(exc)
                return finished
            await self.reporter.flush()
            raise
        except Exception as exc:
            return await self._crashed(exc)

    async def _crashed(self, exc: Exception) -> RunFinished:
        """End the stream of a run that failed unexpectedly (see the module docstring)."""
        log.error("the run of session %s failed", self.session_id, exc_info=exc)
        with contextlib.suppress(StoreFailed):
            await self._outputs_written()
        with contextlib.suppress(StoreFailed):
            await self.reporter.flush()
        if self.reporter.sink_failed:
            raise exc
        cost = self._cost()
        error = ErrorEvent(self.session_id, "internal_error", (
            f"The run stopped unexpectedly ({type(exc).__name__}: {exc}). Everything done "
            f"before is kept; resume the session to go on."))
        finished = RunFinished(self.session_id, stop_reason=StopReason.ERROR.value,
                               rounds=self.state.rounds, usage=dict(self.state.usage),
                               cost_usd=round(cost or 0.0, 6),
                               context_tokens=self.context_tokens,
                               context_window=self.agent.provider.context_window)
        if self.reporter.healthy:
            self._track(self.store.submit_run_state(
                self.session_id, RunState.INTERRUPTED,
                self.state.to_info(cost, self._elapsed(), StopReason.ERROR.value)))
            self.emit(error)
            self.emit(finished)
            with contextlib.suppress(StoreFailed):
                await self.reporter.flush()
                return finished
        if self.reporter.sink_failed:
            raise exc
        self.reporter.report_unstored([error, finished])
        return finished

    async def _loop(self) -> StopReason:
        limits = self.agent.limits
        while True:
            stop = budget_stop(limits, rounds=self.state.rounds, usage=self.state.usage,
                               cost=self._cost(), elapsed_s=self._elapsed())
            if stop is not None:
                return stop
            outcome = await self._timed_round()
            if outcome is not None:
                return outcome

    async def _timed_round(self) -> StopReason | None:
        """One round; the wall-clock budget, when set, interrupts the stream or the tools."""
        if self.agent.limits.max_seconds is None:
            return await self._round()
        remaining = self.agent.limits.max_seconds - self._elapsed()
        timer = asyncio.timeout(max(0.0, remaining))
        try:
            async with timer:
                return await self._round()
        except TimeoutError:
            if not timer.expired():
                raise
            self._after_cancel()
            return StopReason.TIME_BUDGET

    async def _round(self) -> StopReason | None:
        round_index = self.state.rounds
        if self._asked is not None:  # what came before the last request: reported by now
            await self.reporter.committed(self._asked)
        self._asked = self.store.barrier()
        collector = _Collector(self)
        started = time.perf_counter()
        try:
            turn, trimmed = await self._ask_model(collector)
        except asyncio.CancelledError:
            collector.keep_partial(in_history=True)
            if collector.started:  # a round stopped mid-stream still used what it streamed
                self.state.rounds += 1
                for key, value in collector.used().items():
                    self.state.usage[key] = self.state.usage.get(key, 0) + value
            raise
        self.state.rounds += 1
        for key, value in turn.usage.items():
            self.state.usage[key] = self.state.usage.get(key, 0) + int(value)
        self.context_tokens = request_tokens(turn.usage)
        trace: dict[str, Any] = {
            "round": round_index, "request_id": turn.request_id,
            "stop_reason": turn.stop_reason, "usage": dict(turn.usage),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            "trimmed_results": trimmed,
            "model_tool_calls": [
                {"id": b.get("id"), "name": b.get("name"), "input": b.get("input")}
                for b in turn.content if b.get("type") == "tool_use"],
            "tools": [],
            "answer": "".join(b.get("text", "") for b in turn.content if b.get("type") == "text"),
        }
        if turn.error is not None:
            collector.keep_partial(in_history=False)
            trace["error"] = {"code": turn.error.code, "status": turn.error.status}
            self._save_progress(trace)
            self.emit(ErrorEvent(self.session_id, turn.error.code, turn.error.message))
            return StopReason.ERROR
        content = list(turn.content)
        reason = turn.stop_reason
        if reason == "max_tokens":
            content = [b for i, b in enumerate(content)
                       if not (b.get("type") == "tool_use" and i == len(content) - 1)]
        calls = [ToolCall(b["id"], b["name"], b.get("input")) for b in content
                 if b.get("type") == "tool_use"]
        if content:
            self._append_message({"role": "assistant", "content": content})
        stop: StopReason | None = None
        if calls:
            if not self._without_effects(calls):
                await self.reporter.committed()
            stop = await self._run_calls(calls, trace)
        elif reason == "max_tokens":
            if self.state.continued_max_tokens:
                stop = StopReason.MAX_TOKENS
                self._save_progress(trace)
                provider = self.agent.provider
                self.emit(ErrorEvent(self.session_id, "max_tokens", (
                    f"The answer hit the output limit ({provider.max_tokens} tokens) twice in "
                    f"a row and was stopped. "
                    f"{max_tokens_advice(provider.model, provider.limits)}")))
                return stop
            self.state.continued_max_tokens = True
            self._add_user_blocks([{"type": "text", "text": CONTINUE_PROMPT}])
        elif reason == "pause_turn":
            if not content:
                self._add_user_blocks([{"type": "text", "text": "Continue."}])
        elif reason == "refusal":
            stop = StopReason.REFUSAL
        else:
            stop = self._final_answer(trace["answer"])
        if reason != "max_tokens":
            self.state.continued_max_tokens = False
        self._save_progress(trace)
        return stop

    async def _ask_model(self, collector: _Collector) -> tuple[ModelTurn, list[str]]:
        """Stream one turn. A request near the window is compacted first; a request the API
        refuses because of one image or document, or as too long, is repaired (that block
        replaced for good, or the oldest turns summarized) and sent once more."""
        params, trimmed, size = self._request()
        if size > COMPACT_AT * self._input_budget() and await self._compact("auto"):
            params, trimmed, size = self._request()
        turn = await self.agent.provider.stream_turn(params, collector.callbacks)
        if turn.error is not None and await self._repair(turn.error):
            params, trimmed, size = self._request()
            turn = await self.agent.provider.stream_turn(params, collector.callbacks)
        return turn, trimmed

    async def _repair(self, error: ProviderError) -> bool:
        if error.code == "prompt_too_long":
            _, _, sent = self._request()
            self._budget_cap = budget_after_overflow(error.message, sent)
            return bool(await self._compact("prompt_too_long"))
        if error.code != "bad_block" or error.block is None:
            return False
        offset = self.compaction.first_kept - 1 if self.compaction is not None else 0
        place = error.block
        if place and self.compaction is not None and place[0] == 0:
            return False
        if place:
            place = (place[0] + offset, *place[1:])
        fixed, changed = replace_at(self.history, place,
                                    f"refused by the API (HTTP {error.status})",
                                    self._keep_media)
        for index in changed:
            self.history[index] = fixed[index]
            self._track(self.store.submit_replace_message(self.session_id, index,
                                                          fixed[index]))
        return bool(changed)

    def _input_budget(self) -> int:
        """The tokens a request may take: the model's window less its output, or less when
        the API said a smaller request was too long (for the rest of the run)."""
        provider = self.agent.provider
        budget = max(provider.context_window - provider.max_tokens, 1)
        return min(budget, self._budget_cap) if self._budget_cap else budget

    async def compact_now(self) -> ContextCompacted | None:
        self._task = asyncio.current_task()
        compacted = await self._compact("user")
        if compacted is None:
            self.emit(ErrorEvent(self.session_id, "nothing_to_compact", (
                "There is nothing to summarize yet: the session has no earlier turns before "
                "its newest one.")))
        await self.reporter.flush()
        return self.compaction if compacted else None

    async def _compact(self, reason: str) -> bool | None:
        """Summarize the turns before a new cut (see kernel.agent.compact); None when there
        is nothing to summarize, False when the model could not (an error event says so)."""
        provider = self.agent.provider
        start = self.compaction.first_kept if self.compaction is not None else 0
        _, _, before = self._request()
        fixed = before - estimate_tokens(self._sent_history())
        keep = 0 if reason == "user" else keep_tokens(self._input_budget(), fixed)
        cut = choose_cut(self.history, start, keep)
        if cut is None:
            return None
        summary = self.compaction.summary if self.compaction is not None else ""
        size = summary_max_tokens(provider.context_window, provider.max_tokens)
        entries = transcript(self.history[start:cut])
        for chunk in chunks(entries, chunk_chars(provider.context_window, size)):
            turn = await provider.stream_turn(
                summary_params(provider.model, size, summary, chunk), TurnCallbacks())
            for key, value in turn.usage.items():
                self.state.usage[key] = self.state.usage.get(key, 0) + int(value)
            text = "".join(str(b.get("text", "")) for b in turn.content
                           if b.get("type") == "text").strip()
            if turn.error is not None or not text:
                why = turn.error.message if turn.error is not None else "its answer was empty"
                self.emit(ErrorEvent(self.session_id, "compaction_failed", (
                    f"The oldest turns could not be summarized to make room: {why}")))
                return False
            summary = text
        previous = self.compaction
        self.compaction = ContextCompacted(self.session_id, summary=summary, first_kept=cut,
                                           reason=reason)
        _, _, after = self._request()
        self.compaction = ContextCompacted(
            self.session_id, summary=summary, first_kept=cut, tokens_before=before,
            tokens_after=after, reason=reason)
        try:
            self.emit(self.compaction)
        except StoreFailed:
            self.compaction = previous
            raise
        return True

    def _sent_history(self) -> list[dict[str, Any]]:
        """What the requests carry: the summary and the turns after it, else everything."""
        if self.compaction is None:
            return self.history
        if self._summary is None or self._summary[0] is not self.compaction:
            self._summary = (self.compaction, summary_message(self.compaction.summary))
        return [self._summary[1], *self.history[self.compaction.first_kept:]]

    def _final_answer(self, text: str) -> StopReason | None:
        """End the run, unless the answer is a tool call written as text (told once)."""
        name = text_tool_call(text, self.agent.registry.names())
        if name is not None and not self.state.told_tool_interface:
            self.state.told_tool_interface = True
            self._add_user_blocks([{"type": "text",
                                    "text": TOOL_INTERFACE_PROMPT.format(name=name)}])
            return None
        self.empty_answer = not text.strip()
        return StopReason.END_TURN

    # ---- tool calls ---------------------------------------------------------------------

    def _without_effects(self, calls: Sequence[ToolCall]) -> bool:
        """Every call is to a built-in read-only tool. A call with effects runs only once
        the turn that asked for it is on disk (killed after it ran, a run resumes from that
        turn and its stored result, never asking the model again as if nothing had
        happened); a read changes nothing a crash could lose, so it runs at once, while the
        turn (and what came before it) is being committed: its result is committed after
        them (the store keeps order) and reported only then. A failed commit or sink stops
        the run before the next request but one: each round waits, before it asks, for
        what came before the previous request (a round earlier, so that wait is over
        unless the disk is a whole round behind)."""
        registry = self.agent.registry
        for call in calls:
            spec = registry.get(call.name) if isinstance(call.name, str) else None
            if spec is None or spec.origin != "builtin" or spec.risk is not Risk.READ:
                return False
        return True

    async def _run_calls(self, calls: list[ToolCall], trace: dict[str, Any]) -> StopReason | None:
        """Check, dispatch and answer one assistant turn's calls; a stop reason if any."""
        synthetic: dict[str, ToolResult] = {}
        stop: StopReason | None = None
        now = self.agent.clock()
        for call in calls:
            verdict = self.repeats.observe(call)
            if verdict is not Repeat.RUN:
                first = self.results.get(self.repeats.first_call_id or "")
                synthetic[call.call_id] = error_result(
                    call.call_id, ErrorCode.LOOP_DETECTED,
                    repeat_message(str(call.name), self.repeats.count,
                                   first.text if first else "(no result)",
                                   stopping=verdict is Repeat.STOP))
                if verdict is Repeat.STOP:
                    stop = StopReason.LOOP_DETECTED
                continue
            wait = self.rates.check(str(call.name), now)
            if wait is not None:
                limit = self.rates.limit_for(str(call.name)) or 0
                synthetic[call.call_id] = error_result(
                    call.call_id, ErrorCode.RATE_LIMITED, rate_message(str(call.name), limit,
                                                                       wait))
        by_id = dict(synthetic)
        for run, refused in _in_turns(calls, synthetic):
            if run:
                await self._outputs_written()
                by_id.update((r.call_id, r) for r in await self.dispatcher.dispatch_many(run))
            if refused is not None and _safe_id(refused.call_id):
                self._announce(refused)
                self.results.put(synthetic[refused.call_id])
                self._report_result(refused, synthetic[refused.call_id])
        self._answer_calls(calls, by_id, trace)
        return stop

    def _answer_calls(self, calls: Sequence[ToolCall], by_id: Mapping[str, ToolResult],
                      trace: dict[str, Any] | None) -> None:
        blocks = []
        for call in calls:
            result = by_id.get(call.call_id) or error_result(
                call.call_id, ErrorCode.CANCELLED,
                f"The call to {call.name!r} did not run: the run was stopped before it.")
            blocks.append(_tool_result_block(call.call_id, result))
            if trace is not None:
                spec = self.agent.registry.get(call.name) if isinstance(call.name, str) else None
                trace["tools"].append({
                    "call_id": call.call_id, "name": call.name, "input": call.input,
                    "summary": _summary(spec, call.input), "is_error": result.is_error,
                    "error_code": result.error_code.value if result.error_code else None,
                    "duration_ms": round(result.duration_ms, 1),
                    "result": result.text[:200],
                })
        fitted, _ = fit_content(blocks, keep=self._keep_media)
        self._add_user_blocks([dict(b) for b in fitted])

    def _pending_calls(self) -> list[ToolCall]:
        if not self.history or self.history[-1]["role"] != "assistant":
            return []
        content = self.history[-1]["content"]
        if isinstance(content, str):
            return []
        return [ToolCall(b["id"], b["name"], b.get("input")) for b in content
                if b.get("type") == "tool_use"]

    async def _settle_pending_calls(self) -> None:
        """Answer the tool calls of an interrupted turn (stored results are reused)."""
        calls = self._pending_calls()
        if not calls:
            return
        for call in calls:
            stored = self.results.get(call.call_id) if _safe_id(call.call_id) else None
            if stored is not None and call.call_id not in self._reported_results:
                self._announce(call)
                self._report_result(call, stored)
        trace: dict[str, Any] = {"round": self.state.rounds - 1, "resumed": True, "tools": [],
                                 "model_tool_calls": [], "answer": ""}
        await self._outputs_written()
        ran = await self.dispatcher.dispatch_many(calls)
        self._answer_calls(calls, {r.call_id: r for r in ran}, trace)
        self._track(self.store.submit_trace(self.session_id, trace))

    def _after_cancel(self) -> None:
        """Leave a valid history after a cancel: every pending call gets its result."""
        calls = self._pending_calls()
        if calls:
            by_id = {c.call_id: s for c in calls if (s := self.dispatcher.stored(c.call_id))}
            self._answer_calls(calls, by_id, None)

    def _announce(self, call: ToolCall) -> None:
        if call.call_id in self._reported_calls:
            return
        spec = self.agent.registry.get(call.name) if isinstance(call.name, str) else None
        self.call_started(call, spec)

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        self._reported_calls.add(str(call.call_id))
        self.emit(ToolCallStarted(
            self.session_id, call_id=str(call.call_id), name=str(call.name), input=call.input,
            summary=_summary(spec, call.input), risk=spec.shown_risk if spec else Risk.READ,
            parent_call_id=call.parent_id))

    def _report_result(self, call: ToolCall, result: ToolResult) -> None:
        if result.call_id in self._reported_results:
            return
        self._reported_results.add(result.call_id)
        self.emit(ToolResultEvent(
            self.session_id, call_id=result.call_id, name=str(call.name),
            is_error=result.is_error,
            error_code=result.error_code.value if result.error_code else None,
            duration_ms=round(result.duration_ms, 3), output_bytes=result.output_bytes,
            externalized_path=result.externalized_path,
            preview=result.text[:RESULT_PREVIEW_CHARS],
            changes=[c.to_json() for c in result.changes] if result.changes else [],
            parent_call_id=call.parent_id))

    def _replay_repeats(self) -> None:
        for message in self.history:
            if message["role"] != "assistant" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    self.repeats.observe(ToolCall(block["id"], block["name"], block.get("input")))

    # ---- history and requests -----------------------------------------------------------

    def _track(self, future: Future[Any]) -> None:
        self.reporter.track(future)

    def _append_message(self, message: dict[str, Any]) -> None:
        """Queue the message for commit (in order with everything else) and keep it."""
        self._track(self.store.submit_message(self.session_id, message))
        self.history.append(message)

    def _add_user_blocks(self, blocks: list[dict[str, Any]]) -> None:
        """Append a user turn, merged into the previous one if that is a user turn too."""
        if self.history and self.history[-1]["role"] == "user":
            previous = self.history[-1]["content"]
            old = [{"type": "text", "text": previous}] if isinstance(previous, str) else previous
            merged = {"role": "user", "content": [*old, *blocks]}
            self._track(self.store.submit_replace_last_message(self.session_id, merged))
            self.history[-1] = merged
        else:
            self._append_message({"role": "user", "content": blocks})

    def _request(self) -> tuple[dict[str, Any], list[str], int]:
        provider = self.agent.provider
        registry = self.agent.registry
        specs = [s for n in registry.names() if (s := registry.get(n)) is not None]
        shown = tools_on_offer(specs, offered_tools(specs, Mode(self.session.mode)),
                               self.history, self.agent.tool_search_threshold,
                               forced=provider.forced_tool)
        tools, system, fixed = self._fixed_part(shown)
        sent = self._trimmer.trim(self._sent_history(), budget_tokens=self._input_budget(),
                                  fixed_tokens=fixed)
        params = provider.request_params(system=system, tools=tools,
                                         messages=with_cache_breakpoint(sent.messages),
                                         first_round=self.state.rounds == 0)
        return params, sent.trimmed, sent.tokens

    def _fixed_part(self, shown: Sequence[str]) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]], int]:
        """The request's tools and system prompt, with their cache marks, and their size:
        the same objects every round while the tools on offer are the same (measured, and
        scrubbed by the provider, once)."""
        registry = self.agent.registry
        key = (registry.version, tuple(shown))
        if self._fixed is None or self._fixed[0] != key:
            tools = cached_tools(registry.schemas(shown))
            system = cached_system(system_prompt(self.workspace, self.agent.system_extra))
            self._fixed = (key, tools, system, estimate_tokens(tools) + estimate_tokens(system))
        return self._fixed[1], self._fixed[2], self._fixed[3]

    def _store_full(self, call_id: str, text: str) -> str | None:
        """Where a trimmed result's full output is: the file it was externalized to, else
        the file it is now written to, in a thread (the request goes out meanwhile; no tool
        runs before the file is there: `_outputs_written`). The thread is given the write
        by a task, which runs once the loop has control again: when the request is sent
        and waits for the server, not while the SDK builds it (a thread started then would
        take the interpreter's lock from that building, over and over)."""
        stored = self.results.get(call_id) if _safe_id(call_id) else None
        if stored is not None and stored.externalized_path:
            return stored.externalized_path
        if call_id in self._unwritten:  # it failed in a thread: tried again, and waited for
            try:
                preview = self.outputs.externalize(call_id, text, 0)
            except (OSError, UnsafeIdentifier):
                return None
            self._unwritten.discard(call_id)
            return str(preview.path) if preview.path is not None else None
        try:
            path = self.outputs.path_for(call_id)
        except UnsafeIdentifier:
            return None
        self._writing.append((call_id, path, asyncio.ensure_future(
            asyncio.to_thread(self.outputs.externalize, call_id, text, 0))))
        return str(path)

    async def _outputs_written(self) -> None:
        """Wait for the full outputs being written for trimmed results: before the tools
        of a turn run (a tool the model calls may read them) and before the run ends.
        One that could not be written is an `error` event (code `output_not_stored`) and is
        pointed to no more: the next request has the result itself, unless writing it
        again works (the request that went out with its pointer is answered with
        read_tool_output finding nothing, if the model asks for it). A write stays listed
        until it is awaited to its end (a cancelled wait leaves it for the run's end)."""
        while self._writing:
            call_id, path, write = self._writing[0]
            try:
                await asyncio.shield(write)
                error: Exception | None = None
            except Exception as exc:
                error = exc
            del self._writing[0]
            if error is not None:
                log.warning("the full output of %s could not be stored: %s", call_id, error)
                self._unwritten.add(call_id)
                self._trimmer.unlocated(call_id)
                self.emit(ErrorEvent(self.session_id, "output_not_stored", (
                    f"The full output of tool call {call_id} could not be saved to {path} "
                    f"({_reason(error)}). A request that left that result out to save room "
                    f"pointed the model to this file, so reading it again there finds "
                    f"nothing; the result itself is kept in the session and sent in full "
                    f"in the next requests.")))

    # ---- bookkeeping --------------------------------------------------------------------

    def _cost(self) -> float | None:
        return cost_usd(self.state.usage, self.agent.price)

    def _elapsed(self) -> float:
        return self.agent.clock() - self.started

    def _save_progress(self, trace: Mapping[str, Any]) -> None:
        self._track(self.store.submit_trace(self.session_id, trace))
        self._track(self.store.submit_run_state(self.session_id, RunState.RUNNING,
                                                self.state.to_info(self._cost(),
                                                                   self._elapsed())))

    def _finish(self, reason: StopReason) -> RunFinished:
        cost = self._cost()
        finished = RunFinished(self.session_id, stop_reason=reason.value,
                               rounds=self.state.rounds, usage=dict(self.state.usage),
                               cost_usd=round(cost or 0.0, 6),
                               empty_answer=reason is StopReason.END_TURN and self.empty_answer,
                               context_tokens=self.context_tokens,
                               context_window=self.agent.provider.context_window)
        self._track(self.store.submit_run_state(self.session_id, RunState.FINISHED,
                                                self.state.to_info(cost, self._elapsed(),
                                                                   reason.value)))
        self.emit(finished)
        return finished


class _Observer:
    """Turns the dispatcher's notifications into stored, reported events."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        self._run.call_started(call, spec)

    def progress(self, progress: Progress) -> None:
        self._run.emit(ToolProgress(self._run.session_id, call_id=progress.call_id,
                                    bytes_so_far=progress.bytes_so_far,
                                    last_line=progress.last_line,
                                    elapsed_s=progress.elapsed_s,
                                    output_path=progress.output_path))

    def call_finished(self, call: ToolCall, result: ToolResult) -> None:
        self._run._report_result(call, result)


class _Collector:
    """Streams deltas out and stores each finished text block as AssistantText."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._partial: list[str] = []
        self.texts: list[str] = []
        self._usage: dict[str, int] = {}
        self._streamed_chars = 0
        self.started = False
        """The answer began (usage or content arrived)."""
        self.callbacks = TurnCallbacks(on_text=self._on_text, on_block=self._on_block,
                                       on_retry=self._on_retry, on_wait=self._on_wait,
                                       on_usage=self._on_usage)

    def used(self) -> dict[str, int]:
        """What the turn used so far: the usage the stream reported, its output at least the
        estimate of what streamed (a server reports output tokens only at the end)."""
        streamed = math.ceil(self._streamed_chars / CHARS_PER_TOKEN)
        output = max(self._usage.get("output_tokens", 0), streamed)
        return {**self._usage, "output_tokens": output}

    def _on_usage(self, usage: Mapping[str, int]) -> None:
        self.started = True
        self._usage = dict(usage)

    def _on_text(self, text: str) -> None:
        self.started = True
        self._streamed_chars += len(text)
        self._partial.append(text)
        self._run.emit(AssistantDelta(self._run.session_id, text))

    def _on_block(self, block: Mapping[str, Any]) -> None:
        self.started = True
        if block.get("type") != "text":
            self._streamed_chars += len(json.dumps(block, ensure_ascii=False))
        self._partial.clear()
        if block.get("type") == "text" and block.get("text"):
            self.texts.append(str(block["text"]))
            self._run.emit(AssistantText(self._run.session_id, str(block["text"])))

    def _on_retry(self, notice: RetryNotice) -> None:
        """A failed attempt is sent again: what it showed is void (said in the event)."""
        self._partial.clear()
        self.texts.clear()
        self._usage.clear()
        self._streamed_chars = 0
        self._run.emit(ModelRetry(self._run.session_id, attempt=notice.attempt, of=notice.of,
                                  delay_s=round(notice.delay_s, 3), reason=notice.reason,
                                  discarded=notice.discarded))

    def _on_wait(self, waited_s: float) -> None:
        self._run.emit(ModelWaiting(self._run.session_id, waited_s=round(waited_s, 1),
                                    timeout_s=self._run.agent.provider.read_timeout_s))

    def keep_partial(self, *, in_history: bool) -> None:
        """The turn broke off: keep the text that was shown (and, on cancel, in history)."""
        partial = "".join(self._partial)
        self._partial.clear()
        if partial:
            self._run.emit(AssistantText(self._run.session_id, partial))
            self.texts.append(partial)
        last_role = self._run.history[-1]["role"] if self._run.history else "user"
        if in_history and self.texts and last_role == "user":
            text = "\n\n".join(self.texts).rstrip()
            if text:
                self._run._append_message(
                    {"role": "assistant", "content": [{"type": "text", "text": text}]})


_SUPERSEDED_CALL = {
    "edit": "The message this call answered was edited and sent again; the call was not run.",
    "regenerate": "The answer this call was part of was asked for again; the call was not run.",
}
"""The decision that closes a pending approval of a call an edit or regeneration removed."""


def _in_turns(calls: Sequence[ToolCall], refused: Mapping[str, Any]
              ) -> list[tuple[list[ToolCall], ToolCall | None]]:
    """The calls in the order the model made them, as steps (the calls to run, then the
    refused call after them): each refused call is recorded after the calls before it ran,
    never ahead of them."""
    steps: list[tuple[list[ToolCall], ToolCall | None]] = []
    run: list[ToolCall] = []
    for call in calls:
        if call.call_id in refused:
            steps.append((run, call))
            run = []
        else:
            run.append(call)
    if run:
        steps.append((run, None))
    return steps


def _call_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ids of the tool calls in these messages."""
    return {str(b.get("id")) for m in messages if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, Mapping) and b.get("type") == "tool_use"}


def _tool_result_block(call_id: str, result: ToolResult) -> dict[str, Any]:
    content: Any = result.content if isinstance(result.content, str) else [
        dict(b) for b in result.content]
    return {"type": "tool_result", "tool_use_id": call_id, "content": content,
            "is_error": result.is_error}


def _summary(spec: ToolSpec | None, args: Any) -> str:
    if spec is None or not isinstance(args, dict):
        return ""
    try:
        return str(spec.summarize(args))[:200]
    except Exception:
        return ""


def _reason(error: BaseException) -> str:
    """Why a write failed, in words: the system's reason and the path it names."""
    if isinstance(error, OSError) and error.strerror:
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror}{where}"
    return f"{type(error).__name__}: {error}"


def _safe_id(call_id: Any) -> bool:
    try:
        check_call_id(call_id)
    except UnsafeIdentifier:
        return False
    return True


def _why_unanswered(past: Sequence[Event]) -> str:
    """Why the last run left its prompt without an answer, in words for the model."""
    for event in reversed(past):
        if isinstance(event, ErrorEvent):
            return f"the request failed ({event.code})"
        if isinstance(event, RunFinished) and event.stop_reason != StopReason.ERROR.value:
            if event.stop_reason == StopReason.CANCELLED.value:
                return "the user stopped the run before it was answered"
            return f"the run ended first ({event.stop_reason})"
        if isinstance(event, UserMessage):
            break
    return "the run ended before it was answered"


def _title_from(prompt: str) -> str:
    line = " ".join(prompt.split())
    return line if len(line) <= 60 else line[:59] + "…"
