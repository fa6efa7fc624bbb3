"""Each round's request, made to fit the model's window: the tools on offer and the system
prompt (the same cached objects while they do not change), the history after the latest
summary, trimmed near the window (a trimmed result's full output written to disk in a
thread meanwhile) and compacted when trimming is not enough; a request the API refused
for its size or for one media block is repaired here (kernel.agent.compact, .media)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel.agent.compact import (
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
    ContextTrimmer,
    cached_system,
    cached_tools,
    estimate_tokens,
    with_cache_breakpoint,
)
from kernel.agent.history import safe_call_id
from kernel.agent.media import Keep, replace_at
from kernel.agent.prompt import system_prompt
from kernel.agent.reporter import StoreFailed
from kernel.agent.run_state import RunCore
from kernel.events import ContextCompacted, ErrorEvent, Event
from kernel.model.provider import ProviderError, TurnCallbacks
from kernel.paths import UnsafeIdentifier
from kernel.policy.decide import Mode, offered_tools
from kernel.tools.dispatch import ResultLog
from kernel.tools.externalize import OutputStore
from kernel.tools.find_tools import tools_on_offer

log = logging.getLogger(__name__)


class RequestBuilder:
    """Makes one run's requests and keeps what they share from round to round."""

    def __init__(self, core: RunCore, past: Sequence[Event], outputs: OutputStore,
                 results: ResultLog, keep_media: Keep) -> None:
        self._core = core
        self._outputs = outputs
        self._results = results
        self._keep_media = keep_media
        self.compaction = latest_compaction(past, core.history.messages)
        """The latest summary of the oldest turns, when it still fits the history."""
        self._budget_cap: int | None = None
        self._fixed: tuple[tuple[int, tuple[str, ...]], list[dict[str, Any]],
                           list[dict[str, Any]], int] | None = None
        """The tools and system prompt of the last request (`_fixed_part`), by what made
        them."""
        self._trimmer = ContextTrimmer(self._store_full)
        """Trims each request, measuring only what is new since the previous one."""
        self._writing: list[tuple[str, Path, asyncio.Future[Any]]] = []
        """Full outputs of trimmed results being written (`_store_full`)."""
        self._unwritten: set[str] = set()
        """Calls whose full output could not be written in a thread."""
        self._summary: tuple[ContextCompacted, dict[str, Any]] | None = None
        """The summary message of `compaction`, made once (the same object every round)."""

    def build(self) -> tuple[dict[str, Any], list[str], int]:
        """The request's parameters, the calls whose results it trimmed, its size."""
        core = self._core
        provider = core.setup.provider
        registry = core.setup.registry
        specs = [s for n in registry.names() if (s := registry.get(n)) is not None]
        shown = tools_on_offer(specs, offered_tools(specs, Mode(core.session.mode)),
                               core.history.messages, core.setup.tool_search_threshold,
                               forced=provider.forced_tool)
        tools, system, fixed = self._fixed_part(shown)
        sent = self._trimmer.trim(self.sent_history(), budget_tokens=self.input_budget(),
                                  fixed_tokens=fixed)
        params = provider.request_params(system=system, tools=tools,
                                         messages=with_cache_breakpoint(sent.messages),
                                         first_round=core.counters.rounds == 0)
        return params, sent.trimmed, sent.tokens

    def _fixed_part(self, shown: Sequence[str]) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]], int]:
        """The request's tools and system prompt, with their cache marks, and their size:
        the same objects every round while the tools on offer are the same (measured, and
        scrubbed by the provider, once)."""
        registry = self._core.setup.registry
        key = (registry.version, tuple(shown))
        if self._fixed is None or self._fixed[0] != key:
            tools = cached_tools(registry.schemas(shown))
            system = cached_system(system_prompt(self._core.workspace,
                                                 self._core.setup.system_extra))
            self._fixed = (key, tools, system, estimate_tokens(tools) + estimate_tokens(system))
        return self._fixed[1], self._fixed[2], self._fixed[3]

    def _store_full(self, call_id: str, text: str) -> str | None:
        """Where a trimmed result's full output is: the file it was externalized to, else
        the file it is now written to, in a thread (the request goes out meanwhile; no tool
        runs before the file is there: `outputs_written`). The thread is given the write
        by a task, which runs once the loop has control again: when the request is sent
        and waits for the server, not while the SDK builds it (a thread started then would
        take the interpreter's lock from that building, over and over)."""
        stored = self._results.get(call_id) if safe_call_id(call_id) else None
        if stored is not None and stored.externalized_path:
            return stored.externalized_path
        if call_id in self._unwritten:  # it failed in a thread: tried again, and waited for
            try:
                preview = self._outputs.externalize(call_id, text, 0)
            except (OSError, UnsafeIdentifier):
                return None
            self._unwritten.discard(call_id)
            return str(preview.path) if preview.path is not None else None
        try:
            path = self._outputs.path_for(call_id)
        except UnsafeIdentifier:
            return None
        self._writing.append((call_id, path, asyncio.ensure_future(
            asyncio.to_thread(self._outputs.externalize, call_id, text, 0))))
        return str(path)

    async def outputs_written(self) -> None:
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
                self._core.emit(ErrorEvent(self._core.session_id, "output_not_stored", (
                    f"The full output of tool call {call_id} could not be saved to {path} "
                    f"({_reason(error)}). A request that left that result out to save room "
                    f"pointed the model to this file, so reading it again there finds "
                    f"nothing; the result itself is kept in the session and sent in full "
                    f"in the next requests.")))

    def input_budget(self) -> int:
        """The tokens a request may take: the model's window less its output, or less when
        the API said a smaller request was too long (for the rest of the run)."""
        provider = self._core.setup.provider
        budget = max(provider.context_window - provider.max_tokens, 1)
        return min(budget, self._budget_cap) if self._budget_cap else budget

    def sent_history(self) -> list[dict[str, Any]]:
        """What the requests carry: the summary and the turns after it, else everything."""
        history = self._core.history.messages
        if self.compaction is None:
            return history
        if self._summary is None or self._summary[0] is not self.compaction:
            self._summary = (self.compaction, summary_message(self.compaction.summary))
        return [self._summary[1], *history[self.compaction.first_kept:]]

    def history_cut(self) -> None:
        """The history was cut (a branch): a summary of turns no longer there is dropped."""
        if self.compaction is not None and (
                self.compaction.first_kept >= len(self._core.history.messages)):
            self.compaction = None

    async def repair(self, error: ProviderError) -> bool:
        """Make a refused request sendable: compacted when too long, the media block the
        API refused replaced for good. False when it cannot be repaired."""
        if error.code == "prompt_too_long":
            _, _, sent = self.build()
            self._budget_cap = budget_after_overflow(error.message, sent)
            return bool(await self.compact("prompt_too_long"))
        if error.code != "bad_block" or error.block is None:
            return False
        offset = self.compaction.first_kept - 1 if self.compaction is not None else 0
        place = error.block
        if place and self.compaction is not None and place[0] == 0:
            return False
        if place:
            place = (place[0] + offset, *place[1:])
        history = self._core.history
        fixed, changed = replace_at(history.messages, place,
                                    f"refused by the API (HTTP {error.status})",
                                    self._keep_media)
        history.replace(fixed, changed)
        return bool(changed)

    async def compact(self, reason: str) -> bool | None:
        """Summarize the turns before a new cut (see kernel.agent.compact); None when there
        is nothing to summarize, False when the model could not (an error event says so)."""
        core = self._core
        provider = core.setup.provider
        history = core.history.messages
        start = self.compaction.first_kept if self.compaction is not None else 0
        _, _, before = self.build()
        fixed = before - estimate_tokens(self.sent_history())
        keep = 0 if reason == "user" else keep_tokens(self.input_budget(), fixed)
        cut = choose_cut(history, start, keep)
        if cut is None:
            return None
        summary = self.compaction.summary if self.compaction is not None else ""
        size = summary_max_tokens(provider.context_window, provider.max_tokens)
        entries = transcript(history[start:cut])
        for chunk in chunks(entries, chunk_chars(provider.context_window, size)):
            turn = await provider.stream_turn(
                summary_params(provider.model, size, summary, chunk), TurnCallbacks())
            core.counters.add_usage(turn.usage)
            text = "".join(str(b.get("text", "")) for b in turn.content
                           if b.get("type") == "text").strip()
            if turn.error is not None or not text:
                why = turn.error.message if turn.error is not None else "its answer was empty"
                core.emit(ErrorEvent(core.session_id, "compaction_failed", (
                    f"The oldest turns could not be summarized to make room: {why}")))
                return False
            summary = text
        previous = self.compaction
        self.compaction = ContextCompacted(core.session_id, summary=summary, first_kept=cut,
                                           reason=reason)
        _, _, after = self.build()
        self.compaction = ContextCompacted(
            core.session_id, summary=summary, first_kept=cut, tokens_before=before,
            tokens_after=after, reason=reason)
        try:
            core.emit(self.compaction)
        except StoreFailed:
            self.compaction = previous
            raise
        return True


def latest_compaction(past: Sequence[Event], history: Sequence[Any]) -> ContextCompacted | None:
    """The latest summary of the oldest turns, when the history still has its cut."""
    return next((e for e in reversed(past) if isinstance(e, ContextCompacted)
                 and 0 < e.first_kept < len(history)
                 and history[e.first_kept]["role"] == "assistant"), None)


def _reason(error: BaseException) -> str:
    """Why a write failed, in words: the system's reason and the path it names."""
    if isinstance(error, OSError) and error.strerror:
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror}{where}"
    return f"{type(error).__name__}: {error}"
