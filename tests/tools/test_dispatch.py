"""Dispatcher: every error code, retries, timeouts, cancellation, idempotency, batches."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kernel.tools.dispatch import Dispatcher, GateOutcome, MemoryResultLog
from kernel.tools.schema import tool
from kernel.tools.spec import (
    ErrorCode,
    Progress,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)


@tool(concurrent_safe=True)
def echo(text: str, times: int = 1) -> str:
    """Repeat text."""
    return text * times


@tool
def boom(message: str = "kaput") -> str:
    """Always fails."""
    raise ValueError(message)


class FixedGate:
    def __init__(self, outcome: GateOutcome) -> None:
        self.outcome = outcome
        self.seen: list[tuple[str, Mapping[str, Any]]] = []

    async def authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any]
    ) -> GateOutcome:
        self.seen.append((spec.name, dict(args)))
        return self.outcome


class BrokenGate:
    async def authorize(
        self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any]
    ) -> GateOutcome:
        raise RuntimeError("approval channel closed")


def test_success_result_fields(env: Any, observer: Any) -> None:
    d = env.dispatcher([echo], observer=observer)
    result = env.call(d, "echo", {"text": "ab", "times": 3}, "id-1")
    assert result == ToolResult(
        call_id="id-1",
        content="ababab",
        duration_ms=result.duration_ms,
        output_bytes=6,
    )
    assert result.duration_ms >= 0
    assert observer.started == [("id-1", "echo")]
    assert observer.finished == [result]


def test_unknown_tool_lists_names_and_closest_match(env: Any, observer: Any) -> None:
    d = env.dispatcher([echo, boom], observer=observer)
    result = env.call(d, "ecko", {})
    assert result.is_error and result.error_code is ErrorCode.UNKNOWN_TOOL
    assert "Did you mean 'echo'?" in result.text
    assert "available tools: boom, echo." in result.text
    assert observer.started == [("call-1", None)]
    unrelated = env.call(d, "zzzzzz", {}, "call-2")
    assert "Did you mean" not in unrelated.text and "boom, echo" in unrelated.text


def test_invalid_arguments_name_every_field(env: Any) -> None:
    d = env.dispatcher([echo])
    result = env.call(d, "echo", {"times": "3", "extra": True})
    assert result.is_error and result.error_code is ErrorCode.INVALID_ARGUMENTS
    text = result.text
    assert "at $: 'text' is a required property" in text
    assert "at $.times: '3' is not of type 'integer'" in text
    assert 'expected type "integer"; received "3"' in text
    assert "'extra' was unexpected" in text
    assert "call the tool again" in text


@pytest.mark.parametrize("payload", [None, [], "text", 3, ["text"]])
def test_non_object_arguments(env: Any, payload: Any) -> None:
    result = env.call(env.dispatcher([echo]), "echo", payload)
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "must be a JSON object" in result.text


@pytest.mark.parametrize("call_id", ["../etc/passwd", "", "a" * 129, "a/b", "id with space", None])
def test_unsafe_call_ids_are_refused_and_never_touch_disk(env: Any, call_id: Any) -> None:
    @tool(output_limit=100)
    def big() -> str:
        """Big output that would be externalized."""
        return "x" * 1000

    d = env.dispatcher([echo, big])
    result = asyncio.run(d.dispatch(ToolCall(call_id, "big", {})))
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS
    assert "call id" in result.text and "was not run" in result.text
    assert not env.outputs.root.exists()


def test_gate_denials_keep_their_codes(env: Any) -> None:
    for code in (ErrorCode.PERMISSION_DENIED, ErrorCode.APPROVAL_DENIED):
        gate = FixedGate(GateOutcome(allowed=False, error_code=code, message=f"no: {code}"))
        result = env.call(env.dispatcher([echo], gate=gate), "echo", {"text": "a"})
        assert result.is_error and result.error_code is code and result.text == f"no: {code}"
        assert gate.seen == [("echo", {"text": "a"})]
    silent = FixedGate(GateOutcome(allowed=False))
    result = env.call(env.dispatcher([echo], gate=silent), "echo", {"text": "a"})
    assert result.error_code is ErrorCode.PERMISSION_DENIED
    assert "not allowed by the permission policy" in result.text


def test_gate_sees_only_valid_calls(env: Any) -> None:
    gate = FixedGate(GateOutcome(allowed=True))
    d = env.dispatcher([echo], gate=gate)
    env.call(d, "echo", {"text": 1})
    env.call(d, "nope", {}, "call-2")
    assert gate.seen == []


def test_broken_gate_fails_closed(env: Any) -> None:
    ran: list[bool] = []

    @tool
    def effect() -> str:
        """Has an effect."""
        ran.append(True)
        return "done"

    result = env.call(env.dispatcher([effect], gate=BrokenGate()), "effect", {})
    assert result.error_code is ErrorCode.APPROVAL_UNAVAILABLE
    assert "approval channel closed" in result.text and ran == []


def test_gate_outcome_reaches_the_tool_context(env: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("secret")
    seen: list[ToolContext] = []

    @tool(concurrent_safe=True)
    def peek(ctx: ToolContext, path: str) -> str:
        """Read a file through the policy."""
        seen.append(ctx)
        return ctx.path_policy.read_bytes(ctx.path_policy.resolve_read(path)).decode()

    refused = env.call(env.dispatcher([peek]), "peek", {"path": str(outside / "f.txt")})
    assert refused.error_code is ErrorCode.PERMISSION_DENIED
    assert "outside the workspace" in refused.text
    assert seen[0].network is False and seen[0].user_approved is False

    gate = FixedGate(
        GateOutcome(allowed=True, network=True, user_approved=True, extra_paths=(outside,))
    )
    d = env.dispatcher([peek], gate=gate)
    allowed = env.call(d, "peek", {"path": str(outside / "f.txt")}, "call-2")
    assert not allowed.is_error and allowed.content == "secret"
    ctx = seen[1]
    assert ctx.network and ctx.user_approved
    assert ctx.call_id == "call-2" and ctx.session_id == "session-1"
    assert ctx.workspace == env.workspace and ctx.outputs is env.outputs
    assert d.path_policy.extra == ()  # the base policy is unchanged


def test_exceptions_become_execution_errors(env: Any) -> None:
    result = env.call(env.dispatcher([boom]), "boom", {"message": "disk on fire"})
    assert result.is_error and result.error_code is ErrorCode.EXECUTION_ERROR
    assert "ValueError: disk on fire" in result.text


@pytest.mark.parametrize("code", list(ErrorCode))
def test_tool_errors_carry_their_code_and_hint(env: Any, code: ErrorCode) -> None:
    @tool
    def fail() -> str:
        """Fails with a code."""
        raise ToolError("it broke", hint="do this instead", code=code)

    result = env.call(env.dispatcher([fail]), "fail", {})
    assert result.is_error and result.error_code is code
    assert result.text == "it broke\ndo this instead"


def test_async_timeout(env: Any) -> None:
    @tool(timeout_s=0.05)
    async def slow() -> str:
        """Sleeps."""
        await asyncio.sleep(30)
        return "never"

    result = env.call(env.dispatcher([slow]), "slow", {})
    assert result.error_code is ErrorCode.TIMEOUT
    assert "0.05 s time limit" in result.text


def test_sync_timeout_does_not_block_the_loop(env: Any) -> None:
    release = threading.Event()

    @tool(timeout_s=0.05)
    def stuck() -> str:
        """Blocks a thread."""
        release.wait(10)
        return "late"

    async def scenario() -> tuple[ToolResult, int]:
        d = env.dispatcher([stuck])
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.ensure_future(ticker())
        result = await d.dispatch(ToolCall("c", "stuck", {}))
        task.cancel()
        release.set()
        return result, ticks

    result, ticks = asyncio.run(scenario())
    assert result.error_code is ErrorCode.TIMEOUT
    assert ticks > 0  # the loop kept running while the handler blocked its thread


def test_a_tools_own_timeout_error_is_an_execution_error(env: Any) -> None:
    @tool
    async def socketish() -> str:
        """Raises TimeoutError itself."""
        raise TimeoutError("peer did not answer")

    result = env.call(env.dispatcher([socketish]), "socketish", {})
    assert result.error_code is ErrorCode.EXECUTION_ERROR
    assert "peer did not answer" in result.text


def _flaky(fail_times: int, *, retryable: bool, retries: int) -> tuple[ToolSpec, list[int]]:
    attempts: list[int] = []

    @tool(retries=retries)
    def flaky() -> str:
        """Fails a few times."""
        attempts.append(1)
        if len(attempts) <= fail_times:
            raise ToolError("busy", retryable=retryable)
        return f"ok after {len(attempts)}"

    return flaky, attempts


def test_retryable_errors_are_retried_until_success(env: Any) -> None:
    flaky, attempts = _flaky(2, retryable=True, retries=2)
    result = env.call(env.dispatcher([flaky]), "flaky", {})
    assert not result.is_error and result.content == "ok after 3" and len(attempts) == 3


def test_retries_stop_at_the_limit(env: Any) -> None:
    flaky, attempts = _flaky(5, retryable=True, retries=1)
    result = env.call(env.dispatcher([flaky]), "flaky", {})
    assert result.error_code is ErrorCode.EXECUTION_ERROR and len(attempts) == 2
    assert "failed 2 times; retried 1 times" in result.text


def test_non_retryable_errors_are_not_retried(env: Any) -> None:
    flaky, attempts = _flaky(5, retryable=False, retries=3)
    result = env.call(env.dispatcher([flaky]), "flaky", {})
    assert result.is_error and len(attempts) == 1

    count: list[int] = []

    @tool(retries=3)
    def plain() -> str:
        """Raises a plain exception."""
        count.append(1)
        raise OSError("nope")

    assert env.call(env.dispatcher([plain]), "plain", {}).is_error and len(count) == 1


def test_backoff_grows(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    monkeypatch.setattr("kernel.tools.dispatch.asyncio.sleep", fake_sleep)
    monkeypatch.setattr("kernel.tools.dispatch.random.uniform", lambda a, b: 1.0)
    flaky, _ = _flaky(3, retryable=True, retries=3)
    d = Dispatcher(
        env.dispatcher([]).registry,
        session_id="s",
        workspace=env.workspace,
        outputs=env.outputs,
        path_policy=env.policy,
        retry_base_s=0.1,
    )
    d.registry.register(flaky)
    assert not asyncio.run(d.dispatch(ToolCall("c", "flaky", {}))).is_error
    assert delays == pytest.approx([0.1, 0.2, 0.4])


def test_cancellation_records_a_cancelled_result_and_reraises(env: Any, observer: Any) -> None:
    started = asyncio.Event

    async def scenario() -> tuple[Dispatcher, bool]:
        running = started()

        @tool
        async def long() -> str:
            """Runs until cancelled."""
            running.set()
            await asyncio.sleep(30)
            return "never"

        d = env.dispatcher([long], observer=observer)
        task = asyncio.ensure_future(d.dispatch(ToolCall("c1", "long", {})))
        await running.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return d, True
        return d, False

    d, raised = asyncio.run(scenario())
    assert raised
    stored = d.stored("c1")
    assert stored is not None and stored.error_code is ErrorCode.CANCELLED
    assert "cancelled by the user" in stored.text
    assert observer.finished == [stored]


def test_cancelling_a_batch_answers_every_call(env: Any, observer: Any) -> None:
    async def scenario() -> tuple[Dispatcher, list[str]]:
        running = asyncio.Event()

        @tool
        async def long() -> str:
            """Runs until cancelled."""
            running.set()
            await asyncio.sleep(30)
            return "never"

        d = env.dispatcher([long, echo], observer=observer)
        calls = [
            ToolCall("a", "echo", {"text": "x"}),
            ToolCall("b", "long", {}),
            ToolCall("c", "echo", {"text": "y"}),
            ToolCall("d", "long", {}),
        ]
        task = asyncio.ensure_future(d.dispatch_many(calls))
        await running.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return d, [c.call_id for c in calls]

    d, ids = asyncio.run(scenario())
    results = {i: d.stored(i) for i in ids}
    assert results["a"] is not None and results["a"].content == "x"
    for i in ("b", "c", "d"):
        result = results[i]
        assert result is not None and result.error_code is ErrorCode.CANCELLED
    assert "not started" in results["c"].text  # type: ignore[union-attr]
    assert [r.call_id for r in observer.finished] == ["a", "b", "c", "d"]


def test_idempotency_returns_the_stored_result(env: Any) -> None:
    runs: list[str] = []

    @tool
    def once(text: str) -> str:
        """Counts its runs."""
        runs.append(text)
        return f"ran {len(runs)}"

    log = MemoryResultLog()
    d = env.dispatcher([once], results=log)
    first = env.call(d, "once", {"text": "a"}, "same")
    second = env.call(d, "once", {"text": "different"}, "same")
    assert first == second and runs == ["a"]
    # A new dispatcher over the same log (a resumed session) does not run it again either.
    again = env.call(env.dispatcher([once], results=log), "once", {"text": "a"}, "same")
    assert again == first and runs == ["a"]
    # Errors are results too and are not re-run.
    assert env.call(d, "missing", {}, "err").is_error
    assert env.call(d, "once", {"text": "b"}, "err").error_code is ErrorCode.UNKNOWN_TOOL


def test_concurrent_duplicates_run_once(env: Any) -> None:
    runs: list[int] = []

    @tool(concurrent_safe=True)
    async def slow_once() -> str:
        """Slow."""
        runs.append(1)
        await asyncio.sleep(0.01)
        return "done"

    async def scenario() -> list[ToolResult]:
        d = env.dispatcher([slow_once])
        call = ToolCall("dup", "slow_once", {})
        return list(await asyncio.gather(d.dispatch(call), d.dispatch(call)))

    a, b = asyncio.run(scenario())
    assert a == b and a.content == "done" and runs == [1]


def test_broken_result_log_and_observer_lose_nothing(env: Any) -> None:
    class BrokenLog:
        def get(self, call_id: str) -> ToolResult | None:
            raise RuntimeError("db locked")

        def put(self, result: ToolResult) -> None:
            raise RuntimeError("db locked")

    class BrokenObserver:
        def call_started(self, call: ToolCall, spec: ToolSpec | None) -> None:
            raise RuntimeError("ui gone")

        def progress(self, progress: Progress) -> None:
            raise RuntimeError("ui gone")

        def call_finished(self, call: ToolCall, result: ToolResult) -> None:
            raise RuntimeError("ui gone")

    d = env.dispatcher([echo], results=BrokenLog(), observer=BrokenObserver())
    result = env.call(d, "echo", {"text": "still here"})
    assert not result.is_error and result.content == "still here"


def test_progress_from_a_worker_thread_arrives_on_the_loop_thread(env: Any, observer: Any) -> None:
    threads: list[int] = []

    class ThreadCheckingObserver(type(observer)):  # type: ignore[misc]
        def progress(self, progress: Progress) -> None:
            threads.append(threading.get_ident())
            super().progress(progress)

    @tool
    def chatty(ctx: ToolContext) -> str:
        """Reports progress from its worker thread."""
        for i in range(3):
            ctx.progress(Progress(ctx.call_id, bytes_so_far=i, last_line=f"line {i}"))
        return f"worker {threading.get_ident()}"

    obs = ThreadCheckingObserver()

    async def scenario() -> tuple[ToolResult, int]:
        d = env.dispatcher([chatty], observer=obs)
        result = await d.dispatch(ToolCall("p", "chatty", {}))
        await asyncio.sleep(0)  # let call_soon_threadsafe callbacks run
        return result, threading.get_ident()

    result, loop_thread = asyncio.run(scenario())
    assert result.content != f"worker {loop_thread}"
    assert [p.last_line for p in obs.progress_events] == ["line 0", "line 1", "line 2"]
    assert threads == [loop_thread] * 3


def test_large_output_is_externalized(env: Any) -> None:
    @tool(output_limit=1000)
    def big() -> str:
        """Big output."""
        return "".join(f"line {i} 数据\n" for i in range(2000))

    result = env.call(env.dispatcher([big]), "big", {}, "big-1")
    full = "".join(f"line {i} 数据\n" for i in range(2000))
    assert result.externalized_path == str(env.outputs.path_for("big-1"))
    assert Path(result.externalized_path).read_text(encoding="utf-8") == full
    assert result.output_bytes == len(full.encode())
    assert "bytes" in result.text and "omitted; full output at" in result.text
    assert result.text.startswith(full[:200]) and result.text.endswith(full[-800:])
    assert len(result.text) < 1300


def test_content_blocks_and_handler_results(env: Any) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}

    @tool(output_limit=100)
    def blocks() -> list[dict[str, Any]]:
        """Text and an image."""
        return [{"type": "text", "text": "é" * 500}, image]

    result = env.call(env.dispatcher([blocks]), "blocks", {}, "b1")
    assert isinstance(result.content, tuple) and result.content[1] == image
    assert result.content[0]["type"] == "text" and "omitted" in result.content[0]["text"]
    assert result.externalized_path is not None and result.output_bytes == 1000

    @tool
    def records() -> list[dict[str, Any]]:
        """Plain data with a 'type' key is JSON, not content blocks."""
        return [{"type": "user", "name": "x"}]

    assert '"type": "user"' in env.call(env.dispatcher([records]), "records", {}).content

    @tool
    def own_result() -> ToolResult:
        """Returns its own result."""
        return ToolResult(call_id="ignored", content="partial", is_error=True)

    mine = env.call(env.dispatcher([own_result]), "own_result", {}, "r1")
    assert mine.call_id == "r1" and mine.is_error and mine.error_code is ErrorCode.EXECUTION_ERROR

    @tool
    def measured() -> ToolResult:
        """Reports the size of the raw output it summarized."""
        return ToolResult(call_id="x", content="summary", output_bytes=12345)

    sized = env.call(env.dispatcher([measured]), "measured", {}, "r2")
    assert sized.output_bytes == 12345 and not sized.is_error and sized.error_code is None

    @tool
    def spooled() -> ToolResult:
        """Already externalized its own output."""
        return ToolResult(
            call_id="x", content="preview", output_bytes=9, externalized_path="/spool/x.txt"
        )

    own = env.call(env.dispatcher([spooled]), "spooled", {}, "r3")
    assert (own.content, own.output_bytes, own.externalized_path) == ("preview", 9, "/spool/x.txt")

    @tool
    def nothing() -> None:
        """Returns None."""

    assert env.call(env.dispatcher([nothing]), "nothing", {}).content == ""


def test_six_parallel_reads_finishing_in_reverse_order_keep_their_ids(env: Any) -> None:
    n = 6
    done = [threading.Event() for _ in range(n + 1)]
    done[n].set()
    finish_order: list[int] = []

    @tool(concurrent_safe=True)
    def read_part(index: int) -> str:
        """Each part waits until the next one has finished, so they finish in reverse."""
        if not done[index + 1].wait(10):
            raise RuntimeError("reads did not run in parallel")
        finish_order.append(index)
        done[index].set()
        return f"part {index}"

    calls = [ToolCall(f"read-{i}", "read_part", {"index": i}) for i in range(n)]
    d = env.dispatcher([read_part], max_parallel=n)

    async def scenario() -> list[ToolResult]:
        # Enough worker threads for six blocking reads whatever the machine's core count.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(n))
        return await d.dispatch_many(calls)

    results = asyncio.run(scenario())
    assert finish_order == list(reversed(range(n)))
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert [r.content for r in results] == [f"part {i}" for i in range(n)]


def test_batches_run_safe_runs_together_and_unsafe_calls_alone(env: Any) -> None:
    active: set[str] = set()
    overlaps: dict[str, set[str]] = {}

    async def track(name: str) -> str:
        active.add(name)
        overlaps.setdefault(name, set()).update(active - {name})
        for _ in range(5):
            await asyncio.sleep(0.005)
            overlaps[name].update(active - {name})
        active.discard(name)
        return name

    @tool(concurrent_safe=True)
    async def safe(tag: str) -> str:
        """Safe."""
        if tag == "fail":
            raise RuntimeError("safe call failed")
        return await track(tag)

    @tool
    async def unsafe(tag: str) -> str:
        """Unsafe."""
        return await track(tag)

    calls = [
        ToolCall("1", "safe", {"tag": "s1"}),
        ToolCall("2", "safe", {"tag": "fail"}),
        ToolCall("3", "safe", {"tag": "s3"}),
        ToolCall("4", "unsafe", {"tag": "u4"}),
        ToolCall("5", "safe", {"tag": "s5"}),
        ToolCall("6", "nope", {}),
        ToolCall("7", "safe", {"tag": "s7"}),
        ToolCall("8", "unsafe", {"tag": "u8"}),
        ToolCall("9", "unsafe", {"tag": "u9"}),
    ]
    results = asyncio.run(env.dispatcher([safe, unsafe], max_parallel=4).dispatch_many(calls))
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert results[1].is_error and "safe call failed" in results[1].text
    assert results[5].error_code is ErrorCode.UNKNOWN_TOOL
    assert [r.content for i, r in enumerate(results) if i not in (1, 5)] == [
        "s1",
        "s3",
        "u4",
        "s5",
        "s7",
        "u8",
        "u9",
    ]
    assert overlaps["s1"] == {"s3"} and overlaps["s5"] == {"s7"}
    assert overlaps["u4"] == overlaps["u8"] == overlaps["u9"] == set()


def test_max_parallel_bounds_a_batch(env: Any) -> None:
    peak = 0
    active = 0

    @tool(concurrent_safe=True)
    async def counted() -> str:
        """Counts concurrency."""
        nonlocal peak, active
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        active -= 1
        return "ok"

    calls = [ToolCall(f"c{i}", "counted", {}) for i in range(7)]
    results = asyncio.run(env.dispatcher([counted], max_parallel=2).dispatch_many(calls))
    assert peak == 2 and all(r.content == "ok" for r in results)
    with pytest.raises(ValueError, match="max_parallel"):
        env.dispatcher([], max_parallel=0)


def test_sync_handlers_run_off_the_loop_thread(env: Any) -> None:
    @tool
    def where() -> str:
        """Reports its thread."""
        return str(threading.get_ident())

    async def scenario() -> tuple[str, str]:
        d = env.dispatcher([where])
        result = await d.dispatch(ToolCall("t", "where", {}))
        return result.text, str(threading.get_ident())

    handler_thread, loop_thread = asyncio.run(scenario())
    assert handler_thread != loop_thread


def test_duration_is_measured(env: Any) -> None:
    @tool
    def nap() -> str:
        """Sleeps 20 ms."""
        time.sleep(0.02)
        return ""

    assert env.call(env.dispatcher([nap]), "nap", {}).duration_ms >= 20
