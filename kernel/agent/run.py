"""One run of one session: its parts made (reporter, history, request builder, batch of
calls, gate), then rounds until a stop reason, and its end said the same way whatever it
is: finished, a budget spent, cancelled (every pending call answered), suspended (left
`interrupted`, asked again on resume) or crashed (`error` internal_error, then
`run_finished`; the session is left `interrupted`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kernel.agent.branch import last_prompt, prompt_place
from kernel.agent.calls import CallBatch
from kernel.agent.limits import StopReason, budget_stop
from kernel.agent.media import fit_messages, saver
from kernel.agent.reporter import Reporter, Sink, StoreFailed
from kernel.agent.request import RequestBuilder
from kernel.agent.round import play_round
from kernel.agent.run_state import RunCore, RunSetup, StoredRun
from kernel.agent.store import RunState
from kernel.agent.user_turn import KeptAttachments, add_prompt, branch, why_unanswered
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    ContextCompacted,
    ErrorEvent,
    RunFinished,
    SessionStarted,
    UserMessage,
)
from kernel.policy.decide import Mode
from kernel.policy.gate_context import GateContext
from kernel.shared.attachments import Attachment
from kernel.tools.dispatch import Admit, Dispatcher, DispatchObserver
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy

log = logging.getLogger(__name__)


class Run:
    """One run of one session: its parts made, then rounds until a stop reason."""

    def __init__(self, setup: RunSetup, session_id: str, sink: Sink, stored: StoredRun) -> None:
        self.setup = setup
        store = setup.store
        workspace = Path(stored.session.workspace)
        outputs = OutputStore.for_session(setup.paths, session_id)
        self._keep_media = saver(outputs.root / "media")
        """Where images and documents not sent as they were are kept."""
        links = setup.protected_links
        path_policy = PathPolicy(workspace, app_paths=setup.paths,
                                 links=None if links is None else lambda: links(workspace))
        reporter = Reporter(store, sink)
        results = store.result_log(session_id, pipeline=reporter.track)
        self.core = core = RunCore(setup, session_id, stored, reporter)
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._suspend_requested = False
        past = stored.past
        self._past_prompts = [e for e in past if isinstance(e, UserMessage)]
        self._last_end = why_unanswered(past)
        """Why the previous run ended (for a prompt of it left without an answer)."""
        self._unanswered = ({e.call_id for e in past if isinstance(e, ApprovalRequest)}
                            - {e.call_id for e in past if isinstance(e, ApprovalDecision)})
        """Approval requests without a decision (of a run interrupted while asking)."""
        self._asked: Future[None] | None = None
        """A store barrier taken as the last request was made (`_round`)."""
        self.requests = RequestBuilder(core, past, outputs, results, self._keep_media)
        gate = None
        if setup.gate_factory is not None:
            gate = setup.gate_factory(GateContext(
                core.session.session_id, core.session.mode, path_policy, core.emit,
                core.report, past))

        def dispatcher(observer: DispatchObserver, admit: Admit) -> Dispatcher:
            return Dispatcher(
                setup.registry, session_id=session_id, workspace=workspace,
                outputs=outputs, path_policy=path_policy, gate=gate, observer=observer,
                results=results, max_parallel=setup.max_parallel,
                checkpoints=setup.checkpoints, admit=admit)

        self.calls = CallBatch(core, past, results, self._keep_media,
                               self.requests.outputs_written, dispatcher)
        fitted, changed = fit_messages(core.history.messages, self._keep_media)
        core.history.replace(fitted, changed)  # a stored image the API refuses, made sendable

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
        self.calls.dispatcher.suspend()
        self._task.cancel()
        return True

    def cancel_call(self, call_id: str) -> bool:
        return self.calls.cancel_call(call_id)

    def has_work(self) -> bool:
        history = self.core.history
        if not history.messages:
            return False
        return history.messages[-1]["role"] == "user" or bool(history.pending_calls())

    def check_branch(self) -> None:
        """NothingToChange when there is no last prompt to edit or answer again here."""
        prompt_place(self.core.history.messages, last_prompt(self._past_prompts))

    async def execute(self, prompt: str | None, *, attachments: Sequence[Attachment] = (),
                      branch_reason: str | None = None, keep: Sequence[int] = (),
                      ) -> RunFinished:
        self._task = asyncio.current_task()
        core = self.core
        resuming = core.session.run_state in (RunState.RUNNING, RunState.INTERRUPTED)
        if prompt is None and resuming and branch_reason is None:
            core.resumed()
        try:
            setup = self.setup
            core.emit(SessionStarted(core.session_id, workspace=str(core.workspace),
                                     model=setup.provider.model, sandbox=setup.sandbox,
                                     mode=Mode(core.session.mode)))
            if setup.prepare is not None:
                setup.prepare(core.workspace)
            core.save_state(RunState.RUNNING)
            kept = KeptAttachments()
            if branch_reason is not None:
                kept = branch(core, self._past_prompts, self._unanswered, branch_reason, keep)
                self.requests.history_cut()
                self.calls.replay_repeats(anew=True)
            await self.calls.settle_pending()
            if prompt is not None:
                add_prompt(core, prompt, attachments, kept, self._last_end, self._keep_media)
            stop = await self._loop()
            await self.requests.outputs_written()
            finished = self._finish(stop)
            await core.reporter.flush()
            return finished
        except asyncio.CancelledError:
            with contextlib.suppress(StoreFailed):  # the flush below says so
                await self.requests.outputs_written()
            if self._suspend_requested:
                core.save_state(RunState.INTERRUPTED)
                await core.reporter.flush()
                raise
            self.calls.after_cancel()
            finished = self._finish(StopReason.CANCELLED)
            if self._cancel_requested and self._task is not None:
                self._task.uncancel()
                try:
                    await core.reporter.flush()
                except StoreFailed as exc:
                    return await self._crashed(exc)
                return finished
            await core.reporter.flush()
            raise
        except Exception as exc:
            return await self._crashed(exc)

    async def _crashed(self, exc: Exception) -> RunFinished:
        """End the stream of a run that failed unexpectedly: an `error` event and
        `run_finished`, stored when the store still works, else only reported; only a sink
        that fails cannot be told (then this raises)."""
        core = self.core
        reporter = core.reporter
        log.error("the run of session %s failed", core.session_id, exc_info=exc)
        with contextlib.suppress(StoreFailed):
            await self.requests.outputs_written()
        with contextlib.suppress(StoreFailed):
            await reporter.flush()
        if reporter.sink_failed:
            raise exc
        error = ErrorEvent(core.session_id, "internal_error", (
            f"The run stopped unexpectedly ({type(exc).__name__}: {exc}). Everything done "
            f"before is kept; resume the session to go on."))
        finished = self._finished(StopReason.ERROR)
        if reporter.healthy:
            core.save_state(RunState.INTERRUPTED, StopReason.ERROR.value)
            core.emit(error)
            core.emit(finished)
            with contextlib.suppress(StoreFailed):
                await reporter.flush()
                return finished
        if reporter.sink_failed:
            raise exc
        reporter.report_unstored([error, finished])
        return finished

    async def _loop(self) -> StopReason:
        core = self.core
        limits = self.setup.limits
        while True:
            stop = budget_stop(limits, rounds=core.counters.rounds, usage=core.counters.usage,
                               cost=core.cost(), elapsed_s=core.elapsed())
            if stop is not None:
                return stop
            outcome = await self._timed_round()
            if outcome is not None:
                return outcome

    async def _timed_round(self) -> StopReason | None:
        """One round; the wall-clock budget, when set, interrupts the stream or the tools."""
        if self.setup.limits.max_seconds is None:
            return await self._round()
        remaining = self.setup.limits.max_seconds - self.core.elapsed()
        timer = asyncio.timeout(max(0.0, remaining))
        try:
            async with timer:
                return await self._round()
        except TimeoutError:
            if not timer.expired():
                raise
            self.calls.after_cancel()
            return StopReason.TIME_BUDGET

    async def _round(self) -> StopReason | None:
        """One round, asked once what came before the previous request is reported (a
        failed commit stops the run a round later at most)."""
        if self._asked is not None:
            await self.core.reporter.committed(self._asked)
        self._asked = self.core.store.barrier()
        return await play_round(self.core, self.requests, self.calls)

    async def compact_now(self) -> ContextCompacted | None:
        self._task = asyncio.current_task()
        core = self.core
        compacted = await self.requests.compact("user")
        if compacted is None:
            core.emit(ErrorEvent(core.session_id, "nothing_to_compact", (
                "There is nothing to summarize yet: the session has no earlier turns before "
                "its newest one.")))
        await core.reporter.flush()
        return self.requests.compaction if compacted else None

    def _finished(self, reason: StopReason) -> RunFinished:
        core = self.core
        counters = core.counters
        return RunFinished(core.session_id, stop_reason=reason.value, rounds=counters.rounds,
                           usage=dict(counters.usage), cost_usd=round(core.cost() or 0.0, 6),
                           empty_answer=reason is StopReason.END_TURN and counters.empty_answer,
                           context_tokens=counters.context_tokens,
                           context_window=self.setup.provider.context_window)

    def _finish(self, reason: StopReason) -> RunFinished:
        finished = self._finished(reason)
        self.core.save_state(RunState.FINISHED, reason.value)
        self.core.emit(finished)
        return finished
