"""One round: the request is streamed (text shown as it arrives, each finished text block
stored), the answer is recorded in the history and the run's counters, its tool calls go
to the batch, and its stop reason decides what follows: end_turn, tool_use, max_tokens
(continued once), pause_turn and refusal. A final answer that is only a tool call written
as text (kernel.agent.textcall) is answered once and the run goes on."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Mapping
from typing import Any

from kernel.agent.calls import CallBatch, without_effects
from kernel.agent.compact import COMPACT_AT
from kernel.agent.context import CHARS_PER_TOKEN
from kernel.agent.history import tool_calls
from kernel.agent.limits import StopReason
from kernel.agent.request import RequestBuilder
from kernel.agent.run_state import RunCore, request_tokens
from kernel.agent.textcall import TOOL_INTERFACE_PROMPT, text_tool_call
from kernel.events import AssistantDelta, AssistantText, ErrorEvent, ModelRetry, ModelWaiting
from kernel.model.catalog import max_tokens_advice
from kernel.model.provider import ModelTurn, RetryNotice, TurnCallbacks

CONTINUE_PROMPT = ("Your previous answer was cut off by the output token limit. Continue "
                   "exactly where it stopped, without repeating what you already wrote.")


async def play_round(core: RunCore, requests: RequestBuilder,
                     calls: CallBatch) -> StopReason | None:
    """Ask the model once and act on its answer; a stop reason ends the run."""
    counters = core.counters
    round_index = counters.rounds
    collector = Collector(core)
    started = time.perf_counter()
    try:
        turn, trimmed = await _ask_model(requests, collector)
    except asyncio.CancelledError:
        collector.keep_partial(in_history=True)
        if collector.started:  # a round stopped mid-stream still used what it streamed
            counters.rounds += 1
            counters.add_usage(collector.used())
        raise
    counters.rounds += 1
    counters.add_usage(turn.usage)
    counters.context_tokens = request_tokens(turn.usage)
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
        core.save_progress(trace)
        core.emit(ErrorEvent(core.session_id, turn.error.code, turn.error.message))
        return StopReason.ERROR
    content = list(turn.content)
    reason = turn.stop_reason
    if reason == "max_tokens":
        content = [b for i, b in enumerate(content)
                   if not (b.get("type") == "tool_use" and i == len(content) - 1)]
    asked = tool_calls(content)
    if content:
        core.history.append({"role": "assistant", "content": content})
    stop: StopReason | None = None
    if asked:
        if not without_effects(core.setup.registry, asked):
            await core.reporter.committed()
        stop = await calls.run(asked, trace)
    elif reason == "max_tokens":
        if counters.continued_max_tokens:
            core.save_progress(trace)
            provider = core.setup.provider
            core.emit(ErrorEvent(core.session_id, "max_tokens", (
                f"The answer hit the output limit ({provider.max_tokens} tokens) twice in "
                f"a row and was stopped. "
                f"{max_tokens_advice(provider.model, provider.limits)}")))
            return StopReason.MAX_TOKENS
        counters.continued_max_tokens = True
        core.history.add_user_blocks([{"type": "text", "text": CONTINUE_PROMPT}])
    elif reason == "pause_turn":
        if not content:
            core.history.add_user_blocks([{"type": "text", "text": "Continue."}])
    elif reason == "refusal":
        stop = StopReason.REFUSAL
    else:
        stop = _final_answer(core, trace["answer"])
    if reason != "max_tokens":
        counters.continued_max_tokens = False
    core.save_progress(trace)
    return stop


async def _ask_model(requests: RequestBuilder,
                     collector: Collector) -> tuple[ModelTurn, list[str]]:
    """Stream one turn. A request near the window is compacted first; a request the API
    refuses because of one image or document, or as too long, is repaired (that block
    replaced for good, or the oldest turns summarized) and sent once more."""
    provider = collector.core.setup.provider
    params, trimmed, size = requests.build()
    if size > COMPACT_AT * requests.input_budget() and await requests.compact("auto"):
        params, trimmed, size = requests.build()
    turn = await provider.stream_turn(params, collector.callbacks)
    if turn.error is not None and await requests.repair(turn.error):
        params, trimmed, size = requests.build()
        turn = await provider.stream_turn(params, collector.callbacks)
    return turn, trimmed


def _final_answer(core: RunCore, text: str) -> StopReason | None:
    """End the run, unless the answer is a tool call written as text (told once)."""
    name = text_tool_call(text, core.setup.registry.names())
    if name is not None and not core.counters.told_tool_interface:
        core.counters.told_tool_interface = True
        core.history.add_user_blocks([{"type": "text",
                                       "text": TOOL_INTERFACE_PROMPT.format(name=name)}])
        return None
    core.counters.empty_answer = not text.strip()
    return StopReason.END_TURN


class Collector:
    """Streams deltas out and stores each finished text block as AssistantText."""

    def __init__(self, core: RunCore) -> None:
        self.core = core
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
        self.core.emit(AssistantDelta(self.core.session_id, text))

    def _on_block(self, block: Mapping[str, Any]) -> None:
        self.started = True
        if block.get("type") != "text":
            self._streamed_chars += len(json.dumps(block, ensure_ascii=False))
        self._partial.clear()
        if block.get("type") == "text" and block.get("text"):
            self.texts.append(str(block["text"]))
            self.core.emit(AssistantText(self.core.session_id, str(block["text"])))

    def _on_retry(self, notice: RetryNotice) -> None:
        """A failed attempt is sent again: what it showed is void (said in the event)."""
        self._partial.clear()
        self.texts.clear()
        self._usage.clear()
        self._streamed_chars = 0
        self.core.emit(ModelRetry(self.core.session_id, attempt=notice.attempt, of=notice.of,
                                  delay_s=round(notice.delay_s, 3), reason=notice.reason,
                                  discarded=notice.discarded))

    def _on_wait(self, waited_s: float) -> None:
        self.core.emit(ModelWaiting(self.core.session_id, waited_s=round(waited_s, 1),
                                    timeout_s=self.core.setup.provider.read_timeout_s))

    def keep_partial(self, *, in_history: bool) -> None:
        """The turn broke off: keep the text that was shown (and, on cancel, in history)."""
        partial = "".join(self._partial)
        self._partial.clear()
        if partial:
            self.core.emit(AssistantText(self.core.session_id, partial))
            self.texts.append(partial)
        history = self.core.history
        last_role = history.messages[-1]["role"] if history.messages else "user"
        if in_history and self.texts and last_role == "user":
            text = "\n\n".join(self.texts).rstrip()
            if text:
                history.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
