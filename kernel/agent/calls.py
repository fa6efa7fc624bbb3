"""One assistant turn's batch of tool calls: checked for loops and rate limits, dispatched
in the order the model made them (validation, approvals, concurrency and idempotency are
the dispatcher's), each announced and answered once, and all results sent back in one user
turn. Also the calls a run was interrupted in: answered from their stored results or run."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from kernel.agent.history import safe_call_id, tool_calls
from kernel.agent.limits import (
    RateLimiter,
    Repeat,
    RepeatDetector,
    StopReason,
    rate_message,
    repeat_message,
)
from kernel.agent.media import Keep, fit_content
from kernel.agent.run_state import RunCore
from kernel.events import (
    RESULT_PREVIEW_CHARS,
    ApprovalDecision,
    Event,
    ToolCallStarted,
    ToolProgress,
    ToolResultEvent,
)
from kernel.tools.dispatch import Admit, Dispatcher, DispatchObserver, ResultLog, error_result
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ErrorCode, Progress, Risk, ToolCall, ToolResult, ToolSpec


class CallBatch:
    """Runs a session's tool calls for one run; the dispatcher's observer, so every call it
    starts and finishes is a stored, reported event."""

    def __init__(self, core: RunCore, past: Sequence[Event], results: ResultLog,
                 keep_media: Keep, before_dispatch: Callable[[], Awaitable[None]],
                 dispatcher: Callable[[DispatchObserver, Admit], Dispatcher]) -> None:
        """`before_dispatch` is awaited before any tool runs (the full outputs a request
        pointed to are written); `dispatcher` makes the run's dispatcher for this observer,
        which asks `admit_step` before each call it makes for another."""
        self._core = core
        self._results = results
        self._keep_media = keep_media
        self._before_dispatch = before_dispatch
        self._repeats = RepeatDetector(core.setup.limits)
        self._rates = RateLimiter(core.setup.limits.rate_limits)
        self._reported_results = {e.call_id for e in past if isinstance(e, ToolResultEvent)}
        self._reported_calls = {e.call_id for e in past if isinstance(e, ToolCallStarted)}
        self.dispatcher = dispatcher(self, self.admit_step)
        self.replay_repeats()

    def admit_step(self, call: ToolCall) -> ToolResult | None:
        """A call Reins makes for the model's (a composite's step, a fallback) counts toward
        its tool's rate limit as the model's own would: over it, it is refused (its result)."""
        wait = self._rates.check(str(call.name), self._core.setup.clock())
        if wait is None:
            return None
        limit = self._rates.limit_for(str(call.name)) or 0
        return error_result(call.call_id, ErrorCode.RATE_LIMITED,
                            rate_message(str(call.name), limit, wait))

    def replay_repeats(self, *, anew: bool = False) -> None:
        """Count the history's calls for loop detection (`anew`: forgetting those counted,
        after the history was cut)."""
        if anew:
            self._repeats = RepeatDetector(self._core.setup.limits)
        for message in self._core.history.messages:
            if message["role"] == "assistant" and not isinstance(message["content"], str):
                for call in tool_calls(message["content"]):
                    self._repeats.observe(call)

    async def run(self, calls: list[ToolCall], trace: dict[str, Any]) -> StopReason | None:
        """Check, dispatch and answer one assistant turn's calls; a stop reason if any."""
        synthetic: dict[str, ToolResult] = {}
        stop: StopReason | None = None
        now = self._core.setup.clock()
        repeats, rates = self._repeats, self._rates
        for call in calls:
            verdict = repeats.observe(call)
            if verdict is not Repeat.RUN:
                first = self._results.get(repeats.first_call_id or "")
                synthetic[call.call_id] = error_result(
                    call.call_id, ErrorCode.LOOP_DETECTED,
                    repeat_message(str(call.name), repeats.count,
                                   first.text if first else "(no result)",
                                   stopping=verdict is Repeat.STOP))
                if verdict is Repeat.STOP:
                    stop = StopReason.LOOP_DETECTED
                continue
            wait = rates.check(str(call.name), now)
            if wait is not None:
                limit = rates.limit_for(str(call.name)) or 0
                synthetic[call.call_id] = error_result(
                    call.call_id, ErrorCode.RATE_LIMITED, rate_message(str(call.name), limit,
                                                                       wait))
        by_id = dict(synthetic)
        for run, refused in in_turns(calls, synthetic):
            if run:
                await self._before_dispatch()
                by_id.update((r.call_id, r) for r in await self.dispatcher.dispatch_many(run))
            if refused is not None and safe_call_id(refused.call_id):
                self._announce(refused)
                self._results.put(synthetic[refused.call_id])
                self.call_finished(refused, synthetic[refused.call_id])
        self._answer(calls, by_id, trace)
        return stop

    async def settle_pending(self) -> None:
        """Answer the tool calls of an interrupted turn (stored results are reused)."""
        core = self._core
        calls = core.history.pending_calls()
        if not calls:
            return
        for call in calls:
            stored = self._results.get(call.call_id) if safe_call_id(call.call_id) else None
            if stored is not None and call.call_id not in self._reported_results:
                self._announce(call)
                self.call_finished(call, stored)
        trace: dict[str, Any] = {"round": core.counters.rounds - 1, "resumed": True,
                                 "tools": [], "model_tool_calls": [], "answer": ""}
        await self._before_dispatch()
        ran = await self.dispatcher.dispatch_many(calls)
        self._answer(calls, {r.call_id: r for r in ran}, trace)
        core.track(core.store.submit_trace(core.session_id, trace))

    def after_cancel(self) -> None:
        """Leave a valid history after a cancel: every pending call gets its result."""
        calls = self._core.history.pending_calls()
        if calls:
            by_id = {c.call_id: s for c in calls if (s := self.dispatcher.stored(c.call_id))}
            self._answer(calls, by_id, None)

    def cancel_call(self, call_id: str) -> bool:
        """Stop one call; a pending approval request of it is answered, so it closes."""
        if not self.dispatcher.cancel_call(call_id):
            return False
        core = self._core
        if call_id in core.awaiting_approval:
            core.emit(ApprovalDecision(
                core.session_id, call_id=call_id, decision="deny", decided_by="user",
                scope="call", message="The user stopped the call before answering; it was "
                "not run.", decided_at=time.time()))
        return True

    def _answer(self, calls: Sequence[ToolCall], by_id: Mapping[str, ToolResult],
                trace: dict[str, Any] | None) -> None:
        blocks = []
        registry = self._core.setup.registry
        for call in calls:
            result = by_id.get(call.call_id) or error_result(
                call.call_id, ErrorCode.CANCELLED,
                f"The call to {call.name!r} did not run: the run was stopped before it.")
            blocks.append(tool_result_block(call.call_id, result))
            if trace is not None:
                spec = registry.get(call.name) if isinstance(call.name, str) else None
                trace["tools"].append({
                    "call_id": call.call_id, "name": call.name, "input": call.input,
                    "summary": _summary(spec, call.input), "is_error": result.is_error,
                    "error_code": result.error_code.value if result.error_code else None,
                    "duration_ms": round(result.duration_ms, 1),
                    "result": result.text[:200],
                })
        fitted, _ = fit_content(blocks, keep=self._keep_media)
        self._core.history.add_user_blocks([dict(b) for b in fitted])

    def _announce(self, call: ToolCall) -> None:
        if call.call_id in self._reported_calls:
            return
        registry = self._core.setup.registry
        self.call_started(call, registry.get(call.name) if isinstance(call.name, str) else None)

    # ---- the dispatcher's observer --------------------------------------------------

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        self._reported_calls.add(str(call.call_id))
        self._core.emit(ToolCallStarted(
            self._core.session_id, call_id=str(call.call_id), name=str(call.name),
            input=call.input, summary=_summary(spec, call.input),
            risk=spec.shown_risk if spec else Risk.READ, parent_call_id=call.parent_id))

    def progress(self, progress: Progress) -> None:
        self._core.emit(ToolProgress(self._core.session_id, call_id=progress.call_id,
                                     bytes_so_far=progress.bytes_so_far,
                                     last_line=progress.last_line,
                                     elapsed_s=progress.elapsed_s,
                                     output_path=progress.output_path))

    def call_finished(self, call: ToolCall, result: ToolResult) -> None:
        if result.call_id in self._reported_results:
            return
        self._reported_results.add(result.call_id)
        self._core.emit(ToolResultEvent(
            self._core.session_id, call_id=result.call_id, name=str(call.name),
            is_error=result.is_error,
            error_code=result.error_code.value if result.error_code else None,
            duration_ms=round(result.duration_ms, 3), output_bytes=result.output_bytes,
            externalized_path=result.externalized_path,
            preview=result.text[:RESULT_PREVIEW_CHARS],
            changes=[c.to_json() for c in result.changes] if result.changes else [],
            parent_call_id=call.parent_id))


def without_effects(registry: ToolRegistry, calls: Sequence[ToolCall]) -> bool:
    """Every call is to a built-in read-only tool. A call with effects runs only once
    the turn that asked for it is on disk (killed after it ran, a run resumes from that
    turn and its stored result, never asking the model again as if nothing had
    happened); a read changes nothing a crash could lose, so it runs at once, while the
    turn (and what came before it) is being committed: its result is committed after
    them (the store keeps order) and reported only then. A failed commit or sink stops
    the run before the next request but one: each round waits, before it asks, for
    what came before the previous request (a round earlier, so that wait is over
    unless the disk is a whole round behind)."""
    for call in calls:
        spec = registry.get(call.name) if isinstance(call.name, str) else None
        if spec is None or spec.origin != "builtin" or spec.risk is not Risk.READ:
            return False
    return True


def in_turns(calls: Sequence[ToolCall], refused: Mapping[str, Any]
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


def tool_result_block(call_id: str, result: ToolResult) -> dict[str, Any]:
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
