"""Settings → Test connection: a key and base URL checked against the server with one
small real request, and what went wrong said in words a person can act on.

The check lists the server's models (`GET /v1/models`, which needs the key and costs
nothing); a server that has no such list (404) or lists none is sent a one-token message
instead. `failure_words` turns the SDK's exception into a sentence: the key refused, nothing
listening, a host that cannot be found, no Messages API at that address (404), a TLS
failure, a timeout.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import anthropic

DEFAULT_URL = "https://api.anthropic.com"
CHECK_TIMEOUT_S = 10.0
NO_KEY = "no-key"
"""Sent when there is no key (a local server ignores it; the API refuses it in words)."""


@dataclass(frozen=True)
class ConnectionVerdict:
    ok: bool
    message: str


def url_problem(base_url: str) -> str | None:
    """Why a typed base URL cannot be an address at all (None when it can)."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (f"“{base_url}” is not a web address: the base URL starts with http:// or "
                "https:// and names the server (e.g. http://localhost:8080).")
    return None


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _v1_hint(base_url: str) -> str:
    if base_url.rstrip("/").endswith("/v1"):
        return " Remove the “/v1” at its end: Reins adds /v1/messages itself."
    return " The base URL is the server's address without /v1 (e.g. http://localhost:8080)."


def no_messages_api(where: str, status: int) -> str:
    """A server answers at `where`, but not the Messages API (`status` for /v1/messages)."""
    return (f"Nothing at {where} answers the Messages API (HTTP 404 for /v1/models, HTTP "
            f"{status} for /v1/messages): check the base URL.{_v1_hint(where)}")


def failure_words(exc: BaseException, base_url: str, has_key: bool,
                  timeout_s: float = CHECK_TIMEOUT_S) -> str:
    """What went wrong, in words: `exc` raised by the SDK for a request to `base_url`."""
    import anthropic

    where = base_url or DEFAULT_URL
    if isinstance(exc, anthropic.AuthenticationError):
        if not has_key:
            return f"{where} wants an API key, and none is set (HTTP 401)."
        return (f"{where} refused the key (HTTP 401: {_server_says(exc)}). Check that the "
                "whole key was pasted; Anthropic keys start with sk-ant-.")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return (f"{where} accepted the key but does not let it do this (HTTP 403: "
                f"{_server_says(exc)}).")
    if isinstance(exc, anthropic.NotFoundError):
        return no_messages_api(where, 404)
    if isinstance(exc, anthropic.APIStatusError):
        return f"{where} answered HTTP {exc.status_code}: {_server_says(exc)}."
    if isinstance(exc, anthropic.APITimeoutError):
        return (f"{where} did not answer within {timeout_s:g} s: the server may be busy, or "
                "something between you and it drops the connection.")
    return _connection_words(exc, where)


def _connection_words(exc: BaseException, where: str) -> str:
    host = urlsplit(where).hostname or where
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return (f"The TLS (https) connection to {host} failed: its certificate is not "
                    f"trusted ({cause.verify_message or cause.reason}). A server with a "
                    "self-made certificate needs it trusted by this system.")
        if isinstance(cause, ssl.SSLError):
            plain = "WRONG_VERSION_NUMBER" in str(cause) or cause.reason == "WRONG_VERSION_NUMBER"
            return (f"The TLS (https) connection to {host} failed ({cause.reason or cause})."
                    + (" The server speaks plain HTTP there: start the base URL with http://."
                       if plain else ""))
        if isinstance(cause, socket.gaierror):
            return f"The host name “{host}” cannot be found: check its spelling."
        if isinstance(cause, ConnectionRefusedError):
            return (f"Nothing is listening at {where} (connection refused): is the server "
                    "running, and is the port right?")
    text = " ".join(str(c) for c in _causes(exc) if str(c))
    lowered = text.lower()
    if "name or service not known" in lowered or "nodename nor servname" in lowered \
            or "temporary failure in name resolution" in lowered:
        return f"The host name “{host}” cannot be found: check its spelling."
    if "connection refused" in lowered:
        return (f"Nothing is listening at {where} (connection refused): is the server "
                "running, and is the port right?")
    if "ssl" in lowered or "certificate" in lowered or "tls" in lowered:
        return f"The TLS (https) connection to {host} failed: {text}."
    return f"Could not reach {where}: {text or type(exc).__name__}."


def _server_says(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return exc.message


async def check_connection(api_key: str | None, base_url: str | None, model: str,
                           timeout_s: float = CHECK_TIMEOUT_S) -> ConnectionVerdict:
    """One small real request to the server at `base_url` (None: the API's) with
    `api_key`; the verdict in words."""
    problem = url_problem(base_url or "")
    if problem is not None:
        return ConnectionVerdict(False, problem)
    import anthropic

    where = base_url or DEFAULT_URL
    client = anthropic.AsyncAnthropic(api_key=api_key or NO_KEY, base_url=base_url,
                                      timeout=timeout_s, max_retries=0)
    listed = True
    try:
        try:
            page = await client.models.list(limit=20)
            ids = [m.id for m in page.data if m.id]
        except anthropic.NotFoundError:
            ids, listed = [], False
        if ids:
            shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
            return ConnectionVerdict(True, f"Connected to {where}: the key works, and the "
                                           f"server offers {len(ids)} model"
                                           f"{'s' if len(ids) != 1 else ''} ({shown}).")
        try:
            await client.messages.create(model=model, max_tokens=1,
                                         messages=[{"role": "user", "content": "ping"}])
        except anthropic.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise
            if not listed:
                return ConnectionVerdict(False, no_messages_api(where, exc.status_code))
            if exc.status_code != 404:
                raise
            return ConnectionVerdict(False, f"{where} answers, but does not know the model "
                                            f"“{model}” (HTTP 404: {_server_says(exc)}).")
        return ConnectionVerdict(True, f"Connected to {where}: the key works, and {model} "
                                       "answered a one-token message.")
    except anthropic.APIError as exc:
        return ConnectionVerdict(False, failure_words(exc, base_url or "", bool(api_key),
                                                      timeout_s))
    finally:
        await client.close()
