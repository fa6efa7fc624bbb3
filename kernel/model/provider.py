"""The model provider: one streamed Messages API turn with `anthropic.AsyncAnthropic`.

`AnthropicProvider.stream_turn` sends one request and streams the answer: text deltas and
finished content blocks go to the caller's callbacks as they arrive, and the turn comes
back as a `ModelTurn` (the content blocks as API params, ready to go back into the history,
the stop reason, usage with cached-token counts, the request id). It never raises for an API
or network failure: what is left after the retries becomes `ModelTurn.error`, a
`ProviderError` that names what happened and what the user can do. Cancellation
(CancelledError) is not caught: it closes the stream at once and propagates.

Retries are Reins' own (the SDK's are off), so each kind of failure gets what it needs:
429/408/409/5xx/529 and connection failures are retried `max_retries` times with the API's
back-off (`retry-after-ms` / `retry-after` honoured); so is an `error` event in the middle of
a 200 stream (`overloaded_error`, `api_error`, `rate_limit_error`) — the caller is told with
`on_retry` that the text shown so far is discarded. A server that sends nothing is not
retried: the request fails once, after `read_timeout_s`, and `on_wait` reports every
`progress_every_s` while no answer has started. A stream that breaks off after it started
(cut, stalled) ends as an error keeping the text received in `partial_text`.

The body is encoded by Reins (kernel.model.request_body: each message once, not the whole
conversation every request) and sent with the SDK's public `client.post(..., content=...)`,
streamed with its `AsyncMessageStream`. Text that cannot be encoded (a lone surrogate, from
a tool's output or a model's answer decoded from JSON) is replaced by U+FFFD in the request
— the stored history keeps it as it was — so one such character never makes every later
request fail.

The API key comes from an argument, else the OS keyring (service `reins`, user
`anthropic_api_key`), else `ANTHROPIC_API_KEY`; it is handed to the client as an argument
and never written into `os.environ`. `ANTHROPIC_BASE_URL` (or `base_url`) points the client
at an Anthropic-compatible server.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
from anthropic.lib.streaming import AsyncMessageStream

from kernel.model.catalog import ModelLimits, config_problem
from kernel.model.provider_config import NO_KEY_PLACEHOLDER

# Re-exported: the config and the key's resolution were defined here before they moved.
from kernel.model.provider_config import ConfigError as ConfigError
from kernel.model.provider_config import KeySource as KeySource
from kernel.model.provider_config import ProviderConfig as ProviderConfig
from kernel.model.provider_config import keyring_key as keyring_key
from kernel.model.provider_config import resolve_api_key as resolve_api_key
from kernel.model.provider_config import resolve_base_url as resolve_base_url
from kernel.model.provider_config import tool_choice_param as tool_choice_param
from kernel.model.request_body import RequestEncoder

RETRY_BASE_S = 0.5
RETRY_MAX_S = 8.0
RETRY_AFTER_MAX_S = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})
STREAM_RETRY_KINDS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
"""Error events in a 200 stream that mean "try again", as the same errors as statuses do."""


@dataclass(frozen=True)
class ProviderError:
    code: str
    """overloaded, rate_limited, server_error, auth_error, permission_error, not_found,
    bad_request, prompt_too_long, bad_block, request_too_large, connection_error, timeout,
    stream_broken."""
    message: str
    status: int | None = None
    retryable: bool = True
    block: tuple[int, ...] | None = None
    """bad_block: the rejected block's place as the API named it (message index, block
    index, and the index inside a tool_result), or None when it named none."""


@dataclass(frozen=True)
class ModelTurn:
    content: Sequence[Mapping[str, Any]]
    """The finished content blocks, as API params (thinking blocks kept with signatures)."""
    stop_reason: str | None
    usage: Mapping[str, int]
    request_id: str | None = None
    error: ProviderError | None = None
    partial_text: str = ""
    """Text of a text block that was still streaming when the turn broke off."""


@dataclass(frozen=True)
class RetryNotice:
    """A failed attempt that is being retried."""

    attempt: int
    """The attempt that failed (1 = the first request)."""
    of: int
    """How many attempts there can be in all."""
    delay_s: float
    reason: str
    discarded: bool
    """Text or blocks of the failed attempt had already been delivered: they are void."""


@dataclass
class TurnCallbacks:
    on_text: Callable[[str], None] = field(default=lambda _t: None)
    """A text delta, as it arrives."""
    on_block: Callable[[Mapping[str, Any]], None] = field(default=lambda _b: None)
    """A content block once it is complete (API param form)."""
    on_retry: Callable[[RetryNotice], None] = field(default=lambda _r: None)
    """An attempt failed and the request is sent again after `delay_s`."""
    on_wait: Callable[[float], None] = field(default=lambda _s: None)
    """Seconds waited so far for an answer to start (every `progress_every_s`)."""


USAGE_KEYS = (
    "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
)

def _usage(message: Any) -> dict[str, int]:
    usage = getattr(message, "usage", None)
    return {k: int(getattr(usage, k, 0) or 0) for k in USAGE_KEYS}


def block_param(block: Any) -> dict[str, Any]:
    """A response content block as the param that goes back into the history."""
    data = block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") \
        else dict(block)
    data.pop("parsed_output", None)
    if data.get("type") == "text":
        return {"type": "text", "text": data.get("text", ""),
                **({"citations": data["citations"]} if data.get("citations") else {})}
    return data


def retry_delay(retry: int, headers: Mapping[str, str], jitter: float = 0.0) -> float:
    """Seconds before retry number `retry` (0 = the first): the server's `retry-after-ms` or
    `retry-after` (seconds, up to a minute), else 0.5 s doubling up to 8 s, less up to
    `jitter` (0..1) of it."""
    lower = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            asked = float(lower[name]) * scale
        except (KeyError, ValueError):
            continue
        if 0 <= asked <= RETRY_AFTER_MAX_S:
            return asked
    base = min(RETRY_BASE_S * 2.0 ** max(0, retry), RETRY_MAX_S)
    return base * (1 - 0.25 * min(max(jitter, 0.0), 1.0))


_CONTEXT_OVERFLOW = re.compile(
    r"prompt is too long|exceeds? the (available )?context|context (length|window|size)"
    r"|maximum context|too many (input )?tokens|input length and `?max_tokens`? exceed",
    re.IGNORECASE)
_MEDIA_PROBLEM = re.compile(r"\bimage\b|\bpdf\b|\bdocument\b|media[ _]type|base64",
                            re.IGNORECASE)
_BLOCK_PATH = re.compile(
    r"messages\.(\d+)\.content\.(\d+)(?:\.(?:tool_result\.)?content\.(\d+))?")


def is_context_overflow(status: int, detail: str) -> bool:
    """The API refused the request because the conversation does not fit the model."""
    return status in (400, 413) and bool(_CONTEXT_OVERFLOW.search(detail))


def rejected_block(status: int, detail: str) -> tuple[int, ...] | None:
    """For a 400/413 about an image or a document, where the API says the block is: (message,
    block[, block inside a tool_result]); () when it names no place; None when the refusal
    is not about a media block."""
    if status not in (400, 413) or not _MEDIA_PROBLEM.search(detail):
        return None
    found = _BLOCK_PATH.search(detail)
    if found is None:
        return ()
    return tuple(int(g) for g in found.groups() if g is not None)


def describe_status_error(status: int, kind: str, detail: str, model: str,
                          base_url: str, attempts: int = 1) -> ProviderError:
    where = f"{base_url} " if base_url else ""
    tried = f"after {attempts} attempts" if attempts > 1 else "(not retried)"
    retry = "Retry the run later (reins exec --session ID resumes the same turn)."
    if status == 529 or kind == "overloaded_error":
        return ProviderError("overloaded", f"The model API {where}is overloaded (HTTP {status}: "
                             f"{detail}), still {tried}. {retry}", status)
    if status == 429:
        return ProviderError("rate_limited", f"The model API {where}rate-limited this key "
                             f"(HTTP 429: {detail}), still {tried}. Wait a minute, then retry; "
                             f"or raise the key's rate limit in the Anthropic console.", status)
    if status == 401:
        return ProviderError("auth_error", f"The API key was refused (HTTP 401: {detail}). Set "
                             f"a valid key in Settings (stored in the keyring) or in "
                             f"ANTHROPIC_API_KEY.", status, retryable=False)
    if status == 403:
        return ProviderError("permission_error", f"The API key may not use this resource "
                             f"(HTTP 403: {detail}). Check the key's permissions and the "
                             f"model.", status, retryable=False)
    if status == 404:
        return ProviderError("not_found", f"Not found (HTTP 404: {detail}). Check the model "
                             f"name ({model!r}, --model) and the base URL {where}".rstrip(),
                             status, retryable=False)
    if is_context_overflow(status, detail):
        return ProviderError("prompt_too_long", f"The conversation no longer fits {model}'s "
                             f"context window (HTTP {status}: {detail}). Resume with "
                             f"--compact to summarize its oldest turns; if the model's window "
                             f"is smaller than Reins assumes, set its context_window under "
                             f"\"models\" in settings.json.", status, retryable=False)
    block = rejected_block(status, detail)
    if block is not None:
        return ProviderError("bad_block", f"The API refused an image or document in the "
                             f"conversation (HTTP {status}: {detail}).", status,
                             retryable=False, block=block)
    if status == 413:
        return ProviderError("request_too_large", f"The request is too large (HTTP 413: "
                             f"{detail}). Resume with --compact, or start a new session "
                             f"without the large inputs.", status, retryable=False)
    if 400 <= status < 500:
        return ProviderError("bad_request", f"The API rejected the request (HTTP {status}: "
                             f"{detail}). This is likely a Reins bug; start a new session and "
                             f"report it.", status, retryable=False)
    return ProviderError("server_error", f"The model API {where}failed (HTTP {status}: "
                         f"{detail}), still {tried}. {retry}", status)


def _status_detail(exc: anthropic.APIStatusError) -> tuple[str, str]:
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error") if isinstance(body.get("error"), Mapping) else {}
    kind = str(error.get("type", "")) if error else ""
    detail = str(error.get("message", "")) if error else ""
    return kind, detail or str(exc.message)


def _should_retry(exc: anthropic.APIStatusError, kind: str) -> bool:
    header = exc.response.headers.get("x-should-retry")
    if header in ("true", "false"):
        return header == "true"
    if exc.status_code == 200:
        return kind in STREAM_RETRY_KINDS
    return exc.status_code in RETRY_STATUSES or exc.status_code >= 500


@dataclass
class _Attempt:
    """What one request delivered before it ended."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    request_id: str | None = None
    started: bool = False
    """Anything arrived (the response headers)."""
    delivered: bool = False
    """Text or a block went to the callbacks."""

    def broken(self, error: ProviderError) -> ModelTurn:
        return ModelTurn(self.blocks, None, self.usage, self.request_id, error,
                         "".join(self.partial))


@dataclass(frozen=True)
class _Retryable:
    turn: ModelTurn
    reason: str
    headers: Mapping[str, str]
    delivered: bool


@contextlib.asynccontextmanager
async def _message_stream(client: anthropic.AsyncAnthropic,
                          body: bytes) -> AsyncIterator[AsyncMessageStream[Any]]:
    """`client.messages.stream(...)` for a body already encoded (kernel.model.request_body).
    When the turn ends, however it ends, the response is closed and so is the stream's
    `text_stream`: the SDK makes that async generator for every stream and it is never
    started (the events are read instead), and a generator not yet started holds the stream
    in its frame, a cycle that kept the stream and its response alive until the garbage
    collector found them."""
    raw = await client.post("/v1/messages", cast_to=anthropic.types.Message, content=body,
                            stream=True,
                            stream_cls=anthropic.AsyncStream[anthropic.types.RawMessageStreamEvent])
    stream: AsyncMessageStream[Any] = AsyncMessageStream(raw, output_format=anthropic.NOT_GIVEN)
    try:
        yield stream
    finally:
        try:
            await stream.close()
        finally:
            text_stream = stream.text_stream
            if isinstance(text_stream, AsyncGenerator):
                await text_stream.aclose()


class AnthropicProvider:
    """Streams Messages API turns; one client per provider (connections are pooled)."""

    def __init__(self, config: ProviderConfig, *, api_key: str | None = None,
                 environ: Mapping[str, str] | None = None,
                 keyring_lookup: Callable[[], str | None] = keyring_key) -> None:
        problem = config_problem(model=config.model, limits=config.limits,
                                 tool_choice=config.tool_choice,
                                 thinking_budget=config.thinking_budget)
        if problem is not None:
            raise ConfigError(problem)
        self.config = config
        self.base_url = resolve_base_url(config, environ)
        key = resolve_api_key(api_key, environ, keyring_lookup)
        self.key_source = key.source
        if key.key is None and self.base_url is None:
            raise ConfigError(
                "No Anthropic API key: store one in Settings (OS keyring) or set "
                "ANTHROPIC_API_KEY; or point ANTHROPIC_BASE_URL at a local compatible server."
            )
        self._tool_choice = tool_choice_param(config.tool_choice)
        self._encoder = RequestEncoder()
        self.client = anthropic.AsyncAnthropic(
            api_key=key.key or NO_KEY_PLACEHOLDER,
            base_url=self.base_url,
            max_retries=0,
            timeout=httpx2.Timeout(config.read_timeout_s, connect=config.connect_timeout_s),
        )

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def context_window(self) -> int:
        return self.config.context_window

    @property
    def max_tokens(self) -> int:
        return self.config.max_tokens

    @property
    def limits(self) -> ModelLimits:
        return self.config.limits

    @property
    def read_timeout_s(self) -> float:
        return self.config.read_timeout_s

    async def close(self) -> None:
        await self.client.close()

    @property
    def forced_tool(self) -> str | None:
        """The tool `tool_choice` names (`--tool-choice TOOL`), else None."""
        name = self._tool_choice.get("name") if self._tool_choice["type"] == "tool" else None
        return str(name) if name is not None else None

    def request_params(self, *, system: Any, tools: Sequence[Mapping[str, Any]],
                       messages: Sequence[Mapping[str, Any]],
                       first_round: bool = True) -> dict[str, Any]:
        """The request; a forcing tool_choice (`any`, a tool) only when `first_round`."""
        params: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": system,
            "messages": list(messages),
        }
        if tools:
            params["tools"] = list(tools)
            forcing = self._tool_choice["type"] in ("any", "tool")
            params["tool_choice"] = self._tool_choice if first_round or not forcing \
                else {"type": "auto"}
        if self.config.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.config.thinking_budget}
        return params

    async def stream_turn(self, params: Mapping[str, Any], callbacks: TurnCallbacks) -> ModelTurn:
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            outcome = await self._attempt(params, callbacks, attempt)
            if isinstance(outcome, ModelTurn):
                return outcome
            if attempt == attempts:
                return outcome.turn
            delay = retry_delay(attempt - 1, outcome.headers, random.random())
            callbacks.on_retry(RetryNotice(attempt, attempts, delay, outcome.reason,
                                           outcome.delivered))
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns")

    async def _attempt(self, params: Mapping[str, Any], callbacks: TurnCallbacks,
                       attempt: int) -> ModelTurn | _Retryable:
        got = _Attempt()
        watcher = asyncio.create_task(self._report_waiting(got, callbacks))
        try:
            return await self._stream(params, callbacks, got)
        except anthropic.APIStatusError as exc:
            kind, detail = _status_detail(exc)
            status = exc.status_code
            if status == 200:
                error = self._stream_error(kind, detail, attempt)
            else:
                error = describe_status_error(status, kind, detail, self.config.model,
                                              self.base_url or "", attempt)
            turn = got.broken(error)
            if error.retryable and _should_retry(exc, kind):
                reason = (f"{kind or 'an error'} in the middle of the answer" if status == 200
                          else f"HTTP {status} {kind}".rstrip())
                return _Retryable(turn, reason, dict(exc.response.headers), got.delivered)
            return turn
        except anthropic.APITimeoutError:
            if got.started:
                return got.broken(ProviderError(
                    "stream_broken", f"The model's answer broke off mid-stream (nothing "
                    f"arrived for {self.config.read_timeout_s:g} s). The text received so far "
                    f"is kept; retry the run to ask again."))
            return got.broken(ProviderError(
                "timeout", f"The model API {self.base_url or 'api.anthropic.com'} sent no "
                f"answer within {self.config.read_timeout_s:g} s; the request was not "
                f"repeated. Check that the server is up (a local one may still be loading "
                f"its model), then retry the run."))
        except anthropic.APIConnectionError as exc:
            if got.started:  # the SDK (2.x) says so of a connection cut mid-answer
                return got.broken(ProviderError(
                    "stream_broken", f"The model's answer broke off mid-stream "
                    f"({exc.__cause__ or exc}). The text received so far is kept; retry the "
                    f"run to ask again."))
            turn = got.broken(ProviderError(
                "connection_error", f"Could not reach the model API "
                f"{self.base_url or 'api.anthropic.com'} ({exc.__cause__ or exc}), "
                f"{'after ' + str(attempt) + ' attempts' if attempt > 1 else 'not retried'}. "
                f"Check the network or ANTHROPIC_BASE_URL, then retry the run."))
            return _Retryable(turn, "the connection failed", {}, got.delivered)
        except (httpx2.HTTPError, anthropic.AnthropicError, ValueError, OSError) as exc:
            timed_out = isinstance(exc, httpx2.TimeoutException)
            reason = (f"nothing arrived for {self.config.read_timeout_s:g} s" if timed_out
                      else f"{type(exc).__name__}: {exc}")
            return got.broken(ProviderError(
                "stream_broken", f"The model's answer broke off mid-stream ({reason}). The "
                f"text received so far is kept; retry the run to ask again."))
        finally:
            watcher.cancel()

    def _stream_error(self, kind: str, detail: str, attempt: int) -> ProviderError:
        where = f"{self.base_url} " if self.base_url else ""
        tried = f"{attempt} attempts in a row ended this way" if attempt > 1 \
            else "it was not retried"
        code = {"overloaded_error": "overloaded", "rate_limit_error": "rate_limited"}.get(
            kind, "server_error")
        return ProviderError(code, f"The model API {where}started its answer (HTTP 200), then "
                             f"sent an error in the middle of it ({kind or 'error'}: {detail}); "
                             f"{tried}. Retry the run later (reins exec --session ID resumes "
                             f"the same turn).", 200,
                             retryable=kind in STREAM_RETRY_KINDS)

    async def _report_waiting(self, got: _Attempt, callbacks: TurnCallbacks) -> None:
        started = time.monotonic()
        every = max(self.config.progress_every_s, 0.05)
        while not got.started:
            await asyncio.sleep(every)
            if not got.started:
                callbacks.on_wait(time.monotonic() - started)

    async def _stream(self, params: Mapping[str, Any], callbacks: TurnCallbacks,
                      got: _Attempt) -> ModelTurn:
        async with _message_stream(self.client, self._encoder.body(params)) as stream:
            got.started = True
            got.request_id = stream.request_id
            async for event in stream:
                if event.type == "message_start":
                    got.usage = _usage(event.message)
                elif event.type == "message_delta":
                    got.usage["output_tokens"] = int(event.usage.output_tokens or 0)
                elif event.type == "text":
                    got.partial.append(event.text)
                    got.delivered = True
                    callbacks.on_text(event.text)
                elif event.type == "content_block_stop":
                    block = block_param(event.content_block)
                    got.blocks.append(block)
                    got.partial.clear()
                    got.delivered = True
                    callbacks.on_block(block)
            message = await stream.get_final_message()
        if message.stop_reason is None:
            return got.broken(ProviderError(
                "stream_broken", "The model's answer ended before it was complete (no stop "
                "reason). The text received so far is kept; retry the run to ask again."))
        content = [block_param(b) for b in message.content]
        return ModelTurn(content, message.stop_reason, _usage(message), got.request_id)
