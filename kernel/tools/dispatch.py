"""Dispatch: every tool call ends as a ToolResult, never as an exception.

One call goes through, in this order (each failure is an error result with a stable code):

1. the call id is checked (`invalid_arguments`; it is never used in a path otherwise);
2. a call id already executed in this session returns its stored result (idempotency);
3. lookup (`unknown_tool`, naming the available tools and the closest match);
4. argument validation against the spec's compiled schema (`invalid_arguments`, every bad
   field with its JSON path, what was expected and what was received);
5. the gate (`permission_denied` / `approval_denied` / `approval_unavailable`);
6. execution under the spec's timeout (`timeout`), exceptions → `execution_error` (or the
   ToolError's own code); ToolError(retryable=True) is retried with exponential backoff and
   jitter up to `spec.retries` times, nothing else is retried;
7. output longer than `spec.output_limit` is externalized through the OutputStore.

Sync handlers run in a worker thread (the event loop never blocks); async handlers run in
the loop. A thread cannot be killed, so a timed-out or cancelled sync handler is stopped
cooperatively: its ToolContext's `stop` is set and its loops (`check_stop()`) end the
thread. The timeout text says "was stopped" only when the thread ended within
STOP_GRACE_S; a handler without a ToolContext (it cannot be told) finishes on its own and
its result is dropped, which its text tells the model.

Observer: `call_started`/`call_finished` for every call that runs (also for unknown tools
and bad ids); a replayed (idempotent) result is returned without notifications.

Cancellation: when the task awaiting `dispatch` or `dispatch_many` is cancelled, every call
that had not finished gets a `cancelled` result, which is stored in the ResultLog and sent
to `observer.call_finished`, and then CancelledError is re-raised so cancellation keeps
its normal asyncio meaning. A caller that must answer every tool_use after a cancel reads
the results back with `Dispatcher.stored(call_id)`. After `suspend()` (the app is quitting
and the run is to be resumed later) a cancelled call that had not started executing — one
waiting for its approval, or not reached — gets no result: on resume it is dispatched
again, and its approval is asked again; a call that was executing still gets its
`cancelled` result (its effects may be partial).

Stopping one call: `cancel_call(call_id)` cancels the task awaiting that call's `dispatch`
(while a call is in flight, that task is inside it: `dispatch_many` gives each parallel call
a task of its own and awaits a lone call directly); `dispatch` catches that one cancellation,
takes it back (`Task.uncancel`) and returns a `cancelled` result — stored and reported like
any other — so the caller and every other call of the batch go on. If the caller was also
cancelled for another reason, the usual cancellation above applies. A call stopped while it
waits for approval was not run; a call stopped while executing may have had partial effects
(an async handler is cancelled, so a command's whole process tree is ended; a sync handler
is told to stop through its ToolContext, and one without a ToolContext finishes in the
background with its result dropped). Each result's text says which.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kernel.paths import UnsafeIdentifier, check_call_id
from kernel.tools.compose import (
    Composite,
    StepArgsError,
    StepRun,
    child_id,
    composite_summary,
    fallback_summary,
)
from kernel.tools.externalize import OutputStore, encode_text
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import RegisteredTool, ToolRegistry
from kernel.tools.spec import (
    Content,
    ErrorCode,
    Progress,
    Review,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
    WriteRule,
)
from kernel.transaction.checkpoints import Checkpoints

log = logging.getLogger(__name__)

RETRY_BASE_S = 0.25
RETRY_MAX_S = 8.0
STOP_GRACE_S = 0.5
"""How long a timed-out sync handler's thread gets to notice its stop before the result
says it may still be running."""
_MAX_SHOWN = 200
_BLOCK_TYPES = frozenset({"text", "image", "document"})


@dataclass(frozen=True)
class GateOutcome:
    """The gate's answer for one call."""

    allowed: bool
    error_code: ErrorCode | None = None
    message: str = ""
    network: bool = False
    user_approved: bool = False
    extra_paths: tuple[Path, ...] = ()
    review_all: bool = False
    """The user chose Run and review: every change the call makes is shown to them and
    applied only if they keep it (ToolContext.review_all)."""


ALLOWED = GateOutcome(allowed=True)


class Gate(Protocol):
    async def authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any]
    ) -> GateOutcome: ...


def _no_rule(_path: Path) -> WriteRule | None:
    return None


@runtime_checkable
class Reviewer(Protocol):
    """A gate that can also ask the user about changes a call made that are held for them
    (kernel.transaction.judge). A gate that cannot keeps nothing held."""

    async def review(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                     held: Review) -> bool: ...


@runtime_checkable
class WriteRules(Protocol):
    """A gate that knows the user's rules for writing a path (a command's changes are
    judged by them as the file tools' writes are)."""

    def write_rule(self, path: Path) -> WriteRule | None: ...


@dataclass(frozen=True)
class PlannedStep:
    """One step of a composite call as its approval shows it, before anything runs."""

    index: int
    """Its place in the pipeline, from 0."""
    call: ToolCall
    """The step's call (its id, tool and parent); its input is the arguments when `known`,
    else {}."""
    spec: ToolSpec | None
    """The step's tool (None: not registered any more; the step then fails as unknown)."""
    known: bool
    """Its arguments come from the composite call's input and constants only, so they are
    known (and shown) before the first step runs."""
    shown: Mapping[str, str]
    """Where each argument comes from (`path ← /input/path`, or a constant)."""


@runtime_checkable
class PlanGate(Protocol):
    """A gate that can decide a composite call as one: every step's verdict, one approval
    listing every step. A gate without it refuses composites (fail closed)."""

    async def authorize_plan(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                             plan: Sequence[PlannedStep]) -> GateOutcome: ...


class AllowAll:
    """The gate that allows every call (path confinement is still enforced by PathPolicy)."""

    async def authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any]
    ) -> GateOutcome:
        return ALLOWED


class DispatchObserver(Protocol):
    """Told about each call; always called on the event loop thread."""

    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None: ...
    def progress(self, progress: Progress) -> None: ...
    def call_finished(self, call: ToolCall, result: ToolResult) -> None: ...


class NullObserver:
    def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
        return None

    def progress(self, progress: Progress) -> None:
        return None

    def call_finished(self, call: ToolCall, result: ToolResult) -> None:
        return None


class ResultLog(Protocol):
    """Results of calls already executed in the session (idempotency)."""

    def get(self, call_id: str) -> ToolResult | None: ...
    def put(self, result: ToolResult) -> None: ...


class MemoryResultLog:
    def __init__(self) -> None:
        self._results: dict[str, ToolResult] = {}

    def get(self, call_id: str) -> ToolResult | None:
        return self._results.get(call_id)

    def put(self, result: ToolResult) -> None:
        self._results[result.call_id] = result


def _in_thread(handler: Any, kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    """Run a sync handler in a worker thread; the Future is shielded by the caller, so the
    thread's outcome is collected even after nobody waits for it any more."""
    work = asyncio.ensure_future(asyncio.to_thread(handler, **kwargs))
    work.add_done_callback(lambda f: f.cancelled() or f.exception())
    return work


async def _ended(work: asyncio.Future[Any]) -> bool:
    """Whether a stopped sync handler's thread ended within STOP_GRACE_S."""
    await asyncio.wait({work}, timeout=STOP_GRACE_S)
    return work.done()


def _short(value: Any, limit: int = 120) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_id_text(call: ToolCall) -> str:
    return call.call_id if isinstance(call.call_id, str) else repr(call.call_id)


def error_result(
    call_id: str, code: ErrorCode, message: str, *, duration_ms: float = 0.0
) -> ToolResult:
    """An error result; `message` should say what happened, why, and how to fix it."""
    return ToolResult(
        call_id=call_id,
        content=message,
        is_error=True,
        error_code=code,
        duration_ms=duration_ms,
        output_bytes=len(message.encode("utf-8", "replace")),
    )


def describe_validation_errors(tool_name: str, errors: list[Any]) -> str:
    """One line per bad field: JSON path, what was expected, what was received."""
    lines = [f"Invalid arguments for tool {tool_name!r}:"]
    for err in sorted(errors, key=lambda e: (e.json_path, e.validator)):
        if err.validator == "required":
            expected = "a required property that is missing"
        elif err.validator == "additionalProperties":
            expected = "only the properties declared in the schema"
        else:
            expected = f"{err.validator} {_short(err.validator_value, 80)}"
        lines.append(
            f"- at {err.json_path}: {err.message} (expected {expected}; "
            f"received {_short(err.instance)})"
        )
    lines.append("Fix these fields and call the tool again with arguments matching its schema.")
    return "\n".join(lines)


def _normalize(value: Any) -> Content:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(b, Mapping) and b.get("type") in _BLOCK_TYPES for b in value)
    ):
        return tuple(value)
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


Admit = Callable[[ToolCall], "ToolResult | None"]
"""Whether a call Reins makes for another may run: None, or the result that refuses it."""


class Dispatcher:
    """Runs tool calls for one session; nothing raised by a tool reaches the caller."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        session_id: str,
        workspace: Path,
        outputs: OutputStore,
        path_policy: PathPolicy,
        gate: Gate | None = None,
        observer: DispatchObserver | None = None,
        results: ResultLog | None = None,
        max_parallel: int = 4,
        retry_base_s: float = RETRY_BASE_S,
        checkpoints: Checkpoints | None = None,
        admit: Admit = lambda _call: None,
    ) -> None:
        """`admit`: asked before each call Reins makes for another (a composite's step, a
        fallback) whether it may run, as the caller asks of the model's own calls (its rate
        limits): a result refuses it, and is that call's result."""
        if max_parallel < 1:
            raise ValueError(f"max_parallel must be ≥ 1, got {max_parallel}")
        self.registry = registry
        self.session_id = session_id
        self.workspace = workspace
        self.outputs = outputs
        self.path_policy = path_policy
        self.gate: Gate = gate if gate is not None else AllowAll()
        self.observer: DispatchObserver = observer if observer is not None else NullObserver()
        self.results: ResultLog = results if results is not None else MemoryResultLog()
        self.max_parallel = max_parallel
        self.checkpoints = checkpoints
        self.retry_base_s = retry_base_s
        self.admit = admit
        self._inflight: dict[str, asyncio.Future[ToolResult]] = {}
        self._owners: dict[str, asyncio.Task[Any]] = {}
        self._executing: set[str] = set()
        self._stopping: set[str] = set()
        self._suspending = False

    # -- public ----------------------------------------------------------------------------

    def stored(self, call_id: str) -> ToolResult | None:
        """The stored result of a call already finished (or cancelled) in this session."""
        try:
            return self.results.get(call_id)
        except Exception:
            log.exception("result log failed to read %r", call_id)
            return None

    def running(self, call_id: str) -> bool:
        """True while the call's pipeline (approval or execution) has not finished."""
        return call_id in self._owners

    def suspend(self) -> None:
        """The caller is about to be cancelled to be resumed later: calls that had not
        started executing are left without a result (see the module docstring)."""
        self._suspending = True

    def cancel_call(self, call_id: str) -> bool:
        """Stop one call now; it ends as a `cancelled` result and the caller goes on.
        False when no such call is running (never started, or already finished)."""
        owner = self._owners.get(call_id)
        if owner is None or owner.done() or call_id in self._stopping:
            return False
        self._stopping.add(call_id)
        owner.cancel()
        return True

    async def dispatch(self, call: ToolCall) -> ToolResult:
        """Run one call; always returns a ToolResult (CancelledError is re-raised, see above)."""
        try:
            check_call_id(call.call_id)
        except UnsafeIdentifier:
            result = error_result(
                _call_id_text(call),
                ErrorCode.INVALID_ARGUMENTS,
                f"The tool call id {_short(call.call_id, 60)} is not valid: ids must be 1-128 "
                f"letters, digits, '_' or '-'. The call was not run; issue it again with a "
                f"new id.",
            )
            self._notify("call_started", call, None)
            self._notify("call_finished", call, result)
            return result
        previous = self.stored(call.call_id)
        if previous is not None:
            return previous
        running = self._inflight.get(call.call_id)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._inflight[call.call_id] = future
        started = time.perf_counter()
        entry = self.registry.entry(call.name) if isinstance(call.name, str) else None
        self._notify("call_started", call, entry.spec if entry else None)
        owner = asyncio.current_task()
        if owner is not None:
            self._owners[call.call_id] = owner
        try:
            result = await self._run(call, entry, started)
        except asyncio.CancelledError:
            if call.call_id in self._stopping and owner is not None and owner.uncancel() == 0:
                result = self._output_so_far(self._stopped_result(call, started))
                self._finish(call, result, future)
                return result
            if self._suspending and call.call_id not in self._executing:
                self._inflight.pop(call.call_id, None)
                self._owners.pop(call.call_id, None)
                future.cancel()
                raise
            result = self._output_so_far(error_result(
                call.call_id,
                ErrorCode.CANCELLED,
                f"The call to {call.name!r} was cancelled by the user before it finished; "
                f"its effects, if any, may be partial. Ask the user before running it again.",
                duration_ms=(time.perf_counter() - started) * 1000,
            ))
            self._finish(call, result, future)
            raise
        except BaseException as exc:  # a bug in the pipeline itself: still a result
            log.exception("dispatch pipeline failed for %s", call.call_id)
            result = error_result(
                call.call_id,
                ErrorCode.EXECUTION_ERROR,
                f"Reins failed internally while running {call.name!r} "
                f"({type(exc).__name__}: {exc}). This is not caused by the arguments; "
                f"try again or tell the user.",
                duration_ms=(time.perf_counter() - started) * 1000,
            )
            if not isinstance(exc, Exception):
                self._finish(call, result, future)
                raise
        if call.call_id in self._stopping and owner is not None:
            owner.uncancel()  # the handler swallowed the stop and finished: keep its result
        self._finish(call, result, future)
        return result

    async def dispatch_many(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run a batch in the model's order: consecutive concurrency-safe calls in parallel
        (at most `max_parallel` at once), every other call alone. Results come back in call
        order, each bound to its own call id; one failing call never drops the others."""
        results: list[ToolResult | None] = [None] * len(calls)
        semaphore = asyncio.Semaphore(self.max_parallel)

        async def run_one(index: int) -> None:
            async with semaphore:
                results[index] = await self.dispatch(calls[index])

        index = 0
        try:
            while index < len(calls):
                group = [index]
                if self._is_concurrent_safe(calls[index]):
                    while index + len(group) < len(calls) and self._is_concurrent_safe(
                        calls[index + len(group)]
                    ):
                        group.append(index + len(group))
                if len(group) == 1:
                    results[index] = await self.dispatch(calls[index])
                else:
                    tasks = [asyncio.ensure_future(run_one(i)) for i in group]
                    try:
                        await asyncio.gather(*tasks)
                    except asyncio.CancelledError:
                        for task in tasks:
                            task.cancel()
                        await asyncio.gather(*tasks, return_exceptions=True)
                        raise
                index += len(group)
        except asyncio.CancelledError:
            self._cancel_rest(calls, results)
            raise
        return [r for r in results if r is not None]

    # -- internals -------------------------------------------------------------------------

    def _is_concurrent_safe(self, call: ToolCall) -> bool:
        entry = self.registry.entry(call.name) if isinstance(call.name, str) else None
        return entry is None or entry.spec.concurrent_safe

    def _cancel_rest(self, calls: Sequence[ToolCall], results: list[ToolResult | None]) -> None:
        if self._suspending:
            return
        for call, result in zip(calls, results, strict=True):
            if result is not None or not isinstance(call.call_id, str):
                continue
            try:
                check_call_id(call.call_id)
            except UnsafeIdentifier:
                continue
            if self.stored(call.call_id) is not None:
                continue
            skipped = error_result(
                call.call_id,
                ErrorCode.CANCELLED,
                f"The call to {call.name!r} was not started because the user cancelled the "
                f"run. Ask the user before running it.",
            )
            self._store(skipped)
            self._notify("call_finished", call, skipped)

    def _output_so_far(self, result: ToolResult) -> ToolResult:
        """A stopped call keeps what it printed: its spool file (a command streams its
        output there as it runs) becomes the result's full output, so the user can still
        open it; a call that printed nothing keeps none."""
        try:
            path = self.outputs.path_for(result.call_id)
            size = path.stat().st_size
        except (OSError, UnsafeIdentifier):
            return result
        if size == 0:
            return result
        return replace(result, externalized_path=str(path), output_bytes=size)

    def _stopped_result(self, call: ToolCall, started: float) -> ToolResult:
        entry = self.registry.entry(call.name) if isinstance(call.name, str) else None
        if (call.call_id in self._executing and entry is not None and not entry.is_async
                and entry.context_param is None and entry.composite is None):
            what = (
                f"The user stopped the call to {call.name!r} while it was running; Reins "
                f"stopped waiting for it, but it may still finish in the background, so "
                f"check its effects before relying on them."
            )
        elif call.call_id in self._executing:
            what = (
                f"The user stopped the call to {call.name!r} while it was running, so it did "
                f"not finish (a command is ended with every process it started); its "
                f"effects, if any, may be partial."
            )
        else:
            what = (
                f"The user stopped the call to {call.name!r} before it was approved, so it "
                f"was not run."
            )
        return error_result(
            call.call_id,
            ErrorCode.CANCELLED,
            f"{what} The rest of the run goes on: continue without this result, and do not "
            f"run the call again unless the user asks for it.",
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def _finish(
        self, call: ToolCall, result: ToolResult, future: asyncio.Future[ToolResult]
    ) -> None:
        self._store(result)
        self._inflight.pop(call.call_id, None)
        self._owners.pop(call.call_id, None)
        self._executing.discard(call.call_id)
        self._stopping.discard(call.call_id)
        if not future.done():
            future.set_result(result)
        self._notify("call_finished", call, result)

    def _store(self, result: ToolResult) -> None:
        try:
            self.results.put(result)
        except Exception:
            log.exception("result log failed to store %s", result.call_id)

    def _notify(self, method: str, *args: Any) -> None:
        try:
            getattr(self.observer, method)(*args)
        except Exception:
            log.exception("dispatch observer %s failed", method)

    async def _run(
        self, call: ToolCall, entry: RegisteredTool | None, started: float
    ) -> ToolResult:
        def elapsed() -> float:
            return (time.perf_counter() - started) * 1000

        if entry is None:
            return error_result(
                call.call_id,
                ErrorCode.UNKNOWN_TOOL,
                self._unknown_message(call.name),
                duration_ms=elapsed(),
            )
        spec = entry.spec
        args = call.input
        if not isinstance(args, dict):
            return error_result(
                call.call_id,
                ErrorCode.INVALID_ARGUMENTS,
                f"Invalid arguments for tool {spec.name!r}: the input must be a JSON object, "
                f"received {type(args).__name__} {_short(args)}. Call it again with an object "
                f"whose fields match the tool's schema.",
                duration_ms=elapsed(),
            )
        errors = [] if entry.is_valid(args) else list(entry.validator.iter_errors(args))
        if errors:
            return error_result(
                call.call_id,
                ErrorCode.INVALID_ARGUMENTS,
                describe_validation_errors(spec.name, errors),
                duration_ms=elapsed(),
            )
        if entry.composite is not None:
            plan = self._plan(call, entry.composite, args)
            outcome = await self._authorize(spec, call, args, plan)
        else:
            outcome = await self._authorize(spec, call, args)
        if not outcome.allowed:
            code = outcome.error_code or ErrorCode.PERMISSION_DENIED
            message = outcome.message or (
                f"The call to {spec.name!r} was not allowed by the permission policy. "
                f"Do something else, or ask the user to allow it."
            )
            return error_result(call.call_id, code, message, duration_ms=elapsed())
        self._executing.add(call.call_id)
        if entry.composite is not None:
            result = await self._run_steps(call, spec, entry.composite, args, started)
        else:
            kwargs = dict(args)
            if entry.context_param is not None:
                kwargs[entry.context_param] = self._context(spec, call, args, outcome)
            result = await self._execute(call, entry, kwargs, started)
        fallback = self.registry.fallback(spec.name)
        if fallback is None or result.error_code not in fallback.on:
            return result
        child = ToolCall(child_id(call.call_id, "fallback"), fallback.to, args, call.call_id)
        taken = await self._dispatch_child(child)
        text = fallback_summary(spec.name, str(result.error_code), result.text, fallback.to,
                                taken.text)
        return self._limited(call, spec, text, taken.is_error, taken.error_code, started)

    async def _dispatch_child(self, child: ToolCall) -> ToolResult:
        """A call Reins makes for another, run as any call once `admit` lets it (a refused
        one is started and finished with the refusal as its result, so it is on record)."""
        stored = self.stored(child.call_id)
        if stored is not None:  # (a run resumed: the step ran, or was refused, before)
            return stored
        refused = self.admit(child)
        if refused is None:
            return await self.dispatch(child)
        self._notify("call_started", child, None)
        self._store(refused)
        self._notify("call_finished", child, refused)
        return refused

    def _plan(self, call: ToolCall, composite: Composite, args: Mapping[str, Any]
              ) -> list[PlannedStep]:
        """The steps of a composite call as they will be asked about: each one's call, tool
        and, when its arguments do not wait for an earlier step, those arguments."""
        plan = []
        for i, step in enumerate(composite.steps):
            known = not step.needs_results
            try:
                step_args = step.arguments(args, ()) if known else {}
            except StepArgsError:
                known, step_args = False, {}
            plan.append(PlannedStep(
                i, ToolCall(child_id(call.call_id, f"step{i + 1}"), step.tool, step_args,
                         call.call_id),
                self.registry.get(step.tool), known, step.shown()))
        return plan

    async def _run_steps(self, call: ToolCall, spec: ToolSpec, composite: Composite,
                         args: Mapping[str, Any], started: float) -> ToolResult:
        """Run a composite call's steps in order, each a call of its own through `dispatch`
        (so each is validated, decided by the gate, run, externalized and reported as a
        child of `call`); the first that fails ends the pipeline. One result says how each
        step went."""
        runs: list[StepRun] = []
        texts: list[str] = []
        failed: ToolResult | None = None
        for i, step in enumerate(composite.steps):
            step_id = child_id(call.call_id, f"step{i + 1}")
            try:
                step_args = step.arguments(args, texts)
            except StepArgsError as exc:
                failed = error_result(step_id, ErrorCode.INVALID_ARGUMENTS, (
                    f"The arguments of step {i + 1} ({step.tool}) could not be made: {exc}."))
                runs.append(StepRun(i, step.tool, step_id, failed.text,
                                    ErrorCode.INVALID_ARGUMENTS.value, ran=False))
                break
            result = await self._dispatch_child(
                ToolCall(step_id, step.tool, step_args, call.call_id))
            code = result.error_code.value if result.error_code else None
            runs.append(StepRun(i, step.tool, step_id, result.text, code))
            if result.is_error:
                failed = result
                break
            texts.append(result.text)
        text = composite_summary(spec.name, runs, len(composite.steps))
        return self._limited(call, spec, text, failed is not None,
                             (failed.error_code or ErrorCode.EXECUTION_ERROR) if failed else None,
                             started)

    def _unknown_message(self, name: Any) -> str:
        names = sorted(self.registry.names())
        close = difflib.get_close_matches(name, names, n=1) if isinstance(name, str) else []
        suggestion = f" Did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(names[:_MAX_SHOWN]) or "(none)"
        return (
            f"There is no tool named {_short(name, 80)}, so nothing was run.{suggestion} "
            f"Call one of the available tools: {shown}."
        )

    async def _authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
        plan: Sequence[PlannedStep] | None = None,
    ) -> GateOutcome:
        if isinstance(self.gate, AllowAll):
            return ALLOWED
        if plan is not None and not isinstance(self.gate, PlanGate):
            return GateOutcome(
                allowed=False,
                error_code=ErrorCode.APPROVAL_UNAVAILABLE,
                message=f"The composite {spec.name!r} was not run: this session's permission "
                        f"check cannot approve a composite tool. Call its steps one by one.",
            )
        try:
            if plan is not None and isinstance(self.gate, PlanGate):
                outcome = await self.gate.authorize_plan(spec, call, args, plan)
            else:
                outcome = await self.gate.authorize(spec, call, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("gate failed for %s", call.call_id)
            return GateOutcome(
                allowed=False,
                error_code=ErrorCode.APPROVAL_UNAVAILABLE,
                message=(
                    f"The call to {spec.name!r} was not run because the permission check "
                    f"failed ({type(exc).__name__}: {exc}). Reins refuses when it cannot "
                    f"check; tell the user."
                ),
            )
        if not isinstance(outcome, GateOutcome):
            return GateOutcome(
                allowed=False,
                error_code=ErrorCode.APPROVAL_UNAVAILABLE,
                message=f"The permission check for {spec.name!r} gave no answer; not run.",
            )
        return outcome

    def _context(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                 outcome: GateOutcome) -> ToolContext:
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        observer_progress = self._notify

        def progress(p: Progress) -> None:
            if threading.get_ident() == loop_thread:
                observer_progress("progress", p)
            else:
                loop.call_soon_threadsafe(observer_progress, "progress", p)

        policy = self.path_policy.allowing(outcome.extra_paths)
        gate = self.gate

        async def review(held: Review) -> bool:
            return isinstance(gate, Reviewer) and await gate.review(spec, call, args, held)

        return ToolContext(
            session_id=self.session_id,
            call_id=call.call_id,
            workspace=self.workspace,
            path_policy=policy,
            outputs=self.outputs,
            progress=progress,
            network=outcome.network,
            user_approved=outcome.user_approved,
            review=review,
            review_all=outcome.review_all,
            write_rule=gate.write_rule if isinstance(gate, WriteRules) else _no_rule,
            checkpoints=self.checkpoints,
        )

    async def _execute(
        self, call: ToolCall, entry: RegisteredTool, kwargs: dict[str, Any], started: float
    ) -> ToolResult:
        spec = entry.spec
        attempt = 0
        ctx = kwargs.get(entry.context_param) if entry.context_param is not None else None
        while True:
            timer = asyncio.timeout(spec.timeout_s)
            work: asyncio.Future[Any] | None = None
            try:
                async with timer:
                    if entry.is_async:
                        value = await spec.handler(**kwargs)
                    else:
                        work = _in_thread(spec.handler, kwargs)
                        try:
                            value = await asyncio.shield(work)
                        except asyncio.CancelledError:
                            if isinstance(ctx, ToolContext):
                                ctx.stop.set()  # its loops end the thread (check_stop)
                            raise
                        if inspect.isawaitable(value):
                            value = await value
                return self._success(call, spec, value, started)
            except TimeoutError as exc:
                if not timer.expired():
                    return self._exception_result(call, spec, exc, started)
                ended = entry.is_async or (work is not None and await _ended(work))
                stopped = (
                    "was stopped"
                    if ended
                    else "Reins stopped waiting for it (it may still finish in the background, "
                    "so check its effects before retrying)"
                )
                return error_result(
                    call.call_id,
                    ErrorCode.TIMEOUT,
                    f"The call to {spec.name!r} did not finish within its {spec.timeout_s:g} s "
                    f"time limit; {stopped}. Try a smaller or more specific request.",
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
            except ToolError as exc:
                if exc.retryable and attempt < spec.retries:
                    delay = min(RETRY_MAX_S, self.retry_base_s * 2**attempt)
                    await asyncio.sleep(delay * random.uniform(0.5, 1.5))
                    attempt += 1
                    continue
                return self._tool_error_result(call, spec, exc, started, attempt)
            except Exception as exc:
                return self._exception_result(call, spec, exc, started)

    def _tool_error_result(
        self, call: ToolCall, spec: ToolSpec, exc: ToolError, started: float, attempt: int
    ) -> ToolResult:
        text = exc.message
        if exc.hint:
            text = f"{text}\n{exc.hint}"
        if attempt:
            text = f"{text}\n(failed {attempt + 1} times; retried {attempt} times)"
        return self._limited(call, spec, text, True, exc.code, started)

    def _exception_result(
        self, call: ToolCall, spec: ToolSpec, exc: BaseException, started: float
    ) -> ToolResult:
        text = (
            f"The tool {spec.name!r} failed with {type(exc).__name__}: {exc}. Check the "
            f"arguments against the error, or try a different approach."
        )
        return self._limited(call, spec, text, True, ErrorCode.EXECUTION_ERROR, started)

    def _success(self, call: ToolCall, spec: ToolSpec, value: Any, started: float) -> ToolResult:
        if isinstance(value, ToolResult):
            return self._from_handler_result(call, spec, value, started)
        content = _normalize(value)
        return self._limited(call, spec, content, False, None, started)

    def _from_handler_result(
        self, call: ToolCall, spec: ToolSpec, value: ToolResult, started: float
    ) -> ToolResult:
        code = value.error_code
        if value.is_error and code is None:
            code = ErrorCode.EXECUTION_ERROR
        if value.externalized_path is not None:
            return ToolResult(
                call_id=call.call_id,
                content=value.content,
                is_error=value.is_error,
                error_code=code if value.is_error else None,
                duration_ms=(time.perf_counter() - started) * 1000,
                output_bytes=value.output_bytes,
                externalized_path=value.externalized_path,
                changes=value.changes,
            )
        limited = self._limited(
            call,
            spec,
            _normalize(value.content),
            value.is_error,
            code if value.is_error else None,
            started,
            reported_bytes=value.output_bytes or None,
        )
        return replace(limited, changes=value.changes) if value.changes else limited

    def _limited(
        self,
        call: ToolCall,
        spec: ToolSpec,
        content: Content,
        is_error: bool,
        code: ErrorCode | None,
        started: float,
        *,
        reported_bytes: int | None = None,
    ) -> ToolResult:
        """The result, externalizing text beyond `spec.output_limit`. `reported_bytes` is a
        size the handler measured itself (e.g. a command's raw output), kept as is."""
        if isinstance(content, str):
            text = content
            others: tuple[Mapping[str, Any], ...] = ()
        else:
            text = "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
            others = tuple(b for b in content if b.get("type") != "text")
        size = len(encode_text(text))
        externalized: str | None = None
        if len(text) > spec.output_limit:
            try:
                preview = self.outputs.externalize(call.call_id, text, spec.output_limit)
                shown = preview.text
                externalized = str(preview.path) if preview.path is not None else None
            except OSError as exc:
                log.exception("could not externalize the output of %s", call.call_id)
                shown = text[: spec.output_limit] + (
                    f"\n[… output cut at {spec.output_limit} characters of {len(text)}; the "
                    f"full output could not be stored ({exc}) …]"
                )
            content = shown if not others else ({"type": "text", "text": shown}, *others)
        return ToolResult(
            call_id=call.call_id,
            content=content,
            is_error=is_error,
            error_code=code,
            duration_ms=(time.perf_counter() - started) * 1000,
            output_bytes=reported_bytes if reported_bytes is not None else size,
            externalized_path=externalized,
        )
