"""The provider's settings and where its key and URL come from, without the SDK.

`ProviderConfig` (model, limits, tool choice, timeouts), the API key's resolution (an
argument, else the OS keyring, else the key file the user chose on a system without a
keyring (kernel.shared.keyfile), else `ANTHROPIC_API_KEY`) and the base URL's. Kept apart from
kernel.model.provider so that what only reads them (`reins doctor`, the app's model picker)
does not import the anthropic SDK.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernel.model.catalog import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    ModelLimits,
    model_limits,
)
from kernel.paths import AppPaths
from kernel.shared.keyfile import KeyFileError, read_key_file
from kernel.shared.keys import ENV_VAR, KEYRING_SERVICE, KEYRING_USER, keyring_backend

log = logging.getLogger(__name__)

NO_KEY_PLACEHOLDER = "no-key"
"""Sent to a custom base URL when no key is configured (local servers ignore it)."""


class ConfigError(ValueError):
    """A provider setting that cannot work (bad tool_choice, no key for the real API)."""


@dataclass(frozen=True)
class ProviderConfig:
    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    tool_choice: str = "auto"
    """`auto`, `any`, `none`, or the name of one tool. `any` and a tool name force the first
    request of a run only (the model could otherwise never finish); later ones are `auto`."""
    base_url: str | None = None
    """None: ANTHROPIC_BASE_URL when set, else the SDK's default (api.anthropic.com)."""
    thinking_budget: int | None = None
    """Extended thinking budget in tokens; None disables thinking."""
    max_retries: int = 2
    """Retries (with back-off) for 408/409/429/5xx/529, connection failures and error
    events in a stream."""
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    """A server that sends nothing for this long ends the turn with an error (once)."""
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_output: int | None = None
    """The most the model can write (known models), for the checks of `config_problem`."""
    progress_every_s: float = 10.0
    """How often `on_wait` reports while no answer has started."""

    @classmethod
    def for_model(cls, model: str, models: Mapping[str, Any] | None = None, *,
                  max_tokens: int | None = None, served_context: int | None = None,
                  **settings: Any) -> ProviderConfig:
        """The config of `model` with its limits (kernel.model.catalog: the settings'
        `models` entry, else the built-in figures, under the window its server says it
        serves); `max_tokens` overrides its output limit."""
        limits = model_limits(model, models, served_context=served_context)
        return cls(model=model, max_tokens=max_tokens or limits.max_tokens,
                   context_window=limits.context_window, max_output=limits.max_output,
                   **settings)

    @property
    def limits(self) -> ModelLimits:
        return ModelLimits(self.context_window, self.max_tokens, self.max_output)


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
    """"argument", "keyring", "file", "environment" or "none" (never the key itself)."""


def keyring_key() -> str | None:
    """The key stored in the OS keyring, or None (no keyring module, backend or entry)."""
    try:
        import keyring.errors
    except ImportError:
        return None
    try:
        return keyring_backend().get_password(KEYRING_SERVICE, KEYRING_USER) or None
    except (keyring.errors.KeyringError, RuntimeError, OSError):
        return None


def file_key(paths: AppPaths | None = None) -> str | None:
    """The key in the key file (`AppPaths.api_key_file`), or None: no file, or one that may
    not be used (logged with why: kernel.shared.keyfile)."""
    try:
        return read_key_file((paths or AppPaths.from_env()).api_key_file)
    except KeyFileError as exc:
        log.warning("%s", exc)
        return None


def resolve_api_key(
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
    keyring_lookup: Callable[[], str | None] = keyring_key,
    file_lookup: Callable[[], str | None] = file_key,
) -> KeySource:
    if explicit:
        return KeySource(explicit, "argument")
    stored = keyring_lookup()
    if stored:
        return KeySource(stored, "keyring")
    kept = file_lookup()
    if kept:
        return KeySource(kept, "file")
    env = os.environ if environ is None else environ
    if env.get(ENV_VAR):
        return KeySource(env[ENV_VAR], "environment")
    return KeySource(None, "none")


def resolve_base_url(
    config: ProviderConfig, environ: Mapping[str, str] | None = None
) -> str | None:
    env = os.environ if environ is None else environ
    return config.base_url or env.get("ANTHROPIC_BASE_URL") or None
