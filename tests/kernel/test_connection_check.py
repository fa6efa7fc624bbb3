"""Settings → Test connection's check, with the real anthropic client against real loopback
servers: the fake Messages API (right key, wrong key, no key, no model list), a port nobody
listens on, a server that has no Messages API, TLS spoken to a plain HTTP server and TLS
with a certificate nobody trusts. Each failure is said in words."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.model.connection_check import ConnectionVerdict, check_connection, url_problem


def check(key: str | None, url: str | None, model: str = "claude-x") -> ConnectionVerdict:
    return asyncio.run(check_connection(key, url, model, timeout_s=5))


def test_the_right_key_connects_and_names_the_models() -> None:
    with FakeAnthropicServer(api_key="sk-good", models=("m-one", "m-two")) as server:
        verdict = check("sk-good", server.base_url)
    assert verdict.ok, verdict.message
    assert verdict.message == (f"Connected to {server.base_url}: the key works, and the "
                               "server offers 2 models (m-one, m-two).")
    assert server.requests == [], "listing models costs no message"


def test_a_wrong_key_and_no_key_are_said_apart() -> None:
    with FakeAnthropicServer(api_key="sk-good") as server:
        wrong = check("sk-wrong", server.base_url)
        none = check(None, server.base_url)
    assert not wrong.ok and "refused the key (HTTP 401: invalid x-api-key)" in wrong.message
    assert "sk-ant-" in wrong.message
    assert not none.ok and "wants an API key, and none is set (HTTP 401)" in none.message


def test_a_server_that_lists_no_models_is_sent_one_token() -> None:
    with FakeAnthropicServer([reply("p")], api_key="k", models=()) as server:
        verdict = check("k", server.base_url, "local-coder")
    assert verdict.ok, verdict.message
    assert "local-coder answered a one-token message" in verdict.message
    [request] = server.requests
    assert request.body["max_tokens"] == 1 and request.body["model"] == "local-coder"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_nothing_listening_is_said() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    verdict = check("k", url)
    assert not verdict.ok
    assert verdict.message == (f"Nothing is listening at {url} (connection refused): is the "
                               "server running, and is the port right?")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No log on the test's stderr."""


@pytest.fixture
def plain_site(tmp_path: Path) -> Iterator[str]:
    """A web server on loopback that is not a Messages API: every path is 404 (or 501)."""
    handler = lambda *a: _Quiet(*a, directory=str(tmp_path))  # noqa: E731
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_wrong_url_is_a_404_said_with_how_to_fix_it(plain_site: str) -> None:
    with FakeAnthropicServer(api_key="k") as server:
        with_v1 = check("k", server.base_url + "/v1")
    assert not with_v1.ok and "HTTP 404" in with_v1.message
    assert "Remove the “/v1” at its end" in with_v1.message
    elsewhere = check("k", plain_site)
    assert not elsewhere.ok
    assert elsewhere.message == (
        f"Nothing at {plain_site} answers the Messages API (HTTP 404 for /v1/models, HTTP 501 "
        "for /v1/messages): check the base URL. The base URL is the server's address without "
        "/v1 (e.g. http://localhost:8080).")


def test_https_to_a_plain_http_server_is_a_tls_failure_with_the_fix() -> None:
    with FakeAnthropicServer(api_key="k") as server:
        url = server.base_url.replace("http://", "https://")
        verdict = check("k", url)
    assert not verdict.ok
    assert verdict.message.startswith("The TLS (https) connection to 127.0.0.1 failed")
    assert "start the base URL with http://" in verdict.message


def test_an_untrusted_certificate_is_said(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True,
                   capture_output=True, timeout=30)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = FakeAnthropicServer(api_key="k")
    httpd = server._httpd
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    with server:
        verdict = check("k", server.base_url.replace("http://", "https://"))
    assert not verdict.ok
    assert "The TLS (https) connection to 127.0.0.1 failed: its certificate is not trusted" \
        in verdict.message


@pytest.mark.parametrize(("url", "problem"), [
    ("", False), ("http://localhost:8080", False), ("https://api.example.com/x", False),
    ("localhost:8080", True), ("ftp://host", True), ("http://", True), ("api.anthropic.com", True),
])
def test_a_base_url_must_be_a_web_address(url: str, problem: bool) -> None:
    assert (url_problem(url) is not None) is problem
    if problem:
        verdict = check("k", url)
        assert not verdict.ok and "is not a web address" in verdict.message
