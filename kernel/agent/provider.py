"""The model provider: one streamed Messages API turn with `anthropic.AsyncAnthropic`.

`AnthropicProvider.stream_turn` sends one request and streams the answer: text deltas and
finished content blocks go to the caller's callbacks as they arrive, and the turn comes
back as a `ModelTurn` (the content blocks as API params, ready to go back into the history,
the stop reason, usage with cached-token counts, the request id). It never raises for an API
or network failure: the SDK retries 429/5xx/529 with backoff (`max_retries`), and what is
left becomes `ModelTurn.error`, a `ProviderError` that names the status and what the user
can do. A stream that breaks off (connection cut, nothing received within the read
timeout, an error event mid-stream) also ends as an error, keeping the text already
received in `partial_text`. Cancellation (CancelledError) is not caught: it closes the
stream at once and propagates.

The API key comes from an argument, else the OS keyring (service `reins`, user
`anthropic_api_key`), else `ANTHROPIC_API_KEY`; it is handed to the client as an argument
and never written into `os.environ`. `ANTHROPIC_BASE_URL` (or `base_url`) points the client
at an Anthropic-compatible server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

from kernel.keys import ENV_VAR, KEYRING_SERVICE, KEYRING_USER

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_CONTEXT_WINDOW = 200_000
NO_KEY_PLACEHOLDER = "no-key"
"""Sent to a custom base URL when no key is configured (local servers ignore it)."""


class ConfigError(ValueError):
    """A provider setting that cannot work (bad tool_choice, no key for the real API)."""


@dataclass(frozen=True)
class ProviderConfig:
    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    tool_choice: str = "auto"
    """`auto`, `any`, `none`, or the name of one tool (the model must call it)."""
    base_url: str | None = None
    """None: ANTHROPIC_BASE_URL when set, else the SDK's default (api.anthropic.com)."""
    thinking_budget: int | None = None
    """Extended thinking budget in tokens; None disables thinking."""
    max_retries: int = 2
    """The SDK's retries (with backoff) for 408/409/429/5xx/529 and connection errors."""
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    """A stream that sends nothing for this long ends the turn with an error."""
    context_window: int = DEFAULT_CONTEXT_WINDOW


def tool_choice_param(choice: str) -> dict[str, Any]:
    if choice in ("auto", "any", "none"):
        return {"type": choice}
    if not choice:
        raise ConfigError("tool_choice must be auto, any, none or a tool name")
    return {"type": "tool", "name": choice}


@dataclass(frozen=True)
class KeySource:
    key: str | None
    source: str
    """"argument", "keyring", "environment" or "none" (never the key itself)."""


def keyring_key() -> str | None:
    """The key stored in the OS keyring, or None (no keyring module, backend or entry)."""
    try:
        import keyring
        import keyring.errors
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, KEYRING_USER) or None
    except (keyring.errors.KeyringError, RuntimeError, OSError):
        return None


def resolve_api_key(
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
    keyring_lookup: Callable[[], str | None] = keyring_key,
) -> KeySource:
    if explicit:
        return KeySource(explicit, "argument")
    stored = keyring_lookup()
    if stored:
        return KeySource(stored, "keyring")
    env = os.environ if environ is None else environ
    if env.get(ENV_VAR):
        return KeySource(env[ENV_VAR], "environment")
    return KeySource(None, "none")


def resolve_base_url(
    config: ProviderConfig, environ: Mapping[str, str] | None = None
) -> str | None:
    env = os.environ if environ is None else environ
    return config.base_url or env.get("ANTHROPIC_BASE_URL") or None


@dataclass(frozen=True)
class ProviderError:
    code: str
    """overloaded, rate_limited, server_error, auth_error, permission_error, not_found,
    bad_request, request_too_large, connection_error, timeout, stream_broken."""
    message: str
    status: int | None = None
    retryable: bool = True


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


@dataclass
class TurnCallbacks:
    on_text: Callable[[str], None] = field(default=lambda _t: None)
    """A text delta, as it arrives."""
    on_block: Callable[[Mapping[str, Any]], None] = field(default=lambda _b: None)
    """A content block once it is complete (API param form)."""


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


def describe_status_error(status: int, kind: str, detail: str, model: str,
                          base_url: str) -> ProviderError:
    where = f"{base_url} " if base_url else ""
    retry = "Retry the run later (reins exec --session ID resumes the same turn)."
    if status == 529 or kind == "overloaded_error":
        return ProviderError("overloaded", f"The model API {where}is overloaded (HTTP {status}: "
                             f"{detail}) and still was after retries. {retry}", status)
    if status == 429:
        return ProviderError("rate_limited", f"The model API {where}rate-limited this key "
                             f"(HTTP 429: {detail}) after retries. Wait a minute, then retry; "
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
    if status == 413:
        return ProviderError("request_too_large", f"The request is too large (HTTP 413: "
                             f"{detail}). Start a new session or remove large inputs.", status,
                             retryable=False)
    if 400 <= status < 500:
        return ProviderError("bad_request", f"The API rejected the request (HTTP {status}: "
                             f"{detail}). This is likely a Reins bug or a conversation that "
                             f"is too long; start a new session and report it.", status,
                             retryable=False)
    return ProviderError("server_error", f"The model API {where}failed (HTTP {status}: "
                         f"{detail}) and still did after retries. {retry}", status)


def _status_detail(exc: anthropic.APIStatusError) -> tuple[str, str]:
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error") if isinstance(body.get("error"), Mapping) else {}
    kind = str(error.get("type", "")) if error else ""
    detail = str(error.get("message", "")) if error else ""
    return kind, detail or str(exc.message)


class AnthropicProvider:
    """Streams Messages API turns; one client per provider (connections are pooled)."""

    def __init__(self, config: ProviderConfig, *, api_key: str | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.base_url = resolve_base_url(config, environ)
        key = resolve_api_key(api_key, environ)
        self.key_source = key.source
        if key.key is None and self.base_url is None:
            raise ConfigError(
                "No Anthropic API key: store one in Settings (OS keyring) or set "
                "ANTHROPIC_API_KEY; or point ANTHROPIC_BASE_URL at a local compatible server."
            )
        self._tool_choice = tool_choice_param(config.tool_choice)
        self.client = anthropic.AsyncAnthropic(
            api_key=key.key or NO_KEY_PLACEHOLDER,
            base_url=self.base_url,
            max_retries=config.max_retries,
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

    async def close(self) -> None:
        await self.client.close()

    def request_params(self, *, system: Any, tools: Sequence[Mapping[str, Any]],
                       messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": system,
            "messages": list(messages),
        }
        if tools:
            params["tools"] = list(tools)
            params["tool_choice"] = self._tool_choice
        if self.config.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.config.thinking_budget}
        return params

    async def stream_turn(self, params: Mapping[str, Any], callbacks: TurnCallbacks) -> ModelTurn:
        blocks: list[dict[str, Any]] = []
        partial: list[str] = []
        request_id: str | None = None
        usage: dict[str, int] = {}
        try:
            async with self.client.messages.stream(**params) as stream:
                request_id = stream.request_id
                async for event in stream:
                    if event.type == "message_start":
                        usage = _usage(event.message)
                    elif event.type == "message_delta":
                        usage["output_tokens"] = int(event.usage.output_tokens or 0)
                    elif event.type == "text":
                        partial.append(event.text)
                        callbacks.on_text(event.text)
                    elif event.type == "content_block_stop":
                        block = block_param(event.content_block)
                        blocks.append(block)
                        partial.clear()
                        callbacks.on_block(block)
                message = await stream.get_final_message()
        except anthropic.APIStatusError as exc:
            kind, detail = _status_detail(exc)
            error = describe_status_error(exc.status_code, kind, detail, self.config.model,
                                          self.base_url or "")
            return self._broken(blocks, partial, usage, request_id, error)
        except anthropic.APITimeoutError:
            return self._broken(blocks, partial, usage, request_id, ProviderError(
                "timeout", f"The model API {self.base_url or ''} did not answer within "
                f"{self.config.read_timeout_s:g} s, after retries. Check the network and "
                f"retry the run.".replace("  ", " ")))
        except anthropic.APIConnectionError as exc:
            return self._broken(blocks, partial, usage, request_id, ProviderError(
                "connection_error", f"Could not reach the model API "
                f"{self.base_url or 'api.anthropic.com'} ({exc.__cause__ or exc}). Check the "
                f"network or ANTHROPIC_BASE_URL, then retry the run."))
        except (httpx2.HTTPError, anthropic.AnthropicError, ValueError, OSError) as exc:
            timed_out = isinstance(exc, httpx2.TimeoutException)
            reason = (f"nothing arrived for {self.config.read_timeout_s:g} s" if timed_out
                      else f"{type(exc).__name__}: {exc}")
            return self._broken(blocks, partial, usage, request_id, ProviderError(
                "stream_broken", f"The model's answer broke off mid-stream ({reason}). The "
                f"text received so far is kept; retry the run to ask again."))
        if message.stop_reason is None:
            return self._broken(blocks, partial, usage, request_id, ProviderError(
                "stream_broken", "The model's answer ended before it was complete (no stop "
                "reason). The text received so far is kept; retry the run to ask again."))
        content = [block_param(b) for b in message.content]
        return ModelTurn(content, message.stop_reason, _usage(message), request_id)

    @staticmethod
    def _broken(blocks: list[dict[str, Any]], partial: list[str], usage: dict[str, int],
                request_id: str | None, error: ProviderError) -> ModelTurn:
        return ModelTurn(blocks, None, usage, request_id, error, "".join(partial))
