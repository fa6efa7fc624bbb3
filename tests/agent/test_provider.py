"""Provider configuration: the API key's sources, the base URL, tool_choice, errors."""

from __future__ import annotations

import asyncio
import os

import pytest

from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.model.provider import (
    AnthropicProvider,
    ConfigError,
    ProviderConfig,
    TurnCallbacks,
    describe_status_error,
    resolve_api_key,
    tool_choice_param,
)


def test_key_comes_from_argument_then_keyring_then_environment():
    env = {"ANTHROPIC_API_KEY": "from-env"}
    assert resolve_api_key("arg", env, lambda: "ring").source == "argument"
    ring = resolve_api_key(None, env, lambda: "from-ring")
    assert (ring.key, ring.source) == ("from-ring", "keyring")
    assert resolve_api_key(None, env, lambda: None).key == "from-env"
    assert resolve_api_key(None, {}, lambda: None).source == "none"


def test_the_key_reaches_the_server_but_never_the_environment(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeAnthropicServer([reply("hi")], api_key="sk-secret-123") as server:
        provider = AnthropicProvider(ProviderConfig(base_url=server.base_url),
                                     api_key="sk-secret-123", environ={})

        async def go():
            params = provider.request_params(
                system="s", tools=[], messages=[{"role": "user", "content": "x"}])
            try:
                return await provider.stream_turn(params, TurnCallbacks())
            finally:
                await provider.close()

        turn = asyncio.run(go())
    assert turn.error is None and turn.content == [{"type": "text", "text": "hi"}]
    assert provider.key_source == "argument"
    assert all("sk-secret-123" not in v for v in os.environ.values())


def test_no_key_for_the_real_api_is_a_clear_config_error():
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(ProviderConfig(), environ={})


def test_base_url_from_environment_and_tool_choice_forms():
    provider = AnthropicProvider(ProviderConfig(tool_choice="grep"), api_key="k",
                                 environ={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert provider.base_url == "http://127.0.0.1:9"
    params = provider.request_params(system="s", tools=[{"name": "grep"}],
                                     messages=[{"role": "user", "content": "x"}])
    assert params["tool_choice"] == {"type": "tool", "name": "grep"}
    assert [tool_choice_param(c) for c in ("auto", "any", "none")] == [
        {"type": "auto"}, {"type": "any"}, {"type": "none"}]
    assert "tool_choice" not in provider.request_params(
        system="s", tools=[], messages=[{"role": "user", "content": "x"}])
    with pytest.raises(ConfigError):
        tool_choice_param("")


def test_connection_refused_is_a_clear_error_not_an_exception():
    provider = AnthropicProvider(ProviderConfig(base_url="http://127.0.0.1:9", max_retries=0),
                                 api_key="k", environ={})

    async def go():
        try:
            return await provider.stream_turn(provider.request_params(
                system="s", tools=[], messages=[{"role": "user", "content": "x"}]),
                TurnCallbacks())
        finally:
            await provider.close()

    turn = asyncio.run(go())
    assert turn.error is not None and turn.error.code == "connection_error"
    assert "127.0.0.1:9" in turn.error.message


@pytest.mark.parametrize(("status", "kind", "code", "retryable"), [
    (529, "overloaded_error", "overloaded", True),
    (429, "rate_limit_error", "rate_limited", True),
    (500, "api_error", "server_error", True),
    (401, "authentication_error", "auth_error", False),
    (404, "not_found_error", "not_found", False),
    (400, "invalid_request_error", "bad_request", False),
])
def test_status_errors_name_the_status_and_what_to_do(status, kind, code, retryable):
    error = describe_status_error(status, kind, "detail text", "claude-x", "http://h")
    assert (error.code, error.status, error.retryable) == (code, status, retryable)
    assert str(status) in error.message and "detail text" in error.message
