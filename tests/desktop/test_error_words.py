"""Errors speak the app's language: every message the provider gives, shown in the app,
names no command-line flag or environment variable, and the retryable ones say Retry."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from desktop.errors import RETRYABLE_CODES, in_app_words
from kernel.model.provider import (
    AnthropicProvider,
    ConfigError,
    ProviderConfig,
    describe_status_error,
)

CLI = re.compile(r"--\w|reins exec|ANTHROPIC_\w+|keyring", re.IGNORECASE)

STATUS_CASES = [
    (529, "overloaded_error", "Overloaded"), (500, "api_error", "boom"),
    (429, "rate_limit_error", "slow down"), (401, "authentication_error", "bad key"),
    (403, "permission_error", "no"), (404, "not_found_error", "model: x"),
    (400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum"),
    (413, "request_too_large", "too big"), (400, "invalid_request_error", "bad field"),
    (502, "api_error", "bad gateway"),
]


@pytest.mark.parametrize(("status", "kind", "detail"), STATUS_CASES)
@pytest.mark.parametrize("attempts", [1, 3])
def test_status_errors_in_the_apps_words(status: int, kind: str, detail: str,
                                         attempts: int) -> None:
    error = describe_status_error(status, kind, detail, "claude-x", "http://127.0.0.1:9",
                                  attempts)
    shown = in_app_words(error.message)
    assert not CLI.search(shown), shown
    assert detail in shown
    if error.code in RETRYABLE_CODES and error.code != "rate_limited":
        assert "Retry" in shown, shown


@pytest.mark.parametrize("kind", ["overloaded_error", "api_error", "rate_limit_error", ""])
def test_errors_in_the_middle_of_a_stream(kind: str) -> None:
    fake_self = SimpleNamespace(base_url="http://127.0.0.1:9")
    error = AnthropicProvider._stream_error(fake_self, kind, "mid-stream", 2)  # type: ignore[arg-type]
    shown = in_app_words(error.message)
    assert not CLI.search(shown) and "Press Retry" in shown, shown


def test_no_key_and_no_server_says_to_use_settings(no_keyring: None) -> None:
    with pytest.raises(ConfigError) as raised:
        AnthropicProvider(ProviderConfig(model="claude-x"), api_key=None, environ={})
    shown = in_app_words(str(raised.value))
    assert not CLI.search(shown) and "Settings" in shown, shown


@pytest.mark.parametrize(("text", "expected"), [
    ("Could not reach the model API x (refused), not retried. Check the network or "
     "ANTHROPIC_BASE_URL, then retry the run.",
     "Could not reach the model API x (refused), not retried. Check the network or the base "
     "URL in Settings, then press Retry."),
    ("The text received so far is kept; retry the run to ask again.",
     "The text received so far is kept; press Retry to ask again."),
    ("nothing to rewrite here", "nothing to rewrite here"),
])
def test_rewrites(text: str, expected: str) -> None:
    assert in_app_words(text) == expected
